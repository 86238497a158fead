"""Where search trials run: in the engine's process, a local process pool, or Ray tasks.

Three implementations of one interface, :class:`TrialExecutor`: ``submit()`` takes a
:class:`~olive.engine.trial.TrialRequest`, ``next_result()`` hands back a finished trial's id and its events
(:mod:`olive.engine.results`). ``search_strategy.executor`` picks one:

- ``sequential`` (the default, and every run without a search): :class:`InlineExecutor` runs each trial in
  the engine's process, step by step as the engine reads its events, so a pass's hooks fire as it runs;
- ``process``: :class:`ProcessExecutor`, local worker processes;
- ``ray``: :class:`RayExecutor`, Ray tasks on one machine or a cluster.

Every executor runs the same function (:meth:`~olive.engine.trial.TrialWorker.run`), so a search gives the
same footprint on each. A worker that dies in the middle of a trial (killed, out of memory) is replaced and
the trial retried once; if it dies again the trial's result is one :class:`~olive.engine.results.TrialFailed`
and the search goes on.

Local workers are forked by default, so they inherit the engine's pass registry, including passes
registered in-process (tests, notebooks) and plugin passes; ``start_method: "spawn"`` or
``"forkserver"`` sends them the pickled search instead (passes must then be importable by module name).
Ray workers always receive the pickled search: passes must be installed on every node. A Ray worker that does not
see the engine's cache folder (another machine, no shared file system) runs node-local: its start model and the
workflow's data files arrive once per node through Ray's object store, and its results come back through Ray or the
remote cache, checked by digest before they land in the engine's cache (:mod:`olive.engine.transfer`).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any

import attrs

from olive.cache.store import CacheStore
from olive.engine.results import Status, StepResult, TrialEvent, TrialFailed
from olive.engine.transfer import (
    NodeResult,
    ShippedCorrupt,
    ShippedData,
    inputs_on_node,
    land,
    model_on_node,
    node_cache_dir,
    node_name,
    package_inputs,
    package_model,
    relocated,
    sees_engine_cache,
    ship,
    unreadable_inputs,
)
from olive.engine.trial import TrialContext, TrialRequest, TrialWorker, model_from_record
from olive.exceptions import OliveError, WorkflowConfigError
from olive.passes.progress import PassProgress, listening, report_progress
from olive.plugins.install_hints import install_line

if TYPE_CHECKING:
    from olive.config import ExecutorConfig

logger = logging.getLogger(__name__)

#: What the last Ray search of this process moved through Ray's object store (for benchmarks): bytes of models put
#: for node-local workers (each put once), bytes of data files put for them (once per search), bytes of entries
#: shipped back, and entries that came through the remote.
RAY_TRANSFER: dict[str, int] = {"models_out": 0, "data_out": 0, "entries_back": 0, "entries_via_remote": 0}

RAY_MISSING = (
    "search_strategy.executor: the 'ray' executor needs Ray, which is not installed; "
    f"install it with: {install_line('olive-core', 'ray')} (or pip install 'ray[client]>=2.9')"
)


class TrialExecutor(ABC):
    """Runs trials: takes requests, hands back each finished trial's events."""

    #: how many trials may be unfinished at once (the engine submits no more)
    capacity: int = 1

    @abstractmethod
    def submit(self, request: TrialRequest) -> int:
        """Start (or queue) a trial; returns its id."""

    @abstractmethod
    def next_result(self) -> tuple[int, Iterable[TrialEvent]]:
        """Wait for any submitted trial to finish; returns ``(trial_id, events)``."""

    @abstractmethod
    def close(self, cancel: bool = False) -> None:
        """Stop the workers; ``cancel`` stops running trials instead of letting the pool drain."""


def _no_trial_running() -> OliveError:
    return OliveError("no trial is running (the executor was asked for a result it does not owe)")


class InlineExecutor(TrialExecutor):
    """``sequential``: one trial at a time in the engine's process.

    A trial's events are produced while the engine reads them, so a pass runs only after the engine has
    recorded its start (and fired ``olive_pass_start``), exactly as if the engine ran it itself.
    """

    capacity = 1

    def __init__(self, worker: TrialWorker):
        self._worker = worker
        self._queue: deque[tuple[int, TrialRequest]] = deque()
        self._next_id = 0

    def submit(self, request: TrialRequest) -> int:
        self._next_id += 1
        self._queue.append((self._next_id, request))
        return self._next_id

    def next_result(self) -> tuple[int, Iterable[TrialEvent]]:
        if not self._queue:
            raise _no_trial_running()
        trial_id, request = self._queue.popleft()
        return trial_id, self._worker.run(request)

    def close(self, cancel: bool = False) -> None:
        self._queue.clear()


def run_in_worker(context: TrialContext, request: TrialRequest) -> list[TrialEvent]:
    """A whole trial in a worker process or Ray task; anything raised outside a pass fails this trial only."""
    try:
        worker = TrialWorker.for_context(context)
        events: list[TrialEvent] = list(worker.run(request))
    except Exception as exc:
        return [TrialFailed(f"{type(exc).__name__}: {exc}")]
    return events + worker.storage_notes()


# context id -> the context of a node-local Ray worker (its own cache, the reference model on its node)
_NODE_CONTEXTS: dict[str, TrialContext] = {}


def run_on_ray_node(
    context: TrialContext,
    request: TrialRequest,
    have: frozenset[str],
    models: list[Any],
    data: ShippedData | None = None,
) -> NodeResult:
    """A whole trial as a Ray task: in the engine's cache where this node sees it, else node-local
    (:mod:`olive.engine.transfer`). ``models``: Ray references to the start and reference models' packages,
    ``data``: to the workflow's data files, each fetched only by a node-local worker that does not hold it yet."""
    data = data or ShippedData()
    if sees_engine_cache(context.cache_root, context.cache_session):
        return NodeResult(run_in_worker(context, request))
    node = node_name()
    try:
        import ray

        local = _NODE_CONTEXTS.get(context.context_id)
        if local is None:
            store = CacheStore(node_cache_dir())
            store.ensure()
            reference_json = context.reference_model_json
            if models[1] is not None:
                path = model_on_node(store, context.reference_hash, lambda: ray.get(models[1]))
                reference_json = relocated(reference_json, path)
            local = inputs_on_node(store, context, data, ray.get)
            local = attrs.evolve(local, cache_root=str(store.root), reference_model_json=reference_json)
            _NODE_CONTEXTS.clear()
            _NODE_CONTEXTS[context.context_id] = local
        missing = unreadable_inputs(local.workflow)
        if missing:
            path, what = missing[0]
            why = f": {data.withheld[path]}" if path in data.withheld else ""
            error = (
                f"the Ray worker on node '{node}' cannot read '{path}' ({what}){why}; every node must see an input "
                "that is not shipped at the same path: copy it there, or keep it on a folder every node mounts"
            )
            return NodeResult([TrialFailed(error)], node_local=True, node=node)
        worker = TrialWorker.for_context(local)
        if models[0] is not None:
            path = model_on_node(worker.cache, request.start_hash, lambda: ray.get(models[0]))
            request = attrs.evolve(request, start_json=relocated(request.start_json, path))
        worker.cache.touched.clear()
        events = run_in_worker(local, request)
        entries = ship(worker.cache, worker.cache.touched, have)
        worker.cache.touched.clear()
        return NodeResult(events, node_local=True, entries=entries, node=node)
    except Exception as exc:
        return NodeResult(
            [TrialFailed(f"on Ray node '{node}': {type(exc).__name__}: {exc}")], node_local=True, node=node
        )


# --------------------------------------------------------------------------------------------------
# Local processes
# --------------------------------------------------------------------------------------------------
def _worker_main(conn: Any, context: TrialContext) -> None:
    # Ctrl-C reaches every process of the terminal's group; the engine decides, and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        # The pass's progress reports go to the engine's process ahead of the trial's events.
        with listening(conn.send):
            events = run_in_worker(context, message)
        conn.send(events)


class _Worker:
    def __init__(self, mp: Any, context: TrialContext):
        self.conn, child = mp.Pipe()
        self.process = mp.Process(target=_worker_main, args=(child, context), daemon=True)
        self.process.start()
        child.close()
        self.current: tuple[int, Any, int] | None = None  # (trial id, request, attempt)


class ProcessExecutor(TrialExecutor):
    """``{"type": "process", "max_workers": N}``: N local worker processes, each running one trial at a time."""

    def __init__(
        self,
        context: TrialContext,
        max_workers: int,
        max_pending: int | None = None,
        start_method: str | None = None,
        retries: int = 1,
    ):
        method = start_method or ("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        self._mp = multiprocessing.get_context(method)
        self.context = context
        self.max_workers = max(1, int(max_workers))
        self.capacity = max(self.max_workers, int(max_pending or 2 * self.max_workers))
        self.retries = retries
        self._workers: list[_Worker] = []
        self._backlog: deque[tuple[int, Any, int]] = deque()
        self._results: deque[tuple[int, list[TrialEvent]]] = deque()
        self._next_id = 0

    @property
    def worker_pids(self) -> list[int]:
        """The pids of the live workers (for tools and tests that watch them)."""
        return [w.process.pid for w in self._workers if w.process.is_alive()]

    def submit(self, request: TrialRequest) -> int:
        self._next_id += 1
        self._backlog.append((self._next_id, request, 0))
        self._dispatch()
        return self._next_id

    def _dispatch(self) -> None:
        for worker in [w for w in self._workers if w.current is None and not w.process.is_alive()]:
            self._worker_died(worker)
        while self._backlog:
            idle = next((w for w in self._workers if w.current is None), None)
            if idle is None:
                if len(self._workers) >= self.max_workers:
                    return
                idle = _Worker(self._mp, self.context)
                self._workers.append(idle)
            job = self._backlog.popleft()
            idle.current = job
            try:
                idle.conn.send(job[1])
            except (BrokenPipeError, OSError):
                self._worker_died(idle)

    def next_result(self) -> tuple[int, Iterable[TrialEvent]]:
        while not self._results:
            self._dispatch()
            busy = [w for w in self._workers if w.current is not None]
            if not busy:
                raise _no_trial_running()
            handles = [w.conn for w in busy] + [w.process.sentinel for w in busy]
            ready = set(wait(handles))
            for worker in busy:
                if worker.conn in ready or worker.conn.poll():
                    try:
                        result = worker.conn.recv()
                    except (EOFError, OSError):
                        self._worker_died(worker)
                        continue
                    if isinstance(result, PassProgress):
                        report_progress(result.done, result.total, result.what, result.owner)
                        continue
                    trial_id = worker.current[0]
                    worker.current = None
                    self._results.append((trial_id, result))
                elif worker.process.sentinel in ready:
                    self._worker_died(worker)
        return self._results.popleft()

    def _worker_died(self, worker: _Worker) -> None:
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        self._workers.remove(worker)
        worker.conn.close()
        if worker.current is None:
            return
        trial_id, request, attempt = worker.current
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        if attempt < self.retries:
            logger.warning("A trial's worker process died (%s); running the trial again in a new worker", how)
            self._backlog.appendleft((trial_id, request, attempt + 1))
        else:
            error = f"the worker process died ({how}) running this trial, {attempt + 1} times"
            self._results.append((trial_id, [TrialFailed(error)]))

    def close(self, cancel: bool = False) -> None:
        for worker in self._workers:
            if cancel and worker.current is not None:
                worker.process.terminate()
            else:
                with contextlib.suppress(BrokenPipeError, OSError):
                    worker.conn.send(None)
        for worker in self._workers:
            worker.process.join(timeout=30)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self._workers.clear()


# --------------------------------------------------------------------------------------------------
# Ray
# --------------------------------------------------------------------------------------------------
def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise WorkflowConfigError(RAY_MISSING) from exc
    return ray


class RayExecutor(TrialExecutor):
    """``{"type": "ray", "address": ..., "num_cpus_per_trial": k}``: each trial a Ray task.

    Connects to ``address`` (``"auto"``, ``"ray://host:port"``; ``None`` starts a local Ray instance) unless
    this process is already connected. A task whose worker dies is retried once by Ray.
    """

    def __init__(
        self,
        context: TrialContext,
        address: str | None = None,
        num_cpus_per_trial: float = 1,
        max_pending: int | None = None,
        retries: int = 1,
        store: CacheStore | None = None,
    ):
        ray = import_ray()
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"address": address, "log_to_driver": True}
            if address is None:
                kwargs["include_dashboard"] = False
            try:
                ray.init(**kwargs)
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError... for a bad address
                where = f"the Ray cluster at '{address}'" if address else "a local Ray instance"
                raise OliveError(
                    f"search_strategy.executor: could not start or reach {where} ({type(exc).__name__}: {exc}); "
                    'check the address ("auto" needs `ray start` on this machine first)'
                ) from exc
            self._started = True
        _pickle_user_scripts_by_value()
        self._context_ref = ray.put(context)
        # Trials are independent and alike: spread them over the nodes rather than filling the driver's node first
        # (Ray's default), so a cluster's nodes all work from the first trials on.
        self._remote = ray.remote(num_cpus=num_cpus_per_trial, max_retries=retries, scheduling_strategy="SPREAD")(
            run_on_ray_node
        )
        # The engine's cache, where node-local workers' results land.
        if store is None:
            store = CacheStore(context.cache_root)
            store.session_id = context.cache_session
        self._store = store
        #: keys of the entries the engine holds from this search's trials: workers do not ship them again
        self._have: set[str] = set()
        # A model's package is put in the object store once, fetched by each node-local node once.
        self._packages: dict[str, Any] = {}
        #: bytes of models put in the object store, and of entries shipped back through it
        self.bytes_out = 0
        self.bytes_back = 0
        self.entries_via_remote = 0
        self._reference_ref = self._package(context.reference_model_json, context.reference_hash)
        # The inputs are put once for the whole search; each node-local node fetches each one once.
        data_packages, withheld = package_inputs(context.workflow)
        self._data = ShippedData(
            {p.path: ray.put(p) for p in data_packages}, {p.path: p.sha256 for p in data_packages}, withheld
        )
        self.data_out = sum(p.size for p in data_packages)
        cpus = float(ray.cluster_resources().get("CPU", 1))
        slots = max(1, int(cpus // max(num_cpus_per_trial, 1e-9)))
        self.capacity = max(1, int(max_pending or 2 * slots))
        self._refs: dict[Any, int] = {}
        self._next_id = 0

    def _package(self, model_json: dict[str, Any], model_hash: str) -> Any:
        if model_hash not in self._packages:
            package = package_model(model_json, model_hash)
            self._packages[model_hash] = None if package is None else self._ray.put(package)
            self.bytes_out += package.size if package is not None else 0
        return self._packages[model_hash]

    def submit(self, request: TrialRequest) -> int:
        self._next_id += 1
        # In a list, the references stay references: only a worker that needs a model fetches it.
        models = [self._package(request.start_json, request.start_hash), self._reference_ref]
        ref = self._remote.remote(self._context_ref, request, frozenset(self._have), models, self._data)
        self._refs[ref] = self._next_id
        return self._next_id

    def _landed(self, result: NodeResult) -> list[TrialEvent]:
        """The events of a node-local trial, its entries written into the engine's cache first; a step whose
        entry did not arrive sound fails, naming why."""
        problems: dict[str, str] = {}
        for entry in result.entries:
            try:
                land(self._store, entry, model_from_record)
            except (ShippedCorrupt, OSError) as exc:
                problems[entry.key] = str(exc)
                continue
            self._have.add(entry.key)
            self.bytes_back += entry.size
            self.entries_via_remote += int(entry.via_remote)
        events: list[TrialEvent] = []
        for event in result.events:
            if isinstance(event, StepResult) and event.status is Status.OK and event.key is not None:
                record = self._store.get_run(event.key, model_from_record)
                if record is None:
                    why = problems.get(event.key, "the worker did not send it")
                    error = f"its result did not reach the engine's cache from Ray node '{result.node}': {why}"
                    event = attrs.evolve(event, status=Status.FAILED, record=None, error=error)
                else:
                    self._have.add(event.key)
                    event = attrs.evolve(event, record=record)
            events.append(event)
        return events

    def next_result(self) -> tuple[int, Iterable[TrialEvent]]:
        ray = self._ray
        if not self._refs:
            raise _no_trial_running()
        ready, _ = ray.wait(list(self._refs), num_returns=1)
        ref = ready[0]
        trial_id = self._refs.pop(ref)
        try:
            result = ray.get(ref)
            return trial_id, self._landed(result) if result.node_local else result.events
        except ray.exceptions.RayError as exc:
            # A worker that died twice (Ray retried once), or a task Ray could not run.
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return trial_id, [TrialFailed(f"{type(exc).__name__}: {message}")]

    def close(self, cancel: bool = False) -> None:
        RAY_TRANSFER.update(
            models_out=self.bytes_out,
            data_out=self.data_out,
            entries_back=self.bytes_back,
            entries_via_remote=self.entries_via_remote,
        )
        if cancel:
            for ref in self._refs:
                try:
                    self._ray.cancel(ref, force=True)
                except Exception as exc:  # a task that already finished cannot be cancelled; nothing to do
                    logger.debug("ray.cancel: %s", exc)
        self._refs.clear()
        if self._started:
            self._ray.shutdown()


def _pickle_user_scripts_by_value() -> None:
    # Functions from a workflow's user_script live in modules loaded from a file path, which a Ray worker
    # cannot import by name; ship their code instead.
    from ray import cloudpickle  # Ray serializes tasks with its own copy of cloudpickle

    for name, module in list(sys.modules.items()):
        if name.startswith("olive_user_script_") and module is not None:
            with contextlib.suppress(ValueError):
                cloudpickle.register_pickle_by_value(module)


# --------------------------------------------------------------------------------------------------
def create_executor(config: ExecutorConfig | None, context: TrialContext, local: TrialWorker) -> TrialExecutor:
    """The executor ``search_strategy.executor`` describes (None: sequential); ``local`` runs inline trials."""
    if config is None or config.type == "sequential":
        return InlineExecutor(local)
    if config.type == "process":
        return ProcessExecutor(
            context,
            config.max_workers or os.cpu_count() or 1,
            max_pending=config.max_pending,
            start_method=config.start_method,
        )
    if config.type == "ray":
        return RayExecutor(
            context,
            address=config.address,
            num_cpus_per_trial=config.num_cpus_per_trial,
            max_pending=config.max_pending,
            store=local.cache,
        )
    raise WorkflowConfigError(f"search_strategy.executor.type: unknown executor '{config.type}'")
