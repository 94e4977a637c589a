"""Plain text (docs/formats.md, "Plain text"): one text per line, what ``encode``, ``tsdae``, ``simcse``,
``sample-pairs``, ``embed-entries --texts``, ``fit-post --fit-on`` and ``--idf-corpus`` read. A file of another
kind given there (a dictionary or any JSON Lines, a pairs file, a TSV) would be read line by line as text, braces
and TABs and scores and all, and give a result that looks fine: :func:`check_plain` refuses it from its first
non-blank line, in one line that says what the file is and what to pass instead."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import DefsentError
from .pairs import looks_like


def check_plain(first: str, path: str | Path, advice: str = "", line: int = 1) -> None:
    """Refuse ``path`` as plain text when its first non-blank line, ``first`` (line number ``line``), is a JSON
    object (a dictionary JSONL, or other JSON Lines), or a line of a pairs file or a TSV; ``advice`` ends the
    message (what the command takes instead, e.g. "; pass --field NAME to read one string field of each object")."""
    name = "<stdin>" if str(path) == "-" else path
    if first.lstrip().startswith("{"):
        try:
            obj = json.loads(first)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            kind = "a dictionary JSONL" if "definitions" in obj and "entry" in obj else "JSON Lines"
            raise DefsentError(
                f"is {kind} (a JSON object per line), not plain text: its lines would be read as text, braces "
                f"and all{advice or '; give a file of one text per line'}",
                path=name,
                line=line,
            )
    looks = looks_like(first)
    if looks not in (None, "plain text"):
        raise DefsentError(
            f"looks like {looks}, not plain text (one text per line, without TABs){advice}", path=name, line=line
        )


def plain_check(advice: str = ""):
    """A ``check_first`` for ``io.read_texts``: :func:`check_plain` with ``advice``."""

    def check(path: str | Path, text: str, line: int) -> None:
        check_plain(text, path, advice, line)

    return check


def check_plain_file(path: str | Path, advice: str = "", encoding: str = "utf-8") -> None:
    """:func:`check_plain` on the first non-blank line of the file ``path`` (read up to that line only)."""
    from ..io import iter_lines

    number, first = next(((n, text) for n, text in iter_lines(path, encoding) if text.strip()), (1, ""))
    check_plain(first, path, advice, number)


def refuse_twice(paths: list[str | Path]) -> None:
    """A file given twice (by any name) is refused where each text gets an id from its place: its rows would be
    read twice, with the same ids."""
    named: dict[str, str] = {}
    for path in paths:
        key = "-" if str(path) == "-" else os.path.realpath(path)
        if key in named:
            also = "" if named[key] == str(path) else f" (also as {named[key]})"
            raise DefsentError(f"given twice{also}: its texts would be read twice, with the same ids", path=path)
        named[key] = str(path)


def read_plain_records(
    sources: list[str],
    field: str | None,
    id_field: str | None,
    skip_blank: bool,
    verb: str,
    noun: str,
    where: list[tuple[str, int]] | None = None,
) -> tuple[list, list[str]]:
    """``io.read_records`` of the texts ``encode`` and ``index`` read: plain text checked as such (a JSONL given
    without ``--field`` is refused, saying to pass it), each id unique (a file given twice is refused), at least
    one text (else an error: no ``noun`` to ``verb``); ``where`` gets each text's file and line."""
    from ..io import read_records

    refuse_twice(sources)
    check = None if field is not None else plain_check(f"; pass --field NAME to {verb} one string field of each object")
    ids, texts = read_records(sources, field, id_field, skip_blank=skip_blank, check_first=check, where=where)
    if not texts:
        read = "stdin" if sources == ["-"] else ", ".join(sources)
        raise DefsentError(f"no {noun} in {read}: nothing to {verb}")
    return ids, texts
