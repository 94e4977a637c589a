"""``defsent eval-sts``: unsupervised STS on local SentEval data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..evaluation.choices import AGGREGATIONS, BACKENDS, LAYOUTS, STS_SPLITS
from . import options as opt
from .boundary import guard
from .groups import Values, change, takes_groups
from .models import BUDGET, MODEL, TOOLBOX, encode_spec, load_encoder
from .render import sts_table
from .results import check_results_output, expand_models, finish, run_models, table_of

StsSplit = opt.choices("StsSplit", STS_SPLITS)

Aggregation = opt.choices("Aggregation", AGGREGATIONS)

Scorer = opt.choices("Scorer", BACKENDS)

Layout = opt.choices("Layout", LAYOUTS)

StsSeed = opt.seed_option("Seeds torch (STS scoring has no randomness).")


def eval_sts(
    model: Values = MODEL(model=change(annotation=opt.Models), without=BUDGET),
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
    seed: StsSeed = opt.SEED_DEFAULT,
    output: opt.ResultsOutput = None,
    force: opt.Force = False,
    show_progress: opt.Progress = None,
    toolbox: Values = TOOLBOX(without=("normalize",)),
    dims: opt.Dims = None,
) -> None:
    """Unsupervised STS: Spearman x100 of cosine similarity vs gold on STS12-16, STS-B and SICK-R.

    \b
    Examples:
      defsent eval-sts --model ckpt/ --pooling mean -d ../shared/data -o sts.json
      defsent eval-sts -m ckpt/ --pooling prompt-avg --template T4 \\
          --weighting idf --post quantile
      defsent eval-sts -m 'step1/seed-*' -o sts.json   # mean ± sd over the seeds
      defsent eval-sts -m bi/ --exclude-pairs sts-train.csv -o clean.json
      defsent eval-sts -m mrl-ckpt/ --dims 128 -o sts-128.json
    """
    import torch

    from ..evaluation.sts import check_options, evaluate_sts
    from ..evaluation.sts_data import load_sts_tasks

    spec = encode_spec(pooling, toolbox)
    check_results_output(output, force)
    check_options(opt.value(aggregation), opt.value(backend))
    models = expand_models(model.model)
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
        encoder = load_encoder(spec, model, path, show_progress).cut_to(dims)  # recorded: the JSON's "dims"
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


HELP_ORDER = 220  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("eval-sts")(guard(takes_groups(eval_sts)))
