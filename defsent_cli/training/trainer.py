"""One PST step (DefSent+ ``TrainEncoder.py``), readable top to bottom.

A fresh copy of the base model learns to map each training definition onto its
entry's row of a frozen bank:  loss = CE(head(pool(encoder(definition))) . bank^T).

Faithful to the reference: AdamW (eps 1e-6, weight decay 0), linear decay to 0
with no warm-up, gradient clipping 1.0, batch 32, one epoch, fp32 (``--precision auto`` is bf16 mixed
precision on a bf16 GPU, fp32 elsewhere), the pooler
dense head (``encoder/head.py``).  Ours on top: a seed for data order, dropout
and init; length-bucketed batches (the reference pads every definition to 141
tokens); a loss that never holds more than one batch x entries matrix; a
JSONL loss log; resumable state every ``save_every`` steps (``state.py``).

The loop, its state and the torchrun weighting are ``loop.py``'s (:class:`loop.Loop`); here is what is
DefSent+'s (and DefSent's word prediction): the bank, the head, the data and the loss.
"""

from __future__ import annotations

import random
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch

from .. import distributed
from ..encoder.encode import model_mask
from ..encoder.head import PoolerHead, setup_pooler
from ..encoder.models import load_model
from ..encoder.pooling import PoolingInput, get_pooling
from ..encoder.tokenize import has_padding, pad_batch, to_device
from ..encoder.tokenize import pad_id as padding_id
from ..encoder.word_head import WORD_HEAD_FILE, load_word_head, save_word_head
from ..errors import DefsentError, count
from ..evaluation.criteria import Criterion
from ..formats.bank import check_bank_matches, open_bank
from ..formats.dictionary import check_dictionary
from .config import TrainConfig
from .data import training_data, word_training_data
from .dev_eval import DevTracker
from .loop import Loop, StepLoss, linear_factor, linear_schedule  # noqa: F401 (linear_*: re-exported)
from .loss import bank_cross_entropy
from .mlm import MaskedLM
from .sharded_loss import BankShard, wants_sharding


class TrainForward(torch.nn.Module):
    """definition -> encoder -> pooling -> head: everything that trains, as one module (what DDP wraps).

    The head's dense layer is the model's own pooler dense, so its parameters
    appear once (``parameters()`` de-duplicates) and DDP averages their gradients too.
    """

    def __init__(self, model: torch.nn.Module, head: PoolerHead, pool):
        super().__init__()
        self.model, self.head, self.pool = model, head, pool

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        head_only: bool = False,
        masked_ids: torch.Tensor | None = None,
        padded: bool = True,
        masked_mask: torch.Tensor | None = None,
    ):
        """The head's output; with ``masked_ids`` also the token states of a second pass on them (--mlm-weight).

        ``padded``: whether the batch has padding, known on the host (no mask at all when it has none);
        ``masked_mask``: the masked pass's attention mask when its sentences are not the batch's (simcse nm)."""
        mask = model_mask(self.model, attention_mask, padded)
        with torch.no_grad() if head_only else nullcontext():  # head warm-up: the encoder is a fixed feature map
            states = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
            pooled = self.pool(PoolingInput(states, attention_mask, input_ids))
        reps = self.head(pooled)
        if masked_ids is None:
            return reps
        if masked_mask is not None:
            mask = model_mask(self.model, masked_mask, True)
        return reps, self.model(input_ids=masked_ids, attention_mask=mask).last_hidden_state


class Trainer(Loop):
    """The model, head, bank, optimiser and data order of one run, and its loop."""

    shard: BankShard | None = None  # train --shard-bank: this process's rows of the bank (else self.bank is all)

    def __init__(self, dictionary: Path, bank_path: Path | None, base_model: Path, config: TrainConfig):
        self.config = config.validate()
        self.dictionary, self.base_model = check_dictionary(dictionary), Path(base_model)
        self.bank_path = Path(bank_path) if bank_path is not None else None
        word_objective = config.objective == "defsent"
        bank = None
        if not word_objective:
            if self.bank_path is None:
                raise DefsentError("--objective defsent-plus trains against an entry bank: pass --bank BANK.h5")
            bank = open_bank(self.bank_path)  # its rows are read below: all of them, or this process's shard
            check_bank_matches(bank, dictionary)
        self.rank, self.world = distributed.rank(), distributed.world()
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        self.loaded = load_model(base_model, distributed.local_device(config.device))
        self.device, self.model = self.loaded.device, self.loaded.model
        self.pool = get_pooling(config.pooling)
        self.max_length = self.loaded.token_limit(config.max_length)
        # the frozen word-prediction layer: the objective of DefSent, or the head of the auxiliary MLM loss
        self.word_head = load_word_head(self.loaded, config.word_head) if word_objective or config.mlm_weight else None
        if word_objective:
            # DefSent: logits = word_head(pool(h)) over the vocabulary; the vocabulary is the bank, the token the label
            self.head = self.word_head.transform
            vectors = self.word_head.matrix
            self.data = word_training_data(self.dictionary, self.loaded.tokenizer, self.pool, self.max_length, config)
            self.bank_attrs, self.n_bank = {}, int(vectors.shape[0])
        else:
            if bank.dim != self.loaded.dim:
                raise DefsentError(
                    f"bank has {bank.dim} dims but the model {base_model} has {self.loaded.dim}", path=self.bank_path
                )
            self.bank_attrs, self.n_bank = bank.attrs, len(bank)
            cosine = config.logits == "cosine"  # cos(rep, row) = unit(rep) . unit(row): the bank is normalised once
            vectors = None
            if wants_sharding(config.shard_bank, len(bank), bank.dim, config.bank_dtype):
                self.shard = BankShard.read(bank, config.bank_dtype, self.device, cosine, config.label_smoothing)
            else:
                vectors = torch.from_numpy(bank.rows(dtype=config.bank_dtype))
                if cosine:
                    vectors = torch.nn.functional.normalize(vectors, dim=1)
            self.head = setup_pooler(
                self.model,
                config.pooler,
                self.loaded.transformer_dir,
                self.loaded.missing_keys,
                warn=distributed.is_main(),
            )
            self.data = training_data(
                self.dictionary, bank.splits, self.loaded.tokenizer, self.pool, self.max_length, config
            )
        # float16 halves the bank's memory (all of it, or the shard, in every process); the loss math stays float32.
        if self.shard is not None:
            self.bank, self.bank_mean = self.shard.rows, None
        else:
            self.bank = vectors.to(self.device, getattr(torch, config.bank_dtype))
            smoothing = config.label_smoothing
            self.bank_mean = vectors.double().mean(dim=0).float().to(self.device) if smoothing else None
        del bank, vectors
        if config.embeddings_frozen:  # DefSent: freeze_token_embeddings (the whole embedding layer)
            embeddings = getattr(self.model, "embeddings", None) or self.model.get_input_embeddings()
            embeddings.requires_grad_(False)
        self.mlm = (
            MaskedLM(self.loaded.tokenizer, self.word_head, config.mlm_probability) if config.mlm_weight else None
        )
        self.net: torch.nn.Module = TrainForward(self.model, self.head, self.pool)  # DDP-wrapped by distribute()
        self._start(self._optimizer())
        if self.world > 1:
            # Each process its own dropout stream (same init everywhere; DDP also broadcasts rank 0's weights).
            torch.manual_seed(config.seed + 1_000_003 * self.rank)

    def _optimizer(self) -> torch.optim.Optimizer:
        head_params = [p for p in self.head.parameters() if p.requires_grad]  # a word head is frozen
        head_ids = {id(p) for p in self.head.parameters()}
        params = [p for p in self.model.parameters() if p.requires_grad and id(p) not in head_ids]
        groups = [{"params": params}]
        if head_params:
            groups.append({"params": head_params, "lr": self.config.head_lr or self.config.lr})
        # torch's AdamW defaults differ from transformers.AdamW (eps 1e-8, weight decay 0.01): set both.
        # The fused kernel is the same AdamW update in one pass over memory: ~6x faster than the
        # default multi-tensor one on CPU (22M params: 48 ms vs 284 ms a step, bench/train.py).
        config = self.config
        return torch.optim.AdamW(
            groups, lr=config.lr, eps=config.adam_eps, weight_decay=config.weight_decay, fused=True
        )

    def track_dev(self, criterion: Criterion) -> None:
        """Score the model on ``criterion`` every ``eval_every`` steps (rank 0) and keep the best if asked."""
        if self.config.eval_every:
            pooling = self.config.inference_pooling or self.config.pooling
            # the model in training is a defsent checkpoint in the making: dict-dev reads it with its head
            self.loaded.source = "defsent"
            self.loaded.info = {"train_pooling": self.config.pooling, "head": self.head.mode_description}
            self.dev = DevTracker(criterion.prepare(), pooling, self.config.kept)

    def loss_on(self, index: np.ndarray) -> torch.Tensor | StepLoss:
        """logits = scale * rep . bank^T (dot) or scale * cos(rep, row) (cosine); cross-entropy on the entry's row
        (objective defsent: the word head's vocabulary logits, cross-entropy on the entry's token); + λ · MLM.

        With the bank sharded (``--shard-bank``) the cross-entropy is over the whole global batch
        (``self.global_batch``), from this process's rows of the bank: a :class:`StepLoss` then."""
        config = self.config
        pad_id = padding_id(self.loaded.tokenizer)
        device = self.device
        input_ids, attention_mask = pad_batch([self.data.token_ids[i] for i in index], pad_id)
        padded = has_padding(attention_mask)
        head_only = self.step < config.head_warmup_steps
        masked_ids = mlm_targets = None
        mlm = self.mlm if not head_only else None  # a head warm-up trains the head alone: no MLM pass
        if mlm is not None:  # the auxiliary MLM loss: a second pass on a masked copy of the batch
            masked_ids, mlm_labels = mlm.mask(input_ids, attention_mask)
            masked_ids, mlm_targets = to_device(masked_ids, device), mlm.targets(mlm_labels, device)
        out = self.net(
            to_device(input_ids, device),
            to_device(attention_mask, device),
            head_only=head_only,
            masked_ids=masked_ids,
            padded=padded,
        )
        reps, masked_states = out if mlm is not None else (out, None)
        if config.logits == "cosine":
            reps = torch.nn.functional.normalize(reps, dim=1)
        if config.logit_scale != 1.0:
            reps = reps * config.logit_scale
        mlm_loss = config.mlm_weight * mlm.loss(masked_states, mlm_targets) if mlm is not None else None
        if self.shard is not None:
            labels = to_device(torch.from_numpy(self.data.labels[self.global_batch]), device)
            whole = self.shard.loss(reps, labels, self.sizes, config.label_smoothing)
            return StepLoss(whole, mlm_loss)
        labels = to_device(torch.from_numpy(self.data.labels[index]), device)
        loss = bank_cross_entropy(
            reps, self.bank, labels, label_smoothing=config.label_smoothing, mean_row=self.bank_mean
        )
        return loss if mlm_loss is None else loss + mlm_loss

    def describe(self) -> str:
        """The run in one line, for the start-of-training note."""
        config = self.config
        against = "vocabulary tokens" if config.objective == "defsent" else "entries"
        return (
            f"training {self.base_model} on {count(len(self.data), 'definition')} against {self.n_bank:,} {against} "
            f"({config.pooling} pooling, head {self.head.mode_description}, lr {config.lr:g}, "
            f"batch {config.batch_size}, {count(self.total_steps, 'step')}, seed {config.seed}"
            + (f", bank sharded: 1/{self.world} of its rows in each process" if self.shard is not None else "")
        )

    def checkpoint_files(self, work_dir: Path) -> dict[str, Path]:
        """Files the checkpoint folder gets beside the model: the loss log, and a word head to rank words with."""
        files = {"train_log.jsonl": work_dir / "log.jsonl"}
        if self.config.objective == "defsent":  # eval-dict / lookup rank the vocabulary with it
            save_word_head(work_dir / WORD_HEAD_FILE, self.word_head)
            files[WORD_HEAD_FILE] = work_dir / WORD_HEAD_FILE
        return files

    def info(self) -> dict:
        """What ``defsent.json`` records about this run."""
        config = self.config
        defs = len(self.data)
        return {
            **self.run_info(),
            "kind": "train",
            "pooling": config.inference_pooling or config.pooling,
            "train_pooling": config.pooling,
            "head": self.head.mode_description,
            "pooler_mode": config.pooler,
            "objective": config.objective,
            "dictionary": str(self.dictionary.resolve()),
            **self._target_info(),
            "training_definitions": defs,
            "training_entries": self.data.n_entries_trained,
            "definitions_per_second": round(
                min(self.step * config.batch_size, defs * config.epochs) / max(self.elapsed, 1e-9), 2
            ),
            **self._dev_info(),
        }

    def _target_info(self) -> dict:
        """What the logits were computed against: the entry bank, or the vocabulary of the word head."""
        if self.config.objective == "defsent":
            return {
                "word_head": self.word_head.kind,
                "vocabulary": self.n_bank,
                "multi_token_entries_skipped": self.data.skipped_entries,
            }
        return {
            "bank": str(self.bank_path.resolve()),
            "bank_sha256": self.inputs()["--bank"]["sha256"],  # hashed once for the resumable state and this
            "bank_attrs": dict(self.bank_attrs),
            "bank_entries": self.n_bank,
            "bank_sharded": self.shard is not None,  # --shard-bank: each process held 1/processes of the rows
        }
