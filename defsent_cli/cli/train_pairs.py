"""``defsent train-pairs``: a bi-encoder trained on scored sentence pairs (SBERT's STS regression)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..training.config import PAIR_LOSSES
from ..training.specs import PAIRS
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import AUX, MLM_TERM, PAIR_LOOP, Values, fit_objective, loop_of, takes_groups, training_warnings

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
    ] = PAIRS.settings["loss"],
    max_score: opt.MaxScore = PAIRS.settings["max_score"],
    pooling: Annotated[
        opt.TrainPooling, typer.Option("--pooling", "-p", help="Pooling of each sentence (SBERT: mean).")
    ] = PAIRS.pooling,
    aux: Values = AUX(without=MLM_TERM),
    loop: Values = loop_of(PAIRS, **PAIR_LOOP),
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Train a bi-encoder on scored sentence pairs: cosine of the two sentences' vectors against the score.

    \b
    Examples:
      defsent train-pairs sts-train.csv -m BASE -o stsb-bi/
      defsent train-pairs gold.tsv -m BASE --loss cosent --epochs 4 -o bi/
      defsent train-pairs sts-train.csv -m BASE --matryoshka 384,128,64 -o mrl/

    The thesis's settings (Reiml 2023, section 5.1): AdamW lr 2e-5, weight decay 0.01, 10% warm-up then
    linear decay, batch 16, three epochs, STS-B dev after each epoch and the best epoch kept. Evaluate such a
    model on STS with eval-sts --exclude-pairs PAIRS: STS12-16 share pairs with STS-B train.
    """
    from ..formats.pairs import read_scored_pairs

    read_scored_pairs(pairs, max_score, "train-pairs", quiet=True)  # a bad file fails before torch loads
    from ..training.pairs import Pairs  # torch: imported by the command, not by --help

    warn_ineffective(ctx, training_warnings(1 if loop.eval_every is None else loop.eval_every, aux))
    bi_encoder = Pairs(opt.value(loss), max_score)
    fit_objective(
        bi_encoder, pairs, model, output, loop, aux, force=force, show_progress=show_progress, pooling=pooling
    )


HELP_ORDER = 80  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("train-pairs")(guard(takes_groups(train_pairs_command)))
