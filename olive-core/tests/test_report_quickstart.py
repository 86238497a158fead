"""``olive quickstart`` without the pass distributions, and the files it writes (the full run is in e2e/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from olive.cli.main import cli
from olive.cli.quickstart import WORKFLOW_FILE, quickstart_workflow, write_quickstart_files
from olive.plugins.install_hints import install_line
from olive.plugins.registry import PassRegistry


def test_quickstart_names_the_missing_distributions_and_writes_nothing(
    tmp_path: Path, isolated_registry: PassRegistry
) -> None:
    target = tmp_path / "qs"
    result = CliRunner().invoke(cli, ["quickstart", str(target)])
    assert result.exit_code == 1, result.output
    assert "olive-passes-graph and olive-passes-quant" in result.output
    # Install lines that work from here (these distributions are not on a package index).
    assert install_line("olive-passes-graph") in result.output
    assert install_line("olive-passes-quant") in result.output
    assert "pip install olive-passes-graph" not in result.output
    assert "Traceback" not in result.output
    assert not target.exists()


def test_quickstart_names_only_the_distribution_that_is_missing(
    tmp_path: Path, isolated_registry: PassRegistry
) -> None:
    from olive.passes import Pass

    class Fused(Pass):
        """Stands in for the graph distribution's pass (registered under its name and distribution)."""

        @classmethod
        def _default_config(cls, accelerator_spec):
            return {}

        def _run_for_config(self, model, config, output_model_path):
            return model

    isolated_registry.register(Fused, name="OrtTransformersOptimization", distribution="olive-passes-graph")
    result = CliRunner().invoke(cli, ["quickstart", str(tmp_path / "qs")])
    assert result.exit_code == 1
    assert "needs the pass distribution olive-passes-quant, which is not installed" in result.output
    assert "olive-passes-graph" not in result.output


def test_written_files_make_a_valid_workflow(tmp_path: Path) -> None:
    import numpy as np

    from olive.model.handler import ONNXModelHandler
    from olive.workflows.config import load_workflow_config

    path = write_quickstart_files(tmp_path)
    assert path == tmp_path / WORKFLOW_FILE
    workflow = load_workflow_config(path)
    assert Path(workflow.input_model.create_handler().model_path) == tmp_path / "model" / "model.onnx"
    model = ONNXModelHandler(tmp_path / "model" / "model.onnx")
    names = {i.name for i in model.load_model().graph.input}
    with np.load(tmp_path / "data.npz") as data:
        assert set(data.files) == names == {"input_ids", "attention_mask", "token_type_ids"}
    assert workflow.search_strategy is not None
    # the JSON is meant to be read and edited: indented, with every key a user would change
    text = path.read_text()
    assert text.startswith("{\n  ") and '"passes"' in text and '"goal"' in text
    assert json.loads(text) == quickstart_workflow()
    assert not list(tmp_path.glob(".*.tmp"))


def test_an_edited_workflow_is_not_overwritten_without_force(tmp_path: Path) -> None:
    from olive.exceptions import OliveError

    path = write_quickstart_files(tmp_path)
    edited = json.loads(path.read_text())
    edited["passes"]["fuse"]["opt_level"] = 99
    path.write_text(json.dumps(edited))
    with pytest.raises(OliveError, match="--force") as info:
        write_quickstart_files(tmp_path)
    assert str(path) in str(info.value)
    assert json.loads(path.read_text()) == edited
    write_quickstart_files(tmp_path, force=True)
    assert json.loads(path.read_text()) == quickstart_workflow()


def test_quickstart_ranks_latency_by_the_paired_ratio_to_the_input_model() -> None:
    # The p50 ratio is timed in alternating rounds with the input model (olive.measure.interleaved_runs), so
    # the comparison survives the machine changing speed during the search.
    from olive.evaluator.metric import parse_metrics

    workflow = quickstart_workflow()
    metrics = parse_metrics(workflow["evaluators"]["common"]["metrics"], data_config_names={"samples"})
    ranked = sorted((sub.priority, f"{m.name}-{sub.name}") for m in metrics for sub in m.sub_types if sub.priority > 0)
    assert ranked[0] == (1, "latency-ratio_p50")
    assert "cache_dir" not in workflow  # the per-user cache, not a folder beside the workflow
