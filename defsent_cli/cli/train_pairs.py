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
from .loop_options import (
    EACH_EPOCH,
    LOOP,
    PAIR_LOOP,
    Values,
    loop_config,
    noise_matching,
    takes_groups,
    trained_summary,
    training_warnings,
)

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
    loop: Values = LOOP(**PAIR_LOOP),
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

    warn_ineffective(ctx, training_warnings(1 if loop.eval_every is None else loop.eval_every, nm_weight=nm_weight))
    config = loop_config(loop, defaults=EACH_EPOCH, pooling=opt.value(pooling))
    info = train_on_pairs(
        pairs,
        model,
        output,
        config,
        resume=loop.resume,
        force=force,
        show_progress=show_progress,
        data=loop.data,
        loss=opt.value(loss),
        max_score=max_score,
        nm=noise_matching(nm_weight, nm_temperature, nm_deletion),
    )
    if distributed.is_main():
        say(trained_summary(output, info, count(info["training_pairs"], "pair")))


def register(app: typer.Typer) -> None:
    app.command("train-pairs")(guard(takes_groups(train_pairs_command)))
