"""A running pass's progress, shown by whoever displays the run (``olive run``'s progress bar), else dropped.

A pass calls :meth:`olive.passes.Pass.report_progress` (or :func:`report_progress`) from its loop::

    for i, layer in enumerate(layers):
        self.report_progress(i + 1, len(layers), "layers")

Where nothing listens (``olive run-pass``, tests, a run without a bar) a call does nothing and costs a function
call. A display listens with :func:`listening`; in a ``process`` executor's worker the events travel to the engine's
process over the worker's pipe, so the bar shows them wherever the pass runs. Ray workers report nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import attrs


@attrs.frozen
class PassProgress:
    """``done`` of ``total`` (None: not known) units of ``what`` (e.g. ``"layers"``), reported by pass ``owner``."""

    done: int
    total: int | None
    what: str = ""
    owner: str = ""


_listener: Callable[[PassProgress], None] | None = None
_last: tuple[float, PassProgress | None] = (0.0, None)

#: Reports closer together than this (seconds) are dropped, except the last of a loop (``done == total``).
MIN_INTERVAL_S = 0.05


def report_progress(done: int, total: int | None = None, what: str = "", owner: str = "") -> None:
    """Tell the run's display that ``done`` of ``total`` units of ``what`` are finished; a no-op where none listens."""
    global _last
    listener = _listener
    if listener is None:
        return
    event = PassProgress(int(done), None if total is None else int(total), what, owner)
    now = time.monotonic()
    last_time, last = _last
    if event == last or (now - last_time < MIN_INTERVAL_S and event.done != event.total and last is not None):
        return
    _last = (now, event)
    # A display's failure never fails the pass.
    with contextlib.suppress(Exception):
        listener(event)


@contextlib.contextmanager
def listening(listener: Callable[[PassProgress], None]) -> Iterator[None]:
    """Send the reports made inside this block to ``listener`` (restoring the one before it afterwards)."""
    global _listener, _last
    previous = _listener
    _listener = listener
    _last = (0.0, None)
    try:
        yield
    finally:
        _listener = previous


def set_listener(listener: Callable[[PassProgress], None] | None) -> Callable[[PassProgress], None] | None:
    """Set (or clear, with None) the listener outside a ``with`` block; returns the one it replaced."""
    global _listener, _last
    previous, _listener = _listener, listener
    _last = (0.0, None)
    return previous


def listener() -> Callable[[PassProgress], None] | None:
    """The listener now set, if any."""
    return _listener
