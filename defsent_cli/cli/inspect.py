"""``defsent inspect``: isotropy figures and pictures of entry spaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..console import err_console, say
from ..formats.vectors import load_space
from ..io import check_output, write_json, write_stdout
from ..space.isotropy import space_report
from . import options as opt
from .boundary import guard
from .render import inspect_table


def inspect(
    paths: Annotated[
        list[Path], typer.Argument(metavar="PATHS", help="Bank(s) (.h5) or vector files (.npy) to describe, in order.")
    ],
    pairs: Annotated[
        int, typer.Option("--pairs", min=1, help="Random pairs for the mean cosine (all pairs if fewer).")
    ] = 100_000,
    seed: opt.Seed = opt.SEED_DEFAULT,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Draw the SVD and PCA-whitened 2-D projections (.png, .pdf, .svg).")
    ] = None,
    points: Annotated[
        int, typer.Option("--points", min=10, help="Points per projection in the plot (a random sample).")
    ] = 5000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON on stdout.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the figures as JSON to this file.")
    ] = None,
    force: opt.Force = False,
) -> None:
    """Isotropy figures of entry spaces (mean cosine, variance shares, I(W), skewness / kurtosis), optional plot.

    Several banks (e.g. PST steps, before / after ICA) give one column and one plot row each.

    \b
    Example:
      defsent inspect bank.h5 bank-ica.h5 --plot space.png
    """
    if output is not None:
        check_output(output, force)
    if plot is not None:
        from ..space.plots import check_plot_path

        check_output(check_plot_path(plot), force)
    spaces = [load_space(p) for p in paths]
    reports = [space_report(space, pairs, seed) for space in spaces]
    err_console.print(inspect_table(reports))
    for number, report in enumerate(reports, start=1):
        say(f"{number}: {report['describe']}")
    document = {"pairs": pairs, "seed": seed, "banks": reports}
    if output is not None:
        write_json(output, document)
        say(f"wrote {output}")
    if as_json:
        write_stdout(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    if plot is not None:
        from ..space.plots import plot_spaces

        plot_spaces(plot, spaces, points=points, seed=seed)
        say(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("inspect")(guard(inspect))
