"""What the commands read: text files and stdin line by line (one line number each, undecodable bytes named),
JSON Lines, texts and records with their ids, and SHA-256 of files."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import DefsentError
from .files import check_input


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


def iter_lines(path: str | Path, encoding: str = "utf-8", hint: str = "") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with the line ending (LF, CRLF or CR) removed; ``hint`` ends the message
    of an undecodable file (e.g. "; pass --encoding utf-16" where the command has that option).

    The bytes are decoded a line at a time (an incremental decoder fed each line read), so a byte that is not
    ``encoding`` is reported on its own line, of a file or of stdin, not on the first line of a read-ahead block
    (a text stream decodes 8 KiB at once)."""
    import codecs

    shown = "utf-8" if encoding.lower().replace("_", "-") in ("utf-8-sig", "utf8-sig") else encoding
    name = "<stdin>" if str(path) == "-" else path
    raw = sys.stdin.buffer if str(path) == "-" else _open_binary(path)
    decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder(encoding)("strict"), translate=True)
    number, pending = 0, ""
    try:
        for chunk in itertools.chain(raw, [None]):
            try:
                text = decoder.decode(b"", final=True) if chunk is None else decoder.decode(chunk)
            except UnicodeError as exc:  # UnicodeDecodeError, or the UTF-16 codec's "stream does not start with BOM"
                reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
                # utf-8-sig is utf-8 that may start with a BOM: the codec's name is ours, not the user's
                raise DefsentError(f"not valid {shown} text ({reason}){hint}", path=name, line=number + 1) from None
            *complete, pending = (pending + text).split("\n")
            for line in complete:
                number += 1
                yield number, line
        if pending:
            yield number + 1, pending
    finally:
        if raw is not sys.stdin.buffer:
            raw.close()


def _open_binary(path: str | Path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise DefsentError("no such file", path=path) from None
    except IsADirectoryError:
        raise DefsentError("is a directory, expected a file", path=path) from None


class _NotJson(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python's json reads them, JSON has no such values."""


def _not_json(constant: str):
    raise _NotJson(constant)


def iter_jsonl(
    path: str | Path, encoding: str = "utf-8", hint: str = "", allow_nan: bool = False
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank JSONL line (strict JSON: ``NaN`` and ``Infinity`` are
    refused, as any JSON parser but Python's would; ``allow_nan`` reads them as floats, for third-party files
    written by pandas whose fields the caller checks itself)."""
    constant = float if allow_nan else _not_json
    for number, line in iter_lines(path, encoding, hint):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=constant)
        except _NotJson as exc:
            raise DefsentError(f"invalid JSON ({exc} is not a JSON number)", path=path, line=number) from None
        except json.JSONDecodeError as exc:
            raise DefsentError(f"invalid JSON ({exc.msg})", path=path, line=number) from None
        if not isinstance(obj, dict):
            raise DefsentError("expected a JSON object", path=path, line=number)
        yield number, obj


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (a missing file or a folder is a one-line error)."""
    import hashlib  # OpenSSL's library: loaded by what hashes, not by --help

    check_input(path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_texts(
    paths: list[str | Path],
    field: str | None = None,
    skip_blank: bool = False,
    check_first: Callable[[str | Path, str, int], None] | None = None,
    encoding: str = "utf-8",
) -> list[str]:
    """Texts from plain-text lines (or JSONL objects' ``field``), in order.

    A blank line (or empty field) is an error naming the file and line unless
    ``skip_blank``. ``-`` reads stdin. ``check_first(path, text, line_number)`` sees the first text of each
    file before the rest is read (``formats.plain.check_plain``: a file of another kind is refused).
    """
    return read_records(paths, field, skip_blank=skip_blank, check_first=check_first, encoding=encoding)[1]


def read_records(
    paths: list[str | Path],
    field: str | None = None,
    id_field: str | None = None,
    skip_blank: bool = False,
    check_first: Callable[[str | Path, str, int], None] | None = None,
    encoding: str = "utf-8",
    where: list[tuple[str, int]] | None = None,
) -> tuple[list, list[str]]:
    """:func:`read_texts` with an id for each text: the JSONL objects' ``id_field`` (a string or a finite number;
    it needs ``field``), else the line number (``FILE:LINE`` when there are several files). Ids are unique: a
    repeated ``id_field`` value is an error naming its line and the line that had it first (a file given twice:
    ``formats.plain.refuse_twice``). ``where``, when given, gets each text's file and line."""
    if id_field is not None and field is None:
        raise DefsentError("--id-field reads JSONL objects: pass --field NAME too (the text to read)")
    ids: list = []
    texts: list[str] = []
    first_line: dict[tuple[bool, object], tuple[str, int]] = {}
    for path in paths:
        if field is None:
            rows = ((n, text, None) for n, text in iter_lines(path, encoding))
        else:
            rows = (
                (n, _field(obj, field, path, n), _id(obj, id_field, path, n) if id_field else None)
                for n, obj in iter_jsonl(path, encoding)
            )
        first = True
        for number, text, given in rows:
            if not text.strip():
                if skip_blank:
                    continue
                raise DefsentError("blank input line; pass --skip-blank to skip it", path=_name(path), line=number)
            if first and check_first is not None:
                check_first(path, text, number)
            first = False
            if id_field:
                key = (isinstance(given, str), given)
                if key in first_line:
                    seen = first_line[key]
                    raise DefsentError(
                        f"id {json.dumps(given, ensure_ascii=False)} (--id-field {id_field}) is repeated: it was the id "
                        f"of {seen[0]}:{seen[1]} too; ids must be unique",
                        path=_name(path),
                        line=number,
                    )
                first_line[key] = (_name(path), number)
            texts.append(text)
            ids.append(given if id_field else number if len(paths) == 1 else f"{_name(path)}:{number}")
            if where is not None:
                where.append((_name(path), number))
    return ids, texts


def _id(obj: dict, field: str, path: str | Path, number: int) -> str | int | float:
    value = obj.get(field)
    if value is None:
        raise DefsentError(f"no field {field!r} (--id-field) in this JSON object", path=_name(path), line=number)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DefsentError(f"field {field!r} (--id-field) is not a string or a number", path=_name(path), line=number)
    if isinstance(value, float) and not math.isfinite(value):
        raise DefsentError(
            f"field {field!r} (--id-field) is {value}, not a finite number", path=_name(path), line=number
        )
    return value


def _name(path: str | Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _field(obj: dict, field: str, path: str | Path, number: int) -> str:
    value = obj.get(field)
    if value is None:
        raise DefsentError(f"no field {field!r} in this JSON object", path=_name(path), line=number)
    if not isinstance(value, str):
        raise DefsentError(f"field {field!r} is not a string", path=_name(path), line=number)
    return value


@contextlib.contextmanager
def stdin_as_file(suffix: str = "") -> Iterator[Path]:
    """Standard input copied to a temporary file, for a reader that takes a path and reads it twice (a
    dictionary: counted, then read); removed afterwards. An error about that file names ``<stdin>``."""
    if sys.stdin is None or sys.stdin.isatty():
        raise DefsentError("no input: give a file, or pipe one into stdin")
    with tempfile.TemporaryDirectory(prefix="defsent-stdin-") as folder:
        path = Path(folder) / f"stdin{suffix}"
        with open(path, "wb") as fh:
            for block in iter(lambda: sys.stdin.buffer.read(1 << 20), b""):
                fh.write(block)
        if not path.stat().st_size:
            raise DefsentError("stdin is empty: nothing to read")
        try:
            yield path
        except DefsentError as exc:
            text = str(exc).replace(str(path), "<stdin>")
            if text == str(exc):
                raise
            error = DefsentError(text)
            error.exit_code = exc.exit_code
            raise error from None
