"""A pass that is not installed names its distribution and a line that installs it from here; Microsoft
Olive's passes that no distribution here provides are said to be so."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from olive.cli.main import cli
from olive.exceptions import UnknownPassError
from olive.plugins.install_hints import REPOSITORY_PASSES, install_line, olive_core_source
from olive.plugins.registry import PassRegistry

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("distribution", sorted(REPOSITORY_PASSES))
def test_the_table_of_our_passes_matches_each_distributions_entry_points(distribution: str) -> None:
    pyproject = tomllib.loads((REPO / distribution / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["name"] == distribution
    declared = set(pyproject["project"]["entry-points"]["olive.passes"])
    assert set(REPOSITORY_PASSES[distribution]) == declared


def test_install_line_points_at_the_clone_olive_core_was_installed_from() -> None:
    source = olive_core_source()
    if source is None or source.kind != "folder":
        pytest.skip("olive-core is not installed from a folder here")
    line = install_line("olive-passes-graph")
    assert line == f'pip install -e "{source.path.parent / "olive-passes-graph"}"'
    assert (source.path.parent / "olive-passes-graph" / "pyproject.toml").is_file()
    assert install_line("olive-core", "template") == f'pip install -e "{source.path}[template]"'


@pytest.mark.parametrize(
    ("name", "distribution"),
    [(name, dist) for dist, names in REPOSITORY_PASSES.items() for name in names],
)
def test_every_pass_of_ours_names_its_distribution_and_install_line_when_missing(
    isolated_registry: PassRegistry, name: str, distribution: str
) -> None:
    with pytest.raises(UnknownPassError) as caught:
        isolated_registry.get_pass_class(name)
    message = str(caught.value)
    assert f"offered by {distribution}, which is not installed" in message
    assert install_line(distribution) in message
    assert "unknown" not in message


def test_a_microsoft_olive_pass_none_here_provides_is_said_plainly(isolated_registry: PassRegistry) -> None:
    with pytest.raises(UnknownPassError) as caught:
        isolated_registry.get_pass_class("GptqQuantizer")
    assert str(caught.value).startswith(
        "pass 'GptqQuantizer' is a Microsoft Olive pass (a PyTorch pass (it works on the PyTorch model before "
        "conversion)) that no distribution here provides"
    )


def test_a_qualified_name_of_our_missing_distribution_gets_the_install_line(isolated_registry: PassRegistry) -> None:
    with pytest.raises(UnknownPassError, match="install it with: ") as caught:
        isolated_registry.get_pass_class("olive-passes-graph:OnnxPeepholeOptimizer")
    assert install_line("olive-passes-graph") in str(caught.value)


def test_a_name_nobody_offers_is_still_unknown_with_close_matches(isolated_registry: PassRegistry) -> None:
    with pytest.raises(UnknownPassError, match=r"^unknown pass 'NoSuchPass'"):
        isolated_registry.get_pass_class("NoSuchPass")


def test_a_workflow_using_a_pass_of_a_missing_distribution_says_how_to_install_it(
    tmp_path: Path, isolated_registry: PassRegistry
) -> None:
    from olive.testing.models import mlp_model, save_model

    model = save_model(mlp_model(), tmp_path / "model").model_path
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(model)},
        "passes": {"peephole": {"type": "OnnxPeepholeOptimizer"}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "wf.json")])
    assert result.exit_code == 2, result.output
    assert "OnnxPeepholeOptimizer" in result.stderr
    assert "offered by olive-passes-graph" in result.stderr
    assert install_line("olive-passes-graph") in result.stderr
    assert "Traceback" not in result.output


def test_olive_passes_with_nothing_installed_gives_install_lines_that_work(isolated_registry: PassRegistry) -> None:
    result = CliRunner().invoke(cli, ["passes"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert install_line("olive-passes-quant") in result.output
    assert install_line("olive-passes-graph") in result.output
    assert "pip install olive-passes-quant" not in result.output
