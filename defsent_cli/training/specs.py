"""Each training objective's spec: what it is before torch loads, its one home for every default (issue 77).

An :class:`ObjectiveSpec` says, as data: the objective's name (the command that trains it) and ``defsent.json``'s
``kind``; its loop defaults (the :class:`TrainConfig` fields where it departs from the loop's neutral defaults, per
variant where ``--objective`` picks one); the loop options its command does not offer (their values are the spec's);
the poolings it trains with; its own settings with their defaults and their constraints. The library
(:meth:`ObjectiveSpec.config`, ``Objective.config``, ``run.objective_fit`` without a config), the command line (each
option's default, ``cli/loop_options.py``) and ``--help`` (which shows those defaults) all read it here, so
``objective_fit(Tsdae(), sentences, model, output)`` trains at TSDAE's settings, as ``defsent tsdae`` does.

This module imports neither torch nor an objective's module (``--help`` reads it). :data:`SPECS` is the package's
objectives by name, in the order ``defsent --help`` lists their commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..constraints import Constraint, Interval, OneOf, check_all
from ..encoder.choices import POOLER_MODES
from ..encoder.pooling import POOLINGS
from .config import (
    BANK_DTYPES,
    CONTRASTIVE_VARIANTS,
    DEFINITIONS_VARIANTS,
    DELETION,
    DELETION_RULE,
    DICTIONARY_SPLITS,
    EVAL_EACH_EPOCH,
    FRACTION,
    LOGITS,
    NON_NEGATIVE,
    PAIR_LOSSES,
    POSITIVE,
    STOP_GRADIENTS,
    TEMPERATURE,
    TRAIN_POOLINGS,
    TSDAE_POOLINGS,
    TrainConfig,
)

#: The loop's neutral defaults, every :class:`TrainConfig` field's (read without making one: ``--help`` reads them).
NEUTRAL: dict[str, Any] = {f.name: f.default for f in fields(TrainConfig)}


@dataclass(frozen=True)
class ObjectiveSpec:
    """One objective's declarations, torch-free (see the module's docstring)."""

    name: str
    kind: str
    #: its own settings, by the names of its constructor's keywords, with their defaults (in the order recorded)
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: the rules of its settings (``constraints.py``), checked by ``Objective.check``
    constraints: Mapping[str, Constraint] = field(default_factory=dict)
    #: its loop defaults: the TrainConfig fields where it departs from :data:`NEUTRAL`
    loop: Mapping[str, Any] = field(default_factory=dict)
    #: per variant (its ``objective`` setting), the loop defaults that differ between variants, over ``loop``
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: the loop options its command does not offer: the run takes the spec's values for them
    fixed: tuple[str, ...] = ()
    #: the poolings it trains with
    poolings: tuple[str, ...] = TRAIN_POOLINGS
    #: its pooling; None: the model folder's own where it is one of ``poolings``, else CLS (the paper's)
    pooling: str | None = None
    #: what one training item is, in messages (``defsent.json`` counts them as ``training_<item>s``)
    item: str = "item"

    def __post_init__(self) -> None:
        unknown = sorted({*self.loop, *(k for v in self.variants.values() for k in v)} - set(NEUTRAL))
        if unknown or set(self.constraints) - set(self.settings):
            raise ValueError(f"{self.name}: no TrainConfig field {unknown} or no setting for a constraint")

    def variant(self, settings: Mapping[str, Any] | None = None) -> str | None:
        """The variant the ``objective`` setting of ``settings`` picks (its default without it); None: no variants."""
        if not self.variants:
            return None
        return (settings or {}).get("objective") or self.settings["objective"]

    def loop_defaults(self, variant: str | None = None) -> dict[str, Any]:
        """Every loop setting's default for this objective (and ``variant``, default: the default one)."""
        own = self.variants.get(variant or self.variant(), {}) if self.variants else {}
        pooling = {"pooling": self.pooling} if self.pooling is not None else {}
        return {**NEUTRAL, **pooling, **self.loop, **own}

    def varies(self, name: str) -> bool:
        """Whether the loop setting ``name``'s default differs between the variants (its option then shows each)."""
        return len({repr(self.loop_defaults(v)[name]) for v in self.variants}) > 1

    def config(self, variant: str | None = None, model: str | Path | None = None, **given: Any) -> TrainConfig:
        """The run's checked :class:`TrainConfig`: the loop's neutral defaults, this objective's (``variant``'s),
        then ``given`` (a value None is not given). Without a pooling given or in the spec, the ``model`` folder's
        own where it is one of :attr:`poolings`, else CLS."""
        given = {name: value for name, value in given.items() if value is not None}
        settings = {**self.loop_defaults(variant), **given}
        if "pooling" not in given and self.pooling is None and model is not None:
            settings["pooling"] = own_pooling(model, self.poolings)
        return TrainConfig(**settings)

    def own(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Its settings: the defaults, then ``given``; checked against :attr:`constraints`."""
        unknown = sorted(set(given) - set(self.settings))
        if unknown:
            raise TypeError(f"{self.name} has no setting {unknown}")
        settings = {**self.settings, **given}
        check_all(settings, self.constraints)
        return settings


def own_pooling(model: str | Path, allowed: tuple[str, ...]) -> str:
    """The pooling a training run takes from the model folder: its own (a sentence-transformers folder's
    ``modules.json``, a defsent checkpoint's record) where the objective trains with it, else CLS."""
    from ..encoder.models import own_pooling as folder_pooling  # reads the folder's files, loads no model

    own = folder_pooling(model)
    return own if own in allowed else "cls"


# ---------------------------------------------------------------- the package's objectives

#: DefSent+ and DefSent (``training/definitions.py``, ``defsent train``). DefSent (experiments/configs:
#: config.yaml, optimizer/adam.yaml, scheduler/warmup.yaml, src/lr_scheduler.py): batch 16, Adam (eps 1e-8, no
#: weight decay: the same update as AdamW with weight decay 0), no gradient clipping (configs/trainer/default.yaml:
#: gradient_clip_val 0.0), lr 1e-5, a linear warm-up over 10% of the steps and then a CONSTANT rate (LRPolycy
#: returns 1.0 after the warm-up; the paper says only "linear warm-up"; --schedule linear decays to 0 instead).
#: DefSent+ (TrainEncoder.py): batch 32, AdamW eps 1e-6, clipping at 1.0, lr 2e-5 (our default; the paper tunes
#: it), no warm-up, linear decay. Both in length buckets (the reference pads every definition to 141 tokens).
DEFINITIONS = ObjectiveSpec(
    name="train",
    kind="train",
    item="definition",
    settings={
        "pooler": "auto",
        "inference_pooling": None,
        "bank_dtype": "float32",
        "shard_bank": None,
        "logits": "dot",
        "scale": None,
        "label_smoothing": 0.0,
        "head_warmup_steps": 0,
        "objective": DEFINITIONS_VARIANTS[0],
        "freeze_embeddings": None,
    },
    constraints={
        "objective": OneOf(DEFINITIONS_VARIANTS),
        "pooler": OneOf(POOLER_MODES),
        "inference_pooling": OneOf(POOLINGS, optional=True),
        "bank_dtype": OneOf(BANK_DTYPES),
        "logits": OneOf(LOGITS),
        "scale": Interval(0, closed="right", optional=True),
        "label_smoothing": FRACTION,
        "head_warmup_steps": Interval(0, integer=True),
    },
    loop={"batching": "bucket"},
    variants={
        "defsent-plus": {
            "lr": 2e-5,
            "batch_size": 32,
            "warmup_ratio": 0.0,
            "adam_eps": 1e-6,
            "schedule": "linear",
            "max_grad_norm": 1.0,
        },
        "defsent": {
            "lr": 1e-5,
            "batch_size": 16,
            "warmup_ratio": 0.1,
            "adam_eps": 1e-8,
            "schedule": "constant",
            "max_grad_norm": 0.0,
        },
    },  # fmt: skip
)

#: TSDAE (``training/tsdae.py``, ``defsent tsdae``): the paper's AdamW at a constant lr 3e-5, no warm-up, weight
#: decay 0, batch 8, CLS pooling, 60% of the words deleted; sentence-transformers' fit's AdamW eps 1e-6 and
#: clipping at 1.0; length buckets. No dev evaluation.
TSDAE = ObjectiveSpec(
    name="tsdae",
    kind="tsdae",
    item="sentence",
    settings={"deletion": DELETION, "split": "train", "nm_weight": 0.0, "temperature": TEMPERATURE},
    constraints={
        "deletion": DELETION_RULE,
        "split": OneOf(DICTIONARY_SPLITS),
        "nm_weight": NON_NEGATIVE,
        "temperature": POSITIVE,
    },
    loop={
        "lr": 3e-5,
        "batch_size": 8,
        "warmup_ratio": 0.0,
        "weight_decay": 0.0,
        "schedule": "constant",
        "adam_eps": 1e-6,
        "max_grad_norm": 1.0,
        "batching": "bucket",
    },  # fmt: skip
    fixed=(
        "warmup_ratio",
        "weight_decay",
        "adam_eps",
        "max_grad_norm",
        "batching",
        "eval_every",
        "eval_on",
        "keep",
        "data",
    ),  # fmt: skip
    poolings=TSDAE_POOLINGS,
)

#: SimCSE and Noise Matching (``training/contrastive.py``, ``defsent simcse``): SimCSE's unsupervised BERT-base run
#: (``run_unsup_example.sh`` on the Hugging Face Trainer's defaults): batch 64, lr 3e-5, linear decay without
#: warm-up, AdamW eps 1e-8 and no weight decay, clipping at 1.0, 32 tokens, plain shuffles (length buckets would give
#: each sentence negatives of its own length only), temperature 0.05.
CONTRASTIVE = ObjectiveSpec(
    name="simcse",
    kind="contrastive",
    item="sentence",
    settings={
        "objective": CONTRASTIVE_VARIANTS[0],
        "split": "train",
        "mlp": None,
        "temperature": TEMPERATURE,
        "deletion": DELETION,
        "stop_gradient": STOP_GRADIENTS[0],
    },
    constraints={
        "objective": OneOf(CONTRASTIVE_VARIANTS),
        "split": OneOf(DICTIONARY_SPLITS),
        "temperature": POSITIVE,
        "deletion": DELETION_RULE,
        "stop_gradient": OneOf(STOP_GRADIENTS, optional=True),
    },
    loop={
        "lr": 3e-5,
        "batch_size": 64,
        "max_length": 32,
        "warmup_ratio": 0.0,
        "weight_decay": 0.0,
        "adam_eps": 1e-8,
        "max_grad_norm": 1.0,
        "schedule": "linear",
        "batching": "random",
    },  # fmt: skip
    poolings=TSDAE_POOLINGS,
)

#: The thesis's settings for scored pairs (Reiml 2023, section 5.1): AdamW lr 2e-5, weight decay 0.01, 10% warm-up
#: then linear decay, batch 16, three epochs, STS-B dev after every epoch, mean pooling (SBERT).
PAIR_LOOP = {
    "lr": 2e-5, "batch_size": 16, "epochs": 3, "warmup_ratio": 0.1, "weight_decay": 0.01, "eval_every": EVAL_EACH_EPOCH,
    "eval_on": "stsb-dev",
}  # fmt: skip

#: A bi-encoder on scored pairs (``training/pairs.py``, ``defsent train-pairs``).
PAIRS = ObjectiveSpec(
    name="train-pairs",
    kind="pairs",
    item="pair",
    settings={"loss": PAIR_LOSSES[0], "max_score": 5.0},
    constraints={"loss": OneOf(PAIR_LOSSES), "max_score": POSITIVE},
    loop=PAIR_LOOP,
    pooling="mean",
)

#: A Cross-Encoder or Cross-Bi-Encoder teacher (``training/teachers.py``, ``defsent teacher``): the pairs' settings,
#: mean pooling (the Cross-Bi-Encoder's; its command has no --pooling).
TEACHER = ObjectiveSpec(
    name="teacher",
    kind="teacher",
    item="pair",
    settings={"arch": "ce", "max_score": 5.0, "special_tokens": True},
    constraints={"arch": OneOf(("ce", "cbe")), "max_score": POSITIVE},
    loop=PAIR_LOOP,
    fixed=("matryoshka",),  # a teacher scores pairs: no widths of its vectors to train
    pooling="mean",
)

#: The package's objectives by name (``defsent --help``'s order of their commands).
SPECS: dict[str, ObjectiveSpec] = {spec.name: spec for spec in (DEFINITIONS, TSDAE, CONTRASTIVE, PAIRS, TEACHER)}
