"""Building a text index (``defsent index``): texts encoded a chunk at a time into an index file
(:mod:`defsent_cli.formats.index`), their unit vectors written as they come, with an HNSW graph grown beside them
(``ann.py``) where asked. Its search: ``collections.py``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__, distributed
from ..errors import DefsentError
from ..formats.index import INDEX_FORMAT, index_output
from ..formats.vectors import refuse_nonfinite
from ..space.linalg import l2_normalize
from . import ann as ann_module

#: Texts encoded per step while an index is built: the vectors of one chunk are in memory at a time.
CHUNK_TEXTS = 16384


@dataclass
class IndexSummary:
    rows: int
    dim: int
    pooling: str
    runtime: str
    added: int = 0  # index --append: the rows added (``rows`` is the index's count after them)


def build_index(
    texts: Sequence[str],
    ids: Sequence,
    loaded,
    output: str | Path,
    pooling: str | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    show_progress: bool | None = None,
    source: str = "-",
    extra_attrs: dict | None = None,
    chunk_texts: int = CHUNK_TEXTS,
    ann: bool = False,
    where: Sequence[tuple[str, int]] | None = None,
    dims: int | None = None,
    ann_compress: str = "none",
) -> IndexSummary | None:
    """Encode ``texts`` (rows in order, each with its id) into the index ``output``, ``chunk_texts`` at a time,
    each chunk's unit vectors written as they come (:func:`~defsent_cli.formats.index.index_output`); with ``ann``
    an HNSW graph grows with them and is stored in the file (``ann.py``; ``ann_compress``: how it stores the rows,
    one of ``ann.COMPRESSIONS``). A text whose vector is NaN or infinite
    is an error naming its input line (``where``: each text's file and line) and writes nothing. ``dims``: the
    leading dims of each vector are kept (``index --dims``; recorded as the attribute ``dims``). Under torchrun
    (inside ``distributed.session``) the processes share every chunk's batches and rank 0 writes; the other ranks
    return None."""
    from ..encoder.onnx_runtime import describe
    from ..encoder.spec import Encoder

    if not texts:
        raise DefsentError("no texts to index")
    encoder = Encoder.of(loaded, pooling, batch_size=batch_size, max_length=max_length, show_progress=show_progress)
    width = encoder.cut_to(dims).width
    main = distributed.is_main()
    text_bytes = sum(len(t.encode("utf-8")) for t in texts)
    attrs = {
        "format": INDEX_FORMAT,
        "encoder": str(Path(loaded.path).resolve()),
        "pooling": encoder.pooling.name,
        "max_length": int(loaded.token_limit(max_length)),
        "normalized": True,
        "similarity": "cosine",
        "runtime": describe(loaded),
        "source": source,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "defsent_version": __version__,
        **(extra_attrs or {}),
    }
    if dims is not None:
        attrs["dims"] = width
    graph = ann_module.HnswBuilder(width, compress=ann_compress) if ann and main else None
    if graph is not None:
        graph.reserve(len(texts))
    extra = ann_module.graph_bytes(len(texts), width, kind=graph.settings["kind"]) if graph is not None else 0
    out = index_output(output, len(texts), width, text_bytes, extra) if main else nullcontext()
    with out as writer:
        write_chunks(texts, ids, encoder, writer, graph, where, chunk_texts, "indexing")
        if writer is not None:
            if graph is not None:
                writer.attach_written(ann_module.ANN_DATASET, graph.stored_bytes(), graph.write, graph.settings)
                attrs["ann"] = graph.settings["kind"]
            writer.attrs.update(attrs)
    return IndexSummary(len(texts), width, encoder.pooling.name, describe(loaded)) if main else None


def write_chunks(texts, ids, encoder, writer, graph, where, chunk_texts: int, verb: str, first_row: int = 0) -> None:
    """Encode ``texts`` a chunk at a time (each process its share under torchrun), and on the main process (a
    ``writer``) refuse non-finite vectors naming their input line, write each chunk's unit rows from row
    ``first_row + start`` on, and add them to ``graph`` when there is one; ``verb`` names the work in the
    progress line. ``index`` and ``index --append`` both write through it."""
    for start in range(0, len(texts), chunk_texts):
        part = list(texts[start : start + chunk_texts])
        label = f"{verb} texts {start + 1:,}-{start + len(part):,} of {len(texts):,}"
        vectors = encoder(part, description=label, shard=True)
        if writer is not None and vectors is not None:
            refuse_nonfinite(vectors, encoder.loaded.path, where, start)
            unit = l2_normalize(np.asarray(vectors, dtype=np.float32))
            writer.write(first_row + start, list(ids[start : start + len(part)]), part, unit)
            if graph is not None:
                graph.add(unit)
