"""``defsent train-pairs``: a bi-encoder trained on scored sentence pairs (SBERT's STS regression)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..training.config import PAIR_LOSSES, TrainConfig
from . import options as opt
from .boundary import guard, warn_ineffective

PairLoss = opt.choices("PairLoss", PAIR_LOSSES)


def train_pairs_command(
    ctx: typer.Context,
    pairs: Annotated[
        Path,
        typer.Argument(
            metavar="PAIRS",
            help="Scored pairs: sentence1<TAB>sentence2<TAB>score, or SentEval's STS-B sts-train.csv or a SICK file.",
            show_default=False,
        ),
    ],
    model: opt.Model,
    output: opt.CheckpointOutput,
    loss: Annotated[
        PairLoss,
        typer.Option(
            "--loss",
            help="cosine: squared error of cos(u, v) against the score (SBERT); cosent / angle: CoSENT / AnglE "
            "ranking losses (sentence-transformers' losses).",
        ),
    ] = PairLoss.cosine,
    max_score: Annotated[
        float,
        typer.Option("--max-score", callback=opt.POSITIVE, help="Scores are divided by this (STS-B, SICK: 5)."),
    ] = 5.0,
    pooling: Annotated[
        opt.TrainPooling, typer.Option("--pooling", "-p", help="Pooling of each sentence (SBERT: mean).")
    ] = opt.TrainPooling.mean,
    lr: Annotated[float, typer.Option("--lr", callback=opt.POSITIVE, help="Peak learning rate.")] = 2e-5,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", min=1, help="Pairs per step.")] = 16,
    epochs: opt.Epochs = 3,
    warmup_ratio: Annotated[
        float, typer.Option("--warmup-ratio", callback=opt.FRACTION, help="Share of steps for linear warm-up.")
    ] = 0.1,
    weight_decay: Annotated[
        float, typer.Option("--weight-decay", callback=opt.NON_NEGATIVE, help="AdamW weight decay.")
    ] = 0.01,
    adam_eps: Annotated[float, typer.Option("--adam-eps", callback=opt.POSITIVE, help="AdamW epsilon.")] = 1e-8,
    max_grad_norm: Annotated[
        float, typer.Option("--max-grad-norm", callback=opt.NON_NEGATIVE, help="Gradient clipping norm, 0 = none.")
    ] = 1.0,
    max_length: opt.MaxLength = None,
    batching: opt.BatchingOption = opt.Batching.random,
    max_steps: opt.MaxSteps = None,
    limit: opt.Limit = None,
    seed: opt.Seed = opt.SEED_DEFAULT,
    eval_every: Annotated[
        int | None,
        typer.Option(
            "--eval-every",
            min=0,
            help="Score the model on --eval-on every N steps (default: after every epoch, as the thesis; 0: never).",
            show_default=False,
        ),
    ] = None,
    eval_on: opt.EvalOnOption = opt.EvalOn.stsb_dev,
    keep: opt.KeepOption = None,
    data: opt.Data = None,
    save_every: opt.SaveEvery = 500,
    log_every: opt.LogEvery = 20,
    resume: opt.Resume = False,
    device: opt.Device = "auto",
    precision: opt.TrainPrecision = opt.TRAIN_PRECISION_DEFAULT,
    deterministic: opt.Deterministic = False,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Train a bi-encoder on scored sentence pairs: cosine of the two sentences' vectors against the score.

    \b
    Examples:
      defsent train-pairs sts-train.csv -m BASE -o stsb-bi/
      defsent train-pairs gold.tsv -m BASE --loss cosent --epochs 4 -o bi/

    The thesis's settings (Reiml 2023, section 5.1): AdamW lr 2e-5, weight decay 0.01, 10% warm-up then
    linear decay, batch 16, three epochs, STS-B dev after each epoch and the best epoch kept. Evaluate such a
    model on STS with eval-sts --exclude-pairs PAIRS: STS12-16 share pairs with STS-B train.
    """
    from ..training.run import pairs as train_on_pairs  # torch: imported by the command, not by --help

    warn_ineffective(ctx, opt.training_warnings(1 if eval_every is None else eval_every, 1.0)[:2])
    config = TrainConfig(
        pooling=opt.value(pooling),
        pooler="none",
        lr=lr,
        batch_size=batch_size,
        epochs=epochs,
        warmup_ratio=warmup_ratio,
        weight_decay=weight_decay,
        adam_eps=adam_eps,
        max_grad_norm=max_grad_norm,
        seed=seed,
        max_length=max_length,
        max_steps=max_steps,
        limit=limit,
        batching=opt.value(batching),
        save_every=save_every,
        log_every=log_every,
        device=device,
        precision=opt.value(precision),
        deterministic=deterministic,
        eval_every=eval_every or 0,
        eval_on=opt.value(eval_on),
        keep=opt.value(keep),
    )
    if config.keep == "best" and eval_every is None:
        config.keep = None  # best is the default with the epoch evaluations; validate() needs eval_every for it
    config.validate()
    info = train_on_pairs(
        pairs,
        model,
        output,
        config,
        resume=resume,
        force=force,
        show_progress=show_progress,
        data=data,
        loss=opt.value(loss),
        max_score=max_score,
        eval_each_epoch=eval_every is None,
    )
    if distributed.is_main():
        kept = (
            f"; kept step {info['kept_step']} ({info['eval_on']} {info['eval_curve']})" if "eval_curve" in info else ""
        )
        say(
            f"wrote {output}: {info['steps']} steps on {info['training_pairs']:,} pairs, final loss {info['final_loss']}{kept}"
        )


def register(app: typer.Typer) -> None:
    app.command("train-pairs")(guard(train_pairs_command))
