"""Growing a text index (``defsent index --append``): new texts encoded as the index's own rows were (the model,
pooling, token limit, runtime and width it records; one given otherwise is refused), their ids checked against the
index's, and the index written again whole into a new file beside it that replaces it only when complete
(``formats/index.index_output``: on any error or Ctrl-C the old file stays as it was). Its rows are copied a block
at a time, each block checked against the SHA-256 it records as it is read (a damaged index is refused, never given
fresh checksums); the new rows follow, the digests of every block are taken again as the rows are written, and an
HNSW graph (``ann.py``) is loaded, checked, grown by the new rows and stored again, not rebuilt.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from .. import __version__, distributed
from ..errors import DefsentError
from ..formats.index import DIGESTS, IndexFile, index_output, open_index, stored_id
from ..io import hdf5_input
from . import ann as ann_module
from .index_build import CHUNK_TEXTS, IndexSummary, write_chunks

#: What the writer records afresh (the size, the digests' block, the graph's SHA-256); every other attribute of
#: the index is kept, and ``appended`` gets one entry per append.
WRITTEN = ("rows", "dim", "vectors_block_rows", f"{ann_module.ANN_DATASET}_sha256")


def appendable(path: str | Path) -> IndexFile:
    """The index at ``path`` if rows can be added to it: an index (:func:`open_index`) that records its checksums,
    holding nothing beside its rows that an append does not know how to grow (its HNSW graph it does)."""
    index = open_index(path)
    if not index.verifiable:
        raise DefsentError(
            "records no checksums (built before defsent recorded them), so its rows cannot be checked before they "
            "are copied: rebuild it with defsent index, then append",
            path=index.source,
        )
    unknown = [name for name in index.extras if name != ann_module.ANN_DATASET]
    if unknown:
        raise DefsentError(f"holds the dataset {unknown[0]!r}, which --append cannot grow; rebuild it", path=path)
    return index


def recorded_runtime(index: IndexFile) -> tuple[str, str] | None:
    """(runtime, precision) the index's rows were encoded with (its ``runtime``: ``torch fp32``, ``onnx int8``)."""
    words = str(index.attrs.get("runtime", "")).split(",")[0].split()
    return (words[0], words[1]) if len(words) == 2 and words[0] in ("torch", "onnx") else None


def append_index(
    index: IndexFile,
    texts: Sequence[str],
    ids: Sequence,
    loaded,
    pooling: str | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    show_progress: bool | None = None,
    source: str = "-",
    extra_attrs: dict | None = None,
    ann: str | None = None,
    where: Sequence[tuple[str, int]] | None = None,
    dims: int | None = None,
    renumber: bool = False,
    chunk_texts: int = CHUNK_TEXTS,
) -> IndexSummary | None:
    """Add ``texts`` (with ``ids``) after the rows of ``index`` (:func:`appendable`), encoded by ``loaded`` as
    the index records; ``pooling``, ``max_length``, ``dims`` (None: the index's) and the model and runtime of
    ``loaded`` must be the index's. ``ann``: None, or what the command asked of the graph (``--ann``: ``"any"``,
    or the kind of ``--ann-compress``), which the index's must be. ``renumber``: the ids are line numbers,
    continued after the index's rows (line L is id n + L). An id the index holds already is an error naming its
    input line (``where``) and the index. Under torchrun the processes share the encoding and rank 0 writes."""
    from ..encoder.onnx_runtime import describe

    if not texts:
        raise DefsentError("no texts to add")
    encoder = _recorded_encoder(index, loaded, pooling, batch_size, max_length, dims, show_progress)
    has_graph = ann_module.ANN_DATASET in index.extras
    _check_graph(index, ann, has_graph)
    ids = [i + index.n if renumber and isinstance(i, int) else i for i in ids]
    _check_new_ids(index, ids, where)
    main = distributed.is_main()
    graph = _grown_graph(index) if has_graph and main else None
    total = index.n + len(texts)
    if graph is not None:
        graph.reserve(total)
    out = (
        index_output(index.source, total, index.dim, _text_bytes(index, texts), _graph_bytes(graph, total))
        if main
        else nullcontext()
    )
    with out as writer:
        if writer is not None:
            _copy_rows(index, writer)
        write_chunks(texts, ids, encoder, writer, graph, where, chunk_texts, "adding", first_row=index.n)
        if writer is not None:
            if graph is not None:
                writer.attach_written(ann_module.ANN_DATASET, graph.stored_bytes(), graph.write, graph.settings)
            writer.attrs.update(_attrs(index, len(texts), source, extra_attrs))
    return IndexSummary(total, index.dim, encoder.pooling.name, describe(loaded), len(texts)) if main else None


def _recorded_encoder(index: IndexFile, loaded, pooling, batch_size, max_length, dims, show_progress):
    """The Encoder of the index's rows, from what it records; a setting given that differs is a one-line error
    naming the index."""
    from ..encoder.onnx_runtime import describe
    from ..encoder.spec import Encoder

    attrs, source = index.attrs, index.source
    recorded = attrs.get("encoder")
    if not isinstance(recorded, str) or Path(recorded).resolve() != Path(loaded.path).resolve():
        raise DefsentError(
            f"its rows were encoded by the model {recorded}, not {loaded.path}: new rows must be encoded by the same "
            "model (leave -m out, or give that one)",
            path=source,
        )
    ran, was = describe(loaded).split(",")[0], str(attrs.get("runtime", "")).split(",")[0]
    if ran != was:
        raise DefsentError(
            f"its rows were encoded by {was}, this run would encode by {ran}: leave --runtime and --precision out "
            "(the index's are taken), or give those",
            path=source,
        )
    limit = int(attrs.get("max_length") or loaded.token_limit(None))
    if max_length is not None and loaded.token_limit(max_length) != limit:
        raise DefsentError(f"its texts were cut at {limit} tokens, not --max-length {max_length}", path=source)
    encoder = Encoder.of(
        loaded, pooling or attrs.get("pooling"), batch_size=batch_size, max_length=limit, show_progress=show_progress
    )
    if encoder.pooling.name != attrs.get("pooling"):
        raise DefsentError(
            f"its rows were pooled by {attrs.get('pooling')}, not --pooling {encoder.pooling.name}", path=source
        )
    if dims is not None and dims != index.dim:
        raise DefsentError(f"its rows have {index.dim} dims, not --dims {dims}", path=source)
    encoder.cut_to(attrs.get("dims"))
    if encoder.width != index.dim:
        raise DefsentError(f"its rows have {index.dim} dims, the model's {encoder.width}", path=source)
    return encoder


def _check_graph(index: IndexFile, ann: str | None, has_graph: bool) -> None:
    """What the command asked of the graph (``--ann``, ``--ann-compress``) is what the index has: an append grows
    the graph an index has (whatever is asked) and adds none to an index without one."""
    if ann is None:
        return
    if not has_graph:
        raise DefsentError(
            "has no HNSW graph, and --append adds none (it would be built over every row): rebuild it with "
            "defsent index --ann, or leave --ann out",
            path=index.source,
        )
    kind = index.attrs.get("ann", ann_module.FLAT)
    if ann != "any" and ann != kind:
        raise DefsentError(f"its HNSW graph is {kind}, not {ann} (--ann-compress)", path=index.source)


def _check_new_ids(index: IndexFile, ids: Sequence, where: Sequence[tuple[str, int]] | None) -> None:
    """No new id is one of the index's (ids compare as read_records compares them: a string or a number's value)."""
    new = {(isinstance(value, str), value): k for k, value in enumerate(ids)}
    for first, stored, _ in index.iter_records(texts=False):
        for offset, text in enumerate(stored):
            value = stored_id(text)
            k = new.get((isinstance(value, str), value))
            if k is None:
                continue
            message = (
                f"id {json.dumps(value, ensure_ascii=False)} is already the id of row {first + offset + 1:,} of "
                f"{index.source}: ids are unique in an index; give the new texts other ids (--id-field)"
            )
            if where is not None and k < len(where):
                raise DefsentError(message, path=where[k][0], line=where[k][1])
            raise DefsentError(f"text {k + 1:,}: {message}")


def _grown_graph(index: IndexFile) -> ann_module.HnswBuilder:
    """The index's graph, loaded and checked (``ann.load_hnsw``), ready to take the new rows."""
    try:
        ann_module.faiss()
    except DefsentError:
        raise DefsentError(
            f"its HNSW graph grows with the new rows, which needs FAISS: {ann_module.INSTALL}", path=index.source
        ) from None
    with hdf5_input(index.source, "the index") as h5:
        graph = ann_module.load_hnsw(h5, index)
    return ann_module.HnswBuilder.grown(graph)


def _copy_rows(index: IndexFile, writer) -> None:
    """The index's rows into the new file, a block at a time, each block checked against its SHA-256 as it is read
    (``IndexFile.iter_rows``), its ids copied as stored."""
    records = index.iter_records(index.block_rows)
    for first, rows in index.iter_rows(index.block_rows):
        at, stored, texts = next(records)
        if at != first or len(stored) != len(rows):
            raise RuntimeError(f"rows from {first} and records from {at} out of step")
        writer.write(first, stored, texts, rows, stored_ids=True)


def _text_bytes(index: IndexFile, texts: Sequence[str]) -> int:
    """About what the ids and texts will take: the old file less its vectors and graph, and the new texts."""
    with hdf5_input(index.source, "the index") as h5:
        graph = h5[ann_module.ANN_DATASET].shape[0] if ann_module.ANN_DATASET in h5 else 0
        digests = h5[DIGESTS].nbytes
    old = os.path.getsize(index.source) - 4 * index.n * index.dim - graph - digests
    return max(0, old) + sum(len(t.encode("utf-8")) for t in texts)


def _graph_bytes(graph: ann_module.HnswBuilder | None, rows: int) -> int:
    if graph is None:
        return 0
    m = int(graph.settings.get("m", ann_module.HNSW_M))
    return ann_module.graph_bytes(rows, graph.index.d, m, str(graph.settings.get("kind", ann_module.FLAT)))


def _attrs(index: IndexFile, added: int, source: str, extra_attrs: dict | None) -> dict:
    """The index's attributes but what the writer records afresh, with this append in ``appended`` (a JSON list)."""
    attrs = {key: value for key, value in index.attrs.items() if key not in WRITTEN}
    try:
        appended = json.loads(str(attrs.get("appended", "[]")))
    except json.JSONDecodeError:
        appended = []
    appended.append(
        {
            "source": source,
            **(extra_attrs or {}),
            "first_row": index.n + 1,
            "rows": added,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "defsent_version": __version__,
        }
    )
    attrs["appended"] = json.dumps(appended, ensure_ascii=False)
    return attrs
