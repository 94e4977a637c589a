"""File plumbing every stage shares: atomic writes, line/JSONL readers, vector writers."""

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

import numpy as np

from .errors import DefsentError

VECTOR_SUFFIXES = (".npy", ".h5", ".hdf5", ".jsonl")


def check_output(path: str | Path, force: bool = False) -> Path:
    """Refuse to overwrite an existing output unless ``force`` (DESIGN.md)."""
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
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def vector_format(path: str | Path) -> str:
    """The vector file format named by a suffix: npy, h5 or jsonl."""
    suffix = Path(path).suffix.lower()
    if suffix not in VECTOR_SUFFIXES:
        raise DefsentError(
            f"unknown output suffix {suffix or '(none)'}; use one of {', '.join(VECTOR_SUFFIXES)}", path=path
        )
    return {".hdf5": "h5"}.get(suffix, suffix[1:])


def write_vectors(
    path: str | Path, vectors: np.ndarray, texts: list[str] | None = None, attrs: dict | None = None
) -> None:
    """Atomically write a float32 matrix as .npy, .h5 (dataset ``vectors``) or .jsonl."""
    fmt = vector_format(path)
    vectors = np.asarray(vectors, dtype=np.float32)
    with atomic_path(path) as tmp:
        if fmt == "npy":
            with open(tmp, "wb") as fh:
                np.save(fh, vectors)
        elif fmt == "h5":
            import h5py

            with h5py.File(tmp, "w") as h5:
                h5.create_dataset("vectors", data=vectors)
                if texts is not None:
                    h5.create_dataset("texts", data=texts, dtype=h5py.string_dtype())
                for key, value in (attrs or {}).items():
                    h5.attrs[key] = value
        else:
            with open(tmp, "w", encoding="utf-8") as fh:
                for i, row in enumerate(vectors):
                    obj = {"text": texts[i]} if texts is not None else {}
                    obj["embedding"] = [float(x) for x in row]
                    fh.write(json.dumps(obj, ensure_ascii=False) + "\n")


def write_npy_stdout(vectors: np.ndarray) -> None:
    """Write a float32 .npy to stdout (for pipes)."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(vectors, dtype=np.float32))
    sys.stdout.buffer.write(buffer.getvalue())
    sys.stdout.buffer.flush()


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
