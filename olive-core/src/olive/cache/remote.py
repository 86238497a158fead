"""A remote cache on object storage, layered under the local cache: ``"remote_cache": "s3://bucket/prefix"``.

Any fsspec URL works (``s3://`` through s3fs, ``gs://`` through gcsfs, ``az://`` through adlfs, ``file://`` for a
mounted folder). A lookup that misses locally asks the remote; a finished pass run or evaluation is uploaded under
the same key as its local entry (:mod:`olive.engine.keys`: content digests, pass distribution and version,
config, target), so two machines whose inputs are the same share each other's work.

Layout under the URL::

    olive-remote-cache.json         marker (``olive cache clean --remote`` deletes only under a prefix that has it)
    blobs/<h[:2]>/<h>               a file's bytes, named by their sha256 (shared by every entry holding them)
    runs/<k[:2]>/<k>.json           a pass run: its record and {relative path: {size, sha256}} of its files
    evals/<k[:2]>/<k>.json          an evaluation: its value and the sha256 of that value
    tmp/<uuid>                      an upload in progress

Object stores have no rename, so publishing is ordering: every blob is written under ``tmp/`` and then moved to
its name, and the run's manifest is written (the same way) only once all its blobs are in place. A reader that
finds a manifest finds its files; a reader that finds none sees nothing. Everything read back is untrusted: a
manifest of the wrong shape, a path leading outside its entry, a blob whose bytes do not hash to its name or
whose size differs, is corrupt: a warning names it and the run is done again (and its upload replaces it).
Nothing corrupt is ever delivered into the local cache.

Credentials come from the storage library's usual places (``AWS_*`` variables, ``~/.aws``, instance roles;
``FSSPEC_S3_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL`` for an S3-compatible server) and are never written by olive: a
URL holding one is a config error, and only the URL (never storage options) reaches the footprint or a log.

Storage that stops answering mid-run turns the remote off for the rest of the run with one warning: the run
finishes from local work, and every entry it made is still in the local cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from olive.config_errors import config_error, expect
from olive.exceptions import OliveError
from olive.paths import UnsafeName, inside
from olive.plugins.install_hints import install_line

logger = logging.getLogger(__name__)

#: The workflow's key (top level).
REMOTE_KEY = "remote_cache"
REMOTE_MARKER = "olive-remote-cache.json"
_FORMAT = 1
_HASH = re.compile(r"[0-9a-f]{64}")
# A manifest or evaluation read back is JSON written by this module; one far larger is not ours.
_MAX_JSON = 16 << 20
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")


#: Bytes this process moved to and from remote caches (every instance), for benchmarks and tests.
TRANSFERRED = {"up": 0, "down": 0}


class RemoteCorrupt(Exception):
    """A remote object that is not what this module wrote (the message says what is wrong)."""


class RemoteUnreachable(Exception):
    """The storage did not answer (or refused): the remote is off for the rest of the run."""


@attrs.frozen
class RemoteCacheConfig:
    """``remote_cache``: ``url`` (an fsspec URL, no trailing slash) and ``upload`` (False: read only)."""

    url: str
    upload: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "upload": self.upload}


def parse_remote_cache(value: Any, path: str = REMOTE_KEY) -> RemoteCacheConfig | None:
    """Validate the workflow's ``remote_cache`` (a URL string, or ``{"url": ..., "upload": bool}``); None: none.

    Checks the shape only: whether fsspec is installed and the storage answers is found when the run starts.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = {"url": value}
    expect(value, dict, path, 'an fsspec URL such as "s3://bucket/prefix", or {"url": "s3://...", "upload": true}')
    unknown = sorted(set(value) - {"url", "upload"})
    if unknown:
        raise config_error(f"{path}.{unknown[0]}", 'unknown key; remote_cache takes "url" and "upload"')
    url = expect(value.get("url"), str, f"{path}.url", 'an fsspec URL such as "s3://bucket/prefix"').strip()
    upload = expect(value.get("upload", True), bool, f"{path}.upload", "true or false")
    return RemoteCacheConfig(check_url(url, f"{path}.url"), upload)


def check_url(url: str, path: str) -> str:
    """``url`` without a trailing slash, or a config error naming ``path`` (no scheme, credentials in it)."""
    parts = urlsplit(url)
    if not parts.scheme or not _SCHEME.fullmatch(parts.scheme) or "://" not in url:
        raise config_error(path, f"'{url}' is not a URL; write it as scheme://bucket/prefix, e.g. s3://my-bucket/olive")
    if parts.password is not None or parts.username is not None:
        # Never echo the URL: it holds the secret.
        raise config_error(
            path,
            "the URL holds credentials; remove them and give them where the storage library reads them "
            "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or ~/.aws/credentials for s3://)",
        )
    if parts.query or parts.fragment:
        raise config_error(path, f"'{url}' has a query or fragment; give scheme://bucket/prefix only")
    if not (parts.netloc or parts.path.strip("/")):
        raise config_error(path, f"'{url}' names no bucket or folder; write e.g. s3://my-bucket/olive")
    return url.rstrip("/")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


class RemoteCache:
    """One remote cache URL, opened on first use. Every operation either works, finds nothing (None), or turns the
    remote off for this process (storage unreachable: one warning per run, see :attr:`report_down`); none raises
    into a run.

    ``bytes_up`` / ``bytes_down`` count the bytes this process moved (for benchmarks and ``olive cache info``).
    """

    def __init__(self, config: RemoteCacheConfig):
        self.config = config
        self.url = config.url
        self._fs: Any = None
        self._root = ""
        self.down: str | None = None
        self.bytes_up = 0
        self.bytes_down = 0
        #: blobs found corrupt in this process: an upload writes them again even though they exist
        self._bad_blobs: set[str] = set()
        #: where the one "unreachable" warning goes instead of the log: a worker process hands it to the engine,
        #: which warns once per run however many workers found the storage gone
        self.report_down: Callable[[str], None] | None = None

    # ------------------------------------------------------------------------------------------
    @property
    def fs(self) -> Any:
        if self._fs is None:
            try:
                import fsspec
            except ImportError as exc:
                raise OliveError(
                    f"remote_cache: '{self.url}' needs fsspec, which is not installed; install it with: "
                    f"{install_line('olive-core', 'remote')}"
                ) from exc
            try:
                self._fs, self._root = fsspec.core.url_to_fs(self.url)
            except ImportError as exc:
                scheme = urlsplit(self.url).scheme
                raise OliveError(
                    f"remote_cache: '{self.url}' needs the fsspec package for {scheme}:// ({exc}); install it "
                    f"(s3fs for s3://, gcsfs for gs://, adlfs for az://)"
                ) from exc
            except ValueError as exc:
                raise OliveError(f"remote_cache: '{self.url}' is not a URL fsspec knows ({exc})") from exc
        return self._fs

    def check_installed(self) -> None:
        """Raise :class:`~olive.exceptions.OliveError` naming what to install when the URL's fsspec package is
        missing (nothing is contacted: an unreachable storage is found, and survived, later)."""
        _ = self.fs

    def _path(self, *parts: str) -> str:
        return "/".join([self._root.rstrip("/"), *parts])

    def run_path(self, key: str) -> str:
        return self._path("runs", key[:2], f"{key}.json")

    def eval_path(self, key: str) -> str:
        return self._path("evals", key[:2], f"{key}.json")

    def blob_path(self, digest: str) -> str:
        return self._path("blobs", digest[:2], digest)

    @property
    def available(self) -> bool:
        return self.down is None

    @contextlib.contextmanager
    def _storage(self, what: str) -> Iterator[None]:
        """Any storage error but a missing object turns the remote off (one warning) and is raised as
        :class:`RemoteUnreachable`, which callers turn into a miss."""
        if self.down is not None:
            raise RemoteUnreachable(self.down)
        try:
            yield
        except (FileNotFoundError, RemoteCorrupt, OliveError):
            raise
        except Exception as exc:  # botocore, aiohttp, OSError...: whatever the storage library raises
            self.down = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            message = (
                f"remote cache '{self.url}' is unreachable ({self.down}, while {what}): this run goes on from local "
                "work and uses the remote no more; what it made stays in the local cache"
            )
            if self.report_down is not None:
                self.report_down(message)
            else:
                logger.warning("%s", message)
            raise RemoteUnreachable(self.down) from None

    def mark_down(self, reason: str) -> None:
        """Use the remote no more (another process of this run found it unreachable and said so)."""
        if self.down is None:
            self.down = reason

    # ------------------------------------------------------------------------------------------
    def _read_json(self, path: str, what: str) -> Any:
        with self._storage(f"reading {what}"), self.fs.open(path, "rb") as handle:
            data = handle.read(_MAX_JSON + 1)
        self.bytes_down += len(data)
        TRANSFERRED["down"] += len(data)
        if len(data) > _MAX_JSON:
            raise RemoteCorrupt("it is larger than any this cache writes")
        try:
            return json.loads(data)
        except ValueError as exc:
            raise RemoteCorrupt(f"it is not JSON ({exc})") from None

    def _folders(self, *paths: str) -> None:
        """Object stores have no folders; a file system (``file://``, a mounted share) needs them made first."""
        protocol = self.fs.protocol
        if "file" in (protocol if isinstance(protocol, tuple) else (protocol,)):
            for path in paths:
                self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)

    def _publish(self, path: str, data: bytes, what: str) -> None:
        """Write ``data`` under a temporary key, then move it to ``path`` (readers see all of it or nothing)."""
        tmp = self._path("tmp", uuid.uuid4().hex)
        with self._storage(f"uploading {what}"):
            self._folders(tmp, path)
            self.fs.pipe_file(tmp, data)
            self.fs.mv(tmp, path)
        self.bytes_up += len(data)
        TRANSFERRED["up"] += len(data)

    def ensure_marker(self) -> None:
        with self._storage("writing its marker"):
            exists = self.fs.exists(self._path(REMOTE_MARKER))
        if not exists:
            self._publish(self._path(REMOTE_MARKER), _canonical({"format": _FORMAT, "created_by": "olive"}), "marker")

    # ------------------------------------------------------------------------------------------
    # Evaluations
    def get_eval(self, key: str) -> dict[str, Any] | None:
        """The evaluation stored under ``key``, its digest checked; None when absent, corrupt or unreachable."""
        if not self.available:
            return None
        path = self.eval_path(key)
        try:
            stored = self._read_json(path, f"evaluation {key[:12]}")
            if not isinstance(stored, dict) or stored.get("format") != _FORMAT or stored.get("key") != key:
                raise RemoteCorrupt("it is not an evaluation this cache wrote for this key")
            value, digest = stored.get("value"), stored.get("sha256")
            if not isinstance(value, dict) or not isinstance(digest, str) or _sha256(_canonical(value)) != digest:
                raise RemoteCorrupt("its value does not match its recorded sha256")
            return value
        except (FileNotFoundError, RemoteUnreachable):
            return None
        except RemoteCorrupt as exc:
            logger.warning("remote cache object '%s' is corrupt: %s; the model is measured again", path, exc)
            return None

    def share_eval(self, key: str, value: dict[str, Any]) -> None:
        """A local hit: upload it when the remote lacks it."""
        if not (self.available and self.config.upload):
            return
        try:
            with self._storage(f"looking up evaluation {key[:12]}"):
                present = self.fs.exists(self.eval_path(key))
        except RemoteUnreachable:
            return
        if not present:
            self.put_eval(key, value)

    def put_eval(self, key: str, value: dict[str, Any]) -> None:
        if not (self.available and self.config.upload):
            return
        body = _canonical({"format": _FORMAT, "key": key, "value": value, "sha256": _sha256(_canonical(value))})
        with contextlib.suppress(RemoteUnreachable):
            self.ensure_marker()
            self._publish(self.eval_path(key), body, f"evaluation {key[:12]}")

    # ------------------------------------------------------------------------------------------
    # Pass runs
    def put_run(self, key: str, files: dict[str, tuple[Path, int, str]], record: dict[str, Any]) -> None:
        """Upload run ``key``: each of ``files`` (relative path -> (local path, size, sha256)) as a blob, then the
        manifest naming them."""
        if not (self.available and self.config.upload):
            return
        try:
            self.ensure_marker()
            for path, size, digest in files.values():
                self._put_blob(path, digest, size)
            shared = {k: v for k, v in record.items() if k not in ("entry_dir", "files")}
            listed = {rel: {"size": size, "sha256": digest} for rel, (_, size, digest) in files.items()}
            manifest = {"format": _FORMAT, "key": key, "record": shared, "files": listed}
            self._publish(self.run_path(key), _canonical(manifest), f"run {key[:12]}")
        except RemoteUnreachable:
            return

    def _put_blob(self, path: Path, digest: str, size: int) -> None:
        target = self.blob_path(digest)
        with self._storage(f"uploading blob {digest[:12]}"):
            if digest not in self._bad_blobs and self.fs.exists(target) and self.fs.size(target) == size:
                return  # content-addressed: the same bytes are there already
            tmp = self._path("tmp", uuid.uuid4().hex)
            self._folders(tmp, target)
            self.fs.put_file(str(path), tmp)
            self.fs.mv(tmp, target)
        self._bad_blobs.discard(digest)
        self.bytes_up += size
        TRANSFERRED["up"] += size

    def manifest(self, key: str) -> dict[str, Any] | None:
        """The checked manifest of run ``key`` (:func:`check_manifest`); None when absent or unreachable.

        Raises :class:`RemoteCorrupt` for one that is not what :meth:`put_run` writes.
        """
        if not self.available:
            return None
        try:
            return check_manifest(self._read_json(self.run_path(key), f"run {key[:12]}"), key)
        except (FileNotFoundError, RemoteUnreachable):
            return None

    def manifest_exists(self, key: str) -> bool | None:
        """Whether run ``key`` has a manifest; None when the storage does not answer."""
        try:
            with self._storage(f"looking up run {key[:12]}"):
                return bool(self.fs.exists(self.run_path(key)))
        except RemoteUnreachable:
            return None

    def fetch_files(self, manifest: dict[str, Any], folder: Path) -> None:
        """Download every file of ``manifest`` into ``folder``, each checked against its size and sha256 as it
        arrives. Raises :class:`RemoteCorrupt` (a file whose bytes differ) or :class:`RemoteUnreachable`."""
        for rel, meta in manifest["files"].items():
            try:
                target = inside(folder, rel)
            except UnsafeName as exc:  # check_manifest refused these already; a second look costs nothing
                raise RemoteCorrupt(f"a file it lists is not inside its entry ({exc})") from None
            target.parent.mkdir(parents=True, exist_ok=True)
            sha, size = hashlib.sha256(), 0
            blob = self.blob_path(meta["sha256"])
            try:
                with (
                    self._storage(f"downloading blob {meta['sha256'][:12]}"),
                    self.fs.open(blob, "rb") as source,
                    target.open("wb") as sink,
                ):
                    for block in iter(lambda s=source: s.read(1 << 22), b""):
                        size += len(block)
                        if size > meta["size"]:
                            break
                        sha.update(block)
                        sink.write(block)
            except FileNotFoundError:
                self._bad_blobs.add(meta["sha256"])
                raise RemoteCorrupt(f"its file '{rel}' is missing from the storage") from None
            self.bytes_down += size
            TRANSFERRED["down"] += size
            if size != meta["size"] or sha.hexdigest() != meta["sha256"]:
                self._bad_blobs.add(meta["sha256"])
                raise RemoteCorrupt(f"its file '{rel}' is not what was uploaded (size or sha256 differs)")

    # ------------------------------------------------------------------------------------------
    # olive cache info|clean --remote
    def info(self) -> dict[str, Any]:
        fs = self.fs
        with self._storage("listing it"):
            is_cache = fs.exists(self._path(REMOTE_MARKER))
            counts = {}
            size = 0
            for sub in ("runs", "evals", "blobs"):
                found = fs.find(self._path(sub), detail=True) if fs.exists(self._path(sub)) else {}
                counts[sub] = len(found)
                size += sum(int(item.get("size") or 0) for item in found.values())
        return {
            "remote_cache": self.url,
            "is_olive_cache": is_cache,
            "runs": counts["runs"],
            "evaluations": counts["evals"],
            "blobs": counts["blobs"],
            "size_bytes": size,
        }

    def clean(self) -> int:
        """Delete what this cache wrote under the URL (runs, evals, blobs, tmp, the marker; nothing else), only
        where the marker says it is a remote cache. Returns how many objects went."""
        fs = self.fs
        with self._storage("cleaning it"):
            if not fs.exists(self._path(REMOTE_MARKER)):
                return -1
            removed = 0
            for sub in ("runs", "evals", "blobs", "tmp"):
                if fs.exists(self._path(sub)):
                    found = [p for p in fs.find(self._path(sub)) if _owned_name(sub, p.rsplit("/", 1)[-1])]
                    if found:
                        fs.rm(found)
                    removed += len(found)
            fs.rm_file(self._path(REMOTE_MARKER))
        return removed + 1


def _owned_name(sub: str, name: str) -> bool:
    if sub == "blobs":
        return bool(_HASH.fullmatch(name))
    if sub == "tmp":
        return bool(re.fullmatch(r"[0-9a-f]{32}", name))
    return bool(re.fullmatch(r"[0-9a-f]{64}\.json", name))


def check_manifest(manifest: Any, key: str) -> dict[str, Any]:
    """``manifest`` if it has the shape :meth:`RemoteCache.put_run` writes for ``key``, every path inside the
    entry; else :class:`RemoteCorrupt`. The record inside is checked by the local store, as a local entry's is."""
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT or manifest.get("key") != key:
        raise RemoteCorrupt("it is not a run manifest this cache wrote for this key")
    record, files = manifest.get("record"), manifest.get("files")
    if not isinstance(record, dict):
        raise RemoteCorrupt("its record is not an object")
    if not isinstance(files, dict) or not files:
        raise RemoteCorrupt("its file list is empty or not an object")
    probe = Path("/entry")
    for rel, meta in files.items():
        if not (
            isinstance(rel, str)
            and isinstance(meta, dict)
            and type(meta.get("size")) is int
            and meta["size"] >= 0
            and isinstance(meta.get("sha256"), str)
            and _HASH.fullmatch(meta["sha256"])
        ):
            raise RemoteCorrupt("its file list is not {path: {size, sha256}}")
        try:
            inside(probe, rel)
        except UnsafeName as exc:
            raise RemoteCorrupt(f"a file it lists is not inside its entry ({exc})") from None
    rel = (
        ((record.get("model") or {}).get("config") or {}).get("model_path_rel")
        if isinstance(record.get("model"), dict)
        else None
    )
    if rel is not None and rel not in files and not any(name.startswith(f"{rel}/") for name in files):
        raise RemoteCorrupt(f"its model '{rel}' is not among its files")
    return manifest


def open_remote(config: RemoteCacheConfig | None) -> RemoteCache | None:
    return RemoteCache(config) if config is not None else None
