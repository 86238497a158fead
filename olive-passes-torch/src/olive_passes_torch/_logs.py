"""Messages of torch, transformers and the ONNX exporters, routed into our own logger while they run.

The exporters speak through ``warnings``, their own loggers (``torch.onnx``, ``torch._dynamo``,
``onnxscript``, ``onnx_ir``, ``transformers`` with a handler of its own), ``print`` and progress bars on
stderr. Inside :func:`routed_logs` each distinct message reaches the given logger once, at most at the
block's ``level`` (INFO by default): our own checks (the conversion check, the missing-weights check)
decide what is a problem, not the tracer's caution or a library's load report. Printed lines go at DEBUG.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import warnings
from collections.abc import Iterator

LIBRARY_LOGGERS = ("torch", "transformers", "onnxscript", "onnx_ir")
# Warnings the conversion chose knowingly; kept at DEBUG so that they do not read as a problem.
_EXPECTED = (
    "legacy TorchScript-based ONNX export",
    "'dynamic_axes' is not recommended when dynamo=True",
    # Said of every transformers export that indexes; the conversion check compares the exported model's
    # outputs with PyTorch's, so a wrong result is an error of ours, not a maybe of the exporter's.
    "Exporting aten::index operator of advanced indexing",
)
# The tracer's caution and libraries' notices of their own future changes: shown with --verbose only; the
# conversion check says whether the exported model is right.
_QUIET_CATEGORIES = ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning", "TracerWarning")


class _Forward(logging.Handler):
    def __init__(self, target: logging.Logger, seen: set[str], level: int):
        super().__init__(logging.DEBUG)
        self.target = target
        self.seen = seen
        self.cap = level

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a library's malformed log call must not break the conversion
            message = str(record.msg)
        key = f"{record.name}:{message}"
        if key in self.seen:
            return
        self.seen.add(key)
        self.target.log(min(record.levelno, self.cap), "%s: %s", record.name, message)


@contextlib.contextmanager
def routed_logs(target: logging.Logger, level: int = logging.INFO) -> Iterator[None]:
    """Send what the libraries say inside the block to ``target``, each distinct message once, at most at
    ``level``."""
    seen: set[str] = set()
    handler = _Forward(target, seen, level)
    saved = []
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        saved.append((library, library.handlers[:], library.propagate))
        library.handlers = [handler]
        library.propagate = False
    printed = io.StringIO()
    caught: list[warnings.WarningMessage] = []
    try:
        with (
            warnings.catch_warnings(record=True) as caught,
            contextlib.redirect_stdout(printed),
            contextlib.redirect_stderr(printed),
        ):
            warnings.simplefilter("always")
            yield
    finally:
        for library, handlers, propagate in saved:
            library.handlers = handlers
            library.propagate = propagate
        _emit(target, caught, printed.getvalue(), seen, level)


def _emit(
    target: logging.Logger, caught: list[warnings.WarningMessage], printed: str, seen: set[str], cap: int
) -> None:
    for warning in caught:
        text = " ".join(str(warning.message).split())
        if text in seen:
            continue
        seen.add(text)
        quiet = warning.category.__name__ in _QUIET_CATEGORIES or any(part in text for part in _EXPECTED)
        level = logging.DEBUG if quiet else cap
        target.log(level, "%s: %s", warning.category.__name__, text)
    for line in dict.fromkeys(part.strip() for part in re.split(r"[\r\n]", printed)):
        if line:
            target.debug("%s", line)
