"""``defsent simcse``: unsupervised contrastive training on plain sentences (SimCSE, Noise Matching)."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import count
from ..training.config import CONTRASTIVE_VARIANTS, STOP_GRADIENTS, TSDAE_POOLINGS
from . import options as opt
from .boundary import guard, warn_ineffective
from .loop_options import (
    LOOP,
    SENTENCE_LIMIT,
    Values,
    change,
    loop_config,
    noise_matching,
    split_warning,
    takes_groups,
    trained_summary,
    training_pooling,
    training_warnings,
)

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
    ] = ContrastiveVariant.simcse,
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
    ] = None,
    temperature: opt.Temperature = opt.TEMPERATURE_DEFAULT,
    deletion: opt.Deletion = opt.DELETION_DEFAULT,
    stop_gradient: Annotated[
        StopGradient,
        typer.Option(
            "--stop-gradient",
            help="nm: which side's vector gets no gradient: original (the damaged sentence moves onto the "
            "original; the thesis's intent), damaged (the other reading), none.",
        ),
    ] = StopGradient.original,
    mlm_weight: opt.MlmWeight = 0.0,
    mlm_probability: opt.MlmProbability = 0.15,
    nm_weight: opt.NmWeight = 0.0,
    nm_temperature: opt.NmTemperature = opt.TEMPERATURE_DEFAULT,
    nm_deletion: opt.NmDeletion = opt.DELETION_DEFAULT,
    word_head: opt.WordHead = None,
    split: opt.SentenceSplit = opt.SentenceSplitName.train,
    loop: Values = LOOP(
        lr=change(3e-5, help="Peak learning rate (linear decay)."),
        batch_size=change(64, help="Sentences per step (the global batch under torchrun)."),
        max_length=change(32, type=int, help="Truncate sentences to this many tokens (SimCSE: 32)."),
        limit=change(help=SENTENCE_LIMIT),
        eval_on=change(opt.SentenceEvalOn.dev, type=opt.SentenceEvalOn),
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
      defsent simcse dict.jsonl -m BASE --limit 10000 --eval-every 125 \\
          --eval-on stsb-dev -o simcse-defs/

    SimCSE's unsupervised defaults: batch 64, lr 3e-5 with linear decay, one epoch, 32 tokens, CLS through a
    training-only MLP, temperature 0.05 (sentence-transformers' MultipleNegativesRankingLoss, scale 20).
    TSDAE + Noise Matching is defsent tsdae --nm-weight. Runs under torchrun --nproc_per_node N: --batch-size
    stays the global batch and the in-batch negatives are gathered from every process.
    """
    from ..training.contrastive import Contrastive  # torch: imported by the command, not by --help
    from ..training.run import objective_fit

    nm = opt.value(objective) == "nm"
    warn_ineffective(
        ctx,
        [
            *training_warnings(loop.eval_every, mlm_weight, nm_weight),
            ("word_head", not mlm_weight, "--word-head has no effect without --mlm-weight (no MLM loss)"),
            ("deletion", not nm, "--deletion has no effect: only --objective nm deletes words"),
            ("stop_gradient", not nm, "--stop-gradient has no effect: it picks a side of --objective nm's pair"),
            split_warning(sentences),
        ],
    )
    config = loop_config(
        loop,
        pooling=training_pooling(model, pooling, TSDAE_POOLINGS),
        word_head=opt.value(word_head) or "mlm",
        mlm_weight=mlm_weight,
        mlm_probability=mlm_probability,
    )
    contrastive = Contrastive(
        objective=opt.value(objective),
        split=opt.value(split),
        mlp=mlp,
        temperature=temperature,
        deletion=deletion,
        stop_gradient=opt.value(stop_gradient),
    )
    info = objective_fit(
        contrastive,
        sentences,
        model,
        output,
        config,
        resume=loop.resume,
        force=force,
        show_progress=show_progress,
        data=loop.data,
        nm=noise_matching(nm_weight, nm_temperature, nm_deletion),
    )
    if distributed.is_main():
        say(trained_summary(output, info, count(info["training_sentences"], "sentence")))


def register(app: typer.Typer) -> None:
    app.command("simcse")(guard(takes_groups(simcse_command)))
