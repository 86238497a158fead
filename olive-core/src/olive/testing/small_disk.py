"""A small disk for tests that fill one: a tmpfs mounted in a private mount namespace (``unshare -m``).

Such a test runs its command inside the namespace, so the mount is gone when it ends and nothing outside sees it.
It needs root and ``unshare`` (util-linux); :func:`small_disk_unavailable` says why not where they are missing,
for ``pytest.mark.skipif``::

    REASON = small_disk_unavailable()

    @pytest.mark.skipif(REASON is not None, reason=REASON or "")
    def test_a_full_disk(tmp_path): ...
"""

from __future__ import annotations

import os
import shutil
import subprocess

__all__ = ["small_disk_unavailable"]


def small_disk_unavailable() -> str | None:
    """Why a small tmpfs cannot be mounted in a mount namespace here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root to mount a small tmpfs"
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
        capture_output=True,
    )
    return None if probe.returncode == 0 else "cannot mount a tmpfs in a mount namespace here"
