"""The `olive` command: lazy subcommands, error output and exit codes, `passes`, `plugins`, `--version`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from olive.cli import main as cli_main
from olive.cli.main import cli
from olive.passes import Pass, PassConfigParam
from olive.plugins.manager import new_plugin_manager, use_plugin_manager
from olive.search.search_parameter import Categorical
from olive.testing import sample_distributions as samples
from olive.testing.venv import Venv, make_venv

CLEAN_ENV = {"OLIVE_LOAD_PLUGINS": None, "OLIVE_DISABLE_PLUGINS": None, "OLIVE_STRICT_PLUGINS": None}


class Tune(Pass):
    """Tune a model's session options.

    Longer description.
    """

    _version = "3"

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "threads": PassConfigParam(
                type_=int, default_value=1, search_defaults=Categorical([1, 2, 4]), description="Intra-op threads."
            ),
            "mode": PassConfigParam(type_=str, required=True, description="Execution mode."),
            "out_dir": PassConfigParam(type_=str | None, category="path"),
        }

    def _run_for_config(self, model, config, output_model_path):
        return model


@pytest.fixture
def runner(isolated_registry):
    isolated_registry.register(Tune, distribution="tune-dist", version="0.9")
    with use_plugin_manager(new_plugin_manager(entry_points=False)):
        yield CliRunner()


def test_help_lists_every_command(runner):
    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in cli_main.COMMANDS:
        assert name in result.output
    assert "List installed passes, or show one pass's config." in result.output


def test_passes_table(runner):
    result = runner.invoke(cli, ["passes"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "Tune" in line)
    for cell in ("tune-dist", "0.9", "ok", "Tune a model's session options."):
        assert cell in row


class OnnxAccuracyGuardedQuantizationTwo(Pass):
    """Int8 quantization that keeps sensitive nodes in float."""

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {}

    def _run_for_config(self, model, config, output_model_path):
        return model


def test_passes_listing_stays_readable_in_80_columns(runner, isolated_registry):
    # Long names leave a table's summary column a few letters wide: each pass becomes a block instead.
    isolated_registry.register(OnnxAccuracyGuardedQuantizationTwo, distribution="olive-passes-quantization-extra")
    result = runner.invoke(cli, ["passes"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.output.splitlines()]
    assert max(len(line) for line in lines) <= 80
    assert "  OnnxAccuracyGuardedQuantizationTwo  olive-passes-quantization-extra 0  ok" in lines
    assert "      Int8 quantization that keeps sensitive nodes in float." in lines
    assert "      Tune a model's session options." in lines


def test_passes_json(runner):
    result = runner.invoke(cli, ["passes", "--json"])
    assert json.loads(result.stdout) == [
        {
            "name": "Tune",
            "distribution": "tune-dist",
            "version": "0.9",
            "entry_point": f"{__name__}:Tune",
            "status": "ok",
            "error": None,
            "summary": "Tune a model's session options.",
        }
    ]


def test_pass_details_json(runner):
    result = runner.invoke(cli, ["passes", "Tune", "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    params = {p["name"]: p for p in info["params"]}
    assert params["threads"] == {
        "name": "threads",
        "type": "int",
        "required": False,
        "default": 1,
        "search_defaults": Categorical([1, 2, 4]).to_json(),
        "category": "none",
        "description": "Intra-op threads.",
    }
    assert params["mode"]["required"] is True
    assert params["out_dir"]["category"] == "path"


def test_pass_details_table(runner):
    result = runner.invoke(cli, ["passes", "tune-dist:Tune"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Tune from tune-dist==0.9" in result.output
    assert "Longer description." in result.output
    assert "pass version: 3" in result.output
    lines = result.output.splitlines()
    threads = lines.index("  threads: int = 1  search [1, 2, 4]")
    assert lines[threads + 1].strip() == "Intra-op threads."
    assert "  mode: str = (required)" in lines
    assert "  out_dir: str | None = null  (path)" in lines


def test_unknown_pass_is_one_error_line_and_exit_1(runner):
    result = runner.invoke(cli, ["passes", "Tnue"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: unknown pass 'Tnue' (did you mean 'Tune'?)")
    assert len(result.stderr.splitlines()) == 1


def test_command_with_missing_module_says_so(runner, monkeypatch):
    monkeypatch.setitem(cli_main.COMMANDS, "ghost", ("olive.cli.ghost_command:ghost", "A command not installed."))
    assert "A command not installed." in runner.invoke(cli, ["--help"]).output
    result = runner.invoke(cli, ["ghost", "--anything"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: command 'ghost' is not available: its module olive.cli.ghost_command is not part of this installation\n"
    )


def test_command_whose_dependency_is_missing_names_it(runner, monkeypatch, tmp_path):
    (tmp_path / "olive_cli_needy.py").write_text("import not_installed_package_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli_main.COMMANDS, "needy", ("olive_cli_needy:command", "Needs a package."))
    result = runner.invoke(cli, ["needy"])
    assert result.exit_code == 1
    assert "it needs the module 'not_installed_package_xyz', which is not installed" in result.stderr


def test_plugins_lists_installed_distributions_only(runner):
    # Tune is registered in-process: it is not a distribution anyone could reinstall.
    result = runner.invoke(cli, ["plugins", "--requirements"])
    assert result.exit_code == 0
    assert "tune-dist" not in result.stdout


def test_plugins_options_are_exclusive(runner):
    result = runner.invoke(cli, ["plugins", "--json", "--requirements"])
    assert result.exit_code == 2 and "either --json or --requirements" in result.output


# ------------------------------------------------------------------------------------------------
# Against installed distributions
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cli_venv(tmp_path_factory) -> Venv:
    venv = make_venv(tmp_path_factory.mktemp("cli") / "venv")
    venv.pip_install(
        "--no-deps", "--no-index", samples.good_pass_wheel(), samples.other_pass_wheel(), samples.broken_import_wheel()
    )
    return venv


def olive(venv: Venv, *args: str, check: bool = True, **env: str | None):
    return venv.run([venv.python, "-m", "olive.cli.main", *args], env={**CLEAN_ENV, **env}, check=check)


def test_version_lists_pass_distributions(cli_venv):
    import olive as olive_package

    lines = olive(cli_venv, "--version").stdout.splitlines()
    assert lines[0].startswith(f"olive-core {olive_package.__version__} (Python ")
    assert lines[1].startswith("passes: ")
    listed = lines[1].removeprefix("passes: ").split(", ")
    for dist in ("olive-test-broken-import-0.1", "olive-test-good-1.0.0", "olive-test-other-2.1"):
        assert dist in listed


def test_installed_listing_table(cli_venv):
    out = olive(cli_venv, "passes", COLUMNS="200").stdout
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in out.splitlines() if "olive-test" in line}
    # the summary comes from the source file, without importing the module
    assert (
        " ".join(rows[("Annotate", "olive-test-good")]) == "1.0.0 not loaded Write a note into the model's doc string."
    )
    assert rows[("BrokenImport", "olive-test-broken-import")] == ["0.1", "not", "loaded", "-"]
    assert rows[("Shared", "olive-test-other")][0] == "2.1"


def test_installed_pass_details_and_errors(cli_venv):
    details = json.loads(olive(cli_venv, "passes", "Annotate", "--json").stdout)
    assert details["summary"] == "Write a note into the model's doc string."
    assert {p["name"] for p in details["params"]} >= {"note", "save_as_external_data"}

    broken = olive(cli_venv, "passes", "BrokenImport", check=False)
    assert broken.returncode == 1
    assert broken.stderr.startswith("Error: cannot load pass 'BrokenImport' from olive-test-broken-import==0.1")
    assert "olive_missing_dependency_xyz" in broken.stderr and "Traceback" not in broken.stderr

    ambiguous = olive(cli_venv, "passes", "Shared", check=False)
    assert ambiguous.returncode == 1
    assert "olive-test-good==1.0.0 and olive-test-other==2.1" in ambiguous.stderr
    assert olive(cli_venv, "passes", "olive-test-other:Shared").returncode == 0


def test_strict_listing_fails_on_broken_plugin(cli_venv):
    result = olive(cli_venv, "passes", "--json", check=False, OLIVE_STRICT_PLUGINS="1")
    assert result.returncode == 1
    statuses = {
        e["name"]: e["status"]
        for e in json.loads(result.stdout)
        if e["distribution"] in ("olive-test-good", "olive-test-broken-import")
    }
    assert statuses == {"Annotate": "ok", "BrokenImport": "failed", "Shared": "ok"}
    assert "BrokenImport (olive-test-broken-import==0.1)" in result.stderr


def test_check_loads_every_pass_and_shows_the_broken_one(cli_venv):
    result = olive(cli_venv, "passes", "--check", check=False, COLUMNS="250")
    assert result.returncode == 1
    broken = next(line for line in result.stdout.splitlines() if "BrokenImport" in line)
    assert "failed: importing olive_test_broken_import:BrokenImport failed: ModuleNotFoundError" in broken
    good = next(line for line in result.stdout.splitlines() if "Annotate" in line)
    assert "ok" in good and "Write a note into the model's doc string." in good
    assert result.stderr.startswith("Error: 1 pass(es) failed to load: BrokenImport (olive-test-broken-import==0.1)")


def test_plugins_requirements_and_json(cli_venv):
    requirements = olive(cli_venv, "plugins", "--requirements").stdout.splitlines()
    assert {"olive-test-broken-import==0.1", "olive-test-good==1.0.0", "olive-test-other==2.1"} <= set(requirements)
    plugins = {p["name"]: p for p in json.loads(olive(cli_venv, "plugins", "--json").stdout)}
    assert plugins["olive-test-good"]["passes"] == ["Annotate", "Shared"]
    assert plugins["olive-test-good"]["status"] == "ok"
