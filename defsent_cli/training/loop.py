"""The run every objective trains in (issues 57, 70): one class, :class:`Loop`, that knows no objective. It sets up
once (the checks, the seeds, the model and its pooling and token limit, the optimiser over the encoder and the
objective's modules), then runs the loop (the optimiser step, the schedule, precision, the torchrun weighting,
clipping, the log, dev evaluation and keep-best, the resumable state); what trains beside the encoder, its data and
its loss are the :class:`~objective.Objective`'s (``definitions.py``: DefSent+ and DefSent; ``tsdae.py``,
``contrastive.py``, ``pairs.py``, ``teachers.py``), asked through the hooks of its contract.

Under ``torchrun`` (``distributed.py``) the same run is shared by N processes
with PyTorch's DistributedDataParallel: every process forms the same global
batches, computes the loss of its contiguous slice, DDP averages the gradients,
and only rank 0 logs and writes; the weights match a one-process run with the
same ``--batch-size`` up to float noise (see :meth:`Loop.train_step`).
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
from ..encoder.models import load_model
from ..encoder.pooling import get_pooling
from ..encoder.precision import autocast, deterministic, grad_scaler, resolve_train_precision, tf32
from ..encoder.word_head import load_word_head
from ..errors import DefsentError
from ..evaluation.criteria import Criterion
from ..formats.checkpoint import CHECKPOINT_FORMAT
from ..log import warn
from .config import EVAL_EACH_EPOCH, TrainConfig
from .data import Schedule
from .dev_eval import DevTracker
from .lr_schedule import idle_schedule_warning, linear_schedule
from .matryoshka import Matryoshka, PrefixCache
from .mlm import MaskedLM
from .noise_matching import NoiseMatching
from .state import STATE_FILE, save_state


class StepLoss(NamedTuple):
    """A step's loss in two parts that torchrun weights differently (:meth:`Loop.train_step`): ``whole``, a
    mean over the WHOLE global batch, the same value in every process (the sharded bank's cross-entropy), and
    ``local``, a mean over this process's share of it (an auxiliary MLM loss), or None."""

    whole: torch.Tensor
    local: torch.Tensor | None = None


class Loop:
    """One run of one :class:`~objective.Objective`: set up once, then trained by :meth:`run`."""

    def __init__(
        self,
        objective,
        data: Path,
        base_model: Path,
        config: TrainConfig,
        nm: NoiseMatching | None = None,
        matryoshka: Matryoshka | None = None,
    ):
        """``objective``: an :class:`~objective.Objective` (the loop imports no objective, not even the contract's
        module: it calls the hooks of the one it is handed); ``nm``: the auxiliary +NM term; ``matryoshka``: the
        widths trained to stand alone (``matryoshka.py``)."""
        self.objective = objective
        self.config = config  # checked when it was made (TrainConfig.__post_init__)
        objective.check(config)
        self.nm = nm.check() if nm is not None else None  # the auxiliary +NM term (forward.forward computes it)
        for term, given in (("nm", nm), ("matryoshka", matryoshka)):
            refusal = objective.refusal(term) if given is not None else None
            if refusal:
                raise DefsentError(refusal)
        self.dictionary, self.base_model = Path(data), Path(base_model)
        items = objective.read(self.dictionary, config)
        self.rank, self.world = distributed.rank(), distributed.world()
        if objective.one_process and self.world > 1:
            raise DefsentError(f"defsent {objective.name} runs in one process (not under torchrun)")
        if config.mlm_weight and not objective.mlm:
            raise DefsentError(f"defsent {objective.name} takes no --mlm-weight")
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        self.loaded = load_model(base_model, distributed.local_device(config.device), **objective.model_options())
        self.device, self.model = self.loaded.device, self.loaded.model
        self.sentence_transformer = objective.sentence_transformer
        self.max_length = self.loaded.token_limit(config.max_length)
        self.pool = get_pooling(config.pooling)
        self.net: torch.nn.Module | None = None  # what DDP wraps: the model unless the objective's setup says
        self.head: torch.nn.Module | None = None  # the head between pooling and the loss, if the setup sets one
        self._word_head = None
        self.matryoshka = matryoshka.check(self.loaded.dim, base_model) if matryoshka is not None else None
        self.prefix_cache: PrefixCache | None = None  # the step's passes under --matryoshka (forward.forward)
        objective.setup(self, items)  # may replace self.model (sentence-transformers' copy, say)
        # the auxiliary MLM loss of any objective that takes it (forward.forward), on the frozen word head
        self.mlm = (
            MaskedLM(self.loaded.tokenizer, self.word_head(), config.mlm_probability) if config.mlm_weight else None
        )
        self.loaded.model = self.model
        if self.net is None:
            self.net = self.model
        self._start(self._optimizer())
        if self.world > 1:
            torch.manual_seed(config.seed + 1_000_003 * self.rank)

    def _start(self, optimizer: torch.optim.Optimizer) -> None:
        """What every run starts from: data order, optimiser, LR schedule, empty counters, the precision (and
        fp16's gradient scaler)."""
        config = self.config
        self.schedule = Schedule(self.data, config)
        self.total_steps = self.schedule.total_steps()
        self.optimizer = optimizer
        self.encoder_start, self.encoder_start_option = self.objective.encoder_start()
        self.scheduler = linear_schedule(
            optimizer,
            round(config.warmup_ratio * self.total_steps),
            self.total_steps,
            encoder_start=min(self.encoder_start, self.total_steps),
            decay=config.schedule == "linear",
        )
        idle = idle_schedule_warning(
            self.scheduler.lr_lambdas[0], self.total_steps, self.encoder_start, self.encoder_start_option,
            config.warmup_ratio,
        )  # fmt: skip
        if idle and distributed.is_main():
            warn(idle)
        self.step, self.log, self.elapsed = 0, [], 0.0
        self.global_batch: np.ndarray | None = None  # the current step's global batch (train_step)
        self.sizes: list[int] | None = None  # every process's share of it (torchrun), for the gathers
        self.precision = resolve_train_precision(config.precision, self.device)  # auto: bf16 on a bf16 GPU
        self.scaler = grad_scaler(self.precision, self.device)  # fp16 only
        self.dev: DevTracker | None = None  # set by track_dev()

    def word_head(self):
        """The model's frozen word-prediction layer (``--word-head``), loaded once: DefSent's objective, the MLM's
        head."""
        if self._word_head is None:
            self._word_head = load_word_head(self.loaded, self.config.word_head)
        return self._word_head

    def trained(self) -> list[torch.nn.Parameter]:
        """The encoder's parameters, then the objective's modules' own, each once (the optimiser's order)."""
        seen: set[int] = set()
        params = []
        for module in (self.model, *self.objective.modules().values()):
            for p in module.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
        return params

    def _optimizer(self) -> torch.optim.Optimizer:
        config = self.config
        params = [p for p in self.trained() if p.requires_grad]
        encoder = {id(p) for p in self.model.parameters()}
        groups = self.objective.param_groups(
            self, [p for p in params if id(p) in encoder], [p for p in params if id(p) not in encoder]
        )
        return torch.optim.AdamW(
            groups, lr=config.lr, eps=config.adam_eps, weight_decay=config.weight_decay, fused=True
        )

    @property
    def eval_interval(self) -> int:
        """Steps between dev evaluations: ``eval_every``, or one epoch's steps for ``eval_every="epoch"``."""
        every = self.config.eval_every
        return self.schedule.per_epoch if every == EVAL_EACH_EPOCH else every

    def distribute(self) -> None:
        """Under torchrun: open the process group and wrap the trainable module in DDP (no-op in one process)."""
        if self.world == 1 or isinstance(self.net, torch.nn.parallel.DistributedDataParallel):
            return
        distributed.init(self.device)
        # Where every trainable parameter takes part in the loss, DDP need not walk the graph after every forward
        # pass looking for unused ones (nor warn that it found none): the objective says when some do not.
        self.net = torch.nn.parallel.DistributedDataParallel(
            self.net,
            device_ids=[self.device] if self.device.type == "cuda" else None,
            find_unused_parameters=self.objective.unused_parameters(self),
        )

    def train_mode(self) -> None:
        """Dropout on for what trains."""
        self.model.train()
        for module in self.objective.modules().values():
            module.train()

    def clipped(self):
        """The parameters whose gradient norm is clipped: the encoder's, and the objective's modules' unless it
        says otherwise."""
        return self.trained() if self.objective.clip_modules else self.model.parameters()

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
        self.objective.step_begin(self, index)  # the whole global batch, before each process takes its share
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

    @property
    def data_argument(self) -> str:
        """How the command line names the data file this run reads (``self.dictionary``), for resume's messages."""
        return self.objective.data_argument

    def run_settings(self) -> dict:
        """Every setting of the run, the loop's and the objective's (``defsent.json``'s and the state's ``config``;
        required equal on ``--resume``)."""
        return {**asdict(self.config), **self.objective.settings()}

    def settings(self) -> dict:
        """The auxiliary terms' settings (+NM's, Matryoshka's; the state's ``settings``, required equal on
        ``--resume``)."""
        nm = self.nm.settings() if self.nm is not None else {}
        return {**nm, **(self.matryoshka.settings() if self.matryoshka is not None else {})}

    def inputs(self) -> dict[str, dict]:
        """The files this run reads, by the names the command line gives them, each as a resume recognises it
        (``state.input_record``: its path and SHA-256; the base model by its configuration and tokenizer files):
        computed once, saved with every state and compared on --resume (``state.check_resume``)."""
        if getattr(self, "_inputs", None) is None:
            from .state import input_record, model_record

            found = {self.data_argument: input_record(self.dictionary)}
            found.update({name: input_record(path) for name, path in self.objective.inputs().items()})
            found["--model"] = model_record(self.loaded.transformer_dir or self.base_model, self.base_model)
            self._inputs = found
        return self._inputs

    def track_dev(self, criterion: Criterion) -> None:
        """Score the model on ``criterion`` every ``--eval-every`` steps, as it is served."""
        if self.config.eval_every:
            pooling, head = self.objective.served(self)
            # the model in training is a defsent checkpoint in the making: dict-dev reads it with its head
            self.loaded.source = "defsent"
            self.loaded.info = {"train_pooling": self.config.pooling, "head": head}
            criterion = self.objective.criterion(self, criterion)
            self.dev = DevTracker(criterion.prepare(), pooling, self.config.kept)

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
            make_progress(self.objective.unit, show_progress if main else False, extra=extra) as progress,
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
            "config": self.run_settings(),
            "processes": self.world,
            "precision": self.precision,
            "steps": self.step,
            "max_length": self.max_length,
            "seconds": round(self.elapsed, 1),
            "final_loss": self.log[-1]["loss"] if self.log else None,
            "loss_curve": [[row["step"], row["loss"]] for row in self.log],
        }

    def dev_info(self) -> dict:
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

    def loss_on(self, index: np.ndarray) -> torch.Tensor | StepLoss:
        """The objective's mean loss over this process's items ``index`` of the global batch (or a
        :class:`StepLoss`); under ``--matryoshka`` its weighted sum over the widths (``matryoshka.py``)."""
        if self.matryoshka is not None:
            return self.matryoshka.loss(self, index)
        return self.objective.loss(self, index)

    def describe(self) -> str:
        """The run in one line, for the start-of-training note."""
        nm = f", + {self.nm.weight:g} x Noise Matching" if self.nm is not None else ""
        if self.matryoshka is not None:
            nm += f", Matryoshka at {','.join(map(str, self.matryoshka.dims))} dimensions"
        return self.objective.describe(self) + nm + self._precision_note()

    def _precision_note(self) -> str:
        """The precision when it is not fp32, and why where ``auto`` chose it."""
        if self.precision == "fp32":
            return ""
        why = ""
        if self.config.precision == "auto":
            why = " (--precision auto: this CPU has AMX)" if self.device.type == "cpu" else " (--precision auto)"
        return f", {self.precision} mixed precision{why}"

    def checkpoint_files(self, work_dir: Path) -> dict[str, Path]:
        return {"train_log.jsonl": work_dir / "log.jsonl", **self.objective.files(work_dir)}

    def info(self) -> dict:
        """What ``defsent.json`` records about this run: :meth:`run_info`, the objective's own, the +NM term's."""
        return {**self.run_info(), **self.objective.record(self), **self.settings()}


#: the name objectives' hooks were written against (``run: ObjectiveRun``)
ObjectiveRun = Loop
