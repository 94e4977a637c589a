"""``defsent lookup``: the reverse dictionary, definition in, entries out."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..console import say
from ..errors import DefsentError
from ..formats.bank import Bank, BankFile
from ..io import json_text, write_stdout
from ..log import note
from . import options as opt
from .boundary import guard
from .encode import refuse_blank
from .groups import Values, change, takes_groups
from .models import MODEL, QUERIES, load

if TYPE_CHECKING:  # the reverse dictionary runs in torch: imported by the commands, not by --help
    from ..evaluation.reverse_dict import QueryEncoder

QueryPooling = Annotated[
    opt.PoolingName | None,
    typer.Option("--pooling", "-p", help="Override the query pooling (default: the training one)."),
]
CheckpointModel = Annotated[
    Path | None,
    typer.Option(
        "--model",
        "-m",
        help="A defsent checkpoint (its trained head is used) or any model. Default: $DEFSENT_MODEL, else the "
        "bundled all-MiniLM-L6-v2.",
        show_default=False,
        callback=opt.model_default,
        path_type=str,  # as typed: ./x is a folder, never a Hub name (options.model_default)
    ),
]


CandidateBank = Annotated[
    Path | None,
    typer.Option(
        "--bank",
        help="Entry bank (.h5) whose entries are the candidates (not needed for a --objective defsent checkpoint "
        "or with --word-head: the vocabulary is).",
        show_default=False,
    ),
]


def check_candidates(bank: Path | None, word_head) -> None:
    """Before the model loads: one way of choosing the candidates."""
    if bank is not None and word_head is not None:
        raise DefsentError("--bank and --word-head choose the candidates two ways; pass one of them")


def candidates(
    loaded, bank: Path | None, word_head, pooling, dictionary: Path | None = None
) -> tuple[QueryEncoder, Bank | BankFile]:
    """(query encoder, candidates): the entries of ``bank`` (:func:`choose_bank`'s), or the vocabulary through a word
    head."""
    from ..evaluation.reverse_dict import load_bank_for, query_encoder, word_query_encoder

    check_candidates(bank, word_head)
    if bank is None:
        return word_query_encoder(loaded, opt.value(word_head), opt.value(pooling))
    entries = load_bank_for(dictionary, bank)
    return query_encoder(loaded, entries, opt.value(pooling)), entries


def read_queries(queries: list[str] | None, plural: str, blank_hint: str, command: str) -> list[str]:
    """The queries of ``lookup`` and ``search``: the arguments, else one per line of stdin, which must be plain
    text (a dictionary piped in by mistake is refused) and hold at least one. A blank query is an error naming
    its argument or line, as everywhere a text is given (``encode.refuse_blank``; the server's 400)."""
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


def choose_bank(loaded, bank: Path | None, word_head) -> Path | None:
    """The candidates' bank: ``--bank``; else none where the vocabulary is ranked (``--word-head``, a DefSent
    checkpoint); else the bank the checkpoint was trained against (its ``defsent.json``), said in a note; else an
    error saying what to pass (and that the recorded bank is gone, where it is)."""
    from ..evaluation.reverse_dict import check_recorded_bank, trained_word_objective

    if bank is not None or word_head is not None or trained_word_objective(loaded):
        return bank
    recorded = loaded.info.get("bank") if isinstance(loaded.info, dict) else None
    if isinstance(recorded, str) and Path(recorded).is_absolute() and Path(recorded).is_file():  # read_info resolves
        note(f"bank: {recorded} (the one {loaded.path} was trained against; --bank chooses another)")
        check_recorded_bank(recorded, loaded.info.get("bank_sha256"), loaded.path)
        return Path(recorded)
    gone = f" ({loaded.path} was trained against {recorded}, which is gone)" if isinstance(recorded, str) else ""
    raise DefsentError(
        f"pass --bank BANK.h5 (the candidates), or --word-head mlm|embeddings to rank the vocabulary{gone}"
    )


def lookup_command(
    model: Values = MODEL(model=change(annotation=CheckpointModel), without=QUERIES),
    bank: CandidateBank = None,
    queries: Annotated[
        list[str] | None, typer.Argument(metavar="QUERIES", help="Definitions to look up; none: one per line on stdin.")
    ] = None,
    k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Entries to show per query.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per query on stdout.")] = False,
    pooling: QueryPooling = None,
    word_head: opt.WordHead = None,
) -> None:
    """Reverse dictionary: print the entries whose bank vectors best match each definition.

    \b
    Examples:
      defsent lookup --model ckpt/ --bank bank.h5 "a long-necked African animal"
      defsent lookup --model defsent-ckpt/ "a long-necked African animal"
      defsent lookup -m bert-base/ --word-head mlm "a feeling of great happiness"
    """
    from ..evaluation.bank_search import top_k
    from ..formats.vectors import refuse_nonfinite

    queries = read_queries(queries, "definitions", "give a definition to look up", "lookup")
    check_candidates(bank, word_head)
    loaded = load(model)
    bank = choose_bank(loaded, bank, word_head)
    encoder, entries = candidates(loaded, bank, word_head, pooling)
    vectors = encoder.encode(queries, model.batch_size)
    refuse_nonfinite(vectors, loaded.path, what="query")
    indices, scores = top_k(vectors, entries, k)
    lines = []
    if as_json:  # where the hits came from, on every line (each line is a whole result)
        from ..formats.results import provenance

        origin = provenance([model.model], [bank] if bank is not None else [])
    width = indices.shape[1]
    names = entries.entries_at(indices.ravel())  # the hits' entry strings, read at once (the bank stays on disk)
    for number, (query, values) in enumerate(zip(queries, scores, strict=True)):
        found = names[number * width : (number + 1) * width]
        hits = [{"entry": e, "score": round(float(s), 4)} for e, s in zip(found, values, strict=True)]
        if as_json:
            row = {"query": query, "similarity": "dot", "results": hits, "provenance": origin}
            lines.append(json_text(row))
        else:
            lines.append(query)
            lines.extend(f"  {rank:>2}. {hit['entry']}\t{hit['score']:.4f}" for rank, hit in enumerate(hits, 1))
    write_stdout("".join(line + "\n" for line in lines))
    say(
        "scores are dot products of the query's vector (as in training: pooling, then the head) with each "
        "bank row, not cosines"
    )


def register(app: typer.Typer) -> None:
    app.command("lookup")(guard(takes_groups(lookup_command)))
