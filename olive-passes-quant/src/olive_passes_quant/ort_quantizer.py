"""Running onnxruntime's weight-only quantizer (``MatMulNBitsQuantizer``): one place for what every call needs.

:func:`quantize_matmuls` is the one call every MatMulNBits pass makes (RTN, HQQ, k-quant, GPTQ, and the per-weight
pieces of :mod:`olive_passes_quant.matmul_pieces`): it names the MatMuls to quantize, builds the quantizer and runs
it through :func:`run_quantizer`, which adds what onnxruntime's own call lacks:

- **Any width.** onnxruntime's k-quant, RTN and GPTQ code (``onnxruntime.quantization.neural_compressor``)
  packs the 4-bit zero points of all columns into one flat run of bytes and then reshapes it to one row per
  column. A column with an odd number of blocks (K=352 at block size 32, Qwen2.5-0.5B's 896 or Gemma-3-1B's 1152
  at 128) makes that reshape fail, and even where it did not fail rows would not start on a byte. MatMulNBits
  wants each column's zero points in a row of its own, padded to whole bytes. Inside :func:`run_quantizer` the
  packing function is given zero points packed that way; the quantizing math stays onnxruntime's. An even number
  of blocks goes through onnxruntime's own packing unchanged.
- **Errors in our words.** An exception from the quantizer becomes a :class:`PassRunError` that names the pass,
  the MatMul it was quantizing (read from the traceback), the settings, and what to change; the original stays
  chained, so ``-v`` shows its traceback.
- **Quiet.** The quantizer's log records and printed progress go to our logger at DEBUG.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import threading
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from olive.exceptions import OliveError, PassRunError
from olive.logs import onnxruntime_logs
from olive.passes.onnx.common import weights_in

__all__ = ["pack_zero_points", "quantize_matmuls", "run_quantizer"]

logger = logging.getLogger(__name__)

# The packing function is swapped in a module of onnxruntime's, which every thread of the process shares.
_PATCH_LOCK = threading.RLock()


def quantize_matmuls(
    proto: Any,
    algo_config: Any,
    nodes: Iterable[str],
    *,
    bits: int,
    block_size: int,
    is_symmetric: bool,
    accuracy_level: int | None,
    owner: str,
    settings: str,
    weights_dir: str | Path | None = None,
) -> Any:
    """``proto`` (an ``onnx.ModelProto``) with the MatMuls named in ``nodes`` quantized into MatMulNBits nodes by
    ``algo_config`` (one of onnxruntime's ``*WeightOnlyQuantConfig``); the quantized ``onnx.ModelProto``.

    Every other node is named to the quantizer as excluded: onnxruntime takes every MatMul with an initializer,
    weights a run may feed (adapter slots) and empty ones included, and its ``nodes_to_include`` adds to that
    selection instead of restricting it. ``weights_dir``, ``owner`` and ``settings``: as :func:`run_quantizer`.
    """
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    wanted = set(nodes)
    before = {node.name for node in proto.graph.node}
    quantizer = MatMulNBitsQuantizer(
        proto,
        bits=bits,
        block_size=block_size,
        is_symmetric=is_symmetric,
        accuracy_level=accuracy_level,
        nodes_to_exclude=sorted({node.name for node in proto.graph.node} - wanted),
        algo_config=algo_config,
    )
    quantized = run_quantizer(quantizer, owner=owner, settings=settings, weights_dir=weights_dir)
    if accuracy_level:
        # onnxruntime's HQQ writes no accuracy_level whatever it is given; 0 (unset) is left out, as onnxruntime does.
        import onnx

        for node in quantized.graph.node:
            new = node.op_type == "MatMulNBits" and node.name not in before
            if new and not any(attribute.name == "accuracy_level" for attribute in node.attribute):
                node.attribute.append(onnx.helper.make_attribute("accuracy_level", int(accuracy_level)))
    return quantized


def run_quantizer(
    quantizer: Any,
    *,
    owner: str,
    settings: str,
    weights_dir: str | Path | None = None,
    fix: str = "try another block_size, or name the MatMul in nodes_to_exclude to keep it in float",
) -> Any:
    """Run ``quantizer.process()`` and return the quantized ``onnx.ModelProto``.

    ``weights_dir``: the folder the graph's external weights are read from (the working directory while the
    quantizer runs). ``settings`` (e.g. ``"k-quant, 4 bits, block_size 32"``) and ``fix`` go into the message of
    a failure.
    """
    folder = weights_in(weights_dir) if weights_dir is not None else contextlib.nullcontext()
    try:
        with (
            folder,
            _row_packed_zero_points(),
            onnxruntime_logs(logger, ("neural_compressor",)),
            _quiet_library(),
        ):
            quantizer.process()
    except OliveError:
        raise
    except Exception as exc:
        node = _failing_node(exc)
        where = f" on MatMul '{node}'" if node else ""
        raise PassRunError(
            f"onnxruntime's weight-only quantizer ({settings}) failed{where}: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())}; {fix} (-v shows the quantizer's traceback)",
            owner=owner,
        ) from exc
    return quantizer.model.model if hasattr(quantizer.model, "model") else quantizer.model


def pack_zero_points(zero_points: Any, columns: int) -> Any:
    """4-bit zero points, one per (column, block) in column-major order, as MatMulNBits takes them: a
    ``[columns, ceil(blocks / 2)]`` uint8 array, block ``2j`` in the low and ``2j + 1`` in the high nibble of byte
    ``j``; a column's unused last nibble holds 8 (the zero point of an unset block)."""
    import numpy as np

    values = np.asarray(zero_points, dtype=np.uint8).reshape(columns, -1)
    if values.shape[1] % 2:
        values = np.concatenate([values, np.full((columns, 1), 8, dtype=np.uint8)], axis=1)
    return (values[:, 0::2] & 0x0F) | ((values[:, 1::2] & 0x0F) << 4)


def _failing_node(exc: BaseException) -> str | None:
    """The MatMul the quantizer was working on when it raised: the innermost frame of the traceback whose locals
    hold an ONNX node (every quantizer in onnxruntime loops over ``node``)."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        node = tb.tb_frame.f_locals.get("node")
        if getattr(node, "op_type", None) == "MatMul" and getattr(node, "name", None):
            found = node.name
        tb = tb.tb_next
    return found


@contextlib.contextmanager
def _row_packed_zero_points() -> Iterator[None]:
    try:
        from onnxruntime.quantization.neural_compressor import weight_only
    except ImportError:  # an onnxruntime without that code has no k-quant, RTN or GPTQ to fix
        yield
        return
    original = getattr(weight_only, "make_matmul_weight_only_node", None)
    if original is None or getattr(original, "_olive_row_packed", False):
        yield
        return
    signature = inspect.signature(original)

    def make_node(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        zero_points = values.get("zero_point")
        if values.get("num_bits") != 4 or zero_points is None or int(values["k_blocks"]) % 2 == 0:
            return original(*bound.args, **bound.kwargs)
        return _with_zero_points(original, values, zero_points)

    make_node._olive_row_packed = True  # type: ignore[attr-defined]
    with _PATCH_LOCK:
        weight_only.make_matmul_weight_only_node = make_node
        try:
            yield
        finally:
            weight_only.make_matmul_weight_only_node = original


def _with_zero_points(original: Any, values: dict[str, Any], zero_points: Any) -> Any:
    """onnxruntime's node and initializers without zero points, then the zero points packed a column a row."""
    import onnx

    node, initializers = original(**{**values, "zero_point": None})
    columns = int(values["weight_shape"][1])
    packed = pack_zero_points(zero_points, columns)
    tensor = onnx.helper.make_tensor(
        name=values["node"].input[1] + "_zp",
        data_type=onnx.TensorProto.UINT8,
        dims=packed.shape,
        vals=packed.tobytes(),
        raw=True,
    )
    node.input.append(tensor.name)
    return node, [*initializers, tensor]


@contextlib.contextmanager
def _quiet_library() -> Iterator[None]:
    """The k-quant code prints a progress line per MatMul and keeps a printing handler of its own; inside the
    block its printing goes to our logger at DEBUG and its handler is set aside (onnxruntime_logs forwards its
    records)."""
    library = logging.getLogger("neural_compressor")
    handlers = library.handlers[:]
    library.handlers = []
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), warnings.catch_warnings():
            # torch.from_numpy on a read-only weight: the quantizer only reads it.
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            yield
    finally:
        library.handlers = handlers
        for line in dict.fromkeys(part.strip() for part in printed.getvalue().replace("\r", "\n").splitlines()):
            if line:
                logger.debug("%s", line)
