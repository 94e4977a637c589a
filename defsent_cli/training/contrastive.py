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
process scores its own queries, and ``Loop.train_step``'s weighting makes the gradient the one-process
gradient of the same global batch (2 processes give the weights of one). SimCSE's code gathers both views
and computes the whole matrix on every GPU, which under DDP's averaging divides the gradient by the number
of GPUs; ours does not.

Defaults: SimCSE's unsupervised BERT-base run (``run_unsup_example.sh`` on the Hugging Face Trainer's
defaults): batch 64, lr 3e-5, one epoch, max length 32, linear decay without warm-up, AdamW eps 1e-8 and no
weight decay, gradient clipping at 1.0, the model's own dropout (0.1). Batches are plain shuffles
(``--batching random``): length buckets would give each sentence negatives of its own length only. SimCSE
scores STS-B dev every 125 steps and keeps the best: ``--eval-every 125 --eval-on stsb-dev``.

The run is :class:`objective.ObjectiveRun`'s (issue 57): this module is the objective, :class:`Contrastive`, and
what it needs beyond a loss is generic: the MLP is its one module (trained, in the state as ``mlp.*``, not in the
checkpoint; its own parameter group at ``--lr`` as ``train``'s head, and outside the clipping, as it always
was), NM's damaged sentences are drawn for the whole global batch by ``step_begin``, and ``run.net`` is
:class:`forward.TrainForward` (model, pooling, MLP as one module for DDP), and its +MLM term is ``forward.forward``'s,
as every objective's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..encoder.head import PoolerHead, fresh_mlp
from ..encoder.tokenize import tokenize
from ..errors import DefsentError, count
from .config import TrainConfig
from .forward import TrainForward, batch, forward, noised
from .loop import ObjectiveRun
from .loss import info_nce
from .objective import Objective, register
from .sentences import check_negatives, damage, sample_sentences, sentence_data
from .specs import CONTRASTIVE

_OWN = CONTRASTIVE.settings  # its settings' defaults: the spec's (the command's options read them there too)


@register
class Contrastive(Objective):
    """SimCSE or Noise Matching (``objective``): in-batch negatives as the loss, a training-only MLP, + λ · MLM."""

    spec = CONTRASTIVE
    mlm = nm = True  # takes --mlm-weight and (objective simcse) --nm-weight (forward.py)
    clip_modules = False  # the MLP's gradients were never clipped: the encoder's alone (Loop.clipped)
    unit = "sentences"
    #: the model card's title and sentence, by objective
    cards = {
        "simcse": (
            "SimCSE fine-tune",
            "unsupervised SimCSE (Gao et al. 2021): two dropout views of each sentence are pulled together, the "
            "other sentences of the batch pushed away.",
        ),
        "nm": (
            "Noise Matching fine-tune",
            "Noise Matching (Reiml 2023): each sentence with words deleted is pulled onto the original sentence, the "
            "other sentences of the batch pushed away.",
        ),
    }

    def card(self) -> tuple[str, str]:
        return self.cards[self.variant]

    def __init__(
        self,
        objective: str = _OWN["objective"],
        split: str = _OWN["split"],
        mlp: bool | None = _OWN["mlp"],
        temperature: float = _OWN["temperature"],
        deletion: float = _OWN["deletion"],
        stop_gradient: str = _OWN["stop_gradient"],
    ):
        self.variant, self.split, self.temperature = objective, split, temperature
        self.deletion, self.stop_gradient = deletion, stop_gradient
        self.mlp = mlp  # None: with cls pooling (SimCSE's), resolved by check()
        self.damaged: dict[int, str] = {}  # NM: the current global batch's damaged sentences, by item

    def settings(self) -> dict:
        nm = self.variant == "nm"
        return {
            "objective": self.variant,
            "split": self.split,
            "mlp": self.mlp,
            "temperature": self.temperature,
            "deletion": self.deletion if nm else None,
            "stop_gradient": self.stop_gradient if nm else None,
        }

    def check(self, config: TrainConfig) -> None:
        """The settings beyond :class:`TrainConfig`, checked (one-line errors); ``--mlp``'s default follows the
        pooling."""
        super().check(config)
        if config.pooling not in self.spec.poolings:
            raise DefsentError(f"simcse pools with cls or mean, not {config.pooling!r}")
        self.mlp = config.pooling == "cls" if self.mlp is None else bool(self.mlp)

    def refusal(self, term: str) -> str | None:
        if term == "nm" and self.variant == "nm":
            return "--objective nm is Noise Matching already; --nm-weight adds it to another objective (simcse)"
        if term == "matryoshka" and self.mlp:
            return (
                "--matryoshka trains the widths of the vectors the model serves, and simcse's MLP (on with cls pooling) "
                "is training-only: add --no-mlp, or train with --pooling mean"
            )
        return super().refusal(term)

    def read(self, path: Path, config: TrainConfig) -> list[str]:
        texts = sample_sentences(path, self.split, config)
        check_negatives(texts, config.batch_size, "SimCSE" if self.variant == "simcse" else "Noise Matching", path)
        return texts

    def setup(self, run: ObjectiveRun, texts: list[str]) -> None:
        """The data, then (in this order: torch's draws) the MLP and the frozen pooler (the run then loads the MLM's
        word head)."""
        loaded = run.loaded
        run.data = sentence_data(texts, loaded.tokenizer, run.pool, run.max_length)
        std = getattr(run.model.config, "initializer_range", 0.02)
        self.head = (fresh_mlp(loaded.dim, std) if self.mlp else PoolerHead(None, "identity")).to(run.device)
        pooler = getattr(run.model, "pooler", None)
        if pooler is not None:  # the model's own pooler is in no loss here: frozen, it stays as it was (and DDP
            pooler.requires_grad_(False)  # need not look for unused parameters)
        run.head = self.head
        run.net = TrainForward(run.model, self.head, run.pool)

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"mlp": self.head}

    def param_groups(self, run: ObjectiveRun, encoder: list, modules: list) -> list[dict]:
        """The encoder's, then the MLP's at ``--head-lr`` (default ``--lr``), as ``train``'s head."""
        head = [{"params": modules, "lr": run.config.head_lr or run.config.lr}] if modules else []
        return [{"params": encoder}, *head]

    def step_begin(self, run: ObjectiveRun, index: np.ndarray) -> None:
        """NM: the damaged sentences of the whole global batch, so that every process damages its share as one
        process would."""
        if self.variant == "nm":
            texts = [run.data.texts[i] for i in index]
            self.damaged = dict(
                zip(index.tolist(), damage(texts, self.deletion, run.config.seed, run.step), strict=True)
            )

    # --- the loss ------------------------------------------------------------------------------------------

    def loss(self, run: ObjectiveRun, index: np.ndarray) -> torch.Tensor:
        """InfoNCE of this process's queries against the global batch's keys (+ λ · MLM, + λ · NM)."""
        n = len(index)
        originals = [run.data.token_ids[i] for i in index]
        if self.variant == "simcse":
            views = batch(run, originals + originals)  # both views in one pass; the MLM masks both (SimCSE)
            reps, aux = forward(run, views, mlm_on=views, nm_on=noised(run, index))  # +NM: the first views
            queries, keys = reps[:n], reps[n:]
        else:
            texts = [self.damaged[i] for i in index.tolist()]
            damaged_ids = tokenize(texts, run.loaded.tokenizer, run.pool, run.max_length)
            original, damaged = batch(run, originals), batch(run, damaged_ids)
            if self.stop_gradient == "none":  # both sides learn: one pass over both
                both = batch(run, originals + damaged_ids)
                reps, aux = forward(run, both, mlm_on=original)
                queries, keys = reps[:n], reps[n:]
            else:
                learns, fixed = (damaged, original) if self.stop_gradient == "original" else (original, damaged)
                with torch.no_grad():  # the stop-gradient side: no graph at all
                    targets = forward(run, fixed)[0]
                moving, aux = forward(run, learns, mlm_on=original)
                queries, keys = (targets, moving) if self.stop_gradient == "original" else (moving, targets)
        loss = info_nce(queries, keys, scale=1.0 / self.temperature, sizes=run.sizes)
        return loss if aux is None else loss + aux

    # --- the run's note, record and state --------------------------------------------------------------------

    def describe(self, run: ObjectiveRun) -> str:
        config = run.config
        what = "SimCSE" if self.variant == "simcse" else f"Noise Matching ({self.deletion:.0%} of words deleted)"
        mlm = f" + {config.mlm_weight:g} x MLM" if config.mlm_weight else ""
        return (
            f"{what}{mlm}: {run.base_model} on {count(len(run.data), 'sentence')} ({config.pooling} pooling"
            f"{' + MLP' if self.mlp else ''}, temperature {self.temperature:g}, lr {config.lr:g}, "
            f"batch {config.batch_size}, {count(run.total_steps, 'step')}, seed {config.seed}"
        )

    def record(self, run: ObjectiveRun) -> dict:
        return {
            "kind": self.kind,
            "pooling": run.config.pooling,
            "train_pooling": run.config.pooling,
            "head": "none",  # the MLP is training-only
            "sentences": str(run.dictionary.resolve()),
            "training_sentences": len(run.data),
            **self.settings(),
            "split": self.split if run.dictionary.suffix.lower() == ".jsonl" else None,
            **run.dev_info(),
        }

    def state_document(self) -> dict:
        """The settings and the dev tracker's document (``run`` fills ``dev`` in when it tracks one), as the state
        has always kept them."""
        return {"settings": self.settings(), "dev": {}}
