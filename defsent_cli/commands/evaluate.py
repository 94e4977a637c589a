"""``defsent eval-sts`` and ``defsent eval-senteval``: the papers' evaluations on local SentEval data."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from .. import io
from ..cli import command
from ..console import err_console
from ..errors import DefsentError
from ..models import load_model
from ..toolbox import Toolbox
from .options import BATCH_SIZE, DEVICE, FORCE, MAX_LENGTH, MODEL, POOLING, PROGRESS, with_toolbox

DATA = typer.Option(
    None,
    "--data",
    "-d",
    envvar="DEFSENT_DATA",
    help="SentEval data folder (the 'downstream' folder or a parent such as senteval/). Default: $DEFSENT_DATA.",
)
OUTPUT = typer.Option(None, "--output", "-o", help="Write the results JSON here (the table then goes to stderr).")


def _prepare_output(output: Path | None, force: bool) -> None:
    if output is not None:
        if output.suffix.lower() != ".json":
            raise DefsentError("results are JSON: give the output a .json suffix", path=output)
        io.check_output(output, force)


def _finish(result: dict, table, output: Path | None) -> None:
    from ..evaluation.results import print_table

    for warning in result.get("warnings", []):
        err_console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
    print_table(table, to_stdout=output is None)
    if output is not None:
        io.write_json(output, result)
        err_console.print(f"wrote {output} ({result['seconds']:.1f} s)")


@command("eval-sts")
@with_toolbox
def eval_sts(
    model: Path = MODEL,
    data: Path = DATA,
    tasks: str = typer.Option(
        None,
        "--tasks",
        "-t",
        help="Comma-separated: STS12,STS13,STS14,STS15,STS16,STS-B,SICK-R (default: all with --split).",
    ),
    split: str = typer.Option("test", "--split", help="test (all tasks), dev or train (STS-B and SICK-R only)."),
    aggregation: str = typer.Option(
        "all",
        "--aggregation",
        "-a",
        help="STS12-16: all = subsets concatenated, one correlation (SimCSE/DefSent/DefSent+); "
        "mean / wmean = SentEval's per-subset average / size-weighted average.",
    ),
    pooling: str = POOLING,
    backend: str = typer.Option(
        "native", "--backend", help="native, or mteb (mteb's own STS evaluator on the same local pairs; needs mteb)."
    ),
    layout: str = typer.Option(
        "auto",
        "--layout",
        help="STS12-16 files: auto (SentEval STS.input.* if present, else original STS2016.input.*), senteval, or "
        "semeval (prefer the original untokenised STSyyyy.input.* where a folder has them).",
    ),
    batch_size: int = BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    device: str = DEVICE,
    seed: int = typer.Option(1111, "--seed", help="Seeds torch (STS scoring itself has no randomness)."),
    output: Path = OUTPUT,
    force: bool = FORCE,
    show_progress: bool = PROGRESS,
    toolbox: Toolbox = None,
) -> None:
    """Unsupervised STS: Spearman x100 of cosine similarity vs gold on STS12-16, STS-B and SICK-R.

    Example: defsent eval-sts --model ckpt/ --pooling mean --data ../shared/data -o sts.json

    Toolbox: defsent eval-sts -m ckpt/ --pooling prompt-avg --template T4 --weighting idf --post quantile
    """
    import torch

    from ..evaluation.sts import check_options, evaluate_sts, load_sts_tasks, sts_table

    _prepare_output(output, force)
    check_options(aggregation, backend, pooling)
    loaded_tasks = load_sts_tasks(data, tasks, split, layout)  # data problems surface before the model loads
    torch.manual_seed(seed)
    loaded = load_model(model, device)
    chosen = toolbox.pooling_for(loaded, max_length) or pooling
    result = evaluate_sts(
        loaded,
        data,
        loaded_tasks,
        split=split,
        aggregation=aggregation,
        pooling=chosen,
        post=toolbox.post_for(loaded, chosen, batch_size, max_length, show_progress),
        batch_size=batch_size,
        max_length=max_length,
        layout=layout,
        backend=backend,
        show_progress=show_progress,
    )
    result["seed"] = seed
    _finish(result, sts_table(result), output)


@command("eval-senteval")
@with_toolbox
def eval_senteval(
    model: Path = MODEL,
    data: Path = DATA,
    tasks: str = typer.Option(
        None, "--tasks", "-t", help="Comma-separated: MR,CR,SUBJ,MPQA,SST-2,TREC,MRPC (default: all seven)."
    ),
    config: str = typer.Option(
        "default",
        "--config",
        "-c",
        help="default: SentEval's literature setting (kfold 10, adam, batch 64, tenacity 5, epoch_size 4); "
        "prototyping: SentEval's fast setting (kfold 5, rmsprop, batch 128, tenacity 3, epoch_size 2).",
    ),
    seed: int = typer.Option(
        1111, "--seed", help="Seed for folds, classifier initialisation and data order (SentEval: 1111)."
    ),
    pooling: str = POOLING,
    mrpc_features: str = typer.Option(
        "senteval", "--mrpc-features", help="senteval = [|u-v|, u*v] as SentEval's MRPC; concat = [u, v, |u-v|, u*v]."
    ),
    batch_size: int = BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    device: str = DEVICE,
    output: Path = OUTPUT,
    force: bool = FORCE,
    show_progress: bool = PROGRESS,
    toolbox: Toolbox = None,
) -> None:
    """SentEval transfer tasks: a logistic-regression probe (SentEval's nhid 0 classifier) on frozen features.

    Example: defsent eval-senteval --model ckpt/ --pooling mean --data ../shared/data -o transfer.json

    With --post and no --fit-on, each task's chain is fitted on that task's sentences (no labels).
    """
    from ..evaluation.senteval import check_options, evaluate_senteval, load_transfer_tasks, senteval_table

    _prepare_output(output, force)
    check_options(config, mrpc_features, pooling)
    loaded_tasks = load_transfer_tasks(data, tasks)  # data problems surface before the model loads
    loaded = load_model(model, device)
    chosen = toolbox.pooling_for(loaded, max_length) or pooling
    result = evaluate_senteval(
        loaded,
        data,
        loaded_tasks,
        config=config,
        seed=seed,
        pooling=chosen,
        post=toolbox.post_for(loaded, chosen, batch_size, max_length, show_progress),
        batch_size=batch_size,
        max_length=max_length,
        mrpc_features=mrpc_features,
        show_progress=show_progress,
    )
    _finish(result, senteval_table(result), output)
