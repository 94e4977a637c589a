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

Under torchrun ``cosine`` is a per-pair loss, so the usual weighting (``Trainer.train_step``) gives the
one-process gradient; ``cosent`` and ``angle`` compare every pair of the batch with every other, which
a process holding part of the batch cannot, so they run in one process (a one-line error says so).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch

from .. import distributed
from ..encoder.head import PoolerHead
from ..encoder.models import load_model
from ..encoder.pooling import get_pooling
from ..encoder.tokenize import has_padding, pad_batch, to_device, tokenize
from ..encoder.tokenize import pad_id as padding_id
from ..errors import DefsentError, count
from ..evaluation.criteria import Criterion
from ..formats.dictionary import seeded_sample
from ..formats.pairs import read_scored_pairs
from .config import PAIR_LOSSES, TrainConfig
from .data import TrainingData
from .trainer import Trainer, TrainForward


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


class PairsTrainer(Trainer):
    """A bi-encoder regression run: the :class:`Trainer` loop, state and DDP on scored pairs."""

    def __init__(
        self, pairs: Path, base_model: Path, config: TrainConfig, loss: str = "cosine", max_score: float = 5.0
    ):
        self.config = config.validate()
        self.loss_name, self.max_score = loss, float(max_score)
        self.dictionary, self.base_model, self.bank_path = Path(pairs), Path(base_model), None
        found = read_scored_pairs(self.dictionary, self.max_score, self.command, getattr(self, "arch", None))
        self.loss_fn = pair_loss(loss)  # sentence-transformers: imported once the pairs are known to be good
        self.rank, self.world = distributed.rank(), distributed.world()
        if self.world > 1 and loss != "cosine":
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
                path=None if config.batch_size < 2 else pairs,
            )
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        self.loaded = load_model(base_model, distributed.local_device(config.device), self.regression_head)
        self.device, self.model = self.loaded.device, self.loaded.model
        self.pool = get_pooling(config.pooling)
        self.max_length = self.loaded.token_limit(config.max_length)
        tokenizer = self.loaded.tokenizer
        # the batches are cut on the first sentences' lengths; the second sides travel with them
        self.data = TrainingData(tokenize(sent1, tokenizer, self.pool, self.max_length), scores, 0, sent1)
        self.second, self.texts2 = tokenize(sent2, tokenizer, self.pool, self.max_length), sent2
        self.head, self.word_head, self.mlm = PoolerHead(None, "identity"), None, None
        pooler = getattr(self.model, "pooler", None)
        if pooler is not None and self.freeze_pooler:  # in no loss here: frozen, it stays as it was
            pooler.requires_grad_(False)
        self.n_bank, self.bank_attrs = 0, {}
        self.net: torch.nn.Module = self.pair_net()
        self._start(self._optimizer())
        if self.world > 1:
            torch.manual_seed(config.seed + 1_000_003 * self.rank)

    command = "train-pairs"  # who learns from the pairs, for the messages
    freeze_pooler = True  # a bi-encoder pools the token states: the model's pooler is in no loss
    regression_head = False  # the model that trains is the base model itself (a Cross-Encoder adds a head)

    def pair_net(self) -> torch.nn.Module:
        """Everything that trains, as the one module DDP wraps."""
        return TrainForward(self.model, self.head, self.pool)

    data_argument = "PAIRS"

    def settings(self) -> dict:
        return {"loss": self.loss_name, "max_score": self.max_score}

    def describe(self) -> str:
        config = self.config
        return (
            f"train-pairs: {self.base_model} on {count(len(self.data), 'scored pair')} ({self.loss_name} loss, "
            f"{config.pooling} pooling, lr {config.lr:g}, batch {config.batch_size}, {count(self.total_steps, 'step')}, "
            f"seed {config.seed}"
        )

    def track_dev(self, criterion: Criterion) -> None:
        super().track_dev(criterion)
        self.loaded.info["head"] = "none"

    def checkpoint_files(self, work_dir: Path) -> dict[str, Path]:
        return {"train_log.jsonl": work_dir / "log.jsonl"}

    def extra_state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        dev, best = super().extra_state()
        return {"settings": self.settings(), "dev": dev}, best

    def restore_extra_state(self, extra: dict, tensors: dict[str, torch.Tensor]) -> None:
        # the settings were compared with the saved run's before (state.check_resume)
        super().restore_extra_state(extra.get("dev", {}), tensors)

    def loss_on(self, index: np.ndarray) -> torch.Tensor:
        """The loss of cos(u, v) against the rescaled scores, both sides in one pass."""
        ids = [self.data.token_ids[i] for i in index] + [self.second[i] for i in index]
        input_ids, attention_mask = pad_batch(ids, padding_id(self.loaded.tokenizer))
        padded = has_padding(attention_mask)
        reps = self.net(to_device(input_ids, self.device), to_device(attention_mask, self.device), padded=padded)
        reps = reps.float()
        labels = to_device(torch.from_numpy(self.data.labels[index]), self.device)
        with torch.autocast(reps.device.type, enabled=False):
            return self.loss_fn.compute_loss_from_embeddings([reps[: len(index)], reps[len(index) :]], labels)

    def info(self) -> dict:
        return {
            **self.run_info(),
            "kind": "pairs",
            "pooling": self.config.pooling,
            "train_pooling": self.config.pooling,
            "head": "none",
            "pairs": str(self.dictionary.resolve()),
            "training_pairs": len(self.data),
            **self.settings(),
            **self._dev_info(),
        }
