"""``defsent eval-cluster``: short-text clustering (k-means, accuracy and NMI) on local data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..evaluation.choices import CLUSTER_TASKS, DEFAULT_RUNS
from . import options as opt
from .boundary import guard
from .groups import Values, change, takes_groups
from .models import BUDGET, MODEL, TOOLBOX, encode_spec, load_encoder
from .render import cluster_table
from .results import check_results_output, expand_models, finish, run_models, table_of

ClusterSeed = opt.seed_option("Seeds torch and the --limit sample.")


def eval_cluster(
    model: Values = MODEL(model=change(annotation=opt.Models), without=BUDGET),
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            "-d",
            envvar="DEFSENT_DATA",
            help="Folder holding clustering/ (or a folder below it, such as senteval/).",
            show_default=False,
        ),
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option("--tasks", "-t", help=f"Comma-separated: {','.join(CLUSTER_TASKS)} (default: all six)."),
    ] = None,
    runs: Annotated[
        int, typer.Option("--runs", min=1, max=1000, help="k-means runs per set, with seeds 0 .. RUNS-1.")
    ] = DEFAULT_RUNS,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=2, help="Cluster a seeded random sample (--seed) of this many texts per set."),
    ] = None,
    seed: ClusterSeed = opt.SEED_DEFAULT,
    pooling: opt.Pooling = None,
    output: opt.ResultsOutput = None,
    force: opt.Force = False,
    show_progress: opt.Progress = None,
    toolbox: Values = TOOLBOX(),
) -> None:
    """Short-text clustering: k-means (k = classes) on frozen embeddings; accuracy (Hungarian) and NMI x100.

    \b
    Examples:
      defsent eval-cluster --model ckpt/ --pooling mean -d ../shared/data \\
          -o cluster.json
      defsent eval-cluster -m 'step1/seed-*' --tasks agnews,tweet --post quantile

    Every figure is the mean ± sd over k-means seeds 0-9 (--runs). With --post and no --fit-on, each
    set's chain is fitted on that set's texts.
    """
    import torch

    from ..evaluation.cluster import evaluate_cluster
    from ..evaluation.cluster_data import load_cluster_tasks

    spec = encode_spec(pooling, toolbox)
    check_results_output(output, force)
    models = expand_models(model.model)
    loaded_tasks = load_cluster_tasks(data, tasks, limit, seed)  # data problems surface before the model loads

    def one(path):
        torch.manual_seed(seed)
        encoder = load_encoder(spec, model, path, show_progress)
        result = evaluate_cluster(encoder, data, loaded_tasks, runs=runs, limit=limit)
        result["seed"] = seed
        return result

    result = run_models(models, one)
    finish(result, table_of(result, cluster_table), output)


HELP_ORDER = 240  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("eval-cluster")(guard(takes_groups(eval_cluster)))
