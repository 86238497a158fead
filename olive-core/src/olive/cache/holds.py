"""What running workflows hold in a cache: the entries that eviction must leave alone.

A workflow run keeps a record, ``locks/use-<session>.lock``, for as long as it runs. Its process has the file
locked (``flock``; the kernel lets go when the process dies, so a killed run's record reads as dead), and every
process of the run (a search's workers too) appends one line naming an entry *before* it looks that entry up or
writes it. Eviction holds the cache's prune lock exclusively while it reads the records and moves entries away;
appending a line takes the same lock shared. So an entry is either named before eviction reads the records (and
is kept), or looked up after eviction is done (and found missing: the run does it again). An entry a running
workflow uses is never removed under it.

Where ``flock`` does not exist (Windows) nothing is recorded, as :meth:`CacheStore.lock` does not lock there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat as stat_mode
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

logger = logging.getLogger(__name__)

#: The lock (under ``locks/``) eviction holds exclusively and every appended line shared.
PRUNE_LOCK = "prune"
RECORD = re.compile(r"use-[0-9a-f]{32}\.lock")
_LINE = re.compile(rb"(use|new) (run|eval) ([0-9a-f]{64})")
# A record is read back whole; one far past what any run appends (a line per entry it touches) is not ours.
_MAX_RECORD = 64 << 20
KINDS = ("run", "eval")


def record_path(locks: Path, session: str) -> Path:
    """The record of the run ``session`` (a store's ``session_id``: 32 hex digits)."""
    return locks / f"use-{session}.lock"


@attrs.frozen
class Held:
    """``(kind, key)`` of every entry a running workflow holds."""

    entries: frozenset[tuple[str, str]] = frozenset()

    def __contains__(self, item: object) -> bool:
        return item in self.entries


class HoldWriter:
    """Appends one process's lines to a run's record: opened on the first line, and a no-op while no run keeps a
    record under this session (a store used outside a workflow run)."""

    def __init__(self, locks: Path, session: str):
        self.locks, self.session = locks, session
        self._fd: int | None = None
        self._prune_fd: int | None = None
        self._noted: set[tuple[str, str, bool]] = set()

    def __getstate__(self) -> dict[str, Any]:
        # Descriptors mean nothing in another process: a copy opens its own.
        return {"locks": self.locks, "session": self.session, "_fd": None, "_prune_fd": None, "_noted": set()}

    def note(self, kind: str, key: str, new: bool) -> None:
        """Name ``key`` in the record (``new``: this run writes it) before it is looked up or written."""
        if (kind, key, new) in self._noted or not self._open():
            return
        import fcntl

        line = f"{'new' if new else 'use'} {kind} {key}\n".encode()
        try:
            fcntl.flock(self._prune_fd, fcntl.LOCK_SH)
            try:
                os.write(self._fd, line)  # one write in append mode: whole lines, even from several processes
            finally:
                fcntl.flock(self._prune_fd, fcntl.LOCK_UN)
        except OSError as exc:  # a full disk: the run goes on, its entries merely unprotected
            logger.debug("cannot record the use of cache entry %s in %s: %s", key, self.locks, exc)
            return
        self._noted.add((kind, key, new))

    def _open(self) -> bool:
        if self._fd is not None:
            return True
        try:
            import fcntl  # noqa: F401
        except ImportError:  # pragma: no cover - not on POSIX
            return False
        try:
            fd = os.open(record_path(self.locks, self.session), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        except OSError:  # no run keeps a record for this session
            return False
        try:
            prune_fd = os.open(self.locks / f"{PRUNE_LOCK}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            os.close(fd)
            return False
        self._fd, self._prune_fd = fd, prune_fd
        return True

    def close(self) -> None:
        for fd in (self._fd, self._prune_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._prune_fd = None
        self._noted.clear()


class Hold:
    """A workflow run's record, locked (by :func:`holding`) for as long as the run lasts."""

    def __init__(self, path: Path):
        self.path = path

    def wrote_new(self) -> bool:
        """Whether a process of this run wrote an entry (only then can the cache have grown past its limit)."""
        return any(kind == "new" for kind, _, _ in _lines(self.path))


@contextlib.contextmanager
def holding(locks: Path, session: str) -> Iterator[Hold | None]:
    """Keep the record of run ``session`` while inside; None where it cannot be kept (a read-only cache, which
    nothing evicts from, or no ``flock``)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        yield None
        return
    path = record_path(locks, session)
    fd = None
    try:
        # Made under the prune lock, so eviction never finds it made but not yet locked (that reads as dead).
        prune_fd = os.open(locks / f"{PRUNE_LOCK}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(prune_fd, fcntl.LOCK_SH)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(prune_fd)
    except OSError as exc:
        logger.debug("cannot keep a record of the entries this run uses in %s: %s", locks, exc)
        if fd is not None:
            os.close(fd)
        yield None
        return
    try:
        yield Hold(path)
    finally:
        # Removed while still locked: eviction never mistakes it for a dead run's record it may delete.
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def read_held(locks: Path, remove_dead: bool) -> Held:
    """Every entry the records of running workflows name. Call it holding the prune lock exclusively; a record
    no process has locked is a dead run's and is removed when ``remove_dead``. Records are read as untrusted: a
    file that is not a record this module writes is skipped, and so is every line that is not one."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        return Held()
    held: set[tuple[str, str]] = set()
    try:
        names = [entry for entry in locks.iterdir() if RECORD.fullmatch(entry.name)]
    except OSError:
        return Held()
    for path in names:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:  # gone meanwhile, a link, unreadable
            continue
        try:
            if not stat_mode.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                held.update((kind, key) for _, kind, key in _lines(path))
            else:
                if remove_dead:
                    with contextlib.suppress(OSError):
                        path.unlink()
        except OSError:
            continue
        finally:
            os.close(fd)
    return Held(frozenset(held))


def _lines(path: Path) -> list[tuple[str, str, str]]:
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_RECORD)
    except OSError:
        return []
    found = []
    for line in data.splitlines():
        match = _LINE.fullmatch(line)
        if match is not None:
            found.append(tuple(part.decode() for part in match.groups()))
    return found
