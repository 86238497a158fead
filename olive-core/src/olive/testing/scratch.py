"""Scratch folders for test-kit calls given no output folder: removed when the interpreter exits.

The results (model handlers) point into them, so they must outlive the call that made them; they must
not outlive the test session.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

_folders: list[Path] = []
_lock = threading.Lock()


def scratch_dir(prefix: str) -> Path:
    """A new temporary folder, deleted at interpreter exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    with _lock:
        if not _folders:
            atexit.register(_remove_all)
        _folders.append(path)
    return path


def _remove_all() -> None:
    with _lock:
        folders, _folders[:] = list(_folders), []
    for path in folders:
        shutil.rmtree(path, ignore_errors=True)
