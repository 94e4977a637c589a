"""``defsent lookup``: the reverse dictionary, definition in, entries out (filtered by part of speech and letter
pattern, synonyms grouped: ``search/reverse.py``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..console import say
from ..errors import DefsentError
from ..io import json_text, write_stdout
from . import options as opt
from .boundary import guard
from .groups import Values, change, takes_groups
from .input_options import read_queries
from .models import MODEL, QUERIES, load
from .search_options import (
    CandidateBank,
    CheckpointModel,
    Dictionary,
    PartOfSpeech,
    Pattern,
    QueryPooling,
    Similarity,
    SimilarityName,
    candidates,
    check_candidates,
    choose_bank,
)


def lookup_command(
    model: Values = MODEL(model=change(annotation=CheckpointModel), without=QUERIES),
    bank: CandidateBank = None,
    queries: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="QUERIES",
            help="Definitions to look up, each with an optional pos:noun and :pattern (a baby pig:p*), or a pattern "
            "alone (pig*, ????let); none: one per line on stdin.",
        ),
    ] = None,
    k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Entries to show per query.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per query on stdout.")] = False,
    pos: PartOfSpeech = None,
    pattern: Pattern = None,
    similarity: Similarity = SimilarityName("cosine"),
    dictionary: Dictionary = None,
    pooling: QueryPooling = None,
    word_head: opt.WordHead = None,
    dims: opt.Dims = None,
) -> None:
    """Reverse dictionary: print the entries whose bank vectors best match each definition, with their definitions.

    \b
    Examples:
      defsent lookup --model ckpt/ --bank bank.h5 "a long-necked African animal"
      defsent lookup --bank bank.h5 --pos noun "a baby pig"
      defsent lookup --bank bank.h5 "a baby pig:p*"   # meaning and spelling
      defsent lookup --bank bank.h5 "????let"         # a pattern alone
      defsent lookup --model defsent-ckpt/ "a long-necked African animal"
      defsent lookup -m bert-base/ --word-head mlm "a feeling of great happiness"
      defsent lookup -m mrl-ckpt/ --bank bank.h5 --dims 128 "a baby pig"

    Over a bank, scores are cosine similarities (as defsent search's), entries sharing their definitions and score
    are one result (a WordNet synset); a pattern alone lists its matches by senses, then length, then
    alphabetically. --pos and pos: need a bank built by embed-entries from a dictionary with parts of speech.
    """
    queries = read_queries(queries, "definitions", "give a definition to look up", "lookup")
    check_candidates(bank, word_head)
    from ..search.query_syntax import parse_query

    try:
        parsed = [parse_query(query, opt.value(pos), pattern) for query in queries]
    except ValueError as exc:
        raise DefsentError(str(exc)) from None
    loaded = load(model)
    bank = choose_bank(loaded, bank, word_head)
    if bank is None:
        if any(q.pos or q.pattern for q in parsed):
            raise DefsentError("--pos and patterns filter a bank's entries: pass --bank BANK.h5")
        return vocabulary_lookup(model, loaded, queries, word_head, pooling, k, as_json, dims)
    from ..search.collections import bank_collection
    from ..search.reverse import answer, no_pos_error

    file = _open(bank)
    if any(q.pos for q in parsed) and file.all_pos() is None:
        raise no_pos_error(file.source)
    collection = bank_collection(
        file, loaded, opt.value(similarity), model.batch_size, opt.value(pooling), dictionary, dims
    )
    texts = [q.text for q in parsed if q.text]
    vectors = iter(collection.vectors(texts) if texts else [])
    found = [answer(collection, q, next(vectors) if q.text else None, k) for q in parsed]
    origin = _origin(model, bank) if as_json else None
    lines = []
    for query, hits in zip(queries, found, strict=True):
        if as_json:
            cut = {} if collection.cut is None else {"dims": collection.cut}  # the leading dims scored
            row = {"query": query, "similarity": collection.score_kind, **cut, "results": hits, "provenance": origin}
            lines.append(json_text(row))
        else:
            lines.extend(result_lines(query, hits))
    write_stdout("".join(line + "\n" for line in lines))
    if collection.score_kind == "cosine":
        say("scores are cosine similarities of each query's vector with each entry's (as defsent search's)")
    else:
        say("scores are dot products of each query's vector with each entry's row (training's score), not cosines")


def result_lines(query: str, hits: list[dict]) -> list[str]:
    """The text form of one query's results: rank, the words, the score (or the senses of a pattern alone), and
    the definitions indented beneath (``search`` shows a bank's hits the same way)."""
    lines = [query]
    for rank, hit in enumerate(hits, 1):
        words = ", ".join(hit.get("words") or [hit["entry"]])
        pos = f" ({', '.join(hit['pos'])})" if hit.get("pos") else ""
        senses = hit.get("senses", 0)
        score = f"{hit['score']:.4f}" if hit.get("score") is not None else f"{senses} sense{'' if senses == 1 else 's'}"
        lines.append(f"  {rank:>2}. {words}{pos}\t{score}")
        lines.extend(f"      {text}" for text in hit.get("definitions") or [])
    return lines


def _open(bank):
    from ..evaluation.reverse_dict import load_bank_for

    return load_bank_for(None, bank)


def _origin(model: Values, bank) -> dict:
    from ..formats.results import provenance

    return provenance([model.model], [bank] if bank is not None else [])


def vocabulary_lookup(
    model: Values, loaded, queries, word_head, pooling, k: int, as_json: bool, dims: int | None = None
) -> None:
    """The vocabulary ranked through a word head (``--word-head``, a ``--objective defsent`` checkpoint): dot
    products, as DefSent's training scored them (``dims``, which a word head cannot cut: refused)."""
    from ..formats.vectors import refuse_nonfinite
    from ..search.exact import top_k

    encoder, entries = candidates(loaded, None, word_head, pooling, dims=dims)
    vectors = encoder.encode(queries, model.batch_size)
    refuse_nonfinite(vectors, loaded.path, what="query")
    indices, scores = top_k(vectors, entries, k)
    origin = _origin(model, None) if as_json else None
    width, lines = indices.shape[1], []
    names = entries.entries_at(indices.ravel())
    for number, (query, values) in enumerate(zip(queries, scores, strict=True)):
        found = names[number * width : (number + 1) * width]
        hits = [{"entry": e, "score": round(float(s), 4)} for e, s in zip(found, values, strict=True)]
        if as_json:
            lines.append(json_text({"query": query, "similarity": "dot", "results": hits, "provenance": origin}))
        else:
            lines.append(query)
            lines.extend(f"  {rank:>2}. {hit['entry']}\t{hit['score']:.4f}" for rank, hit in enumerate(hits, 1))
    write_stdout("".join(line + "\n" for line in lines))
    say("scores are dot products of the query's vector with each word's row of the word head (DefSent's score)")


HELP_ORDER = 160  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("lookup")(guard(takes_groups(lookup_command)))
