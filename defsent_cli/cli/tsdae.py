"""``defsent tsdae``: TSDAE pre-training on plain sentences (Wang et al. 2021)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..console import say
from ..errors import count
from ..training.config import NON_NEGATIVE, TSDAE_POOLINGS
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import (
    FIXED_SCHEDULE,
    LOOP,
    SENTENCE_LIMIT,
    Values,
    change,
    loop_config,
    split_warning,
    takes_groups,
    trained_summary,
    training_pooling,
)

TsdaePooling = opt.SentencePoolingName


def tsdae_command(
    ctx: typer.Context,
    sentences: opt.Sentences,
    output: opt.CheckpointOutput,
    model: opt.Model = None,
    pooling: Annotated[
        TsdaePooling | None,
        typer.Option("--pooling", "-p", help=f"Pooling of the damaged sentence (paper: cls). {opt.OWN_POOLING_HELP}"),
    ] = None,
    split: opt.SentenceSplit = opt.SentenceSplitName.train,
    deletion: opt.Deletion = opt.DELETION_DEFAULT,
    nm_weight: Annotated[
        float,
        typer.Option(
            "--nm-weight",
            callback=opt.constrained(NON_NEGATIVE),
            help="TSDAE + Noise Matching: add this times NM's InfoNCE (the damaged sentence's vector onto its "
            "original's, stop-gradient on the original; Reiml 2023) on the same batch.",
        ),
    ] = 0.0,
    temperature: opt.Temperature = opt.TEMPERATURE_DEFAULT,
    loop: Values = LOOP(
        lr=change(3e-5, help="Learning rate (constant)."),
        batch_size=change(8, help="Sentences per step."),
        limit=change(help=SENTENCE_LIMIT),
        without=FIXED_SCHEDULE,
    ),
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """TSDAE: delete 60% of each sentence's words, encode, reconstruct the original; keep the encoder.

    \b
    Examples:
      defsent tsdae corpus.txt -m BASE -o tsdae/
      defsent tsdae dict.jsonl -m BASE --pooling mean --limit 20000 -o tsdae-1/
      defsent tsdae corpus.txt -m BASE --nm-weight 1 --batch-size 64 -o tsdae-nm/

    The paper's settings: AdamW, constant lr 3e-5, no warm-up, weight decay 0, batch 8, CLS pooling, tied
    encoder and decoder (sentence-transformers' DenoisingAutoEncoderLoss). The output is a normal checkpoint
    for embed-entries, train (as --model) and every eval-*.
    """
    from ..training.run import objective_fit  # torch: imported by the command, not by --help
    from ..training.tsdae import Tsdae

    warn_ineffective(
        ctx,
        [
            split_warning(sentences),
            ("temperature", not nm_weight, "--temperature has no effect without --nm-weight (no InfoNCE term)"),
        ],
    )
    config = loop_config(
        loop,
        pooling=training_pooling(model, pooling, TSDAE_POOLINGS),
        warmup_ratio=0.0,
        weight_decay=0.0,
        schedule="constant",
    )
    info = objective_fit(
        Tsdae(deletion, opt.value(split), nm_weight=nm_weight, temperature=temperature),
        sentences,
        model,
        output,
        config,
        resume=loop.resume,
        force=force,
        show_progress=show_progress,
    )
    say(trained_summary(output, info, count(info["training_sentences"], "sentence")))


def register(app: typer.Typer) -> None:
    app.command("tsdae")(guard(takes_groups(tsdae_command)))
