"""The search limits of a workflow: ``max_samples`` per search, ``max_iter`` and ``max_time`` for the whole run."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from olive.config import SearchStrategyConfig


class SearchLimits:
    """Counts the points a workflow ran and says when a limit leaves no room for another.

    Pruned points are not counted. ``stopped_by`` names the limit (``max_iter=N``, ``max_time=Ns``) that ended
    a search early, for the run's reason when no model came out.
    """

    def __init__(self, strategy: SearchStrategyConfig | None):
        self.strategy = strategy
        self.sample_count = 0
        self.stopped_by: str | None = None
        self._start = time.monotonic()

    def total(self, size: int) -> int:
        """How many of a search's ``size`` points the limits let run (for a progress bar)."""
        strategy = self.strategy
        if strategy is not None and strategy.max_samples:
            size = min(size, strategy.max_samples)
        if strategy is not None and strategy.max_iter is not None:
            size = min(size, max(strategy.max_iter - self.sample_count, 0))
        return size

    def count(self) -> None:
        """One more point ran (or failed)."""
        self.sample_count += 1

    def room(self, samples: int, in_flight: int) -> bool:
        """Whether one more point may start in a search that ran ``samples`` while ``in_flight`` others (each may
        count) are unfinished."""
        hit = self._hit(samples, in_flight)
        if hit is not None and hit.startswith("max_time"):
            self.stopped_by = hit
        return hit is None

    def note_end(self, samples: int) -> None:
        """A search ended with points left: record which workflow limit ended it."""
        hit = self._hit(samples, 0)
        if hit is not None and hit != "max_samples":
            self.stopped_by = hit

    def _hit(self, samples: int, in_flight: int) -> str | None:
        strategy = self.strategy
        if strategy is None:
            return None
        if strategy.max_samples and samples + in_flight >= strategy.max_samples:
            return "max_samples"
        if strategy.max_iter is not None and self.sample_count + in_flight >= strategy.max_iter:
            return f"max_iter={strategy.max_iter}"
        if strategy.max_time is not None and time.monotonic() - self._start >= strategy.max_time:
            return f"max_time={strategy.max_time:g}s"
        return None
