"""Every setting of a training run, checked before anything loads (all recorded in ``defsent.json``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..encoder.choices import POOLER_MODES, WORD_HEADS
from ..encoder.pooling import POOLINGS
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
#: defsent-plus: definitions onto a frozen bank of entry embeddings (DefSent+, Liu 2024);
#: defsent: the entry word predicted through the frozen word-prediction layer (DefSent, Tsukagoshi et al. 2021).
OBJECTIVES = ("defsent-plus", "defsent")
#: What each objective's reference uses where the command line is silent (cli/train.py fills these in).
#: DefSent (experiments/configs: config.yaml, optimizer/adam.yaml, scheduler/warmup.yaml, src/lr_scheduler.py):
#: batch 16, Adam (eps 1e-8, no weight decay: the same update as AdamW with weight decay 0), no gradient clipping
#: (configs/trainer/default.yaml: gradient_clip_val 0.0), lr 1e-5, a linear
#: warm-up over 10% of the steps and then a CONSTANT rate (LRPolycy returns 1.0 after the warm-up; the paper says
#: only "linear warm-up"; --schedule linear decays to 0 instead). DefSent+ (TrainEncoder.py): batch 32, AdamW eps
#: 1e-6, clipping at 1.0, lr 2e-5 (our default; the paper tunes it), no warm-up, linear decay.
OBJECTIVE_DEFAULTS = {
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
}
#: TSDAE (training/tsdae.py): its poolings, the share of words deleted (the paper's 0.6), and the splits
#: of a dictionary whose definitions it reads.
TSDAE_POOLINGS = ("cls", "mean")
DELETION = 0.6
DICTIONARY_SPLITS = (*SPLITS, "all")
#: defsent simcse (training/contrastive.py): SimCSE (two dropout views) or Noise Matching (the deletion noise's
#: positive), which side of NM's pair carries the stop-gradient, and SimCSE's temperature 0.05 (scale 20).
CONTRASTIVE_OBJECTIVES = ("simcse", "nm")
STOP_GRADIENTS = ("original", "damaged", "none")
TEMPERATURE = 0.05
#: defsent train-pairs (training/pairs.py): sentence-transformers' CosineSimilarityLoss, CoSENTLoss, AnglELoss.
PAIR_LOSSES = ("cosine", "cosent", "angle")
DEFAULT_SEED = 42
MAX_SEED = 2**32 - 1  # numpy's and torch's seeds are 32-bit unsigned at most


def check_seed(seed: int, option: str = "--seed") -> int:
    if not 0 <= int(seed) <= MAX_SEED:
        raise DefsentError(f"{option} must be between 0 and {MAX_SEED}, got {seed}")
    return int(seed)


def check_positive(value: float | None, option: str, allow_zero: bool = False) -> None:
    """A finite number > 0 (>= 0 with ``allow_zero``); None passes."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise DefsentError(f"{option} must be a finite number {'>= 0' if allow_zero else '> 0'}, got {value}")


@dataclass
class TrainConfig:
    """One PST step's settings; the defaults are DefSent+'s where the reference fixes them."""

    pooling: str = "cls"  # cls | mean: pool(last_hidden_state) before the head
    pooler: str = "auto"  # auto | keep | mlm-dense | none | linear
    inference_pooling: str | None = None  # pooling stored for encode/eval (default: ``pooling``)
    lr: float = 2e-5
    head_lr: float | None = None  # the head's dense layer's peak rate (default: lr)
    batch_size: int = 32
    epochs: int = 1
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    adam_eps: float = 1e-6
    max_grad_norm: float = 1.0
    seed: int = DEFAULT_SEED
    max_length: int | None = None
    max_steps: int | None = None
    limit: int | None = None
    batching: str = "bucket"  # bucket | random
    bucket_batches: int = 50  # batches per length bucket
    save_every: int = 500
    log_every: int = 20
    device: str = "auto"
    bank_dtype: str = "float32"  # float32 | float16: how the frozen bank is held in memory
    shard_bank: bool | None = None  # torchrun: each process holds 1/N of the bank (None: from 1 GiB of bank on)
    logits: str = "dot"  # dot (DefSent+) | cosine: logits = scale * cos(rep, bank row)
    scale: float | None = None  # multiplies the logits (default DEFAULT_SCALE[logits])
    label_smoothing: float = 0.0
    head_warmup_steps: int = 0  # train only the head for this many steps first (LP-FT)
    eval_every: int | str = 0  # score the model on eval_on every N steps (and at the end), or "epoch"; 0: never
    eval_on: str = "dev"  # a criterion of evaluation/criteria.py
    keep: str | None = None  # best | last (default: best with eval_every, else last)
    objective: str = "defsent-plus"  # defsent-plus | defsent
    word_head: str = "mlm"  # mlm | embeddings: the frozen word-prediction layer (objective defsent, --mlm-weight)
    freeze_embeddings: bool | None = None  # the encoder's embedding layer frozen (default: True for defsent)
    schedule: str = "linear"  # linear: warm-up then linear decay to 0; constant: warm-up then constant
    mlm_weight: float = 0.0  # lambda of the auxiliary masked-LM loss (0: none)
    mlm_probability: float = 0.15  # share of tokens masked for it
    precision: str = "auto"  # auto | fp32 | tf32 | bf16 | fp16 (encoder/precision.py): auto = bf16 on a bf16 GPU
    deterministic: bool = False  # torch's deterministic algorithms: bit-identical resumes on CUDA too

    @property
    def embeddings_frozen(self) -> bool:
        return self.objective == "defsent" if self.freeze_embeddings is None else bool(self.freeze_embeddings)

    @property
    def logit_scale(self) -> float:
        return DEFAULT_SCALE[self.logits] if self.scale is None else float(self.scale)

    @property
    def kept(self) -> str:
        return self.keep or ("best" if self.eval_every else "last")

    def validate(self) -> TrainConfig:
        """Every value checked (one-line DefsentError); returns self."""
        if self.pooling not in TRAIN_POOLINGS:
            raise DefsentError(f"training pooling must be one of {', '.join(TRAIN_POOLINGS)}, not {self.pooling!r}")
        if self.inference_pooling is not None and self.inference_pooling not in POOLINGS:
            raise DefsentError(
                f"--inference-pooling must be one of {', '.join(POOLINGS)}, not {self.inference_pooling!r}"
            )
        if self.pooler not in POOLER_MODES:
            raise DefsentError(f"unknown --pooler {self.pooler!r}; choose one of {', '.join(POOLER_MODES)}")
        if self.batching not in BATCHINGS:
            raise DefsentError(f"--batching must be bucket or random, not {self.batching!r}")
        if self.bank_dtype not in BANK_DTYPES:
            raise DefsentError(f"--bank-dtype must be float32 or float16, not {self.bank_dtype!r}")
        for name in ("lr", "head_lr", "adam_eps"):
            check_positive(getattr(self, name), f"--{name.replace('_', '-')}")
        check_positive(self.max_grad_norm, "--max-grad-norm", allow_zero=True)
        check_positive(self.weight_decay, "--weight-decay", allow_zero=True)
        if not (math.isfinite(self.warmup_ratio) and 0 <= self.warmup_ratio < 1):
            raise DefsentError(f"--warmup-ratio must be in [0, 1), got {self.warmup_ratio}")
        for name in ("batch_size", "epochs", "bucket_batches", "log_every"):
            if getattr(self, name) < 1:
                raise DefsentError(f"--{name.replace('_', '-')} must be at least 1")
        for name in ("max_steps", "limit"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise DefsentError(f"--{name.replace('_', '-')} must be at least 1")
        if self.save_every < 0:
            raise DefsentError("--save-every must be 0 (never) or more")
        if self.max_length is not None and self.max_length < 2:
            raise DefsentError("--max-length must be at least 2")
        check_seed(self.seed)
        if self.logits not in LOGITS:
            raise DefsentError(f"--logits must be dot or cosine, not {self.logits!r}")
        check_positive(self.scale, "--scale")
        if not (math.isfinite(self.label_smoothing) and 0 <= self.label_smoothing < 1):
            raise DefsentError(f"--label-smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.head_warmup_steps < 0:
            raise DefsentError("--head-warmup-steps must be 0 or more")
        if self.head_warmup_steps and self.pooler == "none":
            raise DefsentError("--head-warmup-steps trains the head first; --pooler none has no head")
        if self.eval_every != EVAL_EACH_EPOCH and not (isinstance(self.eval_every, int) and self.eval_every >= 0):
            raise DefsentError(f"--eval-every must be 0 (never), a number of steps or {EVAL_EACH_EPOCH!r}")
        if self.keep not in (None, *KEEP):
            raise DefsentError(f"--keep must be best or last, not {self.keep!r}")
        if self.keep == "best" and not self.eval_every:
            raise DefsentError("--keep best needs --eval-every N (the steps at which checkpoints are scored)")
        if self.objective not in OBJECTIVES:
            raise DefsentError(f"--objective must be one of {', '.join(OBJECTIVES)}, not {self.objective!r}")
        if self.word_head not in WORD_HEADS:
            raise DefsentError(f"--word-head must be one of {', '.join(WORD_HEADS)}, not {self.word_head!r}")
        if self.schedule not in SCHEDULES:
            raise DefsentError(f"--schedule must be one of {', '.join(SCHEDULES)}, not {self.schedule!r}")
        if self.precision not in TRAIN_PRECISIONS:
            raise DefsentError(f"--precision must be one of {', '.join(TRAIN_PRECISIONS)}, not {self.precision!r}")
        check_positive(self.mlm_weight, "--mlm-weight", allow_zero=True)
        if not (math.isfinite(self.mlm_probability) and 0 < self.mlm_probability < 1):
            raise DefsentError(f"--mlm-probability must be in (0, 1), got {self.mlm_probability}")
        if self.objective == "defsent":
            mixed = [
                option
                for option, used in (
                    ("--pooler", self.pooler != "auto"),
                    ("--head-lr", self.head_lr is not None),
                    ("--head-warmup-steps", self.head_warmup_steps > 0),
                    ("--logits cosine", self.logits != "dot"),
                    ("--scale", self.scale is not None),
                    ("--bank-dtype float16", self.bank_dtype != "float32"),
                    ("--shard-bank", bool(self.shard_bank)),
                    ("--eval-on dict-dev", self.eval_on == "dict-dev"),
                )
                if used
            ]
            if mixed:
                raise DefsentError(
                    f"{', '.join(mixed)}: DefSent+ options; --objective defsent predicts the word through the frozen "
                    "word head (--word-head) over the vocabulary"
                )
        from ..evaluation.criteria import CRITERIA

        if self.eval_on not in CRITERIA:
            raise DefsentError(f"--eval-on must be one of {', '.join(CRITERIA)}, not {self.eval_on!r}")
        return self
