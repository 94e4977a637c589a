"""Build an entry bank from a dictionary and an encoder (DefSent+'s ``GenerateEntryEmbeddings.py``).

AC  = mean over an entry's definitions of the last-layer CLS state, no pooler.
AMP = mean over an entry's definitions of the masked mean of the last layer, special tokens included.

Both average the raw pooled vectors: a sentence-transformers folder's Normalize module, which ``encode``
and the evaluations apply by default (encoder/spec.py), is not applied here, as in DefSent+ (its bank
is the mean of unnormalised pooled states, and training's logits are dot products against it). So a bank built
with ``--dims N`` (each vector's leading N dimensions, ``space/dims.leading``; nothing re-normalised) is the leading
N columns of the full bank: the rows of either are the same.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
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
from ..formats.bank import BANK_FORMAT, KINDS, Bank, bank_output
from ..formats.dictionary import SPLITS, bank_rows, bank_size, check_splits
from ..io import sha256_file
from ..space.dims import check_dims, leading
from ..training.config import PART_DEFINITIONS


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
        """The float32 means, once: the sums are divided in place (no second float64 matrix)."""
        np.divide(self.sums, np.maximum(self.counts, 1)[:, None], out=self.sums)
        return self.sums.astype(np.float32)


@dataclass
class Definitions:
    """Every distinct definition once, and where each occurs: ``rows[i]`` is the bank row of occurrence i,
    ``text_of[i]`` the index of its text in ``texts``. (WordNet 3.0: 206,906 definitions, 116,697 distinct:
    a synset's gloss is shared by its lemmas.)"""

    texts: list[str]
    text_of: np.ndarray
    rows: np.ndarray


@dataclass
class Part:
    """A contiguous range of a bank's rows: the entries from row ``first`` on, with their definitions
    (``definitions.rows`` counted from ``first``)."""

    first: int
    entries: list[str]
    definitions: Definitions
    pos: list[str] | None = None  # each entry's parts of speech, comma-joined (formats/pos.py: entry_pos)


def bank_parts(
    path: Path, splits: Sequence[str], part_definitions: int | None = None, unique: bool = True
) -> Iterator[Part]:
    """The entries of ``splits`` (in bank order) in contiguous parts of about ``part_definitions`` definitions
    (an entry's definitions all in its part; None: one part), each distinct text of a part once.

    A text shared by entries of two parts is in both (DefSent+ averages per entry, so the bank is the same;
    it is encoded twice). The dictionary is read as a stream; ``unique``: a repeated entry is an error
    (:func:`~defsent_cli.formats.dictionary.bank_size` checks that in bounded memory beforehand)."""
    from ..formats.pos import entry_pos

    first, entries, index, text_of, rows, pos = 0, [], {}, [], [], []

    def part() -> Part:
        arrays = (np.asarray(text_of, dtype=np.int64), np.asarray(rows, dtype=np.int64))
        return Part(first, entries, Definitions(list(index), *arrays), pos)

    for row, entry in bank_rows(path, splits, unique=unique):
        if row is None:
            continue
        if part_definitions and len(rows) >= part_definitions:
            yield part()
            first, entries, index, text_of, rows, pos = row, [], {}, [], [], []
        entries.append(entry.entry)
        pos.append(entry_pos(entry.meta))
        for definition in entry.definitions:
            text_of.append(index.setdefault(definition, len(index)))
            rows.append(row - first)
    if entries:
        yield part()


def distinct_definitions(path: Path, splits: Sequence[str]) -> tuple[list[str], Definitions]:
    """The entries of ``splits`` (in bank order) and their definitions, each distinct text once."""
    for whole in bank_parts(path, splits):
        return whole.entries, whole.definitions
    return [], Definitions([], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


@dataclass
class BankJob:
    """What every part of one bank is encoded with: the model, the pooling of the kind, the token limit,
    the batch size and the encode loop (sharded across torchrun's processes or not)."""

    loaded: LoadedModel
    kind: str
    limit: int
    batch_size: int
    chunk_definitions: int
    shard: bool
    dims: int | None = None  # the leading dims kept (``--dims``); None: the model's width

    @property
    def width(self) -> int:
        return self.dims or self.loaded.dim

    def encode(self, part: Part, progress, task) -> EntryMeans | None:
        """The per-entry sums of one part (None on a torchrun rank other than 0, which holds no rows).

        Texts are encoded ``chunk_definitions`` at a time; each text's vector is added to every entry that has it."""
        pooling = get_pooling(KINDS[self.kind])
        run = encode_ids_sharded if self.shard else encode_ids
        definitions, texts = part.definitions, part.definitions.texts
        order = np.argsort(definitions.text_of, kind="stable")  # occurrences grouped by text, for each chunk
        by_text, rows = definitions.text_of[order], definitions.rows[order]
        means = EntryMeans(len(part.entries), self.width) if distributed.is_main() else None
        for start in range(0, len(texts), self.chunk_definitions):
            stop = min(start + self.chunk_definitions, len(texts))
            token_ids = tokenize(texts[start:stop], self.loaded.tokenizer, pooling, self.limit)
            vectors = run(self.loaded, token_ids, pooling, self.batch_size, progress, task)
            if vectors is not None:  # None: a rank other than 0 of a sharded run
                lo, hi = np.searchsorted(by_text, [start, stop])
                vectors = leading(vectors, self.dims, False)  # raw pooled vectors: none re-normalised
                means.add(rows[lo:hi], vectors[by_text[lo:hi] - start])
        if progress is not None:  # the bar counts definitions; a text shared within the part was encoded once
            progress.advance(task, len(definitions.rows) - len(texts))
        return means

    def attrs(self, dictionary: Path, sha256: str, splits: Sequence[str]) -> dict:
        """The provenance attributes of the bank (docs/formats.md); ``dims`` where it was built with ``--dims``."""
        return ({} if self.dims is None else {"dims": self.dims}) | {
            "format": BANK_FORMAT,
            "kind": self.kind,
            "pooling": KINDS[self.kind],
            "encoder": str(Path(self.loaded.path).resolve()),
            "dictionary": str(dictionary),
            "dictionary_sha256": sha256,
            "splits": ",".join(splits),
            "max_length": int(self.limit),
            "transform": "none",
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "defsent_version": __version__,
        }


def _job(
    loaded, kind, splits, batch_size, max_length, chunk_definitions, shard, dims=None
) -> tuple[BankJob, list[str]]:
    kind = kind.upper()
    if kind not in KINDS:
        raise DefsentError(f"unknown bank kind {kind!r}; use AC (CLS) or AMP (mean)")
    wanted = check_splits(splits)
    dims = check_dims(dims, loaded.dim, model=loaded.path)
    return BankJob(loaded, kind, loaded.token_limit(max_length), batch_size, chunk_definitions, shard, dims), wanted


def _progress_label(job: BankJob, definitions: int, entries: int) -> str:
    return f"embedding entries ({job.kind}; {definitions:,} definitions of {entries:,} entries)"


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
    dims: int | None = None,
) -> Bank | None:
    """The whole bank in memory (for a dictionary whose bank fits there; :func:`write_bank_streamed` has no
    such limit): every distinct definition of the chosen splits encoded once and averaged per entry (AC or AMP).

    A text shared by several entries is encoded once and added to each of them, so the bank is the one
    of encoding every (entry, definition) pair (up to float noise from other batch neighbours). Texts are
    encoded ``chunk_definitions`` at a time: memory is O(entries x dims) plus one chunk of vectors.
    ``shard``: under ``torchrun``, the processes share every chunk's batches and rank 0 averages and
    returns the bank; the other ranks return ``None``. ``dims``: each vector's leading dims (``--dims``).
    """
    job, wanted = _job(loaded, kind, splits, batch_size, max_length, chunk_definitions, shard, dims)
    dictionary = Path(dictionary)
    whole = next(bank_parts(dictionary, wanted), None)
    if whole is None:
        raise DefsentError(f"no entries in split(s) {', '.join(wanted)}", path=dictionary)
    with make_progress("definitions", show_progress if distributed.is_main() else False) as progress:
        label = _progress_label(job, len(whole.definitions.rows), len(whole.entries))
        task = progress.add_task(label, total=len(whole.definitions.rows))
        means = job.encode(whole, progress, task)
    if means is None:
        return None
    attrs = job.attrs(dictionary, sha256_file(dictionary), wanted)
    return Bank(whole.entries, means.means(), means.counts.astype(np.int32), attrs, pos=whole.pos)


@dataclass
class BankSummary:
    """What :func:`write_bank_streamed` wrote."""

    entries: int
    dim: int
    kind: str
    definitions: int
    from_texts: int = 0


def write_bank_streamed(
    dictionary: str | Path,
    loaded: LoadedModel,
    output: str | Path,
    kind: str = "AMP",
    splits: Sequence[str] = SPLITS,
    batch_size: int = 32,
    max_length: int | None = None,
    part_definitions: int = PART_DEFINITIONS,
    chunk_definitions: int = 8192,
    show_progress: bool | None = None,
    shard: bool = False,
    dictionary_name: str | None = None,
    texts=None,
    dims: int | None = None,
) -> BankSummary | None:
    """Build the bank of ``dictionary`` into ``output`` in memory bounded by one part (``embed-entries``).

    A first pass over the dictionary counts the bank's rows (and checks every line); then the entries are taken
    in contiguous parts of about ``part_definitions`` definitions (:func:`bank_parts`): all the definitions of a
    part are encoded (each distinct text of the part once) and averaged, and the part's rows are written into
    the output, which was created at its final size (:func:`~defsent_cli.formats.bank.bank_output`: free space
    checked, written beside ``output`` and renamed when complete). Memory: the model and one part, whatever
    the number of entries. The rows are those of :func:`build_bank` up to float noise (a text shared across
    two parts is encoded in each). ``shard``: under torchrun the processes share each chunk's batches and
    rank 0 writes; the other ranks return None. ``dictionary_name``: what the bank records as its dictionary
    (``-`` for one read from stdin) instead of the path. ``texts``: a
    :class:`~defsent_cli.banks.domain_text.DomainTexts`, whose lines replace the definitions of the entries
    they mention (``embed-entries --texts``); the bank records it (docs/formats.md). ``dims``: each vector's
    leading dims (``embed-entries --dims``), recorded as the attribute ``dims``.
    """
    job, wanted = _job(loaded, kind, splits, batch_size, max_length, chunk_definitions, shard, dims)
    dictionary = Path(dictionary)
    size = bank_size(dictionary, wanted)
    if not size.rows:
        raise DefsentError(f"no entries in split(s) {', '.join(wanted)}", path=dictionary)
    attrs = job.attrs(dictionary_name or dictionary, sha256_file(dictionary), wanted)
    total, from_texts = size.definitions, 0
    if texts is not None:
        total, from_texts = texts.occurrences(dictionary, wanted)
        attrs |= texts.attrs(from_texts)
    main = distributed.is_main()
    output_file = bank_output(output, size.rows, job.width, size.entry_bytes) if main else nullcontext()
    with (
        make_progress("definitions", show_progress if main else False) as progress,
        output_file as writer,
    ):
        task = progress.add_task(_progress_label(job, total, size.rows), total=total)
        parts = bank_parts(dictionary, wanted, part_definitions, unique=False)
        for part in parts if texts is None else texts.rewrite(parts):
            means = job.encode(part, progress, task)
            if writer is not None:
                writer.write(part.first, part.entries, means.means(), means.counts, part.pos)
        if writer is not None:
            writer.attrs.update(attrs)
    return BankSummary(size.rows, job.width, job.kind, total, from_texts) if main else None
