"""``defsent teacher``: a Cross-Encoder or Cross-Bi-Encoder trained on scored pairs, to label new pairs."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import count
from . import options as opt
from .boundary import guard, warn_ineffective

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
    lr: opt.PairsLr = 2e-5,
    batch_size: opt.PairsBatch = 16,
    epochs: opt.Epochs = 3,
    warmup_ratio: opt.WarmupRatio = 0.1,
    weight_decay: opt.WeightDecay = 0.01,
    adam_eps: opt.AdamEps = 1e-8,
    max_grad_norm: opt.MaxGradNorm = 1.0,
    max_length: opt.MaxLength = None,
    batching: opt.BatchingOption = opt.Batching.random,
    max_steps: opt.MaxSteps = None,
    limit: opt.PairsLimit = None,
    seed: opt.Seed = opt.SEED_DEFAULT,
    eval_every: opt.EpochEvalEvery = None,
    eval_on: opt.TeacherEvalOnOption = opt.TeacherEvalOn.stsb_dev,
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
    config = opt.pairs_config(pooling="mean", **opt.loop_settings(locals()))
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
    app.command("teacher")(guard(teacher_command))
