"""A full disk, said as one: a pass that fails because the cache's disk filled up names the disk, not the symptom.

A pass writing into a full disk rarely fails with ``ENOSPC`` itself: a library writes a truncated file and
the next step fails to parse it ("Unable to parse proto from file"). So a failure is read against the free
space left where the cache writes.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from olive.exceptions import OliveError

__all__ = ["LOW_SPACE_BYTES", "DiskFullError", "disk_full_reason"]

#: below this much free space a failure is taken for the disk's (a model file is rarely smaller)
LOW_SPACE_BYTES = 1 << 20


class DiskFullError(OliveError):
    """A pass failed because the disk the cache writes to is full; chained to the pass's own error."""


def disk_full_reason(folder: Path, error: BaseException) -> str | None:
    """Why ``error`` is the disk's fault, or None: an ``ENOSPC`` in its chain, or less than ``LOW_SPACE_BYTES``
    free on the disk holding ``folder``."""
    cause: BaseException | None = error
    out_of_space = False
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            out_of_space = True
            break
        cause = cause.__cause__ or cause.__context__
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        usage = shutil.disk_usage(existing)
    except OSError:
        usage = None
    low = usage is not None and usage.free < LOW_SPACE_BYTES
    if not (out_of_space or low):
        return None
    # After an ENOSPC the pass's partial files are gone again: the disk's size says more than what is free now.
    state = f"is full ({usage.free / 1024:.0f} kB free)" if low and usage else "ran out of space"
    if usage is not None and not low:
        state += f" ({usage.total / (1 << 20):.0f} MB in all)"
    return (
        f"the disk holding '{folder}' {state}; free some space or point cache_dir at another disk, then run again "
        "(finished runs are reused)"
    )
