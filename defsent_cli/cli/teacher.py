"""``defsent teacher``: a Cross-Encoder or Cross-Bi-Encoder trained on scored pairs, to label new pairs."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import count
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import (
    EACH_EPOCH,
    LOOP,
    PAIR_LOOP,
    TEACHER_EVAL_ON,
    Values,
    change,
    loop_config,
    takes_groups,
    trained_summary,
    training_warnings,
)

Arch = opt.choices("Arch", ("ce", "cbe"))


def teacher_command(
    ctx: typer.Context,
    pairs: opt.PairsFile,
    output: opt.CheckpointOutput,
    model: opt.Model = None,
    arch: Annotated[
        Arch,
        typer.Option(
            "--arch",
            help="ce: Cross-Encoder, [CLS] x1 [SEP] x2 [SEP] -> linear -> sigmoid (a sentence-transformers "
            "CrossEncoder); cbe: Cross-Bi-Encoder, one joint pass, each sentence mean-pooled over its own tokens, "
            "the cosine (Reiml 2023).",
        ),
    ] = Arch.ce,
    special_tokens: Annotated[
        bool,
        typer.Option(
            "--special-tokens/--no-special-tokens",
            help="cbe: each pooling reads its sentence's [CLS] and [SEP] too (the thesis: from [CLS] to [SEP]).",
        ),
    ] = True,
    max_score: opt.MaxScore = 5.0,
    loop: Values = LOOP(
        **{**PAIR_LOOP, "eval_on": change(opt.TeacherEvalOn.stsb_dev, type=opt.TeacherEvalOn, help=TEACHER_EVAL_ON)}
    ),
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Train a teacher on scored pairs: a Cross-Encoder (ce) or the thesis's Cross-Bi-Encoder (cbe).

    \b
    Examples:
      defsent teacher sts-train.csv -m BASE --arch ce -o ce/
      defsent teacher gold.tsv -m BASE --arch cbe -o cbe/
      defsent label unlabelled.tsv -m cbe/ -o silver.tsv

    The CE learns the score rescaled to [0, 1] with binary cross-entropy on its logit (sigmoid at use, as the
    thesis's Table 6.2 found best); the CBE learns it with the bi-encoder's own loss (squared error of the
    cosine), so it scores in the student's range. Settings as train-pairs (the thesis's); the dev score is
    the Spearman of the teacher's own pair scores on STS-B dev, after every epoch, the best epoch kept.
    """
    from ..formats.pairs import read_scored_pairs

    read_scored_pairs(pairs, max_score, "teacher", opt.value(arch), quiet=True)  # a bad file fails before torch loads
    from ..training.run import pairs as train_on_pairs  # torch: imported by the command, not by --help

    warn_ineffective(
        ctx,
        [
            *training_warnings(1 if loop.eval_every is None else loop.eval_every),
            ("special_tokens", opt.value(arch) == "ce", "--special-tokens has no effect: only a cbe pools tokens"),
        ],
    )
    config = loop_config(loop, defaults=EACH_EPOCH, pooling="mean")
    info = train_on_pairs(
        pairs,
        model,
        output,
        config,
        resume=loop.resume,
        force=force,
        show_progress=show_progress,
        data=loop.data,
        max_score=max_score,
        teacher={"arch": opt.value(arch), "special_tokens": special_tokens},
    )
    if distributed.is_main():
        say(trained_summary(output, info, count(info["training_pairs"], "pair")))


def register(app: typer.Typer) -> None:
    app.command("teacher")(guard(takes_groups(teacher_command)))
