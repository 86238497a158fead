"""What the quantization passes reject, as a workflow sees it: the pass key, the param and the fix, before any
run; or, in a search, a pruned point whose footprint says which param and why."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import olive.workflows
from olive.cli.main import cli
from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive_passes_quant.float16 import OnnxFloatToFloat16


def _workflow(bert, root, passes: dict, search: bool) -> dict:
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(bert.model_path)},
        "passes": passes,
        "cache_dir": str(root / "cache"),
        "output_dir": str(root / "out"),
    }
    if search:
        workflow["search_strategy"] = {"execution_order": "joint", "sampler": "sequential"}
    return workflow


def _searched(*values) -> dict:
    return {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": list(values)}


def test_a_block_size_the_workflow_fixes_is_a_config_error_naming_it(tmp_path, bert):
    path = tmp_path / "wf.json"
    passes = {"rtn": {"type": "OnnxBlockWiseRtnQuantization", "block_size": -16}}
    path.write_text(json.dumps(_workflow(bert, tmp_path, passes, search=True)))
    result = CliRunner().invoke(cli, ["run", "--config", str(path)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: passes.rtn (OnnxBlockWiseRtnQuantization): param 'block_size' is -16, which MatMulNBits does not "
        "take; use a power of two >= 16 (16, 32, 64, 128)"
    )
    assert not (tmp_path / "out").exists()


def test_a_searched_block_size_matmulnbits_cannot_take_is_pruned_with_its_reason(tmp_path, bert):
    passes = {"rtn": {"type": "OnnxBlockWiseRtnQuantization", "block_size": _searched(-16, 32)}}
    output = olive.workflows.run(_workflow(bert, tmp_path, passes, search=True))
    nodes = {n.config["block_size"]: n for n in output.footprint if n.pass_key == "rtn"}
    assert nodes[32].status == "ok" and output.best is not None
    assert nodes[-16].status == "pruned"
    assert "param 'block_size' is -16, which MatMulNBits does not take" in nodes[-16].error


def test_static_points_of_a_mode_search_without_data_are_pruned_saying_so(tmp_path, bert):
    passes = {
        "quant": {
            "type": "OnnxQuantization",
            "quant_mode": _searched("dynamic", "static"),
            # Pin the rest so the search is over the mode only.
            "precision": "int8",
            "per_channel": True,
            "reduce_range": False,
            "quant_preprocess": False,
        }
    }
    output = olive.workflows.run(_workflow(bert, tmp_path, passes, search=True))
    nodes = {n.config["quant_mode"]: n for n in output.footprint if n.pass_key == "quant"}
    assert nodes["dynamic"].status == "ok"
    assert nodes["static"].status == "pruned"
    assert "param 'data_config' is not set, and static quantization needs calibration data" in nodes["static"].error


def test_float16_clipping_bounds_must_be_positive():
    with pytest.raises(PassConfigError, match=r"param 'max_finite_val' expects a number above 0, got -1.0"):
        OnnxFloatToFloat16.generate_config(DEFAULT_CPU_ACCELERATOR, {"max_finite_val": -1}, disable_search=True)
    assert (
        OnnxFloatToFloat16.generate_config(DEFAULT_CPU_ACCELERATOR, {}, disable_search=True).max_finite_val == 65504.0
    )
