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

Under ``torchrun`` (``distributed.py``) the same run is shared by N processes
with PyTorch's DistributedDataParallel: every process forms the same global
batches, computes the loss of its contiguous slice, DDP averages the gradients,
and only rank 0 logs and writes; the weights match a one-process run with the
same ``--batch-size`` up to float noise (see :meth:`Trainer.train_step`).
"""

from __future__ import annotations

import json
import math
import random
import time
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from .. import __version__, distributed
from ..console import make_progress
from ..encoder.encode import model_mask
from ..encoder.head import PoolerHead, setup_pooler
from ..encoder.models import load_model
from ..encoder.pooling import PoolingInput, get_pooling
from ..encoder.precision import autocast, deterministic, grad_scaler, resolve_train_precision, tf32
from ..encoder.tokenize import has_padding, pad_batch, to_device
from ..encoder.tokenize import pad_id as padding_id
from ..encoder.word_head import WORD_HEAD_FILE, load_word_head, save_word_head
from ..errors import DefsentError, count
from ..evaluation.criteria import Criterion
from ..formats.bank import check_bank_matches, open_bank
from ..formats.checkpoint import CHECKPOINT_FORMAT
from ..formats.dictionary import check_dictionary
from ..log import warn
from .config import EVAL_EACH_EPOCH, TrainConfig
from .data import Schedule, training_data, word_training_data
from .dev_eval import DevTracker
from .loss import bank_cross_entropy
from .mlm import MaskedLM
from .sharded_loss import BankShard, wants_sharding
from .state import STATE_FILE, save_state


def linear_factor(warmup: int, total: int, start: int = 0, decay: bool = True):
    """Linear warm-up to the peak rate, then linear decay to 0 at ``total`` (transformers' linear schedule)
    or, without ``decay``, the peak rate to the end (DefSent's ``LRPolycy``); 0 before ``start`` (the
    encoder during a head warm-up), the schedule counted from there."""

    def factor(step: int) -> float:
        if step < start:
            return 0.0
        step, span = step - start, total - start
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (span - step) / max(1, span - warmup)) if decay else 1.0

    return factor


def linear_schedule(
    optimizer: torch.optim.Optimizer, warmup: int, total: int, encoder_start: int = 0, decay: bool = True
) -> torch.optim.lr_scheduler.LambdaLR:
    """The schedule for every parameter group; the first group (the encoder) starts at ``encoder_start``."""
    factors = [linear_factor(warmup, total, decay=decay)] * len(optimizer.param_groups)
    if encoder_start:
        factors[0] = linear_factor(
            round(warmup * (total - encoder_start) / max(1, total)), total, encoder_start, decay=decay
        )
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factors)


class StepLoss(NamedTuple):
    """A step's loss in two parts that torchrun weights differently (:meth:`Trainer.train_step`): ``whole``, a
    mean over the WHOLE global batch, the same value in every process (the sharded bank's cross-entropy), and
    ``local``, a mean over this process's share of it (an auxiliary MLM loss), or None."""

    whole: torch.Tensor
    local: torch.Tensor | None = None


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


class Trainer:
    """The model, head, bank, optimiser and data order of one run, and its loop."""

    shard: BankShard | None = None  # train --shard-bank: this process's rows of the bank (else self.bank is all)
    #: whether the checkpoint is a sentence-transformers bi-encoder folder (a Cross-Encoder teacher is not)
    sentence_transformer = True

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

    def _start(self, optimizer: torch.optim.Optimizer) -> None:
        """What every run starts from, train's and tsdae's: data order, optimiser, LR schedule, empty counters,
        the precision (and fp16's gradient scaler)."""
        config = self.config
        self.schedule = Schedule(self.data, config)
        self.total_steps = self.schedule.total_steps()
        self.optimizer = optimizer
        self.scheduler = linear_schedule(
            optimizer,
            round(config.warmup_ratio * self.total_steps),
            self.total_steps,
            encoder_start=min(config.head_warmup_steps, self.total_steps),
            decay=config.schedule == "linear",
        )
        if distributed.is_main():
            self._warn_idle_schedule()
        self.step, self.log, self.elapsed = 0, [], 0.0
        self.global_batch: np.ndarray | None = None  # the current step's global batch (train_step)
        self.sizes: list[int] | None = None  # every process's share of it (torchrun), for the gathers
        self.precision = resolve_train_precision(config.precision, self.device)  # auto: bf16 on a bf16 GPU
        self.scaler = grad_scaler(self.precision, self.device)  # fp16 only
        self.dev: DevTracker | None = None  # set by track_dev()

    def _warn_idle_schedule(self) -> None:
        """Say so when the schedule gives the encoder learning rate 0 at every step of the run: the linear warm-up
        starts at 0 (transformers' schedule), so a run of one step with a warm-up of one (``--max-steps 1
        --warmup-ratio 0.6``), or a head warm-up as long as the run, trains the encoder not at all."""
        total, config = self.total_steps, self.config
        factor = self.scheduler.lr_lambdas[0]
        start = min(config.head_warmup_steps, total)
        if total > start + 1 or any(factor(step) > 0 for step in range(total)):
            return  # from step start + 1 on the rate is above 0: something trains
        if start >= total:
            why = f"--head-warmup-steps {config.head_warmup_steps} covers all {count(total, 'step')}"
        else:
            why = (
                f"the warm-up ({count(round(config.warmup_ratio * total), 'step')} of {count(total, 'step')}, "
                "--warmup-ratio) starts at learning rate 0"
            )
        warn(
            f"the encoder trains at learning rate 0 at every step: {why}, so it comes out as it went in; raise "
            "--max-steps (or --epochs), or lower the warm-up"
        )

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

    @property
    def eval_interval(self) -> int:
        """Steps between dev evaluations: ``eval_every``, or one epoch's steps for ``eval_every="epoch"``."""
        every = self.config.eval_every
        return self.schedule.per_epoch if every == EVAL_EACH_EPOCH else every

    def track_dev(self, criterion: Criterion) -> None:
        """Score the model on ``criterion`` every ``eval_every`` steps (rank 0) and keep the best if asked."""
        if self.config.eval_every:
            pooling = self.config.inference_pooling or self.config.pooling
            # the model in training is a defsent checkpoint in the making: dict-dev reads it with its head
            self.loaded.source = "defsent"
            self.loaded.info = {"train_pooling": self.config.pooling, "head": self.head.mode_description}
            self.dev = DevTracker(criterion.prepare(), pooling, self.config.kept)

    def distribute(self) -> None:
        """Under torchrun: open the process group and wrap the trainable module in DDP (no-op in one process)."""
        if self.world == 1 or isinstance(self.net, torch.nn.parallel.DistributedDataParallel):
            return
        distributed.init(self.device)
        # --pooler none leaves a trainable pooler out of the loss, and a head warm-up the encoder: DDP must not
        # wait for their gradients. Where every trainable parameter is used (a frozen or absent pooler), it need
        # not walk the graph after every forward pass looking for unused ones (nor warn that it found none).
        pooler = getattr(self.model, "pooler", None)
        idle_pooler = getattr(self.head, "dense", None) is None and any(
            p.requires_grad for p in (pooler.parameters() if pooler is not None else ())
        )
        self.net = torch.nn.parallel.DistributedDataParallel(
            self.net,
            device_ids=[self.device] if self.device.type == "cuda" else None,
            find_unused_parameters=idle_pooler or self.config.head_warmup_steps > 0,
        )

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

    def train_mode(self) -> None:
        """Dropout on for what trains."""
        self.model.train()

    def clipped(self):
        """The parameters whose gradient norm is clipped."""
        return self.model.parameters()

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

    def train_step(self, index: np.ndarray) -> torch.Tensor:
        """One optimiser step on the global batch ``index``; returns its mean loss as a device scalar
        (this process's share of it under DDP), read by the loop only when it logs: no host sync per step.

        Under DDP each of the W processes takes a contiguous slice of n_r of the
        N items.  DDP's backward AVERAGES gradients over processes, so scaling the
        local mean loss by W * n_r / N gives
            (1/W) * sum_r W * (n_r/N) * grad(mean_r) = grad((1/N) * sum_i loss_i),
        the gradient of the one-process mean over the whole global batch: same
        batch size, same learning rate, same clipping (applied after the
        all-reduce, on identical gradients in every process), same weights.

        A loss over the WHOLE global batch (:class:`StepLoss`'s ``whole``: the sharded bank's, the same value in
        every process, whose backward gives each process only its part of the gradient, see sharded_loss.py) is
        scaled by W instead: its parts, summed onto each row's process by the all-gather's backward, give
        process r the terms of grad(whole) its rows carry, so (1/W) * sum_r W * those = grad(whole).

        Mixed precision (``--precision bf16|fp16``): the forward pass under autocast, the weights and
        optimizer in float32; fp16 scales the loss (GradScaler) and unscales before clipping.
        """
        self.train_mode()
        self.global_batch = index
        self.sizes = distributed.shard_sizes(len(index)) if self.world > 1 else None  # every process's share
        weight = 1.0
        if self.world > 1:
            local = distributed.shard(index)
            weight = len(local) / len(index)
            if len(local) == 0:  # a global batch smaller than the world: join the all-reduce with zero gradient
                local = index[:1]
            index = local
        with tf32(self.precision == "tf32"):  # the forward's matrix products and the backward's alike
            with autocast(self.precision, self.device):
                loss = self.loss_on(index)
            whole, local = (None, loss) if isinstance(loss, torch.Tensor) else loss
            scaled = reported = torch.zeros((), device=self.device)
            if local is not None:
                scaled = local * (weight * self.world) if self.world > 1 else local
                reported = local.detach().float() * weight
            if whole is not None:
                scaled, reported = scaled + whole * self.world, reported + whole.detach().float() / self.world
            (self.scaler.scale(scaled) if self.scaler is not None else scaled).backward()
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)  # clip the true gradients
        if self.config.max_grad_norm:  # 0: no clipping (DefSent)
            torch.nn.utils.clip_grad_norm_(self.clipped(), self.config.max_grad_norm)
        if self.scaler is not None:  # the fused AdamW skips a step with inf/nan gradients on the device itself
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return reported

    def mean_loss(self, losses: list[torch.Tensor]) -> float:
        """The mean of the steps' losses, summed over the processes: the loop's one wait for the device."""
        total = float(torch.stack(losses).sum()) if losses else 0.0
        return distributed.all_reduce_sum(total) / max(1, len(losses))

    # --- what the resumable state carries beyond weights, optimiser and log (see state.py) ---------

    #: how the command line names the data file this run reads (``self.dictionary``), for resume's messages
    data_argument = "DICTIONARY"

    def settings(self) -> dict:
        """What this kind of run adds to :class:`TrainConfig` (recorded, and required equal on --resume)."""
        return {}

    def inputs(self) -> dict[str, dict]:
        """The files this run reads, by the names the command line gives them, each as a resume recognises it
        (``state.input_record``: its path and SHA-256; the base model by its configuration and tokenizer files):
        computed once, saved with every state and compared on --resume (``state.check_resume``)."""
        if getattr(self, "_inputs", None) is None:
            from .state import input_record, model_record

            found = {self.data_argument: input_record(self.dictionary)}
            if self.bank_path is not None:
                found["--bank"] = input_record(self.bank_path)
            found["--model"] = model_record(self.loaded.transformer_dir or self.base_model, self.base_model)
            self._inputs = found
        return self._inputs

    def extra_state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        return self.dev.state() if self.dev is not None else ({}, {})

    def restore_extra_state(self, extra: dict, tensors: dict[str, torch.Tensor]) -> None:
        if self.dev is not None:
            self.dev.restore(extra, tensors)

    # --- the loop ----------------------------------------------------------------------------------

    def run(self, work_dir: Path, show_progress: bool | None = None) -> None:
        """Train from ``self.step`` to ``total_steps``, logging and saving resumable state in ``work_dir``.

        Under torchrun every process runs this loop; only rank 0 shows progress and writes the log and state.
        With ``--deterministic`` the loop runs on torch's deterministic algorithms.
        """
        with deterministic(self.config.deterministic):
            self._loop(work_dir, show_progress)

    def _loop(self, work_dir: Path, show_progress: bool | None) -> None:
        config, main = self.config, distributed.is_main()
        n_defs = sum(len(self.schedule.batch(s)) for s in range(self.step, self.total_steps))
        window: list[torch.Tensor] = []  # the steps' losses since the last log row, still on the device
        extra = "loss {task.fields[loss]} lr {task.fields[lr]:.1e}"
        if self.dev is not None:
            extra += " " + config.eval_on + " {task.fields[dev]} best {task.fields[best]}"
        with (
            make_progress("defs", show_progress if main else False, extra=extra) as progress,
            open(work_dir / "log.jsonl", "a", encoding="utf-8") if main else nullcontext() as log,
        ):
            task = progress.add_task("training", total=n_defs, loss="-", lr=config.lr, dev="-", best="-")

            def evaluate() -> None:  # rank 0 scores, the others wait for it (dict-dev under torchrun: all score)
                if self.dev is not None and (main or self.dev.criterion.every_process):
                    row = self.dev.evaluate(self.loaded, self.step)
                if self.dev is not None and main:
                    log.write(json.dumps({"step": self.step, "eval": {config.eval_on: row["score"]}}) + "\n")
                    log.flush()
                    best = self.dev.best["score"] if self.dev.best else None
                    progress.update(task, dev=f"{row['score']:.2f}", best="-" if best is None else f"{best:.2f}")
                distributed.barrier()

            if self.step == 0:
                evaluate()  # the untrained model: step 0 of the curve

            def checked() -> float:  # the mean loss of the window; a non-finite one stops the run before any save
                loss = self.mean_loss(window)
                if not math.isfinite(loss):
                    first = self.step - len(window) + 1
                    raise DefsentError(f"loss became {loss} between steps {first} and {self.step}; lower --lr")
                return loss

            started = time.perf_counter() - self.elapsed
            while self.step < self.total_steps:
                index = self.schedule.batch(self.step)
                lr = self.scheduler.get_last_lr()[0]
                window.append(self.train_step(index))
                self.step += 1
                progress.update(task, advance=len(index), lr=lr)
                evaluating = self.dev is not None and (
                    self.step % self.eval_interval == 0 or self.step == self.total_steps
                )
                saving = bool(config.save_every) and self.step % config.save_every == 0 and self.step < self.total_steps
                if self.step % config.log_every == 0 or self.step == self.total_steps:
                    loss = checked()
                    self.elapsed = time.perf_counter() - started
                    progress.update(task, loss=f"{loss:.3f}")
                    row = {
                        "step": self.step,
                        "definitions": min(self.step * config.batch_size, len(self.data) * config.epochs),
                        "loss": round(loss, 6),
                        "lr": lr,
                        "elapsed": round(self.elapsed, 2),
                    }
                    window = []
                    self.log.append(row)
                    if main:
                        log.write(json.dumps(row) + "\n")
                        log.flush()
                elif (evaluating or saving) and window:
                    checked()
                if evaluating:
                    evaluate()
                if saving:
                    self.elapsed = time.perf_counter() - started
                    save_state(work_dir / STATE_FILE, self)
            self.elapsed = time.perf_counter() - started
        if self.dev is not None:
            self.dev.restore_best(self.model)

    def run_info(self) -> dict:
        """What every kind of run records in ``defsent.json`` (train, tsdae, simcse): the versions, base, settings,
        the run's size and its loss curve."""
        return {
            "format": CHECKPOINT_FORMAT,
            "defsent_version": __version__,
            "base_model": str(self.base_model.resolve()),
            "normalize": self.loaded.normalize,  # the base folder's Normalize module, kept by the checkpoint
            "config": asdict(self.config),
            "processes": self.world,
            "precision": self.precision,
            "steps": self.step,
            "max_length": self.max_length,
            "seconds": round(self.elapsed, 1),
            "final_loss": self.log[-1]["loss"] if self.log else None,
            "loss_curve": [[row["step"], row["loss"]] for row in self.log],
        }

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

    def _dev_info(self) -> dict:
        """The dev curve, which checkpoint was kept, and its score (for defsent.json and the model card)."""
        if self.dev is None:
            return {"kept_step": self.step}
        name, best = self.config.eval_on, self.dev.best
        kept = best if self.config.kept == "best" and best else self.dev.curve[-1]
        scores = {f"{name} ({self.dev.criterion.meaning}), step {kept['step']}": kept["score"]}
        if self.dev.curve and self.dev.curve[0]["step"] == 0:
            scores[f"{name} of the untrained base model (step 0)"] = self.dev.curve[0]["score"]
        return {
            "eval_on": name,
            "eval_curve": [[row["step"], row["score"]] for row in self.dev.curve],
            "eval_seconds": round(sum(row["seconds"] for row in self.dev.curve), 1),
            "kept_step": kept["step"],
            "scores": scores,
        }
