"""``defsent plot``: the loss and dev curves of training runs in one picture, several runs overlaid (seeds)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..training.specs import SPECS
from . import options as opt
from .boundary import guard

_TRAINERS = ", ".join(list(SPECS)[:-1]) + f" or {list(SPECS)[-1]}"  # every objective's command (the registry's)


def plot_command(
    runs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUNS",
            help=f"Training run folders: checkpoints of {_TRAINERS}, or the "
            "OUTPUT.partial/ folder of a run still going; a quoted glob ('step1/seed-*') names every folder it "
            "matches.",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="The picture to write: .png, .pdf or .svg.", show_default=False),
    ],
    smooth: Annotated[
        int,
        typer.Option(
            "--smooth",
            min=1,
            help="Draw the loss as a moving average of this many logged points (the raw curve faint behind it); "
            "1: as logged.",
        ),
    ] = 1,
    title: Annotated[str | None, typer.Option("--title", help="A title above the panels.", show_default=False)] = None,
    force: opt.Force = False,
) -> None:
    """Draw the loss and dev curves of training runs in one picture, several runs (seeds) overlaid.

    The loss against the step, one colour a run labelled by its folder's name; below it, when any run was
    scored as it trained (--eval-every), the dev score against the step, a star on the step whose weights the
    checkpoint kept. The curves come from each folder's train_log.jsonl (log.jsonl in a .partial/ folder)
    and defsent.json; a checkpoint not written yet is read from its .partial/ folder. A run whose loss became
    NaN or infinite diverged: it is named in a warning (its finite losses drawn), or in an error when no run
    leaves anything to draw.

    \b
    Examples:
      defsent plot 'step1/seed-*' -o curves.png
      defsent plot lr-2e-5/ lr-3e-5/ --smooth 5 --title 'learning rates' \\
          -o curves.svg
    """
    from ..formats.curves import check_diverged, read_runs
    from ..io import check_output
    from ..space.plots import check_plot_path, plot_curves

    check_output(check_plot_path(output, needs="defsent plot"), force)
    curves = read_runs(runs)
    check_diverged(curves)  # a run whose loss went NaN: a warning, or an error when nothing is left to draw
    plot_curves(output, curves, smooth=smooth, title=title)
    losses, scored = sum(1 for run in curves if run.loss), sum(1 for run in curves if run.dev)
    runs_drawn = f"{len(curves)} run{'s' if len(curves) != 1 else ''}"
    say(f"wrote {output}: {runs_drawn}, {losses} loss curve{'s' if losses != 1 else ''}, {scored} dev")


HELP_ORDER = 130  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("plot")(guard(plot_command))
