"""What onnxruntime's tools log goes through our logging, at debug level, and nowhere else.

onnxruntime's quantization tools log on the root logger (``logging.warning(...)``, which also installs a
handler printing ``WARNING:root:...`` into the user's output when none is there) and on their own
``onnxruntime.*`` loggers. Advice such as "Please consider to run pre-processing before quantization" is
about what our passes already do (``quant_preprocess``), so inside :func:`onnxruntime_logs` every such record
is logged again on our logger at debug level and dropped.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
from collections.abc import Iterator

# onnxruntime's advice, in words that name what the user can change here.
_OUR_WORDS = {
    "Please consider to run pre-processing before quantization": (
        "onnxruntime advises quantization pre-processing for this model; quant_preprocess: true runs it"
    ),
}


def _onnxruntime_dir() -> str | None:
    spec = importlib.util.find_spec("onnxruntime")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return os.path.realpath(locations[0]) + os.sep if locations else None


def _in_our_words(message: str) -> str:
    for prefix, ours in _OUR_WORDS.items():
        if message.startswith(prefix):
            return ours
    return f"onnxruntime: {message}"


@contextlib.contextmanager
def onnxruntime_logs(target: logging.Logger) -> Iterator[None]:
    """Inside the block, records onnxruntime logs go to ``target`` at DEBUG instead of the user's output."""
    ort_dir = _onnxruntime_dir()

    class _FromOnnxruntime(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            if ort_dir is None or not os.path.realpath(record.pathname).startswith(ort_dir):
                return True
            target.debug("%s", _in_our_words(record.getMessage()))
            return False

    class _Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            target.debug("%s", _in_our_words(record.getMessage()))

    root = logging.getLogger()
    ort_logger = logging.getLogger("onnxruntime")
    drop, forward = _FromOnnxruntime(), _Forward()
    # logging.warning() configures a printing handler on a root logger that has none; give it one that does
    # nothing for as long as the block runs.
    placeholder = logging.NullHandler() if not root.handlers else None
    if placeholder is not None:
        root.addHandler(placeholder)
    root.addFilter(drop)
    saved_propagate = ort_logger.propagate
    ort_logger.addHandler(forward)
    ort_logger.propagate = False
    try:
        yield
    finally:
        ort_logger.propagate = saved_propagate
        ort_logger.removeHandler(forward)
        root.removeFilter(drop)
        if placeholder is not None:
            root.removeHandler(placeholder)
