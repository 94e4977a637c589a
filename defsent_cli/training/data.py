"""What one run trains on: every train-split definition with its entry's bank row, and the
batches of each epoch (a pure function of the seed, the epoch and the lengths)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..dictionary.build import word_targets
from ..encoder.pooling import Pooling
from ..encoder.tokenize import tokenize
from ..formats.dictionary import seeded_sample, split_definitions
from ..log import note
from .config import TrainConfig


@dataclass
class TrainingData:
    """Token ids of every training definition and the bank row of its entry."""

    token_ids: list[list[int]]
    labels: np.ndarray
    n_entries_trained: int = 0
    texts: list[str] = field(default_factory=list, repr=False)
    skipped_entries: int = 0  # objective defsent: train-split entries that are not one token

    def __len__(self) -> int:
        return len(self.labels)


def _sampled(texts: list[str], labels: np.ndarray, config: TrainConfig) -> tuple[list[str], np.ndarray]:
    """A seeded sample of ``config.limit`` definitions (all of them without a limit)."""
    keep = seeded_sample(len(texts), config.limit, config.seed)
    if keep is not None:
        texts, labels = [texts[i] for i in keep], labels[keep]
    return texts, labels


def training_data(
    dictionary: Path, bank_splits: Collection[str], tokenizer, pooling: Pooling, max_length: int, config: TrainConfig
) -> TrainingData:
    """The train split's definitions (a seeded sample of ``config.limit`` of them), tokenised. The dictionary is
    the one the bank's check matched (``check_bank_matches``), so not checked for repeated entries again."""
    texts, rows, n_entries = split_definitions(dictionary, bank_splits, "train", unique=False)
    texts, labels = _sampled(texts, np.asarray(rows, dtype=np.int64), config)
    return TrainingData(tokenize(texts, tokenizer, pooling, max_length), labels, n_entries, texts)


def word_training_data(dictionary: Path, tokenizer, pooling: Pooling, max_length: int, config: TrainConfig):
    """Objective defsent: the train split's definitions of single-token entries, labelled with that token's id.

    Entries of several tokens are skipped (DefSent trains on single-token entries only), with a note saying
    how many: ``build-dict --single-token MODEL`` keeps exactly the entries this uses (the same function decides).
    """
    found = word_targets(dictionary, "train", tokenizer)
    if found.skipped:
        note(
            f"{found.skipped:,} of {found.entries + found.skipped:,} train entries are not a single token of the "
            f"model's vocabulary (e.g. {', '.join(map(repr, found.skipped_examples))}) and are skipped; "
            "build-dict --single-token MODEL keeps only the ones that are"
        )
    texts, labels = _sampled(found.texts, np.asarray(found.token_ids, dtype=np.int64), config)
    ids = tokenize(texts, tokenizer, pooling, max_length)
    return TrainingData(ids, labels, found.entries, texts, skipped_entries=found.skipped)


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


class Schedule:
    """Which definitions step ``s`` trains on, over any number of epochs (one epoch's batches cached)."""

    def __init__(self, data: TrainingData, config: TrainConfig):
        self.lengths = np.asarray([len(ids) for ids in data.token_ids])
        self.config = config
        self.per_epoch = -(-len(data) // config.batch_size)
        self._epoch, self._batches = -1, []

    def total_steps(self) -> int:
        total = self.per_epoch * self.config.epochs
        return min(total, self.config.max_steps) if self.config.max_steps else total

    def batch(self, step: int) -> np.ndarray:
        epoch, index = divmod(step, self.per_epoch)
        if epoch != self._epoch:
            self._epoch, self._batches = epoch, epoch_batches(self.lengths, self.config, epoch)
        return self._batches[index]
