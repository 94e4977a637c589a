"""DefSent+ and DefSent as an objective: one PST step (DefSent+ ``TrainEncoder.py``), ``defsent train``.

A fresh copy of the base model learns to map each training definition onto its
entry's row of a frozen bank:  loss = CE(head(pool(encoder(definition))) . bank^T).
DefSent (``--objective defsent``) predicts the entry's word instead: the logits are the frozen word head's over
the vocabulary (the vocabulary is the bank, the token the label).

Faithful to the reference: AdamW (eps 1e-6, weight decay 0), linear decay to 0
with no warm-up, gradient clipping 1.0, batch 32, one epoch, fp32 (``--precision auto`` is bf16 mixed
precision on a bf16 GPU, fp32 elsewhere), the pooler
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
from .config import TrainConfig
from .data import training_data, word_training_data
from .forward import TrainForward, batch, forward, noised
from .loop import StepLoss
from .loss import bank_cross_entropy
from .objective import Objective, ObjectiveRun, register
from .sharded_loss import BankShard, wants_sharding


@register
class Definitions(Objective):
    """Definitions onto their entries: the bank's rows (DefSent+) or the word head's vocabulary (DefSent)."""

    name = kind = "train"
    data_argument = "DICTIONARY"
    mlm = nm = True  # takes --mlm-weight and --nm-weight (forward.py)
    dev_key = None  # the state's document is the dev tracker's own, as train's always was
    best_prefix = ""  # and the kept-best weights bare

    def __init__(self, bank: Path | None = None):
        self.bank_path = Path(bank) if bank is not None else None
        self.shard: BankShard | None = None  # --shard-bank: this process's rows of the bank (else self.bank is all)

    def check(self, config: TrainConfig) -> None:
        super().check(config)
        if config.objective != "defsent" and self.bank_path is None:
            raise DefsentError("--objective defsent-plus trains against an entry bank: pass --bank BANK.h5")

    def dev_data(self, path: Path) -> tuple[Path | None, Path | None]:
        return path, self.bank_path

    def read(self, path: Path, config: TrainConfig):
        """The entry bank, opened and checked against the dictionary (its rows are read by :meth:`setup`: all of
        them, or this process's shard)."""
        check_dictionary(path)
        if config.objective == "defsent":
            return None
        bank = open_bank(self.bank_path)
        check_bank_matches(bank, path)
        return bank

    def setup(self, run: ObjectiveRun, bank) -> None:
        config, loaded = run.config, run.loaded
        run.bank_path = self.bank_path  # an input the resumable state records
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
            cosine = config.logits == "cosine"  # cos(rep, row) = unit(rep) . unit(row): the bank is normalised once
            vectors = None
            if wants_sharding(config.shard_bank, len(bank), bank.dim, config.bank_dtype):
                self.shard = BankShard.read(bank, config.bank_dtype, run.device, cosine, config.label_smoothing)
            else:
                vectors = torch.from_numpy(bank.rows(dtype=config.bank_dtype))
                if cosine:
                    vectors = torch.nn.functional.normalize(vectors, dim=1)
            self.head = setup_pooler(
                run.model, config.pooler, loaded.transformer_dir, loaded.missing_keys, warn=distributed.is_main()
            )
            run.data = training_data(run.dictionary, bank.splits, loaded.tokenizer, run.pool, run.max_length, config)
        # float16 halves the bank's memory (all of it, or the shard, in every process); the loss math stays float32.
        if self.shard is not None:
            self.bank, self.bank_mean = self.shard.rows, None
        else:
            self.bank = vectors.to(run.device, getattr(torch, config.bank_dtype))
            smoothing = config.label_smoothing
            self.bank_mean = vectors.double().mean(dim=0).float().to(run.device) if smoothing else None
        del bank, vectors
        if config.embeddings_frozen:  # DefSent: freeze_token_embeddings (the whole embedding layer)
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
        return run.config.inference_pooling or run.config.pooling, self.head.mode_description

    def loss(self, run: ObjectiveRun, index: np.ndarray) -> torch.Tensor | StepLoss:
        """logits = scale * rep . bank^T (dot) or scale * cos(rep, row) (cosine); cross-entropy on the entry's row
        (objective defsent: the word head's vocabulary logits, cross-entropy on the entry's token); + λ · MLM,
        + λ · NM of the definitions.

        With the bank sharded (``--shard-bank``) the cross-entropy is over the whole global batch
        (``run.global_batch``), from this process's rows of the bank: a :class:`StepLoss` then."""
        config, device = run.config, run.device
        definitions = batch(run, [run.data.token_ids[i] for i in index])
        head_only = run.step < config.head_warmup_steps  # a head warm-up trains the head alone: no MLM pass
        reps, aux = forward(
            run, definitions, mlm_on=None if head_only else definitions, head_only=head_only, nm_on=noised(run, index)
        )
        if config.logits == "cosine":
            reps = torch.nn.functional.normalize(reps, dim=1)
        if config.logit_scale != 1.0:
            reps = reps * config.logit_scale
        if self.shard is not None:
            labels = to_device(torch.from_numpy(run.data.labels[run.global_batch]), device)
            return StepLoss(self.shard.loss(reps, labels, run.sizes, config.label_smoothing), aux)
        labels = to_device(torch.from_numpy(run.data.labels[index]), device)
        loss = bank_cross_entropy(
            reps, self.bank, labels, label_smoothing=config.label_smoothing, mean_row=self.bank_mean
        )
        return loss if aux is None else loss + aux

    def describe(self, run: ObjectiveRun) -> str:
        config = run.config
        against = "vocabulary tokens" if config.objective == "defsent" else "entries"
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
            "pooling": config.inference_pooling or config.pooling,
            "train_pooling": config.pooling,
            "head": self.head.mode_description,
            "pooler_mode": config.pooler,
            "objective": config.objective,
            "dictionary": str(run.dictionary.resolve()),
            **self._target_info(run),
            "training_definitions": defs,
            "training_entries": run.data.n_entries_trained,
            "definitions_per_second": round(
                min(run.step * config.batch_size, defs * config.epochs) / max(run.elapsed, 1e-9), 2
            ),
            **run._dev_info(),
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


def pst_step(dictionary: Path, bank: Path | None, base_model: Path, config: TrainConfig) -> ObjectiveRun:
    """The run of one PST step, set up and ready to :meth:`~loop.Loop.run` (benchmarks and tests drive it by hand;
    ``run.train`` writes its checkpoint)."""
    return ObjectiveRun(Definitions(bank), dictionary, base_model, config)
