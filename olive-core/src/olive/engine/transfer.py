"""Ray workers that share no folder with the engine: models go out and results come back through Ray.

A Ray worker first looks for the engine's cache: the record this workflow run keeps under its cache's
``locks/`` (``use-<session>.lock``, :mod:`olive.cache.holds`) exists only where the worker sees the very folder
the engine writes. Where it does (one machine, or a shared file system) trials run in that cache as any local
worker's do. Where it does not, the worker is *node-local*:

- its trials run in a cache of its own node (``$OLIVE_WORKER_CACHE_DIR``, else the node's per-user cache), so
  later trials and later runs on that node reuse its work;
- the model a trial starts from (the input model, or in a pass-by-pass search the best model so far) is put in
  Ray's object store once by the engine (:class:`ModelPackage`) and written once per node under the node
  cache's ``inputs/<content hash>/``, every file checked against its sha256 on arrival;
- the entries the trial used that the engine does not hold yet travel back with its events
  (:class:`ShippedEntry`): each file's bytes with its sha256 through Ray's object store, or, for an entry over
  :data:`INLINE_LIMIT` when a remote cache is configured, only its key: the engine downloads it from the remote
  cache, where the worker has uploaded it anyway. The engine lands each one in its own cache exactly as a local
  run would write it (a temp folder renamed into place, under the run's lock), after checking every file's
  sha256 and the model's content hash; a result that does not check out is a failed step, never a silent one.

- the files and folders a trial reads besides the models travel like the model (:func:`input_paths`: each data
  config's ``data_path`` / ``data_dir``, and the ``user_script`` and ``script_dir`` of the workflow, its
  evaluator, its passes and its data configs): the engine puts each one up to :data:`DATA_LIMIT` in Ray's
  object store once, every file with its sha256 (:class:`InputPackage`); a node-local worker that cannot read the
  path writes it once per node under its node cache's ``inputs/data/<sha256>/<name>``, checks every digest, and
  runs its trials on a copy of the search that names the node's copy wherever it named the path
  (:func:`inputs_on_node`). Data reaches the cache keys by content (:meth:`DataConfig.content_hash`), so the
  node's pass runs and evaluations have the engine's keys.

An input over :data:`DATA_LIMIT`, and whatever a user script opens by itself, is read where it is: a worker that
cannot read one fails the trial with an error naming the path and why it was not shipped
(:func:`unreadable_inputs`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import shutil
import socket
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from olive.cache.holds import record_path
from olive.cache.location import default_cache_dir
from olive.cache.store import RUN_RECORD, CacheStore, check_record_shape, entry_files, hash_model
from olive.data.config import COMPONENT_FIELDS
from olive.engine.trial import model_from_record
from olive.model.types import model_from_json
from olive.paths import UnsafeName, inside

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from olive.config.workflow import WorkflowConfig
    from olive.engine.trial import TrialContext

logger = logging.getLogger(__name__)

#: Entries up to this size come back through Ray's object store; larger ones through the remote cache when
#: there is one. Ray moves an object node to node in one copy, while the remote costs two (upload, then the
#: engine's download) plus a request per file, so small entries are cheaper through Ray. A large one stays in the
#: head's object store (by default 30% of its memory) until the engine has written it, once per trial in flight;
#: past 64 MiB a few trials of a large model would fill it, and the worker's upload is made anyway (the remote
#: caches every run), so only the engine's download is extra.
INLINE_LIMIT = 64 << 20
#: Inputs (a data file or folder, a script, a script folder) up to this size are shipped to node-local workers
#: through Ray's object store. Each is put once for the whole search and stays there while it runs, next to the
#: models in flight, in the head's object store (30% of its memory by default); calibration and evaluation sets are
#: far smaller. A larger one must be readable at its path on every node (copy it there, or mount it).
DATA_LIMIT = 256 << 20
WORKER_CACHE_ENV = "OLIVE_WORKER_CACHE_DIR"


class ShippedCorrupt(Exception):
    """What arrived from a worker is not what it sent (a digest differs, a path leads outside its entry)."""


@attrs.frozen
class ModelPackage:
    """A model's files (paths relative to ``base``'s folder) with their sha256, put in Ray's object store once."""

    model_hash: str
    model_rel: str
    files: dict[str, bytes]
    digests: dict[str, str]

    @property
    def size(self) -> int:
        return sum(len(data) for data in self.files.values())


@attrs.frozen
class InputPackage:
    """A file or folder a trial reads, as the workflow names it (``path``), put in Ray's object store once: its
    files (relative to the folder; a file's own name for a file), each with its sha256, and the sha256 of the
    whole (:func:`input_sha256`)."""

    path: str
    sha256: str
    files: dict[str, bytes]
    digests: dict[str, str]
    folder: bool = False

    @property
    def size(self) -> int:
        return sum(len(data) for data in self.files.values())


@attrs.frozen
class ShippedData:
    """The inputs of a search for node-local workers: Ray references to their :class:`InputPackage` and their
    sha256 (so that a node holding a copy fetches nothing) by the path the workflow names, and why each other input
    was not shipped."""

    refs: dict[str, Any] = attrs.Factory(dict)
    digests: dict[str, str] = attrs.Factory(dict)
    withheld: dict[str, str] = attrs.Factory(dict)


@attrs.frozen
class ShippedEntry:
    """One cache entry on its way from a worker's node to the engine's: a run (``record`` and ``files``), an
    evaluation (``value``), or only a key when ``via_remote`` (the engine downloads it from the remote cache)."""

    kind: str
    key: str
    record: dict[str, Any] | None = None
    files: dict[str, bytes] = attrs.Factory(dict)
    digests: dict[str, str] = attrs.Factory(dict)
    value: dict[str, Any] | None = None
    via_remote: bool = False

    @property
    def size(self) -> int:
        return sum(len(data) for data in self.files.values())


@attrs.frozen
class NodeResult:
    """A Ray trial's events, and (for a node-local worker) the entries it ships back."""

    events: list[Any]
    node_local: bool = False
    entries: list[ShippedEntry] = attrs.Factory(list)
    node: str = ""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------------
# Engine side
# --------------------------------------------------------------------------------------------------
def model_files(model_json: dict[str, Any]) -> tuple[Path, str, list[Path]] | None:
    """``(folder, model path relative to it, files)`` of a model on disk: an ONNX file and its external data, or
    every file of a model folder; None for a model with no path."""
    raw = (model_json.get("config") or {}).get("model_path")
    if raw is None:
        return None
    path = Path(raw)
    if path.is_dir():
        return path, ".", sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    files = [path]
    handler = model_from_json(model_json)
    if hasattr(handler, "external_data_files"):
        files += [Path(f) for f in handler.external_data_files() if Path(f).is_file()]
    return path.parent, path.name, files


def package_model(model_json: dict[str, Any], model_hash: str) -> ModelPackage | None:
    found = model_files(model_json)
    if found is None:
        return None
    folder, rel, paths = found
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in paths}
    return ModelPackage(model_hash, rel, files, {name: _sha256(data) for name, data in files.items()})


def input_paths(workflow: WorkflowConfig) -> list[tuple[str, str]]:
    """``(path, what names it)`` of every file and folder a trial reads besides the models: the ``user_script`` and
    ``script_dir`` of the workflow, its evaluator, its passes and its data configs, and each data config's data
    paths (``data_path`` / ``data_dir`` of a component)."""
    owners = [(workflow, ""), (workflow.evaluator, "evaluator ")]
    owners += [(spec, f"pass '{key}' ") for key, specs in workflow.passes.items() for spec in specs]
    named: list[tuple[str, str]] = []
    for owner, prefix in owners:
        for key in ("user_script", "script_dir"):
            if owner is not None and getattr(owner, key, None):
                named.append((str(getattr(owner, key)), f"{prefix}{key}"))
    for name, data in workflow.data_configs.items():
        for key in ("user_script", "script_dir"):
            if getattr(data, key):
                named.append((str(getattr(data, key)), f"data config '{name}' {key}"))
        for field in COMPONENT_FIELDS:
            params = getattr(data, field).params
            for key in ("data_path", "data_dir"):
                if isinstance(params.get(key), str | Path):
                    named.append((str(params[key]), f"data config '{name}' {field}.{key}"))
    return named


def input_sha256(digests: dict[str, str], folder: bool) -> str:
    """A file's sha256, or a folder's: of its files' relative paths and digests, in order (as
    :func:`olive.cache.store.hash_path`)."""
    if not folder:
        return next(iter(digests.values()))
    sha = hashlib.sha256(b"folder\0")
    for rel in sorted(digests):
        sha.update(f"{rel}\0{digests[rel]}\n".encode())
    return sha.hexdigest()


def package_inputs(workflow: WorkflowConfig, limit: int | None = None) -> tuple[list[InputPackage], dict[str, str]]:
    """The inputs of ``workflow`` that can travel (regular files and folders of them, up to ``limit`` bytes each,
    default :data:`DATA_LIMIT`), and why each other one cannot."""
    limit = DATA_LIMIT if limit is None else limit
    packages: dict[str, InputPackage] = {}
    withheld: dict[str, str] = {}
    for raw, _ in input_paths(workflow):
        path = Path(raw)
        if raw in packages or raw in withheld or not path.exists():
            continue  # a missing file fails everywhere with the loader's own error
        folder = path.is_dir()
        if folder:
            found = sorted(p for p in path.rglob("*") if not p.is_dir())
            if any(p.is_symlink() or not p.is_file() for p in found):
                withheld[raw] = "a folder holding links or special files is not shipped to Ray nodes"
                continue
        else:
            found = [path]
        size = sum(p.stat().st_size for p in found)
        if size > limit:
            withheld[raw] = f"it is {size} bytes, over the {limit}-byte limit of inputs shipped to Ray nodes"
            continue
        files = {(p.relative_to(path).as_posix() if folder else path.name): p.read_bytes() for p in found}
        digests = {rel: _sha256(data) for rel, data in files.items()}
        packages[raw] = InputPackage(raw, input_sha256(digests, folder), files, digests, folder)
    return list(packages.values()), withheld


def land(store: CacheStore, entry: ShippedEntry, model_of: Callable[[dict[str, Any]], Any]) -> None:
    """Write ``entry`` into the engine's ``store`` as a local run would (nothing when it holds it already).

    Raises :class:`ShippedCorrupt` when what arrived does not check out.
    """
    if entry.kind == "eval":
        if entry.value is not None and store.get_eval(entry.key) is None:
            store.put_eval(entry.key, entry.value, upload=False)
        return
    with store.run_lock(entry.key):
        if store.get_run(entry.key, model_of, repair=True) is not None:
            return
        if entry.via_remote:
            if store.fetch_run(entry.key, model_of) is None:
                raise ShippedCorrupt("the remote cache does not hold a sound copy of it")
            return
        record = entry.record
        try:
            check_record_shape(record, entry.key)
        except Exception as exc:
            raise ShippedCorrupt(f"its record is not a run record ({exc})") from None
        with store.new_run(entry.key) as tmp:
            for rel, data in entry.files.items():
                try:
                    target = inside(tmp, rel)
                except UnsafeName as exc:
                    raise ShippedCorrupt(f"its file '{rel}' is not inside its entry ({exc})") from None
                if _sha256(data) != entry.digests.get(rel):
                    raise ShippedCorrupt(f"its file '{rel}' arrived with another sha256 than it left with")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            landed = {k: v for k, v in record.items() if k != "entry_dir"}
            landed["files"] = entry_files(tmp)
            if hash_model(model_of({**landed, "entry_dir": str(tmp)})) != landed["output_hash"]:
                raise ShippedCorrupt("its model's content is not what the run made (hash mismatch)")
            (tmp / RUN_RECORD).write_text(json.dumps(landed, indent=1, sort_keys=True, default=str))


# --------------------------------------------------------------------------------------------------
# Worker side
# --------------------------------------------------------------------------------------------------
def sees_engine_cache(cache_root: str, session: str) -> bool:
    """Whether this node sees the engine's own cache folder (the run's hold record is there)."""
    return record_path(Path(cache_root) / "locks", session).exists()


def node_cache_dir() -> Path:
    configured = os.environ.get(WORKER_CACHE_ENV, "").strip()
    return Path(configured).expanduser().resolve() if configured else default_cache_dir()


def model_on_node(store: CacheStore, model_hash: str, fetch: Callable[[], ModelPackage]) -> Path:
    """The model ``model_hash`` on this node, under ``inputs/<hash>/`` of ``store``: fetched (``fetch``, from Ray's
    object store) and written once per node, every file checked against its sha256 first. Returns its path."""
    done = store.root / "inputs" / model_hash / ".complete"
    try:
        rel = json.loads(done.read_text())["model_rel"]
        return inside(done.parent, rel) if rel != "." else done.parent
    except (OSError, ValueError, KeyError, TypeError, UnsafeName):
        return materialize(store, fetch())


def materialize(store: CacheStore, package: ModelPackage) -> Path:
    """The model of ``package`` written under ``inputs/<hash>/`` of ``store`` (a temp folder renamed into place),
    every file checked against its sha256 first. Returns the model's path."""
    final = store.root / "inputs" / package.model_hash
    if not (final / ".complete").is_file():
        tmp = store.root / "inputs" / f".{package.model_hash}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        try:
            for rel, data in package.files.items():
                if _sha256(data) != package.digests.get(rel):
                    raise ShippedCorrupt(f"the model file '{rel}' arrived with another sha256 than it left with")
                target = inside(tmp, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            (tmp / ".complete").write_text(json.dumps({"model_rel": package.model_rel}))
            try:
                tmp.rename(final)
            except OSError:
                if not (final / ".complete").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final / package.model_rel if package.model_rel != "." else final


def relocated(model_json: dict[str, Any], path: Path) -> dict[str, Any]:
    return {**model_json, "config": {**(model_json.get("config") or {}), "model_path": str(path)}}


def input_copy_path(store: CacheStore, path: str, sha256: str) -> Path:
    return store.root / "inputs" / "data" / sha256 / (Path(path).name or "data")


def input_on_node(store: CacheStore, package: InputPackage) -> Path:
    """The input of ``package`` on this node, under ``inputs/data/<sha256>/`` of ``store`` with its own name:
    written once per node (a temp file or folder renamed into place) after every digest checks out. Returns its
    path."""
    final = input_copy_path(store, package.path, package.sha256)
    if final.exists():
        return final
    for rel, data in package.files.items():
        if _sha256(data) != package.digests.get(rel):
            raise ShippedCorrupt(f"'{rel}' of '{package.path}' arrived with another sha256 than it left with")
    if input_sha256(package.digests, package.folder) != package.sha256:
        raise ShippedCorrupt(f"'{package.path}' arrived with other files than it left with")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        if package.folder:
            for rel, data in package.files.items():
                target = inside(tmp, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            tmp.mkdir(exist_ok=True)  # an empty folder
        else:
            tmp.write_bytes(next(iter(package.files.values())))
        try:
            tmp.rename(final)
        except OSError:
            if not final.exists():
                raise
    except UnsafeName as exc:
        raise ShippedCorrupt(f"a file of '{package.path}' is not inside it ({exc})") from None
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
    return final


def inputs_on_node(
    store: CacheStore, context: TrialContext, shipped: ShippedData, fetch: Callable[[Any], InputPackage]
) -> TrialContext:
    """``context`` naming, wherever it named an input this node cannot read but that was shipped (``shipped``,
    fetched with ``fetch`` from Ray's object store), its copy on this node (:func:`input_on_node`); ``context``
    itself when there is none."""
    wanted = {raw for raw, _ in input_paths(context.workflow) if raw in shipped.refs and not os.access(raw, os.R_OK)}
    if not wanted:
        return context
    local: dict[str, str] = {}
    for raw in sorted(wanted):
        held = input_copy_path(store, raw, shipped.digests[raw]) if raw in shipped.digests else None
        # A copy is only ever renamed into place whole, after its digests checked out.
        local[raw] = str(held if held is not None and held.exists() else input_on_node(store, fetch(shipped.refs[raw])))
    # A copy of the whole context, rewritten in place: the same path is held by the workflow, its data configs,
    # their per-role copies (which share their components' params) and the plans' resolved pass configs, and
    # every one of them must name the node's copy; the context the task received stays as the engine sent it.
    context = copy.deepcopy(context)
    _renamed(context, local, set())
    return context


def _renamed(value: Any, local: dict[str, str], seen: set[int]) -> Any:
    """``value`` with every path in ``local`` (a ``str`` or ``Path`` equal to one) replaced by its node copy;
    containers and attrs instances (frozen ones too: this is the node's own copy) are rewritten in place."""
    if isinstance(value, str | Path):
        return type(value)(local[str(value)]) if str(value) in local else value
    if id(value) in seen or isinstance(value, type):
        return value
    seen.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = _renamed(item, local, seen)
    elif isinstance(value, list):
        value[:] = [_renamed(item, local, seen) for item in value]
    elif isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_renamed(item, local, seen) for item in value)
    elif attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            item = getattr(value, field.name)
            renamed = _renamed(item, local, seen)
            if renamed is not item:
                object.__setattr__(value, field.name, renamed)
    return value


def unreadable_inputs(workflow: WorkflowConfig) -> list[tuple[str, str]]:
    """``(path, what names it)`` of the files and folders the workflow names that this node cannot read."""
    return [(path, what) for path, what in input_paths(workflow) if not os.access(path, os.R_OK)]


def ship(store: CacheStore, touched: Iterable[tuple[str, str]], have: frozenset[str]) -> list[ShippedEntry]:
    """The entries of ``store`` a trial used (``touched``) that the engine does not hold (``have``)."""
    shipped: list[ShippedEntry] = []
    for kind, key in dict.fromkeys(touched):
        if key in have:
            continue
        if kind == "eval":
            value = store.get_eval(key)
            if value is not None:
                shipped.append(ShippedEntry("eval", key, value=value))
            continue
        record = store.get_run(key, model_from_record)
        if record is None:
            continue
        entry = Path(record["entry_dir"])
        paths = [
            p
            for p in sorted(entry.rglob("*"))
            if p.is_file() and not p.is_symlink() and p.relative_to(entry).as_posix() != RUN_RECORD
        ]
        size = sum(p.stat().st_size for p in paths)
        remote = store.remote
        if size > INLINE_LIMIT and remote is not None and remote.available and remote.config.upload:
            if remote.manifest_exists(key) is False:
                store.publish_run(key, record)  # a hit from an earlier run on this node, never uploaded
            if remote.available:
                shipped.append(ShippedEntry("run", key, via_remote=True))
                continue
        files = {p.relative_to(entry).as_posix(): p.read_bytes() for p in paths}
        shipped.append(
            ShippedEntry("run", key, record=record, files=files, digests={n: _sha256(d) for n, d in files.items()})
        )
    return shipped


def node_name() -> str:
    return socket.gethostname()
