"""Objectives that plug into the training loop: one module and one registration each (issue 57).

An :class:`Objective` says only what is its own: its settings (recorded in ``defsent.json`` and the resumable
state, and required equal on ``--resume``), how it reads its data, the modules it trains beside the encoder
(a decoder, a head: their parameters join the optimiser, their weights the state, with nothing else to write),
the loss of a batch, the run's one-line description and what it adds to the checkpoint record. Everything
else is :class:`ObjectiveRun`'s, once for every objective: the checks of :class:`TrainConfig`, the seeds, the
model and its pooling and token limit, the optimiser over the encoder and the objective's modules, and then
:class:`loop.Loop`'s loop (schedule, precision, DDP weighting, clipping, logging, dev evaluation,
keep-best, state save and resume) and ``run.fit``'s checkpoint folder.

    @register
    class Reconstruct(Objective):
        name = kind = "reconstruct"
        def setup(self, run): self.decoder = torch.nn.Linear(run.loaded.dim, run.loaded.dim)
        def modules(self): return {"decoder": self.decoder}
        def loss(self, run, index): ...

    run.objective_fit(OBJECTIVES["reconstruct"](), sentences, model, output, config)

The model sentence-transformers gives a loss (``forward(features, labels)``, its own weights trained with the
model's), with the run's state and record on top. ``tsdae.py`` is one (TSDAE, + Noise Matching), ``contrastive.py``
another (SimCSE and Noise Matching, + MLM, under torchrun too): what it needs beyond the above is a few small hooks
that any objective may use, each a no-op by default: :meth:`Objective.step_begin` (a draw for the whole global
batch before the step: NM's damaged sentences, the same in every process), :meth:`Objective.param_groups` (a
head's own learning rate), :attr:`Objective.clip_modules`, and ``run.net``, set by :meth:`Objective.setup` to the
module DDP wraps when the modules take part in the forward pass (the model, pooling and head as one).
``pairs.py`` (``train-pairs``, ``teacher``) adds :meth:`Objective.model_options` (a Cross-Encoder's head),
:meth:`Objective.criterion` (a teacher scored on its pair scores) and :attr:`Objective.best_prefix`.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from .. import distributed
from ..constraints import Constraint, check_all
from ..encoder.models import load_model
from ..encoder.pooling import get_pooling
from ..encoder.word_head import load_word_head
from ..errors import DefsentError
from ..evaluation.criteria import Criterion
from .config import TrainConfig
from .loop import Loop
from .mlm import MaskedLM
from .noise_matching import NoiseMatching

#: Every registered objective by its name (:func:`register`).
OBJECTIVES: dict[str, type[Objective]] = {}


def register(cls: type[Objective]) -> type[Objective]:
    """Make an objective known by its ``name`` (a class decorator: the one registration an objective needs)."""
    if cls.name in OBJECTIVES and OBJECTIVES[cls.name] is not cls:
        raise ValueError(f"objective {cls.name!r} is registered twice")
    OBJECTIVES[cls.name] = cls
    return cls


class Objective:
    """What one kind of training adds to the loop; subclass, fill in, :func:`register`."""

    name: ClassVar[str] = ""
    #: ``defsent.json``'s ``kind``
    kind: ClassVar[str] = ""
    #: how the command line names the data file, in resume's messages
    data_argument: ClassVar[str] = "SENTENCES"
    #: refuse torchrun (the objective's loss does not weight a share of the global batch)
    one_process: ClassVar[bool] = False
    #: the checkpoint is a sentence-transformers bi-encoder folder
    sentence_transformer: ClassVar[bool] = True
    #: the modules' gradients are clipped with the encoder's (else the encoder's alone, as simcse's MLP always was)
    clip_modules: ClassVar[bool] = True
    #: the prefix of the kept-best weights in the resumable state (train, train-pairs and teacher keep them bare)
    best_prefix: ClassVar[str] = "best."
    #: the key of the dev tracker's document in the state's (None: the document is the tracker's, as train's was)
    dev_key: ClassVar[str | None] = "dev"
    #: takes the auxiliary masked-LM loss (``--mlm-weight``), computed by ``forward.forward`` for its batches
    mlm: ClassVar[bool] = False
    #: takes the auxiliary Noise Matching loss (``--nm-weight``), computed by ``forward.forward`` for the
    #: sentences its loss hands it (``noise_matching.Noised``)
    nm: ClassVar[bool] = False

    def model_options(self) -> dict:
        """Keyword arguments of ``encoder.models.load_model`` beyond the folder and the device (a Cross-Encoder's
        ``regression_head``)."""
        return {}

    def settings(self) -> dict:
        """The objective's own settings: recorded, and required equal on ``--resume``."""
        return {}

    #: the constraints of :meth:`settings`, by name (``constraints.py``): checked by :meth:`check`
    constraints: ClassVar[dict[str, Constraint]] = {}

    def check(self, config: TrainConfig) -> None:
        """Refuse settings that cannot run (one-line :class:`DefsentError`), before anything loads: by default
        each of :meth:`settings` against :attr:`constraints` (an objective that ties settings together adds its
        rules after ``super().check(config)``)."""
        check_all(self.settings(), self.constraints)

    def nm_refusal(self) -> str | None:
        """Why this objective takes no ``--nm-weight`` (None: it takes it, :attr:`nm`)."""
        return None if self.nm else f"defsent {self.name} takes no --nm-weight"

    def read(self, path: Path, config: TrainConfig):
        """The training items of ``path``, read and checked before the model loads (handed to :meth:`setup`)."""
        return None

    def setup(self, run: ObjectiveRun, items) -> None:
        """Build what the objective trains beside the encoder and set ``run.data`` (its ``len`` and ``token_ids``
        give the batches); may replace ``run.model`` (the encoder the checkpoint keeps), and may set ``run.net``,
        the module that DDP wraps under torchrun (default: ``run.model``), to one that holds the model and the
        modules of the forward pass (their gradients are then averaged too). Torch's generator is seeded before:
        draw from it here, in a fixed order."""
        raise NotImplementedError

    def modules(self) -> dict[str, torch.nn.Module]:
        """The modules that train beside the encoder, by name: their parameters (those not the encoder's) join the
        optimiser and the clipping, their weights the resumable state (``name.key``); train mode with the model."""
        return {}

    def param_groups(self, run: ObjectiveRun, encoder: list, modules: list) -> list[dict]:
        """The optimiser's parameter groups of the trainable parameters, the encoder's and the modules' own
        (default: one group, at ``--lr``)."""
        return [{"params": encoder + modules}]

    def dev_data(self, path: Path) -> tuple[Path | None, Path | None]:
        """(dictionary, entry bank) that ``--eval-on dict-dev`` scores on, from the data file ``path``: (None, None)
        for an objective that reads no dictionary."""
        return None, None

    def served(self, run: ObjectiveRun) -> tuple[str, str]:
        """(pooling, head description) of the model as it is served, which dev evaluation scores (default: the
        training pooling, no head)."""
        return run.config.pooling, "none"

    def criterion(self, run: ObjectiveRun, criterion: Criterion):
        """The dev criterion of ``--eval-every`` as this objective's model is scored on it (a teacher scores pairs)."""
        return criterion

    def step_begin(self, run: ObjectiveRun, index: np.ndarray) -> None:
        """Before each optimiser step, with its WHOLE global batch ``index`` (the same in every process under
        torchrun, before each takes its share): draw what the step needs for all of it, so that every process's
        share is what one process would draw."""

    def loss(self, run: ObjectiveRun, index: np.ndarray) -> torch.Tensor:
        """The mean loss over the items ``index`` (this process's share of the global batch; ``run.sizes``:
        every process's share under torchrun, for a loss that gathers across them)."""
        raise NotImplementedError

    def describe(self, run: ObjectiveRun) -> str:
        """The run in one line, for the start-of-training note."""
        return f"{self.name}: {run.base_model}"

    def record(self, run: ObjectiveRun) -> dict:
        """What ``defsent.json`` records beside the loop's :meth:`Loop.run_info`, ``kind`` first."""
        return {
            "kind": self.kind,
            "pooling": run.config.pooling,
            "train_pooling": run.config.pooling,
            "sentences": str(run.dictionary.resolve()),
            **self.settings(),
            **run._dev_info(),
        }

    def state_document(self) -> dict:
        """The JSON the resumable state keeps beside the modules' weights (their settings are kept anyway)."""
        return {}

    def files(self, work_dir: Path) -> dict[str, Path]:
        """Files the checkpoint folder gets beside the model and the loss log (written into ``work_dir``)."""
        return {}


class ObjectiveRun(Loop):
    """The loop of :class:`loop.Loop` for any :class:`Objective`: set-up once, the objective's parts plugged in."""

    def __init__(
        self, objective: Objective, data: Path, base_model: Path, config: TrainConfig, nm: NoiseMatching | None = None
    ):
        self.objective = objective
        self.config = config.validate()
        objective.check(config)
        self.nm = nm.check() if nm is not None else None  # the auxiliary +NM term (forward.forward computes it)
        refusal = objective.nm_refusal() if nm is not None else None
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
        self._word_head = None
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

    def word_head(self):
        """The model's frozen word-prediction layer (``--word-head``), loaded once: DefSent's objective, the MLM's
        head."""
        if self._word_head is None:
            self._word_head = load_word_head(self.loaded, self.config.word_head)
        return self._word_head

    @property
    def data_argument(self) -> str:  # type: ignore[override]
        return self.objective.data_argument

    def _own(self) -> dict[str, dict[str, torch.Tensor]]:
        """Each module's weights that are not the encoder's (a tied decoder shares its embeddings)."""
        shared = {p.data_ptr() for p in self.model.parameters()}
        return {
            name: {k: v for k, v in module.state_dict().items() if v.data_ptr() not in shared}
            for name, module in self.objective.modules().items()
        }

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

    def clipped(self):
        return self.trained() if self.objective.clip_modules else self.model.parameters()

    def train_step(self, index: np.ndarray) -> torch.Tensor:
        self.objective.step_begin(self, index)  # the whole global batch, before each process takes its share
        return super().train_step(index)

    def train_mode(self) -> None:
        self.model.train()
        for module in self.objective.modules().values():
            module.train()

    def loss_on(self, index: np.ndarray) -> torch.Tensor:
        return self.objective.loss(self, index)

    def track_dev(self, criterion: Criterion) -> None:
        if self.config.eval_every:
            from .dev_eval import DevTracker

            pooling, head = self.objective.served(self)
            # the model in training is a defsent checkpoint in the making: dict-dev reads it with its head
            self.loaded.source = "defsent"
            self.loaded.info = {"train_pooling": self.config.pooling, "head": head}
            criterion = self.objective.criterion(self, criterion)
            self.dev = DevTracker(criterion.prepare(), pooling, self.config.kept)

    def describe(self) -> str:
        nm = f", + {self.nm.weight:g} x Noise Matching" if self.nm is not None else ""
        return self.objective.describe(self) + nm

    def settings(self) -> dict:
        """The objective's settings and the +NM term's (compared on ``--resume``)."""
        return {**self.objective.settings(), **self._nm_settings()}

    def _nm_settings(self) -> dict:
        return self.nm.settings() if self.nm is not None else {}

    def extra_state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        doc, tensors = self.objective.state_document(), {}
        for name, weights in self._own().items():
            tensors.update({f"{name}.{k}": v for k, v in weights.items()})
        if self.dev is not None:
            dev, best = self.dev.state()
            key = self.objective.dev_key
            doc = {**doc, key: dev} if key is not None else {**doc, **dev}
            tensors.update({f"{self.objective.best_prefix}{k}": v for k, v in best.items()})
        return doc, tensors

    def restore_extra_state(self, extra: dict, tensors: dict[str, torch.Tensor]) -> None:
        # the settings were compared with the saved run's before (state.check_resume)
        for name, module in self.objective.modules().items():
            weights = {k.removeprefix(f"{name}."): v for k, v in tensors.items() if k.startswith(f"{name}.")}
            module.load_state_dict(weights, strict=False)
        if self.dev is not None:
            prefix, own = self.objective.best_prefix, tuple(f"{name}." for name in self.objective.modules())
            best = {
                k.removeprefix(prefix): v for k, v in tensors.items() if k.startswith(prefix) and not k.startswith(own)
            }
            key = self.objective.dev_key
            self.dev.restore(extra.get(key, {}) if key is not None else extra, best)

    def checkpoint_files(self, work_dir: Path) -> dict[str, Path]:
        return {"train_log.jsonl": work_dir / "log.jsonl", **self.objective.files(work_dir)}

    def info(self) -> dict:
        return {**self.run_info(), **self.objective.record(self), **self._nm_settings()}
