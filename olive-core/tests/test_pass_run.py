"""Passes written in either config style run on a real ONNX model; the Pass contract's run rules."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.model import ONNXModelHandler
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.search.search_parameter import Boolean


def _model(path) -> ONNXModelHandler:
    weight = numpy_helper.from_array(np.eye(4, dtype=np.float32) * 2, "W")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"], name="matmul", doc_string="a doc string"),
            helper.make_node("Identity", ["h"], ["y"], name="identity", doc_string="another"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [weight],
        doc_string="graph doc",
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(proto, path)
    return ONNXModelHandler(path)


class StripDocStrings(Pass):
    """Attribute access, as the current docs show."""

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "keep_graph_doc": PassConfigParam(type_=bool, default_value=False, search_defaults=Boolean()),
            **get_external_data_config(),
        }

    def _run_for_config(self, model, config, output_model_path):
        proto = model.load_model()
        for node in proto.graph.node:
            node.doc_string = ""
        if not config.keep_graph_doc:
            proto.graph.doc_string = ""
        return model_proto_to_olive_model(proto, output_model_path, config)


class ScaleWeights(Pass):
    """Dict access, as the old docs typed the config."""

    @staticmethod
    def _default_config(accelerator_spec):
        return {"factor": PassConfigParam(type_=float, default_value=3.0), **get_external_data_config()}

    def _run_for_config(self, model, config, output_model_path):
        proto = model.load_model()
        weight = numpy_helper.to_array(proto.graph.initializer[0]) * config["factor"]
        proto.graph.initializer[0].CopyFrom(numpy_helper.from_array(weight, "W"))
        return model_proto_to_olive_model(proto, output_model_path, config)


class Initializing(Pass):
    calls = 0

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {}

    def _initialize(self):
        type(self).calls += 1

    def _run_for_config(self, model, config, output_model_path):
        return model


class ReturnsPath(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return {}

    def _run_for_config(self, model, config, output_model_path):
        return output_model_path


def test_attribute_access_pass_runs_and_output_loads(tmp_path):
    model = _model(tmp_path / "in.onnx")
    output = StripDocStrings(CPU, {}).run(model, tmp_path / "out")
    assert isinstance(output, ONNXModelHandler)
    proto = output.load_model()
    assert all(node.doc_string == "" for node in proto.graph.node)
    assert proto.graph.doc_string == ""
    kept = StripDocStrings(CPU, {"keep_graph_doc": True}).run(model, tmp_path / "kept")
    assert kept.load_model().graph.doc_string == "graph doc"
    onnxruntime.InferenceSession(output.model_path, providers=["CPUExecutionProvider"])


def test_dict_access_pass_runs_and_changes_outputs(tmp_path):
    model = _model(tmp_path / "in.onnx")
    output = ScaleWeights(CPU, {"factor": 0.5}).run(model, tmp_path / "out")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    before = model.prepare_session().run(None, {"x": x})[0]
    after = output.prepare_session().run(None, {"x": x})[0]
    np.testing.assert_allclose(after, before * 0.5)


def test_initialize_runs_once(tmp_path):
    model = _model(tmp_path / "in.onnx")
    instance = Initializing(CPU)
    instance.run(model, tmp_path / "a")
    instance.run(model, tmp_path / "b")
    assert Initializing.calls == 1


def test_run_must_return_a_model_handler(tmp_path):
    with pytest.raises(TypeError, match="must return an OliveModelHandler"):
        ReturnsPath(CPU).run(_model(tmp_path / "in.onnx"), tmp_path / "out")


def test_defaults_for_optional_hooks():
    assert StripDocStrings.is_accelerator_agnostic(CPU) is True
    config = StripDocStrings.generate_config(CPU, {})
    assert StripDocStrings.validate_config(config, CPU) is True
    assert StripDocStrings.pass_name() == "StripDocStrings"


def test_a_subclass_of_a_registered_pass_has_its_own_identity(isolated_registry):
    class Registered(StripDocStrings):
        pass

    isolated_registry.register(Registered, name="Strip", distribution="olive-pass-strip", version="1.0")

    class Derived(Registered):
        pass

    assert (Registered.pass_name(), Registered.distribution(), Registered.distribution_version()) == (
        "Strip",
        "olive-pass-strip",
        "1.0",
    )
    assert (Derived.pass_name(), Derived.distribution(), Derived.distribution_version()) == ("Derived", None, None)
    assert type(Derived.generate_config(CPU, {})).__name__ == "DerivedConfig"
