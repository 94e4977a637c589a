"""The text index file (docs/formats.md, "Text index"): HDF5 with ``ids``, ``texts`` and unit-length ``vectors``,
written by ``defsent index`` and searched by ``defsent search`` and ``defsent serve``.

Row i of ``vectors`` is the L2-normalised vector of ``texts[i]``, whose id is ``ids[i]`` (a JSON value: a string
or a number, so an id read from ``--id-field`` comes back with its type). The rows are written a range at a time
into datasets created at their final size (:func:`index_output`, as a streamed bank), and read a chunk at a time
(:class:`IndexFile`), so neither needs the whole matrix in memory. :class:`IndexFile` has the reading side of a
:class:`~defsent_cli.formats.bank.BankFile` (``len``, ``dim``, ``iter_rows``, ``rows_at``), so the exact search
over a bank (``search/exact.top_k``) searches it unchanged.

An index proves it is intact: the writer records its ``rows`` and ``dim``, the SHA-256 of each block of
:data:`BLOCK_ROWS` rows of ``vectors`` (the dataset :data:`DIGESTS`) and of every dataset attached beside the rows
(the HNSW graph: the attribute ``<name>_sha256``), and refuses a NaN or infinite row. :func:`open_index` checks the
header (rows and dims against the datasets, one digest per block); :meth:`IndexFile.iter_rows` checks each block
against its digest as exact search streams it (once per block and process, while the file is unchanged), and every
row it reads for a unit vector, so a damaged block is a one-line error naming the file, never a score. An index
written before these were recorded still opens, its rows checked for unit length only (:attr:`IndexFile.verifiable`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DefsentError
from ..io import checked_file, hdf5_input, is_stdout, is_text, refuse_stdout
from .bank import streamed_rows

if TYPE_CHECKING:  # numpy and h5py only where an index is read or written
    import numpy as np

INDEX_FORMAT = "defsent-index/1"
INDEX_SUFFIXES = (".h5", ".hdf5")
READ_ROWS = 65536
#: the datasets every index holds (an ANN graph may sit beside them: ``IndexFile.extras``)
DATASETS = ("ids", "texts", "vectors")
#: Rows per fingerprinted block of ``vectors``, and the dataset of their SHA-256 digests (hex, one per block).
BLOCK_ROWS = 65536
DIGESTS = "vectors_sha256"
#: How far a stored row's squared length may be from 1 (every row is a unit vector, or all zeros).
UNIT_TOLERANCE = 1e-3
REBUILD = "rebuild it with defsent index"


def check_index_path(path: str | Path) -> Path:
    """An index output is HDF5, named .h5 / .hdf5."""
    path = Path(path)
    if is_stdout(path):
        raise DefsentError(refuse_stdout("file", "an index (HDF5)"))
    if path.suffix.lower() not in INDEX_SUFFIXES:
        raise DefsentError("an index is HDF5: give the output an .h5 suffix", path=path)
    return path


class IndexWriter:
    """Rows written into the index's datasets as they come; ``attrs`` is written when the file is complete."""

    def __init__(self, h5, n: int, dim: int):
        import h5py

        self.h5, self.n, self.dim, self.written, self.attrs = h5, n, dim, 0, {}
        self.digests: list[str] = []
        self._block, self._filled = _sha256(), 0
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        text = h5py.string_dtype("utf-8")
        self.ids = h5.create_dataset("ids", (n,), dtype=text, dcpl=dcpl.copy())
        self.texts = h5.create_dataset("texts", (n,), dtype=text, dcpl=dcpl.copy())
        self.vectors = h5.create_dataset("vectors", (n, dim), dtype="float32", dcpl=dcpl.copy(), fill_time="never")

    def write(self, start: int, ids: list, texts: list[str], vectors, stored_ids: bool = False) -> None:
        """Rows ``start`` .. ``start + len(texts)``, in order (each block's digest is taken as its rows come);
        a NaN or infinite row is refused (``ValueError``: the caller names its input line first). ``stored_ids``:
        the ids are JSON text already, as an index stores them (rows copied from another index)."""
        import numpy as np

        stop = start + len(texts)
        if len(ids) != len(texts) or len(vectors) != len(texts) or not 0 <= start <= stop <= self.n:
            raise ValueError(f"rows {start}:{stop} do not fit an index of {self.n} rows")
        if start != self.written:
            raise ValueError(f"index rows are written in order: row {start} after {self.written}")
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        if not np.isfinite(vectors).all():
            raise ValueError(f"rows {start}:{stop} hold NaN or infinite values")
        if stop > start:
            self.ids[start:stop] = (
                ids if stored_ids else [json.dumps(i, ensure_ascii=False, allow_nan=False) for i in ids]
            )
            self.texts[start:stop] = texts
            self.vectors[start:stop] = vectors
            self._digest(vectors)
        self.written += stop - start

    def _digest(self, rows) -> None:
        while len(rows):
            take = min(len(rows), BLOCK_ROWS - self._filled)
            self._block.update(rows[:take])
            self._filled, rows = self._filled + take, rows[take:]
            if self._filled == BLOCK_ROWS:
                self.digests.append(self._block.hexdigest())
                self._block, self._filled = _sha256(), 0

    def attach(self, name: str, data, attrs: dict) -> None:
        """A dataset beside the rows (an ANN graph, ``search/ann.py``), written with the index, gone with it; its
        SHA-256 is recorded in the file's attribute ``<name>_sha256`` (checked by its reader)."""
        import numpy as np

        data = np.ascontiguousarray(data)
        dataset = self.h5.create_dataset(name, data=data)
        for key, value in attrs.items():
            dataset.attrs[key] = value
        self.attrs[f"{name}_sha256"] = _sha256(data).hexdigest()

    def attach_written(self, name: str, size: int, write_into, attrs: dict) -> None:
        """:meth:`attach` for data written in pieces (``write_into(write)`` calls ``write(bytes)`` with each, in
        order, ``size`` bytes in all): a graph serialised straight into the file, never held twice in memory."""
        import numpy as np

        dataset = self.h5.create_dataset(name, (size,), dtype="uint8")
        digest, at = _sha256(), 0

        def write(piece: bytes) -> None:
            nonlocal at
            data = np.frombuffer(piece, dtype=np.uint8)
            if at + len(data) > size:
                raise ValueError(f"{name}: more than the {size:,} bytes announced")
            dataset[at : at + len(data)] = data
            digest.update(data)
            at += len(data)

        write_into(write)
        if at != size:
            raise ValueError(f"{name}: {at:,} bytes written of the {size:,} announced")
        for key, value in attrs.items():
            dataset.attrs[key] = value
        self.attrs[f"{name}_sha256"] = digest.hexdigest()

    def finish(self) -> None:
        """Once every row is in: the last block's digest, the digests' dataset, ``rows`` and ``dim``."""
        import numpy as np

        if self._filled:
            self.digests.append(self._block.hexdigest())
            self._block, self._filled = _sha256(), 0
        self.h5.create_dataset(DIGESTS, data=np.array(self.digests, dtype="S64").reshape(-1))
        self.attrs.update(rows=self.n, dim=self.dim, vectors_block_rows=BLOCK_ROWS)


def _sha256(data=b""):
    import hashlib  # OpenSSL's library: loaded where an index is written or read, not by --help

    return hashlib.sha256(data)


@contextlib.contextmanager
def index_output(path: str | Path, n: int, dim: int, text_bytes: int, extra_bytes: int = 0) -> Iterator[IndexWriter]:
    """An index streamed to disk (free space checked and allocated first, written beside ``path``, renamed when
    every row is in; an error anywhere leaves nothing behind); ``extra_bytes``: what :meth:`IndexWriter.attach`
    will add."""
    needed = n * (4 * dim + 64) + 2 * text_bytes + extra_bytes + (1 << 20)
    with streamed_rows(path, needed, lambda h5: IndexWriter(h5, n, dim), "index") as writer:
        yield writer


@dataclass
class IndexFile:
    """A text index on disk, opened without its vectors (:func:`open_index`)."""

    source: Path
    n: int
    dim: int
    attrs: dict = field(default_factory=dict)
    #: the datasets beside the rows (an ANN graph: ``search/ann.py``)
    extras: tuple[str, ...] = ()
    #: the SHA-256 of each block of ``block_rows`` rows, as written; None for an index written before they were
    digests: tuple[str, ...] | None = None
    block_rows: int = BLOCK_ROWS
    _verified: set = field(default_factory=set, repr=False, compare=False)
    _stamp: tuple | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return self.n

    @property
    def kind(self) -> str:
        return "index"

    @property
    def verifiable(self) -> bool:
        """Whether the index records what proves it intact (``rows``, ``dim``, the blocks' digests)."""
        return self.digests is not None

    def iter_rows(
        self, chunk: int = READ_ROWS, start: int = 0, stop: int | None = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, rows)`` over ``start`` .. ``stop``, ``chunk`` rows at a time. The first read of a block in
        this process (while the file is unchanged) reads the whole block and checks it against its digest (the
        rows of it outside ``start`` .. ``stop`` are read for that alone) and each row for a unit vector: a block
        that fails is a one-line error at its end, before the caller's result is complete."""
        import numpy as np

        stop = self.n if stop is None else stop
        if start >= stop:
            return
        with hdf5_input(self.source, "the index") as h5:
            self._unchanged()
            data = h5["vectors"]
            for block in range(start // self.block_rows, (stop - 1) // self.block_rows + 1):
                low, high = block * self.block_rows, min((block + 1) * self.block_rows, self.n)
                check = block not in self._verified
                digest = _sha256() if check and self.digests is not None else None
                first_row, last_row = (low, high) if check else (max(low, start), min(high, stop))
                for first in range(first_row, last_row, chunk):
                    rows = np.asarray(data[first : min(first + chunk, last_row)], dtype=np.float32)
                    if check:
                        self._check_unit(rows, first)
                    if digest is not None:
                        digest.update(np.ascontiguousarray(rows, dtype="<f4"))
                    lo, hi = max(first, start), min(first + len(rows), stop)
                    if lo < hi:
                        yield lo, rows[lo - first : hi - first]
                if digest is not None and digest.hexdigest() != self.digests[block]:
                    raise DefsentError(
                        f"rows {low + 1:,}-{high:,} of the index do not match the SHA-256 recorded when it was built: "
                        f"the file is damaged; {REBUILD}",
                        path=self.source,
                    )
                if check:
                    self._verified.add(block)

    def verify(self) -> None:
        """Check every block now (what exact search does as it reads them): for a server, before it takes requests."""
        for _ in self.iter_rows():
            pass

    def rows_at(self, rows, read=None) -> np.ndarray:
        """These rows' vectors (any order, repeats allowed), each checked for a unit vector; ``read``: how the
        sorted distinct rows are read (:meth:`held_open`'s), else through the file opened for this read."""
        import numpy as np

        rows = np.asarray(rows, dtype=np.int64).ravel()
        unique, where = np.unique(rows, return_inverse=True)
        if not unique.size:
            return np.zeros((0, self.dim), dtype=np.float32)
        if read is None:
            with hdf5_input(self.source, "the index") as h5:
                found = np.asarray(h5["vectors"][unique], dtype=np.float32)
        else:
            found = np.asarray(read(unique), dtype=np.float32)
        self._check_unit(found, unique)
        return found[where]

    def held_open(self, h5) -> HeldOpen:
        """The index's rows mapped into memory from ``h5`` (its file, open: the one its graph was loaded from, even
        where another has replaced it since) for many small reads (a compressed graph's candidates, scored again at
        every query): :meth:`rows_at` without opening the file each time (20 rows: 0.2 ms against 2). Where the
        rows cannot be mapped (not contiguous float32), they are read as :meth:`rows_at` reads them."""
        import numpy as np

        data = h5["vectors"]
        offset, size = data.id.get_offset(), 4 * self.n * self.dim
        try:
            handle = h5.id.get_vfd_handle()
            if offset is None or data.dtype != np.dtype("<f4") or offset + size > os.fstat(handle).st_size:
                return HeldOpen(self, None)
            with os.fdopen(os.dup(handle), "rb") as fh:
                mapped = np.memmap(fh, dtype="<f4", mode="r", offset=offset, shape=(self.n, self.dim))
        except (OSError, ValueError, TypeError):  # a driver without a file descriptor, a file that cannot be mapped
            return HeldOpen(self, None)
        return HeldOpen(self, mapped.__getitem__)

    def records_at(self, rows) -> list[tuple[object, str]]:
        """(id, text) of these rows (any order, repeats allowed)."""
        import numpy as np

        rows = np.asarray(rows, dtype=np.int64).ravel()
        unique, where = np.unique(rows, return_inverse=True)
        if not unique.size:
            return []
        with hdf5_input(self.source, "the index") as h5:
            ids = [stored_id(_text(v)) for v in h5["ids"][unique]]
            texts = [_text(v) for v in h5["texts"][unique]]
        return [(ids[i], texts[i]) for i in where]

    def iter_records(self, chunk: int = READ_ROWS, texts: bool = True) -> Iterator[tuple[int, list[str], list[str]]]:
        """``(first row, ids, texts)`` of every row, ``chunk`` rows at a time, each id as stored (its JSON text:
        :func:`stored_id` reads it); ``texts=False``: the ids alone (the texts an empty list)."""
        with hdf5_input(self.source, "the index") as h5:
            for first in range(0, self.n, chunk):
                stop = min(first + chunk, self.n)
                found = [_text(v) for v in h5["texts"][first:stop]] if texts else []
                yield first, [_text(v) for v in h5["ids"][first:stop]], found

    def _unchanged(self) -> None:
        """Forget the blocks checked so far when the file changed since (another inode, size or time)."""
        info = os.stat(self.source)
        stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
        if stamp != self._stamp:
            self._verified.clear()
            self._stamp = stamp

    def _check_unit(self, rows: np.ndarray, where) -> None:
        """Every stored row is a unit vector (or all zeros): a NaN, an infinity or a damaged value is not.
        ``where``: the first row's number, or each row's."""
        import numpy as np

        squared = np.einsum("ij,ij->i", rows, rows)
        bad = np.flatnonzero(~((np.abs(squared - 1) <= UNIT_TOLERANCE) | (squared == 0)))
        if not bad.size:
            return
        row = int(where + bad[0]) if np.isscalar(where) else int(np.asarray(where)[bad[0]])
        values = rows[bad[0]].astype(np.float64)
        what = "NaN or infinite values" if not np.isfinite(values).all() else f"length {np.linalg.norm(values):g}"
        raise DefsentError(
            f"row {row + 1:,} of the index is not a unit vector ({what}; {bad.size:,} such row(s) read): the file "
            f"is damaged or was not written by defsent index; {REBUILD}",
            path=self.source,
        )


@dataclass
class HeldOpen:
    """An index with its rows mapped (:meth:`IndexFile.held_open`): ``rows_at`` reads them there."""

    index: IndexFile
    read: object  # the sorted distinct rows -> their vectors; None: the file opened at each read

    def rows_at(self, rows) -> np.ndarray:
        return self.index.rows_at(rows, self.read)


def stored_id(text: str):
    """An id as the index stores it (JSON text) -> the id (a string or a number)."""
    return json.loads(text, parse_constant=_not_json)


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a JSON value")


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def file_format(path: str | Path) -> str:
    """The ``format`` attribute of an HDF5 file (a bank's or an index's); a missing or unreadable file is an error."""
    path = Path(path)
    if not path.exists():
        raise DefsentError("no such file", path=path)
    if not path.is_file():
        raise DefsentError("is a folder, expected an index or bank file (.h5)", path=path)
    with hdf5_input(path, "the index") as h5:
        return str(h5.attrs.get("format", ""))


def open_index(path: str | Path) -> IndexFile:
    """Open an index written by :func:`index_output`; anything else is a one-line error naming the file. Checked
    cheaply here (no row is read): the datasets' shapes and type, and, where the index records them, its ``rows``
    and ``dim`` against the datasets and one digest per block of rows."""
    path = Path(path)
    with checked_file(path, "index", INDEX_FORMAT, DATASETS, (DIGESTS,)) as (h5, attrs):
        shape = h5["vectors"].shape
        if len(shape) != 2 or h5["ids"].shape != (shape[0],) or h5["texts"].shape != (shape[0],):
            raise DefsentError(f"index datasets disagree in shape; {REBUILD}", path=path)
        if h5["vectors"].dtype.kind != "f" or h5["vectors"].dtype.itemsize != 4:
            raise DefsentError(f"index vectors must be float32, found {h5['vectors'].dtype}; {REBUILD}", path=path)
        for name in ("ids", "texts"):
            if not is_text(h5[name]):
                raise DefsentError(f"index {name} must be strings, found {h5[name].dtype}; {REBUILD}", path=path)
        extras = tuple(name for name in h5 if name not in DATASETS and name != DIGESTS)
        digests, block = None, BLOCK_ROWS
        if DIGESTS in h5 or "rows" in attrs or "dim" in attrs:
            digests, block = _digests(h5, attrs, shape, path)
    return IndexFile(path, int(shape[0]), int(shape[1]), attrs, extras, digests, block)


def _digests(h5, attrs: dict, shape: tuple, path: Path) -> tuple[tuple[str, ...], int]:
    """The blocks' digests of an index that records them, checked against its header."""
    recorded = (attrs.get("rows"), attrs.get("dim"))
    if recorded != tuple(int(n) for n in shape):
        raise DefsentError(
            f"index records {recorded[0]} rows x {recorded[1]} dims but its vectors are {shape[0]:,} x {shape[1]}: "
            f"the file is damaged; {REBUILD}",
            path=path,
        )
    block = attrs.get("vectors_block_rows")
    if DIGESTS not in h5:
        raise DefsentError(f"index lacks the checksums of its rows (dataset {DIGESTS}): {REBUILD}", path=path)
    if not isinstance(block, int) or block < 1:
        raise DefsentError(
            f"index lacks the rows per checksum (attribute vectors_block_rows, found {block!r}): {REBUILD}", path=path
        )
    digests = tuple(_text(v) for v in h5[DIGESTS][()].reshape(-1))
    if len(digests) != -(-shape[0] // block) or any(len(d) != 64 for d in digests):
        raise DefsentError(
            f"index checksums do not cover its {shape[0]:,} rows: the file is damaged; {REBUILD}", path=path
        )
    return digests, block
