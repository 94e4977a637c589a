"""Approximate search for large text indexes: FAISS's HNSW graph over an index's unit vectors (``index --ann``).

Exact search scores every row (``exact.top_k``), which is what a text index gets by default and
what is right up to some hundred thousand rows. Past that, ``defsent index --ann`` adds a hierarchical navigable
small-world graph (Malkov & Yashunin 2018) built by FAISS (``faiss-cpu``, the optional extra ``ann``), with the
inner-product metric, which on unit vectors is the cosine. The graph keeps its own copy of the rows: as they are
(``IndexHNSWFlat``, the kind ``faiss-hnsw-flat``: its scores are the exact search's scores of the rows it finds),
or with ``--ann-compress sq8`` 8 bits a dimension (``IndexHNSWSQ``, ``faiss-hnsw-sq8``: a quarter of the vectors'
memory; the graph's best :data:`REFINE` x k rows are then scored again exactly against the index's own rows, so
the scores are the cosines still). :func:`graph_bytes` is what either takes at n rows. The graph is stored in the
index file itself (the dataset :data:`ANN_DATASET`, FAISS's own serialisation, with its settings as attributes),
built row chunk by row chunk as the index is written (and grown by ``index --append``), so an index and its graph
never disagree; the index records the graph's SHA-256, and :func:`load_hnsw` checks it, the graph's size and a
sample of its vectors against the index before any search. ``search``/``serve`` use it when it is there
(``--exact`` scores every row instead); ``efSearch`` (``--ef-search``) trades speed for recall. bench/ann.py
measures recall@10 against exact search and the latency of both kinds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import DefsentError

if TYPE_CHECKING:
    import numpy as np

ANN_DATASET = "ann_hnsw"
#: Graph degree (FAISS's M), the candidate list while building (efConstruction) and searching (efSearch).
HNSW_M, EF_CONSTRUCTION, EF_SEARCH = 32, 200, 128
INSTALL = "pip install 'defsent-cli[ann]' (faiss-cpu)"
#: ``index --ann-compress``: how the graph stores its copy of the rows -> the kind the index records (``ann``).
FLAT, SQ8 = "faiss-hnsw-flat", "faiss-hnsw-sq8"
COMPRESSIONS = {"none": FLAT, "sq8": SQ8}
#: A compressed graph's candidates per result, scored again exactly against the index's rows.
REFINE = 2
#: Bytes handed to FAISS or taken from it at a time as a graph is stored or loaded: never the whole graph twice.
STREAM_BYTES = 1 << 22
#: An 8-bit quantiser learns each dimension's range from the first rows added (widened by this fraction on each
#: side); from fewer rows than SQ_TRAIN_MIN it takes [-1, 1], the range of any unit vector's values.
SQ_WIDEN, SQ_TRAIN_MIN = 0.1, 256


def faiss():
    """The faiss module, or a one-line error saying how to get it."""
    try:
        import faiss as module
    except ImportError:
        raise DefsentError(f"--ann needs FAISS: {INSTALL}") from None
    return module


def graph_bytes(n: int, dim: int, m: int = HNSW_M, kind: str = FLAT) -> int:
    """The bytes of a graph of ``kind`` over ``n`` rows of ``dim``, in memory once loaded and as stored (FAISS
    writes what it holds): each row's copy (4 bytes a dimension flat, 1 in sq8), its neighbour ids (4 bytes each:
    2 M on level 0, M on each level above, of which a row has 1 / (M - 1) on average), its level (4) and its
    offset (8); and, fixed, sq8's range of each dimension. Loading reads the stored bytes too, once."""
    if kind not in (FLAT, SQ8):
        raise ValueError(f"unknown graph kind {kind!r}")
    code = 4 * dim if kind == FLAT else dim
    per_row = code + 4 * (2 * m + m / (m - 1)) + 4 + 8
    return int(round(n * per_row)) + (8 * dim if kind == SQ8 else 0) + 1024


class HnswBuilder:
    """An HNSW graph grown as the index's rows are written (:meth:`add`, in row order); ``compress`` one of
    :data:`COMPRESSIONS`. :meth:`grown` continues a stored one (``index --append``)."""

    def __init__(self, dim: int, m: int = HNSW_M, ef_construction: int = EF_CONSTRUCTION, compress: str = "none"):
        module = faiss()
        kind = COMPRESSIONS[compress]
        if kind == FLAT:
            self.index = module.IndexHNSWFlat(dim, m, module.METRIC_INNER_PRODUCT)
        else:
            self.index = module.IndexHNSWSQ(dim, module.ScalarQuantizer.QT_8bit, m, module.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = ef_construction
        self.settings = {"kind": kind, "m": m, "ef_construction": ef_construction, "metric": "ip"}

    @classmethod
    def grown(cls, graph: Hnsw) -> HnswBuilder:
        """A loaded graph (:func:`load_hnsw`), to which rows are added after its own, with its settings."""
        builder = cls.__new__(cls)
        builder.index, builder.settings = graph.index, dict(graph.settings)
        builder.index.hnsw.efConstruction = int(builder.settings.get("ef_construction", EF_CONSTRUCTION))
        return builder

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` rows in all (those it holds included), taken now: FAISS grows its arrays as rows are
        added, and a growing array is copied into one twice its size, the old one held until the copy is done
        (300,000 rows of 384 dims: the graph's peak 977 MiB without this, 623 MiB with it). A graph loaded to grow
        (``index --append``) is copied once, into the room for all. The neighbour lists get room for a little more
        than the expected count (:func:`graph_bytes`), so they almost surely never outgrow it."""
        module, hnsw = faiss(), self.index.hnsw
        storage = module.downcast_index(self.index.storage)
        m = hnsw.nb_neighbors(1)
        links = rows * (hnsw.nb_neighbors(0) + 2 * m / (m - 1) + 1) + 64 * m
        for array, size in ((storage.codes, rows * storage.code_size), (hnsw.neighbors, int(links)),
                            (hnsw.levels, rows), (hnsw.offsets, rows + 1)):  # fmt: skip
            held = array.size()
            if size > held and getattr(array, "is_owned", True) is not False:
                array.resize(size)  # the capacity stays when the size goes back
                array.resize(held)

    def add(self, vectors: np.ndarray) -> None:
        import numpy as np

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if not self.index.is_trained:  # sq8: each dimension's range, from the first rows
            module = faiss()
            storage = module.downcast_index(self.index.storage)
            if len(vectors) >= SQ_TRAIN_MIN:
                storage.sq.rangestat_arg = SQ_WIDEN
                self.index.train(vectors)
            else:
                self.index.train(np.stack([np.full(vectors.shape[1], v, dtype=np.float32) for v in (-1, 1)]))
            self.settings["trained_rows"] = len(vectors) if len(vectors) >= SQ_TRAIN_MIN else 0
        self.index.add(vectors)

    def serialized(self) -> np.ndarray:
        """The graph as FAISS serialises it, whole in memory (:meth:`write` streams it instead)."""
        return faiss().serialize_index(self.index)

    def stored_bytes(self) -> int:
        """The size of what :meth:`write` writes (the graph serialised once, counted, nothing kept)."""
        size = 0

        def count(chunk: bytes) -> None:
            nonlocal size
            size += len(chunk)

        self.write(count)
        return size

    def write(self, write) -> None:
        """The graph serialised (FAISS's ``write_index``) into ``write(bytes)``, :data:`STREAM_BYTES` at a time."""
        module = faiss()
        _through(lambda call: module.write_index(self.index, module.PyCallbackIOWriter(call, STREAM_BYTES)), write)


def _through(run, callback):
    """``run(wrapped callback)``: a FAISS call into Python code; an exception the callback raises (a full disk,
    Ctrl-C) comes out as itself, not as FAISS's RuntimeError ("py err")."""
    failed: list[BaseException] = []

    def wrapped(*args):
        try:
            return callback(*args)
        except BaseException as exc:
            failed.append(exc)
            raise

    try:
        return run(wrapped)
    except RuntimeError:
        if failed:
            raise failed[0] from None
        raise


class Hnsw:
    """A stored graph, loaded: :meth:`search` gives each query's top ``k`` rows and their inner products.
    ``rows`` (the index, or it held open: ``rows_at``): where a compressed graph's candidates are scored again
    exactly."""

    def __init__(self, index, settings: dict, ef_search: int = EF_SEARCH, rows=None):
        self.index, self.settings, self.rows = index, settings, rows
        self.ef_search = ef_search
        self.index.hnsw.efSearch = ef_search

    @property
    def kind(self) -> str:
        return str(self.settings.get("kind", FLAT))

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, self.index.ntotal)
        fetch = k if self.rows is None else min(REFINE * k, self.index.ntotal)
        self.index.hnsw.efSearch = max(self.ef_search, fetch)  # fewer candidates than asked for would return -1s
        scores, rows = self.index.search(queries, fetch)
        rows = rows.astype(np.int64)
        if self.rows is None:
            return rows, scores  # a row of -1: fewer than k found (its score is no score)
        return _rescored(queries, rows, self.rows, k)


def _rescored(queries: np.ndarray, found: np.ndarray, rows, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of each query's candidates ``found`` by their exact inner product with ``rows``' vectors."""
    import numpy as np

    valid = found >= 0
    vectors = rows.rows_at(np.where(valid, found, 0)).reshape(*found.shape, -1)
    exact = np.einsum("qd,qfd->qf", queries, vectors)
    exact[~valid] = -np.inf
    order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
    best, scores = np.take_along_axis(found, order, axis=1), np.take_along_axis(exact, order, axis=1)
    best[~np.isfinite(scores)] = -1
    return best, scores


def load_hnsw(h5, index, ef_search: int = EF_SEARCH) -> Hnsw | None:
    """The graph stored in the open file of ``index`` (an ``IndexFile``; None where it has none), checked against
    the index before it is used: its bytes against the SHA-256 the index recorded when it was built, its kind, rows
    and dims against the index's, and a sample of its stored vectors against the index's rows. A graph that fails
    is a one-line error naming the file (rebuild, or search every row with --exact)."""
    if ANN_DATASET not in h5:
        return None
    import numpy as np

    module = faiss()
    source, fix = index.source, "rebuild it with defsent index --ann, or search every row with --exact"
    dataset = h5[ANN_DATASET]
    settings = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in dataset.attrs.items()}
    recorded = index.attrs.get(f"{ANN_DATASET}_sha256")
    if recorded is not None or index.verifiable:  # hashed first, a slice at a time: FAISS reads checked bytes only
        import hashlib

        digest = hashlib.sha256()
        for at in range(0, dataset.shape[0], STREAM_BYTES):
            digest.update(np.ascontiguousarray(dataset[at : at + STREAM_BYTES], dtype=np.uint8))
        if recorded != digest.hexdigest():
            what = (
                "does not match the SHA-256 recorded when the index was built"
                if recorded
                else "has no SHA-256 recorded beside it (added after the index was built?)"
            )
            raise DefsentError(f"its HNSW graph {what}: {fix}", path=source)
    at = 0

    def read(size: int) -> bytes:
        nonlocal at
        piece = np.ascontiguousarray(dataset[at : at + size], dtype=np.uint8).tobytes()
        at += len(piece)
        return piece

    try:
        graph = _through(lambda call: module.read_index(module.PyCallbackIOReader(call, STREAM_BYTES)), read)
    except RuntimeError as exc:
        raise DefsentError(
            f"its ANN graph cannot be read ({' '.join(str(exc).split())[:200]}); {fix}", path=source
        ) from None
    kind = settings.get("kind", FLAT)
    expected = {FLAT: module.IndexHNSWFlat, SQ8: module.IndexHNSWSQ}.get(kind)
    if expected is None or not isinstance(graph, expected):
        raise DefsentError(f"its HNSW graph is not of the kind it records ({kind}); {fix}", path=source)
    if graph.ntotal != index.n or graph.d != index.dim or graph.metric_type != module.METRIC_INNER_PRODUCT:
        raise DefsentError(
            f"its HNSW graph holds {graph.ntotal:,} rows of {graph.d} dims, the index {index.n:,} of {index.dim}: the "
            f"graph belongs to another index; {fix}",
            path=source,
        )
    _same_rows(graph, kind, index, fix)
    return Hnsw(graph, settings, ef_search, rows=None if kind == FLAT else index.held_open(h5))


#: Rows of the graph's own copy of the vectors compared with the index's rows as the graph loads.
SAMPLE_ROWS = 64


def _same_rows(graph, kind: str, index, fix: str) -> None:
    """A sample of the graph's stored vectors (the first, the last and rows spread between) equals the index's:
    exactly (flat), or within half a step of its 8-bit scale of each dimension's range (sq8; a value outside the
    range is stored as the range's end)."""
    import numpy as np

    sample = np.unique(np.linspace(0, index.n - 1, min(SAMPLE_ROWS, index.n)).astype(np.int64))
    stored = np.stack([graph.reconstruct(int(row)) for row in sample])
    expected, tolerance = index.rows_at(sample), 1e-6
    if kind == SQ8:
        module = faiss()
        trained = module.vector_to_array(module.downcast_index(graph.storage).sq.trained)
        low, width = trained[: index.dim], trained[index.dim :]
        expected, tolerance = np.clip(expected, low, low + width), width / 255 + 1e-6
    differ = np.flatnonzero((np.abs(stored - expected) > tolerance).any(axis=1))
    if differ.size:
        raise DefsentError(
            f"its HNSW graph's vector of row {int(sample[differ[0]]) + 1:,} differs from the index's: the graph was "
            f"built over other rows or is damaged; {fix}",
            path=index.source,
        )
