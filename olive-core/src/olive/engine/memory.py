"""Memory a finished step freed, handed back to the operating system before the next step.

A pass that held a model's weights in Python objects (a PyTorch model, numpy arrays, protobufs) frees them when
it returns, but glibc's allocator keeps most of that memory in its heap for reuse, and the process's resident size
stays at the pass's peak. The next step (an evaluation loading another model through its own allocator) then adds
its memory on top, so a run's peak becomes the sum of its steps' peaks instead of the largest. Two things keep the
peak at the largest step's (measured on a ~100M decoder's ``olive optimize``: each model load of the evaluation
otherwise added about twice the weights' size to the process, and kept it):

- :func:`return_large_frees`, once per run: glibc serves an allocation above its mmap threshold from pages of its
  own, returned to the system when freed, but raises that threshold (up to 32 MiB) each time such a block is freed,
  after which weight-sized buffers come from the heap and stay there. The threshold is fixed at 4 MiB instead.
- :func:`release_freed_memory`, after each pass and each evaluation: collect garbage and trim the heap.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from functools import cache

__all__ = ["release_freed_memory", "return_large_frees"]

# mallopt's parameter number for the mmap threshold (glibc's malloc.h)
_M_MMAP_THRESHOLD = -3


def release_freed_memory() -> None:
    """Collect garbage and return the allocator's free memory to the system (glibc on Linux; elsewhere a collect)."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def return_large_frees() -> bool:
    """Fix glibc's mmap threshold at 4 MiB for the rest of the process (see the module docstring); whether it was."""
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    return bool(mallopt is not None and mallopt(_M_MMAP_THRESHOLD, 4 * 2**20))


@cache
def _malloc_trim():
    libc = _libc()
    return getattr(libc, "malloc_trim", None) if libc is not None else None


@cache
def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:  # a C library ctypes cannot open: nothing to tune
        return None
