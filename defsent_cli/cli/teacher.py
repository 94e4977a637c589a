"""``defsent teacher``: a Cross-Encoder or Cross-Bi-Encoder trained on scored pairs, to label new pairs."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import count
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import EACH_EPOCH, EPOCH_EVAL_EVERY, TEACHER_EVAL_ON, loop, loop_config, training_command

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
    eval_on=loop(type=opt.TeacherEvalOn, default=opt.TeacherEvalOn.stsb_dev, help=TEACHER_EVAL_ON),
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
            *opt.training_warnings(1 if eval_every is None else eval_every),
            ("special_tokens", opt.value(arch) == "ce", "--special-tokens has no effect: only a cbe pools tokens"),
        ],
    )
    config = loop_config(locals(), defaults=EACH_EPOCH, pooler="none", pooling="mean")
    info = train_on_pairs(
        pairs,
        model,
        output,
        config,
        resume=resume,
        force=force,
        show_progress=show_progress,
        data=data,
        max_score=max_score,
        teacher={"arch": opt.value(arch), "special_tokens": special_tokens},
    )
    if distributed.is_main():
        say(opt.trained_summary(output, info, count(info["training_pairs"], "pair")))


def register(app: typer.Typer) -> None:
    app.command("teacher")(guard(training_command(teacher_command)))
