"""Keeping a cache under its size limit: least recently used entries go first, whole.

The entries are the pass runs (``runs/<k[:2]>/<k>/``) and the evaluations (``evals/<k[:2]>/<k>.json``) the store
names as it names them; nothing else in the folder is counted or touched. An entry's last use is the modification
time of its record (``run.json``, or the evaluation's file), which the store moves forward on every hit. Eviction
removes entries oldest use first until the entries fit the limit, skipping every entry a running workflow holds
(:mod:`olive.cache.holds`); a run entry is moved into ``tmp/`` in one rename under the prune lock, so a reader sees
it whole or not at all, and deleted there. Sizes and times are read from the file system (``lstat``, links never
followed), never from what an entry says about itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import stat as stat_mode
import time
import uuid
from pathlib import Path

import attrs

from olive.cache.holds import PRUNE_LOCK, read_held
from olive.cache.size import SizeLimit, format_size
from olive.cache.store import RUN_RECORD, CacheStore, owned_entries
from olive.exceptions import CacheError

logger = logging.getLogger(__name__)


@attrs.frozen
class CacheEntry:
    """One evictable entry: ``kind`` is ``run`` or ``eval``; ``size`` in bytes; ``last_used`` a POSIX time;
    ``what`` names it for people (read only for the entries eviction removes)."""

    kind: str
    key: str
    path: Path
    size: int
    last_used: float
    what: str = ""


@attrs.frozen
class PruneResult:
    """What one eviction found and did (``dry_run``: what it would do)."""

    limit: SizeLimit
    size_before: int
    entries_before: int
    evicted: tuple[CacheEntry, ...] = ()
    #: entries that would have gone but a running workflow holds them
    held: int = 0
    dry_run: bool = False
    seconds: float = 0.0
    #: digests removed because no run can use them again (see remove_stale_digests)
    stale_digests: int = 0

    @property
    def evicted_bytes(self) -> int:
        return sum(entry.size for entry in self.evicted)

    @property
    def size_after(self) -> int:
        return self.size_before - self.evicted_bytes

    @property
    def over_limit(self) -> bool:
        return self.limit.max_bytes is not None and self.size_after > self.limit.max_bytes

    def summary(self) -> str:
        """One line: what went (or would go), and where the cache stands against its limit after it."""
        if self.evicted:
            verb = "would evict" if self.dry_run else "evicted"
            count = len(self.evicted)
            which = "the least recently used entry" if count == 1 else f"the {count} least recently used entries"
            what = f"{verb} {which} ({format_size(self.evicted_bytes)})"
        else:
            what = "nothing to evict" if not self.over_limit else "nothing could be evicted"
        left = self.entries_before - len(self.evicted)
        verb = "would remain" if self.dry_run else ("remains" if left == 1 else "remain")
        limit = (
            f"against a limit of {format_size(self.limit.max_bytes)}"
            if self.limit.max_bytes is not None
            else "with no limit"
        )
        line = f"{what}; {_entries(left)} ({format_size(self.size_after)}) {verb}, {limit} ({self.limit.source})"
        if self.held:
            line += f"; kept {_entries(self.held)} that running workflows use"
        return line


def _entries(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"


def scan(store: CacheStore) -> list[CacheEntry]:
    """Every entry of the store, with its size and last use (an unreadable one is skipped: it is not counted,
    and never removed by eviction)."""
    found: list[CacheEntry] = []
    for kind, key, path in owned_entries(store.root):
        try:
            if kind == "run":
                size, used = _folder_size(path), _mtime(path / RUN_RECORD, fallback=path)
            else:
                info = path.lstat()
                if not stat_mode.S_ISREG(info.st_mode):
                    continue
                size, used = info.st_size, info.st_mtime
        except OSError:
            continue
        found.append(CacheEntry(kind, key, path, size, used))
    return found


def entries_size(store: CacheStore) -> tuple[int, int]:
    """``(bytes, count)`` of the store's entries: what the limit is measured against."""
    found = scan(store)
    return sum(entry.size for entry in found), len(found)


def prune(store: CacheStore, limit: SizeLimit, dry_run: bool = False, tidy: bool = False) -> PruneResult:
    """Evict least recently used entries until the store's entries fit ``limit``; see the module docstring.

    ``dry_run`` says what would go and removes nothing. The digests of files that are gone (those of evicted
    entries among them) go after an eviction, or always with ``tidy``. Writes need the prune lock: on a cache
    that cannot be written this raises :class:`~olive.exceptions.CacheError`, unless nothing needs to go.
    """
    start = time.perf_counter()
    found = scan(store)
    size = sum(entry.size for entry in found)
    result = PruneResult(limit, size, len(found), dry_run=dry_run)
    if limit.max_bytes is None or size <= limit.max_bytes:
        stale = remove_stale_digests(store) if tidy and not dry_run else 0
        return attrs.evolve(result, seconds=time.perf_counter() - start, stale_digests=stale)
    evicted: list[CacheEntry] = []
    aside: list[Path] = []
    held_count = 0
    # A dry run only reads (a read-only cache can be asked too); what it says may be stale the moment after.
    with store.lock(PRUNE_LOCK) if not dry_run else contextlib.nullcontext():
        held = read_held(store.root / "locks", remove_dead=not dry_run)
        for entry in sorted(found, key=lambda e: (e.last_used, e.kind, e.key)):
            if size <= limit.max_bytes:
                break
            if (entry.kind, entry.key) in held:
                held_count += 1
                continue
            entry = attrs.evolve(entry, what=_describe(entry))
            if not dry_run and not _take_away(store, entry, aside):
                continue
            evicted.append(entry)
            size -= entry.size
    for folder in aside:
        shutil.rmtree(folder, ignore_errors=True)
    stale = remove_stale_digests(store) if (evicted or tidy) and not dry_run else 0
    return attrs.evolve(
        result, evicted=tuple(evicted), held=held_count, seconds=time.perf_counter() - start, stale_digests=stale
    )


def prune_after_run(store: CacheStore, limit: SizeLimit) -> PruneResult | None:
    """The eviction a run does once it is done (still holding its own entries); None when it evicted nothing and
    the cache fits. Says what it evicted at info level, and warns when entries in use keep the cache over."""
    try:
        result = prune(store, limit)
    except (CacheError, OSError) as exc:  # the run's results are written: a failed eviction only leaves them all
        logger.warning("cache '%s': could not evict entries to fit its %s: %s", store.root, limit.describe(), exc)
        return None
    if result.evicted:
        logger.info("cache '%s': %s", store.root, result.summary())
    if result.over_limit:
        logger.warning(
            "cache '%s' holds %s, over its %s (%s): the entries of running workflows (this one's too) are kept; "
            "raise the limit to keep runs of this size cached",
            store.root,
            format_size(result.size_after),
            limit.describe(),
            limit.source,
        )
    return result if result.evicted or result.over_limit else None


def remove_stale_digests(store: CacheStore) -> int:
    """Remove the digests (``digests/``) that can never be used again: their file is gone or has changed since
    (a digest is reused only while its file's signature is the one recorded), or the record is not one this store
    writes. The file a record names is only looked at (``stat``), never touched. Returns how many went."""
    removed = 0
    for _, _, path in owned_entries(store.root, kinds=("digest",)):
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stored = None
        if _digest_may_be_used(stored):
            continue
        try:
            path.unlink()
        except OSError:
            continue
        removed += 1
    return removed


def _digest_may_be_used(stored: object) -> bool:
    if not isinstance(stored, dict):
        return False
    signature = stored.get("signature")
    if not (
        isinstance(signature, list)
        and len(signature) == 5
        and isinstance(signature[0], str)
        and all(type(v) is int for v in signature[1:])
    ):
        return False
    try:
        info = Path(signature[0]).stat()
    except PermissionError:  # cannot tell: kept
        return True
    except (OSError, ValueError):  # gone, or not a path at all
        return False
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns] == signature[1:]


def _take_away(store: CacheStore, entry: CacheEntry, aside: list[Path]) -> bool:
    """Remove ``entry`` from where readers look: an evaluation is unlinked; a run's folder is renamed into ``tmp/``
    and added to ``aside``, to delete outside the lock. False when it is gone already or cannot be moved."""
    try:
        if entry.kind == "eval":
            entry.path.unlink()
            return True
        moved = store.root / "tmp" / f"{os.getpid()}-{entry.key[:16]}-{uuid.uuid4().hex[:8]}"
        moved.parent.mkdir(parents=True, exist_ok=True)
        entry.path.rename(moved)
    except OSError as exc:
        logger.debug("cannot evict cache entry '%s': %s", entry.path, exc)
        return False
    aside.append(moved)
    return True


def _describe(entry: CacheEntry) -> str:
    if entry.kind == "eval":
        return "evaluation"
    # What the entry says of itself is untrusted: its pass name is shown only when it is a short plain string.
    record = entry.path / RUN_RECORD
    try:
        name = None if record.is_symlink() else json.loads(record.read_text(encoding="utf-8")).get("pass_name")
    except (OSError, ValueError, AttributeError):
        name = None
    if isinstance(name, str) and name.isprintable() and 0 < len(name) <= 80:
        return f"run of {name}"
    return "run"


def _folder_size(folder: Path) -> int:
    """The bytes of the regular files under ``folder`` (links are not followed, nor counted)."""
    total = 0
    stack = [str(folder)]  # plain strings: Path objects would cost more than the system calls here
    while stack:
        with os.scandir(stack.pop()) as items:
            for item in items:
                if item.is_dir(follow_symlinks=False):
                    stack.append(item.path)
                elif item.is_file(follow_symlinks=False):
                    total += item.stat(follow_symlinks=False).st_size
    return total


def _mtime(path: Path, fallback: Path) -> float:
    try:
        info = path.lstat()
    except OSError:
        return fallback.lstat().st_mtime
    return info.st_mtime if stat_mode.S_ISREG(info.st_mode) else fallback.lstat().st_mtime
