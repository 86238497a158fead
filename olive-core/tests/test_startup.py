"""`olive --help` and the listing stay light with plugins installed; the startup benchmark runs."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

from olive.testing import sample_distributions as samples
from olive.testing.venv import Venv, make_venv

CLEAN_ENV = {"OLIVE_LOAD_PLUGINS": None, "OLIVE_DISABLE_PLUGINS": None, "OLIVE_STRICT_PLUGINS": None}
HEAVY = ("numpy", "onnx", "onnxruntime", "optuna", "torch")
BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_startup.py"


@pytest.fixture(scope="module")
def startup_venv(tmp_path_factory) -> Venv:
    venv = make_venv(tmp_path_factory.mktemp("startup") / "venv")
    venv.pip_install(
        "--no-deps", "--no-index", samples.good_pass_wheel(), samples.broken_import_wheel(), samples.hooks_wheel()
    )
    return venv


@pytest.mark.parametrize(
    "args",
    [["--help"], ["passes"], ["passes", "--json"], ["--version"], ["plugins", "--requirements"], ["run", "--help"]],
    ids=" ".join,
)
def test_cli_imports_no_pass_module_and_nothing_heavy(startup_venv, args):
    code = f"""
    import json, sys
    from olive.cli.main import main
    try:
        main({args!r})
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    print("@@" + json.dumps({{"code": code, "modules": sorted(sys.modules)}}))
    """
    out = startup_venv.python_run(textwrap.dedent(code), env=CLEAN_ENV).stdout
    result = json.loads(out.rsplit("@@", 1)[1])
    assert result["code"] in (0, None)
    modules = result["modules"]
    heavy = [m for m in modules if m.split(".")[0] in HEAVY]
    assert heavy == []
    pass_modules = [m for m in modules if m.startswith(("olive_test_good", "olive_test_broken_import"))]
    assert pass_modules == []
    if args[0] in ("--help", "passes"):
        # the listing runs and really saw the installed distribution
        assert "olive.plugins.discovery" in modules


def test_listing_shows_installed_passes_without_loading_them(startup_venv):
    out = startup_venv.run([startup_venv.python, "-m", "olive.cli.main", "passes", "--json"], env=CLEAN_ENV).stdout
    entries = {e["name"]: e for e in json.loads(out)}
    assert entries["Annotate"]["status"] == "not loaded"
    assert entries["BrokenImport"]["status"] == "not loaded"


def test_startup_benchmark_quick_mode(capsys):
    spec = importlib.util.spec_from_file_location("bench_startup", BENCHMARK)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = bench.main(["--quick", "--plugins", "1", "2", "--repeats", "1"])
    lines = table.splitlines()
    assert lines[2] == (
        "| generated plugin distributions | passes listed | `python -c pass` | `olive --help` | `olive passes` |"
    )
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[4:]]
    assert [row[0] for row in rows] == ["1", "2"]
    assert int(rows[1][1]) == int(rows[0][1]) + 1  # one more generated pass is listed
    for row in rows:
        assert all(float(cell) > 0 for cell in row[2:])
    assert table in capsys.readouterr().out
