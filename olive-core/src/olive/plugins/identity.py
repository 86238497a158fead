"""Who a pass is: the name, distribution and version a registry offers its class under.

An identity belongs to a registry entry and travels with a run (``PassAlternative.identity``, sent to every
worker with the search), never on the class object: two registries that load one class each keep their own
answer, and a worker that imports the class by module name (Ray, ``spawn``) answers as the engine does.

``Pass.pass_name()``, ``distribution()`` and ``distribution_version()`` ask :func:`identity_of`, which
answers, in order:

1. the identity the calling code acts under (:func:`acting_as`): the engine sets it around every call into
   a pass it runs (config, validation, the run itself), and the registry while it checks a class it loads;
2. the process-wide registry (:func:`olive.plugins.registry.get_registry`), for a class one of its entries
   offers;
3. the class itself: its ``__name__``, no distribution.

A subclass of a registered pass is a different pass: it answers with its own name until it is registered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from types import MappingProxyType

import attrs


@attrs.frozen
class PassIdentity:
    """:param name: the entry-point name (the pass's name in workflows).
    :param distribution: the distribution offering it (``"local"`` for an in-process registration); None for
        a class no registry offers.
    :param version: that distribution's version.
    """

    name: str
    distribution: str | None = None
    version: str | None = None

    @classmethod
    def unregistered(cls, pass_class: type) -> PassIdentity:
        """The identity of a class no registry offers: its class name."""
        return cls(pass_class.__name__)


_ACTING: ContextVar[Mapping[type, PassIdentity]] = ContextVar("olive_pass_identity", default=MappingProxyType({}))
_process_wide_lookup: Callable[[type], PassIdentity | None] | None = None


@contextlib.contextmanager
def acting_as(pass_class: type, identity: PassIdentity) -> Iterator[None]:
    """Inside the block, ``pass_class`` answers with ``identity`` (in this thread or task only)."""
    token = _ACTING.set(MappingProxyType({**_ACTING.get(), pass_class: identity}))
    try:
        yield
    finally:
        _ACTING.reset(token)


def answer_with_process_wide_registry(lookup: Callable[[type], PassIdentity | None]) -> None:
    """Set how a class outside :func:`acting_as` finds its identity (the registry module sets it on import)."""
    global _process_wide_lookup
    _process_wide_lookup = lookup


def identity_of(pass_class: type) -> PassIdentity:
    """The identity ``pass_class`` answers with here and now (see the module docstring for the order)."""
    acting = _ACTING.get().get(pass_class)
    if acting is not None:
        return acting
    if _process_wide_lookup is not None:
        found = _process_wide_lookup(pass_class)
        if found is not None:
            return found
    return PassIdentity.unregistered(pass_class)
