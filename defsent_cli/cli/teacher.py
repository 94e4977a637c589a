"""``defsent teacher``: a Cross-Encoder or Cross-Bi-Encoder trained on scored pairs, to label new pairs."""

from __future__ import annotations

from typing import Annotated

import typer

from ..training.specs import TEACHER
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import (
    PAIR_LOOP,
    TEACHER_EVAL_ON,
    Values,
    change,
    fit_objective,
    loop_of,
    takes_groups,
    training_warnings,
)

Arch = opt.choices("Arch", TEACHER.constraints["arch"].choices())


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
    ] = TEACHER.settings["arch"],
    special_tokens: Annotated[
        bool,
        typer.Option(
            "--special-tokens/--no-special-tokens",
            help="cbe: each pooling reads its sentence's [CLS] and [SEP] too (the thesis: from [CLS] to [SEP]).",
        ),
    ] = TEACHER.settings["special_tokens"],
    max_score: opt.MaxScore = TEACHER.settings["max_score"],
    loop: Values = loop_of(TEACHER, **{**PAIR_LOOP, "eval_on": change(type=opt.TeacherEvalOn, help=TEACHER_EVAL_ON)}),
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
    from ..training.teachers import Teacher  # torch: imported by the command, not by --help

    warn_ineffective(
        ctx,
        [
            *training_warnings(1 if loop.eval_every is None else loop.eval_every),
            ("special_tokens", opt.value(arch) == "ce", "--special-tokens has no effect: only a cbe pools tokens"),
        ],
    )
    teacher = Teacher(opt.value(arch), max_score, special_tokens)
    fit_objective(teacher, pairs, model, output, loop, force=force, show_progress=show_progress)


HELP_ORDER = 90  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("teacher")(guard(takes_groups(teacher_command)))
