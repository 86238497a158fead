"""The graph passes on models that keep their weights in external data, as a model past 2 GB must.

Peephole clean-ups and transformer fusions work on the graph while the weights stay in their files (read
one tensor at a time, copied into the output tensor by tensor); onnx's version converter, which takes the
whole model as one protobuf message, is refused before work past 2 GB. The limit is lowered here so a
small real model takes the same path; ``benchmarks/bench_scale.py`` runs the passes at 2.2 GB.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import onnx
import pytest

from olive.exceptions import PassRunError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.measure import create_session
from olive.model.handler import ONNXModelHandler
from olive.passes.onnx import common
from olive.testing.models import bert_like_model_files, output_cosine, random_inputs
from olive_passes_graph.dynamic_to_fixed_shape import DynamicToFixedShape
from olive_passes_graph.opset_conversion import OnnxOpVersionConversion
from olive_passes_graph.peephole import OnnxPeepholeOptimizer
from olive_passes_graph.session_params_tuning import OrtSessionParamsTuning
from olive_passes_graph.transformer_optimization import OrtTransformersOptimization


@pytest.fixture(scope="module")
def external(tmp_path_factory: pytest.TempPathFactory) -> ONNXModelHandler:
    return bert_like_model_files(tmp_path_factory.mktemp("external") / "model", hidden_size=128, num_heads=4)


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _cosine(reference: ONNXModelHandler, candidate: ONNXModelHandler) -> float:
    inputs = random_inputs(reference, batch_size=2, sequence_length=16, seed=7)
    return output_cosine(
        create_session(reference.model_path, None).run(None, inputs),
        create_session(candidate.model_path, None).run(None, inputs),
    )


def _run(cls, params: dict, model: ONNXModelHandler, out: Path) -> ONNXModelHandler:
    config = cls.generate_config(DEFAULT_CPU_ACCELERATOR, params, disable_search=True)
    return cls(DEFAULT_CPU_ACCELERATOR, config).run(model, str(out))


CASES = [
    (OnnxPeepholeOptimizer, {}),
    (OnnxPeepholeOptimizer, {"onnxoptimizer_optimize": False}),
    (OnnxPeepholeOptimizer, {"onnxscript_optimize": False}),
    (OrtTransformersOptimization, {"model_type": "bert", "opt_level": 0}),
    (OrtTransformersOptimization, {"model_type": "bert", "opt_level": 1}),
    (OrtTransformersOptimization, {"model_type": "bert", "opt_level": 0, "float16": True}),
]


@pytest.mark.parametrize("external_out", [True, False], ids=["external-out", "inline-out"])
@pytest.mark.parametrize(("cls", "params"), CASES, ids=lambda v: getattr(v, "__name__", "") or str(v))
def test_weights_stay_on_disk_and_arrive_in_the_output(tmp_path, external, cls, params, external_out):
    before = _digest(Path(external.model_path).parent)
    result = _run(cls, {**params, "save_as_external_data": external_out}, external, tmp_path / "out")
    expected = ["model.onnx", "model.onnx.data"] if external_out else ["model.onnx"]
    # Only the model: no scratch folder, no copy of the input's data file.
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == expected
    onnx.checker.check_model(result.model_path, full_check=True)
    assert _cosine(external, result) >= (0.999 if params.get("float16") else 0.99999)
    assert _digest(Path(external.model_path).parent) == before


def test_fusions_still_fuse_on_a_graph_without_its_weights(tmp_path, external):
    result = _run(OrtTransformersOptimization, {"model_type": "bert", "opt_level": 0}, external, tmp_path / "out")
    op_types = {n.op_type for n in onnx.load(result.model_path, load_external_data=False).graph.node}
    assert {"Attention", "SkipLayerNormalization", "EmbedLayerNormalization"} <= op_types
    assert result.model_attributes["transformer_fusions"].get("Attention") == 2


def test_an_output_past_the_limit_goes_to_external_data(tmp_path, external, monkeypatch):
    monkeypatch.setattr(common, "_PROTOBUF_LIMIT", 50_000)
    result = _run(OnnxPeepholeOptimizer, {}, external, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.onnx", "model.onnx.data"]
    assert _cosine(external, result) >= 0.99999


def test_opset_conversion_past_the_limit_is_refused_before_work(tmp_path, external, monkeypatch):
    monkeypatch.setattr(common, "_PROTOBUF_LIMIT", external.size_on_disk)
    with pytest.raises(PassRunError, match=r"version converter takes the whole model.*2 GB.*convert the opset"):
        _run(OnnxOpVersionConversion, {"target_opset": 18}, external, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (OrtSessionParamsTuning, {"warmup_num": 1, "repeat_test_num": 2, "intra_thread_num_list": [1]}),
        (DynamicToFixedShape, {"dim_param": ["batch", "sequence"], "dim_value": [2, 16]}),
    ],
    ids=["OrtSessionParamsTuning", "DynamicToFixedShape"],
)
def test_passes_that_keep_the_weights_leave_the_input_readable(tmp_path, external, cls, params):
    before = _digest(Path(external.model_path).parent)
    result = _run(cls, params, external, tmp_path / "out")
    # A hard link to the input's data file would make onnx refuse the input itself ("hardlink attack").
    for model in (external, result):
        onnx.checker.check_model(model.model_path, full_check=True)
        onnx.load(model.model_path, load_external_data=True)
    assert _cosine(external, result) >= 0.99999
    assert _digest(Path(external.model_path).parent) == before
