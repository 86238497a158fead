"""Whether onnxruntime's CPU int8 MatMul adds pairs of products in 16 bits on this machine, and the
``reduce_range`` default that follows (:mod:`olive.hardware.cpu` says why it matters).

:func:`int8_matmul_saturates` decides from the CPU's flags (x86-64 without VNNI or AMX), cheaply enough for pass
defaults: it imports neither numpy nor onnxruntime. :func:`int8_matmul` checks it against onnxruntime itself:
it runs one ``MatMulInteger`` whose pair sums overflow 16 bits and compares the result with the exact product.
``olive eps`` shows that measurement, the tests check the two agree on the CPU they run on, and on a system
that lists no CPU flags (Windows) it is the answer. It costs one session of a 1 KB model, once per process.
"""

from __future__ import annotations

import functools

import attrs

from olive.hardware.cpu import cpu_info, describe_cpu
from olive.measure.sessions import create_session

__all__ = ["Int8MatMul", "int8_matmul", "int8_matmul_saturates", "reduce_range_for"]

_ROWS, _DEPTH, _COLUMNS = 2, 64, 8


@attrs.frozen
class Int8MatMul:
    """What onnxruntime's CPU provider does with a uint8 x int8 MatMul here.

    :param saturates: pairs of products are added in 16 bits and clipped.
    :param cpu: the CPU it was measured on (:func:`olive.hardware.cpu.describe_cpu`).
    :param onnxruntime: the onnxruntime version that ran it.
    """

    saturates: bool
    cpu: str
    onnxruntime: str

    def describe(self) -> str:
        if self.saturates:
            return "pairs of uint8 x int8 products added in 16 bits, saturating (int8 weights get reduce_range)"
        return "exact (32-bit sums)"

    def to_json(self) -> dict[str, object]:
        return {"saturates": self.saturates, "cpu": self.cpu, "onnxruntime": self.onnxruntime}


@functools.cache
def int8_matmul() -> Int8MatMul:
    """Measure onnxruntime's CPU int8 MatMul once per process (see the module docstring)."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    # 255 x 127 twice is 64770, past int16's 32767: a saturating kernel returns less than the exact sum.
    weights = np.full((_DEPTH, _COLUMNS), 127, dtype=np.int8)
    weights[:, 1::2] = -128
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
        "int8_kernel_probe",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [_ROWS, _DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [_ROWS, _COLUMNS])],
        [numpy_helper.from_array(weights, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = create_session(
        model.SerializeToString(),
        {"execution_provider": "CPUExecutionProvider", "session_options": {"intra_op_num_threads": 1}},
        what="the int8 kernel probe",
    )
    activations = np.full((_ROWS, _DEPTH), 255, dtype=np.uint8)
    (result,) = session.run(None, {"a": activations})
    exact = activations.astype(np.int64) @ weights.astype(np.int64)
    return Int8MatMul(bool(np.any(result != exact)), describe_cpu(), ort.__version__)


def int8_matmul_saturates() -> bool:
    """Whether onnxruntime's CPU int8 MatMul saturates on this CPU: read from its flags, or measured once with
    onnxruntime where the system lists none."""
    known = cpu_info().int8_saturates
    return int8_matmul().saturates if known is None else known


def reduce_range_for(execution_provider: str | None) -> bool:
    """The ``reduce_range`` int8 weights should get on ``execution_provider``: True on the CPU provider when its
    int8 MatMul saturates here, else False (other providers run kernels of their own)."""
    if execution_provider not in (None, "CPUExecutionProvider"):
        return False
    return int8_matmul_saturates()
