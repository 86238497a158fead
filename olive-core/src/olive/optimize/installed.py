"""What this environment offers ``olive optimize``, read from the registries (entry-point metadata).

Listing passes and data containers imports none of them. Plugin execution providers are looked at only when
the user targets them: ``--provider all`` loads each installed provider's library to see whether it offers the
device (as ``olive eps`` does).
"""

from __future__ import annotations

from olive.data.containers import container_registry
from olive.exceptions import PluginLoadError, WorkflowConfigError
from olive.execution_providers.registry import adapter_for, adapter_name, ep_adapter_registry, list_providers
from olive.hardware.accelerator import closest_provider, installed_plugin_providers
from olive.measure.int8_kernel import int8_matmul_saturates
from olive.optimize.recipe import Installed
from olive.plugins.registry import get_registry

__all__ = ["ALL_PROVIDERS", "installed_now", "installed_plugin_providers", "left_out_by_all"]

#: ``--provider all``: every installed provider that offers the device
ALL_PROVIDERS = "all"
_CONVERTER = "OnnxConversion"


def installed_now(providers: tuple[str, ...], device: str) -> tuple[Installed, tuple[str, ...]]:
    """What is installed, and ``providers`` with ``all`` expanded (the CPU provider for a CPU, then every plugin
    provider that offers ``device`` here)."""
    entries = [e for e in get_registry().entries() if e.status not in ("blocked", "failed")]
    passes = frozenset(e.name for e in entries)
    converters = {}
    if _CONVERTER in passes:
        # The repository's converter takes Hugging Face and PyTorch models (its accepts_model_types).
        converters = {"HfModel": _CONVERTER, "PyTorchModel": _CONVERTER}
    containers = frozenset(e.name for e in container_registry().entries() if e.status != "blocked")
    expanded = list(providers)
    if ALL_PROVIDERS in expanded:
        if len(expanded) > 1:
            raise WorkflowConfigError(
                f"'{ALL_PROVIDERS}' searches every installed provider; give it alone or name the providers",
                owner="--provider",
            )
        expanded = _all_providers(device)
    searched: dict[str, tuple[str, ...]] = {}
    for name in expanded:
        try:
            adapter = adapter_for(name)
        except PluginLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner="--provider") from exc
        if adapter is None:
            _check_builtin_provider(name)
            continue
        options = tuple(o for o in (adapter.options or {}) if adapter.search_defaults(o))
        searched[name] = options
    return Installed(passes, containers, searched, converters, int8_matmul_saturates()), tuple(expanded)


def _check_builtin_provider(name: str) -> None:
    """A provider no adapter knows must be one of onnxruntime's own names (a misspelt one would otherwise be
    dropped from the targets and the search would go on without it)."""
    import onnxruntime as ort

    known = [*ort.get_all_providers(), *(e.name for e in ep_adapter_registry().entries())]
    if adapter_name(name) in known:
        return
    available = ", ".join(dict.fromkeys([*ort.get_available_providers(), *installed_plugin_providers()]))
    # onnxruntime's names are case-sensitive: the right spelling is named rather than guessed at.
    same = next((k for k in known if k.lower() == name.lower()), None)
    closest = None if same else closest_provider(name, known)
    hint = f" (did you mean '{closest}'?)" if closest else ""
    if same:
        hint = f" (names are case-sensitive: use '{same}')"
    raise WorkflowConfigError(
        f"'{name}' is not an execution provider{hint}; available here: {available} (olive eps lists them)",
        owner="--provider",
    )


def _all_providers(device: str) -> list[str]:
    names = ["CPUExecutionProvider"] if device == "cpu" else []
    for status in list_providers():
        if status.kind != "plugin" or status.status != "ok":
            continue
        if any(str(d.get("device", "")).lower() == device for d in status.devices):
            names.append(status.name)
    if not names:
        raise WorkflowConfigError(
            f"no installed execution provider offers a {device} device here (see olive eps)", owner="--provider"
        )
    return names


def left_out_by_all(device: str) -> list[str]:
    """The plugin providers ``--provider all`` leaves out on ``device``, each with why (not installed, failed to
    load, no such device here), so that a search over one provider never reads as a search over all of them."""
    left = []
    for status in list_providers():
        if status.kind != "plugin":
            continue
        if status.status != "ok":
            left.append(f"{status.name} ({status.status}{': ' + status.error if status.error else ''})")
        elif not any(str(d.get("device", "")).lower() == device for d in status.devices):
            offered = ", ".join(sorted({str(d.get("device", "?")).lower() for d in status.devices})) or "none"
            left.append(f"{status.name} (no {device} device here; it offers: {offered})")
    return left
