"""A progress bar per search on stderr (``olive run`` shows one), silent otherwise.

While a trial runs, the passes' own reports (:mod:`olive.passes.progress`) show as a second line under the
search's bar: ``  ModelBuilder: layers ━━━━━━ 12/24``.
"""

from __future__ import annotations

from typing import Any

from olive.passes import progress as pass_progress
from olive.passes.progress import PassProgress


class SearchProgress:
    """A rich progress bar per search when ``enabled``; every call does nothing otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None
        self._pass_task: Any = None
        self._previous: Any = None
        self._listening = False

    def start(self, description: str, total: int | None) -> None:
        if not self.enabled:
            return
        # rich is imported only when a bar is shown.
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.stop()
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, status="")
        self._previous = pass_progress.set_listener(self.pass_reported)
        self._listening = True

    def stage(self, description: str) -> None:
        """Work before the search whose length is not known (converting the input model, measuring the reference):
        a spinner with the time elapsed, so a minute of it never reads as a hang. The search's bar replaces it."""
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.stop()
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(description, total=None, status="")
        self._previous = pass_progress.set_listener(self.pass_reported)
        self._listening = True

    def pass_reported(self, event: PassProgress) -> None:
        """A running pass's report: its line under the search's bar (added at its first report)."""
        if self._progress is not None:
            description = f"  {event.owner}: {event.what}" if event.owner else f"  {event.what}"
            if self._pass_task is None:
                self._pass_task = self._progress.add_task(description, total=event.total, status="")
            self._progress.update(self._pass_task, completed=event.done, total=event.total, description=description)
        if self._previous is not None:
            self._previous(event)

    def advance(self, status: str) -> None:
        if self._progress is not None:
            self._drop_pass_line()
            self._progress.update(self._task, advance=1, status=status)

    def _drop_pass_line(self) -> None:
        if self._pass_task is not None:
            self._progress.remove_task(self._pass_task)
            self._pass_task = None

    def stop(self) -> None:
        if self._listening:
            pass_progress.set_listener(self._previous)
            self._previous = None
            self._listening = False
        if self._progress is not None:
            self._drop_pass_line()
            self._progress.stop()
            self._progress = None
