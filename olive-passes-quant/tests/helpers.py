"""Helpers the tests share: run a model, count its ops, measure its weights."""

from __future__ import annotations


def run_model(model, inputs) -> list:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model.model_path), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def op_types(model) -> dict[str, int]:
    from collections import Counter

    import onnx

    return dict(Counter(node.op_type for node in onnx.load(str(model.model_path)).graph.node))


def weight_bytes(model) -> int:
    """Bytes of every initializer of the model (its weights, whatever their type)."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(model.model_path))
    return sum(numpy_helper.to_array(init).nbytes for init in proto.graph.initializer)
