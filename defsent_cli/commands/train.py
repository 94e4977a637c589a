"""``defsent train``: one PST step of DefSent+ on a dictionary against a frozen bank."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import distributed
from ..cli import command
from ..console import err_console
from ..training import TrainConfig, train
from .options import DEVICE, FORCE, MAX_LENGTH, PROGRESS


@command("train")
def train_command(
    dictionary: Path = typer.Argument(..., help="Dictionary JSONL; its train split is trained on."),
    bank: Path = typer.Option(..., "--bank", help="Entry bank (.h5) built from exactly this dictionary."),
    model: Path = typer.Option(..., "--model", "-m", help="Base model folder; a fresh copy is trained."),
    output: Path = typer.Option(..., "--output", "-o", help="Checkpoint folder to write."),
    pooling: str = typer.Option("cls", "--pooling", "-p", help="cls or mean: pooling before the head, in training."),
    inference_pooling: str = typer.Option(
        None, "--inference-pooling", help="Pooling the checkpoint uses for encode/eval (default: --pooling)."
    ),
    pooler: str = typer.Option(
        "auto",
        "--pooler",
        help="Head between pooling and bank: keep (the model's dense+tanh pooler; BERT default), mlm-dense "
        "(MLM head dense + GELU; RoBERTa default), none (no head), linear (the pooler dense reset to the "
        "identity, no activation: for checkpoints with an untrained pooler and for ICA banks), auto.",
    ),
    lr: float = typer.Option(2e-5, "--lr", help="Peak learning rate."),
    head_lr: float = typer.Option(
        None, "--head-lr", help="Peak learning rate of the head's dense layer (default: --lr; e.g. 1e-3 for linear)."
    ),
    batch_size: int = typer.Option(32, "--batch-size", "-b", min=1, help="Definitions per step."),
    epochs: int = typer.Option(1, "--epochs", min=1, help="Passes over the training definitions."),
    warmup_ratio: float = typer.Option(0.0, "--warmup-ratio", help="Share of steps for linear warm-up (DefSent: 0.1)."),
    weight_decay: float = typer.Option(0.0, "--weight-decay", help="AdamW weight decay."),
    adam_eps: float = typer.Option(1e-6, "--adam-eps", help="AdamW epsilon."),
    max_grad_norm: float = typer.Option(1.0, "--max-grad-norm", help="Gradient clipping norm."),
    seed: int = typer.Option(1, "--seed", help="Seeds data order, dropout and init."),
    max_length: int = MAX_LENGTH,
    max_steps: int = typer.Option(None, "--max-steps", min=1, help="Stop after this many steps (smoke runs)."),
    limit: int = typer.Option(None, "--limit", min=1, help="Train on a seeded random sample of this many definitions."),
    batching: str = typer.Option("bucket", "--batching", help="bucket (length buckets, little padding) or random."),
    save_every: int = typer.Option(500, "--save-every", min=0, help="Save resumable state every N steps (0: never)."),
    log_every: int = typer.Option(20, "--log-every", min=1, help="Write a loss row to the log every N steps."),
    resume: bool = typer.Option(False, "--resume", help="Continue a killed run from OUTPUT.partial/state.pt."),
    bank_dtype: str = typer.Option(
        "float32",
        "--bank-dtype",
        help="float32 or float16: how the frozen bank is held (float16 halves its memory in every process; "
        "the loss is still computed in float32).",
    ),
    device: str = DEVICE,
    show_progress: bool = PROGRESS,
    force: bool = FORCE,
) -> None:
    """Train a fresh copy of MODEL to map definitions onto their entries' bank vectors (one PST step).

    Example: defsent train dict.jsonl --bank bank.h5 --model BASE --pooling cls --lr 5e-5 --seed 1 -o ckpt-1/

    Runs unchanged under torchrun --nproc_per_node N (DDP): --batch-size stays the global batch.
    """
    config = TrainConfig(
        pooling=pooling,
        pooler=pooler,
        inference_pooling=inference_pooling,
        lr=lr,
        head_lr=head_lr,
        batch_size=batch_size,
        epochs=epochs,
        warmup_ratio=warmup_ratio,
        weight_decay=weight_decay,
        adam_eps=adam_eps,
        max_grad_norm=max_grad_norm,
        seed=seed,
        max_length=max_length,
        max_steps=max_steps,
        limit=limit,
        batching=batching,
        save_every=save_every,
        log_every=log_every,
        device=device,
        bank_dtype=bank_dtype,
    )
    info = train(dictionary, bank, model, output, config, resume=resume, force=force, show_progress=show_progress)
    if distributed.is_main():
        err_console.print(
            f"wrote {output}: {info['steps']} steps, final loss {info['final_loss']}, "
            f"{info['definitions_per_second']} definitions/s"
        )
