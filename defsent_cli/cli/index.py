"""``defsent index``: your own texts into a searchable index (docs/formats.md, "Text index")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import DefsentError
from ..io import check_output, check_writable
from ..log import note
from ..search.ann import COMPRESSIONS
from . import options as opt
from .boundary import guard, warn_given
from .groups import Values, change, takes_groups
from .input_options import RECORDS
from .models import BUDGET, MODEL, load

AnnCompress = opt.choices("AnnCompress", COMPRESSIONS)


def _model_from_index(ctx, param, value: bool) -> bool:
    """--append's callback: without -m, the model is the one the index records (``_recorded_model``)."""
    ctx.meta[opt.MODEL_FROM_FILE] = value
    return value


AnnCompressOption = Annotated[
    AnnCompress | None,
    typer.Option(
        "--ann-compress",
        help="How the HNSW graph stores its copy of the rows (implies --ann): none, as float32 (the default); "
        "sq8, 8 bits a dimension (FAISS IndexHNSWSQ): the graph's memory at 384 dims about a third, its candidates "
        "scored again exactly against the index's rows.",
        show_default=False,
    ),
]
Append = Annotated[
    bool,
    typer.Option(
        "--append",
        help="Add the texts to the index -o names: encoded as it records (its model, pooling, token limit, "
        "runtime and width; one given otherwise is refused), ids continued from its rows (ids given that it "
        "holds are refused), its checksums and HNSW graph grown. The index is written again beside itself and "
        "replaces itself only when complete.",
        is_eager=True,  # read before -m, whose default is then the model the index records
        callback=_model_from_index,
    ),
]


def index_command(
    texts: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="TEXTS", help="Text files (one text per line, or JSONL with --field); none or '-': stdin."
        ),
    ] = None,
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="The index to write (.h5); with --append, the one to add to.", show_default=False
        ),
    ] = ...,
    model: Values = MODEL(without=BUDGET),
    records: Values = RECORDS(
        field=change(help="Read JSONL and index this string field of each object."),
        id_field=change(
            help="With --field: each row's id (a string or a finite number, each once; default: the line number)."
        ),
    ),
    pooling: opt.Pooling = None,
    ann: Annotated[
        bool,
        typer.Option(
            "--ann",
            help="Also store an HNSW graph (FAISS; pip install 'defsent-cli[ann]') for approximate search of a large "
            "index: search and serve then use it (--exact scores every row). docs/speed.md has its recall and speed.",
        ),
    ] = False,
    ann_compress: AnnCompressOption = None,
    append: Append = False,
    dims: opt.Dims = None,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Index texts for search: each text's unit vector, its id and the text itself, in one HDF5 file.

    \b
    Examples:
      defsent index notes.txt -o notes.h5
      defsent index docs.jsonl --field text --id-field id -o docs.h5
      cat *.txt | defsent index -m ckpt/ -o corpus.h5
      defsent index big.jsonl --field text --ann -o big.h5
      defsent index big.jsonl --field text --ann-compress sq8 -o big-sq8.h5
      defsent index more.txt --append -o notes.h5
      defsent index notes.txt -m mrl-ckpt/ --dims 128 -o notes-128.h5
      defsent search --index notes.h5 "a pot for boiling water"

    Under torchrun the processes share the encoding and rank 0 writes.
    """
    from ..formats.index import check_index_path
    from ..formats.plain import read_plain_records
    from ..search.index_build import build_index

    compress = opt.value(ann_compress)
    ann = ann or compress is not None
    index = None
    if append:
        from ..search.index_append import appendable

        index = appendable(check_index_path(output))  # not there, or not an index: refused before any text is read
        check_writable(output)
        warn_given([("force", force, "--force has no effect with --append: the index is rewritten whole anyway")])
    else:
        check_output(check_index_path(output), force)
    if ann and index is None:
        from ..search.ann import faiss

        faiss()  # missing FAISS fails before any text is read or the model loads
    sources = [str(p) for p in texts] if texts else ["-"]
    if sources.count("-") > 1:
        raise DefsentError("stdin ('-') can be read only once")
    if sources == ["-"] and sys.stdin.isatty():
        raise DefsentError("no input: give text files, or pipe texts into stdin")
    from_stdin = distributed.active() and "-" in sources
    ids: list = []
    lines: list[str] = []
    where: list[tuple[str, int]] = []
    if distributed.is_main() or not from_stdin:
        ids, lines = read_plain_records(
            sources, records.field, records.id_field, records.skip_blank, "index", "texts", where
        )
    loaded = load(model) if index is None else _recorded_model(index, model)
    settings = {
        "pooling": opt.value(pooling),
        "batch_size": model.batch_size,
        "max_length": model.max_length,
        "show_progress": show_progress,
        "source": ",".join(sources),
        "extra_attrs": {"source_field": records.field or "", "id_field": records.id_field or ""},
        "where": where,
        "dims": dims,
    }
    with distributed.session(loaded.device):
        if from_stdin:
            ids, lines = distributed.broadcast_object((ids, lines))
        if index is not None:
            from ..search.ann import ANN_DATASET
            from ..search.index_append import append_index

            asked = (COMPRESSIONS[compress] if compress else "any") if ann else None
            summary = append_index(index, lines, ids, loaded, ann=asked, renumber=records.id_field is None, **settings)
            graph = "; its HNSW graph grown" if ANN_DATASET in index.extras else ""
        else:
            summary = build_index(lines, ids, loaded, output, ann=ann, ann_compress=compress or "none", **settings)
            graph = f"; an HNSW graph ({COMPRESSIONS[compress or 'none']}) for approximate search" if ann else ""
    _said(summary, output, loaded, dims, graph)


def _recorded_model(index, model: Values):
    """The model of an index's rows, loaded for --append: -m where given (the library refuses another), else the
    folder the index records; the runtime and precision it records unless either is given (or set by its
    environment variable)."""
    from ..search.index_append import recorded_runtime

    path = None
    if model.model is None:
        recorded = index.attrs.get("encoder")
        if not isinstance(recorded, str) or not Path(recorded).is_dir():
            raise DefsentError(
                f"its rows were encoded by the model {recorded}, which is not there: give it with -m", path=index.source
            )
        path = Path(recorded)
        note(f"model: {path} (the one {index.source} was built with)")
    runtime = recorded_runtime(index)
    given = (
        {}
        if runtime is None or _given("runtime") or _given("precision")
        else dict(zip(("runtime", "precision"), runtime, strict=True))
    )
    return load(model, path, **given)


def _given(name: str) -> bool:
    """Whether the option ``name`` of the command being run was given (on the command line or by its environment
    variable), not left at its default."""
    import click

    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def _said(summary, output: Path, loaded, dims: int | None, graph: str = "") -> None:
    if summary is None:
        return
    cut = "" if dims is None else f", the leading {summary.dim} of {loaded.dim}"
    what = (
        f"added {summary.added:,} texts to {output}: now {summary.rows:,}"
        if summary.added
        else f"wrote {output}: {summary.rows:,} texts"
    )
    say(
        f"{what} x {summary.dim} dims{cut} ({summary.pooling} pooling, {summary.runtime}; unit vectors: scores are "
        f"cosines{graph})"
    )


HELP_ORDER = 190  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("index")(guard(takes_groups(index_command)))
