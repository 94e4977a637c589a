"""What every dictionary reader shares: the pair it yields and the one whitespace cleaning (its own module so
the readers, :mod:`.sources` and the dictd and glossary readers it calls, import it without a cycle)."""

from __future__ import annotations

import re

Pair = tuple[str, str, str]
"""``(entry, definition, source)`` as the readers yield them."""

_WHITESPACE = re.compile(r"\s+")


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace to one space and strip the ends."""
    return _WHITESPACE.sub(" ", text).strip()
