"""User-facing errors: one line, a file and line number where there is one."""

from __future__ import annotations

from pathlib import Path


class DefsentError(Exception):
    """Bad usage or bad input: the CLI prints one line and exits with 2."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` agreeing, for messages: "1 step", "2 steps", "1,000 pairs" (``plural`` where it is not
    ``noun`` + s)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
