"""Firing the observer hooks. A hook that raises is logged and never stops the run."""

from __future__ import annotations

import logging
from typing import Any

from olive.plugins.manager import get_plugin_manager

logger = logging.getLogger(__name__)


def fire(name: str, **kwargs: Any) -> None:
    hook = getattr(get_plugin_manager().hook, name)
    try:
        hook(**kwargs)
    except Exception as exc:  # an observer must not break the run it observes
        logger.warning("Hook %s raised %s: %s (ignored)", name, type(exc).__name__, exc)
