"""onnxruntime's ``quant_pre_process``, retried without symbolic shape inference when that fails."""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

_CWD_LOCK = threading.Lock()


@contextlib.contextmanager
def scratch_cwd() -> Iterator[None]:
    # When symbolic shape inference gives up, onnxruntime saves its partial model (and, for big models,
    # an external data file with a random name) into the current directory. Run it from a throwaway one.
    with _CWD_LOCK, tempfile.TemporaryDirectory(prefix="olive-quant-cwd-") as scratch, contextlib.chdir(scratch):
        yield


def quant_pre_process(
    input_path: str | Path,
    output_path: str | Path,
    skip_optimization: bool = False,
    skip_onnx_shape: bool = False,
    skip_symbolic_shape: bool = False,
) -> bool:
    """Preprocess ``input_path`` into ``output_path`` (weights as external data beside it).

    Returns True when symbolic shape inference had to be skipped: some exports make it fail with
    "Incomplete symbolic shape inference", and the rest of the preprocessing still helps quantization.
    """
    from onnxruntime.quantization.shape_inference import quant_pre_process as ort_quant_pre_process

    input_path, output_path = Path(input_path).resolve(), Path(output_path).resolve()

    def run(skip_symbolic: bool) -> None:
        with scratch_cwd():
            ort_quant_pre_process(
                input_model=str(input_path),
                output_model_path=str(output_path),
                skip_optimization=skip_optimization,
                skip_onnx_shape=skip_onnx_shape,
                skip_symbolic_shape=skip_symbolic,
                auto_merge=True,
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                external_data_location=output_path.name + ".data",
            )

    if skip_symbolic_shape:
        run(True)
        return False
    try:
        run(False)
    except Exception as exc:
        if "symbolic shape" not in str(exc).lower() and not isinstance(exc, ImportError):
            raise
        logger.warning(
            "quant_pre_process: symbolic shape inference failed (%s); retrying with skip_symbolic_shape=True", exc
        )
        run(True)
        return True
    return False
