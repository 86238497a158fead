"""``olive optimize`` reads its model once: the model's rules (:mod:`olive.model.onnx_facts`) find the file and
scan its graph, and the workflow it prepares starts from the handler that did; the workflow it writes is the typed
document it ran, which ``olive run`` reads back to the same config. (Here, where the pass distributions the
workflow names are installed.)"""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from click.testing import CliRunner

from olive.cli.main import cli
from olive.model import onnx_scan
from olive.model.handler import ONNXModelHandler
from olive.optimize.data import data_source
from olive.optimize.facts import read_model_facts
from olive.optimize.installed import installed_now
from olive.optimize.options import OptimizeOptions
from olive.optimize.recipe import build_workflow
from olive.testing.models import bert_like_model, save_model
from olive.workflows.config import load_workflow_config


def test_optimize_parses_its_model_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file written seconds ago is scanned anew by each reader that does not keep what it read (its signature is
    # not trusted yet): only the one handler, passed from the facts to the workflow, keeps the count at one.
    model = Path(save_model(bert_like_model(seed=0), tmp_path / "model").model_path)
    loads: list[str] = []
    real_load = onnx.load

    def counted_load(f, *args, **kwargs):
        loads.append(str(f))
        return real_load(f, *args, **kwargs)

    monkeypatch.setattr(onnx, "load", counted_load)
    monkeypatch.setattr(onnx, "load_model", counted_load)
    onnx_scan.SCANS.clear()
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["optimize", str(model), "--output", str(out), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert {str(model): 1} == onnx_scan.SCANS
    assert str(model) not in loads


def test_the_written_workflow_reads_back_to_the_config_that_ran(tmp_path: Path) -> None:
    model = Path(save_model(bert_like_model(seed=0), tmp_path / "model").model_path)
    facts = read_model_facts(model)
    assert isinstance(facts.handler, ONNXModelHandler) and Path(facts.handler.model_path) == model
    options = OptimizeOptions(output_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    installed, _ = installed_now(options.providers, options.device)
    recipe = build_workflow(facts, options, installed, data_source(None, facts, installed.data_containers))
    written = tmp_path / "optimize_workflow.json"
    written.write_text(json.dumps(recipe.document.to_json(), indent=2))
    ran, reread = load_workflow_config(recipe.document), load_workflow_config(written)
    assert ran.input_model.handler is facts.handler
    assert reread.input_model.handler.to_json() == ran.input_model.handler.to_json()
    assert reread.passes == ran.passes
    assert reread.evaluators == ran.evaluators
    assert reread.systems == ran.systems
    assert reread.search_strategy == ran.search_strategy
