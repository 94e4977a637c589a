"""The reverse dictionary's query language, pure functions (no numpy, no torch), as OneLook reads it:

- ``pos:noun`` anywhere in the text: only entries with that part of speech (``formats/pos.py``); the token is
  removed from the text that is encoded;
- a letter pattern: ``*`` any run of characters, ``?`` exactly one (``pig*``, ``????let``, ``*let``), matched
  against the whole entry, case-insensitively. A text that is one word holding ``*`` or ``?`` is a pattern alone
  (nothing is encoded); ``a baby pig:p*`` is a description, a colon, and a pattern.

:func:`parse_query` splits a query into a :class:`Query`; :func:`pattern_matcher` compiles a pattern;
:func:`pattern_order` is how the entries a pattern alone finds are ranked: most senses first (common words have
more), then shorter, then alphabetically.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..formats.pos import check_pos

_POS_TOKEN = re.compile(r"(?:^|\s)pos:([A-Za-z.]*)", re.IGNORECASE)
_PATTERN = re.compile(r"^[\w'.\-*?]+$")


@dataclass(frozen=True)
class Query:
    """A parsed query: ``text`` to encode ("" for a pattern alone), ``pos`` and ``pattern`` (None: no filter)."""

    text: str
    pos: str | None = None
    pattern: str | None = None


def is_pattern(text: str) -> bool:
    """A single token of letters with a wildcard: a pattern alone (``pig*``, ``????let``)."""
    return bool(_PATTERN.match(text)) and ("*" in text or "?" in text)


def check_pattern(pattern: str) -> str:
    """A pattern as given (stripped); ValueError when it has a space, or no letter and no ``?`` (``*`` matches all)."""
    pattern = pattern.strip()
    if not _PATTERN.match(pattern):
        raise ValueError(
            f"the pattern {pattern!r} is not one: letters with * (any run) and ? (one letter), no spaces, as pig*"
        )
    if not re.search(r"[^*]", pattern):
        raise ValueError("the pattern '*' matches every entry; give some letters or ? (pig*, ????let)")
    return pattern


def parse_query(text: str, pos: str | None = None, pattern: str | None = None) -> Query:
    """``text`` split into what is encoded, the part of speech (``pos:`` token, else ``pos``) and the pattern (the
    colon form, a pattern alone, else ``pattern``); ValueError for an unknown part of speech, two parts of speech
    that disagree, or a malformed pattern."""
    found = [m.group(1) for m in _POS_TOKEN.finditer(text)]
    text = _POS_TOKEN.sub(" ", text).strip()
    wanted = {check_pos(name) for name in found if name} | ({check_pos(pos)} if pos else set())
    if len(wanted) > 1:
        raise ValueError(f"two parts of speech asked for ({', '.join(sorted(wanted))}); ask for one")
    if any(not name for name in found):
        raise ValueError("'pos:' needs a part of speech: pos:noun, pos:verb, pos:adj, pos:adv")
    inline = None
    if is_pattern(text):
        inline, text = text, ""
    elif ":" in text:
        head, _, tail = text.rpartition(":")
        if _PATTERN.match(tail.strip()):
            inline, text = tail.strip(), head.strip()
    if inline and pattern and inline.casefold() != pattern.strip().casefold():
        raise ValueError(f"two patterns given ({inline!r} in the query and {pattern!r}); give one")
    chosen = inline or (pattern.strip() if pattern and pattern.strip() else None)
    return Query(" ".join(text.split()), wanted.pop() if wanted else None, check_pattern(chosen) if chosen else None)


def pattern_matcher(pattern: str) -> Callable[[str], bool]:
    """``entry -> bool``: whether the whole entry matches ``pattern`` (``*`` any run, ``?`` one character; case
    and accents as written, compared case-insensitively)."""
    parts = [".*" if c == "*" else "." if c == "?" else re.escape(c) for c in check_pattern(pattern)]
    compiled = re.compile("".join(parts), re.IGNORECASE | re.DOTALL)
    return lambda entry: compiled.fullmatch(entry) is not None


def pattern_order(entry: str, senses: int) -> tuple:
    """The sort key of a pattern alone's matches: most senses first, then shorter, then alphabetically."""
    return (-int(senses), len(entry), entry.casefold(), entry)
