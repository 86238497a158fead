"""The pass registry: every pass offered through the ``olive.passes`` entry-point group.

Listing reads metadata only; a pass's module is imported the first time the pass is used. Each load is
isolated: a distribution that fails to import, whose object is not a :class:`~olive.passes.Pass`, or
whose ``_default_config`` raises, is recorded with its error and every other pass keeps working. Using
the broken pass raises :class:`~olive.exceptions.PluginLoadError` naming the distribution, its version,
the entry point and the original exception (chained).

Identity: an entry's name, distribution and version are the pass's :class:`~olive.plugins.identity.PassIdentity`.
They stay on the entry (:meth:`PassRegistry.identity_of` finds the entry of a class); nothing is written onto
the class, so two registries that load one class do not overwrite each other's answer.

Names: a pass is asked for by its entry-point name (``"QuantizeDynamic"``) or qualified by its
distribution (``"olive-passes-quant:QuantizeDynamic"``); two distributions offering one name make the
bare name an :class:`~olive.exceptions.AmbiguousPassError` naming both as ``dist==version``.
"""

from __future__ import annotations

import sys
import threading
from contextlib import AbstractContextManager, suppress
from typing import TYPE_CHECKING, Any

import attrs

from olive.exceptions import AmbiguousPassError, PluginLoadError, UnknownPassError, closest_match_hint
from olive.plugins.discovery import (
    PASSES_GROUP,
    STRICT_PLUGINS_ENV,
    PluginPolicy,
    describe_exception,
    iter_entry_points,
    normalize_name,
    warn_unknown_policy_names,
)
from olive.plugins.identity import PassIdentity, acting_as, answer_with_process_wide_registry
from olive.plugins.install_hints import REPOSITORY_PASSES, distribution_of_pass, install_line, missing_pass_hint
from olive.plugins.process_wide import ProcessWide

if TYPE_CHECKING:
    from olive.passes.olive_pass import Pass

__all__ = ["PassEntry", "PassIdentity", "PassRegistry", "get_registry", "set_registry", "use_registry"]

NOT_LOADED = "not loaded"
OK = "ok"
FAILED = "failed"
BLOCKED = "blocked"

# An error message lists at most this many pass names.
_MAX_LISTED = 20

#: Distribution recorded for passes registered in-process without one.
LOCAL_DISTRIBUTION = "local"


@attrs.define(eq=False)
class PassEntry:
    """One pass a distribution offers, and what happened when it was loaded.

    :param name: the entry-point name, which is the pass's name in workflows.
    :param distribution: the distribution offering it, as its metadata spells it.
    :param version: that distribution's version.
    :param value: the entry point's target, ``"pkg.module:Class"``.
    :param status: ``"not loaded"``, ``"ok"``, ``"failed"`` or ``"blocked"``.
    :param error: why it failed or is blocked.
    :param summary: the first line of the class docstring; known once loaded.
    """

    name: str
    distribution: str
    version: str
    value: str
    status: str = NOT_LOADED
    error: str | None = None
    summary: str | None = None
    _entry_point: Any = attrs.field(default=None, repr=False, alias="entry_point")
    _pass_class: type[Pass] | None = attrs.field(default=None, repr=False, alias="pass_class")
    _exception: BaseException | None = attrs.field(default=None, repr=False, alias="exception")

    @property
    def qualified_name(self) -> str:
        """``dist-name:PassName``, which picks this entry when two distributions offer one name."""
        return f"{self.distribution}:{self.name}"

    @property
    def requirement(self) -> str:
        """``dist==version``."""
        return f"{self.distribution}=={self.version}"

    @property
    def installed(self) -> bool:
        """True for an entry point of an installed distribution, False for an in-process registration."""
        return self._entry_point is not None

    @property
    def pass_class(self) -> type[Pass] | None:
        """The loaded class, or None until the entry loads successfully."""
        return self._pass_class

    @property
    def exception(self) -> BaseException | None:
        """The original exception of a failed load."""
        return self._exception

    @property
    def identity(self) -> PassIdentity:
        """The name, distribution and version this entry offers its pass under."""
        return PassIdentity(self.name, self.distribution, self.version)

    def offers(self, pass_class: type) -> bool:
        """Whether this entry's object is ``pass_class``: its loaded class, or, before it loads, the object its
        target names in a module that is already imported (nothing is imported to answer)."""
        if self._pass_class is not None:
            return self._pass_class is pass_class
        if self.status != NOT_LOADED:
            return False
        module_name, _, attribute = self.value.partition(":")
        found: Any = sys.modules.get(module_name)
        for part in attribute.split(".") if attribute else ():
            found = vars(found).get(part) if found is not None and hasattr(found, "__dict__") else None
        return found is pass_class

    def to_json(self) -> dict[str, Any]:
        """The listing's fields as plain JSON."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "entry_point": self.value,
            "status": self.status,
            "error": self.error,
            "summary": self.summary,
        }


class PassRegistry:
    """Passes from the ``olive.passes`` entry points plus any registered in-process.

    :param entry_points: scan installed distributions (False gives an empty registry for tests).
    :param policy: allow/block lists and strict mode; read from the environment when None.
    """

    def __init__(self, entry_points: bool = True, policy: PluginPolicy | None = None):
        self.policy = policy if policy is not None else PluginPolicy.from_env()
        self._scan_entry_points = entry_points
        self._entries: list[PassEntry] | None = None
        self._strict_checked = False
        self._lock = threading.RLock()

    # ----------------------------------------------------------------------------------------------
    # Listing (metadata only)
    # ----------------------------------------------------------------------------------------------
    def entries(self) -> list[PassEntry]:
        """Every pass entry, sorted by name then distribution; imports no pass module."""
        return sorted(self._all(), key=lambda e: (e.name.lower(), normalize_name(e.distribution)))

    def distributions(self) -> list[tuple[str, str]]:
        """``(distribution, version)`` of every distribution offering passes, sorted."""
        found = {(e.distribution, e.version) for e in self._all() if e.installed}
        return sorted(found, key=lambda item: normalize_name(item[0]))

    def failures(self) -> list[PassEntry]:
        """Entries whose load failed so far."""
        return [e for e in self._all() if e.status == FAILED]

    def _all(self) -> list[PassEntry]:
        with self._lock:
            if self._entries is None:
                self._entries = []
                if self._scan_entry_points:
                    warn_unknown_policy_names(self.policy)
                    for found in iter_entry_points(PASSES_GROUP):
                        ep = found.entry_point
                        self.add_entry(
                            PassEntry(found.name, found.distribution, found.version, found.value, entry_point=ep)
                        )
            return self._entries

    def add_entry(self, entry: PassEntry) -> PassEntry:
        """Add an entry as metadata describes it (its ``entry_point`` loads the class); the allow/block
        lists apply. Scanning uses this; tests and embedders may too."""
        with self._lock:
            reason = self.policy.blocked_reason(entry.distribution)
            if reason and entry.status == NOT_LOADED:
                entry.status, entry.error = BLOCKED, reason
            self._all().append(entry)
        return entry

    # ----------------------------------------------------------------------------------------------
    # In-process registration
    # ----------------------------------------------------------------------------------------------
    def register(
        self,
        pass_class: type[Pass],
        name: str | None = None,
        distribution: str | None = None,
        version: str | None = None,
    ) -> PassEntry:
        """Register a pass class defined in this process (tests, notebooks) under ``name``.

        Registering a name again for the same distribution replaces the earlier class; the same name
        from another distribution makes the bare name ambiguous, as for installed distributions.
        """
        # The Pass contract loads only when a class is registered or loaded: listing passes does not need it.
        from olive.passes.olive_pass import Pass

        if not (isinstance(pass_class, type) and issubclass(pass_class, Pass)):
            raise PluginLoadError(f"cannot register {pass_class!r}: it is not a subclass of olive.passes.Pass")
        name = name or pass_class.__name__
        distribution = distribution or LOCAL_DISTRIBUTION
        version = version or pass_class._version or "0"
        value = f"{pass_class.__module__}:{pass_class.__qualname__}"
        entry = PassEntry(name, distribution, version, value)
        with self._lock:
            entries = self._all()
            entries[:] = [
                e
                for e in entries
                if not (e.name == name and normalize_name(e.distribution) == normalize_name(distribution))
            ]
            entries.append(entry)
            self._finish_load(entry, pass_class)
        if entry.status == FAILED:
            raise self._load_error(entry)
        return entry

    # ----------------------------------------------------------------------------------------------
    # Using a pass
    # ----------------------------------------------------------------------------------------------
    def get_entry(self, name: str) -> PassEntry:
        """The entry ``name`` (``PassName`` or ``dist-name:PassName``) refers to, without loading it."""
        entries = self._all()
        if ":" in name:
            dist, _, pass_name = name.partition(":")
            wanted = normalize_name(dist)
            offered = [e for e in entries if normalize_name(e.distribution) == wanted]
            matches = [e for e in offered if e.name == pass_name]
            if not matches:
                if not offered:
                    dists = sorted({e.distribution for e in entries})
                    ours = wanted in REPOSITORY_PASSES
                    install = f"; install it with: {install_line(wanted)}" if ours else ""
                    raise UnknownPassError(
                        f"unknown pass '{name}': no installed distribution '{dist}' offers passes"
                        f"{'' if ours else closest_match_hint(dist, dists)}{install}; installed pass distributions: "
                        f"{', '.join(dists) or '(none)'}"
                    )
                raise UnknownPassError(
                    f"unknown pass '{name}': {offered[0].requirement} offers no pass '{pass_name}'"
                    f"{closest_match_hint(pass_name, [e.name for e in offered])}; it offers: "
                    f"{', '.join(sorted(e.name for e in offered))}"
                )
            return matches[0]

        matches = [e for e in entries if e.name == name]
        usable = sorted((e for e in matches if e.status != BLOCKED), key=lambda e: normalize_name(e.distribution))
        if len(usable) > 1:
            offered_by = " and ".join(e.requirement for e in usable)
            choices = " or ".join(f"'{e.qualified_name}'" for e in usable)
            raise AmbiguousPassError(
                f"pass '{name}' is offered by {offered_by}; name one as {choices}, or uninstall/disable one of them"
            )
        if usable:
            return usable[0]
        if matches:
            return matches[0]
        names = sorted({e.name for e in entries if e.status != BLOCKED})
        shown = ", ".join(names[:_MAX_LISTED]) + (f", ... ({len(names)} in all)" if len(names) > _MAX_LISTED else "")
        known = missing_pass_hint(name)
        if known is not None:
            # One of this repository's passes whose distribution is not installed, or a Microsoft Olive pass
            # that none here provides: say which, rather than "unknown".
            what = f"'{name}' is not installed: {known}" if distribution_of_pass(name) else known
            raise UnknownPassError(f"pass {what}; installed passes: {shown or '(none)'}")
        hint = closest_match_hint(name, names)
        if not hint:
            folded = [n for n in names if n.lower() == name.lower()]
            hint = f" (did you mean '{folded[0]}'?)" if folded else ""
        raise UnknownPassError(
            f"unknown pass '{name}'{hint}; installed passes: {shown or '(none)'}. "
            "Install the distribution that offers it, or run `olive passes` to list them"
        )

    def identities_of(self, pass_class: type) -> list[PassIdentity]:
        """Every identity this registry offers ``pass_class`` under, the latest registered first."""
        with self._lock:
            entries = list(self._all())
        return [entry.identity for entry in reversed(entries) if entry.offers(pass_class)]

    def identity_of(self, pass_class: type) -> PassIdentity | None:
        """The identity of the entry that offers ``pass_class`` (the latest registered, when several do), or None."""
        found = self.identities_of(pass_class)
        return found[0] if found else None

    def get_pass_class(self, name: str) -> type[Pass]:
        """Load and return the class of pass ``name`` (``PassName`` or ``dist-name:PassName``).

        Raises :class:`UnknownPassError` (with close matches), :class:`AmbiguousPassError` (naming both
        ``dist==version``) or :class:`PluginLoadError` (naming distribution, version and entry point,
        chained to the original exception).
        """
        return self.load(self.load_pass(name))

    def load_pass(self, name: str) -> PassEntry:
        """The entry of pass ``name``, its class loaded: its ``pass_class`` and its ``identity``.

        Raises as :meth:`get_pass_class` does.
        """
        if self.policy.strict:
            self.check_strict()
        entry = self.get_entry(name)
        self.load(entry)
        return entry

    def load(self, entry: PassEntry) -> type[Pass]:
        """Import ``entry``'s class (once) and check it; raises :class:`PluginLoadError` on failure."""
        with self._lock:
            if entry.status == NOT_LOADED:
                self._import(entry)
        if entry.status == OK and entry.pass_class is not None:
            return entry.pass_class
        if entry.status == BLOCKED:
            raise PluginLoadError(f"pass '{entry.name}' from {entry.requirement} is not available: {entry.error}")
        raise self._load_error(entry)

    def load_all(self) -> list[PassEntry]:
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
            details = "\n".join(f"  - {_describe_entry(e)}: {e.error}" for e in failed)
            raise PluginLoadError(
                f"{len(failed)} pass plugin(s) failed to load and {STRICT_PLUGINS_ENV} is set:\n{details}"
            ) from failed[0].exception

    # ----------------------------------------------------------------------------------------------
    def _import(self, entry: PassEntry) -> None:
        try:
            obj = entry._entry_point.load()
        except (Exception, SystemExit) as exc:
            self._fail(entry, exc, f"importing {entry.value} failed: {describe_exception(exc)}")
            return
        self._finish_load(entry, obj)

    def _finish_load(self, entry: PassEntry, obj: Any) -> None:
        from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR
        from olive.passes.olive_pass import Pass

        if not (isinstance(obj, type) and issubclass(obj, Pass)):
            kind = f"class {obj.__module__}.{obj.__qualname__}" if isinstance(obj, type) else type(obj).__name__
            exc = TypeError(f"{entry.value} is a {kind}, not a subclass of olive.passes.Pass")
            self._fail(entry, exc, str(exc))
            return
        try:
            with acting_as(obj, entry.identity):
                obj.default_config(DEFAULT_CPU_ACCELERATOR)
        except Exception as exc:
            self._fail(entry, exc, f"{entry.value}._default_config failed: {describe_exception(exc)}")
            return
        doc = obj.__dict__.get("__doc__") or ""
        lines = [line.strip() for line in doc.strip().splitlines()]
        entry.summary = lines[0] if lines else None
        entry._pass_class = obj
        entry.status, entry.error = OK, None

    @staticmethod
    def _fail(entry: PassEntry, exc: BaseException, message: str) -> None:
        entry.status, entry.error, entry._exception = FAILED, message, exc

    @staticmethod
    def _load_error(entry: PassEntry) -> PluginLoadError:
        error = PluginLoadError(
            f"cannot load pass '{entry.name}' from {_describe_entry(entry)}: {entry.error}. "
            f"Fix or reinstall {entry.distribution}, or disable it with "
            f"OLIVE_DISABLE_PLUGINS={entry.distribution}"
        )
        error.__cause__ = entry.exception
        return error


def _describe_entry(entry: PassEntry) -> str:
    return f'{entry.requirement} (entry point {entry.name} = "{entry.value}" in group {PASSES_GROUP})'


# --------------------------------------------------------------------------------------------------
# The process-wide registry
# --------------------------------------------------------------------------------------------------
_registry: ProcessWide[PassRegistry] = ProcessWide(PassRegistry)


def get_registry() -> PassRegistry:
    """The process-wide registry, created (from the environment) on first use."""
    return _registry.get()


def set_registry(registry: PassRegistry | None) -> PassRegistry | None:
    """Make ``registry`` the process-wide one (None: rescan on next use); returns the previous one."""
    return _registry.set(registry)


def use_registry(registry: PassRegistry) -> AbstractContextManager[PassRegistry]:
    """Make ``registry`` the process-wide one inside the ``with`` block."""
    return _registry.use(registry)


def _process_wide_identity(pass_class: type) -> PassIdentity | None:
    return get_registry().identity_of(pass_class)


answer_with_process_wide_registry(_process_wide_identity)
