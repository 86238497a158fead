"""Two places where onnxruntime's int8 quantizers hold one more copy of the model than their work needs.

Measured on a 0.5 GB model (``benchmarks/bench_scale.py``), each at about three times the model:

- ``quantize_dynamic``: its quantizer refreshes shape information by saving the model it was given and
  loading it back, and deep-copies it first so the caller's model is not changed by the save. The model
  is the quantizer's own (loaded from the path passed in) and nothing reads it afterwards, so
  :func:`reload_without_copy` drops the copy for the duration of the call: original, reloaded model and
  int8 weights, about 2.3 times the model.
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

from olive.passes.onnx.common import release_memory

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
    """While the body runs, onnxruntime's dynamic quantizer reloads its model without deep-copying it first."""
    from onnxruntime.quantization import onnx_quantizer, quant_utils

    original = getattr(onnx_quantizer, "save_and_reload_model_with_shape_infer", None)
    load = getattr(quant_utils, "load_model_with_shape_infer", None)
    if original is None or load is None:
        yield
        return

    def save_and_reload(model: Any) -> Any:
        import onnx

        with tempfile.TemporaryDirectory(prefix="olive-quant-reload-") as tmp:
            path = Path(tmp) / "model.onnx"
            onnx.save_model(model, str(path), save_as_external_data=True)
            return load(path)

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
