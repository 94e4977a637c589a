"""``defsent lookup``: the reverse dictionary, definition in, entries out."""

from __future__ import annotations

from typing import Annotated

import typer

from ..console import say
from ..io import json_text, write_stdout
from . import options as opt
from .boundary import guard
from .groups import Values, change, takes_groups
from .input_options import read_queries
from .models import MODEL, QUERIES, load
from .search_options import CandidateBank, CheckpointModel, QueryPooling, candidates, check_candidates, choose_bank


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
    dims: opt.Dims = None,
) -> None:
    """Reverse dictionary: print the entries whose bank vectors best match each definition.

    \b
    Examples:
      defsent lookup --model ckpt/ --bank bank.h5 "a long-necked African animal"
      defsent lookup --model defsent-ckpt/ "a long-necked African animal"
      defsent lookup -m bert-base/ --word-head mlm "a feeling of great happiness"
      defsent lookup -m mrl-ckpt/ --bank bank.h5 --dims 128 "a baby pig"
    """
    from ..formats.vectors import refuse_nonfinite
    from ..search.exact import top_k

    queries = read_queries(queries, "definitions", "give a definition to look up", "lookup")
    check_candidates(bank, word_head)
    loaded = load(model)
    bank = choose_bank(loaded, bank, word_head)
    encoder, entries = candidates(loaded, bank, word_head, pooling, dims=dims)
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
            cut = {} if encoder.cut is None else {"dims": encoder.cut}  # the leading dims scored (--dims, a bank's)
            row = {"query": query, "similarity": "dot", **cut, "results": hits, "provenance": origin}
            lines.append(json_text(row))
        else:
            lines.append(query)
            lines.extend(f"  {rank:>2}. {hit['entry']}\t{hit['score']:.4f}" for rank, hit in enumerate(hits, 1))
    write_stdout("".join(line + "\n" for line in lines))
    say(
        "scores are dot products of the query's vector (as in training: pooling, then the head) with each "
        "bank row, not cosines"
    )


HELP_ORDER = 160  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("lookup")(guard(takes_groups(lookup_command)))
