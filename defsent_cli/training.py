"""One PST step (DefSent+ ``TrainEncoder.py``), readable top to bottom.

A fresh copy of the base model learns to map each training definition onto its
entry's row of a frozen bank:  loss = CE(head(pool(encoder(definition))) . bank^T).

Faithful to the reference: AdamW (eps 1e-6, weight decay 0), linear decay to 0
with no warm-up, gradient clipping 1.0, batch 32, one epoch, fp32, the pooler
dense head (see ``pooler.py``).  Ours on top: a seed for data order, dropout
and init; length-bucketed batches (the reference pads every definition to 141
tokens); a loss that never holds more than one batch x entries matrix; a
JSONL loss log; resumable state every ``save_every`` steps.

Under ``torchrun`` (see ``distributed.py``) the same run is shared by N
processes with PyTorch's DistributedDataParallel: every process forms the same
global batches, computes the loss of its contiguous slice, DDP averages the
gradients, and only rank 0 logs and writes; the weights match a one-process run
with the same ``--batch-size`` up to float noise (see :meth:`Trainer.train_step`).
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import __version__, distributed
from .bank import check_bank_matches, iter_dictionary, read_bank
from .checkpoint import save_checkpoint
from .console import err_console, make_progress
from .encoding import pad_batch, tokenize
from .errors import DefsentError
from .loss import bank_cross_entropy
from .models import load_model
from .pooler import PoolerHead, setup_pooler
from .pooling import PoolingInput, get_pooling

TRAIN_POOLINGS = ("cls", "mean")
BATCHINGS = ("bucket", "random")
BANK_DTYPES = {"float32": torch.float32, "float16": torch.float16}


@dataclass
class TrainConfig:
    """Every setting of a training run (all recorded in ``defsent.json``)."""

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
    seed: int = 1
    max_length: int | None = None
    max_steps: int | None = None
    limit: int | None = None
    batching: str = "bucket"  # bucket | random
    bucket_batches: int = 50  # batches per length bucket
    save_every: int = 500
    log_every: int = 20
    device: str = "auto"
    bank_dtype: str = "float32"  # float32 | float16: how the frozen bank is held in memory

    def validate(self) -> None:
        if self.pooling not in TRAIN_POOLINGS:
            raise DefsentError(f"training pooling must be cls or mean, not {self.pooling!r}")
        if self.batching not in BATCHINGS:
            raise DefsentError(f"--batching must be bucket or random, not {self.batching!r}")
        for name in ("lr", "adam_eps", "head_lr"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise DefsentError(f"--{name.replace('_', '-')} must be positive")
        if not 0 <= self.warmup_ratio < 1:
            raise DefsentError("--warmup-ratio must be in [0, 1)")
        if self.batch_size < 1 or self.epochs < 1:
            raise DefsentError("--batch-size and --epochs must be at least 1")
        if self.bank_dtype not in BANK_DTYPES:
            raise DefsentError(f"--bank-dtype must be float32 or float16, not {self.bank_dtype!r}")


@dataclass
class TrainingData:
    """Token ids of every training definition and the bank row of its entry."""

    token_ids: list[list[int]]
    labels: np.ndarray
    n_entries_trained: int = 0
    texts: list[str] = field(default_factory=list, repr=False)


def training_pairs(dictionary: Path, bank_splits: set[str]) -> tuple[list[str], list[int], int]:
    """(definitions, bank rows, distinct entries) of the dictionary's ``train`` split.

    The bank row of an entry is its position among the entries of the bank's splits.
    """
    texts: list[str] = []
    rows: list[int] = []
    row, entries = 0, 0
    for _, _, definitions, split in iter_dictionary(dictionary):
        if split not in bank_splits:
            if split == "train":
                raise DefsentError("the bank does not hold the train split's entries; rebuild it", path=dictionary)
            continue
        if split == "train":
            texts.extend(definitions)
            rows.extend([row] * len(definitions))
            entries += 1
        row += 1
    if not texts:
        raise DefsentError("the dictionary has no train-split definitions", path=dictionary)
    return texts, rows, entries


def epoch_batches(lengths: np.ndarray, config: TrainConfig, epoch: int) -> list[np.ndarray]:
    """The batches of one epoch, a pure function of (seed, epoch, lengths).

    ``bucket``: shuffle, cut into buckets of ``bucket_batches`` batches, sort each
    bucket by length, cut into batches, shuffle the batches: random order, little padding.
    ``random``: plain shuffled batches (the reference's RandomSampler).
    """
    rng = np.random.default_rng([config.seed, epoch])
    order = rng.permutation(len(lengths))
    size = config.batch_size
    if config.batching == "random":
        return [order[i : i + size] for i in range(0, len(order), size)]
    batches: list[np.ndarray] = []
    span = size * config.bucket_batches
    for start in range(0, len(order), span):
        bucket = order[start : start + span]
        bucket = bucket[np.argsort(lengths[bucket], kind="stable")]
        batches.extend(bucket[i : i + size] for i in range(0, len(bucket), size))
    rng.shuffle(batches)
    return batches


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up to the peak rate, then linear decay to 0 at ``total`` (transformers' linear schedule)."""

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class TrainForward(torch.nn.Module):
    """definition -> encoder -> pooling -> head: everything that trains, as one module (what DDP wraps).

    The head's dense layer is the model's own pooler dense, so its parameters
    appear once (``parameters()`` de-duplicates) and DDP averages their gradients too.
    """

    def __init__(self, model: torch.nn.Module, head: PoolerHead, pool):
        super().__init__()
        self.model, self.head, self.pool = model, head, pool

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        states = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.head(self.pool(PoolingInput(states, attention_mask, input_ids)))


class Trainer:
    """Holds the model, head, bank, optimiser and data order of one run."""

    def __init__(self, dictionary: Path, bank_path: Path, base_model: Path, config: TrainConfig):
        config.validate()
        self.config, self.dictionary, self.bank_path, self.base_model = (
            config,
            Path(dictionary),
            Path(bank_path),
            Path(base_model),
        )
        bank = read_bank(bank_path, dtype=np.dtype(config.bank_dtype))
        check_bank_matches(bank, dictionary, bank_path)
        self.bank_attrs = bank.attrs
        self.n_bank = len(bank)
        self.rank, self.world = distributed.rank(), distributed.world()
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        self.loaded = load_model(base_model, distributed.local_device(config.device))
        if bank.vectors.shape[1] != self.loaded.dim:
            raise DefsentError(
                f"bank has {bank.vectors.shape[1]} dims but the model has {self.loaded.dim}", path=bank_path
            )
        self.device = self.loaded.device
        # float16 halves the bank's memory (it is replicated in every process); the loss math stays float32.
        self.bank = torch.from_numpy(bank.vectors).to(self.device, BANK_DTYPES[config.bank_dtype])
        del bank
        self.model = self.loaded.model
        self.head: PoolerHead = setup_pooler(
            self.model, config.pooler, self.loaded.transformer_dir, self.loaded.missing_keys, warn=distributed.is_main()
        )
        self.pool = get_pooling(config.pooling)
        self.net: torch.nn.Module = TrainForward(self.model, self.head, self.pool)  # DDP-wrapped by distribute()
        self.max_length = config.max_length or self.loaded.max_length
        self.data = self._tokenize()
        self.batches_per_epoch = math.ceil(len(self.data.labels) / config.batch_size)
        total = self.batches_per_epoch * config.epochs
        self.total_steps = min(total, config.max_steps) if config.max_steps else total
        head_params = list(self.head.parameters())
        head_ids = {id(p) for p in head_params}
        params = [p for p in self.model.parameters() if p.requires_grad and id(p) not in head_ids]
        groups = [{"params": params}]
        if head_params:
            groups.append({"params": head_params, "lr": config.head_lr or config.lr})
        # torch's AdamW defaults differ from transformers.AdamW (eps 1e-8, weight decay 0.01): set both.
        # The fused kernel is the same AdamW update in one pass over memory: ~6x faster than the
        # default multi-tensor one on CPU (22M params: 48 ms vs 284 ms a step, bench/train.py).
        self.optimizer = torch.optim.AdamW(
            groups, lr=config.lr, eps=config.adam_eps, weight_decay=config.weight_decay, fused=True
        )
        self.scheduler = linear_schedule(
            self.optimizer, round(config.warmup_ratio * self.total_steps), self.total_steps
        )
        self.step = 0
        self.log: list[dict] = []
        self.elapsed = 0.0
        if self.world > 1:
            # Each process its own dropout stream (same init everywhere; DDP also broadcasts rank 0's weights).
            torch.manual_seed(config.seed + 1_000_003 * self.rank)

    def distribute(self) -> None:
        """Under torchrun: open the process group and wrap the trainable module in DDP (no-op in one process)."""
        if self.world == 1 or isinstance(self.net, torch.nn.parallel.DistributedDataParallel):
            return
        distributed.init(self.device)
        self.net = torch.nn.parallel.DistributedDataParallel(
            self.net,
            device_ids=[self.device] if self.device.type == "cuda" else None,
            # --pooler none leaves the model's pooler out of the loss: DDP must not wait for its gradients.
            find_unused_parameters=self.head.dense is None,
        )

    def _tokenize(self) -> TrainingData:
        splits = set(str(self.bank_attrs.get("splits", "train,dev,test")).split(","))
        texts, rows, n_entries = training_pairs(self.dictionary, splits)
        labels = np.asarray(rows, dtype=np.int64)
        if self.config.limit and self.config.limit < len(texts):
            keep = np.sort(np.random.default_rng(self.config.seed).permutation(len(texts))[: self.config.limit])
            texts, labels = [texts[i] for i in keep], labels[keep]
        token_ids = tokenize(texts, self.loaded.tokenizer, self.pool, self.max_length)
        return TrainingData(token_ids, labels, n_entries, texts)

    def batch_at(self, step: int) -> np.ndarray:
        epoch, index = divmod(step, self.batches_per_epoch)
        if index == 0 or not hasattr(self, "_epoch") or self._epoch != epoch:
            lengths = np.asarray([len(ids) for ids in self.data.token_ids])
            self._batches, self._epoch = epoch_batches(lengths, self.config, epoch), epoch
        return self._batches[index]

    def loss_on(self, index: np.ndarray) -> torch.Tensor:
        pad_id = self.loaded.tokenizer.pad_token_id or 0
        input_ids, attention_mask = pad_batch([self.data.token_ids[i] for i in index], pad_id)
        input_ids, attention_mask = input_ids.to(self.device), attention_mask.to(self.device)
        reps = self.net(input_ids, attention_mask)
        labels = torch.from_numpy(self.data.labels[index]).to(self.device)
        return bank_cross_entropy(reps, self.bank, labels)

    def train_step(self, index: np.ndarray) -> float:
        """One optimiser step on the global batch ``index``; returns its mean loss.

        Under DDP each of the W processes takes a contiguous slice of n_r of the
        N items.  DDP's backward AVERAGES gradients over processes, so scaling the
        local mean loss by W * n_r / N gives
            (1/W) * sum_r W * (n_r/N) * grad(mean_r) = grad((1/N) * sum_i loss_i),
        the gradient of the one-process mean over the whole global batch: same
        batch size, same learning rate, same clipping (applied after the
        all-reduce, on identical gradients in every process), same weights.
        """
        self.model.train()
        if self.world == 1:
            loss = self.loss_on(index)
            loss.backward()
            value = float(loss.detach())
        else:
            local = distributed.shard(index)
            weight = len(local) / len(index)
            if len(local) == 0:  # a global batch smaller than the world: join the all-reduce with zero gradient
                local = index[:1]
            loss = self.loss_on(local)
            (loss * (weight * self.world)).backward()
            value = distributed.all_reduce_sum(float(loss.detach()) * weight if weight else 0.0)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return value

    # --- resumable state -------------------------------------------------------------------------

    def state(self) -> dict:
        """The resumable state; under torchrun every process must call it (it gathers their RNG states)."""
        rngs = distributed.gather_object(torch.get_rng_state())
        return {
            "format": "defsent-train-state/1",
            "config": asdict(self.config),
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "torch_rng_ranks": rngs,  # one per process (None on ranks other than 0)
            "world_size": self.world,
            "python_rng": random.getstate(),
            "log": self.log,
            "elapsed": self.elapsed,
        }

    def save_state(self, path: Path) -> None:
        """Write the state atomically; under torchrun all processes call it and rank 0 writes."""
        state = self.state()
        if not distributed.is_main():
            return
        tmp = path.with_name(path.name + ".tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)

    def load_state(self, path: Path) -> None:
        try:
            state = torch.load(path, map_location=self.device, weights_only=False)
        except Exception as exc:  # noqa: BLE001
            raise DefsentError(f"cannot read the resume state ({type(exc).__name__})", path=path) from None
        saved = state.get("config", {})
        mine, defaults = asdict(self.config), asdict(TrainConfig())
        differ = [
            k for k in mine if k not in ("device", "save_every", "log_every") and saved.get(k, defaults[k]) != mine[k]
        ]
        if differ:
            raise DefsentError(f"cannot resume: settings differ from the saved run ({', '.join(differ)})", path=path)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        rngs = state.get("torch_rng_ranks") or [state["torch_rng"]]
        if len(rngs) == self.world:
            torch.set_rng_state(rngs[self.rank])
        else:  # saved by another number of processes: the weights so far are the same, dropout masks from here differ
            torch.manual_seed(self.config.seed + 1_000_003 * self.rank + 7919 * int(state["step"]))
            if distributed.is_main():
                err_console.print(
                    f"[yellow]note:[/yellow] state saved by {len(rngs)} process(es), resumed by {self.world}: "
                    "dropout from here differs from an uninterrupted run"
                )
        random.setstate(state["python_rng"])
        self.step, self.log, self.elapsed = int(state["step"]), list(state["log"]), float(state["elapsed"])

    # --- the loop --------------------------------------------------------------------------------

    def run(self, work_dir: Path, show_progress: bool | None = None) -> None:
        """Train from ``self.step`` to ``total_steps``, logging and saving resumable state in ``work_dir``.

        Under torchrun every process runs this loop; only rank 0 shows progress and writes the log and state.
        """
        config = self.config
        main = distributed.is_main()
        state_path, log_path = work_dir / "state.pt", work_dir / "log.jsonl"
        kill_at = int(os.environ.get("DEFSENT_TEST_KILL_AT_STEP", "0"))  # fault injection for the resume test
        n_defs = [len(self.batch_at(s)) for s in range(self.step, self.total_steps)]
        window: list[float] = []
        extra = "loss {task.fields[loss]:.3f} lr {task.fields[lr]:.1e}"
        with (
            make_progress("defs", show_progress if main else False, extra=extra) as progress,
            open(log_path, "a", encoding="utf-8") if main else nullcontext() as log,
        ):
            task = progress.add_task("training", total=sum(n_defs), loss=float("nan"), lr=config.lr)
            started = time.perf_counter() - self.elapsed
            while self.step < self.total_steps:
                index = self.batch_at(self.step)
                lr = self.scheduler.get_last_lr()[0]
                loss = self.train_step(index)
                if not math.isfinite(loss):
                    raise DefsentError(f"loss became {loss} at step {self.step + 1}; lower --lr")
                self.step += 1
                window.append(loss)
                progress.update(task, advance=len(index), loss=loss, lr=lr)
                if self.step % config.log_every == 0 or self.step == self.total_steps:
                    self.elapsed = time.perf_counter() - started
                    row = {
                        "step": self.step,
                        "definitions": min(self.step * config.batch_size, len(self.data.labels) * config.epochs),
                        "loss": round(sum(window) / len(window), 6),
                        "lr": lr,
                        "elapsed": round(self.elapsed, 2),
                    }
                    window = []
                    self.log.append(row)
                    if main:
                        log.write(json.dumps(row) + "\n")
                        log.flush()
                if config.save_every and self.step % config.save_every == 0 and self.step < self.total_steps:
                    self.elapsed = time.perf_counter() - started
                    self.save_state(state_path)
                if kill_at and self.step == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            self.elapsed = time.perf_counter() - started

    def info(self) -> dict:
        """What ``defsent.json`` records about this run."""
        config = self.config
        defs = len(self.data.labels)
        return {
            "format": "defsent-checkpoint/1",
            "defsent_version": __version__,
            "base_model": str(self.base_model.resolve()),
            "pooling": config.inference_pooling or config.pooling,
            "train_pooling": config.pooling,
            "head": self.head.mode_description,
            "pooler_mode": config.pooler,
            "dictionary": str(self.dictionary.resolve()),
            "bank": str(self.bank_path.resolve()),
            "bank_attrs": {k: v for k, v in self.bank_attrs.items()},
            "bank_entries": self.n_bank,
            "training_definitions": defs,
            "training_entries": self.data.n_entries_trained,
            "config": asdict(config),
            "processes": self.world,
            "steps": self.step,
            "max_length": self.max_length,
            "seconds": round(self.elapsed, 1),
            "definitions_per_second": round(
                min(self.step * config.batch_size, defs * config.epochs) / max(self.elapsed, 1e-9), 2
            ),
            "final_loss": self.log[-1]["loss"] if self.log else None,
            "loss_curve": [[row["step"], row["loss"]] for row in self.log],
        }


def train(
    dictionary: Path,
    bank: Path,
    base_model: Path,
    output: Path,
    config: TrainConfig,
    resume: bool = False,
    force: bool = False,
    show_progress: bool | None = None,
) -> dict:
    """Run one training step of PST and write the checkpoint folder; returns its ``defsent.json``.

    Under torchrun every process calls this; the inputs are validated before the
    process group opens, rank 0 alone writes ``OUTPUT.partial/`` and the checkpoint,
    and every process resumes from the same ``state.pt`` (so OUTPUT must be on a
    file system all processes see).
    """
    output = Path(output)
    if output.exists() and not force:
        raise DefsentError("output exists; pass --force to overwrite", path=output)
    if not output.parent.exists():
        raise DefsentError("output directory does not exist", path=output.parent)
    work_dir = output.with_name(output.name + ".partial")
    trainer = Trainer(dictionary, bank, base_model, config)
    state_path = work_dir / "state.pt"
    main = distributed.is_main()
    say = err_console.print if main else (lambda *args, **kwargs: None)
    with distributed.session(trainer.device):
        resuming = distributed.broadcast_object(resume and state_path.exists())  # rank 0 decides for all
        if resuming:
            trainer.load_state(state_path)
            if main:
                # The log may hold rows written after the saved state: keep only what the state knows.
                (work_dir / "log.jsonl").write_text(
                    "".join(json.dumps(row) + "\n" for row in trainer.log), encoding="utf-8"
                )
            say(f"resuming from step {trainer.step} of {trainer.total_steps} ({state_path})")
        elif main:
            if resume:
                say(f"no saved state in {work_dir}: starting from step 0")
            if work_dir.exists():
                for stale in ("state.pt", "log.jsonl"):
                    (work_dir / stale).unlink(missing_ok=True)
            work_dir.mkdir(exist_ok=True)
        trainer.distribute()
        processes = f", {trainer.world} processes" if trainer.world > 1 else ""
        say(
            f"training {base_model} on {len(trainer.data.labels):,} definitions against {trainer.n_bank:,} entries "
            f"({config.pooling} pooling, head {trainer.head.mode_description}, lr {config.lr:g}, "
            f"batch {config.batch_size}, {trainer.total_steps:,} steps, seed {config.seed}{processes})"
        )
        trainer.run(work_dir, show_progress)
        info = trainer.info()
        if main:
            save_checkpoint(output, trainer.model, trainer.loaded.tokenizer, info, trainer.max_length, force=force)
            (output / "train_log.jsonl").write_text(
                (work_dir / "log.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
            )
            for name in ("state.pt", "log.jsonl"):
                (work_dir / name).unlink(missing_ok=True)
            work_dir.rmdir()
        distributed.barrier()  # every process returns once the checkpoint is written
    return info
