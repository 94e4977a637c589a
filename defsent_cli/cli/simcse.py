"""``defsent simcse``: unsupervised contrastive training on plain sentences (SimCSE, Noise Matching)."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import count
from ..training.config import CONTRASTIVE_OBJECTIVES, STOP_GRADIENTS, TSDAE_POOLINGS, TrainConfig
from . import options as opt
from .boundary import guard, warn_ineffective

ContrastiveObjective = opt.choices("ContrastiveObjective", CONTRASTIVE_OBJECTIVES)
StopGradient = opt.choices("StopGradient", STOP_GRADIENTS)


def simcse_command(
    ctx: typer.Context,
    sentences: opt.Sentences,
    output: opt.CheckpointOutput,
    model: opt.Model = None,
    objective: Annotated[
        ContrastiveObjective,
        typer.Option(
            "--objective",
            help="simcse: two dropout views of a sentence are positives (Gao et al. 2021); nm: Noise Matching, "
            "the sentence with --deletion of its words deleted is pulled onto the original (Reiml 2023).",
        ),
    ] = ContrastiveObjective.simcse,
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
    word_head: opt.WordHead = None,
    split: opt.SentenceSplit = opt.SentenceSplitName.train,
    lr: Annotated[float, typer.Option("--lr", callback=opt.POSITIVE, help="Peak learning rate (linear decay).")] = 3e-5,
    batch_size: Annotated[
        int, typer.Option("--batch-size", "-b", min=1, help="Sentences per step (the global batch under torchrun).")
    ] = 64,
    epochs: opt.Epochs = 1,
    warmup_ratio: Annotated[
        float, typer.Option("--warmup-ratio", callback=opt.FRACTION, help="Share of steps for linear warm-up.")
    ] = 0.0,
    weight_decay: Annotated[
        float, typer.Option("--weight-decay", callback=opt.NON_NEGATIVE, help="AdamW weight decay.")
    ] = 0.0,
    adam_eps: Annotated[float, typer.Option("--adam-eps", callback=opt.POSITIVE, help="AdamW epsilon.")] = 1e-8,
    max_grad_norm: Annotated[
        float, typer.Option("--max-grad-norm", callback=opt.NON_NEGATIVE, help="Gradient clipping norm, 0 = none.")
    ] = 1.0,
    max_length: Annotated[
        int, typer.Option("--max-length", min=2, help="Truncate sentences to this many tokens (SimCSE: 32).")
    ] = 32,
    batching: opt.BatchingOption = opt.Batching.random,
    max_steps: opt.MaxSteps = None,
    limit: opt.SentenceLimit = None,
    seed: opt.Seed = opt.SEED_DEFAULT,
    eval_every: opt.EvalEvery = 0,
    eval_on: opt.SentenceEvalOnOption = opt.SentenceEvalOn.dev,
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
    """Unsupervised contrastive training on plain sentences: SimCSE or Noise Matching, with an optional MLM loss.

    \b
    Examples:
      defsent simcse corpus.txt -m BASE -o simcse/
      defsent simcse corpus.txt -m BASE --objective nm --mlm-weight 0.1 -o mlm-nm/
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
            *opt.training_warnings(eval_every, mlm_weight),
            ("word_head", not mlm_weight, "--word-head has no effect without --mlm-weight (no MLM loss)"),
            ("deletion", not nm, "--deletion has no effect: only --objective nm deletes words"),
            ("stop_gradient", not nm, "--stop-gradient has no effect: it picks a side of --objective nm's pair"),
            opt.split_warning(sentences),
        ],
    )
    config = TrainConfig(
        pooling=opt.training_pooling(model, pooling, TSDAE_POOLINGS),
        word_head=opt.value(word_head) or "mlm",
        mlm_weight=mlm_weight,
        mlm_probability=mlm_probability,
        **opt.loop_settings(locals()),
    ).validate()
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
        resume=resume,
        force=force,
        show_progress=show_progress,
        data=data,
    )
    if distributed.is_main():
        kept = (
            f"; kept step {info['kept_step']} ({info['eval_on']} {info['eval_curve']})" if "eval_curve" in info else ""
        )
        say(
            f"wrote {output}: {count(info['steps'], 'step')} on {count(info['training_sentences'], 'sentence')}, "
            f"final loss {info['final_loss']}{kept}"
        )


def register(app: typer.Typer) -> None:
    app.command("simcse")(guard(simcse_command))
