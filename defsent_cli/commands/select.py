"""``defsent select-best``: the best of several checkpoints, path on stdout."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.table import Table

from .. import io
from ..cli import command
from ..console import err_console
from ..errors import DefsentError
from ..selection import CRITERIA, SelectionSettings, link_winner, select_best
from .options import BATCH_SIZE, DEVICE, FORCE, PROGRESS


@command("select-best")
def select_best_command(
    checkpoints: list[Path] = typer.Argument(..., help="Checkpoint folders to rank (e.g. step1/seed-*)."),
    by: str = typer.Option(
        "stsb-dev", "--by", help="Criterion: " + "; ".join(f"{k} = {v}" for k, v in CRITERIA.items())
    ),
    data: Path = typer.Option(None, "--data", envvar="DEFSENT_DATA", help="SentEval data root (stsb-dev, sts-avg)."),
    dictionary: Path = typer.Option(None, "--dictionary", help="dict-dev: dictionary (default: the training one)."),
    bank: Path = typer.Option(None, "--bank", help="dict-dev: bank (default: the training one)."),
    pooling: str = typer.Option(None, "--pooling", "-p", help="STS pooling (default: each checkpoint's own)."),
    output: Path = typer.Option(None, "--output", "-o", help="Write the ranking JSON here."),
    link: Path = typer.Option(None, "--link", help="Make this path a symlink to the winner."),
    copy: bool = typer.Option(False, "--copy", help="With --link: copy the winner instead of linking."),
    batch_size: int = BATCH_SIZE,
    device: str = DEVICE,
    show_progress: bool = PROGRESS,
    force: bool = FORCE,
) -> None:
    """Rank checkpoints by a criterion; print the winner's path on stdout.

    Example: defsent select-best step1/seed-* --by stsb-dev -o step1/ranking.json --link step1/best
    """
    if output is not None:
        io.check_output(output, force)
    if copy and link is None:
        raise DefsentError("--copy needs --link PATH")
    settings = SelectionSettings(data, dictionary, bank, pooling, batch_size, device, show_progress)
    ranking = select_best(checkpoints, by, settings)
    table = Table(title=f"select-best by {by}: {CRITERIA[by]}")
    for name in ("rank", "checkpoint", "seed", "score"):
        table.add_column(name, justify="left" if name == "checkpoint" else "right")
    for row in ranking:
        table.add_row(str(row["rank"]), row["path"], str(row["seed"]), f"{row['score']:.2f}")
    err_console.print(table)
    winner = Path(ranking[0]["path"])
    if output is not None:
        io.write_json(output, {"criterion": by, "meaning": CRITERIA[by], "best": str(winner), "ranking": ranking})
    if link is not None:
        link_winner(winner, link, copy, force)
        err_console.print(f"{link} -> {winner}")
    sys.stdout.write(f"{winner}\n")
