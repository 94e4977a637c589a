"""Build an entry bank from a dictionary and an encoder (DefSent+'s ``GenerateEntryEmbeddings.py``).

AC  = mean over an entry's definitions of the last-layer CLS state, no pooler.
AMP = mean over an entry's definitions of the masked mean of the last layer, special tokens included.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Sequence
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


def _definition_chunks(path: Path, splits: Sequence[str], chunk: int) -> Iterator[tuple[list[int], list[str]]]:
    """``(bank rows, definitions)`` in chunks of about ``chunk`` definitions."""
    ids: list[int] = []
    texts: list[str] = []
    for row, entry in bank_rows(path, splits):
        if row is None:
            continue
        ids.extend([row] * len(entry.definitions))
        texts.extend(entry.definitions)
        if len(texts) >= chunk:
            yield ids, texts
            ids, texts = [], []
    if texts:
        yield ids, texts


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
    """Encode every definition of the chosen splits and average per entry (AC or AMP).

    Streams the dictionary in chunks, so memory is O(entries x dims) plus one chunk.
    ``shard``: under ``torchrun``, the processes share every chunk's batches and
    rank 0 averages and returns the bank; the other ranks return ``None``.
    """
    kind = kind.upper()
    if kind not in KINDS:
        raise DefsentError(f"unknown bank kind {kind!r}; use AC (CLS) or AMP (mean)")
    wanted = check_splits(splits)
    dictionary = Path(dictionary)
    entries: list[str] = []
    n_definitions = 0
    for row, entry in bank_rows(dictionary, wanted):
        if row is not None:
            entries.append(entry.entry)
            n_definitions += len(entry.definitions)
    if not entries:
        raise DefsentError(f"no entries in split(s) {', '.join(wanted)}", path=dictionary)
    pooling = get_pooling(KINDS[kind])
    limit = loaded.token_limit(max_length)
    means = EntryMeans(len(entries), loaded.dim)
    run = encode_ids_sharded if shard else encode_ids
    with make_progress("definitions", show_progress if distributed.is_main() else False) as progress:
        task = progress.add_task(f"embedding entries ({kind})", total=n_definitions)
        for ids, texts in _definition_chunks(dictionary, wanted, chunk_definitions):
            token_ids = tokenize(texts, loaded.tokenizer, pooling, limit)
            vectors = run(loaded, token_ids, pooling, batch_size, progress, task)
            if vectors is not None:  # None: a rank other than 0 of a sharded run
                means.add(ids, vectors)
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
