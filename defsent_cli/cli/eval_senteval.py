"""``defsent eval-senteval``: the SentEval transfer tasks on local data."""

from __future__ import annotations

from typing import Annotated

import typer

from ..evaluation.choices import CONFIGS, MRPC_FEATURES
from . import options as opt
from .boundary import guard
from .groups import Values, change, takes_groups
from .models import BUDGET, MODEL, TOOLBOX, encode_spec, load_encoder
from .render import senteval_table
from .results import check_results_output, expand_models, finish, run_models, table_of

SentevalConfig = opt.choices("SentevalConfig", CONFIGS)

MrpcFeatures = opt.choices("MrpcFeatures", MRPC_FEATURES)

SentevalSeed = opt.seed_option(
    "Seed for folds, classifier initialisation and data order; SentEval's own is 1111 (the one exception to "
    "defsent's default seed, so results match SentEval's)."
)


def eval_senteval(
    model: Values = MODEL(model=change(annotation=opt.Models), without=BUDGET),
    data: opt.Data = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks",
            "-t",
            help="Comma-separated: MR,CR,SUBJ,MPQA,SST-2,TREC,MRPC (the default seven), SST-5,SICK-E,SciCite,"
            "STS-B-5,SICK-R-5, or all (the twelve).",
        ),
    ] = None,
    config: Annotated[
        SentevalConfig,
        typer.Option(
            "--config",
            "-c",
            help="default: SentEval's literature setting (kfold 10, adam, batch 64, tenacity 5, epoch_size 4); "
            "prototyping: SentEval's fast setting (kfold 5, rmsprop, batch 128, tenacity 3, epoch_size 2).",
        ),
    ] = SentevalConfig.default,
    seed: SentevalSeed = 1111,
    pooling: opt.Pooling = None,
    mrpc_features: Annotated[
        MrpcFeatures,
        typer.Option(
            "--mrpc-features",
            "--pair-features",
            help="Pair tasks (MRPC, SICK-E, STS-B-5, SICK-R-5): senteval = [|u-v|, u*v] as SentEval; "
            "concat = [u, v, |u-v|, u*v].",
        ),
    ] = MrpcFeatures.senteval,
    output: opt.ResultsOutput = None,
    force: opt.Force = False,
    show_progress: opt.Progress = None,
    toolbox: Values = TOOLBOX(),
) -> None:
    """SentEval transfer tasks: a logistic-regression probe (SentEval's nhid 0 classifier) on frozen features.

    \b
    Examples:
      defsent eval-senteval --model ckpt/ --pooling mean --data ../shared/data \\
          -o transfer.json
      defsent eval-senteval -m ckpt/ --tasks SST-5,SICK-E,SciCite,STS-B-5,SICK-R-5

    With --post and no --fit-on, each task's chain is fitted on that task's sentences (no labels).
    STS-B-5 and SICK-R-5 are SentEval's supervised relatedness tasks (soft 5-class targets); they
    report Pearson / Spearman x100 of the expected score, not an accuracy.
    """
    from ..evaluation.senteval import check_options, evaluate_senteval  # torch: by the command, not by --help
    from ..evaluation.senteval_data import load_transfer_tasks

    spec = encode_spec(pooling, toolbox)
    check_results_output(output, force)
    check_options(opt.value(config), opt.value(mrpc_features))
    models = expand_models(model.model)
    loaded_tasks = load_transfer_tasks(data, tasks)  # data problems surface before the model loads

    def one(path):
        encoder = load_encoder(spec, model, path, show_progress)
        return evaluate_senteval(
            encoder, data, loaded_tasks, config=opt.value(config), seed=seed, mrpc_features=opt.value(mrpc_features)
        )

    result = run_models(models, one)
    finish(result, table_of(result, senteval_table), output)


HELP_ORDER = 230  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("eval-senteval")(guard(takes_groups(eval_senteval)))
