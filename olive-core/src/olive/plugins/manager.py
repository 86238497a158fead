"""The pluggy plugin manager: hook implementations from the ``olive.plugins`` entry-point group.

Each entry point loads in isolation: one that fails to import, or whose hook implementations do not
match :mod:`olive.plugins.hookspecs` (an unknown ``olive_`` hook, an unknown parameter), is recorded
against its distribution and left out; the rest keep working. ``OLIVE_LOAD_PLUGINS`` /
``OLIVE_DISABLE_PLUGINS`` apply as for passes, and ``OLIVE_STRICT_PLUGINS=1`` makes a failure fatal.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Collection
from typing import Any

import attrs
import pluggy

from olive.exceptions import PluginLoadError, closest_match_hint
from olive.plugins import hookspecs
from olive.plugins.discovery import (
    PLUGINS_GROUP,
    STRICT_PLUGINS_ENV,
    PluginPolicy,
    describe_exception,
    iter_entry_points,
)
from olive.plugins.process_wide import ProcessWide

logger = logging.getLogger(__name__)

__all__ = [
    "OlivePluginManager",
    "PluginRecord",
    "Registration",
    "collect_registrations",
    "get_plugin_manager",
    "get_plugin_metrics",
    "get_plugin_samplers",
    "new_plugin_manager",
    "plugin_registrations",
    "set_plugin_manager",
    "use_plugin_manager",
]


@attrs.define(eq=False)
class PluginRecord:
    """One hook plugin and what happened when it was loaded.

    :param name: the name it is registered under in the plugin manager (``dist:entry-point``).
    :param distribution: the distribution offering it.
    :param version: that distribution's version.
    :param value: the entry point's target (a module, or ``module:object``).
    :param status: ``"ok"``, ``"failed"`` or ``"blocked"``.
    :param error: why it failed or is blocked.
    :param hooks: the hooks it implements.
    """

    name: str
    distribution: str
    version: str
    value: str
    status: str = "ok"
    error: str | None = None
    hooks: list[str] = attrs.field(factory=list)

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


class OlivePluginManager(pluggy.PluginManager):
    """A :class:`pluggy.PluginManager` for project ``olive`` that knows which distribution gave what.

    Functions named ``olive_*`` are hook implementations even without the ``@hookimpl`` marker, so a
    misspelt hook name is reported instead of silently ignored.
    """

    def __init__(self, policy: PluginPolicy | None = None) -> None:
        super().__init__("olive")
        self.add_hookspecs(hookspecs)
        self.policy = policy or PluginPolicy()
        self.records: list[PluginRecord] = []
        # (hook, name) of registrations left out because the name is built in: each is warned about once.
        self.shadowed: dict[tuple[str, str], str] = {}

    @property
    def policy_strict(self) -> bool:
        """Whether a plugin failure must stop the program (``OLIVE_STRICT_PLUGINS=1``)."""
        return self.policy.strict

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("olive_"):
            method = getattr(plugin, name, None)
            if inspect.isroutine(method):
                return {}
        return opts

    def register_checked(self, plugin: Any, name: str) -> list[str]:
        """Register ``plugin`` and validate its hooks against the specs; on any problem nothing stays
        registered and :class:`PluginLoadError` says which hook is wrong.

        Returns the names of the hooks it implements.
        """
        try:
            self.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            detail = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            raise PluginLoadError(f"plugin {name} does not match Olive's hook specs: {detail}") from exc
        except ValueError as exc:  # already registered under another name, or the name is taken
            raise PluginLoadError(f"plugin {name}: {exc}") from exc
        hooks = []
        unknown = []
        for caller in self.get_hookcallers(plugin) or []:
            impls = [impl for impl in caller.get_hookimpls() if impl.plugin is plugin]
            if not caller.has_spec() and not all(impl.opts.get("optionalhook") for impl in impls):
                unknown.append(caller.name)
            hooks.append(caller.name)
        if unknown:
            self.unregister(plugin)
            known = sorted(n for n in dir(hookspecs) if n.startswith("olive_"))
            hints = "; ".join(f"'{n}'{closest_match_hint(n, known)}" for n in sorted(unknown))
            raise PluginLoadError(
                f"plugin {name} implements unknown hook(s) {hints}; Olive's hooks are: {', '.join(known)}"
            )
        return sorted(hooks)

    def failures(self) -> list[PluginRecord]:
        return [r for r in self.records if r.status == "failed"]


def _load_entry_points(pm: OlivePluginManager, policy: PluginPolicy) -> None:
    for found in iter_entry_points(PLUGINS_GROUP):
        record = PluginRecord(f"{found.distribution}:{found.name}", found.distribution, found.version, found.value)
        pm.records.append(record)
        reason = policy.blocked_reason(found.distribution)
        if reason:
            record.status, record.error = "blocked", reason
            continue
        where = (
            f'{found.distribution}=={found.version} (entry point {found.name} = "{found.value}" '
            f"in group {PLUGINS_GROUP})"
        )
        try:
            plugin = found.entry_point.load()
        except (Exception, SystemExit) as exc:
            record.status, record.error = "failed", f"importing {found.value} failed: {describe_exception(exc)}"
            _report(policy, f"cannot load plugin {where}: {record.error}", exc)
            continue
        try:
            record.hooks = pm.register_checked(plugin, record.name)
        except PluginLoadError as exc:
            record.status, record.error = "failed", str(exc)
            _report(policy, f"cannot load plugin {where}: {exc}", exc.__cause__ or exc)


def _report(policy: PluginPolicy, message: str, exc: BaseException) -> None:
    if policy.strict:
        raise PluginLoadError(f"{message} ({STRICT_PLUGINS_ENV} is set)") from exc
    logger.warning("%s; continuing without it", message)


def new_plugin_manager(entry_points: bool = True, policy: PluginPolicy | None = None) -> OlivePluginManager:
    """A plugin manager with Olive's hook specs and (unless ``entry_points`` is False) the installed
    ``olive.plugins`` entry points loaded."""
    pm = OlivePluginManager(policy if policy is not None else PluginPolicy.from_env())
    if entry_points:
        _load_entry_points(pm, pm.policy)
    # register_checked already validated each plugin on its own; this is pluggy's own global check.
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:  # pragma: no cover - would be a bug in register_checked
        raise PluginLoadError(f"plugin hooks do not match Olive's hook specs: {exc}") from exc
    return pm


_manager: ProcessWide[OlivePluginManager] = ProcessWide(new_plugin_manager)
#: The process-wide plugin manager, built on first use.
get_plugin_manager = _manager.get
#: Make a manager the process-wide one (None: rebuild on next use); returns the previous one.
set_plugin_manager = _manager.set
#: Make a manager the process-wide one inside the ``with`` block.
use_plugin_manager = _manager.use


@attrs.frozen
class Registration:
    """Something a plugin registered through a ``register`` callback, and which plugin it was."""

    name: str
    obj: Any
    plugin: str


def collect_registrations(hook_name: str, pm: OlivePluginManager | None = None) -> dict[str, Registration]:
    """Call a ``register``-style hook (``olive_register_metrics``, ``olive_register_samplers``) once per
    plugin, tagging what each registers with the plugin's name.

    Raises :class:`PluginLoadError` when a plugin's hook raises or two plugins register one name.
    """
    pm = pm or get_plugin_manager()
    caller = getattr(pm.hook, hook_name)
    found: dict[str, Registration] = {}
    for impl in caller.get_hookimpls():
        plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)

        def register(name: str, obj: Any, _plugin: str = plugin_name) -> None:
            if not isinstance(name, str) or not name:
                raise PluginLoadError(f"plugin {_plugin}: {hook_name} registered {obj!r} without a name")
            if name in found:
                raise PluginLoadError(
                    f"{hook_name}: '{name}' is registered by both {found[name].plugin} and {_plugin}; "
                    "disable one with OLIVE_DISABLE_PLUGINS"
                )
            found[name] = Registration(name, obj, _plugin)

        try:
            impl.function(**{arg: register for arg in impl.argnames})
        except PluginLoadError:
            raise
        except Exception as exc:
            raise PluginLoadError(
                f"plugin {plugin_name}: {hook_name} raised {describe_exception(exc)}; "
                "disable it with OLIVE_DISABLE_PLUGINS"
            ) from exc
    return found


def plugin_registrations(
    hook_name: str, builtin: Collection[str], what: str, pm: OlivePluginManager | None = None
) -> dict[str, Registration]:
    """What plugins register through ``hook_name``, less the names in ``builtin``.

    Olive's one clash policy for registered names (metric types, samplers): a built-in name wins. A plugin
    cannot change what a workflow that names ``latency`` or ``tpe`` measures or runs, and a plugin that
    takes a built-in name does not stop workflows that never use its other names. The clash is logged as a
    warning once per plugin manager, naming the plugin and what to do.
    """
    pm = pm or get_plugin_manager()
    found = collect_registrations(hook_name, pm)
    for name in sorted(set(found) & set(builtin)):
        plugin = found.pop(name).plugin
        if (hook_name, name) not in pm.shadowed:
            pm.shadowed[(hook_name, name)] = plugin
            logger.warning(
                "plugin %s registers %s '%s', which is built in; keeping the built-in one (rename it in the plugin "
                "to use it)",
                plugin,
                what,
                name,
            )
    return found


def get_plugin_metrics(pm: OlivePluginManager | None = None) -> dict[str, Callable[..., dict[str, float]]]:
    """``{metric type: evaluate}`` from every plugin's :func:`~olive.plugins.hookspecs.olive_register_metrics`."""
    return {name: reg.obj for name, reg in collect_registrations("olive_register_metrics", pm).items()}


def get_plugin_samplers(pm: OlivePluginManager | None = None) -> dict[str, Callable[..., Any]]:
    """``{sampler name: factory}`` from every plugin's :func:`~olive.plugins.hookspecs.olive_register_samplers`."""
    return {name: reg.obj for name, reg in collect_registrations("olive_register_samplers", pm).items()}
