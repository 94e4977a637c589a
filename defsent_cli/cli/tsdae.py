"""``defsent tsdae``: TSDAE pre-training on plain sentences (Wang et al. 2021)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..training.config import DELETION, DICTIONARY_SPLITS, TSDAE_POOLINGS, TrainConfig
from . import options as opt
from .boundary import guard, warn_ineffective

TsdaePooling = opt.choices("TsdaePooling", TSDAE_POOLINGS)
SentenceSplit = opt.choices("SentenceSplit", DICTIONARY_SPLITS)


def tsdae_command(
    ctx: typer.Context,
    sentences: Annotated[
        Path,
        typer.Argument(
            metavar="SENTENCES",
            help="Text file, one sentence per line (a domain corpus), or a dictionary .jsonl (all its definitions).",
            show_default=False,
        ),
    ],
    model: opt.Model,
    output: opt.CheckpointOutput,
    pooling: Annotated[
        TsdaePooling, typer.Option("--pooling", "-p", help="Pooling of the damaged sentence (paper: cls).")
    ] = TsdaePooling.cls,
    split: Annotated[
        SentenceSplit,
        typer.Option("--split", help="A dictionary's definitions of this split (train keeps dev/test unseen), or all."),
    ] = SentenceSplit.train,
    deletion: Annotated[
        float, typer.Option("--deletion", callback=opt.FRACTION, help="Share of words deleted from each sentence.")
    ] = DELETION,
    lr: Annotated[float, typer.Option("--lr", callback=opt.POSITIVE, help="Learning rate (constant).")] = 3e-5,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", min=1, help="Sentences per step.")] = 8,
    epochs: opt.Epochs = 1,
    max_steps: opt.MaxSteps = None,
    limit: opt.Limit = None,
    seed: opt.Seed = opt.SEED_DEFAULT,
    max_length: opt.MaxLength = None,
    save_every: opt.SaveEvery = 500,
    log_every: opt.LogEvery = 20,
    resume: opt.Resume = False,
    device: opt.Device = "auto",
    precision: opt.TrainPrecision = opt.TRAIN_PRECISION_DEFAULT,
    deterministic: opt.Deterministic = False,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """TSDAE: delete 60% of each sentence's words, encode, reconstruct the original; keep the encoder.

    \b
    Examples:
      defsent tsdae corpus.txt -m BASE -o tsdae/
      defsent tsdae dict.jsonl -m BASE --pooling mean --limit 20000 -o tsdae-1/

    The paper's settings: AdamW, constant lr 3e-5, no warm-up, weight decay 0, batch 8, CLS pooling, tied
    encoder and decoder (sentence-transformers' DenoisingAutoEncoderLoss). The output is a normal checkpoint
    for embed-entries, train (as --model) and every eval-*.
    """
    from ..training.run import tsdae  # torch: imported by the command, not by --help

    warn_ineffective(
        ctx,
        [
            (
                "split",
                sentences.suffix.lower() != ".jsonl",
                f"--split has no effect: it picks a dictionary's definitions, and {sentences} is a text file "
                "(every line is used)",
            )
        ],
    )
    config = TrainConfig(
        pooling=opt.value(pooling),
        lr=lr,
        batch_size=batch_size,
        epochs=epochs,
        warmup_ratio=0.0,
        weight_decay=0.0,
        schedule="constant",
        seed=seed,
        max_length=max_length,
        max_steps=max_steps,
        limit=limit,
        save_every=save_every,
        log_every=log_every,
        device=device,
        precision=opt.value(precision),
        deterministic=deterministic,
    )
    info = tsdae(
        sentences,
        model,
        output,
        config,
        deletion,
        opt.value(split),
        resume=resume,
        force=force,
        show_progress=show_progress,
    )
    say(
        f"wrote {output}: {info['steps']} steps on {info['training_sentences']:,} sentences, final loss {info['final_loss']}"
    )


def register(app: typer.Typer) -> None:
    app.command("tsdae")(guard(tsdae_command))
