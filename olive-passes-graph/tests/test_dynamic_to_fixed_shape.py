from __future__ import annotations

import numpy as np
import pytest
from conftest import files_under, run_outputs

from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing import random_inputs
from olive_passes_graph.dynamic_to_fixed_shape import DynamicToFixedShape


def symbolic_dims(model) -> list[str]:
    graph = model.load_model().graph
    return [
        f"{value.name}:{dim.dim_param}"
        for value in [*graph.input, *graph.output, *graph.value_info]
        for dim in value.type.tensor_type.shape.dim
        if dim.dim_param or not dim.HasField("dim_value")
    ]


def shapes(values) -> dict[str, list[int]]:
    return {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in values}


def test_dim_params_fixed_everywhere(tiny_bert, run_pass):
    assert symbolic_dims(tiny_bert)
    result = run_pass(DynamicToFixedShape, tiny_bert, {"dim_param": ["batch", "sequence"], "dim_value": [2, 16]})
    assert symbolic_dims(result) == []
    graph = result.load_model().graph
    assert shapes(graph.input)["input_ids"] == [2, 16]
    assert shapes(graph.output)["last_hidden_state"] == [2, 16, 64]
    inputs = random_inputs(tiny_bert, batch_size=2, sequence_length=16)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(tiny_bert, inputs)[0], atol=1e-5)


def test_input_shapes_fixed(tiny_conv, run_pass):
    result = run_pass(DynamicToFixedShape, tiny_conv, {"input_name": ["input"], "input_shape": [[4, 3, 16, 16]]})
    assert symbolic_dims(result) == []
    graph = result.load_model().graph
    assert shapes(graph.output)["output"] == [4, 10]
    session = result.prepare_session()
    with pytest.raises(Exception, match=r"[Dd]imension"):
        # Fixed means fixed: another batch size is now refused by onnxruntime.
        session.run(None, random_inputs(tiny_conv, batch_size=2))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"dim_param": ["batch"], "dim_value": [1], "input_name": ["input"], "input_shape": [[1, 16]]}, "not both"),
        ({}, "nothing to fix"),
        ({"dim_param": ["batch", "sequence"], "dim_value": [1]}, "2 names but dim_value has 1"),
        ({"dim_param": ["batch"]}, "1 names but dim_value has 0"),
        ({"dim_param": ["batch"], "dim_value": [0]}, "dim_value must be >= 1"),
        ({"input_name": ["input"], "input_shape": [[1, 16], [2]]}, "1 names but input_shape has 2"),
        ({"input_name": ["input"], "input_shape": [[-1, 16]]}, "must be >= 1"),
    ],
)
def test_conflicting_or_incomplete_params_are_config_errors(config, message):
    with pytest.raises(PassConfigError, match=message):
        DynamicToFixedShape.generate_config(DEFAULT_CPU_ACCELERATOR, config)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"dim_param": ["batchsize"], "dim_value": [1]}, "no symbolic dimension 'batchsize'.*'batch'"),
        ({"input_name": ["x"], "input_shape": [[1, 16]]}, "no input 'x'; its inputs are input"),
        ({"input_name": ["input"], "input_shape": [[1, 16, 1]]}, "rank 2 but input_shape gives"),
    ],
)
def test_params_that_do_not_match_the_model_fail_before_writing(tiny_mlp, tmp_path, config, message):
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match=message):
        DynamicToFixedShape(DEFAULT_CPU_ACCELERATOR, config).run(tiny_mlp, out)
    assert files_under(out) == []
