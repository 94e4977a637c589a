"""Build an entry bank from a dictionary and an encoder (DefSent+'s ``GenerateEntryEmbeddings.py``).

AC  = mean over an entry's definitions of the last-layer CLS state, no pooler.
AMP = mean over an entry's definitions of the masked mean of the last layer, special tokens included.

Both average the raw pooled vectors: a sentence-transformers folder's Normalize module, which ``encode``
and the evaluations apply by default (encoder/spec.py), is not applied here, as in DefSent+ (its bank
is the mean of unnormalised pooled states, and training's logits are dot products against it).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__, distributed
from ..console import make_progress
from ..encoder.encode import encode_ids, encode_ids_sharded
from ..encoder.models import LoadedModel
from ..encoder.pooling import get_pooling
from ..encoder.tokenize import tokenize
from ..errors import DefsentError
from ..formats.bank import BANK_FORMAT, KINDS, Bank
from ..formats.dictionary import SPLITS, bank_rows, check_splits
from ..io import sha256_file


class EntryMeans:
    """Running per-entry sums of definition vectors; ``means()`` gives the bank rows."""

    def __init__(self, n_entries: int, dim: int):
        self.sums = np.zeros((n_entries, dim), dtype=np.float64)
        self.counts = np.zeros(n_entries, dtype=np.int64)

    def add(self, entry_ids: Sequence[int], vectors: np.ndarray) -> None:
        ids = np.asarray(entry_ids, dtype=np.int64)
        np.add.at(self.sums, ids, vectors)
        np.add.at(self.counts, ids, 1)

    def means(self) -> np.ndarray:
        return (self.sums / np.maximum(self.counts, 1)[:, None]).astype(np.float32)


@dataclass
class Definitions:
    """Every distinct definition once, and where each occurs: ``rows[i]`` is the bank row of occurrence i,
    ``text_of[i]`` the index of its text in ``texts``. (WordNet 3.0: 206,906 definitions, 116,697 distinct:
    a synset's gloss is shared by its lemmas.)"""

    texts: list[str]
    text_of: np.ndarray
    rows: np.ndarray


def distinct_definitions(path: Path, splits: Sequence[str]) -> tuple[list[str], Definitions]:
    """The entries of ``splits`` (in bank order) and their definitions, each distinct text once."""
    entries: list[str] = []
    index: dict[str, int] = {}
    text_of: list[int] = []
    rows: list[int] = []
    for row, entry in bank_rows(path, splits):
        if row is None:
            continue
        entries.append(entry.entry)
        for definition in entry.definitions:
            text_of.append(index.setdefault(definition, len(index)))
            rows.append(row)
    return entries, Definitions(list(index), np.asarray(text_of, dtype=np.int64), np.asarray(rows, dtype=np.int64))


def build_bank(
    dictionary: str | Path,
    loaded: LoadedModel,
    kind: str = "AMP",
    splits: Sequence[str] = SPLITS,
    batch_size: int = 32,
    max_length: int | None = None,
    chunk_definitions: int = 8192,
    show_progress: bool | None = None,
    shard: bool = False,
) -> Bank | None:
    """Encode every distinct definition of the chosen splits once and average per entry (AC or AMP).

    A text shared by several entries is encoded once and added to each of them, so the bank is the one
    of encoding every (entry, definition) pair (up to float noise from other batch neighbours). Texts are
    encoded ``chunk_definitions`` at a time: memory is O(entries x dims) plus one chunk of vectors.
    ``shard``: under ``torchrun``, the processes share every chunk's batches and rank 0 averages and
    returns the bank; the other ranks return ``None``.
    """
    kind = kind.upper()
    if kind not in KINDS:
        raise DefsentError(f"unknown bank kind {kind!r}; use AC (CLS) or AMP (mean)")
    wanted = check_splits(splits)
    dictionary = Path(dictionary)
    entries, definitions = distinct_definitions(dictionary, wanted)
    if not entries:
        raise DefsentError(f"no entries in split(s) {', '.join(wanted)}", path=dictionary)
    pooling = get_pooling(KINDS[kind])
    limit = loaded.token_limit(max_length)
    means = EntryMeans(len(entries), loaded.dim)
    run = encode_ids_sharded if shard else encode_ids
    order = np.argsort(definitions.text_of, kind="stable")  # occurrences grouped by text, for each chunk
    by_text, rows = definitions.text_of[order], definitions.rows[order]
    texts = definitions.texts
    with make_progress("definitions", show_progress if distributed.is_main() else False) as progress:
        label = f"embedding entries ({kind}; {len(texts):,} distinct of {len(rows):,} definitions)"
        task = progress.add_task(label, total=len(texts))
        for start in range(0, len(texts), chunk_definitions):
            stop = min(start + chunk_definitions, len(texts))
            token_ids = tokenize(texts[start:stop], loaded.tokenizer, pooling, limit)
            vectors = run(loaded, token_ids, pooling, batch_size, progress, task)
            if vectors is not None:  # None: a rank other than 0 of a sharded run
                lo, hi = np.searchsorted(by_text, [start, stop])
                means.add(rows[lo:hi], vectors[by_text[lo:hi] - start])
    if shard and not distributed.is_main():
        return None
    attrs = {
        "format": BANK_FORMAT,
        "kind": kind,
        "pooling": pooling.name,
        "encoder": str(Path(loaded.path).resolve()),
        "dictionary": str(dictionary),
        "dictionary_sha256": sha256_file(dictionary),
        "splits": ",".join(wanted),
        "max_length": int(limit),
        "transform": "none",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "defsent_version": __version__,
    }
    return Bank(entries, means.means(), means.counts.astype(np.int32), attrs)
