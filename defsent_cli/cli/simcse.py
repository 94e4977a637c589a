"""``defsent simcse``: unsupervised contrastive training on plain sentences (SimCSE, Noise Matching)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..training.config import CONTRASTIVE_VARIANTS, STOP_GRADIENTS
from ..training.specs import CONTRASTIVE
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import (
    AUX,
    SENTENCE_LIMIT,
    Values,
    change,
    fit_objective,
    loop_of,
    split_warning,
    takes_groups,
    training_warnings,
)

_OWN = CONTRASTIVE.settings  # its settings' defaults: the spec's

ContrastiveVariant = opt.choices("ContrastiveVariant", CONTRASTIVE_VARIANTS)
StopGradient = opt.choices("StopGradient", STOP_GRADIENTS)


def simcse_command(
    ctx: typer.Context,
    sentences: opt.Sentences,
    output: opt.CheckpointOutput,
    model: opt.Model = None,
    objective: Annotated[
        ContrastiveVariant,
        typer.Option(
            "--objective",
            help="simcse: two dropout views of a sentence are positives (Gao et al. 2021); nm: Noise Matching, "
            "the sentence with --deletion of its words deleted is pulled onto the original (Reiml 2023).",
        ),
    ] = _OWN["objective"],
    pooling: Annotated[
        opt.SentencePoolingName | None,
        typer.Option(
            "--pooling", "-p", help=f"cls (SimCSE's unsupervised default) or mean (its 'avg'). {opt.OWN_POOLING_HELP}"
        ),
    ] = None,
    mlp: Annotated[
        bool | None,
        typer.Option(
            "--mlp/--no-mlp",
            help="Train through a new dense+tanh layer that the checkpoint does not keep (default: with cls "
            "pooling, as SimCSE; not with mean).",
            show_default=False,
        ),
    ] = _OWN["mlp"],
    temperature: opt.Temperature = _OWN["temperature"],
    deletion: opt.Deletion = _OWN["deletion"],
    stop_gradient: Annotated[
        StopGradient,
        typer.Option(
            "--stop-gradient",
            help="nm: which side's vector gets no gradient: original (the damaged sentence moves onto the "
            "original; the thesis's intent), damaged (the other reading), none.",
        ),
    ] = _OWN["stop_gradient"],
    aux: Values = AUX(),
    word_head: opt.WordHead = None,
    split: opt.SentenceSplit = _OWN["split"],
    loop: Values = loop_of(
        CONTRASTIVE,
        lr=change(help="Peak learning rate (linear decay)."),
        batch_size=change(help="Sentences per step (the global batch under torchrun)."),
        max_length=change(type=int, help="Truncate sentences to this many tokens (SimCSE: 32)."),
        limit=change(help=SENTENCE_LIMIT),
        eval_on=change(type=opt.SentenceEvalOn),
    ),
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Unsupervised contrastive training on plain sentences: SimCSE or Noise Matching, with an optional MLM loss.

    \b
    Examples:
      defsent simcse corpus.txt -m BASE -o simcse/
      defsent simcse corpus.txt -m BASE --objective nm --mlm-weight 0.1 -o mlm-nm/
      defsent simcse corpus.txt -m BASE --nm-weight 0.1 -o simcse-nm/
      defsent simcse corpus.txt -m BASE --pooling mean --matryoshka 384,128,64 \\
          -o simcse-mrl/
      defsent simcse dict.jsonl -m BASE --limit 10000 --eval-every 125 \\
          --eval-on stsb-dev -o simcse-defs/

    SimCSE's unsupervised defaults: batch 64, lr 3e-5 with linear decay, one epoch, 32 tokens, CLS through a
    training-only MLP, temperature 0.05 (sentence-transformers' MultipleNegativesRankingLoss, scale 20).
    TSDAE + Noise Matching is defsent tsdae --nm-weight. Runs under torchrun --nproc_per_node N: --batch-size
    stays the global batch and the in-batch negatives are gathered from every process.
    """
    from ..training.contrastive import Contrastive  # torch: imported by the command, not by --help

    nm = opt.value(objective) == "nm"
    warn_ineffective(
        ctx,
        [
            *training_warnings(loop.eval_every, aux),
            ("word_head", not aux.mlm_weight, "--word-head has no effect without --mlm-weight (no MLM loss)"),
            ("deletion", not nm, "--deletion has no effect: only --objective nm deletes words"),
            ("stop_gradient", not nm, "--stop-gradient has no effect: it picks a side of --objective nm's pair"),
            split_warning(sentences),
        ],
    )
    contrastive = Contrastive(
        objective=opt.value(objective),
        split=opt.value(split),
        mlp=mlp,
        temperature=temperature,
        deletion=deletion,
        stop_gradient=opt.value(stop_gradient),
    )
    own = {"pooling": pooling, "word_head": opt.value(word_head)}
    fit_objective(contrastive, sentences, model, output, loop, aux, force=force, show_progress=show_progress, **own)


HELP_ORDER = 70  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("simcse")(guard(takes_groups(simcse_command)))
