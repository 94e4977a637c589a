"""``defsent ditto-search``: Ditto's best attention head on STS-B dev."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table

from ..io import write_json, write_stdout
from . import options as opt
from .boundary import guard
from .groups import Values, takes_groups
from .models import MODEL
from .render import show
from .results import check_results_output


def ditto_search(
    model: Values = MODEL(only=("model", "batch_size", "max_length", "device")),
    data: opt.Data = None,
    layers: Annotated[
        str,
        typer.Option(
            "--layers", help="Token states weighted by each head's diagonal (as --layers; Ditto: first-last)."
        ),
    ] = "first-last",
    top: Annotated[int, typer.Option("--top", min=1, help="Rows of the table.")] = 10,
    output: opt.ResultsOutput = None,
    force: opt.Force = False,
    show_progress: opt.Progress = None,
) -> None:
    """Grid-search Ditto's attention head on STS-B dev (Spearman), as the paper did; print the best head.

    \b
    Example:
      HEAD=$(defsent ditto-search -m ckpt/ --data ../shared/data)
      defsent eval-sts -m ckpt/ --pooling ditto --ditto-head "$HEAD"
    """
    from ..encoder.models import load_model
    from ..encoder.pooling import parse_layers
    from ..evaluation.ditto import search_heads  # torch: imported by the command, not by --help
    from ..evaluation.sts_data import load_sts_tasks

    parse_layers(layers)
    check_results_output(output, force, stdout_carries="the best head")
    started = time.perf_counter()
    task = load_sts_tasks(data, ["STS-B"], "dev")[0]
    loaded = load_model(model.model, model.device)
    rows = search_heads(loaded, task, layers, model.batch_size, model.max_length, show_progress)
    table = Table(title=f"Ditto heads on STS-B dev ({task.n:,} pairs), layers {layers}")
    for column in ("head (layer-head)", "Spearman", "Pearson"):
        table.add_column(column, justify="right")
    for row in rows[:top]:
        table.add_row(row["head"], f"{row['spearman']:.2f}", f"{row['pearson']:.2f}")
    show(table, to_stdout=False)
    write_stdout(rows[0]["head"] + "\n")  # stdout: the best head, for --ditto-head "$(defsent ditto-search ...)"
    if output is not None:
        from ..formats.results import provenance, task_folder_provenance

        seconds = round(time.perf_counter() - started, 2)
        document = {
            "model": str(model.model),
            "layers": layers,
            "split": "STS-B dev",
            "heads": rows,
            "seconds": seconds,
        }
        document["provenance"] = provenance([model.model], [task_folder_provenance(task.folder)])
        write_json(output, document)


HELP_ORDER = 260  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("ditto-search")(guard(takes_groups(ditto_search)))
