"""``defsent eval-cluster``: short-text clustering (k-means, accuracy and NMI) on local data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..evaluation.choices import CLUSTER_TASKS, DEFAULT_RUNS
from . import options as opt
from .boundary import guard
from .render import cluster_table
from .results import check_results_output, expand_models, finish, run_models, table_of


def eval_cluster(
    model: opt.Models = None,
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
    seed: Annotated[
        int, typer.Option("--seed", min=0, max=2**32 - 1, help="Seeds torch and the --limit sample.")
    ] = opt.SEED_DEFAULT,
    pooling: opt.Pooling = None,
    batch_size: opt.BatchSize = 32,
    max_length: opt.MaxLength = None,
    device: opt.Device = "auto",
    runtime: opt.Runtime = opt.RUNTIME_DEFAULT,
    precision: opt.Precision = opt.PRECISION_DEFAULT,
    output: opt.ResultsOutput = None,
    force: opt.Force = False,
    show_progress: opt.Progress = None,
    layers: opt.Layers = None,
    template: opt.Template = None,
    ditto_head: opt.DittoHead = None,
    weighting: opt.WeightingOption = None,
    idf_corpus: opt.IdfCorpus = None,
    drop_tokens: opt.DropTokens = None,
    post: opt.Post = None,
    fit_on: opt.FitOn = None,
    post_file: opt.PostFile = None,
    normalize: opt.Normalize = None,
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

    spec = opt.encode_spec(
        pooling, layers, template, ditto_head, weighting, idf_corpus, drop_tokens, post, fit_on, post_file, normalize
    )
    check_results_output(output, force)
    models = expand_models(model)
    loaded_tasks = load_cluster_tasks(data, tasks, limit, seed)  # data problems surface before the model loads

    def one(path):
        torch.manual_seed(seed)
        encoder = opt.encoder(spec, path, device, runtime, precision, batch_size, max_length, show_progress)
        result = evaluate_cluster(encoder, data, loaded_tasks, runs=runs, limit=limit)
        result["seed"] = seed
        return result

    result = run_models(models, one)
    finish(result, table_of(result, cluster_table), output)


def register(app: typer.Typer) -> None:
    app.command("eval-cluster")(guard(eval_cluster))
