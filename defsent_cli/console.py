"""The stderr console and progress bars (stdout stays for data).

Library code may show a progress bar here (on stderr, off with ``--no-progress`` or
``DEFSENT_NO_PROGRESS=1``); its messages go through :mod:`defsent_cli.log` instead.
"""

from __future__ import annotations

import threading
import time

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

from .environment import seconds as seconds_from_env
from .environment import switch

err_console = Console(stderr=True, highlight=False)


class RateColumn(ProgressColumn):
    """Items per second, e.g. ``312.4 sentences/s``."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f} {self.unit}/s")


#: ``-q/--quiet``: errors and warnings only (no progress, no notes, no summary lines).
QUIET = {"on": False}


def set_quiet(quiet: bool) -> None:
    """Turn quiet mode on or off for this process (the command line's ``-q``)."""
    QUIET["on"] = bool(quiet)


def progress_enabled(show: bool | None = None) -> bool:
    """Progress is on unless turned off (``--no-progress``, ``-q``), or DEFSENT_NO_PROGRESS is set."""
    if QUIET["on"]:
        return False
    if show is not None:
        return show
    return not switch("DEFSENT_NO_PROGRESS")


#: Without a terminal (a log file, a pipe, a batch job), progress is a plain line this often, in seconds
#: (``DEFSENT_PROGRESS_SECONDS``), and at every tenth of the way.
PLAIN_SECONDS = 10.0


class PlainProgress:
    """Progress for a stderr that is not a terminal: whole lines, never redrawn (``task: 1,200/5,000 (24%),
    312.4 defs/s, 0:00:04, eta 0:00:12, loss 2.31``), one every :data:`PLAIN_SECONDS` or tenth of the way,
    and one when a task completes. The part of rich's Progress the library uses: ``add_task``, ``advance``,
    ``update``, a context manager.

    A task's completion line waits for the fields set after its last advance (training sets the step's loss
    and dev score after counting the step): it is written once, when the progress ends or when another task
    adds or writes a line, never twice. Updates may come from several threads at once (``encode_ids`` advances
    from its CPU workers): a lock keeps each count and each line whole, so the counts shown only grow."""

    def __init__(self, unit: str, seconds: float | None = None):
        self.unit = unit
        self.seconds = seconds_from_env("DEFSENT_PROGRESS_SECONDS", PLAIN_SECONDS) if seconds is None else seconds
        self.tasks: dict[int, dict] = {}
        self._lock = threading.RLock()

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            return
        with self._lock:
            self._flush()
            for task in self.tasks.values():  # the last word on an unfinished task: fields set after its last line
                if task["completed"] and not task["done"] and task["fields"] != task["said"]:
                    self._line(task)

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **fields) -> int:
        with self._lock:
            self._flush()
            now = time.monotonic()
            number = len(self.tasks)
            self.tasks[number] = {
                "description": description, "total": total, "completed": completed, "fields": dict(fields),
                "start": now, "last": now, "tenth": 0, "done": False, "pending": False, "said": None,
            }  # fmt: skip
            return number

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def update(self, task_id: int, *, total=None, completed=None, advance=None, description=None, **fields) -> None:
        with self._lock:
            task = self.tasks[task_id]
            if total is not None:
                task["total"] = total
            if completed is not None:
                task["completed"] = completed
            if advance is not None:
                task["completed"] += advance
            if description is not None:
                task["description"] = description
            task["fields"].update({k: v for k, v in fields.items() if k not in ("visible", "refresh")})
            total, done = task["total"], task["completed"]
            tenth = int(10 * done / total) if total else 0
            finished = bool(total) and done >= total
            if finished and not task["done"]:
                task["done"] = task["pending"] = True  # its line once its last fields are in (see the class)
                task["end"] = time.monotonic()
            elif not finished and (tenth > task["tenth"] or time.monotonic() - task["last"] >= self.seconds):
                self._line(task)
            task["tenth"] = max(task["tenth"], tenth)

    def _flush(self) -> None:
        """Write the completion lines still waiting."""
        for task in self.tasks.values():
            if task["pending"]:
                self._line(task)

    def _line(self, task: dict) -> None:
        task["pending"] = False
        self._flush()  # a task completed earlier says so before another task's line
        now = time.monotonic()
        task["last"], task["said"] = now, dict(task["fields"])
        elapsed = task.get("end", now) - task["start"]  # a completion line written later keeps its task's rate
        done, total = task["completed"], task["total"]
        parts = [
            f"{task['description']}: {done:,.0f}" + (f"/{total:,.0f} ({100 * done / total:.0f}%)" if total else "")
        ]
        if elapsed > 0 and done:
            parts.append(f"{done / elapsed:,.1f} {self.unit}/s")
        parts.append(_clock(elapsed))
        if total and done and done < total and elapsed > 0:
            parts.append(f"eta {_clock((total - done) * elapsed / done)}")
        parts.extend(f"{key} {_short(value)}" for key, value in task["fields"].items() if value not in (None, "", "-"))
        say(", ".join(parts))


def _short(value) -> str:
    """A field's value as a person reads it (``lr 1.93e-05``, not 18 digits)."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def make_progress(unit: str = "items", show: bool | None = None, extra: str = "") -> Progress | PlainProgress:
    """Progress on stderr with rate (``unit``/s) and ETA: a rich bar on a terminal, plain lines elsewhere
    (:class:`PlainProgress`)."""
    if progress_enabled(show) and not err_console.is_terminal:
        return PlainProgress(unit)
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
    """One plain line on stderr (never wrapped, no markup): what a command reports about its work (none
    under ``-q``)."""
    if QUIET["on"]:
        return
    err_console.print(message, soft_wrap=True, markup=False, highlight=False)
