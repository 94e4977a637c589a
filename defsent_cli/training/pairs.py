"""Supervised bi-encoder training on scored sentence pairs, ``defsent train-pairs`` (SBERT's STS regression;
the bi-encoder of Reiml 2023, section 5.2, and of Augmented SBERT, Thakur et al. 2021).

Both sentences of a pair go through the same encoder (one forward pass of the two sides stacked) and are
pooled (mean by default, as SBERT); the loss compares their cosine with the gold score, rescaled to [0, 1]
by ``--max-score`` (5 for STS-B and SICK, as sentence-transformers' STS example divides by 5). The losses are
sentence-transformers', used as is (``compute_loss_from_embeddings``):

- ``cosine``: ``CosineSimilarityLoss``, the squared error between cos(u, v) and the score (SBERT);
- ``cosent``: ``CoSENTLoss`` (scale 20), a ranking loss over the pairs of the batch;
- ``angle``: ``AnglELoss`` (scale 20), CoSENT on angle differences in complex space.

Defaults are the thesis's (section 5.1, after BERT's authors): AdamW, lr 2e-5, weight decay 0.01, 10%
linear warm-up then linear decay, batch 16, three epochs, the model scored on STS-B dev after every epoch
and the best epoch kept (``--eval-every``: by default one epoch's steps).

Under torchrun ``cosine`` is a per-pair loss, so the usual weighting (``Loop.train_step``) gives the
one-process gradient; ``cosent`` and ``angle`` compare every pair of the batch with every other, which
a process holding part of the batch cannot, so they run in one process (a one-line error says so).

The run is :class:`objective.ObjectiveRun`'s (issue 57): :class:`Pairs` is the objective (and the base of
``teachers.Teacher``); ``run.net`` is :class:`forward.TrainForward` (model and pooling as one module for DDP).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .. import distributed
from ..encoder.head import PoolerHead
from ..encoder.tokenize import to_device, tokenize
from ..errors import DefsentError, count
from ..formats.dictionary import seeded_sample
from ..formats.pairs import read_scored_pairs
from .config import PAIR_LOSSES, TrainConfig
from .data import TrainingData
from .forward import TrainForward, batch, forward
from .loop import ObjectiveRun
from .noise_matching import Noised
from .objective import Objective, register
from .specs import PAIRS


def pair_loss(name: str):
    """The sentence-transformers loss object of ``--loss`` (its model argument unused: we pass embeddings)."""
    from sentence_transformers.sentence_transformer import losses

    if name == "cosine":
        return losses.CosineSimilarityLoss(None)
    if name == "cosent":
        return losses.CoSENTLoss(None, scale=20.0)
    if name == "angle":
        return losses.AnglELoss(None, scale=20.0)
    raise DefsentError(f"--loss must be one of {', '.join(PAIR_LOSSES)}, not {name!r}")


@register
class Pairs(Objective):
    """A bi-encoder regression on scored pairs: cos(u, v) against the rescaled score."""

    spec = PAIRS  # its name: who learns from the pairs, for the messages
    unit = "pairs"
    data_argument = "PAIRS"
    best_prefix = ""  # the kept-best weights are bare in the state, as they have always been
    freeze_pooler = True  # a bi-encoder pools the token states: the model's pooler is in no loss
    nm = True  # takes --nm-weight (forward.py): both sentences of each pair

    def __init__(self, loss: str = PAIRS.settings["loss"], max_score: float = PAIRS.settings["max_score"]):
        self.loss_name, self.max_score = loss, float(max_score)

    def card(self) -> tuple[str, str]:
        return (
            "bi-encoder trained on scored pairs",
            "a bi-encoder trained on scored sentence pairs (SBERT): the cosine of the two sentences' vectors learns "
            "the gold score.",
        )

    def settings(self) -> dict:
        return {"loss": self.loss_name, "max_score": self.max_score}

    def read(self, path: Path, config: TrainConfig) -> tuple[list[str], list[str], np.ndarray]:
        """(first sentences, second sentences, scores in [0, 1]) of the kept pairs, checked for the loss."""
        found = read_scored_pairs(path, self.max_score, self.name, getattr(self, "arch", None))
        self.loss_fn = pair_loss(self.loss_name)  # sentence-transformers: imported once the pairs are known to be good
        loss = self.loss_name
        if distributed.world() > 1 and loss != "cosine":
            raise DefsentError(
                f"--loss {loss} compares the pairs of a whole batch: run it in one process, or --loss cosine"
            )
        keep = seeded_sample(len(found), config.limit, config.seed)
        index = range(len(found)) if keep is None else keep
        sent1, sent2 = [found.sent1[i] for i in index], [found.sent2[i] for i in index]
        scores = np.asarray([found.scores[i] / self.max_score for i in index], dtype=np.float32)
        if loss != "cosine" and (config.batch_size < 2 or len(np.unique(scores)) < 2):
            # CoSENT and AnglE rank the pairs of a batch by score: one pair a batch, or one score, gives them nothing
            why = (
                f"--batch-size {config.batch_size} puts one pair in a batch"
                if config.batch_size < 2
                else f"every pair{' kept' if config.limit else ''} has the same score"
            )
            raise DefsentError(
                f"--loss {loss} learns from the order of the scores of the pairs in a batch, and {why}: the loss would "
                "be 0 and nothing learned; use --batch-size 2 or more and pairs of different scores, or --loss cosine",
                path=None if config.batch_size < 2 else path,
            )
        return sent1, sent2, scores

    def setup(self, run: ObjectiveRun, items) -> None:
        sent1, sent2, scores = items
        tokenizer = run.loaded.tokenizer
        # the batches are cut on the first sentences' lengths; the second sides travel with them
        run.data = TrainingData(tokenize(sent1, tokenizer, run.pool, run.max_length), scores, 0, sent1)
        self.second, self.texts2 = tokenize(sent2, tokenizer, run.pool, run.max_length), sent2
        run.head = PoolerHead(None, "identity")
        pooler = getattr(run.model, "pooler", None)
        if pooler is not None and self.freeze_pooler:  # in no loss here: frozen, it stays as it was
            pooler.requires_grad_(False)
        run.net = self.pair_net(run)

    def pair_net(self, run: ObjectiveRun) -> torch.nn.Module:
        """Everything that trains, as the one module DDP wraps."""
        return TrainForward(run.model, run.head, run.pool)

    def loss(self, run: ObjectiveRun, index: np.ndarray) -> torch.Tensor:
        """The loss of cos(u, v) against the rescaled scores, both sides in one pass."""
        ids = [run.data.token_ids[i] for i in index] + [self.second[i] for i in index]
        both = None
        if run.nm is not None:  # +NM: both sides' sentences, each drawn by its item and side
            texts = [run.data.texts[i] for i in index] + [self.texts2[i] for i in index]
            keys = [(int(i), 0) for i in index] + [(int(i), 1) for i in index]
            both = Noised(texts, keys, per_item=2)
        reps, aux = forward(run, batch(run, ids), nm_on=both)
        reps = reps.float()
        labels = to_device(torch.from_numpy(run.data.labels[index]), run.device)
        with torch.autocast(reps.device.type, enabled=False):
            loss = self.loss_fn.compute_loss_from_embeddings([reps[: len(index)], reps[len(index) :]], labels)
        return loss if aux is None else loss + aux

    def describe(self, run: ObjectiveRun) -> str:
        config = run.config
        return (
            f"train-pairs: {run.base_model} on {count(len(run.data), 'scored pair')} ({self.loss_name} loss, "
            f"{config.pooling} pooling, lr {config.lr:g}, batch {config.batch_size}, {count(run.total_steps, 'step')}, "
            f"seed {config.seed}"
        )

    def record(self, run: ObjectiveRun) -> dict:
        return {
            "kind": self.kind,
            "pooling": run.config.pooling,
            "train_pooling": run.config.pooling,
            "head": "none",
            "pairs": str(run.dictionary.resolve()),
            "training_pairs": len(run.data),
            **self.settings(),
            **run.dev_info(),
        }

    def state_document(self) -> dict:
        """The settings and the dev tracker's document (``run`` fills ``dev`` in when it tracks one)."""
        return {"settings": self.settings(), "dev": {}}
