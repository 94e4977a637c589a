"""DefSent+ and DefSent as an objective: one PST step (DefSent+ ``TrainEncoder.py``), ``defsent train``.

A fresh copy of the base model learns to map each training definition onto its
entry's row of a frozen bank:  loss = CE(head(pool(encoder(definition))) . bank^T).
DefSent (``--objective defsent``) predicts the entry's word instead: the logits are the frozen word head's over
the vocabulary (the vocabulary is the bank, the token the label).

Faithful to the reference: AdamW (eps 1e-6, weight decay 0), linear decay to 0
with no warm-up, gradient clipping 1.0, batch 32, one epoch, fp32 (``--precision auto`` is bf16 mixed
precision on a bf16 GPU and on a CPU with AMX, fp32 elsewhere), the pooler
dense head (``encoder/head.py``).  Ours on top: a seed for data order, dropout
and init; length-bucketed batches (the reference pads every definition to 141
tokens); a loss that never holds more than one batch x entries matrix; a
JSONL loss log; resumable state every ``save_every`` steps (``state.py``).

The loop, its state and the torchrun weighting are ``loop.py``'s, the set-up ``objective.py``'s
(:class:`objective.ObjectiveRun`), the forward pass and the +MLM term ``forward.py``'s; here is what is
DefSent+'s and DefSent's: the bank (whole, or this process's shard under ``--shard-bank``), the head, the data,
the loss and the record.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .. import distributed
from ..encoder.head import setup_pooler
from ..encoder.tokenize import to_device
from ..encoder.word_head import WORD_HEAD_FILE, save_word_head
from ..errors import DefsentError, count
from ..formats.bank import check_bank_matches, open_bank
from ..formats.dictionary import check_dictionary
from .config import DEFAULT_SCALE, TrainConfig
from .data import training_data, word_training_data
from .forward import TrainForward, batch, forward, noised
from .loop import ObjectiveRun, StepLoss
from .loss import bank_cross_entropy
from .objective import Objective, register
from .sharded_loss import BankShard, wants_sharding
from .specs import DEFINITIONS

_OWN = DEFINITIONS.settings  # its settings' defaults: the spec's (the command's options read them there too)

#: The DefSent+ options that DefSent's word prediction does not take (checked by :meth:`Definitions.check`).
_PLUS_ONLY = (
    ("--pooler", lambda d, c: d.pooler != "auto"),
    ("--head-lr", lambda d, c: c.head_lr is not None),
    ("--head-warmup-steps", lambda d, c: d.head_warmup_steps > 0),
    ("--logits cosine", lambda d, c: d.logits != "dot"),
    ("--scale", lambda d, c: d.scale is not None),
    ("--bank-dtype float16", lambda d, c: d.bank_dtype != "float32"),
    ("--shard-bank", lambda d, c: bool(d.shard_bank)),
    ("--eval-on dict-dev", lambda d, c: c.eval_on == "dict-dev"),
)


@register
class Definitions(Objective):
    """Definitions onto their entries: the bank's rows (DefSent+) or the word head's vocabulary (DefSent)."""

    spec = DEFINITIONS
    data_argument = "DICTIONARY"
    unit = "defs"
    mlm = nm = True  # takes --mlm-weight and --nm-weight (forward.py)
    dev_key = None  # the state's document is the dev tracker's own, as train's always was
    best_prefix = ""  # and the kept-best weights bare
    #: the model card's title and sentence, by objective
    cards = {
        "defsent-plus": (
            "DefSent+ fine-tune",
            "one DefSent+ training step (Liu 2024): the encoder learns to map each dictionary definition onto its "
            "entry's vector in a frozen entry bank.",
        ),
        "defsent": (
            "DefSent fine-tune",
            "one DefSent training step (Tsukagoshi et al. 2021): the pooled definition, through the model's frozen "
            "masked-LM head, learns to predict its entry word.",
        ),
    }

    def __init__(
        self,
        bank: Path | None = None,
        objective: str = _OWN["objective"],
        pooler: str = _OWN["pooler"],
        inference_pooling: str | None = _OWN["inference_pooling"],
        bank_dtype: str = _OWN["bank_dtype"],
        shard_bank: bool | None = _OWN["shard_bank"],
        logits: str = _OWN["logits"],
        scale: float | None = _OWN["scale"],
        label_smoothing: float = _OWN["label_smoothing"],
        head_warmup_steps: int = _OWN["head_warmup_steps"],
        freeze_embeddings: bool | None = _OWN["freeze_embeddings"],
    ):
        self.bank_path = Path(bank) if bank is not None else None
        self.objective, self.pooler, self.inference_pooling = objective, pooler, inference_pooling
        self.bank_dtype, self.shard_bank, self.logits, self.scale = bank_dtype, shard_bank, logits, scale
        self.label_smoothing, self.head_warmup_steps = label_smoothing, head_warmup_steps
        self.freeze_embeddings = freeze_embeddings
        self.shard: BankShard | None = None  # --shard-bank: this process's rows of the bank (else self.bank is all)

    @property
    def embeddings_frozen(self) -> bool:
        """DefSent freezes the embedding layer unless told otherwise; DefSent+ trains it."""
        return self.objective == "defsent" if self.freeze_embeddings is None else bool(self.freeze_embeddings)

    @property
    def logit_scale(self) -> float:
        return DEFAULT_SCALE[self.logits] if self.scale is None else float(self.scale)

    def check(self, config: TrainConfig) -> None:
        super().check(config)
        if self.head_warmup_steps and self.pooler == "none":
            raise DefsentError("--head-warmup-steps trains the head first; --pooler none has no head")
        if self.objective == "defsent":
            mixed = [option for option, used in _PLUS_ONLY if used(self, config)]
            if mixed:
                raise DefsentError(
                    f"{', '.join(mixed)}: DefSent+ options; --objective defsent predicts the word through the frozen "
                    "word head (--word-head) over the vocabulary"
                )
            if self.bank_path is not None:
                raise DefsentError(
                    "--objective defsent predicts the word over the vocabulary and uses no --bank; drop it"
                )
        elif self.bank_path is None:
            raise DefsentError("--objective defsent-plus trains against an entry bank: pass --bank BANK.h5")

    def refusal(self, term: str) -> str | None:
        if term == "matryoshka" and self.logits == "cosine":
            return (
                "--matryoshka cuts both sides of the logits' dot product; --logits cosine normalises the bank at its "
                "full width: use --logits dot"
            )
        return super().refusal(term)

    def card(self) -> tuple[str, str]:
        return self.cards[self.objective]

    def encoder_start(self) -> tuple[int, str]:
        return self.head_warmup_steps, "--head-warmup-steps"

    def unused_parameters(self, run: ObjectiveRun) -> bool:
        """--pooler none leaves a trainable pooler out of the loss (the default's case), a head warm-up the
        encoder."""
        return super().unused_parameters(run) or self.head_warmup_steps > 0

    def inputs(self) -> dict[str, Path]:
        return {"--bank": self.bank_path} if self.bank_path is not None else {}

    def dev_data(self, path: Path) -> tuple[Path | None, Path | None]:
        return path, self.bank_path

    def read(self, path: Path, config: TrainConfig):
        """The entry bank, opened and checked against the dictionary (its rows are read by :meth:`setup`: all of
        them, or this process's shard)."""
        check_dictionary(path)
        if self.objective == "defsent":
            return None
        bank = open_bank(self.bank_path)
        check_bank_matches(bank, path)
        return bank

    def setup(self, run: ObjectiveRun, bank) -> None:
        config, loaded = run.config, run.loaded
        if bank is None:
            # DefSent: logits = word_head(pool(h)) over the vocabulary; the vocabulary is the bank, the token the label
            self.word_head = run.word_head()
            self.head = self.word_head.transform
            vectors = self.word_head.matrix
            run.data = word_training_data(run.dictionary, loaded.tokenizer, run.pool, run.max_length, config)
            self.bank_attrs, self.n_bank = {}, int(vectors.shape[0])
        else:
            if config.mlm_weight:  # the frozen word-prediction layer of the auxiliary MLM loss, loaded first as always
                run.word_head()
            if bank.dim != loaded.dim:
                raise DefsentError(
                    f"bank has {bank.dim} dims but the model {run.base_model} has {loaded.dim}", path=self.bank_path
                )
            self.bank_attrs, self.n_bank = bank.attrs, len(bank)
            cosine = self.logits == "cosine"  # cos(rep, row) = unit(rep) . unit(row): the bank is normalised once
            vectors = None
            if wants_sharding(self.shard_bank, len(bank), bank.dim, self.bank_dtype):
                self.shard = BankShard.read(bank, self.bank_dtype, run.device, cosine, self.label_smoothing)
            else:
                vectors = torch.from_numpy(bank.rows(dtype=self.bank_dtype))
                if cosine:
                    vectors = torch.nn.functional.normalize(vectors, dim=1)
            self.head = setup_pooler(
                run.model, self.pooler, loaded.transformer_dir, loaded.missing_keys, warn=distributed.is_main()
            )
            run.data = training_data(run.dictionary, bank.splits, loaded.tokenizer, run.pool, run.max_length, config)
        # float16 halves the bank's memory (all of it, or the shard, in every process); the loss math stays float32.
        if self.shard is not None:
            self.bank, self.bank_mean = self.shard.rows, None
        else:
            self.bank = vectors.to(run.device, getattr(torch, self.bank_dtype))
            smoothing = self.label_smoothing
            self.bank_mean = vectors.double().mean(dim=0).float().to(run.device) if smoothing else None
        del bank, vectors
        if self.embeddings_frozen:  # DefSent: freeze_token_embeddings (the whole embedding layer)
            embeddings = getattr(run.model, "embeddings", None) or run.model.get_input_embeddings()
            embeddings.requires_grad_(False)
        run.head = self.head
        run.net = TrainForward(run.model, self.head, run.pool)  # DDP-wrapped by distribute()

    def param_groups(self, run: ObjectiveRun, encoder: list, modules: list) -> list[dict]:
        """The encoder's (without the head's dense layer, the model's pooler dense), then the head's at
        ``--head-lr`` (default ``--lr``); a word head is frozen."""
        head_ids = {id(p) for p in self.head.parameters()}
        groups = [{"params": [p for p in encoder + modules if id(p) not in head_ids]}]
        head = [p for p in self.head.parameters() if p.requires_grad]
        if head:
            groups.append({"params": head, "lr": run.config.head_lr or run.config.lr})
        return groups

    def served(self, run: ObjectiveRun) -> tuple[str, str]:
        return self.inference_pooling or run.config.pooling, self.head.mode_description

    def loss(self, run: ObjectiveRun, index: np.ndarray) -> torch.Tensor | StepLoss:
        """logits = scale * rep . bank^T (dot) or scale * cos(rep, row) (cosine); cross-entropy on the entry's row
        (objective defsent: the word head's vocabulary logits, cross-entropy on the entry's token); + λ · MLM,
        + λ · NM of the definitions.

        With the bank sharded (``--shard-bank``) the cross-entropy is over the whole global batch
        (``run.global_batch``), from this process's rows of the bank: a :class:`StepLoss` then."""
        device = run.device
        definitions = batch(run, [run.data.token_ids[i] for i in index])
        head_only = run.step < self.head_warmup_steps  # a head warm-up trains the head alone: no MLM pass
        reps, aux = forward(
            run, definitions, mlm_on=None if head_only else definitions, head_only=head_only, nm_on=noised(run, index)
        )
        if self.logits == "cosine":
            reps = torch.nn.functional.normalize(reps, dim=1)
        if self.logit_scale != 1.0:
            reps = reps * self.logit_scale
        if self.shard is not None:
            labels = to_device(torch.from_numpy(run.data.labels[run.global_batch]), device)
            return StepLoss(self.shard.loss(reps, labels, run.sizes, self.label_smoothing), aux)
        labels = to_device(torch.from_numpy(run.data.labels[index]), device)
        loss = bank_cross_entropy(
            reps, self.bank, labels, label_smoothing=self.label_smoothing, mean_row=self.bank_mean
        )
        return loss if aux is None else loss + aux

    def describe(self, run: ObjectiveRun) -> str:
        config = run.config
        against = "vocabulary tokens" if self.objective == "defsent" else "entries"
        return (
            f"training {run.base_model} on {count(len(run.data), 'definition')} against {self.n_bank:,} {against} "
            f"({config.pooling} pooling, head {self.head.mode_description}, lr {config.lr:g}, "
            f"batch {config.batch_size}, {count(run.total_steps, 'step')}, seed {config.seed}"
            + (f", bank sharded: 1/{run.world} of its rows in each process" if self.shard is not None else "")
        )

    def files(self, work_dir: Path) -> dict[str, Path]:
        """A word head to rank words with (objective defsent: eval-dict and lookup rank the vocabulary with it)."""
        if self.bank_path is not None:
            return {}
        save_word_head(work_dir / WORD_HEAD_FILE, self.word_head)
        return {WORD_HEAD_FILE: work_dir / WORD_HEAD_FILE}

    def record(self, run: ObjectiveRun) -> dict:
        config, defs = run.config, len(run.data)
        return {
            "kind": self.kind,
            "pooling": self.inference_pooling or config.pooling,
            "train_pooling": config.pooling,
            "head": self.head.mode_description,
            "pooler_mode": self.pooler,
            "objective": self.objective,
            "dictionary": str(run.dictionary.resolve()),
            **self._target_info(run),
            "training_definitions": defs,
            "training_entries": run.data.n_entries_trained,
            "definitions_per_second": round(
                min(run.step * config.batch_size, defs * config.epochs) / max(run.elapsed, 1e-9), 2
            ),
            **run.dev_info(),
        }

    def _target_info(self, run: ObjectiveRun) -> dict:
        """What the logits were computed against: the entry bank, or the vocabulary of the word head."""
        if self.bank_path is None:
            return {
                "word_head": self.word_head.kind,
                "vocabulary": self.n_bank,
                "multi_token_entries_skipped": run.data.skipped_entries,
            }
        return {
            "bank": str(self.bank_path.resolve()),
            "bank_sha256": run.inputs()["--bank"]["sha256"],  # hashed once for the resumable state and this
            "bank_attrs": dict(self.bank_attrs),
            "bank_entries": self.n_bank,
            "bank_sharded": self.shard is not None,  # --shard-bank: each process held 1/processes of the rows
        }


def pst_step(dictionary: Path, bank: Path | None, base_model: Path, config: TrainConfig, **settings) -> ObjectiveRun:
    """The run of one PST step, set up and ready to :meth:`~loop.Loop.run` (benchmarks and tests drive it by hand;
    ``run.train`` writes its checkpoint); ``settings``: :class:`Definitions`' own (``pooler="keep"``)."""
    return ObjectiveRun(Definitions(bank, **settings), dictionary, base_model, config)
