"""The HDF5 entry bank (DESIGN.md): build it from a dictionary (AC / AMP), read it, check it.

AC  = mean over an entry's definitions of the last-layer CLS state, no pooler.
AMP = mean over an entry's definitions of the masked mean of the last layer,
      special tokens included.
Both as DefSent+'s ``GenerateEntryEmbeddings.py`` defines them.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__, distributed
from .console import make_progress
from .encoding import encode_ids, encode_ids_sharded, tokenize
from .errors import DefsentError
from .io import atomic_path, iter_jsonl, sha256_file
from .models import LoadedModel
from .pooling import get_pooling

BANK_FORMAT = "defsent-bank/1"
KIND_POOLING = {"AC": "cls", "AMP": "mean"}
SPLITS = ("train", "dev", "test")


@dataclass
class Bank:
    """Entry strings, their vectors, how many definitions each averages, and provenance."""

    entries: list[str]
    vectors: np.ndarray
    counts: np.ndarray
    attrs: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return str(self.attrs.get("kind", ""))

    def __len__(self) -> int:
        return len(self.entries)


def iter_dictionary(path: str | Path) -> Iterator[tuple[int, str, list[str], str]]:
    """Stream ``(line, entry, definitions, split)`` from a dictionary JSONL, validating each line."""
    for number, obj in iter_jsonl(path):
        entry, definitions, split = obj.get("entry"), obj.get("definitions"), obj.get("split", "train")
        if not isinstance(entry, str) or not entry.strip():
            raise DefsentError("'entry' must be a non-empty string", path=path, line=number)
        if not isinstance(definitions, list) or not definitions or not all(isinstance(d, str) for d in definitions):
            raise DefsentError("'definitions' must be a non-empty list of strings", path=path, line=number)
        if split not in SPLITS:
            raise DefsentError(f"'split' must be one of {', '.join(SPLITS)}", path=path, line=number)
        yield number, entry, definitions, split


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


def _definition_chunks(path: Path, splits: set[str], chunk: int) -> Iterator[tuple[list[int], list[str]]]:
    ids: list[int] = []
    texts: list[str] = []
    entry_id = 0
    for _, _, definitions, split in iter_dictionary(path):
        if split not in splits:
            continue
        for definition in definitions:
            ids.append(entry_id)
            texts.append(definition)
        entry_id += 1
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
    if kind not in KIND_POOLING:
        raise DefsentError(f"unknown bank kind {kind!r}; use AC (CLS) or AMP (mean)")
    unknown = set(splits) - set(SPLITS)
    if unknown:
        raise DefsentError(f"unknown split(s) {', '.join(sorted(unknown))}; use {', '.join(SPLITS)}")
    dictionary = Path(dictionary)
    wanted = set(splits)
    entries: list[str] = []
    n_definitions = 0
    for _, entry, definitions, split in iter_dictionary(dictionary):
        if split in wanted:
            entries.append(entry)
            n_definitions += len(definitions)
    if not entries:
        raise DefsentError(f"no entries in split(s) {', '.join(splits)}", path=dictionary)
    pooling = get_pooling(KIND_POOLING[kind])
    limit = max_length or loaded.max_length
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
        "splits": ",".join(s for s in SPLITS if s in wanted),
        "max_length": int(limit),
        "transform": "none",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "defsent_version": __version__,
    }
    return Bank(entries, means.means(), means.counts.astype(np.int32), attrs)


def write_bank(path: str | Path, bank: Bank) -> None:
    """Atomically write a bank as HDF5 (``entries``, ``vectors``, ``counts`` + attrs)."""
    import h5py

    with atomic_path(path) as tmp, h5py.File(tmp, "w") as h5:
        h5.create_dataset("entries", data=bank.entries, dtype=h5py.string_dtype("utf-8"))
        h5.create_dataset("vectors", data=np.asarray(bank.vectors, dtype=np.float32))
        h5.create_dataset("counts", data=np.asarray(bank.counts, dtype=np.int32))
        for key, value in bank.attrs.items():
            h5.attrs[key] = value


def read_bank(path: str | Path, dtype=np.float32) -> Bank:
    """Read a bank written by :func:`write_bank`; anything else is a clear error.

    ``dtype`` (e.g. ``np.float16``): HDF5 converts the vectors while reading, so
    no float32 copy of the whole matrix is ever held.
    """
    import h5py

    path = Path(path)
    if not path.is_file():
        raise DefsentError("no such bank file", path=path)
    try:
        with h5py.File(path, "r") as h5:
            if h5.attrs.get("format") != BANK_FORMAT:
                raise DefsentError(f"not a defsent bank (format attribute is not {BANK_FORMAT!r})", path=path)
            entries = [e.decode("utf-8") if isinstance(e, bytes) else str(e) for e in h5["entries"][()]]
            vectors = np.asarray(h5["vectors"].astype(np.dtype(dtype))[()])
            counts = np.asarray(h5["counts"][()], dtype=np.int32)
            attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in h5.attrs.items()}
    except OSError as exc:
        raise DefsentError(f"cannot read HDF5 ({exc})", path=path) from None
    except KeyError as exc:
        raise DefsentError(f"bank is missing dataset {exc}", path=path) from None
    if vectors.shape[0] != len(entries) or counts.shape[0] != len(entries):
        raise DefsentError("bank datasets disagree in length", path=path)
    return Bank(entries, vectors, counts, attrs)


def check_bank_matches(bank: Bank, dictionary: str | Path, bank_path: str | Path = "bank") -> None:
    """Fail unless the bank was built from exactly this dictionary (SHA-256 and entry strings)."""
    dictionary = Path(dictionary)
    digest = sha256_file(dictionary)
    if bank.attrs.get("dictionary_sha256") != digest:
        raise DefsentError(
            f"bank was built from another dictionary (SHA-256 differs from {dictionary}); rebuild it with embed-entries",
            path=bank_path,
        )
    wanted = set(str(bank.attrs.get("splits", ",".join(SPLITS))).split(","))
    entries = [entry for _, entry, _, split in iter_dictionary(dictionary) if split in wanted]
    if entries != bank.entries:
        raise DefsentError(f"bank entries do not match {dictionary} line by line; rebuild it", path=bank_path)
