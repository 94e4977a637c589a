"""File plumbing every stage shares: output checks, atomic writes, line and JSONL readers, hashing."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import DefsentError


def check_output(path: str | Path, force: bool = False) -> Path:
    """Refuse to overwrite an existing output (file or folder) unless ``force``; its folder must exist."""
    path = Path(path)
    if path.exists() and not force:
        raise DefsentError("output exists; pass --force to overwrite", path=path)
    if not path.parent.exists():
        raise DefsentError("output directory does not exist", path=path.parent)
    return path


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_text(path: str | Path, encoding: str = "utf-8") -> Iterator[io.TextIOBase]:
    """Open a text file for writing that appears at ``path`` only when complete."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding=encoding, newline="\n") as fh:
        yield fh


def write_json(path: str | Path, obj: object) -> None:
    """Atomically write one JSON object (indented, UTF-8)."""
    with atomic_text(path) as fh:
        json.dump(obj, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> int:
    """Atomically write JSONL; returns the number of lines."""
    n = 0
    with atomic_text(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def open_text(path: str | Path, encoding: str = "utf-8") -> io.TextIOBase:
    """Open a text input, '-' meaning stdin; a missing file is a DefsentError."""
    if str(path) == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding=encoding, newline=None)
    try:
        return open(path, encoding=encoding, newline=None)
    except FileNotFoundError:
        raise DefsentError("no such file", path=path) from None
    except IsADirectoryError:
        raise DefsentError("is a directory, expected a file", path=path) from None


def iter_lines(path: str | Path, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with the line ending (LF or CRLF) removed."""
    fh = open_text(path, encoding)
    try:
        for number, line in enumerate(fh, start=1):
            yield number, line.rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise DefsentError(f"not valid {encoding} text ({exc.reason}); try --encoding", path=path) from None
    finally:
        if str(path) != "-":
            fh.close()


def iter_jsonl(path: str | Path, encoding: str = "utf-8") -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank JSONL line."""
    for number, line in iter_lines(path, encoding):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DefsentError(f"invalid JSON ({exc.msg})", path=path, line=number) from None
        if not isinstance(obj, dict):
            raise DefsentError("expected a JSON object", path=path, line=number)
        yield number, obj


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (a missing file or a folder is a one-line error)."""
    if not Path(path).is_file():
        raise DefsentError("no such file" if not Path(path).exists() else "is a directory, expected a file", path=path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_texts(paths: list[str | Path], field: str | None = None, skip_blank: bool = False) -> list[str]:
    """Texts from plain-text lines (or JSONL objects' ``field``), in order.

    A blank line (or empty field) is an error naming the file and line unless
    ``skip_blank``. ``-`` reads stdin.
    """
    texts: list[str] = []
    for path in paths:
        if field is None:
            rows = iter_lines(path)
        else:
            rows = ((n, _field(obj, field, path, n)) for n, obj in iter_jsonl(path))
        for number, text in rows:
            if not text.strip():
                if skip_blank:
                    continue
                raise DefsentError("blank input line; pass --skip-blank to skip it", path=_name(path), line=number)
            texts.append(text)
    return texts


def _name(path: str | Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _field(obj: dict, field: str, path: str | Path, number: int) -> str:
    value = obj.get(field)
    if value is None:
        raise DefsentError(f"no field {field!r} in this JSON object", path=_name(path), line=number)
    if not isinstance(value, str):
        raise DefsentError(f"field {field!r} is not a string", path=_name(path), line=number)
    return value
