"""A content-addressed store of pass runs and evaluation results.

Layout under the cache folder::

    olive-cache.json          marker (so `olive cache clean` never deletes a folder it did not make)
    runs/<k[:2]>/<k>/         one finished pass run: run.json plus the output model files
    evals/<k[:2]>/<k>.json    one evaluation result
    tmp/<pid>-<k>-<rand>/     a run in progress; renamed into runs/ when it finishes
    locks/                    lock files: one per pass run in progress, one per host for timing metrics, one per
                              workflow run naming the entries it holds, and the prune lock (olive.cache.holds)
    digests/<h[:2]>/<h>.json  the sha256 of a file hashed by an earlier run (h: the hash of its path), with the
                              signature it had then (inode, size, mtime, ctime); reused only while that holds

A key is the full sha256 of everything the result depends on (see ``olive.engine.keys``). A run is
written into ``tmp/`` and renamed into place in one ``os.rename``, so a reader sees a finished entry or
nothing; a run killed half-way leaves only a ``tmp/`` folder, which a later run removes once its
process is gone. Workers that may reach the same run at once (a parallel search) take the run's lock
(:meth:`CacheStore.run_lock`, an ``flock`` on a file under ``locks/``, released by the kernel when its
process dies) and look the key up again once they hold it, so the second waits and reuses the first's
entry instead of redoing it. Without the lock, two processes that finish the same run race on the rename;
the loser drops its copy and uses the winner's, which holds the same content.

What an entry says is data read from disk, and is checked before it is used (:meth:`CacheStore.get_run`,
:meth:`CacheStore.get_eval`): its JSON has the shape this store writes, every path in it resolves inside the
entry, and the output is the one the run made: each output file still has the size and modification time
recorded with the entry (the fast path), or else its content still hashes to the recorded ``output_hash``. An
entry failing any of this is corrupt: it is never used; a warning names it, the run's lock holder removes it
(it is this store's own entry; links in it are removed, never followed), and the run is done again.

A hit moves its record's modification time forward: that is the entry's last use, by which eviction
(:mod:`olive.cache.eviction`) keeps the cache under its size limit. Every entry is named in the record of the
workflow run that uses it before it is looked up or written (:mod:`olive.cache.holds`), so eviction never
removes an entry a running workflow holds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import shutil
import socket
import stat as stat_mode
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from olive.cache.holds import RECORD, Hold, HoldWriter, holding
from olive.cache.remote import RemoteCache, RemoteCorrupt, RemoteUnreachable
from olive.exceptions import CacheError
from olive.paths import UnsafeName, inside, system_folder_reason

logger = logging.getLogger(__name__)

MARKER = "olive-cache.json"
_SUBFOLDERS = ("runs", "evals", "tmp", "locks", "digests")
# The names this store gives what it writes. Only what matches is ever deleted: a cache_dir may be a folder
# that also holds the user's own files (even a `tmp/` or `runs/` of theirs).
_KEY = r"[0-9a-f]{64}"
_SHARD = re.compile(r"[0-9a-f]{2}")
_RUN_ENTRY = re.compile(_KEY)
_EVAL_ENTRY = re.compile(rf"(?:{_KEY}\.json|\.{_KEY}\.json\.\d+\.[0-9a-f]{{8}}\.tmp)")
_TMP_ENTRY = re.compile(r"(\d+)-[0-9a-f]{16}-[0-9a-f]{8}")
_DIGEST_ENTRY = _EVAL_ENTRY  # digests/<k[:2]>/<k>.json, written as evaluations are
_LOCK_ENTRY = re.compile(rf"(?:run-[0-9a-f]{{32}}|host-[A-Za-z0-9_.-]+|prune)\.lock|{RECORD.pattern}")
_MARKER_TMP = re.compile(rf"\.{re.escape(MARKER)}\.\d+\.[0-9a-f]{{8}}\.tmp")
_FORMAT = 1
# In-process memo of file hashes, by file signature (see file_signature). Hashing big models on every lookup
# would dominate a fully cached run.
_HASH_MEMO: dict[FileSignature, str] = {}
# A file changed this recently may be rewritten again within one timestamp tick with the same size, so a
# digest kept for it could go stale unseen; such files are hashed every time (as git does for "racy" files).
_RACY_SECONDS = 2.0
#: How many times each file's bytes were read to hash them in this process (resolved path -> count): what the
#: digest memo saves is visible here.
HASH_READS: Counter[str] = Counter()
# Where digests are kept between runs (see CacheStore.keeping_digests); None: only in this process.
_DIGEST_DIR: Path | None = None
DIGESTS = "digests"
RUN_RECORD = "run.json"
_HASH = re.compile(r"[0-9a-f]{64}")


class CorruptEntry(Exception):
    """A cache entry that is not what this store wrote (the message says what is wrong)."""


def entry_files(folder: str | Path) -> dict[str, list[int]] | None:
    """``{relative path: [size, mtime_ns]}`` of every file under ``folder`` but the run record, for the fast
    check of an entry; None when the folder holds a link or anything but files and folders (then every reuse
    hashes the output)."""
    folder = Path(folder)
    files: dict[str, list[int]] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat_mode.S_ISDIR(info.st_mode):
            continue
        if not stat_mode.S_ISREG(info.st_mode):
            return None
        rel = path.relative_to(folder).as_posix()
        if rel != RUN_RECORD:
            files[rel] = [info.st_size, info.st_mtime_ns]
    return files


FileSignature = tuple[str, int, int, int, int]


def _now() -> float:
    """The clock racy files are judged by (tests move it forward instead of waiting)."""
    return time.time()


def file_signature(path: str | Path, info: os.stat_result | None = None) -> FileSignature | None:
    """``(resolved path, inode, size, mtime_ns, ctime_ns)`` of a file, which changes whenever its content can
    have: a write moves ctime (which no program can set back, unlike mtime), a replacement the inode. None when
    the file changed too recently to tell a later same-size rewrite within the same clock tick apart: then
    nothing may be remembered of its content."""
    info = info or Path(path).stat()
    if _now() - max(info.st_mtime, info.st_ctime) <= _RACY_SECONDS:
        return None
    return (str(Path(path).resolve()), info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def hash_file(path: str | Path) -> str:
    """The sha256 of a file's bytes, read at most once per process while its :func:`file_signature` holds, and
    once across runs while a cache keeps digests (:meth:`CacheStore.keeping_digests`)."""
    path = Path(path)
    signature = file_signature(path)
    digest = _HASH_MEMO.get(signature) if signature is not None else None
    if digest is not None:
        return digest
    digest = _stored_digest(signature) if signature is not None else None
    if digest is None:
        sha = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        digest = sha.hexdigest()
        HASH_READS[str(path.resolve())] += 1
        # Remembered only when the file is as it was before reading it (not rewritten meanwhile).
        if signature is not None and file_signature(path) == signature:
            _store_digest(signature, digest)
        else:
            signature = None
    if signature is not None:
        _HASH_MEMO[signature] = digest
    return digest


def hash_path(path: str | Path) -> str:
    """The sha256 of a file's bytes, or of a folder's files (their paths relative to it and their digests).

    Where the file or folder lies is not part of it: the same data at another path has the same digest."""
    path = Path(path)
    if not path.is_dir():
        return hash_file(path)
    sha = hashlib.sha256(b"folder\0")
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        sha.update(f"{file.relative_to(path).as_posix()}\0{hash_file(file)}\n".encode())
    return sha.hexdigest()


def _digest_record(signature: FileSignature) -> Path | None:
    if _DIGEST_DIR is None:
        return None
    name = hashlib.sha256(signature[0].encode("utf-8", "surrogateescape")).hexdigest()
    return _DIGEST_DIR / name[:2] / f"{name}.json"


def _stored_digest(signature: FileSignature) -> str | None:
    """The digest recorded for this very file signature by an earlier run, if any (the path, inode, size, mtime
    and ctime must all match: any other file, or this one changed, is hashed again)."""
    record = _digest_record(signature)
    if record is None:
        return None
    try:
        stored = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("signature") != list(signature):
        return None
    digest = stored.get("sha256")
    return digest if isinstance(digest, str) and _HASH.fullmatch(digest) else None


def _store_digest(signature: FileSignature, digest: str) -> None:
    record = _digest_record(signature)
    if record is None:
        return
    tmp = record.with_name(f".{record.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"signature": list(signature), "sha256": digest}), encoding="utf-8")
        tmp.replace(record)
    except OSError:  # a read-only cache serves hits; the digest is then only kept in this process
        with contextlib.suppress(OSError):
            tmp.unlink()


def hash_model(model: Any) -> str:
    """The sha256 of a model's content: the handler's own ``content_hash()`` when it gives one (PyTorch and
    Hugging Face models: weights, loading config, library versions), else its file plus every external
    data file, in a fixed order."""
    own = getattr(model, "content_hash", None)
    digest = own() if callable(own) else None
    if digest is not None:
        return digest
    path = Path(model.model_path)
    sha = hashlib.sha256()
    sha.update(b"model\0" + hash_file(path).encode())
    externals: list[str] = []
    if any(p != path for p in path.parent.iterdir()) and hasattr(model, "external_data_files"):
        externals = sorted(model.external_data_files())
    for file in externals:
        rel = os.path.relpath(file, path.parent)
        sha.update(f"\0{rel}\0".encode() + (hash_file(file).encode() if Path(file).exists() else b"missing"))
    return sha.hexdigest()


def host_lock_name() -> str:
    """The name of this machine's measurement lock in the cache's ``locks/`` folder."""
    return "host-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in socket.gethostname())


def can_lock() -> bool:
    """Whether :meth:`CacheStore.lock` really locks here (it needs ``flock``, which Windows lacks)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:  # pragma: no cover - not on POSIX
        return False
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CacheStore:
    """One cache folder. Creating it is cheap; nothing is read until asked."""

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser().resolve()
        self._ensured = False
        # Stamped on every entry this store writes; copies sent to workers keep it, so a run can tell the work
        # its own trials did from entries that were there before it started.
        self.session_id = uuid.uuid4().hex
        self._hold_writer: HoldWriter | None = None
        #: The remote cache under this one (``remote_cache``): a local miss asks it, a new entry is uploaded to it.
        self.remote: RemoteCache | None = None
        #: ``(kind, key)`` of every entry this store has looked up or written since the caller last emptied it (a
        #: node-local Ray worker ships those the engine lacks back to it).
        self.touched: list[tuple[str, str]] = []

    # ------------------------------------------------------------------------------------------
    def ensure(self) -> None:
        if self._ensured:
            return
        reason = system_folder_reason(self.root)
        if reason is not None:
            raise CacheError(
                f"cache_dir '{self.root}' cannot hold a cache: {reason}; point cache_dir at a folder of its own "
                "(e.g. '.olive-cache')"
            )
        with self._writing():
            for sub in _SUBFOLDERS:
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            marker = self.root / MARKER
            if not marker.exists():
                self._write_json_atomic(marker, {"format": _FORMAT, "created_by": "olive"})
        self._ensured = True

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a failed write into one error naming the cache folder (a read-only cache serves only hits)."""
        try:
            yield
        except OSError as exc:
            raise CacheError(
                f"cannot write in the cache folder '{self.root}' ({exc.strerror or exc}: {exc.filename}); "
                "point cache_dir (or --cache-dir) at a writable folder"
            ) from exc

    def is_cache(self) -> bool:
        return (self.root / MARKER).is_file()

    def clean_stale_tmp(self) -> int:
        """Remove temp folders of runs whose process has ended (a killed run); returns how many.

        Only folders named as :meth:`new_run` names them are touched; anything else in ``tmp/`` is left alone.
        """
        removed = 0
        tmp = self.root / "tmp"
        if not self.is_cache() or not tmp.is_dir() or tmp.is_symlink():
            return 0
        for entry in tmp.iterdir():
            match = _TMP_ENTRY.fullmatch(entry.name)
            if match is None or entry.is_symlink() or not entry.is_dir():
                continue
            pid = int(match.group(1))
            if pid == os.getpid() or _pid_alive(pid):
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
        return removed

    @contextlib.contextmanager
    def keeping_digests(self) -> Iterator[None]:
        """While inside, :func:`hash_file` keeps the digests of files it hashes under ``digests/`` and reuses them
        in later runs while the file's signature (path, inode, size, mtime, ctime) is unchanged."""
        global _DIGEST_DIR
        previous, _DIGEST_DIR = _DIGEST_DIR, self.root / DIGESTS
        try:
            yield
        finally:
            _DIGEST_DIR = previous

    @contextlib.contextmanager
    def holding(self) -> Iterator[Hold | None]:
        """While inside, every entry this session (``session_id``, in any process) looks up or writes is held:
        eviction leaves it alone. None where no record can be kept (a read-only cache, which nothing evicts)."""
        with holding(self.root / "locks", self.session_id) as hold:
            try:
                yield hold
            finally:
                if self._hold_writer is not None:
                    self._hold_writer.close()

    def _note(self, kind: str, key: str, new: bool = False) -> None:
        """Name an entry in this session's record (when a workflow run keeps one) before it is looked up or written."""
        writer = self._hold_writer
        if writer is None or writer.session != self.session_id:
            # Workers are given the run's session after the store is made.
            writer = self._hold_writer = HoldWriter(self.root / "locks", self.session_id)
        writer.note(kind, key, new)
        self.touched.append((kind, key))

    # ------------------------------------------------------------------------------------------
    # Pass runs
    def run_dir(self, key: str) -> Path:
        return self.root / "runs" / key[:2] / key

    def get_run(
        self, key: str, model_of: Callable[[dict[str, Any]], Any] | None = None, repair: bool = False
    ) -> dict[str, Any] | None:
        """The record of a finished run, with ``entry_dir`` added, or None when there is none or it is corrupt.

        The entry is checked (see the module doc): its record's shape and paths, and that ``model_of(record)``
        makes a model handler of it (it reads no model file); then its output files' sizes and modification
        times; where those differ from the recorded ones (a copied cache, a touched or replaced file) or the
        record has none, the handler's :func:`hash_model` must equal the recorded ``output_hash``. Without
        ``model_of`` an entry that needs the hash counts as corrupt.

        :param repair: remove a corrupt entry, with a warning naming it. Only the holder of the run's lock
            (:meth:`run_lock`) repairs, so no entry another process has just written is removed.
        """
        entry = self.run_dir(key)
        self._note("run", key)
        try:
            record = self._checked_run(key, entry, model_of)
        except FileNotFoundError:
            return None
        except CorruptEntry as exc:
            if repair:
                self._discard_run(key, str(exc))
            return None
        _mark_used(entry / RUN_RECORD)
        return record

    def fetch_run(self, key: str, model_of: Callable[[dict[str, Any]], Any]) -> dict[str, Any] | None:
        """After a local miss, under the run's lock: the run from the remote cache, downloaded into a new local
        entry and checked there (every file against its sha256 as it arrives, then the model against the recorded
        ``output_hash``) before it is renamed into place; None when the remote has no sound copy."""
        remote = self.remote
        if remote is None or not remote.available:
            return None
        try:
            manifest = remote.manifest(key)
            if manifest is None:
                return None
            try:
                check_record_shape(manifest["record"], key)
            except CorruptEntry as exc:
                raise RemoteCorrupt(str(exc)) from None
            with self.new_run(key) as tmp:
                remote.fetch_files(manifest, tmp)
                record = {**manifest["record"], "files": entry_files(tmp)}
                try:
                    digest = hash_model(model_of({**record, "entry_dir": str(tmp)}))
                except Exception as exc:  # a model that cannot be made of what arrived is as corrupt as bad bytes
                    raise RemoteCorrupt(f"its model cannot be made ({type(exc).__name__}: {exc})") from None
                if digest != record["output_hash"]:
                    raise RemoteCorrupt("its output's content is not what the run made (hash mismatch)")
                (tmp / RUN_RECORD).write_text(json.dumps(record, indent=1, sort_keys=True, default=str))
        except RemoteUnreachable:
            return None
        except RemoteCorrupt as exc:
            logger.warning("remote cache object '%s' is corrupt: %s; the run is done again", remote.run_path(key), exc)
            return None
        return self.get_run(key, model_of)

    def share_run(self, key: str, record: dict[str, Any]) -> None:
        """A local hit: upload it when the remote cache lacks it (made before the remote was configured, or on a
        node whose runs were not uploaded), so a team's remote holds what each member's cache holds."""
        remote = self.remote
        if remote is not None and remote.available and remote.config.upload and remote.manifest_exists(key) is False:
            self.publish_run(key, record)

    def publish_run(self, key: str, record: dict[str, Any]) -> None:
        """Upload the finished local entry of run ``key`` to the remote cache (when there is one)."""
        if self.remote is None or not self.remote.available:
            return
        entry = self.run_dir(key)
        files: dict[str, tuple[Path, int, str]] = {}
        for path in sorted(entry.rglob("*")):
            rel = path.relative_to(entry).as_posix()
            if rel != RUN_RECORD and path.is_file() and not path.is_symlink():
                files[rel] = (path, path.stat().st_size, hash_file(path))
        self.remote.put_run(key, files, record)

    def _checked_run(self, key: str, entry: Path, model_of: Callable[[dict[str, Any]], Any] | None) -> dict[str, Any]:
        if entry.is_symlink():
            raise CorruptEntry("the entry is a symlink")
        if not entry.exists():
            raise FileNotFoundError(entry)
        try:
            inside(self.root, entry.relative_to(self.root))
        except UnsafeName as exc:
            raise CorruptEntry(f"its folder leads outside the cache ({exc})") from None
        try:
            record = json.loads((entry / RUN_RECORD).read_text(encoding="utf-8"))
        except FileNotFoundError:
            # A folder without its record is never a finished entry (new_run renames it in whole).
            raise CorruptEntry(f"it has no {RUN_RECORD}") from None
        except (OSError, ValueError) as exc:
            raise CorruptEntry(f"its {RUN_RECORD} cannot be read ({type(exc).__name__}: {exc})") from None
        check_record_shape(record, key)
        fields = record["model"]["config"]
        rel = fields.get("model_path_rel")
        if rel is not None:
            try:
                target = inside(entry, rel)
            except UnsafeName as exc:
                raise CorruptEntry(f"its model path is not inside the entry ({exc})") from None
            if not target.exists():
                raise CorruptEntry(f"its model '{rel}' is missing")
        files = record.get("files")
        for name in files or {}:
            try:
                inside(entry, name)
            except UnsafeName as exc:
                raise CorruptEntry(f"a file it lists is not inside the entry ({exc})") from None
        record["entry_dir"] = str(entry)
        model = None
        if model_of is not None:
            try:
                model = model_of(record)
            except Exception as exc:  # a handler that cannot be made of it: as corrupt as other bytes
                raise CorruptEntry(f"its model cannot be made ({type(exc).__name__}: {exc})") from None
        if rel is not None and files is not None and _files_unchanged(entry, files):
            return record
        if model is None:
            raise CorruptEntry("its output differs from what was recorded and there is no way to check its content")
        try:
            digest = hash_model(model)
        except Exception as exc:  # an output that cannot be read any more
            raise CorruptEntry(f"its output cannot be read ({type(exc).__name__}: {exc})") from None
        if digest != record["output_hash"]:
            raise CorruptEntry("its output's content is not what the run made (hash mismatch)")
        return record

    def _discard_run(self, key: str, reason: str) -> None:
        """Remove a corrupt entry of this store: moved into ``tmp/`` in one rename, then deleted there."""
        entry = self.run_dir(key)
        try:
            inside(self.root, entry.parent.relative_to(self.root))
        except UnsafeName as exc:
            raise CacheError(
                f"cache entry '{entry}' is corrupt ({reason}) and its folder leads outside the cache ({exc}); "
                "point cache_dir at a folder of its own"
            ) from None
        logger.warning("cache entry '%s' is corrupt: %s; it is removed and the run is done again", entry, reason)
        try:
            if entry.is_symlink():
                entry.unlink()
                return
            aside = self.root / "tmp" / f"{os.getpid()}-{key[:16]}-{uuid.uuid4().hex[:8]}"
            aside.parent.mkdir(parents=True, exist_ok=True)
            entry.rename(aside)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise CacheError(
                f"cache entry '{entry}' is corrupt ({reason}) and cannot be removed ({exc.strerror or exc}); delete "
                "it, or run `olive cache clean`"
            ) from exc
        shutil.rmtree(aside, ignore_errors=True)

    @contextlib.contextmanager
    def new_run(self, key: str) -> Iterator[Path]:
        """A fresh temp folder for a run; on a clean exit it becomes the entry for ``key``.

        Write the outputs and ``run.json`` inside it. On an exception the folder is removed.
        """
        self.ensure()
        self._note("run", key, new=True)
        tmp = self.root / "tmp" / f"{os.getpid()}-{key[:16]}-{uuid.uuid4().hex[:8]}"
        with self._writing():
            tmp.mkdir(parents=True)
        try:
            yield tmp
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        final = self.run_dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        try:
            tmp.rename(final)
        except OSError:
            # Another process finished the same run first; its entry has the same content.
            shutil.rmtree(tmp, ignore_errors=True)
            if not (final / "run.json").is_file():
                raise

    @contextlib.contextmanager
    def run_lock(self, key: str) -> Iterator[None]:
        """Hold the lock of run ``key`` (waits while another process holds it)."""
        with self.lock(f"run-{key[:32]}"):
            yield

    @contextlib.contextmanager
    def host_lock(self, shared: bool) -> Iterator[None]:
        """Hold this machine's measurement lock: every pass run holds it shared, and timing a model holds it
        exclusively, so no other run using this cache works on the machine while a model is timed."""
        with self.lock(host_lock_name(), shared=shared):
            yield

    @contextlib.contextmanager
    def lock(self, name: str, shared: bool = False) -> Iterator[None]:
        """An advisory lock shared by every process using this cache folder (``flock`` on ``locks/<name>``).

        ``shared=True`` takes it in shared mode: many holders at once, none while an exclusive holder has it.
        Where ``flock`` does not exist (Windows) this does not lock.
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX
            yield
            return
        self.ensure()
        path = self.root / "locks" / f"{name}.lock"
        with self._writing():
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = path.open("a")
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    # ------------------------------------------------------------------------------------------
    # Evaluations
    def eval_path(self, key: str) -> Path:
        return self.root / "evals" / key[:2] / f"{key}.json"

    def get_eval(self, key: str, keys: Iterable[str] = ()) -> dict[str, Any] | None:
        """The stored evaluation ``{"result": {metric key: {"value", "priority", "higher_is_better"}}, "where":
        {...}}``, or None. One that does not have this shape, or lacks one of ``keys``, is corrupt: a warning
        names it and the caller measures again (``put_eval`` then replaces it)."""
        path = self.eval_path(key)
        self._note("eval", key)
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return self._remote_eval(key, keys)
        except (OSError, ValueError) as exc:
            reason = f"it cannot be read ({type(exc).__name__}: {exc})"
        else:
            reason = _eval_problem(stored, keys)
            if reason is None:
                _mark_used(path)
                if self.remote is not None:
                    self.remote.share_eval(key, stored)
                return stored
        logger.warning("cache entry '%s' is corrupt: %s; the model is measured again", path, reason)
        return None

    def _remote_eval(self, key: str, keys: Iterable[str]) -> dict[str, Any] | None:
        """A local miss: the remote's evaluation, checked as a local one is, then kept locally."""
        if self.remote is None:
            return None
        stored = self.remote.get_eval(key)
        if stored is None:
            return None
        reason = _eval_problem(stored, keys)
        if reason is not None:
            logger.warning(
                "remote cache object '%s' is corrupt: %s; the model is measured again",
                self.remote.eval_path(key),
                reason,
            )
            return None
        self.put_eval(key, stored, upload=False)
        return stored

    def put_eval(self, key: str, value: dict[str, Any], upload: bool = True) -> None:
        self.ensure()
        self._note("eval", key, new=True)
        with self._writing():
            self._write_json_atomic(self.eval_path(key), value)
        if upload and self.remote is not None:
            self.remote.put_eval(key, value)

    # ------------------------------------------------------------------------------------------
    def _write_json_atomic(self, path: Path, value: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        tmp.write_text(json.dumps(value, indent=1, sort_keys=True))
        tmp.replace(path)

    def info(self) -> dict[str, Any]:
        """Counts and sizes, for ``olive cache info``."""
        runs = list((self.root / "runs").glob("*/*/run.json")) if self.root.exists() else []
        evals = list((self.root / "evals").glob("*/*.json")) if self.root.exists() else []
        size = sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file()) if self.root.exists() else 0
        passes: dict[str, int] = {}
        for record_path in runs:
            try:
                name = json.loads(record_path.read_text()).get("pass_name", "?")
            except (OSError, ValueError):
                name = "?"
            passes[name] = passes.get(name, 0) + 1
        return {
            "cache_dir": str(self.root),
            "exists": self.root.exists(),
            "is_olive_cache": self.is_cache(),
            "runs": len(runs),
            "evaluations": len(evals),
            "size_bytes": size,
            "runs_by_pass": dict(sorted(passes.items())),
        }

    def clean(self) -> list[str]:
        """Delete the cache's own entries, and its folder once nothing else is in it.

        Only what this store made goes (the marker and entries named as it names them): a cache_dir that
        also holds other files (a project folder, a ``runs/results.csv`` of the user's) keeps them, and their
        paths relative to the cache folder are returned so the caller can say so. Symlinks are removed, never
        followed. The marker goes last, so a clean that fails part-way (a file it may not delete) leaves a
        folder still recognized as a cache, and cleaning it again after fixing the cause works.
        """
        self._ensured = False
        if not self.root.is_dir() or not self.is_cache():
            return []
        kept: list[str] = []
        for sub, pattern, sharded in (
            ("runs", _RUN_ENTRY, True),
            ("evals", _EVAL_ENTRY, True),
            ("tmp", _TMP_ENTRY, False),
            ("locks", _LOCK_ENTRY, False),
            (DIGESTS, _DIGEST_ENTRY, True),
        ):
            _remove_owned(self.root / sub, pattern, sharded, kept, self.root)
        for entry in self.root.iterdir():
            if _MARKER_TMP.fullmatch(entry.name) and entry.is_file():
                entry.unlink()
        (self.root / MARKER).unlink(missing_ok=True)
        if not any(self.root.iterdir()):
            self.root.rmdir()
        return sorted(kept)


def owned_entries(root: Path, kinds: Iterable[str] = ("run", "eval")) -> Iterator[tuple[str, str, Path]]:
    """``(kind, key, path)`` of the entries under ``root`` named as this store names them, for each of ``kinds``:
    ``run`` (a folder ``runs/<k[:2]>/<k>``), ``eval`` (a file ``evals/<k[:2]>/<k>.json``), ``digest`` (a file
    ``digests/<h[:2]>/<h>.json``). Links, temp files and whatever else is there are not entries."""
    for kind in kinds:
        sub, suffix = _OWNED[kind]
        for shard in _scan(root / sub):
            if not (_SHARD.fullmatch(shard.name) and shard.is_dir(follow_symlinks=False)):
                continue
            for item in _scan(Path(shard.path)):
                key = item.name.removesuffix(suffix)
                if not (_HASH.fullmatch(key) and item.name == key + suffix and key[:2] == shard.name):
                    continue
                try:
                    # Links are never entries (DirEntry's checks read the entry itself, not a link's target).
                    mine = item.is_dir(follow_symlinks=False) if kind == "run" else item.is_file(follow_symlinks=False)
                except OSError:  # removed meanwhile
                    continue
                if mine:
                    yield kind, key, Path(item.path)


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    """The items of ``folder`` in name order; none when it is a link, not a folder, or unreadable."""
    try:
        if folder.is_symlink():
            return []
        with os.scandir(folder) as items:
            return sorted(items, key=lambda item: item.name)
    except OSError:
        return []


# kind -> (folder, what follows the key in an entry's name)
_OWNED = {"run": ("runs", ""), "eval": ("evals", ".json"), "digest": (DIGESTS, ".json")}


def _mark_used(record: Path) -> None:
    """Move an entry's last use to now (its record's modification time; one atomic ``utime``). A read-only cache
    keeps its old times: it serves hits all the same."""
    with contextlib.suppress(OSError, NotImplementedError):
        os.utime(record, follow_symlinks=False)  # a link's target is not the cache's to touch


def check_record_shape(record: Any, key: str) -> None:
    """Raise :class:`CorruptEntry` unless ``record`` has the shape trial records are written in."""
    if not isinstance(record, dict):
        raise CorruptEntry(f"its {RUN_RECORD} holds {type(record).__name__}, not a record")
    if record.get("key") != key:
        raise CorruptEntry(f"its {RUN_RECORD} is the record of another run")
    if not isinstance(record.get("output_hash"), str) or not _HASH.fullmatch(record["output_hash"]):
        raise CorruptEntry("its output_hash is not a sha256")
    model = record.get("model")
    if (
        not isinstance(model, dict)
        or not isinstance(model.get("type"), str)
        or not isinstance(model.get("config"), dict)
    ):
        raise CorruptEntry('its model is not {"type": ..., "config": {...}}')
    fields = model["config"]
    rel, raw = fields.get("model_path_rel"), fields.get("model_path")
    if rel is not None and (not isinstance(rel, str) or raw is not None):
        raise CorruptEntry("its model path is not a path inside the entry")
    if raw is not None and not isinstance(raw, str):
        raise CorruptEntry("its model path is not a path")
    if not isinstance(record.get("config"), dict):
        raise CorruptEntry("its pass config is not an object")
    files = record.get("files")
    if files is not None and not (
        isinstance(files, dict)
        and all(
            isinstance(stats, list) and len(stats) == 2 and all(type(v) is int for v in stats)
            for stats in files.values()
        )
    ):
        raise CorruptEntry("its file list is not {path: [size, mtime]}")


def _files_unchanged(entry: Path, files: dict[str, list[int]]) -> bool:
    for name, (size, mtime_ns) in files.items():
        try:
            info = (entry / name).lstat()
        except OSError:
            return False
        if not stat_mode.S_ISREG(info.st_mode) or info.st_size != size or info.st_mtime_ns != mtime_ns:
            return False
    return True


def _eval_problem(stored: Any, keys: Iterable[str]) -> str | None:
    if not isinstance(stored, dict) or not isinstance(stored.get("result"), dict):
        return 'it is not {"result": {...}, "where": {...}}'
    if stored.get("where") is not None and not isinstance(stored["where"], dict):
        return "its 'where' is not an object"
    for name, item in stored["result"].items():
        value = item.get("value") if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or type(item.get("priority", -1)) is not int
            or not isinstance(item.get("higher_is_better", True), bool)
        ):
            return f"its value of '{name}' is not a measured number"
    missing = [name for name in keys if name not in stored["result"]]
    if missing:
        return f"it has no value of {', '.join(missing)}"
    return None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _remove_owned(folder: Path, pattern: re.Pattern[str], sharded: bool, kept: list[str], root: Path) -> None:
    """Delete the entries of ``folder`` that match ``pattern`` (under two-character shards when ``sharded``),
    then each folder left empty; add every other path to ``kept``."""
    if folder.is_symlink():
        kept.append(str(folder.relative_to(root)))
        return
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        if sharded and _SHARD.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            for item in entry.iterdir():
                # an entry sits in the shard of its key's first two characters
                if pattern.fullmatch(item.name) and item.name.lstrip(".")[:2] == entry.name:
                    _remove(item)
                else:
                    kept.append(str(item.relative_to(root)))
            if not any(entry.iterdir()):
                entry.rmdir()
        elif not sharded and pattern.fullmatch(entry.name):
            _remove(entry)
        else:
            kept.append(str(entry.relative_to(root)))
    if not any(folder.iterdir()):
        folder.rmdir()
