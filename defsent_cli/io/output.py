"""What the commands write: JSON (strict: never a NaN), JSON Lines, text outputs and stdout, written and flushed
at once, so a full disk or a closed pipe is an error, never a success."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import DefsentError
from .files import _write_all, atomic_text, is_stdout


def json_text(obj: object, indent: int | None = None) -> str:
    """``obj`` as JSON text (UTF-8 kept), strictly: a NaN or infinite number, which JSON cannot carry (``json``
    would write ``NaN``, which no strict parser reads), is a one-line error instead, before anything is written."""
    try:
        return json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        if "JSON compliant" not in str(exc):
            raise
        raise DefsentError(
            "the output holds a NaN or infinite number, which JSON cannot carry; nothing was written (the input or "
            "the model gives non-finite values)"
        ) from None


def write_json(path: str | Path, obj: object) -> None:
    """Atomically write one JSON object (indented, UTF-8; strict: :func:`json_text`); ``-`` writes it to stdout."""
    text = json_text(obj, indent=2) + "\n"
    if is_stdout(path):
        write_stdout(text)
        return
    with atomic_text(path) as fh:
        fh.write(text)


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> int:
    """Atomically write JSONL (strict: :func:`json_text`); returns the number of lines. ``-`` writes them to stdout,
    a block at a time."""
    n = 0
    if is_stdout(path):
        block: list[str] = []
        for row in rows:
            block.append(json_text(row) + "\n")
            n += 1
            if len(block) >= 4096:
                write_stdout("".join(block))
                block = []
        write_stdout("".join(block))
        return n
    with atomic_text(path) as fh:
        for row in rows:
            fh.write(json_text(row) + "\n")
            n += 1
    return n


@contextlib.contextmanager
def text_output(path: str | Path, encoding: str = "utf-8") -> Iterator[io.TextIOBase]:
    """A text output (TSV, JSONL): ``-`` is standard output, written a block at a time (flushed at once, so a
    closed pipe is an error); a file appears at ``path`` only when complete (:func:`atomic_text`)."""
    if is_stdout(path):
        fh = _StdoutText()
        yield fh
        fh.flush()  # only on success: a failed command sends no more than the blocks already written
        return
    with atomic_text(path, encoding) as fh:
        yield fh


class _StdoutText(io.TextIOBase):
    """Text written to stdout through :func:`write_stdout`, a block of about 1 MiB at a time."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._parts.append(text)
        self._size += len(text)
        if self._size >= 1 << 20:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._parts:
            write_stdout("".join(self._parts))
            self._parts, self._size = [], 0


def output_name(path: str | Path) -> str:
    """How a message names an output: ``stdout`` for ``-``."""
    return "stdout" if is_stdout(path) else str(path)


def write_stdout(data: bytes | str) -> None:
    """Write to stdout and flush now: a full disk or a closed pipe raises here (and the command fails)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        sys.stdout.flush()
        _write_all(sys.stdout.buffer, data)  # an unbuffered stdout (python -u) may take part of it per write
        sys.stdout.buffer.flush()
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, "<stdout>") from None
