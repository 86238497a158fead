"""Keeping repeated log messages down: each distinct message once.

Libraries that log the same advice on every call (onnxruntime's quantizer asks for pre-processing on every
model; its transformer fusions report once per layer) would otherwise repeat it once per search point or
layer. :class:`OnceFilter` is the one filter for that, and :func:`once_per_message` applies it to some
loggers for the length of a block.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


class OnceFilter(logging.Filter):
    """Lets each distinct message through once; a later record with the same logger, level and text is dropped.

    :param min_level: only records at this level or above are de-duplicated (lower ones always pass).
    :param max_level: records at this level or above always pass (errors are never hidden); None: no limit.
    """

    def __init__(self, min_level: int = logging.NOTSET, max_level: int | None = None) -> None:
        super().__init__()
        self.min_level = min_level
        self.max_level = max_level
        self._seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < self.min_level or (self.max_level is not None and record.levelno >= self.max_level):
            return True
        key = (record.name, record.levelno, record.getMessage())
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


@contextlib.contextmanager
def once_per_message(*loggers: logging.Logger, once: OnceFilter | None = None) -> Iterator[OnceFilter]:
    """Inside the block, each distinct message of ``loggers`` (the root logger when none is named) shows once.

    A filter on a logger sees only what is logged on that logger itself, not what its children pass up, so
    name every logger that repeats itself.
    """
    targets = loggers or (logging.getLogger(),)
    once = once if once is not None else OnceFilter()
    for target in targets:
        target.addFilter(once)
    try:
        yield once
    finally:
        for target in targets:
            target.removeFilter(once)
