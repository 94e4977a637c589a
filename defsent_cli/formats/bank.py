"""The entry bank file (docs/formats.md, "Entry bank"): HDF5 with ``entries``, ``vectors``, ``counts``
and provenance attributes. Row i of ``vectors`` belongs to ``entries[i]``; rows follow the
dictionary's order (see :func:`defsent_cli.formats.dictionary.bank_rows`).

A bank is used whole (:func:`read_bank`: a :class:`Bank` in memory) or from its file a range of rows at a time
(:func:`open_bank`: a :class:`BankFile`; a shard of the bank under ``train --shard-bank``, chunks of rows in the
reverse dictionary), and written whole (:func:`write_bank`) or streamed to disk part by part
(:func:`bank_output`: ``embed-entries``, ``ica --fit-rows``), so no command needs the whole matrix in memory
unless it says so.

Building a bank (encoding definitions) is :mod:`defsent_cli.banks.entry_bank`; this module
only reads, writes and checks the file.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DefsentError
from ..io import (
    checked_file,
    hdf5_input,
    hdf5_output,
    hdf5_stream,
    is_stdout,
    is_text,
    refuse_stdout,
    reserve_space,
    sha256_file,
)
from .dictionary import SPLITS, bank_rows

if TYPE_CHECKING:  # numpy (and h5py) only where a bank is read or written: `embed-entries --help` lists KINDS
    import numpy as np

BANK_FORMAT = "defsent-bank/1"
#: Bank kinds and the pooling of the definition vectors they average (DefSent+'s AC and AMP).
KINDS = {"AC": "cls", "AMP": "mean"}
BANK_SUFFIXES = (".h5", ".hdf5")
#: The optional dataset of each row's parts of speech (``noun,adj``; ``""``: none known), written by embed-entries
#: from the dictionary's ``meta`` (formats/pos.py); a bank without it, or with every row empty, has none.
POS_DATASET = "pos"


class BankHeader:
    """What a bank in memory (:class:`Bank`) and a bank on disk (:class:`BankFile`) both tell: provenance
    (``attrs``), kind and splits."""

    attrs: dict

    @property
    def kind(self) -> str:
        return str(self.attrs.get("kind", ""))

    @property
    def splits(self) -> set[str]:
        """The dictionary splits whose entries the bank holds."""
        return set(str(self.attrs.get("splits", ",".join(SPLITS))).split(","))


@dataclass
class Bank(BankHeader):
    """Entry strings, their vectors, how many definitions each averages, and provenance."""

    entries: list[str]
    vectors: np.ndarray
    counts: np.ndarray
    attrs: dict = field(default_factory=dict)
    source: Path | None = None  # the file it was read from (for messages; not stored)
    pos: list[str] | None = None  # each row's parts of speech (:data:`POS_DATASET`); None: none known

    def __len__(self) -> int:
        return len(self.entries)

    def all_entries(self) -> list[str]:
        return list(self.entries)

    def all_counts(self) -> np.ndarray:
        return self.counts

    def all_pos(self) -> list[str] | None:
        return self.pos if self.pos and any(self.pos) else None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def iter_rows(self, chunk: int, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, rows)`` over ``start`` .. ``stop``, ``chunk`` rows at a time (views), as :class:`BankFile`."""
        stop = len(self) if stop is None else stop
        for first in range(start, stop, chunk):
            yield first, self.vectors[first : min(first + chunk, stop)]

    def iter_entries(self) -> Iterator[str]:
        return iter(self.entries)

    def entries_at(self, rows) -> list[str]:
        return [self.entries[int(i)] for i in rows]

    def rows_at(self, rows) -> np.ndarray:
        """The vectors of these rows (any order, repeats allowed), as :class:`BankFile`."""
        return self.vectors[rows]


def check_bank_path(path: str | Path) -> Path:
    """A bank output must be named .h5 / .hdf5."""
    path = Path(path)
    if is_stdout(path):
        raise DefsentError(refuse_stdout("file", "a bank (HDF5)"))
    if path.suffix.lower() not in BANK_SUFFIXES:
        raise DefsentError("a bank is HDF5: give the output an .h5 suffix", path=path)
    return path


def write_bank(path: str | Path, bank: Bank) -> None:
    """Atomically write a bank as HDF5 (``entries``, ``vectors``, ``counts``, ``pos`` where it has them + attrs),
    built in memory:
    for banks that fit in memory; :func:`bank_output` streams a larger one to disk."""
    import h5py
    import numpy as np

    _refuse_written(np.asarray(bank.vectors, dtype=np.float32), bank.entries)
    with hdf5_output(path) as h5:
        h5.create_dataset("entries", data=bank.entries, dtype=h5py.string_dtype("utf-8"))
        h5.create_dataset("vectors", data=np.asarray(bank.vectors, dtype=np.float32))
        h5.create_dataset("counts", data=np.asarray(bank.counts, dtype=np.int32))
        if bank.pos is not None:  # the parts of speech a bank built from a dictionary keeps (embed-entries)
            h5.create_dataset(POS_DATASET, data=list(bank.pos), dtype=h5py.string_dtype("utf-8"))
        for key, value in recorded_attrs(bank.attrs, path).items():
            h5.attrs[key] = value


def recorded_attrs(attrs: dict, path: str | Path) -> dict:
    """The attributes as the bank at ``path`` records them: the files it names (``dictionary``; ``texts``, one a
    line) relative to its folder (``formats/recorded.py``), so a bank and its dictionary travel together; a
    relative path given is taken from the working folder; ``-`` (read from stdin) stays."""
    from .recorded import recorded_path

    folder, out = Path(path).absolute().parent, dict(attrs)
    if isinstance(out.get("dictionary"), str) and out["dictionary"] not in ("", "-"):
        out["dictionary"] = recorded_path(out["dictionary"], folder)
    if isinstance(out.get("texts"), str) and out["texts"]:
        out["texts"] = "\n".join(recorded_path(t, folder) if t != "-" else t for t in out["texts"].splitlines())
    return out


def resolved_attrs(attrs: dict, path: str | Path) -> dict:
    """The attributes of the bank at ``path`` as read: the files it names resolved against its folder (a bank
    written before recorded its dictionary as typed, in the folder it was built in: taken from the bank's folder
    too); absolute paths as they are. Where ``path`` is a symbolic link, a file not found beside the link is taken
    from beside the real file, where the bank was written (a bank linked into another folder; a content store,
    the Hugging Face cache's blobs, links each file alone: there the link's folder is the one)."""
    from .recorded import resolved_loose

    beside, real = Path(path).absolute().parent, Path(os.path.realpath(path)).parent

    def found(value: str) -> str:
        near = resolved_loose(value, beside)
        if real == beside or value in ("", "-") or os.path.exists(near):
            return near
        far = resolved_loose(value, real)
        return far if os.path.exists(far) else near

    out = dict(attrs)
    if isinstance(out.get("dictionary"), str):
        out["dictionary"] = found(out["dictionary"])
    if isinstance(out.get("texts"), str) and out["texts"]:
        out["texts"] = "\n".join(found(t) for t in out["texts"].splitlines())
    return out


class BankWriter:
    """The rows of a bank written into its file as they come (:func:`bank_output`), in any order of ranges;
    ``attrs`` is written when the file is complete, its paths relative to ``path``'s folder (:func:`recorded_attrs`)."""

    def __init__(self, h5, n: int, dim: int, path: str | Path | None = None):
        import h5py

        self.n, self.dim, self.written, self.attrs, self.path = n, dim, 0, {}, path
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)  # the space of every row taken now (see io.reserve_space)
        self.entries = h5.create_dataset("entries", (n,), dtype=h5py.string_dtype("utf-8"), dcpl=dcpl.copy())
        self.vectors = h5.create_dataset("vectors", (n, dim), dtype="float32", dcpl=dcpl.copy(), fill_time="never")
        self.counts = h5.create_dataset("counts", (n,), dtype="int32", dcpl=dcpl.copy(), fill_time="never")
        self.pos = h5.create_dataset(POS_DATASET, (n,), dtype=h5py.string_dtype("utf-8"), dcpl=dcpl.copy())

    def write(self, start: int, entries: list[str], vectors, counts, pos: list[str] | None = None) -> None:
        """Rows ``start`` .. ``start + len(entries)`` (float32 vectors, int32 counts, each entry's parts of speech
        comma-joined: ``""`` for none)."""
        import numpy as np

        stop = start + len(entries)
        if len(entries) != len(vectors) or len(entries) != len(counts) or not 0 <= start <= stop <= self.n:
            raise ValueError(f"rows {start}:{stop} do not fit a bank of {self.n} rows")
        if stop > start:
            vectors = np.asarray(vectors, dtype=np.float32)
            _refuse_written(vectors, entries)
            self.entries[start:stop] = entries
            self.vectors[start:stop] = vectors
            self.counts[start:stop] = np.asarray(counts, dtype=np.int32)
            self.pos[start:stop] = list(pos) if pos is not None else [""] * (stop - start)
        self.written += stop - start

    def finish(self) -> None:
        """Before the attributes are written (``streamed_rows``): their paths recorded relative to the bank."""
        if self.path is not None:
            self.attrs = recorded_attrs(self.attrs, self.path)


@contextlib.contextmanager
def bank_output(path: str | Path, n: int, dim: int, entry_bytes: int) -> Iterator[BankWriter]:
    """A bank file streamed to disk as its rows are written (:class:`BankWriter`), in bounded memory.

    The datasets are created at their final size with their space allocated up front, after the free space
    was checked (``n x dim`` float32 rows, counts, and about ``entry_bytes`` of entry strings): a full disk
    fails at once with the usual error. Written to a temporary file beside ``path``, renamed when every row
    is in (:func:`defsent_cli.io.hdf5_stream`); an error anywhere leaves nothing behind."""
    needed = n * (4 * dim + 4 + 64) + entry_bytes + (1 << 20)  # rows, counts, string references and heap
    with streamed_rows(path, needed, lambda h5: BankWriter(h5, n, dim, path), "bank") as writer:
        yield writer


@contextlib.contextmanager
def streamed_rows(path: str | Path, needed: int, writer_of, what: str):
    """The file of a row writer (``writer_of(h5)``: :class:`BankWriter`, ``index.IndexWriter``, each with ``n``,
    ``written`` and ``attrs``) streamed to disk: its space allocated up front, its ``finish()`` (where it has one)
    and attributes written when every row is in, renamed onto ``path`` then (:func:`defsent_cli.io.hdf5_stream`);
    an error leaves nothing."""
    with hdf5_stream(path, needed) as h5:
        writer = writer_of(h5)
        h5.flush()
        reserve_space(h5.filename)
        yield writer
        if writer.written != writer.n:
            raise RuntimeError(f"{what} writer got {writer.written} of {writer.n} rows")
        if hasattr(writer, "finish"):
            writer.finish()
        for key, value in writer.attrs.items():
            h5.attrs[key] = value


#: Rows per read when a bank is streamed from its file (32 MiB of float32 rows at 128 dims, 96 MiB at 384).
READ_ROWS = 65536


@dataclass
class BankFile(BankHeader):
    """A bank on disk, opened without its vectors: its size, attributes and the reads of row ranges (h5py
    slicing), so a bank larger than memory is used a shard or a chunk at a time. It has the header of a
    :class:`Bank` (``attrs``, ``kind``, ``splits``, ``len``, ``dim``, ``source``)."""

    source: Path
    n: int
    dim: int
    attrs: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return self.n

    def rows(self, start: int = 0, stop: int | None = None, dtype="float32") -> np.ndarray:
        """Rows ``start`` .. ``stop`` as ``dtype`` (HDF5 converts while reading); a NaN or infinite row is an error."""
        import numpy as np

        stop = self.n if stop is None else stop
        with hdf5_input(self.source, "the bank") as h5:
            vectors = np.asarray(h5["vectors"].astype(np.dtype(dtype))[start:stop])
        _check_finite(vectors, self.source, dtype, lambda local: self._stored(start + local))
        return vectors

    def iter_rows(
        self, chunk: int = READ_ROWS, start: int = 0, stop: int | None = None, dtype="float32"
    ) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, rows)`` over ``start`` .. ``stop``, ``chunk`` rows at a time, the file open throughout."""
        import numpy as np

        stop = self.n if stop is None else stop
        with hdf5_input(self.source, "the bank") as h5:
            source = h5["vectors"].astype(np.dtype(dtype))
            for first in range(start, stop, chunk):
                vectors = np.asarray(source[first : min(first + chunk, stop)])
                _check_finite(vectors, self.source, dtype, lambda local, first=first: self._stored(first + local))
                yield first, vectors

    def iter_entries(self, chunk: int = READ_ROWS) -> Iterator[str]:
        """The entry strings in row order, read ``chunk`` at a time."""
        with hdf5_input(self.source, "the bank") as h5:
            for first in range(0, self.n, chunk):
                yield from _strings(h5["entries"][first : first + chunk])

    def all_entries(self) -> list[str]:
        """Every row's entry string, in row order (a pattern is matched against them all)."""
        with hdf5_input(self.source, "the bank") as h5:
            return _strings(h5["entries"][:])

    def all_counts(self):
        """Every row's number of definitions (int32 array)."""
        import numpy as np

        with hdf5_input(self.source, "the bank") as h5:
            return np.asarray(h5["counts"][:], dtype=np.int32)

    def all_pos(self) -> list[str] | None:
        """Every row's parts of speech (:data:`POS_DATASET`, comma-joined), or None when the bank has none (built
        before embed-entries kept them, or from a dictionary without them)."""
        with hdf5_input(self.source, "the bank") as h5:
            if POS_DATASET not in h5 or h5[POS_DATASET].shape != (self.n,):
                return None
            found = _strings(h5[POS_DATASET][:])
        return found if any(found) else None

    def entries_at(self, rows) -> list[str]:
        """The entry strings of these rows (any order, repeats allowed)."""
        import numpy as np

        rows = np.asarray(rows, dtype=np.int64).ravel()
        unique, where = np.unique(rows, return_inverse=True)
        with hdf5_input(self.source, "the bank") as h5:
            found = _strings(h5["entries"][unique]) if unique.size else []
        return [found[i] for i in where]

    def rows_at(self, rows, dtype="float32") -> np.ndarray:
        """The vectors of these rows (any order, repeats allowed): one read of the distinct rows, sorted."""
        import numpy as np

        rows = np.asarray(rows, dtype=np.int64).ravel()
        unique, where = np.unique(rows, return_inverse=True)
        if not unique.size:
            return np.zeros((0, self.dim), dtype=np.dtype(dtype))
        with hdf5_input(self.source, "the bank") as h5:
            vectors = np.asarray(h5["vectors"].astype(np.dtype(dtype))[unique])
        _check_finite(vectors, self.source, dtype, lambda local: self._stored(unique[local]))
        return vectors[where]

    def _stored(self, rows) -> np.ndarray:
        """These rows (sorted file row numbers) as the file stores them (float32 as a rule), unconverted."""
        import numpy as np

        with hdf5_input(self.source, "the bank") as h5:
            return np.asarray(h5["vectors"][np.asarray(rows, dtype=np.int64)])

    def part(self, start: int = 0, stop: int | None = None, dtype="float32") -> Bank:
        """Rows ``start`` .. ``stop`` in memory: their entries, vectors, counts and parts of speech (where it keeps
        them), with the bank's attributes."""
        import numpy as np

        stop = self.n if stop is None else stop
        with hdf5_input(self.source, "the bank") as h5:
            entries = _strings(h5["entries"][start:stop])
            counts = np.asarray(h5["counts"][start:stop], dtype=np.int32)
            pos = _strings(h5[POS_DATASET][start:stop]) if h5.get(POS_DATASET) is not None else None
        return Bank(entries, self.rows(start, stop, dtype), counts, dict(self.attrs), source=self.source, pos=pos)

    def load(self, dtype="float32") -> Bank:
        """The whole bank in memory."""
        return self.part(dtype=dtype)


def nonfinite_rows(vectors) -> np.ndarray:
    """The numbers of the rows of a matrix that hold a NaN or an infinity (an empty array when none do)."""
    import numpy as np

    vectors = np.asarray(vectors)
    return np.flatnonzero(~np.isfinite(vectors).all(axis=1)) if vectors.size else np.zeros(0, dtype=np.int64)


def _refuse_written(vectors: np.ndarray, entries) -> None:
    """A bank is never written with a NaN or infinite row: the first one's entry is named."""
    bad = nonfinite_rows(vectors)
    if len(bad):
        raise DefsentError(
            f"the vector of entry {entries[int(bad[0])]!r} is NaN or infinite ({len(bad):,} such row(s)): the model "
            "or the transform gives non-finite values; nothing was written"
        )


def _strings(values) -> list[str]:
    return [e.decode("utf-8") if isinstance(e, bytes) else str(e) for e in values]


def _check_finite(vectors: np.ndarray, path: Path, dtype="float32", stored=None, block: int = 65536) -> None:
    """A NaN or infinite row is an error, and so is one whose length overflows float32 (a damaged value, 1e38,
    which no encoder gives: its cosine would be 0, its dot product absurd); checked ``block`` rows at a time (no
    boolean copy of a whole bank). Read as a narrower ``dtype`` (``--bank-dtype float16``), a row may have become
    infinite in the conversion alone: ``stored(rows)`` reads those rows as the file holds them, and finite there,
    the error says that the values exceed the dtype's range (and what to do), not that the bank is broken."""
    import numpy as np

    limit = float(np.finfo(np.float32).max)

    def damaged(rows) -> np.ndarray:
        square = np.einsum("ij,ij->i", rows, rows, dtype=np.float64)  # NaN or inf for a non-finite row
        return np.flatnonzero(~(square <= limit))

    bad = [i + damaged(vectors[i : i + block]) for i in range(0, len(vectors), block)]
    bad = np.concatenate(bad) if bad else np.zeros(0, dtype=np.int64)
    if not len(bad):
        return
    narrow, found = np.dtype(dtype), np.asarray(vectors[bad])
    if stored is not None and narrow.itemsize < 4:
        found = np.asarray(stored(bad), dtype=np.float64)  # the rows as the file holds them
        if np.isfinite(found).all() and not len(damaged(found)):  # sound as stored: only the dtype is short
            limit = float(np.finfo(narrow).max)
            raise DefsentError(
                f"bank holds values up to {np.abs(found).max():g} in magnitude, beyond {narrow.name}'s range "
                f"(±{limit:g}): in {narrow.name} {len(bad)} row(s) would become infinite; the bank itself is fine: "
                f"train with --bank-dtype float32",
                path=path,
            )
    if np.isfinite(found).all():
        raise DefsentError(
            f"bank has {len(bad)} row(s) whose length overflows float32 (a damaged value): rebuild it", path=path
        )
    raise DefsentError(f"bank has {len(bad)} row(s) with NaN or infinite values; rebuild it", path=path)


def open_bank(path: str | Path) -> BankFile:
    """Open a bank written by :func:`write_bank` or :func:`bank_output` without reading its vectors; anything
    else is a one-line error naming the file."""
    path = Path(path)
    with checked_file(path, "bank", BANK_FORMAT, ("entries", "vectors", "counts"), (POS_DATASET,)) as (h5, attrs):
        shapes = {name: h5[name].shape for name in ("entries", "vectors", "counts")}
        if len(shapes["vectors"]) != 2 or len(shapes["entries"]) != 1 or len(shapes["counts"]) != 1:
            raise DefsentError(
                f"bank datasets have the wrong shapes ({shapes}); expected entries (n,), vectors (n, d), counts (n,)",
                path=path,
            )
        if h5["vectors"].dtype.kind != "f":
            raise DefsentError(f"bank vectors must be floats, found {h5['vectors'].dtype}", path=path)
        if h5["counts"].dtype.kind not in "iu":
            raise DefsentError(f"bank counts must be integers, found {h5['counts'].dtype}; rebuild it", path=path)
        for name in ("entries", *([POS_DATASET] if POS_DATASET in h5 else [])):
            if not is_text(h5[name]):
                raise DefsentError(f"bank {name} must be strings, found {h5[name].dtype}; rebuild it", path=path)
        if POS_DATASET in h5 and h5[POS_DATASET].shape != shapes["entries"]:
            got = h5[POS_DATASET].shape
            raise DefsentError(
                f"bank has {got[0] if len(got) == 1 else got} parts of speech for {shapes['entries'][0]:,} entries; "
                "rebuild it",
                path=path,
            )
    n, dim = shapes["vectors"]
    if shapes["entries"][0] != n or shapes["counts"][0] != n:
        raise DefsentError("bank datasets disagree in length", path=path)
    return BankFile(path, int(n), int(dim), resolved_attrs(attrs, path))


def read_bank(path: str | Path, dtype="float32") -> Bank:
    """Read a whole bank into memory (:func:`open_bank`, then every row); anything else is a one-line error
    naming the file. ``dtype`` (e.g. ``np.float16``): HDF5 converts the vectors while reading, so no float32
    copy of the whole matrix is ever held."""
    return open_bank(path).load(dtype)


def check_bank_matches(bank: Bank | BankFile, dictionary: str | Path) -> None:
    """Fail unless the bank was built from exactly this dictionary (SHA-256 and entry strings); both are read
    as streams, so the check holds neither list of entries."""
    dictionary, bank_path = Path(dictionary), bank.source or "bank"
    if bank.attrs.get("dictionary_sha256") != sha256_file(dictionary):
        from .dictionary import check_dictionary

        check_dictionary(dictionary)  # no dictionary at all (a pairs file): say that, not "another dictionary"
        raise DefsentError(
            f"bank was built from another dictionary (SHA-256 differs from {dictionary}); rebuild it with embed-entries",
            path=bank_path,
        )
    # the file embed-entries read (same SHA-256), so its entries were checked for repeats then: not again here
    expected = (entry.entry for row, entry in bank_rows(dictionary, bank.splits, unique=False) if row is not None)
    if not follows(bank, expected):
        raise DefsentError(f"bank entries do not match {dictionary} line by line; rebuild it", path=bank_path)


def follows(bank: Bank | BankFile, entries: Iterator[str]) -> bool:
    """Whether the bank's entry strings are ``entries``, row for row (both read as streams)."""
    missing = object()
    return all(a == b for a, b in itertools.zip_longest(entries, bank.iter_entries(), fillvalue=missing))
