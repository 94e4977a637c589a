"""The training loop's options, declared once for every training command as one group (``groups.py``).

Each option of the loop (``--lr`` to ``--deterministic``) is a member of :data:`LOOP`: its flags, type, help and
default; its check is the :class:`TrainConfig` field's constraint (``training/config.py``, ``CONSTRAINTS``). A
training command takes the group as one parameter, changing only what differs for it (a default, a help that says
what an item is, a member it does not take)::

    @takes_groups
    def simcse_command(ctx, sentences: opt.Sentences, ...,
                       loop: Values = LOOP(lr=change(3e-5, help="Peak learning rate (linear decay).")), ...):
        config = loop_config(loop, pooling=...)

:func:`loop_config` maps the loop's values, and the command's own settings, to one :class:`TrainConfig` (one way
for every command; a value left ``None`` takes the command's ``defaults``, such as ``train``'s per-objective ones).
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from ..constraints import Interval
from ..errors import count
from ..training.config import CONSTRAINTS, EVAL_EACH_EPOCH, TrainConfig
from . import options as opt
from .groups import Group, Values, change, declared, option, takes_groups

__all__ = ["LOOP", "Values", "change", "loop_config", "takes_groups"]

#: The loop's options, in the order --help lists them.
OPTIONS = {
    "lr": option("--lr", type=float, help="Peak learning rate.", default=2e-5),
    "batch_size": option("--batch-size", "-b", type=int, help="Items per step.", default=32),
    "epochs": option("--epochs", type=int, help="Passes over the training data.", default=1),
    "warmup_ratio": option("--warmup-ratio", type=float, help="Share of steps for linear warm-up.", default=0.0),
    "weight_decay": option("--weight-decay", type=float, help="AdamW weight decay.", default=0.0),
    "adam_eps": option("--adam-eps", type=float, help="AdamW epsilon.", default=1e-8),
    "max_grad_norm": option("--max-grad-norm", type=float, help="Gradient clipping norm, 0 = none.", default=1.0),
    "seed": declared(opt.Seed, opt.SEED_DEFAULT),
    "max_length": option("--max-length", type=int | None, help=opt.MAX_LENGTH_HELP),
    "max_steps": option("--max-steps", type=int | None, help="Stop after this many steps (smoke runs)."),
    "limit": option("--limit", type=int | None, help="Use a seeded random sample (--seed) of this many definitions."),
    "batching": option(
        "--batching",
        type=opt.Batching,
        help="bucket (length buckets, little padding) or random.",
        default=opt.Batching.random,
    ),
    "save_every": option("--save-every", type=int, help="Save resumable state every N steps (0: never).", default=500),
    "log_every": option("--log-every", type=int, help="Write a loss row to the log every N steps.", default=20),
    "resume": option("--resume", type=bool, help="Continue a killed run from OUTPUT.partial/.", default=False),
    "eval_every": option(
        "--eval-every",
        type=int,
        help="Score the model on --eval-on every N steps and at the end (0: never); the curve goes to "
        "train_log.jsonl and defsent.json.",
        default=0,
        constraint=Interval(0, integer=True, optional=True),
    ),
    "eval_on": option(
        "--eval-on",
        type=opt.EvalOn,
        help="The dev criterion (dev = mean of STS-B dev and SICK-R trial Spearman; no test data).",
        default=opt.EvalOn.dev,
    ),
    "keep": option(
        "--keep",
        type=opt.Keep | None,
        help="Which checkpoint to write: best (best score seen; the default with --eval-every) or last.",
        show_default=False,
    ),
    "data": declared(opt.Data),
    "device": declared(opt.Device, "auto"),
    "precision": option(
        "--precision",
        type=opt.TrainPrecisionName,
        help="auto: bf16 mixed precision on a CUDA GPU with bf16 and on a CPU with AMX (Intel Xeon from Sapphire "
        "Rapids on; DEFSENT_CPU_AMX=0 turns that off), fp32 elsewhere; bf16 / fp16: autocast with fp32 "
        "weights and an fp32 loss (fp16 with a gradient scaler); tf32: fp32 with TF32 matrix products on a GPU.",
        default=opt.TrainPrecisionName("auto"),
    ),
    "deterministic": option(
        "--deterministic",
        type=bool,
        help="torch's deterministic algorithms (and the math attention kernel): a killed and resumed run ends at "
        "the very weights of an uninterrupted one on a GPU too, at some cost in speed.",
        default=False,
    ),
}
_CONFIG_FIELDS = {f.name for f in fields(TrainConfig)}

#: what commands say differently of their loop options
SENTENCE_LIMIT = "Use a seeded random sample (--seed) of this many sentences (of a dictionary: definitions)."
EPOCH_EVAL_EVERY = "Score the model on --eval-on every N steps (default: after every epoch, as the thesis; 0: never)."
TEACHER_EVAL_ON = (
    "The dev criterion: the Spearman of the teacher's own pair scores on STS-B dev (stsb-dev), or its mean with "
    "SICK-R trial's (dev)."
)
#: the defaults of a run on scored pairs: --eval-every left out is after every epoch (the thesis's protocol)
EACH_EPOCH = {"eval_every": EVAL_EACH_EPOCH}
#: train-pairs' and teacher's loop: the thesis's settings (Reiml 2023, section 5.1)
PAIR_LOOP = {
    "batch_size": change(16, help="Pairs per step."),
    "epochs": change(3),
    "warmup_ratio": change(0.1),
    "weight_decay": change(0.01),
    "limit": change(help="Use a seeded random sample (--seed) of this many pairs."),
    "eval_every": change(None, type=int | None, help=EPOCH_EVAL_EVERY, show_default=False),
    "eval_on": change(opt.SentenceEvalOn.stsb_dev, type=opt.SentenceEvalOn),
}
#: the loop options of a run with a fixed schedule and no dev evaluation (tsdae: the paper's constant rate)
FIXED_SCHEDULE = (
    "warmup_ratio", "weight_decay", "adam_eps", "max_grad_norm", "batching", "eval_every", "eval_on", "keep", "data"
)  # fmt: skip


LOOP = Group("loop", OPTIONS, constraints=CONSTRAINTS)


def loop_config(loop: Values, defaults: dict[str, Any] | None = None, **own: Any) -> TrainConfig:
    """The checked :class:`TrainConfig` of a command: its loop values, choices as plain values, a ``None`` taking
    ``defaults[name]`` where given; then the command's ``own`` settings."""
    defaults = defaults or {}
    settings = {}
    for name, given in loop:
        if name in _CONFIG_FIELDS:
            given = opt.value(given)
            settings[name] = defaults[name] if given is None and name in defaults else given
    return TrainConfig(**settings, **own)  # checked as it is made


# ---------------------------------------------------------------- what every training command says and does


def training_pooling(model: Path, chosen: Any, allowed: tuple[str, ...]) -> str:
    """The pooling a training command uses: the user's, else the model folder's own (CLS, the paper's, where
    the folder names none or one this objective cannot train with). The trainer's first line says which."""
    if chosen is not None:
        return opt.value(chosen)
    from ..encoder.models import own_pooling

    own = own_pooling(model)
    return own if own in allowed else "cls"


def noise_matching(weight: float, temperature: float, deletion: float):
    """The +NM term of ``--nm-weight`` (None when it is 0)."""
    from ..training.noise_matching import NoiseMatching  # torch: imported by the command, not by --help

    return NoiseMatching(weight, temperature, deletion) if weight else None


def training_warnings(
    eval_every: int, mlm_weight: float | None = None, nm_weight: float | None = None
) -> list[tuple[str, bool, str]]:
    """The ``warn_ineffective`` rows of the options every trainer shares: evaluation without --eval-every, and
    (a command with --mlm-weight, --nm-weight) their settings without them."""
    never = "--eval-every is 0, so the model is never evaluated; pass --eval-every N to evaluate"
    rows = [
        ("eval_on", not eval_every, f"--eval-on has no effect: {never}"),
        ("data", not eval_every, f"--data (the evaluation data) has no effect: {never}"),
    ]
    if mlm_weight is not None:
        rows.append(
            ("mlm_probability", not mlm_weight, "--mlm-probability has no effect without --mlm-weight (no MLM loss)")
        )
    if nm_weight is not None:
        rows += [
            (name, not nm_weight, f"--{name.replace('_', '-')} has no effect without --nm-weight (no Noise Matching)")
            for name in ("nm_temperature", "nm_deletion")
        ]
    return rows


def split_warning(sentences: Path) -> tuple[str, bool, str]:
    """The ``warn_ineffective`` row of ``--split`` given with a text file (tsdae, simcse)."""
    return (
        "split",
        sentences.suffix.lower() != ".jsonl",
        f"--split has no effect: it picks a dictionary's definitions, and {sentences} is a text file "
        "(every line is used)",
    )


def trained_summary(output: Path, info: dict, what: str, rate: str | None = None) -> str:
    """The closing line of a training command: steps, data, final loss, the rate (``rate``: its unit), and the kept
    step of a dev curve."""
    kept = f"; kept step {info['kept_step']} ({info['eval_on']} {info['eval_curve']})" if "eval_curve" in info else ""
    speed = f", {info[f'{rate}_per_second']} {rate}/s" if rate else ""
    return f"wrote {output}: {count(info['steps'], 'step')} on {what}, final loss {info['final_loss']}{speed}{kept}"
