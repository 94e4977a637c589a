"""``defsent tsdae``: TSDAE pre-training on plain sentences (Wang et al. 2021)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..training.specs import TSDAE
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import SENTENCE_LIMIT, Values, change, fit_objective, loop_of, split_warning, takes_groups

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
    split: opt.SentenceSplit = TSDAE.settings["split"],
    deletion: opt.Deletion = TSDAE.settings["deletion"],
    nm_weight: Annotated[
        float,
        typer.Option(
            "--nm-weight",
            callback=opt.constrained(TSDAE.constraints["nm_weight"]),
            help="TSDAE + Noise Matching: add this times NM's InfoNCE (the damaged sentence's vector onto its "
            "original's, stop-gradient on the original; Reiml 2023) on the same batch.",
        ),
    ] = TSDAE.settings["nm_weight"],
    temperature: opt.Temperature = TSDAE.settings["temperature"],
    loop: Values = loop_of(
        TSDAE,
        lr=change(help="Learning rate (constant)."),
        batch_size=change(help="Sentences per step."),
        limit=change(help=SENTENCE_LIMIT),
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
      defsent tsdae corpus.txt -m BASE --matryoshka 384:2,128,64 -o tsdae-mrl/

    The paper's settings: AdamW, constant lr 3e-5, no warm-up, weight decay 0, batch 8, CLS pooling, tied
    encoder and decoder (sentence-transformers' DenoisingAutoEncoderLoss). The output is a normal checkpoint
    for embed-entries, train (as --model) and every eval-*.
    """
    from ..training.tsdae import Tsdae  # torch: imported by the command, not by --help

    warn_ineffective(
        ctx,
        [
            split_warning(sentences),
            ("temperature", not nm_weight, "--temperature has no effect without --nm-weight (no InfoNCE term)"),
        ],
    )
    tsdae = Tsdae(deletion, opt.value(split), nm_weight=nm_weight, temperature=temperature)
    fit_objective(tsdae, sentences, model, output, loop, force=force, show_progress=show_progress, pooling=pooling)


HELP_ORDER = 60  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("tsdae")(guard(takes_groups(tsdae_command)))
