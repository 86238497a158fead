"""A progress bar per search on stderr (``olive run`` shows one), silent otherwise."""

from __future__ import annotations

from typing import Any


class SearchProgress:
    """A rich progress bar per search when ``enabled``; every call does nothing otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None

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

    def advance(self, status: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1, status=status)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
