"""Shared by the journeys: per-user folders (the cache, and where ``olive quickstart`` writes when given no
folder) kept in the session's temporary folder, never the real home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def per_user_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The per-user cache and data folders, under the session's temporary folder (never the real home)."""
    root = tmp_path_factory.mktemp("user")
    saved = {k: os.environ.get(k) for k in ("OLIVE_CACHE_DIR", "XDG_CACHE_HOME", "XDG_DATA_HOME")}
    os.environ.update(
        {
            "OLIVE_CACHE_DIR": str(root / "olive-cache"),
            "XDG_CACHE_HOME": str(root / "cache"),
            "XDG_DATA_HOME": str(root / "data"),
        }
    )
    try:
        yield root
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
