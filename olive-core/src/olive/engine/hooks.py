"""Firing the observer hooks. A hook that raises is logged and never stops the run."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


def fire(name: str, **kwargs: Any) -> None:
    try:
        from olive.plugins.manager import get_plugin_manager
    except ImportError:  # pragma: no cover - olive-core always ships the plugin manager
        return
    hook = getattr(get_plugin_manager().hook, name)
    try:
        hook(**kwargs)
    except Exception as exc:  # an observer must not break the run it observes
        logger.warning("Hook %s raised %s: %s (ignored)", name, type(exc).__name__, exc)


class OnceFilter(logging.Filter):
    """Lets each distinct warning through once: libraries that warn on every call (onnxruntime's
    quantizer asks for pre-processing on every model) would otherwise repeat it once per search point."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or record.levelno >= logging.ERROR:
            return True
        key = (record.name, record.levelno, record.getMessage())
        if key in self._seen:
            return False
        self._seen.add(key)
        return True
