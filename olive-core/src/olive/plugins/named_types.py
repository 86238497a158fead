"""Classes offered by name through one entry-point group: passes (``olive.passes``, see
:mod:`olive.plugins.registry`), input model types (``olive.models``), data containers
(``olive.data_containers``) and execution provider adapters (``olive.execution_providers``).

A group maps a name (``HfModel``, ``TextDataContainer``) to a class, one entry point each::

    [project.entry-points."olive.models"]
    HfModel = "olive_passes_torch.hf_model:HfModelHandler"

Listing reads metadata only; a class is imported the first time its name is used, inside its own
try/except, so a distribution that fails to import (or whose object is not the kind of class the group
wants) breaks that one name, with a :class:`~olive.exceptions.PluginLoadError` naming the distribution,
its version, the entry point and the original exception (chained). Two distributions offering one name
make it an error naming both as ``dist==version``. The ``OLIVE_LOAD_PLUGINS`` / ``OLIVE_DISABLE_PLUGINS``
lists decide which distributions may load (olive-core's own entries are exempt where a group says so), and
with ``OLIVE_STRICT_PLUGINS`` set the first name used loads the whole group and any failure is fatal.

A name no installed distribution offers is an error that says which distribution offers it (and the
line that installs it, from :mod:`olive.plugins.install_hints`) when the group knows, or plainly that none
here does.
"""

from __future__ import annotations

import difflib
import sys
import threading
from collections.abc import Callable, Collection
from contextlib import suppress
from typing import Any, Generic, TypeVar

import attrs

from olive.exceptions import OliveError, PluginLoadError
from olive.plugins.discovery import (
    STRICT_PLUGINS_ENV,
    PluginPolicy,
    describe_exception,
    iter_entry_points,
    normalize_name,
    warn_unknown_policy_names,
)

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

    :param name: the entry-point name, which is the class's name in workflows.
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
    def installed(self) -> bool:
        """True for an entry point of an installed distribution, False for an in-process registration."""
        return self._entry_point is not None

    @property
    def cls(self) -> type | None:
        """The loaded class, or None until the entry loads successfully."""
        return self._cls

    @property
    def exception(self) -> BaseException | None:
        """The original exception of a failed load."""
        return self._exception

    def offers(self, cls: type) -> bool:
        """Whether this entry's object is ``cls``: its loaded class, or, before it loads, the object its
        target names in a module that is already imported (nothing is imported to answer)."""
        if self._cls is not None:
            return self._cls is cls
        if self.status != NOT_LOADED:
            return False
        module_name, _, attribute = self.value.partition(":")
        found: Any = sys.modules.get(module_name)
        for part in attribute.split(".") if attribute else ():
            found = vars(found).get(part) if found is not None and hasattr(found, "__dict__") else None
        return found is cls

    def to_json(self) -> dict[str, Any]:
        """The listing's fields as plain JSON."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "entry_point": self.value,
            "status": self.status,
            "error": self.error,
        }


EntryT = TypeVar("EntryT", bound=TypeEntry)


class NamedTypeRegistry(Generic[EntryT]):
    """The classes of one entry-point group, loaded on first use.

    :param group: the entry-point group (``"olive.models"``).
    :param kind: what the classes are, for messages (``"model type"``).
    :param base: every class must derive from it (None: any class).
    :param known_elsewhere: names users may write that no installed distribution may offer (those of
        this repository's distributions and Microsoft Olive's); matched ignoring case.
    :param missing_hint: what to say about one of ``known_elsewhere`` that nothing installed offers (which
        distribution offers it and the install line; see :mod:`olive.plugins.install_hints`).
    :param error_type: the :class:`OliveError` subclass raised for a name nothing offers, or that two
        distributions offer.
    :param entry_points: scan installed distributions (False: only what is registered in-process).
    :param policy: allow/block lists and strict mode; read from the environment when None.
    :param exempt: distributions the allow/block lists never apply to (olive-core's own entries).
    :param fallbacks: distributions whose entries give way to another distribution's entry of the same name
        (olive-core's built-in adapters yield to one a provider's own package ships).
    :param base_name: how messages spell ``base`` (default: its module and qualified name).
    :param fold_case: a name no entry spells exactly matches one that differs only in case.
    """

    #: The entry class scanning creates; a subclass registry may offer a richer one.
    entry_class: type[TypeEntry] = TypeEntry

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
        *,
        base_name: str | None = None,
        fold_case: bool = True,
    ):
        self.group = group
        self.kind = kind
        self._base = base
        self.base_name = base_name or (f"{base.__module__}.{base.__qualname__}" if base is not None else None)
        self.known_elsewhere = tuple(known_elsewhere)
        self.missing_hint = missing_hint
        self.error_type = error_type
        self.policy = policy if policy is not None else PluginPolicy.from_env()
        self.fold_case = fold_case
        self._exempt = {normalize_name(name) for name in exempt}
        self._fallbacks = {normalize_name(name) for name in fallbacks}
        self._scan = entry_points
        self._entries: list[EntryT] | None = None
        self._strict_checked = False
        self._lock = threading.RLock()

    @property
    def base(self) -> type | None:
        """The class every loaded class must derive from (None: any class)."""
        return self._base

    # ----------------------------------------------------------------------------------------------
    # Listing (metadata only)
    # ----------------------------------------------------------------------------------------------
    def entries(self) -> list[EntryT]:
        """Every entry, sorted by name then distribution; imports nothing."""
        return sorted(self._all(), key=lambda e: (e.name.lower(), normalize_name(e.distribution)))

    def names(self) -> list[str]:
        """The names that may be used (blocked ones left out), sorted."""
        return sorted({e.name for e in self._all() if e.status != BLOCKED}, key=str.lower)

    def distributions(self) -> list[tuple[str, str]]:
        """``(distribution, version)`` of every installed distribution offering entries, sorted."""
        found = {(e.distribution, e.version) for e in self._all() if e.installed}
        return sorted(found, key=lambda item: normalize_name(item[0]))

    def failures(self) -> list[EntryT]:
        """Entries whose load failed so far."""
        return [e for e in self._all() if e.status == FAILED]

    def _all(self) -> list[EntryT]:
        with self._lock:
            if self._entries is None:
                self._entries = []
                if self._scan:
                    warn_unknown_policy_names(self.policy)
                    for found in iter_entry_points(self.group):
                        entry = self.entry_class(
                            found.name, found.distribution, found.version, found.value, entry_point=found.entry_point
                        )
                        self.add_entry(entry)
            return self._entries

    def add_entry(self, entry: EntryT) -> EntryT:
        """Add an entry as metadata describes it (its ``entry_point`` loads the class); the allow/block
        lists apply unless its distribution is exempt. Scanning uses this; tests and embedders may too."""
        with self._lock:
            exempt = normalize_name(entry.distribution) in self._exempt
            reason = None if exempt else self.policy.blocked_reason(entry.distribution)
            if reason and entry.status == NOT_LOADED:
                entry.status, entry.error = BLOCKED, reason
            self._all().append(entry)
        return entry

    # ----------------------------------------------------------------------------------------------
    # In-process registration
    # ----------------------------------------------------------------------------------------------
    def register(self, name: str, cls: type, distribution: str = LOCAL_DISTRIBUTION, version: str = "0") -> EntryT:
        """Offer ``cls`` as ``name`` from this process (tests, embedders).

        Registering a name again for the same distribution replaces the earlier class; the same name from
        another distribution makes it ambiguous, as for installed distributions.
        """
        entry = self.entry_class(name, distribution, version, f"{cls.__module__}:{cls.__qualname__}")
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

    def register_unless_listed(self, name: str, cls: type, distribution: str) -> None:
        """Register ``cls`` as ``name`` of ``distribution`` when its metadata does not list it already
        (olive-core run from a source tree whose metadata predates the entry point)."""
        wanted = normalize_name(distribution)
        if not any(e.name == name and normalize_name(e.distribution) == wanted for e in self._all()):
            self.register(name, cls, distribution=distribution)

    # ----------------------------------------------------------------------------------------------
    # Finding and using a class
    # ----------------------------------------------------------------------------------------------
    def find(self, name: str) -> EntryT | None:
        """The entry ``name`` refers to (exact name first, then, with ``fold_case``, ignoring case), or None;
        loads nothing.

        Raises :meth:`ambiguity_error` when two distributions offer the name.
        """
        entries = self._all()
        matches = [e for e in entries if e.name == name]
        if not matches and self.fold_case:
            matches = [e for e in entries if e.name.lower() == name.lower()]
        usable = sorted((e for e in matches if e.status != BLOCKED), key=lambda e: normalize_name(e.distribution))
        preferred = [e for e in usable if normalize_name(e.distribution) not in self._fallbacks]
        if preferred:
            usable = preferred
        if len({normalize_name(e.distribution) for e in usable}) > 1:
            raise self.ambiguity_error(name, usable)
        if usable:
            return usable[0]
        return matches[0] if matches else None

    def get_entry(self, name: str) -> EntryT:
        """The entry ``name`` refers to, without loading it; raises the registry's error type when nothing
        offers it (saying which distribution would) or two distributions do."""
        entry = self.find(name)
        if entry is None:
            raise self.error_type(self.unknown_reason(name))
        return entry

    def get(self, name: str) -> type:
        """The class of ``name``, loading it on first use.

        Raises as :meth:`get_entry` does, and :class:`PluginLoadError` for a name whose distribution is broken
        or blocked (and, in strict mode, when any entry of the group fails to load).
        """
        return self.load(self.load_entry(name))

    def load_entry(self, name: str) -> EntryT:
        """The entry ``name`` refers to, its class loaded; raises as :meth:`get` does."""
        self._check_strict_if_set()
        entry = self.get_entry(name)
        self.load(entry)
        return entry

    def find_class(self, name: str) -> type | None:
        """The class of ``name``, loading it on first use; None when nothing installed offers it.

        Raises as :meth:`get` does for a name that is offered.
        """
        self._check_strict_if_set()
        entry = self.find(name)
        return None if entry is None else self.load(entry)

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

    def ambiguity_error(self, name: str, usable: list[EntryT]) -> OliveError:
        """The error for ``name`` offered by each of ``usable`` (two distributions or more)."""
        return self.error_type(
            f"{self.kind} '{name}' is offered by {' and '.join(e.requirement for e in usable)}; "
            "uninstall or disable one of them (OLIVE_DISABLE_PLUGINS)"
        )

    # ----------------------------------------------------------------------------------------------
    # Loading
    # ----------------------------------------------------------------------------------------------
    def load(self, entry: EntryT) -> type:
        """Import ``entry``'s class (once) and check it; raises :class:`PluginLoadError` on failure."""
        with self._lock:
            if entry.status == NOT_LOADED:
                self._import(entry)
        if entry.status == OK and entry.cls is not None:
            return entry.cls
        if entry.status == BLOCKED:
            raise PluginLoadError(
                f"{self.kind} '{entry.name}' from {entry.requirement} is not available: {entry.error}"
            )
        raise self._load_error(entry)

    def load_all(self) -> list[EntryT]:
        """Load every entry that may load; returns the ones that failed."""
        for entry in self._all():
            if entry.status == NOT_LOADED:
                with suppress(PluginLoadError):
                    self.load(entry)
        return self.failures()

    def check_strict(self) -> None:
        """Load everything once and raise :class:`PluginLoadError` listing every failure (strict mode)."""
        with self._lock:
            if self._strict_checked:
                failed = self.failures()
            else:
                failed = self.load_all()
                self._strict_checked = True
        if failed:
            details = "\n".join(f"  - {self._describe(e)}: {e.error}" for e in failed)
            raise PluginLoadError(
                f"{len(failed)} {self.kind} plugin(s) failed to load and {STRICT_PLUGINS_ENV} is set:\n{details}"
            ) from failed[0].exception

    def _check_strict_if_set(self) -> None:
        if self.policy.strict:
            self.check_strict()

    def _import(self, entry: EntryT) -> None:
        try:
            obj = entry._entry_point.load()
        except (Exception, SystemExit) as exc:
            self._fail(entry, exc, f"importing {entry.value} failed: {describe_exception(exc)}")
            return
        self._finish(entry, obj)

    def _finish(self, entry: EntryT, obj: Any) -> None:
        base = self.base
        if not isinstance(obj, type) or (base is not None and not issubclass(obj, base)):
            what = f"class {obj.__module__}.{obj.__qualname__}" if isinstance(obj, type) else type(obj).__name__
            wanted = f"a subclass of {self.base_name}" if base is not None else "a class"
            exc = TypeError(f"{entry.value} is a {what}, not {wanted}")
            self._fail(entry, exc, str(exc))
            return
        problem = self._check_loaded(entry, obj)
        if problem is not None:
            self._fail(entry, *problem)
            return
        entry._cls = obj
        entry.status, entry.error = OK, None

    def _check_loaded(self, entry: EntryT, cls: type) -> tuple[BaseException, str] | None:
        """A group's checks of a class beyond its base: ``(exception, message)`` when it is unusable.

        A registry may also record on ``entry`` what it learns from the class."""
        return None

    @staticmethod
    def _fail(entry: EntryT, exc: BaseException, message: str) -> None:
        entry.status, entry.error, entry._exception = FAILED, message, exc

    def _describe(self, entry: EntryT) -> str:
        return f'{entry.requirement} (entry point {entry.name} = "{entry.value}" in group {self.group})'

    def _load_error(self, entry: EntryT) -> PluginLoadError:
        error = PluginLoadError(
            f"cannot load {self.kind} '{entry.name}' from {self._describe(entry)}: {entry.error}. "
            f"Fix or reinstall {entry.distribution}, or disable it with "
            f"OLIVE_DISABLE_PLUGINS={entry.distribution}"
        )
        error.__cause__ = entry.exception
        return error
