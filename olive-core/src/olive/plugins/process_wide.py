"""One process-wide object (the plugin manager, the pass registry, the registries of model types, data
containers and execution provider adapters), built on first use and replaceable.

A module offers its object through the holder's methods under names of its own::

    _registry = ProcessWide(PassRegistry)
    get_registry = _registry.get
    set_registry = _registry.set
    use_registry = _registry.use
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class ProcessWide(Generic[T]):
    """Holds the process-wide ``T``: :meth:`get` builds it with ``factory`` on first use; :meth:`set` and
    :meth:`use` swap it (tests and embedding applications use their own)."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._value: T | None = None
        # Reentrant: building one object may look up another process-wide object on the same thread.
        self._lock = threading.RLock()

    def get(self) -> T:
        """The object, built on first use."""
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value

    def current(self) -> T | None:
        """The object if one is built or set, without building it."""
        return self._value

    def set(self, value: T | None) -> T | None:
        """Make ``value`` the process-wide one (None: rebuild on next use); returns the previous one."""
        with self._lock:
            previous, self._value = self._value, value
        return previous

    @contextmanager
    def use(self, value: T) -> Iterator[T]:
        """Make ``value`` the process-wide one inside the ``with`` block."""
        previous = self.set(value)
        try:
            yield value
        finally:
            self.set(previous)
