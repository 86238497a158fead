"""`olive --help` and the listing stay light with plugins installed (the startup benchmark times them: benchmarks/)."""

from __future__ import annotations

import json
import textwrap

import pytest

from olive.testing import sample_distributions as samples
from olive.testing.venv import Venv, make_venv

CLEAN_ENV = {"OLIVE_LOAD_PLUGINS": None, "OLIVE_DISABLE_PLUGINS": None, "OLIVE_STRICT_PLUGINS": None}
# The storage libraries of a remote cache and Ray are heavy too: only a run that uses them imports them.
HEAVY = ("numpy", "onnx", "onnxruntime", "optuna", "torch", "fsspec", "s3fs", "botocore", "aiobotocore", "ray")


@pytest.fixture(scope="module")
def startup_venv(tmp_path_factory) -> Venv:
    venv = make_venv(tmp_path_factory.mktemp("startup") / "venv")
    venv.pip_install(
        "--no-deps", "--no-index", samples.good_pass_wheel(), samples.broken_import_wheel(), samples.hooks_wheel()
    )
    return venv


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["passes"],
        ["passes", "--json"],
        ["--version"],
        ["plugins", "--requirements"],
        # loads the hook plugins and lists the metric types and samplers they register
        ["plugins", "--json"],
        ["run", "--help"],
        ["optimize", "--help"],
        ["quantize", "--help"],
    ],
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
