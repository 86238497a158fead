"""Two places where onnxruntime's int8 quantizers hold one more copy of the model than their work needs.

Measured on a 0.5 GB model (``benchmarks/bench_scale.py``), each at about three times the model:

- ``quantize_dynamic``: its quantizer refreshes shape information by deep-copying the model it was given,
  saving the copy and loading it back after ONNX shape inference (three copies of the weights at once).
  Shape inference needs no weight data: :func:`reload_without_copy` runs it on a copy of the graph
  without its large weights and puts the inferred types into the model itself (the same model results;
  a test checks it), so the quantizer holds the float model and its int8 weights, about 1.3 times the
  model.
- ``quantize_static``: it loads the model for its quantizer, then, while holding it, calibrates: the
  calibrator loads a second copy to add its outputs, and an onnxruntime session a third. Its own
  ``calibration_cache_path`` option reads ranges computed earlier instead, so :func:`calibrate_first`
  runs onnxruntime's calibrator alone (with the settings quantize_static would give it) and saves the
  ranges there: calibration peaks at two copies, quantization at one plus the int8 weights.

No option of onnxruntime avoids either copy (checked for 1.32); both fall back to the plain call where the
onnxruntime release lacks what they rely on.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from olive.passes.onnx.common import release_memory, weightless_copy

logger = logging.getLogger(__name__)

_PATCH_LOCK = threading.Lock()

# quantize_static's mapping from its extra_options to the calibrator's (onnxruntime/quantization/quantize.py).
_CALIBRATOR_OPTIONS = (
    ("CalibTensorRangeSymmetric", "symmetric"),
    ("CalibMovingAverage", "moving_average"),
    ("CalibMovingAverageConstant", "averaging_constant"),
    ("CalibMaxIntermediateOutputs", "max_intermediate_outputs"),
    ("CalibPercentile", "percentile"),
)
# Options under which quantize_static calibrates in ways of its own (data in strides, a rewritten model).
_CALIBRATES_ITS_OWN_WAY = ("SmoothQuant", "CalibStridedMinMax")


@contextlib.contextmanager
def reload_without_copy() -> Iterator[None]:
    """While the body runs, onnxruntime's dynamic quantizer refreshes shape information on the graph alone.

    Its ``save_and_reload_model_with_shape_infer`` deep-copies the model, saves the copy, runs ONNX shape
    inference on the file and loads the result: the model with inferred ``value_info`` (and onnxruntime's
    "onnx.infer" metadata), at three copies of the weights. Shape inference needs no weight data, so here
    it runs on a copy without the large weights and the result goes into the model itself.
    """
    from onnxruntime.quantization import onnx_quantizer, quant_utils

    original = getattr(onnx_quantizer, "save_and_reload_model_with_shape_infer", None)
    add_metadata = getattr(quant_utils, "add_infer_metadata", None)
    if original is None or add_metadata is None:
        yield
        return

    def save_and_reload(model: Any) -> Any:
        import onnx

        inferred = onnx.shape_inference.infer_shapes(weightless_copy(model))
        del model.graph.value_info[:]
        model.graph.value_info.extend(inferred.graph.value_info)
        for output, typed in zip(model.graph.output, inferred.graph.output, strict=True):
            output.type.CopyFrom(typed.type)
        add_metadata(model)
        return model

    with _PATCH_LOCK:
        onnx_quantizer.save_and_reload_model_with_shape_infer = save_and_reload
        try:
            yield
        finally:
            onnx_quantizer.save_and_reload_model_with_shape_infer = original


def calibrate_first(
    model_path: str | Path,
    scratch: Path,
    reader: Any,
    calibrate_method: Any,
    op_types_to_quantize: Sequence[str] | None,
    extra_options: dict[str, Any],
    providers: Sequence[str] | None,
) -> Path | None:
    """Calibrate ``model_path`` with onnxruntime's calibrator and save the ranges for quantize_static.

    Returns the ranges file to pass as ``calibration_cache_path``, or None where quantize_static should
    calibrate itself (no such option in this onnxruntime, or options that change how it calibrates).
    """
    from onnxruntime.quantization import quantize_static

    if "calibration_cache_path" not in inspect.signature(quantize_static).parameters:
        return None
    if any(extra_options.get(key) for key in _CALIBRATES_ITS_OWN_WAY):
        return None
    try:
        from onnxruntime.quantization import create_calibrator
        from onnxruntime.quantization.calibrate import save_tensors_data
        from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry
    except ImportError:
        return None

    # As quantize_static picks them: every op type its two formats quantize unless given.
    op_types = list(op_types_to_quantize or set(QLinearOpsRegistry) | set(QDQRegistry))
    options = {key: extra_options[name] for name, key in _CALIBRATOR_OPTIONS if name in extra_options}
    with tempfile.TemporaryDirectory(prefix="olive-quant-calib-", dir=scratch) as tmp:
        calibrator = create_calibrator(
            Path(model_path),
            op_types,
            augmented_model_path=str(Path(tmp) / "augmented_model.onnx"),
            calibrate_method=calibrate_method,
            use_external_data_format=True,
            providers=list(providers) if providers else None,
            extra_options=options,
        )
        calibrator.collect_data(reader)
        ranges = calibrator.compute_data()
        del calibrator
    release_memory()
    reader.rewind()
    path = scratch / "calibration_ranges.json"
    save_tensors_data(ranges, path)
    return path
