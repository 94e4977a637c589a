"""``defsent train-pairs``: a bi-encoder trained on scored sentence pairs (SBERT's STS regression)."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import count
from ..training.config import PAIR_LOSSES
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import EACH_EPOCH, EPOCH_EVAL_EVERY, loop, loop_config, training_command

PairLoss = opt.choices("PairLoss", PAIR_LOSSES)


def train_pairs_command(
    ctx: typer.Context,
    pairs: opt.PairsFile,
    output: opt.CheckpointOutput,
    model: opt.Model = None,
    loss: Annotated[
        PairLoss,
        typer.Option(
            "--loss",
            help="cosine: squared error of cos(u, v) against the score (SBERT); cosent / angle: CoSENT / AnglE "
            "ranking losses (sentence-transformers' losses).",
        ),
    ] = PairLoss.cosine,
    max_score: opt.MaxScore = 5.0,
    pooling: Annotated[
        opt.TrainPooling, typer.Option("--pooling", "-p", help="Pooling of each sentence (SBERT: mean).")
    ] = opt.TrainPooling.mean,
    nm_weight: opt.NmWeight = 0.0,
    nm_temperature: opt.NmTemperature = opt.TEMPERATURE_DEFAULT,
    nm_deletion: opt.NmDeletion = opt.DELETION_DEFAULT,
    lr=loop(),
    batch_size=loop(16, help="Pairs per step."),
    epochs=loop(3),
    warmup_ratio=loop(0.1),
    weight_decay=loop(0.01),
    adam_eps=loop(),
    max_grad_norm=loop(),
    max_length=loop(),
    batching=loop(),
    max_steps=loop(),
    limit=loop(help="Use a seeded random sample (--seed) of this many pairs."),
    seed=loop(),
    eval_every=loop(None, type=int | None, help=EPOCH_EVAL_EVERY, show_default=False),
    eval_on=loop(type=opt.SentenceEvalOn, default=opt.SentenceEvalOn.stsb_dev),
    keep=loop(),
    data=loop(),
    save_every=loop(),
    log_every=loop(),
    resume=loop(),
    device=loop(),
    precision=loop(),
    deterministic=loop(),
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
    from ..formats.pairs import read_scored_pairs

    read_scored_pairs(pairs, max_score, "train-pairs", quiet=True)  # a bad file fails before torch loads
    from ..training.run import pairs as train_on_pairs  # torch: imported by the command, not by --help

    warn_ineffective(ctx, opt.training_warnings(1 if eval_every is None else eval_every, nm_weight=nm_weight))
    config = loop_config(locals(), defaults=EACH_EPOCH, pooler="none", pooling=opt.value(pooling))
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
        nm=opt.noise_matching(nm_weight, nm_temperature, nm_deletion),
    )
    if distributed.is_main():
        say(opt.trained_summary(output, info, count(info["training_pairs"], "pair")))


def register(app: typer.Typer) -> None:
    app.command("train-pairs")(guard(training_command(train_pairs_command)))
