"""``defsent eval-sts``: unsupervised STS on local SentEval data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..evaluation.choices import AGGREGATIONS, BACKENDS, LAYOUTS, STS_SPLITS
from . import options as opt
from .boundary import guard
from .render import sts_table
from .results import check_results_output, expand_models, finish, run_models, table_of

StsSplit = opt.choices("StsSplit", STS_SPLITS)

Aggregation = opt.choices("Aggregation", AGGREGATIONS)

Scorer = opt.choices("Scorer", BACKENDS)

Layout = opt.choices("Layout", LAYOUTS)


def eval_sts(
    model: opt.Models = None,
    data: opt.Data = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks",
            "-t",
            help="Comma-separated: STS12,STS13,STS14,STS15,STS16,STS-B,SICK-R (default: all with --split).",
        ),
    ] = None,
    split: Annotated[
        StsSplit, typer.Option("--split", help="test (all tasks), dev or train (STS-B and SICK-R only).")
    ] = StsSplit.test,
    aggregation: Annotated[
        Aggregation,
        typer.Option(
            "--aggregation",
            "-a",
            help="STS12-16: all = subsets concatenated, one correlation (SimCSE / DefSent / DefSent+); mean / wmean "
            "= SentEval's per-subset average / size-weighted average.",
        ),
    ] = Aggregation.all,
    pooling: opt.Pooling = None,
    backend: Annotated[
        Scorer,
        typer.Option("--backend", help="native, or mteb (mteb's own STS evaluator on the same local pairs)."),
    ] = Scorer.native,
    layout: Annotated[
        Layout,
        typer.Option(
            "--layout",
            help="STS12-16 files: auto (SentEval STS.input.* if present, else the original STS2016.input.*), "
            "senteval, or semeval (prefer the original untokenised files where a folder has them).",
        ),
    ] = Layout.auto,
    batch_size: opt.BatchSize = 32,
    max_length: opt.MaxLength = None,
    device: opt.Device = "auto",
    runtime: opt.Runtime = opt.RUNTIME_DEFAULT,
    precision: opt.Precision = opt.PRECISION_DEFAULT,
    exclude_pairs: Annotated[
        list[Path] | None,
        typer.Option(
            "--exclude-pairs",
            help="Leave out every pair that this file also holds (same two sentences, either order, case and "
            "spacing aside): the pairs a model trained on, e.g. STS-B train (sts-train.csv, a TSV or SICK file). "
            "Repeatable; the removed counts are reported, and the scores on every pair too (JSON all_pairs), "
            "from the same vectors.",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", min=0, max=2**32 - 1, help="Seeds torch (STS scoring has no randomness).")
    ] = opt.SEED_DEFAULT,
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
) -> None:
    """Unsupervised STS: Spearman x100 of cosine similarity vs gold on STS12-16, STS-B and SICK-R.

    \b
    Examples:
      defsent eval-sts --model ckpt/ --pooling mean -d ../shared/data -o sts.json
      defsent eval-sts -m ckpt/ --pooling prompt-avg --template T4 \\
          --weighting idf --post quantile
      defsent eval-sts -m 'step1/seed-*' -o sts.json   # mean ± sd over the seeds
      defsent eval-sts -m bi/ --exclude-pairs sts-train.csv -o clean.json
    """
    import torch

    from ..evaluation.sts import check_options, evaluate_sts
    from ..evaluation.sts_data import load_sts_tasks

    spec = opt.encode_spec(
        pooling, layers, template, ditto_head, weighting, idf_corpus, drop_tokens, post, fit_on, post_file
    )
    check_results_output(output, force)
    check_options(opt.value(aggregation), opt.value(backend))
    models = expand_models(model)
    loaded_tasks = load_sts_tasks(data, tasks, opt.value(split), opt.value(layout))  # before the model loads
    whole = loaded_tasks if exclude_pairs else None  # every pair too, scored from the same vectors
    if exclude_pairs:
        from ..evaluation.sts_data import exclude_pairs as leave_out
        from ..formats.pairs import pair_keys

        loaded_tasks = leave_out(loaded_tasks, pair_keys(exclude_pairs))
        removed = ", ".join(f"{t.name} {t.excluded:,} of {t.n + t.excluded:,}" for t in loaded_tasks)
        say(f"left out the pairs of {', '.join(map(str, exclude_pairs))}: {removed}")

    def one(path):
        torch.manual_seed(seed)
        encoder = opt.encoder(spec, path, device, runtime, precision, batch_size, max_length, show_progress)
        result = evaluate_sts(
            encoder,
            data,
            loaded_tasks,
            split=opt.value(split),
            aggregation=opt.value(aggregation),
            layout=opt.value(layout),
            backend=opt.value(backend),
            whole=whole,
        )
        result["seed"] = seed
        if exclude_pairs:
            result["exclude_pairs"] = [str(path) for path in exclude_pairs]
        return result

    result = run_models(models, one)
    finish(result, table_of(result, sts_table), output)


def register(app: typer.Typer) -> None:
    app.command("eval-sts")(guard(eval_sts))
