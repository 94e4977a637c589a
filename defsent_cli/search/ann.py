"""Approximate search for large text indexes: FAISS's HNSW graph over an index's unit vectors (``index --ann``).

Exact search scores every row (``exact.top_k``), which is what a text index gets by default and
what is right up to some hundred thousand rows. Past that, ``defsent index --ann`` adds a hierarchical navigable
small-world graph (Malkov & Yashunin 2018) built by FAISS (``faiss-cpu``, the optional extra ``ann``):
``IndexHNSWFlat`` with the inner-product metric, which on unit vectors is the cosine, so its scores are the exact
search's scores of the rows it finds. The graph is stored in the index file itself (the dataset
:data:`ANN_DATASET`, FAISS's own serialisation, with its settings as attributes), built row chunk by row chunk as
the index is written, so an index and its graph never disagree; the index records the graph's SHA-256, and
:func:`load_hnsw` checks it, the graph's size and a sample of its vectors against the index before any search.
``search``/``serve`` use it when it is there (``--exact`` scores every row instead); ``efSearch``
(``--ef-search``) trades speed for recall. bench/ann.py measures recall@10 against exact search and the latency
on a 1M-row index.
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


def faiss():
    """The faiss module, or a one-line error saying how to get it."""
    try:
        import faiss as module
    except ImportError:
        raise DefsentError(f"--ann needs FAISS: {INSTALL}") from None
    return module


def graph_bytes(n: int, dim: int, m: int = HNSW_M) -> int:
    """About what the stored graph takes: the vectors again, and ~2 M neighbour ids per row on level 0."""
    return n * (4 * dim + 8 * m + 16)


class HnswBuilder:
    """An HNSW graph grown as the index's rows are written (:meth:`add`, in row order)."""

    def __init__(self, dim: int, m: int = HNSW_M, ef_construction: int = EF_CONSTRUCTION):
        module = faiss()
        self.index = module.IndexHNSWFlat(dim, m, module.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = ef_construction
        self.settings = {"kind": "faiss-hnsw-flat", "m": m, "ef_construction": ef_construction, "metric": "ip"}

    def add(self, vectors: np.ndarray) -> None:
        import numpy as np

        self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def serialized(self) -> np.ndarray:
        return faiss().serialize_index(self.index)


class Hnsw:
    """A stored graph, loaded: :meth:`search` gives each query's top ``k`` rows and their inner products."""

    def __init__(self, index, settings: dict, ef_search: int = EF_SEARCH):
        self.index, self.settings = index, settings
        self.ef_search = ef_search
        self.index.hnsw.efSearch = ef_search

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        k = min(k, self.index.ntotal)
        self.index.hnsw.efSearch = max(self.ef_search, k)  # fewer candidates than k would return -1s
        scores, rows = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return rows.astype(np.int64), scores  # a row of -1: fewer than k found (its score is no score)


def load_hnsw(h5, index, ef_search: int = EF_SEARCH) -> Hnsw | None:
    """The graph stored in the open file of ``index`` (an ``IndexFile``; None where it has none), checked against
    the index before it is used: its bytes against the SHA-256 the index recorded when it was built, its rows and
    dims against the index's, and a sample of its stored vectors against the index's rows. A graph that fails is a
    one-line error naming the file (rebuild, or search every row with --exact)."""
    if ANN_DATASET not in h5:
        return None
    import numpy as np

    module = faiss()
    source, fix = index.source, "rebuild it with defsent index --ann, or search every row with --exact"
    dataset = h5[ANN_DATASET]
    settings = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in dataset.attrs.items()}
    data = np.ascontiguousarray(dataset[()], dtype=np.uint8)
    recorded = index.attrs.get(f"{ANN_DATASET}_sha256")
    if recorded is not None or index.verifiable:
        import hashlib

        if recorded != hashlib.sha256(data).hexdigest():
            what = (
                "does not match the SHA-256" if recorded else "has no SHA-256 (it was added after the index was built)"
            )
            raise DefsentError(f"its HNSW graph {what} recorded when the index was built: {fix}", path=source)
    try:
        graph = module.deserialize_index(data)
    except RuntimeError as exc:
        raise DefsentError(
            f"its ANN graph cannot be read ({' '.join(str(exc).split())[:200]}); {fix}", path=source
        ) from None
    if graph.ntotal != index.n or graph.d != index.dim or graph.metric_type != module.METRIC_INNER_PRODUCT:
        raise DefsentError(
            f"its HNSW graph holds {graph.ntotal:,} rows of {graph.d} dims, the index {index.n:,} of {index.dim}: the "
            f"graph belongs to another index; {fix}",
            path=source,
        )
    _same_rows(graph, index, fix)
    return Hnsw(graph, settings, ef_search)


#: Rows of the graph's own copy of the vectors compared with the index's rows as the graph loads.
SAMPLE_ROWS = 64


def _same_rows(graph, index, fix: str) -> None:
    """A sample of the graph's stored vectors (the first, the last and rows spread between) equals the index's."""
    import numpy as np

    sample = np.unique(np.linspace(0, index.n - 1, min(SAMPLE_ROWS, index.n)).astype(np.int64))
    stored = np.stack([graph.reconstruct(int(row)) for row in sample])
    differ = np.flatnonzero(np.abs(stored - index.rows_at(sample)).max(axis=1) > 1e-6)
    if differ.size:
        raise DefsentError(
            f"its HNSW graph's vector of row {int(sample[differ[0]]) + 1:,} differs from the index's: the graph was "
            f"built over other rows or is damaged; {fix}",
            path=index.source,
        )
