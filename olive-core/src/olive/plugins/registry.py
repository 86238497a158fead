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

import difflib
from typing import TYPE_CHECKING, Any

import attrs

from olive.exceptions import AmbiguousPassError, PluginLoadError, UnknownPassError, closest_match_hint
from olive.plugins.discovery import PASSES_GROUP, PluginPolicy, describe_exception, normalize_name
from olive.plugins.identity import PassIdentity, acting_as, answer_with_process_wide_registry
from olive.plugins.install_hints import (
    MICROSOFT_OLIVE_ONLY,
    REPOSITORY_PASSES,
    distribution_of_pass,
    install_line,
    missing_pass_hint,
)
from olive.plugins.named_types import BLOCKED, LOCAL_DISTRIBUTION, NamedTypeRegistry, TypeEntry
from olive.plugins.process_wide import ProcessWide

if TYPE_CHECKING:
    from olive.passes.olive_pass import Pass

__all__ = ["PassEntry", "PassIdentity", "PassRegistry", "get_registry", "set_registry", "use_registry"]

# An error message lists at most this many pass names.
_MAX_LISTED = 20


@attrs.define(eq=False)
class PassEntry(TypeEntry):
    """One pass a distribution offers, and what happened when it was loaded (see :class:`TypeEntry`).

    :param summary: the first line of the class docstring; known once loaded.
    """

    summary: str | None = None

    @property
    def qualified_name(self) -> str:
        """``dist-name:PassName``, which picks this entry when two distributions offer one name."""
        return f"{self.distribution}:{self.name}"

    @property
    def pass_class(self) -> type[Pass] | None:
        """The loaded class, or None until the entry loads successfully."""
        return self.cls

    @property
    def identity(self) -> PassIdentity:
        """The name, distribution and version this entry offers its pass under."""
        return PassIdentity(self.name, self.distribution, self.version)

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "summary": self.summary}


class PassRegistry(NamedTypeRegistry[PassEntry]):
    """Passes from the ``olive.passes`` entry points plus any registered in-process.

    Names match without case where no entry spells them exactly, as Microsoft Olive's registry does
    (``orttransformersoptimization`` is ``OrtTransformersOptimization``), and may be qualified by their
    distribution, ``dist-name:PassName``.

    :param entry_points: scan installed distributions (False gives an empty registry for tests).
    :param policy: allow/block lists and strict mode; read from the environment when None.
    """

    entry_class = PassEntry

    def __init__(self, entry_points: bool = True, policy: PluginPolicy | None = None):
        super().__init__(
            PASSES_GROUP,
            "pass",
            error_type=UnknownPassError,
            entry_points=entry_points,
            policy=policy,
            base_name="olive.passes.Pass",
        )

    @property
    def base(self) -> type[Pass]:
        # The Pass contract loads only when a class is registered or loaded: listing passes does not need it.
        from olive.passes.olive_pass import Pass

        return Pass

    def register(  # type: ignore[override]
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
        if not (isinstance(pass_class, type) and issubclass(pass_class, self.base)):
            raise PluginLoadError(f"cannot register {pass_class!r}: it is not a subclass of {self.base_name}")
        return super().register(
            name or pass_class.__name__,
            pass_class,
            distribution or LOCAL_DISTRIBUTION,
            version or pass_class._version or "0",
        )

    # ----------------------------------------------------------------------------------------------
    # Using a pass
    # ----------------------------------------------------------------------------------------------
    def get_entry(self, name: str) -> PassEntry:
        """The entry ``name`` (``PassName`` or ``dist-name:PassName``) refers to, without loading it."""
        if ":" in name:
            return self._qualified_entry(name)
        return super().get_entry(name)

    def _qualified_entry(self, name: str) -> PassEntry:
        entries = self._all()
        dist, _, pass_name = name.partition(":")
        wanted = normalize_name(dist)
        offered = [e for e in entries if normalize_name(e.distribution) == wanted]
        matches = [e for e in offered if e.name == pass_name] or [
            e for e in offered if e.name.lower() == pass_name.lower()
        ]
        if matches:
            return matches[0]
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

    def ambiguity_error(self, name: str, usable: list[PassEntry]) -> AmbiguousPassError:
        offered_by = " and ".join(e.requirement for e in usable)
        choices = " or ".join(f"'{e.qualified_name}'" for e in usable)
        return AmbiguousPassError(
            f"pass '{name}' is offered by {offered_by}; name one as {choices}, or uninstall/disable one of them"
        )

    def unknown_reason(self, name: str) -> str:
        names = sorted({e.name for e in self._all() if e.status != BLOCKED})
        shown = ", ".join(names[:_MAX_LISTED]) + (f", ... ({len(names)} in all)" if len(names) > _MAX_LISTED else "")
        known = missing_pass_hint(name, names)
        if known is not None and distribution_of_pass(name):
            # One of this repository's passes whose distribution is not installed: say which, rather than "unknown".
            return f"pass '{name}' is not installed: {known}; installed passes: {shown or '(none)'}"
        if known is not None:
            # A Microsoft Olive pass that none here provides: said so, with the pass here that does the same kind
            # of work where there is one; never a pass whose name merely looks alike.
            return f"pass {known}"
        # A typo of a Microsoft Olive name is matched to it, not to a pass here whose name merely looks alike.
        close = difflib.get_close_matches(name, [*names, *MICROSOFT_OLIVE_ONLY], n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        if close and close[0] in MICROSOFT_OLIVE_ONLY:
            hint = f" (did you mean '{close[0]}', a Microsoft Olive pass that no distribution here provides?)"
        return (
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
        return self.get(name)

    def load_pass(self, name: str) -> PassEntry:
        """The entry of pass ``name``, its class loaded: its ``pass_class`` and its ``identity``.

        Raises as :meth:`get_pass_class` does.
        """
        return self.load_entry(name)

    def _check_loaded(self, entry: PassEntry, cls: type) -> tuple[BaseException, str] | None:
        from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR

        try:
            with acting_as(cls, entry.identity):
                cls.default_config(DEFAULT_CPU_ACCELERATOR)
        except Exception as exc:
            return exc, f"{entry.value}._default_config failed: {describe_exception(exc)}"
        doc = cls.__dict__.get("__doc__") or ""
        lines = [line.strip() for line in doc.strip().splitlines()]
        entry.summary = lines[0] if lines else None
        return None


# --------------------------------------------------------------------------------------------------
# The process-wide registry
# --------------------------------------------------------------------------------------------------
_registry: ProcessWide[PassRegistry] = ProcessWide(PassRegistry)
#: The process-wide registry, created (from the environment) on first use.
get_registry = _registry.get
#: Make a registry the process-wide one (None: rescan on next use); returns the previous one.
set_registry = _registry.set
#: Make a registry the process-wide one inside the ``with`` block.
use_registry = _registry.use


def _process_wide_identity(pass_class: type) -> PassIdentity | None:
    return get_registry().identity_of(pass_class)


answer_with_process_wide_registry(_process_wide_identity)
