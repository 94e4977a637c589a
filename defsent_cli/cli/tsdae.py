"""``defsent tsdae``: TSDAE pre-training on plain sentences (Wang et al. 2021)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..console import say
from ..errors import count
from ..training.config import TSDAE_POOLINGS, TrainConfig
from . import options as opt
from .boundary import guard, warn_ineffective

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
            callback=opt.NON_NEGATIVE,
            help="TSDAE + Noise Matching: add this times NM's InfoNCE (the damaged sentence's vector onto its "
            "original's, stop-gradient on the original; Reiml 2023) on the same batch.",
        ),
    ] = 0.0,
    temperature: opt.Temperature = opt.TEMPERATURE_DEFAULT,
    lr: Annotated[float, typer.Option("--lr", callback=opt.POSITIVE, help="Learning rate (constant).")] = 3e-5,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", min=1, help="Sentences per step.")] = 8,
    epochs: opt.Epochs = 1,
    max_steps: opt.MaxSteps = None,
    limit: opt.SentenceLimit = None,
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
            opt.split_warning(sentences),
            ("temperature", not nm_weight, "--temperature has no effect without --nm-weight (no InfoNCE term)"),
        ],
    )
    config = TrainConfig(
        pooling=opt.training_pooling(model, pooling, TSDAE_POOLINGS),
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
    info = objective_fit(
        Tsdae(deletion, opt.value(split), nm_weight=nm_weight, temperature=temperature),
        sentences,
        model,
        output,
        config,
        resume=resume,
        force=force,
        show_progress=show_progress,
    )
    say(
        f"wrote {output}: {count(info['steps'], 'step')} on {count(info['training_sentences'], 'sentence')}, final loss {info['final_loss']}"
    )


def register(app: typer.Typer) -> None:
    app.command("tsdae")(guard(tsdae_command))
