"""``defsent define``: a forward lookup, word in, its senses out (the reverse dictionary's links: a result's words
lead here, as the page's words lead to ``/v1/define``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import DefsentError
from ..io import json_text, write_stdout
from .boundary import guard
from .search_options import Dictionary


def define_command(
    words: Annotated[list[str], typer.Argument(metavar="WORDS", help="Entries to define (case-insensitive).")],
    bank: Annotated[
        Path | None,
        typer.Option("--bank", help="An entry bank: its entries' senses from the dictionary it was built from."),
    ] = None,
    dictionary: Dictionary = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per word on stdout.")] = False,
) -> None:
    """Print every sense of each word, with its part of speech: from a bank's dictionary, or a dictionary JSONL.

    \b
    Examples:
      defsent define piglet --bank bank.h5
      defsent define shote piglet --dictionary dict.jsonl --json

    Loads no model. A word that is no entry is an error (exit 2) naming it.
    """
    from ..search.reverse import senses_of

    if bank is None and dictionary is None:
        raise DefsentError("pass --bank BANK.h5 (its dictionary) or --dictionary DICT.jsonl")
    if bank is not None:
        from ..formats.bank import open_bank
        from ..search.collections import bank_senses

        found = bank_senses(open_bank(bank), dictionary)
        where = str(bank)
    else:
        from ..formats.dictionary import check_dictionary
        from ..search.reverse import dictionary_senses

        found = dictionary_senses(check_dictionary(dictionary))
        where = str(dictionary)
    answers = [senses_of(found, word, where) for word in words]
    lines = []
    for answer in answers:
        if as_json:
            lines.append(json_text(answer))
            continue
        lines.append(answer["entry"])
        for number, sense in enumerate(answer["senses"], 1):
            pos = f"({sense['pos']}) " if sense["pos"] else ""
            lines.append(f"  {number:>2}. {pos}{sense['definition']}")
    write_stdout("".join(line + "\n" for line in lines))


HELP_ORDER = 165  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("define")(guard(define_command))
