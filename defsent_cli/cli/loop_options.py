"""The training loop's options, declared once for every training command as one group (``groups.py``), and the
closing every training command shares (:func:`fit_objective`).

Each option of the loop (``--lr`` to ``--deterministic``) is a member of :data:`LOOP`: its flags, type and help;
its default is the :class:`TrainConfig` field's (the loop's neutral one), its check the field's constraint
(``training/config.py``, ``CONSTRAINTS``). A training command takes the group as its objective takes it,
:func:`loop_of` its spec (``training/specs.py``): every member but those the objective fixes, each default the
objective's, changing only what the command says differently (a help that says what an item is, a type)::

    @takes_groups
    def simcse_command(ctx, sentences: opt.Sentences, ...,
                       loop: Values = loop_of(CONTRASTIVE, lr=change(help="Peak learning rate (linear decay).")), ...):
        fit_objective(Contrastive(...), sentences, model, output, loop, pooling=..., force=force, ...)

:func:`loop_config` maps the loop's values, and the command's own settings, to one :class:`TrainConfig` over the
objective's defaults (one way for every command and for the library: a value left ``None`` is the objective's, such
as ``train``'s per-variant ones).
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from .. import distributed
from ..console import say
from ..constraints import Interval
from ..errors import count
from ..training.config import CONSTRAINTS, DELETION, TEMPERATURE, TrainConfig
from ..training.specs import NEUTRAL, ObjectiveSpec
from . import options as opt
from .groups import Group, Taken, Values, change, declared, option, takes_groups

__all__ = ["AUX", "LOOP", "Values", "change", "fit_objective", "loop_config", "loop_of", "takes_groups"]

#: The loop's options, in the order --help lists them; a TrainConfig field's default is the field's (below).
OPTIONS = {
    "lr": option("--lr", type=float, help="Peak learning rate."),
    "batch_size": option("--batch-size", "-b", type=int, help="Items per step."),
    "epochs": option("--epochs", type=int, help="Passes over the training data."),
    "warmup_ratio": option("--warmup-ratio", type=float, help="Share of steps for linear warm-up."),
    "weight_decay": option("--weight-decay", type=float, help="AdamW weight decay."),
    "adam_eps": option("--adam-eps", type=float, help="AdamW epsilon."),
    "max_grad_norm": option("--max-grad-norm", type=float, help="Gradient clipping norm, 0 = none."),
    "seed": declared(opt.Seed),
    "max_length": option("--max-length", type=int | None, help=opt.MAX_LENGTH_HELP),
    "max_steps": option("--max-steps", type=int | None, help="Stop after this many steps (smoke runs)."),
    "limit": option("--limit", type=int | None, help="Use a seeded random sample (--seed) of this many definitions."),
    "batching": option("--batching", type=opt.Batching, help="bucket (length buckets, little padding) or random."),
    "save_every": option("--save-every", type=int, help="Save resumable state every N steps (0: never)."),
    "log_every": option("--log-every", type=int, help="Write a loss row to the log every N steps."),
    "resume": option("--resume", type=bool, help="Continue a killed run from OUTPUT.partial/.", default=False),
    "eval_every": option(
        "--eval-every",
        type=int,
        help="Score the model on --eval-on every N steps and at the end (0: never); the curve goes to "
        "train_log.jsonl and defsent.json.",
        constraint=Interval(0, integer=True, optional=True),
    ),
    "eval_on": option(
        "--eval-on",
        type=opt.EvalOn,
        help="The dev criterion (dev = mean of STS-B dev and SICK-R trial Spearman; no test data).",
    ),
    "keep": option(
        "--keep",
        type=opt.Keep | None,
        help="Which checkpoint to write: best (best score seen; the default with --eval-every) or last.",
        show_default=False,
    ),
    "matryoshka": option(
        "--matryoshka",
        type=str | None,
        help="Matryoshka training (Kusupati et al. 2022): the loss at each of these leading widths, summed, so that "
        "the vectors cut to any of them stand alone (encode --dims, the server's dimensions), e.g. 384,256,128,64; "
        "WIDTH:WEIGHT weighs one (default 1). Recorded in defsent.json and the model card (matryoshka_dims).",
        show_default=False,
    ),
    "data": declared(opt.Data),
    "device": declared(opt.Device),
    "precision": option(
        "--precision",
        type=opt.TrainPrecisionName,
        help="auto: bf16 mixed precision on a CUDA GPU with bf16 and on a CPU with AMX (Intel Xeon from Sapphire "
        "Rapids on; DEFSENT_CPU_AMX=0 turns that off), fp32 elsewhere; bf16 / fp16: autocast with fp32 "
        "weights and an fp32 loss (fp16 with a gradient scaler); tf32: fp32 with TF32 matrix products on a GPU.",
    ),
    "deterministic": option(
        "--deterministic",
        type=bool,
        help="torch's deterministic algorithms (and the math attention kernel): a killed and resumed run ends at "
        "the very weights of an uninterrupted one on a GPU too, at some cost in speed.",
    ),
}
OPTIONS = {
    name: replace(member, default=NEUTRAL[name]) if name in NEUTRAL else member for name, member in OPTIONS.items()
}
_CONFIG_FIELDS = {f.name for f in fields(TrainConfig)}

#: what commands say differently of their loop options
SENTENCE_LIMIT = "Use a seeded random sample (--seed) of this many sentences (of a dictionary: definitions)."
EPOCH_EVAL_EVERY = "Score the model on --eval-on every N steps (default: after every epoch, as the thesis; 0: never)."
TEACHER_EVAL_ON = (
    "The dev criterion: the Spearman of the teacher's own pair scores on STS-B dev (stsb-dev), or its mean with "
    "SICK-R trial's (dev)."
)
#: what train-pairs and teacher say of their loop options (--eval-every left out: the objective's, after every epoch
#: as the thesis)
PAIR_LOOP = {
    "batch_size": change(help="Pairs per step."),
    "limit": change(help="Use a seeded random sample (--seed) of this many pairs."),
    "eval_every": change(None, type=int | None, help=EPOCH_EVAL_EVERY, show_default=False),
    "eval_on": change(type=opt.SentenceEvalOn),
}


LOOP = Group("loop", OPTIONS, constraints=CONSTRAINTS)

#: The auxiliary terms' options, for the commands whose objective takes them (``training/forward.py``): +MLM
#: (``--mlm-weight``, TrainConfig settings, their defaults the loop's) and +NM (``--nm-weight``,
#: ``training/noise_matching.NoiseMatching``'s, off by default); ``AUX(without=MLM_TERM)`` for +NM alone.
AUX = Group(
    "aux",
    {
        "mlm_weight": declared(opt.MlmWeight, NEUTRAL["mlm_weight"]),
        "mlm_probability": declared(opt.MlmProbability, NEUTRAL["mlm_probability"]),
        "nm_weight": declared(opt.NmWeight, 0.0),
        "nm_temperature": declared(opt.NmTemperature, TEMPERATURE),
        "nm_deletion": declared(opt.NmDeletion, DELETION),
    },
)
MLM_TERM = ("mlm_weight", "mlm_probability")


def loop_of(spec: ObjectiveSpec, **changes: dict[str, Any]) -> Taken:
    """The loop group as the command of ``spec``'s objective takes it: every member but those the objective fixes
    (``spec.fixed``), each default the objective's (``spec.loop_defaults()``: what ``--help`` shows) unless the
    command's ``changes`` give one (None: the objective's, resolved by :func:`loop_config`, as a default that follows
    ``train --objective``), with the rest of the command's ``changes`` (a help, a type)."""
    defaults = spec.loop_defaults()
    filled = {
        name: {"default": defaults[name], **changes.get(name, {})}
        for name in OPTIONS
        if name in defaults and name not in spec.fixed
    }
    return LOOP(without=spec.fixed, **{**changes, **filled})


def loop_config(loop: Values, objective: Any, model: Path | None = None, **own: Any) -> TrainConfig:
    """The checked :class:`TrainConfig` of a command: its loop values and its ``own`` settings (choices as plain
    values) over its ``objective``'s defaults (``Objective.config``: a value None is the objective's; the pooling,
    left out, the ``model`` folder's own where the objective trains with it)."""
    given = {name: opt.value(value) for name, value in loop if name in _CONFIG_FIELDS}
    given.update({name: opt.value(value) for name, value in own.items()})
    return objective.config(model, **given)  # checked as it is made


# ---------------------------------------------------------------- what every training command says and does


def noise_matching(weight: float | None, temperature: float | None, deletion: float | None):
    """The +NM term of ``--nm-weight`` (None when it is 0 or not taken)."""
    from ..training.noise_matching import NoiseMatching  # torch: imported by the command, not by --help

    return NoiseMatching(weight, temperature, deletion) if weight else None


def training_warnings(eval_every: int, aux: Values | None = None) -> list[tuple[str, bool, str]]:
    """The ``warn_ineffective`` rows of the options every trainer shares: evaluation without --eval-every, and
    (a command with the auxiliary terms' options, ``aux``) their settings without their weight."""
    terms = dict(aux or {})
    mlm_weight, nm_weight = terms.get("mlm_weight"), terms.get("nm_weight")
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


def fit_objective(
    objective: Any,
    data_file: Path,
    model: Path,
    output: Path,
    loop: Values,
    aux: Values | None = None,
    *,
    force: bool,
    show_progress: bool | None,
    **own: Any,
) -> dict:
    """What every training command closes with: the run's :class:`TrainConfig` (:func:`loop_config`, with the
    command's ``own`` settings and +MLM's of ``aux``), the run (``training/run.objective_fit``, with the +NM term of
    ``aux``) and its closing line (:func:`trained_summary`, rank 0's). Returns the checkpoint's ``defsent.json``."""
    from ..training.matryoshka import Matryoshka
    from ..training.run import objective_fit  # torch: imported by the command, not by --help

    terms = dict(aux or {})
    nm = noise_matching(*(terms.pop(name, None) for name in ("nm_weight", "nm_temperature", "nm_deletion")))
    matryoshka = Matryoshka.parse(getattr(loop, "matryoshka", None))
    config = loop_config(loop, objective, model, **terms, **own)
    data = getattr(loop, "data", None)  # the evaluation data, where the command evaluates
    info = objective_fit(
        objective, data_file, model, output, config, loop.resume, force, show_progress, data, nm, matryoshka
    )
    if distributed.is_main():
        item = objective.spec.item
        rate = f"{item}s" if f"{item}s_per_second" in info else None
        say(trained_summary(output, info, count(info[f"training_{item}s"], item), rate=rate))
    return info
