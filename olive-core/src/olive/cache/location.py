"""Where the cache lives when a workflow names no ``cache_dir``: one folder per user, shared by every workflow.

``OLIVE_CACHE_DIR`` when set, else the platform's user cache folder (``~/.cache/olive`` on Linux,
``~/Library/Caches/olive`` on macOS, ``%LOCALAPPDATA%\\olive\\Cache`` on Windows). Sharing it is safe: entries
are keyed by content (a workflow's results are never served to another whose inputs differ) and each key is
written under its own lock. ``olive cache info`` and ``olive cache clean`` use it when given no folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from olive.paths import resolve_user_path

CACHE_DIR_ENV = "OLIVE_CACHE_DIR"


def default_cache_dir() -> Path:
    """The per-user cache folder: ``$OLIVE_CACHE_DIR``, else the platform's user cache folder for olive."""
    configured = os.environ.get(CACHE_DIR_ENV, "").strip()
    if configured:
        return resolve_user_path(configured)
    from platformdirs import user_cache_path

    return resolve_user_path(user_cache_path("olive", appauthor=False))
