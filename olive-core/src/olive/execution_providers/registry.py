"""Finding plugin execution providers, registering their libraries with onnxruntime, and picking a device.

Adapters come from the ``olive.execution_providers`` entry-point group (one per provider name, see
:mod:`olive.execution_providers.adapter`); olive-core registers those of :mod:`olive.execution_providers.known`
itself and they give way to an adapter of the same name from any other distribution. Each load is isolated:
an adapter that fails to import, or whose library does not load, is recorded with its error and named
wherever it is used; every other provider keeps working.

onnxruntime keeps registered libraries for the whole process, so :func:`register` does it once per process
and only when asked: by a session on that provider, by a workflow naming it, or by ``olive eps``. Nothing here
runs at ``olive --help`` or ``olive passes``. Worker processes (a process pool, Ray) register on their first
session, through the same function.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from olive.exceptions import ExecutionProviderError, PluginLoadError
from olive.execution_providers.adapter import EPUnavailableError, ExecutionProviderAdapter, device_type
from olive.execution_providers.known import OpenVINOAdapter, WebGpuAdapter
from olive.plugins.named_types import NamedTypeRegistry
from olive.plugins.process_wide import ProcessWide

if TYPE_CHECKING:
    import onnxruntime

__all__ = [
    "EP_GROUP",
    "ProviderStatus",
    "adapter_for",
    "ep_adapter_registry",
    "list_providers",
    "plugin_devices",
    "quiet_onnxruntime",
    "register",
    "select_device",
]

EP_GROUP = "olive.execution_providers"
_CORE = "olive-core"
# olive-core's own adapters, also registered in-process when its metadata predates the entry points.
BUILTIN_ADAPTERS: dict[str, type[ExecutionProviderAdapter]] = {
    "OpenVINOExecutionProvider": OpenVINOAdapter,
    "WebGpuExecutionProvider": WebGpuAdapter,
}
MIN_ONNXRUNTIME = "1.23"


def new_ep_adapter_registry(entry_points: bool = True) -> NamedTypeRegistry:
    """A fresh registry of execution provider adapters (``entry_points=False``: olive-core's own only)."""
    registry = NamedTypeRegistry(
        EP_GROUP,
        "execution provider adapter",
        base=ExecutionProviderAdapter,
        error_type=ExecutionProviderError,
        entry_points=entry_points,
        exempt=(_CORE,),
        fallbacks=(_CORE,),
    )
    for name, cls in BUILTIN_ADAPTERS.items():
        registry.register_unless_listed(name, cls, _CORE)
    return registry


_registry: ProcessWide[NamedTypeRegistry] = ProcessWide(new_ep_adapter_registry)
#: The process-wide registry of adapters, scanned on first use.
ep_adapter_registry = _registry.get
#: Make a registry the process-wide one inside the ``with`` block (tests, embedders).
use_ep_adapter_registry = _registry.use


def adapter_name(ep_name: str) -> str:
    """The adapter name of a provider name: ``OpenVINOExecutionProvider.AUTO`` is OpenVINO's."""
    return ep_name.split(".", 1)[0]


def adapter_for(ep_name: str) -> ExecutionProviderAdapter | None:
    """The adapter of a plugin provider (None: no adapter, a provider built into onnxruntime or unknown).

    :raises PluginLoadError: the adapter's distribution is broken (named, with the original error).
    """
    cls = ep_adapter_registry().find_class(adapter_name(ep_name))
    return None if cls is None else cls()


# ------------------------------------------------------------------------------------------------ onnxruntime
_lock = threading.RLock()
# adapter name -> the library path registered in this process, or the error that stopped it
_registered: dict[str, str | EPUnavailableError] = {}


@contextmanager
def quiet_onnxruntime() -> Iterator[None]:
    """onnxruntime's own log (a plugin's compile errors, printed to stderr) off inside the block: the caller
    raises one error of its own instead."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    try:
        yield
    finally:
        ort.set_default_logger_severity(2)  # onnxruntime's default: warnings


def register(adapter: ExecutionProviderAdapter) -> str:
    """Register ``adapter``'s library with onnxruntime (once per process); returns its path.

    :raises EPUnavailableError: the package is not installed, onnxruntime is too old for plugin libraries,
        or the library does not load (a missing system library, an onnxruntime it was not built for).
    """
    import onnxruntime as ort

    name = adapter.ep_name
    with _lock:
        done = _registered.get(name)
        if isinstance(done, EPUnavailableError):
            raise done
        if done is not None:
            return done
        try:
            path = _register(ort, adapter)
        except EPUnavailableError as exc:
            _registered[name] = exc
            raise
        _registered[name] = path
        return path


def _register(ort: Any, adapter: ExecutionProviderAdapter) -> str:
    if not hasattr(ort, "register_execution_provider_library"):
        raise EPUnavailableError(
            f"{adapter.ep_name} is a plugin execution provider, which needs onnxruntime >= {MIN_ONNXRUNTIME}; "
            f"the installed onnxruntime is {ort.__version__}: pip install 'onnxruntime>={MIN_ONNXRUNTIME}'"
        )
    path = adapter.library_path()
    # The library may be registered already by the embedding application: its devices say so.
    if any(dict(d.ep_metadata).get("library_path") == path for d in ort.get_ep_devices()):
        return path
    try:
        with quiet_onnxruntime():
            ort.register_execution_provider_library(f"olive-{adapter.ep_name}", path)
    except Exception as exc:
        message = " ".join(str(exc).split())
        raise EPUnavailableError(
            f"{adapter.ep_name} (from {adapter.package} {adapter.package_version() or ''}) does not load into "
            f"onnxruntime {ort.__version__}: {message}; reinstall {adapter.package} in a version built for this "
            "onnxruntime, or install the system library it names"
        ) from exc
    return path


def plugin_devices(adapter: ExecutionProviderAdapter) -> list[onnxruntime.OrtEpDevice]:
    """The devices a registered plugin provider offers (registers it first)."""
    import onnxruntime as ort

    register(adapter)
    names = set(adapter.ep_names()) | {adapter.ep_name}
    return [d for d in ort.get_ep_devices() if d.ep_name in names or adapter_name(d.ep_name) in names]


def select_device(adapter: ExecutionProviderAdapter, ep_name: str, device: str | None) -> onnxruntime.OrtEpDevice:
    """The device of provider ``ep_name`` of kind ``device`` (``cpu``, ``gpu``, ``npu``; None: its first).

    :raises EPUnavailableError: the provider offers no such device here; the message lists those it offers.
    """
    devices = plugin_devices(adapter)
    matching = [d for d in devices if d.ep_name == ep_name and (device is None or device_type(d) == device.lower())]
    if matching:
        return matching[0]
    # The adapter is found whatever the case; onnxruntime's provider names are not.
    spelled = next((d.ep_name for d in devices if d.ep_name != ep_name and d.ep_name.lower() == ep_name.lower()), None)
    if spelled is not None:
        raise EPUnavailableError(f"'{ep_name}': provider names are case-sensitive; use '{spelled}'")
    offered = ", ".join(f"{d.ep_name} on {device_type(d)}" for d in devices) or "none"
    what = f"{device} device" if device else "device"
    hint = f" ({adapter.ep_name} {adapter.needs})" if not devices and adapter.needs else ""
    raise EPUnavailableError(f"{ep_name} offers no {what} on this machine{hint}; devices it offers: {offered}")


# ------------------------------------------------------------------------------------------------ listing
@attrs.define
class ProviderStatus:
    """One execution provider as ``olive eps`` shows it.

    :param kind: ``"built-in"`` (part of the installed onnxruntime) or ``"plugin"``.
    :param status: ``"ok"``, ``"not installed"``, ``"no device"`` or ``"failed"``.
    """

    name: str
    kind: str
    status: str
    package: str | None = None
    version: str | None = None
    adapter: str | None = None
    library: str | None = None
    devices: list[dict[str, Any]] = attrs.Factory(list)
    options: list[str] = attrs.Factory(list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def list_providers() -> list[ProviderStatus]:
    """onnxruntime's built-in providers, then every plugin provider an adapter knows (registering each)."""
    import onnxruntime as ort

    statuses: list[ProviderStatus] = []
    plugin_names: set[str] = set()
    registry = ep_adapter_registry()
    for entry in registry.entries():
        if entry.status == "blocked":
            statuses.append(
                ProviderStatus(entry.name, "plugin", "failed", adapter=entry.requirement, error=entry.error)
            )
            continue
        try:
            adapter = registry.load(entry)()
        except PluginLoadError as exc:
            statuses.append(ProviderStatus(entry.name, "plugin", "failed", adapter=entry.requirement, error=exc.reason))
            plugin_names.add(entry.name)
            continue
        statuses.append(_plugin_status(adapter, entry.requirement))
        plugin_names.update(d["ep_name"] for d in statuses[-1].devices)
        plugin_names.add(adapter.ep_name)
    builtin = [
        ProviderStatus(
            name,
            "built-in",
            "ok",
            package="onnxruntime",
            version=ort.__version__,
        )
        for name in ort.get_available_providers()
        if name not in plugin_names and adapter_name(name) not in plugin_names
    ]
    return builtin + statuses


def _plugin_status(adapter: ExecutionProviderAdapter, requirement: str) -> ProviderStatus:
    status = ProviderStatus(
        adapter.ep_name,
        "plugin",
        "ok",
        package=adapter.package,
        version=adapter.package_version(),
        adapter=requirement,
        options=sorted(adapter.options or {}),
    )
    if status.version is None and adapter.module:
        import importlib.util

        try:
            found = importlib.util.find_spec(adapter.module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            status.status, status.error = "not installed", f"pip install {adapter.package}"
            return status
    try:
        status.library = register(adapter)
        devices = plugin_devices(adapter)
    except EPUnavailableError as exc:
        status.status, status.error = "failed", exc.reason
        return status
    status.devices = [adapter.describe_device(d) for d in devices]
    if not devices:
        status.status = "no device"
        status.error = "the library loaded but found no device it can run on here" + (
            f"; it {adapter.needs}" if adapter.needs else ""
        )
    return status
