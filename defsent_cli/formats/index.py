"""The text index file (docs/formats.md, "Text index"): HDF5 with ``ids``, ``texts`` and unit-length ``vectors``,
written by ``defsent index`` and searched by ``defsent search`` and ``defsent serve``.

Row i of ``vectors`` is the L2-normalised vector of ``texts[i]``, whose id is ``ids[i]`` (a JSON value: a string
or a number, so an id read from ``--id-field`` comes back with its type). The rows are written a range at a time
into datasets created at their final size (:func:`index_output`, as a streamed bank), and read a chunk at a time
(:class:`IndexFile`), so neither needs the whole matrix in memory. :class:`IndexFile` has the reading side of a
:class:`~defsent_cli.formats.bank.BankFile` (``len``, ``dim``, ``iter_rows``, ``rows_at``), so the exact search
over a bank (``evaluation/bank_search.top_k``) searches it unchanged.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DefsentError
from ..io import hdf5_input, is_stdout, refuse_stdout
from .bank import checked_file, streamed_rows

if TYPE_CHECKING:  # numpy and h5py only where an index is read or written
    import numpy as np

INDEX_FORMAT = "defsent-index/1"
INDEX_SUFFIXES = (".h5", ".hdf5")
READ_ROWS = 65536
#: the datasets every index holds (an ANN graph may sit beside them: ``IndexFile.extras``)
DATASETS = ("ids", "texts", "vectors")


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
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        text = h5py.string_dtype("utf-8")
        self.ids = h5.create_dataset("ids", (n,), dtype=text, dcpl=dcpl.copy())
        self.texts = h5.create_dataset("texts", (n,), dtype=text, dcpl=dcpl.copy())
        self.vectors = h5.create_dataset("vectors", (n, dim), dtype="float32", dcpl=dcpl.copy(), fill_time="never")

    def write(self, start: int, ids: list, texts: list[str], vectors) -> None:
        import numpy as np

        stop = start + len(texts)
        if len(ids) != len(texts) or len(vectors) != len(texts) or not 0 <= start <= stop <= self.n:
            raise ValueError(f"rows {start}:{stop} do not fit an index of {self.n} rows")
        if stop > start:
            self.ids[start:stop] = [json.dumps(i, ensure_ascii=False) for i in ids]
            self.texts[start:stop] = texts
            self.vectors[start:stop] = np.asarray(vectors, dtype=np.float32)
        self.written += stop - start

    def attach(self, name: str, data, attrs: dict) -> None:
        """A dataset beside the rows (an ANN graph, ``serve/ann.py``), written with the index, gone with it."""
        dataset = self.h5.create_dataset(name, data=data)
        for key, value in attrs.items():
            dataset.attrs[key] = value


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
    """A text index on disk, opened without its vectors."""

    source: Path
    n: int
    dim: int
    attrs: dict = field(default_factory=dict)
    #: the datasets beside the rows (an ANN graph: ``serve/ann.py``)
    extras: tuple[str, ...] = ()

    def __len__(self) -> int:
        return self.n

    @property
    def kind(self) -> str:
        return "index"

    def iter_rows(
        self, chunk: int = READ_ROWS, start: int = 0, stop: int | None = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        import numpy as np

        stop = self.n if stop is None else stop
        with hdf5_input(self.source, "the index") as h5:
            for first in range(start, stop, chunk):
                yield first, np.asarray(h5["vectors"][first : min(first + chunk, stop)], dtype=np.float32)

    def rows_at(self, rows) -> np.ndarray:
        import numpy as np

        rows = np.asarray(rows, dtype=np.int64).ravel()
        unique, where = np.unique(rows, return_inverse=True)
        if not unique.size:
            return np.zeros((0, self.dim), dtype=np.float32)
        with hdf5_input(self.source, "the index") as h5:
            return np.asarray(h5["vectors"][unique], dtype=np.float32)[where]

    def records_at(self, rows) -> list[tuple[object, str]]:
        """(id, text) of these rows (any order, repeats allowed)."""
        import numpy as np

        rows = np.asarray(rows, dtype=np.int64).ravel()
        unique, where = np.unique(rows, return_inverse=True)
        if not unique.size:
            return []
        with hdf5_input(self.source, "the index") as h5:
            ids = [json.loads(_text(v)) for v in h5["ids"][unique]]
            texts = [_text(v) for v in h5["texts"][unique]]
        return [(ids[i], texts[i]) for i in where]


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
    """Open an index written by :func:`index_output`; anything else is a one-line error naming the file."""
    path = Path(path)
    with checked_file(path, "index", INDEX_FORMAT, DATASETS) as (h5, attrs):
        shape = h5["vectors"].shape
        if len(shape) != 2 or h5["ids"].shape != (shape[0],) or h5["texts"].shape != (shape[0],):
            raise DefsentError("index datasets disagree in shape; rebuild it with defsent index", path=path)
        extras = tuple(name for name in h5 if name not in DATASETS)
    return IndexFile(path, int(shape[0]), int(shape[1]), attrs, extras)
