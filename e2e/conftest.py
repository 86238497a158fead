"""Shared by the journeys: the real ``olive`` command in a subprocess, and per-user folders kept in the test's
temporary folder (the cache, and where ``olive quickstart`` writes when given no folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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


def olive(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``olive ARGS`` as a user runs it (160 columns unless ``env`` says otherwise)."""
    script = Path(sys.executable).with_name("olive")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "olive.cli.main"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "160", **(env or {})},
        cwd=cwd,
        timeout=600,
    )
