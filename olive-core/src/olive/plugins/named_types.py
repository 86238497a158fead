"""Classes offered by name through one entry-point group: input model types (``olive.models``) and data
containers (``olive.data_containers``).

A group maps a type name (``HfModel``, ``TextDataContainer``) to a class, one entry point each::

    [project.entry-points."olive.models"]
    HfModel = "olive_passes_torch.hf_model:HfModelHandler"

Listing reads metadata only; a class is imported the first time its name is used, inside its own
try/except, so a distribution that fails to import (or whose object is not the kind of class the group
wants) breaks that one name, with a :class:`~olive.exceptions.PluginLoadError` naming the distribution,
its version, the entry point and the original exception (chained). Names match exactly, then ignoring
case (Olive's model types do). Two distributions offering one name make it an error naming both; the
``OLIVE_LOAD_PLUGINS`` / ``OLIVE_DISABLE_PLUGINS`` lists apply as for passes.

A name no installed distribution offers is an error that says which distribution offers it (and the
line that installs it, from :mod:`olive.plugins.install_hints`) when the group knows, or plainly that none
here does.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Collection
from typing import Any

import attrs

from olive.exceptions import OliveError, PluginLoadError
from olive.plugins.discovery import PluginPolicy, describe_exception, iter_entry_points, normalize_name

__all__ = ["NamedTypeRegistry", "TypeEntry"]

NOT_LOADED = "not loaded"
OK = "ok"
FAILED = "failed"
BLOCKED = "blocked"

#: Distribution recorded for classes registered in-process without one.
LOCAL_DISTRIBUTION = "local"


@attrs.define(eq=False)
class TypeEntry:
    """One named class a distribution offers, and what happened when it was loaded.

    :param name: the entry-point name, which is the type's name in workflows.
    :param distribution: the distribution offering it, as its metadata spells it.
    :param version: that distribution's version.
    :param value: the entry point's target, ``"pkg.module:Class"``.
    :param status: ``"not loaded"``, ``"ok"``, ``"failed"`` or ``"blocked"``.
    :param error: why it failed or is blocked.
    """

    name: str
    distribution: str
    version: str
    value: str
    status: str = NOT_LOADED
    error: str | None = None
    _entry_point: Any = attrs.field(default=None, repr=False, alias="entry_point")
    _cls: type | None = attrs.field(default=None, repr=False, alias="cls")
    _exception: BaseException | None = attrs.field(default=None, repr=False, alias="exception")

    @property
    def requirement(self) -> str:
        """``dist==version``."""
        return f"{self.distribution}=={self.version}"

    @property
    def cls(self) -> type | None:
        """The loaded class, or None until the entry loads successfully."""
        return self._cls


class NamedTypeRegistry:
    """The classes of one entry-point group, loaded on first use.

    :param group: the entry-point group (``"olive.models"``).
    :param kind: what the classes are, for messages (``"model type"``).
    :param base: every class must derive from it (None: any class).
    :param known_elsewhere: type names users may write that no installed distribution may offer (those of
        this repository's distributions and Microsoft Olive's); matched ignoring case.
    :param missing_hint: what to say about one of ``known_elsewhere`` that nothing installed offers (which
        distribution offers it and the install line; see :mod:`olive.plugins.install_hints`).
    :param error_type: the :class:`OliveError` subclass raised for a name nothing offers.
    :param entry_points: scan installed distributions (False: only what is registered in-process).
    :param policy: allow/block lists; read from the environment when None.
    :param exempt: distributions the allow/block lists never apply to (olive-core's own entries).
    :param fallbacks: distributions whose entries give way to another distribution's entry of the same name
        (olive-core's built-in adapters yield to one a provider's own package ships).
    """

    def __init__(
        self,
        group: str,
        kind: str,
        base: type | None = None,
        known_elsewhere: Collection[str] = (),
        missing_hint: Callable[[str], str | None] | None = None,
        error_type: type[OliveError] = OliveError,
        entry_points: bool = True,
        policy: PluginPolicy | None = None,
        exempt: Collection[str] = (),
        fallbacks: Collection[str] = (),
    ):
        self.group = group
        self.kind = kind
        self.base = base
        self.known_elsewhere = tuple(known_elsewhere)
        self.missing_hint = missing_hint
        self.error_type = error_type
        self.policy = policy if policy is not None else PluginPolicy.from_env()
        self._exempt = {normalize_name(name) for name in exempt}
        self._fallbacks = {normalize_name(name) for name in fallbacks}
        self._scan = entry_points
        self._entries: list[TypeEntry] | None = None
        self._lock = threading.RLock()

    # ----------------------------------------------------------------------------------------------
    def entries(self) -> list[TypeEntry]:
        """Every entry, sorted by name then distribution; imports nothing."""
        return sorted(self._all(), key=lambda e: (e.name.lower(), normalize_name(e.distribution)))

    def names(self) -> list[str]:
        """The names that may be used (blocked ones left out), sorted."""
        return sorted({e.name for e in self._all() if e.status != BLOCKED}, key=str.lower)

    def _all(self) -> list[TypeEntry]:
        with self._lock:
            if self._entries is None:
                self._entries = []
                if self._scan:
                    for found in iter_entry_points(self.group):
                        entry = TypeEntry(
                            found.name, found.distribution, found.version, found.value, entry_point=found.entry_point
                        )
                        exempt = normalize_name(found.distribution) in self._exempt
                        reason = None if exempt else self.policy.blocked_reason(found.distribution)
                        if reason:
                            entry.status, entry.error = BLOCKED, reason
                        self._entries.append(entry)
            return self._entries

    def register(self, name: str, cls: type, distribution: str = LOCAL_DISTRIBUTION, version: str = "0") -> TypeEntry:
        """Offer ``cls`` as ``name`` from this process (tests, embedders); replaces the same name of the
        same distribution."""
        entry = TypeEntry(name, distribution, version, f"{cls.__module__}:{cls.__qualname__}")
        with self._lock:
            entries = self._all()
            entries[:] = [
                e
                for e in entries
                if not (e.name == name and normalize_name(e.distribution) == normalize_name(distribution))
            ]
            entries.append(entry)
            self._finish(entry, cls)
        if entry.status == FAILED:
            raise self._load_error(entry)
        return entry

    # ----------------------------------------------------------------------------------------------
    def find(self, name: str) -> TypeEntry | None:
        """The entry ``name`` refers to (exact name first, then ignoring case), or None; loads nothing.

        Raises the registry's error type when two distributions offer the name.
        """
        entries = self._all()
        matches = [e for e in entries if e.name == name] or [e for e in entries if e.name.lower() == name.lower()]
        usable = sorted((e for e in matches if e.status != BLOCKED), key=lambda e: normalize_name(e.distribution))
        preferred = [e for e in usable if normalize_name(e.distribution) not in self._fallbacks]
        if preferred:
            usable = preferred
        if len({normalize_name(e.distribution) for e in usable}) > 1:
            raise self.error_type(
                f"{self.kind} '{name}' is offered by {' and '.join(e.requirement for e in usable)}; "
                "uninstall or disable one of them (OLIVE_DISABLE_PLUGINS)"
            )
        if usable:
            return usable[0]
        return matches[0] if matches else None

    def get(self, name: str) -> type:
        """The class of type ``name``, loading it on first use.

        Raises the registry's error type for a name nothing installed offers (naming the distribution that
        would), and :class:`PluginLoadError` for one whose distribution is broken or blocked.
        """
        entry = self.find(name)
        if entry is None:
            raise self.error_type(self.unknown_reason(name))
        return self.load(entry)

    def unknown_reason(self, name: str) -> str:
        """Why ``name`` cannot be used: which distribution offers it and how to install it, or that none does."""
        offered = ", ".join(self.names()) or "(none)"
        known = {k.lower(): k for k in self.known_elsewhere}
        hint = self.missing_hint(known[name.lower()]) if name.lower() in known and self.missing_hint else None
        if hint:
            return f"{hint}. Available now: {offered}"
        # Compared without case, as names are matched.
        lowered = {n.lower(): n for n in [*self.names(), *self.known_elsewhere]}
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
        suggestion = f" (did you mean '{lowered[close[0]]}'?)" if close else ""
        return f"unknown {self.kind} '{name}'{suggestion}; available: {offered}"

    def load(self, entry: TypeEntry) -> type:
        """Import ``entry``'s class (once) and check it; raises :class:`PluginLoadError` on failure."""
        with self._lock:
            if entry.status == NOT_LOADED:
                try:
                    obj = entry._entry_point.load()
                except (Exception, SystemExit) as exc:
                    entry.status, entry.error, entry._exception = (
                        FAILED,
                        f"importing {entry.value} failed: {describe_exception(exc)}",
                        exc,
                    )
                else:
                    self._finish(entry, obj)
        if entry.status == OK and entry.cls is not None:
            return entry.cls
        if entry.status == BLOCKED:
            raise PluginLoadError(
                f"{self.kind} '{entry.name}' from {entry.requirement} is not available: {entry.error}"
            )
        raise self._load_error(entry)

    def _finish(self, entry: TypeEntry, obj: Any) -> None:
        if not isinstance(obj, type) or (self.base is not None and not issubclass(obj, self.base)):
            what = f"class {obj.__module__}.{obj.__qualname__}" if isinstance(obj, type) else type(obj).__name__
            wanted = f"a subclass of {self.base.__module__}.{self.base.__qualname__}" if self.base else "a class"
            exc = TypeError(f"{entry.value} is a {what}, not {wanted}")
            entry.status, entry.error, entry._exception = FAILED, str(exc), exc
            return
        entry._cls = obj
        entry.status, entry.error = OK, None

    def _load_error(self, entry: TypeEntry) -> PluginLoadError:
        error = PluginLoadError(
            f"cannot load {self.kind} '{entry.name}' from {entry.requirement} (entry point {entry.name} = "
            f'"{entry.value}" in group {self.group}): {entry.error}. Fix or reinstall {entry.distribution}, or '
            f"disable it with OLIVE_DISABLE_PLUGINS={entry.distribution}"
        )
        error.__cause__ = entry._exception
        return error
