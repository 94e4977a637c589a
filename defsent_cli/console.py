"""The stderr console and progress bars (stdout stays for data).

Library code may show a progress bar here (on stderr, off with ``--no-progress`` or
``DEFSENT_NO_PROGRESS=1``); its messages go through :mod:`defsent_cli.log` instead.
"""

from __future__ import annotations

import os

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

err_console = Console(stderr=True, highlight=False)


class RateColumn(ProgressColumn):
    """Items per second, e.g. ``312.4 sentences/s``."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f} {self.unit}/s")


def progress_enabled(show: bool | None = None) -> bool:
    """Progress is on unless turned off, or DEFSENT_NO_PROGRESS is set."""
    if show is not None:
        return show
    return not os.environ.get("DEFSENT_NO_PROGRESS")


def make_progress(unit: str = "items", show: bool | None = None, extra: str = "") -> Progress:
    """A rich progress bar on stderr with rate (``unit``/s) and ETA."""
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(unit),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    ]
    if extra:
        columns.append(TextColumn(extra))
    return Progress(
        *columns,
        console=err_console,
        disable=not progress_enabled(show),
        transient=False,
        redirect_stdout=False,
        redirect_stderr=False,
    )


def say(message: str) -> None:
    """One plain line on stderr (never wrapped, no markup): what a command reports about its work."""
    err_console.print(message, soft_wrap=True, markup=False, highlight=False)
