"""The workflows in examples/ validate as they are, and run when their passes are installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from olive.cli.main import cli
from olive.plugins.registry import PassRegistry, use_registry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORKFLOWS = sorted([*EXAMPLES.glob("*.json"), *EXAMPLES.glob("*.yaml")])


def _passes_installed() -> bool:
    names = {entry.name for entry in PassRegistry().entries()}
    return {"OnnxDynamicQuantization", "OnnxPeepholeOptimizer"} <= names


def test_there_are_examples() -> None:
    assert len(WORKFLOWS) >= 2


@pytest.mark.skipif(not _passes_installed(), reason="needs olive-passes-quant and olive-passes-graph installed")
@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_example_runs_as_is(workflow: Path, tmp_path: Path) -> None:
    with use_registry(PassRegistry()):
        dry = CliRunner().invoke(cli, ["run", "--config", str(workflow), "--dry-run"])
        assert dry.exit_code == 0, dry.output
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "--config",
                str(workflow),
                "--output-dir",
                str(tmp_path / "out"),
                "--cache-dir",
                str(tmp_path / "c"),
            ],
        )
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["best"]["agreement-cosine_mean"]["value"] >= 0.99
    assert (tmp_path / "out" / "model.onnx").stat().st_size < (
        EXAMPLES / "models" / "mlp" / "model.onnx"
    ).stat().st_size
