"""The texts a command reads, declared once: how ``encode`` and ``index`` read their records (:data:`RECORDS`), the
one rule for a blank text given as an argument (:func:`refuse_blank`), and the queries of ``lookup`` and ``search``
from their arguments or stdin (:func:`read_queries`)."""

from __future__ import annotations

import sys

from ..errors import DefsentError
from .groups import Group, option

#: How encode and index read their texts: a JSONL field and its ids, blank lines (index says what it does with them).
RECORDS = Group(
    "records",
    {
        "field": option("--field", type=str | None, help="Read JSONL and embed this string field of each object."),
        "id_field": option(
            "--id-field",
            type=str | None,
            help="With --field: each row's id in JSON outputs, each once (default: the line number).",
        ),
        "skip_blank": option("--skip-blank", type=bool, help="Skip blank lines instead of failing.", default=False),
    },
)


def refuse_blank(texts: list[str], what: str, hint: str) -> None:
    """The one rule for an empty or whitespace-only text given as an argument (encode's texts, search's and
    lookup's queries; an input line is refused by ``io.read_records``, the server answers 400): an error naming
    its place."""
    for number, text in enumerate(texts, 1):
        if not text.strip():
            raise DefsentError(f"{what} {number} is blank; {hint}")


def read_queries(queries: list[str] | None, plural: str, blank_hint: str, command: str) -> list[str]:
    """The queries of ``lookup`` and ``search``: the arguments, else one per line of stdin, which must be plain
    text (a dictionary piped in by mistake is refused) and hold at least one. A blank query is an error naming
    its argument or line, as everywhere a text is given (:func:`refuse_blank`; the server's 400)."""
    if queries:
        refuse_blank(queries, "query", blank_hint)
        return queries
    if sys.stdin.isatty():
        raise DefsentError(f"no query: pass {plural} as arguments or one per line on stdin")
    from ..formats.plain import plain_check
    from ..io import iter_lines

    check = plain_check(f"; {command} reads {plural}, one per line")
    found: list[str] = []
    for number, line in iter_lines("-"):
        if not line.strip():
            raise DefsentError(f"blank query line; {blank_hint}, one per line, none blank", path="<stdin>", line=number)
        if not found:
            check("-", line, number)
        found.append(line)
    if not found:
        raise DefsentError("no query on stdin (nothing was read)")
    return found
