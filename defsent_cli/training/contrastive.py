"""Unsupervised contrastive training on plain sentences, ``defsent simcse``: SimCSE (Gao et al. 2021) and
Noise Matching (Reiml 2023, section 4.2.3), alone or with an auxiliary masked-LM loss.

**SimCSE** (``--objective simcse``): each sentence of the batch goes through the encoder twice with dropout
on (one forward pass of the batch stacked on itself, as SimCSE's code does: dropout draws its own mask per
row); the two views of a sentence are positives, the second views of the other sentences its negatives:
InfoNCE over cosines at temperature 0.05 (:func:`loss.info_nce`, sentence-transformers'
``MultipleNegativesRankingLoss``). In training the representation is CLS through an MLP (a new dense layer
+ tanh, initialised as BERT initialises, N(0, 0.02)), which the checkpoint does not keep: unsupervised
SimCSE trains with ``--pooler_type cls`` and evaluates ``cls_before_pooler``. ``--pooling mean`` has no MLP
(SimCSE's ``avg``); ``--mlp/--no-mlp`` overrides either.

**Noise Matching** (``--objective nm``): the positive of a sentence x is T(x), x with 60% of its words
deleted (``sentences.damage``, the deletion of ``defsent tsdae``, drawn from (seed, step)). InfoNCE as in
SimCSE, the originals as queries and the damaged sentences as keys (each original's negatives are the other
damaged sentences of the batch), with a stop-gradient on the original's representation h_i
(``--stop-gradient original``, the default): the thesis wants the model to "learn that x+ = T(x) is similar
to x ... not that x is similar to T(x)" (T(x) is a subsequence of x, not the reverse), so the damaged
sentence is pulled towards its original, which stays where it is, as in its Figure 4.1 where sg sits on
h_i. The originals go through the encoder without gradient, in train mode (dropout on, as in the pass that
learns). One sentence of 4.2.3 reads the other way round ("allowing only the gradient to flow backwards
through the original sentence"): ``--stop-gradient damaged`` runs that reading, ``none`` the naive SimCSE
with x+ = T(x) that the thesis argues against.

**MLM** (``--mlm-weight λ``; SimCSE and the thesis use 0.1): a masked copy of the sentences predicted
through the frozen word head (``mlm.py``, as ``train --mlm-weight``), on the same batch: both views in
SimCSE (SimCSE's code masks both), the originals in NM. **TSDAE + NM** is ``defsent tsdae --nm-weight λ``
(``tsdae.py``): the NM term there reads the vector TSDAE's decoder reads.

**torchrun**: the keys of every process are gathered (``distributed.all_gather_batch``, with their
gradients), so each query's negatives are the whole global batch, as in SimCSE's multi-GPU runs; each
process scores its own queries, and ``Trainer.train_step``'s weighting makes the gradient the one-process
gradient of the same global batch (2 processes give the weights of one). SimCSE's code gathers both views
and computes the whole matrix on every GPU, which under DDP's averaging divides the gradient by the number
of GPUs; ours does not.

Defaults: SimCSE's unsupervised BERT-base run (``run_unsup_example.sh`` on the Hugging Face Trainer's
defaults): batch 64, lr 3e-5, one epoch, max length 32, linear decay without warm-up, AdamW eps 1e-8 and no
weight decay, gradient clipping at 1.0, the model's own dropout (0.1). Batches are plain shuffles
(``--batching random``): length buckets would give each sentence negatives of its own length only. SimCSE
scores STS-B dev every 125 steps and keeps the best: ``--eval-every 125 --eval-on stsb-dev``.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import torch

from .. import distributed
from ..encoder.head import PoolerHead, fresh_mlp
from ..encoder.models import load_model
from ..encoder.pooling import get_pooling
from ..encoder.tokenize import has_padding, pad_batch, to_device, tokenize
from ..encoder.tokenize import pad_id as padding_id
from ..encoder.word_head import load_word_head
from ..errors import DefsentError, count
from ..evaluation.criteria import Criterion
from .config import CONTRASTIVE_OBJECTIVES, DELETION, STOP_GRADIENTS, TEMPERATURE, TSDAE_POOLINGS, TrainConfig
from .loss import info_nce
from .mlm import MaskedLM
from .sentences import check_negatives, damage, sample_sentences, sentence_data
from .trainer import Trainer, TrainForward

#: What ``defsent simcse`` uses where the command line is silent (see the module docstring).
CONTRASTIVE_DEFAULTS = {
    "lr": 3e-5,
    "batch_size": 64,
    "max_length": 32,
    "adam_eps": 1e-8,
    "max_grad_norm": 1.0,
    "batching": "random",
}


def check_contrastive(objective: str, deletion: float, temperature: float, stop_gradient: str) -> None:
    """The settings of :class:`ContrastiveTrainer` beyond :class:`TrainConfig`, checked (one-line errors)."""
    if objective not in CONTRASTIVE_OBJECTIVES:
        raise DefsentError(f"--objective must be one of {', '.join(CONTRASTIVE_OBJECTIVES)}, not {objective!r}")
    if not (math.isfinite(deletion) and 0 <= deletion < 1):
        raise DefsentError(f"--deletion must be in [0, 1), got {deletion}")
    if not (math.isfinite(temperature) and temperature > 0):
        raise DefsentError(f"--temperature must be a finite number > 0, got {temperature}")
    if stop_gradient not in STOP_GRADIENTS:
        raise DefsentError(f"--stop-gradient must be one of {', '.join(STOP_GRADIENTS)}, not {stop_gradient!r}")


class ContrastiveTrainer(Trainer):
    """A SimCSE or Noise Matching run: the :class:`Trainer` loop, state and DDP, in-batch negatives as the loss."""

    def __init__(
        self,
        sentences: Path,
        base_model: Path,
        config: TrainConfig,
        objective: str = "simcse",
        split: str = "train",
        mlp: bool | None = None,
        temperature: float = TEMPERATURE,
        deletion: float = DELETION,
        stop_gradient: str = "original",
    ):
        self.config = config.validate()
        if config.pooling not in TSDAE_POOLINGS:
            raise DefsentError(f"simcse pools with cls or mean, not {config.pooling!r}")
        check_contrastive(objective, deletion, temperature, stop_gradient)
        self.objective, self.split, self.temperature = objective, split, temperature
        self.deletion, self.stop_gradient = deletion, stop_gradient
        self.mlp = config.pooling == "cls" if mlp is None else bool(mlp)
        self.dictionary, self.base_model, self.bank_path = Path(sentences), Path(base_model), None
        texts = sample_sentences(self.dictionary, split, config)
        check_negatives(texts, config.batch_size, "SimCSE" if objective == "simcse" else "Noise Matching", sentences)
        self.rank, self.world = distributed.rank(), distributed.world()
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        self.loaded = load_model(base_model, distributed.local_device(config.device))
        self.device, self.model = self.loaded.device, self.loaded.model
        self.pool = get_pooling(config.pooling)
        self.max_length = self.loaded.token_limit(config.max_length)
        self.data = sentence_data(texts, self.loaded.tokenizer, self.pool, self.max_length)
        std = getattr(self.model.config, "initializer_range", 0.02)
        self.head = (fresh_mlp(self.loaded.dim, std) if self.mlp else PoolerHead(None, "identity")).to(self.device)
        pooler = getattr(self.model, "pooler", None)
        if pooler is not None:  # the model's own pooler is in no loss here: frozen, it stays as it was (and DDP
            pooler.requires_grad_(False)  # need not look for unused parameters)
        self.word_head = load_word_head(self.loaded, config.word_head) if config.mlm_weight else None
        self.mlm = (
            MaskedLM(self.loaded.tokenizer, self.word_head, config.mlm_probability) if config.mlm_weight else None
        )
        self.n_bank, self.bank_attrs = 0, {}
        self.damaged: dict[int, str] = {}  # NM: the current global batch's damaged sentences, by item
        self.net: torch.nn.Module = TrainForward(self.model, self.head, self.pool)
        self._start(self._optimizer())
        if self.world > 1:
            torch.manual_seed(config.seed + 1_000_003 * self.rank)

    data_argument = "SENTENCES"

    def settings(self) -> dict:
        """What this run adds to :class:`TrainConfig` (recorded, and required equal on --resume)."""
        return {
            "objective": self.objective,
            "split": self.split,
            "mlp": self.mlp,
            "temperature": self.temperature,
            "deletion": self.deletion if self.objective == "nm" else None,
            "stop_gradient": self.stop_gradient if self.objective == "nm" else None,
        }

    def describe(self) -> str:
        config = self.config
        what = "SimCSE" if self.objective == "simcse" else f"Noise Matching ({self.deletion:.0%} of words deleted)"
        mlm = f" + {config.mlm_weight:g} x MLM" if config.mlm_weight else ""
        return (
            f"{what}{mlm}: {self.base_model} on {count(len(self.data), 'sentence')} ({config.pooling} pooling"
            f"{' + MLP' if self.mlp else ''}, temperature {self.temperature:g}, lr {config.lr:g}, "
            f"batch {config.batch_size}, {count(self.total_steps, 'step')}, seed {config.seed}"
        )

    def track_dev(self, criterion: Criterion) -> None:
        super().track_dev(criterion)
        self.loaded.info["head"] = "none"  # the MLP trains only: the checkpoint is evaluated without it

    def checkpoint_files(self, work_dir: Path) -> dict[str, Path]:
        return {"train_log.jsonl": work_dir / "log.jsonl"}

    # --- the resumable state: the MLP's weights and the dev tracker's beside the Trainer's --------------------

    def extra_state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        dev, best = super().extra_state()
        tensors = {f"best.{k}": v for k, v in best.items()}
        tensors.update({f"mlp.{k}": v for k, v in self.head.state_dict().items()})
        return {"settings": self.settings(), "dev": dev}, tensors

    def restore_extra_state(self, extra: dict, tensors: dict[str, torch.Tensor]) -> None:
        # the settings were compared with the saved run's before (state.check_resume)
        self.head.load_state_dict({k.removeprefix("mlp."): v for k, v in tensors.items() if k.startswith("mlp.")})
        best = {k.removeprefix("best."): v for k, v in tensors.items() if k.startswith("best.")}
        super().restore_extra_state(extra.get("dev", {}), best)

    # --- the loss ------------------------------------------------------------------------------------------

    def train_step(self, index: np.ndarray) -> torch.Tensor:
        """As :meth:`Trainer.train_step` (which sets ``self.sizes``, the global batch's shares); first (NM) its
        damaged sentences, drawn for the whole global batch so that every process damages its share as one
        process would."""
        if self.objective == "nm":
            texts = [self.data.texts[i] for i in index]
            self.damaged = dict(
                zip(index.tolist(), damage(texts, self.deletion, self.config.seed, self.step), strict=True)
            )
        return super().train_step(index)

    def _batch(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, bool]:
        """(input ids, attention mask, whether padded) of token id lists, padded on the host."""
        input_ids, attention_mask = pad_batch(ids, padding_id(self.loaded.tokenizer))
        return input_ids, attention_mask, has_padding(attention_mask)

    def _forward(self, batch, mlm_on=None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """(reps of ``batch``, the masked pass's token states, its MLM targets): with an MLM loss and ``mlm_on`` (a
        batch), a masked copy of ``mlm_on`` goes through the model in the same call (DDP sees one forward)."""
        input_ids, attention_mask, padded = batch
        device = self.device
        masked_ids = mlm_targets = masked_mask = None
        if self.mlm is not None and mlm_on is not None:
            masked_ids, labels = self.mlm.mask(mlm_on[0], mlm_on[1])
            masked_ids, mlm_targets = to_device(masked_ids, device), self.mlm.targets(labels, device)
            masked_mask = None if mlm_on is batch else to_device(mlm_on[1], device)
        out = self.net(
            to_device(input_ids, device),
            to_device(attention_mask, device),
            masked_ids=masked_ids,
            padded=padded,
            masked_mask=masked_mask,
        )
        return (*out, mlm_targets) if masked_ids is not None else (out, None, None)

    def loss_on(self, index: np.ndarray) -> torch.Tensor:
        """InfoNCE of this process's queries against the global batch's keys (+ λ · MLM)."""
        n = len(index)
        originals = [self.data.token_ids[i] for i in index]
        if self.objective == "simcse":
            views = self._batch(originals + originals)  # both views in one pass; the MLM masks both (SimCSE)
            reps, states, mlm_targets = self._forward(views, mlm_on=views)
            queries, keys = reps[:n], reps[n:]
        else:
            texts = [self.damaged[i] for i in index.tolist()]
            damaged_ids = tokenize(texts, self.loaded.tokenizer, self.pool, self.max_length)
            original, damaged = self._batch(originals), self._batch(damaged_ids)
            if self.stop_gradient == "none":  # both sides learn: one pass over both
                reps, states, mlm_targets = self._forward(self._batch(originals + damaged_ids), mlm_on=original)
                queries, keys = reps[:n], reps[n:]
            else:
                learns, fixed = (damaged, original) if self.stop_gradient == "original" else (original, damaged)
                with torch.no_grad():  # the stop-gradient side: no graph at all
                    targets = self._forward(fixed)[0]
                moving, states, mlm_targets = self._forward(learns, mlm_on=original)
                queries, keys = (targets, moving) if self.stop_gradient == "original" else (moving, targets)
        loss = info_nce(queries, keys, scale=1.0 / self.temperature, sizes=self.sizes)
        if states is not None:  # the masked pass ran (its targets are None when nothing was masked)
            loss = loss + self.config.mlm_weight * self.mlm.loss(states, mlm_targets)
        return loss

    def info(self) -> dict:
        return {
            **self.run_info(),
            "kind": "contrastive",
            "pooling": self.config.pooling,
            "train_pooling": self.config.pooling,
            "head": "none",  # the MLP is training-only
            "sentences": str(self.dictionary.resolve()),
            "training_sentences": len(self.data),
            **self.settings(),
            "split": self.split if self.dictionary.suffix.lower() == ".jsonl" else None,
            **self._dev_info(),
        }
