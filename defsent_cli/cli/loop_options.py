"""The training loop's options, declared once for every training command (issue 57).

Each option of the loop (``--lr`` to ``--deterministic``) is one :class:`LoopOption` in :data:`OPTIONS`: its flags,
type, help and default; its check is the :class:`TrainConfig` field's constraint (``training/config.py``,
``CONSTRAINTS``): an integer's ``min``/``max`` (shown by ``--help`` as ``[x>=1]``), a float's callback, both in the
words the library uses. A training command names the loop options it takes where its ``--help`` lists them, with
:func:`loop` as the default, changing only what differs for it (its default, a help that says what an item is)::

    @training_command
    def simcse_command(ctx, sentences: opt.Sentences, ..., lr=loop(3e-5, help="Peak learning rate (linear decay)."),
                       epochs=loop(), seed=loop(), ...):
        config = loop_config(locals(), pooling=...)

:func:`training_command` turns each such parameter into its Typer option; :func:`loop_config` maps the loop
options a command has, and its own settings, to one :class:`TrainConfig` (one way for every command; a loop option
left ``None`` takes the command's ``defaults``, such as ``train``'s per-objective ones).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from ..constraints import Constraint, Interval
from ..training.config import CONSTRAINTS, EVAL_EACH_EPOCH, TrainConfig
from . import options as opt


@dataclass(frozen=True)
class LoopOption:
    """One option of the training loop: what Typer needs, and its constraint (default: the TrainConfig field's)."""

    flags: tuple[str, ...]
    type: Any
    help: str
    default: Any = None
    show_default: bool = True
    envvar: str | None = None
    constraint: Constraint | None = None
    #: an option every command shares (``options.Seed``, ``Device``, ``Data``): its annotation, used as it is
    shared: Any = None


def _option(*flags: str, type: Any, help: str, default: Any = None, **more: Any) -> LoopOption:
    return LoopOption(tuple(flags), type, help, default, **more)


#: Every loop option, in no command's order (each command lists the ones it takes where its --help shows them).
OPTIONS: dict[str, LoopOption] = {
    "lr": _option("--lr", type=float, help="Peak learning rate.", default=2e-5),
    "batch_size": _option("--batch-size", "-b", type=int, help="Items per step.", default=32),
    "epochs": _option("--epochs", type=int, help="Passes over the training data.", default=1),
    "warmup_ratio": _option("--warmup-ratio", type=float, help="Share of steps for linear warm-up.", default=0.0),
    "weight_decay": _option("--weight-decay", type=float, help="AdamW weight decay.", default=0.0),
    "adam_eps": _option("--adam-eps", type=float, help="AdamW epsilon.", default=1e-8),
    "max_grad_norm": _option("--max-grad-norm", type=float, help="Gradient clipping norm, 0 = none.", default=1.0),
    "seed": _option("--seed", type=int, help="", default=opt.SEED_DEFAULT, shared=opt.Seed),
    "max_length": _option("--max-length", type=int | None, help=opt.MAX_LENGTH_HELP),
    "max_steps": _option("--max-steps", type=int | None, help="Stop after this many steps (smoke runs)."),
    "limit": _option("--limit", type=int | None, help="Use a seeded random sample (--seed) of this many definitions."),
    "batching": _option(
        "--batching",
        type=opt.Batching,
        help="bucket (length buckets, little padding) or random.",
        default=opt.Batching.random,
    ),
    "save_every": _option("--save-every", type=int, help="Save resumable state every N steps (0: never).", default=500),
    "log_every": _option("--log-every", type=int, help="Write a loss row to the log every N steps.", default=20),
    "resume": _option("--resume", type=bool, help="Continue a killed run from OUTPUT.partial/.", default=False),
    "eval_every": _option(
        "--eval-every",
        type=int,
        help="Score the model on --eval-on every N steps and at the end (0: never); the curve goes to "
        "train_log.jsonl and defsent.json.",
        default=0,
        constraint=Interval(0, integer=True, optional=True),
    ),
    "eval_on": _option(
        "--eval-on",
        type=opt.EvalOn,
        help="The dev criterion (dev = mean of STS-B dev and SICK-R trial Spearman; no test data).",
        default=opt.EvalOn.dev,
    ),
    "keep": _option(
        "--keep",
        type=opt.Keep | None,
        help="Which checkpoint to write: best (best score seen; the default with --eval-every) or last.",
        show_default=False,
    ),
    "data": _option("--data", type=Path | None, help="", shared=opt.Data),
    "device": _option("--device", type=str, help="", default="auto", shared=opt.Device),
    "precision": _option(
        "--precision",
        type=opt.TrainPrecisionName,
        help="auto: bf16 mixed precision on a CUDA GPU with bf16, fp32 elsewhere; bf16 / fp16: autocast with fp32 "
        "weights and an fp32 loss (fp16 with a gradient scaler); tf32: fp32 with TF32 matrix products on a GPU.",
        default=opt.TrainPrecisionName("auto"),
    ),
    "deterministic": _option(
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


class _Loop:
    """The default of a command's parameter that is a loop option (:func:`loop`): what the command changes."""

    def __init__(self, changes: dict[str, Any]):
        self.changes = changes


def loop(default: Any = inspect.Parameter.empty, **changes: Any) -> Any:
    """This parameter is the loop option of its name, as :data:`OPTIONS` declares it but for ``default`` and
    ``changes`` (``help``, ``type``, ``show_default``)."""
    if default is not inspect.Parameter.empty:
        changes["default"] = default
    return _Loop(changes)


def _annotation(name: str, option: LoopOption) -> Any:
    """The Typer annotation of a loop option, its check derived from its constraint."""
    if option.shared is not None:
        return option.shared
    settings: dict[str, Any] = {"help": option.help}
    if not option.show_default:
        settings["show_default"] = False
    if option.envvar:
        settings["envvar"] = option.envvar
    rule = option.constraint or CONSTRAINTS.get(name)
    if isinstance(rule, Interval):
        if rule.integer:  # click's IntRange: --help shows the range
            settings.update({k: int(v) for k, v in (("min", rule.low), ("max", rule.high)) if v is not None})
        else:
            settings["callback"] = opt.constrained(rule)
    return Annotated[option.type, typer.Option(*option.flags, **settings)]


def training_command(fn: Callable) -> Callable:
    """Give each parameter of ``fn`` whose default is :func:`loop` its declared Typer option and default."""
    signature = inspect.signature(fn, eval_str=True)
    params = []
    for param in signature.parameters.values():
        if isinstance(param.default, _Loop):
            option = replace(OPTIONS[param.name], **param.default.changes)
            param = param.replace(annotation=_annotation(param.name, option), default=option.default)
        params.append(param)
    fn.__signature__ = signature.replace(parameters=params)
    return fn


def loop_config(params: dict[str, Any], defaults: dict[str, Any] | None = None, **own: Any) -> TrainConfig:
    """The checked :class:`TrainConfig` of a command: the loop options it has in ``params`` (its ``locals()``),
    choices as plain values, a ``None`` taking ``defaults[name]`` where given; then the command's ``own`` settings."""
    defaults = defaults or {}
    settings = {}
    for name in OPTIONS:
        if name in params and name in _CONFIG_FIELDS:
            value = opt.value(params[name])
            settings[name] = defaults[name] if value is None and name in defaults else value
    return TrainConfig(**settings, **own).validate()
