"""Objectives that plug into the training loop: a spec, one class and one registration each (issues 57, 77).

An :class:`Objective` says only what is its own: its spec (``specs.py``, torch-free: its name and kind, its loop
defaults, its settings' defaults and rules, read by the command line and ``--help`` too), its settings (recorded in
``defsent.json`` and the resumable state, and required equal on ``--resume``), how it reads its data, the modules it
trains beside the encoder (a decoder, a head: their parameters join the optimiser, their weights the state, with
nothing else to write), the loss of a batch, the run's one-line description and what it adds to the checkpoint
record. Everything else is :class:`loop.Loop`'s, once for every objective: the checks of :class:`TrainConfig`, the
seeds, the model and its pooling and token limit, the optimiser over the encoder and the objective's modules, the
loop (schedule, precision, DDP weighting, clipping, logging, dev evaluation, keep-best, state save and resume), and
``run.fit``'s checkpoint folder. This module imports neither torch nor the loop.

One meaning for "objective": a class registered here, :data:`OBJECTIVES` by its spec's ``name`` (the command that
trains it; ``specs.SPECS`` holds the package's specs, torch-free). ``kind`` is the word ``defsent.json`` records for
it (kept as it always was: checkpoints written before are read by it); the ``--objective`` option of ``train``
and ``simcse`` picks a *variant* of that command's objective (its ``objective`` setting; a variant may have loop
defaults of its own, ``ObjectiveSpec.variants``), recorded among its settings. The contract (the hooks it must
write, the rest with defaults, what ``setup`` may change on the run) is docs/layout.md's "Adding a training
objective".

    RECONSTRUCT = ObjectiveSpec(name="reconstruct", kind="reconstruct", loop={"lr": 1e-4})  # torch-free

    @register
    class Reconstruct(Objective):
        spec = RECONSTRUCT
        def setup(self, run, items): self.decoder = torch.nn.Linear(run.loaded.dim, run.loaded.dim)
        def modules(self): return {"decoder": self.decoder}
        def loss(self, run, index): ...

    run.objective_fit(OBJECTIVES["reconstruct"](), sentences, model, output)  # at its spec's defaults

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

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..constraints import check_all
from .config import TrainConfig
from .specs import ObjectiveSpec

if TYPE_CHECKING:  # the contract names them; importing this module loads neither torch nor the loop
    import numpy as np
    import torch

    from ..evaluation.criteria import Criterion
    from .loop import Loop as ObjectiveRun  # noqa: F401 - the run each hook is handed

#: Every registered objective by its name (:func:`register`).
OBJECTIVES: dict[str, type[Objective]] = {}


def register(cls: type[Objective]) -> type[Objective]:
    """Make an objective known by its spec's ``name`` (a class decorator: the one registration an objective
    needs)."""
    name = cls.spec.name
    if name in OBJECTIVES and OBJECTIVES[name] is not cls:
        raise ValueError(f"objective {name!r} is registered twice")
    OBJECTIVES[name] = cls
    return cls


class Objective:
    """What one kind of training adds to the loop; subclass, fill in, :func:`register`."""

    #: its declarations, torch-free (``specs.py``): name, kind, its own settings' defaults and constraints, its loop
    #: defaults; the command line and ``--help`` read the same spec
    spec: ClassVar[ObjectiveSpec]
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
    #: what the progress bar counts
    unit: ClassVar[str] = "items"

    @property
    def name(self) -> str:
        """The registry's name: the command that trains it."""
        return self.spec.name

    @property
    def kind(self) -> str:
        """``defsent.json``'s ``kind``."""
        return self.spec.kind

    def config(self, model: str | Path | None = None, **given) -> TrainConfig:
        """The run's :class:`TrainConfig` at this objective's defaults (its variant's), with ``given`` changes; the
        pooling the ``model`` folder's own where the objective trains with it (``ObjectiveSpec.config``)."""
        return self.spec.config(self.spec.variant(self.settings()), model, **given)

    def card(self) -> tuple[str, str] | None:
        """(title, sentence on what the run did) of the checkpoint's model card ("DefSent+ fine-tune"; an objective
        with variants tells them apart); None: the card's neutral ones, which name the kind
        (``formats/checkpoint.NEUTRAL_CARD``)."""
        return None

    def encoder_start(self) -> tuple[int, str]:
        """The step from which the encoder trains (before it only the objective's modules do: a head warm-up), and
        the option that sets it, for the loop's warning when that is the whole run."""
        return 0, ""

    def unused_parameters(self, run: ObjectiveRun) -> bool:
        """Whether some trainable parameter may take no part in a step's loss (DDP must then look for them, and
        need not where all do). By default: the model's trainable pooler when no head (``run.head``) uses its dense
        layer (a plain BERT's pooler under mean pooling, --pooler none)."""
        pooler = getattr(run.model, "pooler", None)
        return getattr(run.head, "dense", None) is None and any(
            p.requires_grad for p in (pooler.parameters() if pooler is not None else ())
        )

    def inputs(self) -> dict[str, Path]:
        """Input files beside the data and the model (train's ``--bank``), by the option that names them: recorded
        in the resumable state and compared on ``--resume``."""
        return {}

    def model_options(self) -> dict:
        """Keyword arguments of ``encoder.models.load_model`` beyond the folder and the device (a Cross-Encoder's
        ``regression_head``)."""
        return {}

    def settings(self) -> dict:
        """The objective's own settings: recorded, and required equal on ``--resume``. By default each of its spec's
        settings, read from the attribute of its name."""
        return {name: getattr(self, name) for name in self.spec.settings}

    def check(self, config: TrainConfig) -> None:
        """Refuse settings that cannot run (one-line :class:`DefsentError`), before anything loads: by default
        each of :meth:`settings` against its spec's constraints (an objective that ties settings together adds its
        rules after ``super().check(config)``)."""
        check_all(self.settings(), self.spec.constraints)

    def refusal(self, term: str) -> str | None:
        """Why this objective does not take the run-wide term ``term``: ``"nm"`` (``--nm-weight``; by default as
        :attr:`nm` says) or ``"matryoshka"`` (``--matryoshka``, taken by default); None: it takes it. Asked after
        :meth:`check`, before anything loads."""
        if term == "nm" and not self.nm:
            return f"defsent {self.name} takes no --nm-weight"
        return None

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
            f"training_{self.spec.item}s": len(run.data),
            **self.settings(),
            **run.dev_info(),
        }

    def state_document(self) -> dict:
        """The JSON the resumable state keeps beside the modules' weights (their settings are kept anyway)."""
        return {}

    def files(self, work_dir: Path) -> dict[str, Path]:
        """Files the checkpoint folder gets beside the model and the loss log (written into ``work_dir``)."""
        return {}
