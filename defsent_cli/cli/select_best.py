"""``defsent select-best``: the best of several checkpoints, path on stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..errors import DefsentError
from ..evaluation.criteria import CRITERIA, Criterion
from ..io import outputs_together, write_json, write_stdout
from . import options as opt
from .boundary import guard
from .render import ranking_table, show
from .results import check_results_output, expand_models

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

    check_results_output(output, force, stdout_carries="the winner's path")
    if copy and link is None:
        raise DefsentError("--copy needs --link PATH")
    if link is not None:
        check_link(link, force)
    criterion = Criterion(
        opt.value(by), data, dictionary, bank, opt.value(pooling), batch_size, show_progress
    ).prepare()
    ranking = select_best(expand_models(checkpoints), criterion, device)
    show(ranking_table(ranking, criterion.name, criterion.meaning), to_stdout=False)
    summary = score_summary(ranking)
    if summary["sd"] is not None:
        say(
            f"{criterion.name} over {summary['n']} checkpoints: {summary['mean']:.2f} ± {summary['sd']:.2f} (mean ± sd)"
        )
    winner = Path(ranking[0]["path"])
    if output is not None:
        document = {"criterion": criterion.name, "meaning": criterion.meaning, "best": str(winner), "ranking": ranking}
        document["summary"] = summary
        document["provenance"] = ranking_provenance(criterion, ranking)
    with outputs_together(output, link):  # a link that fails takes the ranking with it
        if output is not None:
            write_json(output, document)
        if link is not None:
            link_winner(winner, link, copy, force)
    if link is not None:
        say(f"{link} -> {winner}")
    write_stdout(f"{winner}\n")


def ranking_provenance(criterion: Criterion, ranking: list[dict]) -> dict:
    """The ranking's provenance: every checkpoint ranked, and the data the criterion read (the STS tasks'
    folders; dict-dev: the dictionary and bank given, else those each checkpoint trained on)."""
    from ..formats.checkpoint import read_info
    from ..formats.results import provenance, task_folder_provenance

    paths = [row["path"] for row in ranking]
    if criterion.name != "dict-dev":
        data = [task_folder_provenance(task.folder) for task in criterion.tasks]
    else:
        data = []
        for path in paths:
            info = read_info(path)
            for given, key in ((criterion.dictionary, "dictionary"), (criterion.bank, "bank")):
                if given is not None or info.get(key):
                    data.append(given if given is not None else info[key])
    return provenance(paths, data)


HELP_ORDER = 140  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("select-best")(guard(select_best_command))
