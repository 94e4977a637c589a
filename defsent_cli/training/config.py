"""Every setting of a training run, checked before anything loads (all recorded in ``defsent.json``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..constraints import Constraint, Interval, OneOf, check_all
from ..encoder.choices import WORD_HEADS
from ..encoder.precision import TRAIN_PRECISIONS
from ..errors import DefsentError
from ..formats.dictionary import SPLITS

TRAIN_POOLINGS = ("cls", "mean", "max")
LOGITS = ("dot", "cosine")
KEEP = ("best", "last")
EVAL_EACH_EPOCH = "epoch"  # eval_every: after every epoch (the pair trainers' default, as Reiml 2023)
#: --scale when none is given: DefSent+'s plain dot product has none (1); cosine logits need one
#: (sentence-transformers' MultipleNegativesRankingLoss, which trained all-MiniLM-L6-v2, uses 20).
DEFAULT_SCALE = {"dot": 1.0, "cosine": 20.0}
BATCHINGS = ("bucket", "random")
BANK_DTYPES = ("float32", "float16")
#: With --shard-bank left to its default, torchrun shards a bank that takes this much memory or more (in its
#: --bank-dtype) in every process: 1 GiB, 700k x 384 or 350k x 768 float32 rows (training/sharded_loss.py).
SHARD_BANK_BYTES = 1 << 30
#: Definitions per part of a bank built in bounded memory (``embed-entries --part-size``): a part's entries,
#: distinct texts, vectors (64k x d float32) and per-entry sums (at most 64k x d float64) are all that is held.
PART_DEFINITIONS = 65536
SCHEDULES = ("linear", "constant")
#: The variants of the definitions objective (``train --objective``; an "objective" is a registered class,
#: ``objective.OBJECTIVES``): defsent-plus: definitions onto a frozen bank of entry embeddings (DefSent+, Liu 2024);
#: defsent: the entry word predicted through the frozen word-prediction layer (DefSent, Tsukagoshi et al. 2021).
DEFINITIONS_VARIANTS = ("defsent-plus", "defsent")
#: TSDAE (training/tsdae.py): its poolings, the share of words deleted (the paper's 0.6), and the splits
#: of a dictionary whose definitions it reads.
TSDAE_POOLINGS = ("cls", "mean")
DELETION = 0.6
DICTIONARY_SPLITS = (*SPLITS, "all")
#: defsent simcse's variants (training/contrastive.py, ``simcse --objective``): SimCSE (two dropout views) or Noise
#: Matching (the deletion noise's
#: positive), which side of NM's pair carries the stop-gradient, and SimCSE's temperature 0.05 (scale 20).
CONTRASTIVE_VARIANTS = ("simcse", "nm")
STOP_GRADIENTS = ("original", "damaged", "none")
TEMPERATURE = 0.05
#: defsent train-pairs (training/pairs.py): sentence-transformers' CosineSimilarityLoss, CoSENTLoss, AnglELoss.
PAIR_LOSSES = ("cosine", "cosent", "angle")
DEFAULT_SEED = 42
MAX_SEED = 2**32 - 1  # numpy's and torch's seeds are 32-bit unsigned at most


def _criteria() -> tuple[str, ...]:
    from ..evaluation.criteria import CRITERIA  # the evaluation package: imported when a config is checked

    return tuple(CRITERIA)


_POSITIVE, _NON_NEGATIVE, _FRACTION = Interval(0, closed="right"), Interval(0), Interval(0, 1, closed="left")
_COUNT, _STEPS = Interval(1, integer=True), Interval(0, integer=True)

#: The constraints of objectives' own settings that the command line checks too (an objective's ``constraints``).
POSITIVE, NON_NEGATIVE, FRACTION = _POSITIVE, _NON_NEGATIVE, _FRACTION
DELETION_RULE = Interval(0, 1, closed="left", optional=True)  # None: an objective that deletes nothing

#: Every TrainConfig field's constraint, as data: ``TrainConfig.validate`` checks them in this order, and the
#: command line's options derive their checks from the same entries (``cli/options.py``, ``constrained``).
CONSTRAINTS: dict[str, Constraint] = {
    "pooling": OneOf(TRAIN_POOLINGS),
    "batching": OneOf(BATCHINGS),
    "lr": _POSITIVE,
    "head_lr": Interval(0, closed="right", optional=True),
    "adam_eps": _POSITIVE,
    "max_grad_norm": _NON_NEGATIVE,
    "weight_decay": _NON_NEGATIVE,
    "warmup_ratio": _FRACTION,
    "batch_size": _COUNT,
    "epochs": _COUNT,
    "bucket_batches": _COUNT,
    "log_every": _COUNT,
    "max_steps": Interval(1, integer=True, optional=True),
    "limit": Interval(1, integer=True, optional=True),
    "save_every": _STEPS,
    "max_length": Interval(2, integer=True, optional=True),
    "seed": Interval(0, MAX_SEED, integer=True),
    "keep": OneOf(KEEP, optional=True),
    "word_head": OneOf(WORD_HEADS),
    "schedule": OneOf(SCHEDULES),
    "precision": OneOf(TRAIN_PRECISIONS),
    "mlm_weight": _NON_NEGATIVE,
    "mlm_probability": Interval(0, 1, closed="neither"),
    "eval_on": OneOf(_criteria),
}


@dataclass
class TrainConfig:
    """The training loop's settings, every objective's (an objective's own are its ``settings()``). The defaults are
    the loop's neutral ones, the shared loop options' (``cli/loop_options.py`` reads them here); each objective's
    own loop defaults are its spec's (``specs.py``: ``Objective.config()``, ``ObjectiveSpec.config``)."""

    pooling: str = "cls"  # cls | mean: pool(last_hidden_state) before the head
    lr: float = 2e-5
    head_lr: float | None = None  # the head's dense layer's peak rate (default: lr)
    batch_size: int = 32
    epochs: int = 1
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    adam_eps: float = 1e-8
    max_grad_norm: float = 1.0
    seed: int = DEFAULT_SEED
    max_length: int | None = None
    max_steps: int | None = None
    limit: int | None = None
    batching: str = "random"  # random | bucket (length buckets, little padding)
    bucket_batches: int = 50  # batches per length bucket
    save_every: int = 500
    log_every: int = 20
    device: str = "auto"
    eval_every: int | str = 0  # score the model on eval_on every N steps (and at the end), or "epoch"; 0: never
    eval_on: str = "dev"  # a criterion of evaluation/criteria.py
    keep: str | None = None  # best | last (default: best with eval_every, else last)
    word_head: str = "mlm"  # mlm | embeddings: the frozen word-prediction layer (objective defsent, --mlm-weight)
    schedule: str = "linear"  # linear: warm-up then linear decay to 0; constant: warm-up then constant
    mlm_weight: float = 0.0  # lambda of the auxiliary masked-LM loss (0: none)
    mlm_probability: float = 0.15  # share of tokens masked for it
    precision: str = "auto"  # auto | fp32 | tf32 | bf16 | fp16 (encoder/precision.py): auto = bf16 on a bf16 GPU
    deterministic: bool = False  # torch's deterministic algorithms: bit-identical resumes on CUDA too

    @property
    def kept(self) -> str:
        return self.keep or ("best" if self.eval_every else "last")

    def __post_init__(self) -> None:
        self.validate()  # a TrainConfig that exists is a valid one: checked once, where it is made

    def validate(self) -> TrainConfig:
        """Every value checked (one-line DefsentError): each field against :data:`CONSTRAINTS`, then the rules
        that tie fields together; returns self. Run by the constructor."""
        if self.eval_every != EVAL_EACH_EPOCH and not Interval(0, integer=True).allows(self.eval_every):
            raise DefsentError(f"--eval-every must be 0 (never), a number of steps or {EVAL_EACH_EPOCH!r}")
        check_all(self, CONSTRAINTS)
        if self.keep == "best" and not self.eval_every:
            raise DefsentError("--keep best needs --eval-every N (the steps at which checkpoints are scored)")
        return self
