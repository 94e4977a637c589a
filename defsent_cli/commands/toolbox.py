"""``defsent fit-post`` and ``defsent ditto-search``: fit the toolbox's pieces that need data."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from .. import io
from ..cli import command
from ..console import err_console
from ..errors import DefsentError
from ..models import load_model
from ..toolbox import Toolbox
from .evaluate import DATA, OUTPUT, _prepare_output
from .options import BATCH_SIZE, DEVICE, FORCE, MAX_LENGTH, MODEL, POOLING, PROGRESS, with_toolbox


@command("fit-post")
@with_toolbox
def fit_post(
    model: Path = MODEL,
    corpus: Path = typer.Option(..., "--input", "-i", help="Sentences to fit on, one per line."),
    output: Path = typer.Option(..., "--output", "-o", help="The fitted chain (.h5), for --post-file."),
    pooling: str = POOLING,
    batch_size: int = BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    device: str = DEVICE,
    show_progress: bool = PROGRESS,
    force: bool = FORCE,
    toolbox: Toolbox = None,
) -> None:
    """Fit a --post chain on a corpus encoded with MODEL and its pooling; save it for --post-file.

    Example: defsent fit-post -m ckpt/ --pooling mean --post whiten-k:256 -i wiki.txt -o post.h5
    """
    if not toolbox.post:
        raise DefsentError("give the steps to fit with --post (e.g. --post zscore or --post whiten-k:256)")
    if toolbox.fit_on is not None or toolbox.post_file is not None:
        raise DefsentError("fit-post fits on --input; --fit-on and --post-file belong to encode and the evaluations")
    if output.suffix.lower() not in (".h5", ".hdf5"):
        raise DefsentError("the fitted chain is HDF5: give the output a .h5 suffix", path=output)
    io.check_output(output, force)
    if not corpus.is_file():
        raise DefsentError("file not found", path=corpus)
    loaded = load_model(model, device)
    chosen = toolbox.pooling_for(loaded, max_length)
    toolbox.fit_on = corpus
    chain = toolbox.post_for(loaded, chosen, batch_size, max_length, show_progress)
    label = getattr(chosen, "label", None) or pooling or loaded.default_pooling
    settings = chosen.describe() if chosen is not None else {"pooling": label}
    chain.save(output, {"model": str(model), "pooling": label, "pooling_settings": json.dumps(settings)})
    rows = chain.describe().get("fit_rows", "?")
    err_console.print(f"fitted {chain.spec()} on {rows:,} sentences ({label} pooling) -> {output}")


@command("ditto-search")
def ditto_search(
    model: Path = MODEL,
    data: Path = DATA,
    layers: str = typer.Option(
        "first-last", "--layers", help="Token states weighted by each head's diagonal (as --layers; Ditto: first-last)."
    ),
    top: int = typer.Option(10, "--top", min=1, help="Rows of the table."),
    batch_size: int = BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    device: str = DEVICE,
    output: Path = OUTPUT,
    force: bool = FORCE,
    show_progress: bool = PROGRESS,
) -> None:
    """Grid-search Ditto's attention head on STS-B dev (Spearman), as the paper did; print the best head.

    Example: defsent ditto-search -m ckpt/ --data ../shared/data   # then: --pooling ditto --ditto-head L-H
    """
    import time

    from rich.table import Table

    from ..ditto import search_heads
    from ..evaluation.results import print_table
    from ..evaluation.sts import load_sts_tasks
    from ..pooling import parse_layers

    parse_layers(layers)
    _prepare_output(output, force)
    started = time.perf_counter()
    task = load_sts_tasks(data, ["STS-B"], "dev")[0]
    loaded = load_model(model, device)
    rows = search_heads(loaded, task, layers, batch_size, max_length, show_progress)
    table = Table(title=f"Ditto heads on STS-B dev ({task.n:,} pairs), layers {layers}")
    for column in ("head (layer-head)", "Spearman", "Pearson"):
        table.add_column(column, justify="right")
    for row in rows[:top]:
        table.add_row(row["head"], f"{row['spearman']:.2f}", f"{row['pearson']:.2f}")
    print_table(table, to_stdout=False)
    typer.echo(rows[0]["head"])  # stdout: the best head, for --ditto-head "$(defsent ditto-search ...)"
    if output is not None:
        seconds = round(time.perf_counter() - started, 2)
        io.write_json(
            output, {"model": str(model), "layers": layers, "split": "STS-B dev", "heads": rows, "seconds": seconds}
        )
