"""Plain sentences to train on (``tsdae``, ``simcse``) and the deletion noise both use.

The sentences: one per line of a text file, or the definitions of one split of a dictionary JSONL;
``--limit N`` keeps a seeded sample, as everywhere.

The noise (TSDAE's, Wang et al. 2021; Noise Matching's, Reiml 2023, which takes it from TSDAE): each word
is deleted with probability ``ratio`` (0.6 in both papers), at least one stays. sentence-transformers'
TSDAE example splits words with NLTK's ``word_tokenize``, whose Punkt model is a run-time download
(nothing may download here), so words are split here as the Treebank tokenizer would for this purpose
(runs of word characters, each punctuation mark on its own) and the rest joined by spaces (the subword
tokenizers of BERT and RoBERTa split punctuation off anyway). Callers draw from
``np.random.default_rng([seed, step])``, so a resumed run damages the same sentences the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..encoder.pooling import Pooling
from ..encoder.tokenize import tokenize
from ..errors import DefsentError
from ..formats.dictionary import seeded_sample
from .config import DICTIONARY_SPLITS, TrainConfig
from .data import TrainingData

_WORDS = re.compile(r"\w+|[^\w\s]")


def delete_words(text: str, ratio: float, rng: np.random.Generator) -> str:
    """``text`` with each word (or punctuation mark) deleted with probability ``ratio``; at least one stays."""
    words = _WORDS.findall(text)
    if not words:
        return text
    keep = rng.random(len(words)) > ratio
    if not keep.any():
        keep[rng.integers(len(words))] = True
    return " ".join(word for word, kept in zip(words, keep, strict=True) if kept)


def damage(texts: list[str], ratio: float, seed: int, step: int) -> list[str]:
    """``texts`` with words deleted, drawn from (seed, step): the same sentences damaged the same way on resume."""
    rng = np.random.default_rng([seed, step])
    return [delete_words(text, ratio, rng) for text in texts]


SENTENCES_ADVICE = (
    "; plain sentences are one per line (or a dictionary's definitions, from a file named .jsonl); scored pairs "
    "train with train-pairs or teacher"
)


def read_sentences(path: Path, split: str = "train") -> list[str]:
    """One sentence per line of a text file, or the definitions of a dictionary JSONL (``.jsonl``) of one split
    (default train, so that held-out definitions stay unseen; ``all``: every split)."""
    from ..formats.dictionary import iter_entries
    from ..formats.plain import plain_check
    from ..io import check_input, read_texts

    path = check_input(path)
    if split not in DICTIONARY_SPLITS:
        raise DefsentError(f"--split must be one of {', '.join(DICTIONARY_SPLITS)}, not {split!r}")
    if path.suffix.lower() == ".jsonl":
        texts = [d for entry in iter_entries(path) if split in ("all", entry.split) for d in entry.definitions]
    else:
        texts = read_texts([path], skip_blank=True, check_first=plain_check(SENTENCES_ADVICE))
    if not texts:
        raise DefsentError("holds no sentences", path=path)
    return texts


def sample_sentences(path: Path, split: str, config: TrainConfig) -> list[str]:
    """The sentences of ``path`` (:func:`read_sentences`), a seeded sample of ``config.limit`` of them."""
    texts = read_sentences(path, split)
    keep = seeded_sample(len(texts), config.limit, config.seed)
    return texts if keep is None else [texts[i] for i in keep]


def check_negatives(texts: list[str], batch_size: int, what: str, path: Path) -> None:
    """In-batch negatives (SimCSE, Noise Matching) need two sentences in a batch: with one sentence, or batches of
    one, the loss is 0 from the first step and nothing is learned; a one-line error instead of a quiet no-op."""
    distinct = len(set(texts))
    if batch_size < 2:
        raise DefsentError(
            f"{what} contrasts each sentence with the others of its batch, and --batch-size {batch_size} leaves "
            "none: the loss would be 0 and nothing learned; use --batch-size 2 or more (SimCSE: 64)"
        )
    if distinct < 2:
        raise DefsentError(
            f"{'holds one sentence' if len(texts) == 1 else f'holds one distinct sentence ({len(texts)} copies)'}: "
            f"{what} contrasts each sentence with the others of its batch, so there are no negatives, the loss "
            "would be 0 and nothing learned; give it at least two different sentences (many more to learn anything)",
            path=path,
        )


def sentence_data(texts: list[str], tokenizer, pooling: Pooling, max_length: int) -> TrainingData:
    """``texts`` tokenised as training data (no labels: the objectives make their own targets)."""
    return TrainingData(tokenize(texts, tokenizer, pooling, max_length), np.zeros(len(texts), dtype=np.int64), 0, texts)
