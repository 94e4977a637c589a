"""``defsent index``: your own texts into a searchable index (docs/formats.md, "Text index")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import DefsentError
from ..io import check_output
from . import options as opt
from .boundary import guard
from .groups import Values, change, takes_groups
from .input_options import RECORDS
from .models import BUDGET, MODEL, load


def index_command(
    texts: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="TEXTS", help="Text files (one text per line, or JSONL with --field); none or '-': stdin."
        ),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="The index to write (.h5).", show_default=False)] = ...,
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
      defsent index notes.txt -m mrl-ckpt/ --dims 128 -o notes-128.h5
      defsent search --index notes.h5 "a pot for boiling water"

    Under torchrun the processes share the encoding and rank 0 writes.
    """
    from ..formats.index import check_index_path
    from ..formats.plain import read_plain_records
    from ..search.index_build import build_index

    check_output(check_index_path(output), force)
    if ann:
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
    loaded = load(model)
    extra = {"source_field": records.field or "", "id_field": records.id_field or ""}
    with distributed.session(loaded.device):
        if from_stdin:
            ids, lines = distributed.broadcast_object((ids, lines))
        summary = build_index(
            lines,
            ids,
            loaded,
            output,
            pooling=opt.value(pooling),
            batch_size=model.batch_size,
            max_length=model.max_length,
            show_progress=show_progress,
            source=",".join(sources),
            extra_attrs=extra,
            ann=ann,
            where=where,
            dims=dims,
        )
    if summary is not None:
        cut = "" if dims is None else f", the leading {summary.dim} of {loaded.dim}"
        say(
            f"wrote {output}: {summary.rows:,} texts x {summary.dim} dims{cut} ({summary.pooling} pooling, "
            f"{summary.runtime}; unit vectors: scores are cosines{'; an HNSW graph for approximate search' if ann else ''})"
        )


HELP_ORDER = 190  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("index")(guard(takes_groups(index_command)))
