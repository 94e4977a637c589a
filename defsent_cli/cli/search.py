"""``defsent search``: the top-k rows of a text index (your texts) or an entry bank (the reverse dictionary)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..errors import DefsentError
from ..io import json_text, write_stdout
from ..log import note
from . import options as opt
from .boundary import guard, warn_given
from .groups import Values, change, takes_groups
from .input_options import read_queries
from .models import MODEL, QUERIES, load
from .search_options import ANN_SEARCH, Dictionary, Similarity, SimilarityName

CollectionModel = Annotated[
    Path | None,
    typer.Option(
        "--model",
        "-m",
        help="The model of the queries: a folder or a Hub name. Default: the model the index or bank records (its "
        "encoder), else $DEFSENT_MODEL, else the bundled all-MiniLM-L6-v2.",
        show_default=False,
        path_type=str,  # as typed: ./x is a folder, never a Hub name (encoder/hub.py)
    ),
]


def collection_model(model: Path | None, collection: Path) -> Path:
    """The model for a collection's queries: ``-m`` (a folder or a Hub name), else the encoder the file records
    (said in a note), else $DEFSENT_MODEL or the bundled model (said too)."""
    from ..encoder.hub import resolve_model
    from ..search.collections import recorded_model

    if model is not None:
        return Path(model) if Path(model).is_dir() else resolve_model(str(model))
    found = recorded_model(collection)
    if found is not None:
        note(f"model: {found} (the one {collection} was built with; -m chooses another)")
        return found
    from ..encoder.models import default_model

    folder, source = default_model()
    note(f"model: {folder} ({source}; {collection} records no model folder that is still there; -m chooses another)")
    return resolve_model(str(folder))


def open_collection(
    path: Path,
    model: Values,
    similarity,
    pooling,
    dictionary: Path | None = None,
    how: Values | None = None,
    dims: int | None = None,
):
    """The index or bank at ``path`` with its query encoder, loaded (:mod:`defsent_cli.search.collections`); ``how``:
    the :data:`ANN_SEARCH` values; ``dims``: both sides cut to it (``--dims``)."""
    from ..search.collections import bank_collection, index_collection, open_collection_file

    file = open_collection_file(path)
    how = how or Values(exact=False, ef_search=None)
    if file.kind == "index":
        if dictionary is not None:
            raise DefsentError("--dictionary gives a bank's definitions; an index holds its own texts")
        warn_given(
            [
                (
                    "similarity",
                    True,
                    f"--similarity has no effect on an index: {path} holds unit vectors, so its "
                    "scores are cosines either way",
                )
            ]
        )
    else:
        warn_given(
            [
                ("exact", True, f"--exact has no effect on a bank: {path} has no HNSW graph, its search is exact"),
                ("ef_search", True, f"--ef-search has no effect on a bank: {path} has no HNSW graph"),
            ]
        )
    loaded = load(model, collection_model(model.model, path))
    if file.kind == "index":
        return index_collection(file, loaded, model.batch_size, opt.value(pooling), how.exact, how.ef_search, dims)
    return bank_collection(file, loaded, opt.value(similarity), model.batch_size, opt.value(pooling), dictionary, dims)


def search_command(
    queries: Annotated[
        list[str] | None, typer.Argument(metavar="QUERIES", help="What to search for; none: one per line on stdin.")
    ] = None,
    index: Annotated[
        Path,
        typer.Option(
            "--index", help="A text index (defsent index) or an entry bank (embed-entries).", show_default=False
        ),
    ] = ...,
    k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Hits to show per query.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per query on stdout.")] = False,
    model: Values = MODEL(model=change(annotation=CollectionModel), without=QUERIES),
    similarity: Similarity = SimilarityName("cosine"),
    dictionary: Dictionary = None,
    pooling: opt.Pooling = None,
    how: Values = ANN_SEARCH(),
    dims: opt.Dims = None,
) -> None:
    """Search a text index or an entry bank: the k rows most similar to each query, best first (exact search, or
    an index's HNSW graph where it has one).

    \b
    Examples:
      defsent search --index notes.h5 "a pot for boiling water"
      defsent search --index bank.h5 -k 3 --json "a baby pig"
      defsent search --index docs.h5 -m ckpt/ < queries.txt
      defsent search --index docs.h5 -m mrl-ckpt/ --dims 128 "a baby pig"

    Scores are cosines unless --similarity dot (a bank's raw dot products), the scale lookup ranks on too; the line
    on stderr says which. A bank's hits show their definitions beneath (its dictionary, or --dictionary).
    """
    queries = read_queries(queries, "queries", "give something to search for", "search")
    collection = open_collection(index, model, similarity, pooling, dictionary, how, dims)
    found = collection.search(queries, k)
    lines = []
    for query, hits in zip(queries, found, strict=True):
        if as_json:
            row = {"query": query, "kind": collection.kind, "similarity": collection.score_kind}
            cut = {} if collection.cut is None else {"dims": collection.cut}  # the leading dims scored
            row = {**row, "search": collection.search_kind, **cut, "results": hits}
            lines.append(json_text(row))
            continue
        lines.append(query)
        for rank, hit in enumerate(hits, 1):
            label = hit["entry"] if collection.kind == "bank" else f"[{hit['id']}] {hit['text']}"
            lines.append(f"  {rank:>2}. {label}\t{hit['score']:.4f}")
            lines.extend(f"      {text}" for text in hit.get("definitions") or [])  # a bank's, as lookup shows them
    write_stdout("".join(line + "\n" for line in lines))
    what = "rows of the index" if collection.kind == "index" else "entries of the bank"
    if collection.cut is not None:
        what += f", each vector's leading {collection.cut} dims"
    if collection.score_kind == "cosine":
        say(f"scores are cosine similarities of each query's vector with the {what} ({collection.search_note})")
    else:
        say(f"scores are dot products of each query's vector with the {what}, not cosines ({collection.search_note})")


HELP_ORDER = 200  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("search")(guard(takes_groups(search_command)))
