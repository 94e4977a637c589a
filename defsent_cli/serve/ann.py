"""Approximate search for large text indexes: FAISS's HNSW graph over an index's unit vectors (``index --ann``).

Exact search scores every row (``evaluation/bank_search.top_k``), which is what a text index gets by default and
what is right up to some hundred thousand rows. Past that, ``defsent index --ann`` adds a hierarchical navigable
small-world graph (Malkov & Yashunin 2018) built by FAISS (``faiss-cpu``, the optional extra ``ann``):
``IndexHNSWFlat`` with the inner-product metric, which on unit vectors is the cosine, so its scores are the exact
search's scores of the rows it finds. The graph is stored in the index file itself (the dataset
:data:`ANN_DATASET`, FAISS's own serialisation, with its settings as attributes), built row chunk by row chunk as
the index is written, so an index and its graph never disagree. ``search``/``serve`` use it when it is there
(``--exact`` scores every row instead); ``efSearch`` (``--ef-search``) trades speed for recall. bench/ann.py
measures recall@10 against exact search and the latency on a 1M-row index.
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
        return rows.astype(np.int64), scores


def load_hnsw(h5, source, ef_search: int = EF_SEARCH) -> Hnsw | None:
    """The graph stored in an open index file (None where it has none)."""
    if ANN_DATASET not in h5:
        return None
    import numpy as np

    module = faiss()
    dataset = h5[ANN_DATASET]
    settings = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in dataset.attrs.items()}
    try:
        index = module.deserialize_index(np.asarray(dataset[()], dtype=np.uint8))
    except RuntimeError as exc:
        message = f"its ANN graph cannot be read ({exc}); rebuild it with defsent index --ann, or search with --exact"
        raise DefsentError(message, path=source) from None
    return Hnsw(index, settings, ef_search)
