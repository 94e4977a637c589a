"""``defsent select-best``: the best of several checkpoints, path on stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import err_console, say
from ..errors import DefsentError
from ..evaluation.criteria import CRITERIA, Criterion
from ..io import check_output, write_json, write_stdout
from . import options as opt
from .boundary import guard
from .render import ranking_table
from .results import expand_models

CriterionName = opt.choices("CriterionName", CRITERIA)


def select_best_command(
    checkpoints: Annotated[
        list[Path],
        typer.Argument(
            metavar="CHECKPOINTS", help="Checkpoint folders to rank (e.g. step1/seed-*; a quoted glob is expanded)."
        ),
    ],
    by: Annotated[
        CriterionName,
        typer.Option("--by", help="Criterion: " + "; ".join(f"{k} = {v}" for k, v in CRITERIA.items()) + "."),
    ] = CriterionName("stsb-dev"),
    data: opt.Data = None,
    dictionary: Annotated[
        Path | None, typer.Option("--dictionary", help="dict-dev: dictionary (default: the training one).")
    ] = None,
    bank: Annotated[Path | None, typer.Option("--bank", help="dict-dev: bank (default: the training one).")] = None,
    pooling: Annotated[
        opt.PoolingName | None, typer.Option("--pooling", "-p", help="STS pooling (default: each checkpoint's own).")
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the ranking JSON here.")] = None,
    link: Annotated[Path | None, typer.Option("--link", help="Make this path a symlink to the winner.")] = None,
    copy: Annotated[bool, typer.Option("--copy", help="With --link: copy the winner instead of linking.")] = False,
    batch_size: opt.BatchSize = 32,
    device: opt.Device = "auto",
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Rank checkpoints by a criterion; print the winner's path on stdout.

    \b
    Example:
      defsent select-best step1/seed-* --by stsb-dev -o step1/ranking.json \\
          --link step1/best
    """
    from ..evaluation.selection import check_link, link_winner, score_summary, select_best  # numpy: not for --help

    if output is not None:
        check_output(output, force)
    if copy and link is None:
        raise DefsentError("--copy needs --link PATH")
    if link is not None:
        check_link(link, force)
    criterion = Criterion(
        opt.value(by), data, dictionary, bank, opt.value(pooling), batch_size, show_progress
    ).prepare()
    ranking = select_best(expand_models(checkpoints), criterion, device)
    err_console.print(ranking_table(ranking, criterion.name, criterion.meaning))
    summary = score_summary(ranking)
    if summary["sd"] is not None:
        say(
            f"{criterion.name} over {summary['n']} checkpoints: {summary['mean']:.2f} ± {summary['sd']:.2f} (mean ± sd)"
        )
    winner = Path(ranking[0]["path"])
    if output is not None:
        document = {"criterion": criterion.name, "meaning": criterion.meaning, "best": str(winner), "ranking": ranking}
        write_json(output, {**document, "summary": summary})
    if link is not None:
        link_winner(winner, link, copy, force)
        say(f"{link} -> {winner}")
    write_stdout(f"{winner}\n")


def register(app: typer.Typer) -> None:
    app.command("select-best")(guard(select_best_command))
