"""What is searched: a text index or an entry bank with the encoder of its queries (:class:`Collection`), for
``defsent search`` and the server's ``/v1/search`` and ``/v1/lookup``.

A collection is what is searched, with the encoder of its queries:

- a text index (:mod:`defsent_cli.formats.index`, built by ``index_build.py``): its rows are the unit vectors of
  the texts under the model and pooling it records, the queries are encoded the same way, and a dot product is the
  cosine;
- an entry bank (the reverse dictionary): the queries are encoded as ``lookup`` encodes them (``queries.py``: a
  trained checkpoint's pooling and head; else the pooling of the bank's kind), and scored against every entry's
  row by cosine (default) or by dot product (``lookup``'s and training's score).

The search is exact by default: every row is scored, a chunk at a time (``exact.top_k``), so memory holds one
chunk of rows whatever the size of the collection. An index built with ``--ann`` carries an HNSW graph
(``ann.py``), which search uses unless asked for exact search: approximate, much faster on large indexes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..formats.bank import BANK_FORMAT, Bank, BankFile, follows, nonfinite_rows, open_bank
from ..formats.index import INDEX_FORMAT, IndexFile, file_format, open_index
from ..log import note, warn
from ..space.dims import another_width, collection_dims, cut_rows
from ..space.linalg import l2_normalize
from . import ann as ann_module

SIMILARITIES = ("cosine", "dot")


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (a zero row stays zero)."""
    return l2_normalize(np.asarray(vectors, dtype=np.float32))


class _UnitRows:
    """A bank's rows scaled to unit length as they are read (cosine over a bank whose rows are not)."""

    def __init__(self, bank):
        self.bank = bank

    def __len__(self) -> int:
        return len(self.bank)

    def iter_rows(self, chunk: int, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        for first, rows in self.bank.iter_rows(chunk, start, stop):
            yield first, _unit(rows)


class _Subset:
    """Some rows of a bank (``allowed``: sorted row numbers), numbered 0.. in their order, read a chunk at a time."""

    def __init__(self, rows, allowed: np.ndarray):
        self.rows, self.allowed = rows, np.asarray(allowed, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.allowed)

    def iter_rows(self, chunk: int, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        taken = 0
        for first, rows in self.rows.iter_rows(chunk):
            lo, hi = np.searchsorted(self.allowed, [first, first + len(rows)])
            if hi > lo:
                yield taken, rows[self.allowed[lo:hi] - first]
                taken += int(hi - lo)


def open_collection_file(path: str | Path) -> IndexFile | BankFile:
    """A text index or an entry bank, told apart by the file's ``format`` attribute."""
    kind = file_format(path)
    if kind == INDEX_FORMAT:
        return open_index(path)
    if kind == BANK_FORMAT:
        return open_bank(path)
    raise DefsentError(
        f"neither a defsent index ({INDEX_FORMAT}) nor an entry bank ({BANK_FORMAT}); build one with defsent index "
        "or defsent embed-entries",
        path=path,
    )


def recorded_model(path: str | Path) -> Path | None:
    """The model folder an index or a bank records as its encoder, when that folder is still there."""
    found = open_collection_file(path).attrs.get("encoder")
    return Path(found) if isinstance(found, str) and Path(found).is_dir() else None


@dataclass
class Collection:
    """An index or a bank with the encoder of its queries: ``search(queries, k)`` -> hits per query, best first."""

    file: IndexFile | BankFile
    encode_queries: object  # (texts) -> (n, d) float32
    similarity: str = "cosine"
    definitions: dict = field(default_factory=dict)  # entry -> its definitions (a bank with its dictionary)
    senses: dict = field(default_factory=dict)  # entry -> [(definition, part of speech or None)]: the same, with pos
    tables: dict = field(default_factory=dict)  # computed once: entries, counts, pos, pos rows (reverse.py), unit rows
    label: str = ""
    ann: ann_module.Hnsw | None = None  # an index's HNSW graph, searched instead of every row
    rows: object | None = None  # the file's rows cut to the queries' width (``--dims``: space/dims.py); None: as stored
    cut: int | None = None  # the width the queries are cut to (``--dims``, or the file's own when built with it)

    @property
    def search_kind(self) -> str:
        """``exact`` (every row scored) or ``hnsw`` (the index's graph: approximate)."""
        return "exact" if self.ann is None else "hnsw"

    @property
    def search_note(self) -> str:
        if self.ann is None:
            return "exact search"
        kind = "" if self.ann.kind == ann_module.FLAT else f" ({self.ann.kind}, its candidates scored exactly)"
        return f"approximate search through the index's HNSW graph{kind}, efSearch {self.ann.ef_search}; --exact for all rows"

    @property
    def width(self) -> int:
        """The width it is searched at: its queries' cut, else its rows' (the model's) full width."""
        return self.cut or self.file.dim

    @property
    def kind(self) -> str:
        """``index`` or ``bank``."""
        return "index" if isinstance(self.file, IndexFile) else "bank"

    @property
    def path(self) -> Path:
        return Path(self.file.source)

    @property
    def score_kind(self) -> str:
        """What a score is: ``cosine`` (an index's rows are unit vectors, so both similarities are) or ``dot``."""
        return "cosine" if self.kind == "index" else self.similarity

    def vectors(self, queries: Sequence[str]) -> np.ndarray:
        """The queries' vectors, as they are scored (unit length for cosine); a query whose vector is NaN or
        infinite is an error naming it (its number among the queries)."""
        vectors = np.asarray(self.encode_queries(list(queries)), dtype=np.float32)
        bad = nonfinite_rows(vectors)
        if len(bad):
            raise DefsentError(
                f"query {int(bad[0]) + 1:,} ({str(queries[int(bad[0])])[:60]!r}): the model gives NaN or infinite "
                "values for it; check the model"
            )
        return _unit(vectors) if self.score_kind == "cosine" else vectors

    def scored_rows(self):
        """The rows queries are scored against: an index's (unit already) or, for cosine over a bank, its rows
        scaled to unit length: as they are read from a bank on disk (one query's command), once for a bank held in
        memory (the server: one more copy of its vectors, instead of scaling every row at every query)."""
        rows = self.file if self.rows is None else self.rows
        if self.kind == "index" or self.similarity == "dot":
            return rows
        if not isinstance(self.file, Bank):
            return _UnitRows(rows)
        if "unit rows" not in self.tables:
            whole = np.concatenate([chunk for _, chunk in rows.iter_rows(65536)]) if len(rows) else self.file.vectors
            self.tables["unit rows"] = Bank(self.file.entries, _unit(whole), self.file.counts)
        return self.tables["unit rows"]

    def search_vectors(self, vectors: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[list[dict]]:
        """Each query vector's top ``k`` rows as dicts: an index's ``{id, text, score}``, a bank's ``{entry, score}``
        (with ``definitions`` where the dictionary is known). ``allowed``: the rows searched (sorted row numbers,
        the reverse dictionary's filters: ``reverse.py``), every one scored; None: all."""
        from .exact import top_k

        rows = self.scored_rows()
        if len(vectors) == 0:
            return []
        if allowed is not None:
            indices, scores = top_k(vectors, _Subset(rows, allowed), k)
            indices = np.where(indices >= 0, allowed[np.maximum(indices, 0)], -1) if len(allowed) else indices
        else:
            indices, scores = top_k(vectors, rows, k) if self.ann is None else self.ann.search(vectors, k)
        kept = indices >= 0  # the graph's -1: fewer rows found than asked for
        self._check_scores(indices[kept], scores[kept])
        flat = indices[kept]
        if self.kind == "index":
            found = [{"id": i, "text": t} for i, t in self.file.records_at(flat)]
        else:
            found = [{"entry": e} for e in self.file.entries_at(flat)]
            if self.definitions:
                for hit in found:
                    hit["definitions"] = self.definitions.get(hit["entry"], [])
        out, taken = [], 0
        for values, keep in zip(scores, kept, strict=True):
            hits = found[taken : taken + int(keep.sum())]
            taken += len(hits)
            out.append([{**hit, "score": round(float(s), 6)} for hit, s in zip(hits, values[keep], strict=True)])
        return out

    def _check_scores(self, rows: np.ndarray, scores: np.ndarray) -> None:
        """Scores that are NaN or infinite, rows outside the file, or (an index's unit vectors) a cosine beyond
        [-1, 1], come from a damaged file: a one-line error naming it, never a result."""
        if rows.size and (rows.min() < 0 or rows.max() >= len(self.file)):
            raise DefsentError(f"the search found row {int(rows.max()) + 1:,} of {len(self.file):,}: {self._damaged}")
        finite = np.isfinite(scores)
        if not finite.all():
            raise DefsentError(f"row {int(rows[~finite][0]) + 1:,} scores {float(scores[~finite][0])}: {self._damaged}")
        if self.kind == "index" and scores.size and np.abs(scores).max() > 1 + 1e-3:
            where = int(np.argmax(np.abs(scores)))
            raise DefsentError(
                f"row {int(rows[where]) + 1:,} scores a cosine of {float(scores[where]):g}: {self._damaged}"
            )

    @property
    def _damaged(self) -> str:
        fix = "rebuild it with defsent index" if self.kind == "index" else "rebuild it with defsent embed-entries"
        if self.ann is not None:
            fix += " --ann, or search every row with --exact"
        return f"{self.path} is damaged; {fix}"

    def search(self, queries: Sequence[str], k: int = 10) -> list[list[dict]]:
        return self.search_vectors(self.vectors(queries), k)


def index_collection(
    index: IndexFile,
    loaded,
    batch_size: int = 32,
    pooling: str | None = None,
    exact: bool = False,
    ef_search: int | None = None,
    dims: int | None = None,
) -> Collection:
    """An index with its queries encoded as its texts were (the pooling it records, unit length, cut to the width
    it was built at: its ``dims``); a model other than the one it records is a warning (its vectors live in another
    space), a model of another width an error. ``dims`` (``search --dims``): both sides cut to it, the rows as they
    are read (and searched exactly: the HNSW graph holds the rows at the index's width); wider than the index, an
    error naming it.
    Searched through its HNSW graph where it has one (unless ``exact``; without FAISS installed, exactly, said in
    a note), the graph checked against the index first (``ann.load_hnsw``). ``ef_search``: None is the default
    (:data:`ann.EF_SEARCH`); given, or ``exact`` given, where it cannot take effect (no graph), a warning. An index
    written before it recorded its checksums is said in a note (it is searched, its rows only checked for unit
    length)."""
    from ..encoder.spec import Encoder

    recorded = index.attrs.get("encoder")
    other = isinstance(recorded, str) and Path(recorded).resolve() != Path(loaded.path).resolve()
    if another_width(index.dim, loaded.dim, index.attrs.get("dims")):
        if other or not isinstance(recorded, str):
            fix = f"search it with the model that built it ({index.attrs.get('encoder', 'recorded in the index')})"
        elif index.dim > loaded.dim:
            fix = "the model at that path is no longer the one that built it (retrained?): rebuild the index with it"
        else:
            fix = "it records no --dims for its narrower rows (damaged, or not written by defsent index): rebuild it"
        raise DefsentError(
            f"the index has {index.dim} dims but the model {loaded.path} has {loaded.dim}; {fix}", path=index.source
        )
    if other:
        warn(f"the index was built with {recorded}, not {loaded.path}: its scores mean little with another model")
    name = pooling or str(index.attrs.get("pooling") or "") or None
    max_length = index.attrs.get("max_length")  # its texts' token limit, within what this model takes
    max_length = min(int(max_length), loaded.max_length) if max_length else None
    encoder = Encoder.of(loaded, name, batch_size=batch_size, max_length=max_length)
    encoder.show_progress = False
    cut = encoder.cut_to(collection_dims(dims, index.dim, loaded.dim, index.source, "index", loaded.path)).dims
    collection = Collection(
        index, encoder, "cosine", label=str(index.source), rows=cut_rows(index, dims, True), cut=cut
    )
    if not index.verifiable:
        note(
            f"{index.source} records no checksums (built before defsent recorded them): it cannot be verified; "
            "rebuild it with defsent index to have it checked"
        )
    graph = ann_module.ANN_DATASET in index.extras
    if graph and collection.rows is not index and not exact:
        note(f"exact search: {index.source}'s HNSW graph holds its {index.dim}-dim rows, not --dims {dims}")
        if ef_search is not None:
            warn(f"--ef-search has no effect at --dims {dims}: every row is scored")
        return collection
    if not graph:
        if exact:
            warn(f"--exact has no effect: {index.source} has no HNSW graph, so its search is exact anyway")
        if ef_search is not None:
            warn(f"--ef-search has no effect: {index.source} has no HNSW graph (build one with defsent index --ann)")
        return collection
    if exact:
        if ef_search is not None:
            warn("--ef-search has no effect with --exact: every row is scored")
        return collection
    try:
        ann_module.faiss()
    except DefsentError:
        note(f"exact search: {index.source} has an HNSW graph, but FAISS is not installed ({ann_module.INSTALL})")
        return collection
    from ..io import hdf5_input

    with hdf5_input(index.source, "the index") as h5:
        collection.ann = ann_module.load_hnsw(h5, index, ann_module.EF_SEARCH if ef_search is None else ef_search)
    return collection


def bank_collection(
    bank: BankFile,
    loaded,
    similarity: str = "cosine",
    batch_size: int = 32,
    pooling: str | None = None,
    dictionary: str | Path | None = None,
    dims: int | None = None,
) -> Collection:
    """A bank searched as the reverse dictionary: queries encoded as ``lookup`` encodes them (``dims``: both sides
    cut, ``queries.query_encoder``); ``dictionary`` (or the one the bank records, when it is still there and
    unchanged) gives each entry's definitions."""
    from .queries import query_encoder

    if similarity not in SIMILARITIES:
        raise DefsentError(f"similarity must be cosine or dot, not {similarity!r}")
    encoder = query_encoder(loaded, bank, pooling, dims)
    encode = lambda texts: encoder.encode(texts, batch_size)  # noqa: E731
    collection = Collection(bank, encode, similarity, label=str(bank.source), rows=encoder.rows(bank), cut=encoder.cut)
    collection.senses = bank_senses(bank, dictionary)
    collection.definitions = {entry: [text for text, _ in senses] for entry, senses in collection.senses.items()}
    return collection


def bank_definitions(bank: BankFile, dictionary: str | Path | None = None) -> dict[str, list[str]]:
    """entry -> definitions (:func:`bank_senses` without their parts of speech)."""
    return {entry: [text for text, _ in senses] for entry, senses in bank_senses(bank, dictionary).items()}


def bank_senses(bank: BankFile, dictionary: str | Path | None = None) -> dict[str, list[tuple[str, str | None]]]:
    """entry -> its senses, ``(definition, part of speech or None)`` (``formats/pos.py``), from ``dictionary``, else
    from the dictionary file the bank records when it is there with the recorded SHA-256; {} when neither (a note
    says so)."""
    from ..formats.dictionary import bank_rows
    from ..formats.pos import normalize_pos
    from ..io import sha256_file

    given = dictionary is not None
    if dictionary is None:
        recorded = bank.attrs.get("dictionary")  # resolved against the bank's folder (formats/bank.py)
        if not isinstance(recorded, str) or recorded in ("", "-") or not Path(recorded).is_file():
            why = "was built from stdin" if recorded == "-" else "records no dictionary"
            why = f"was built from {recorded}, which is not there" if recorded not in (None, "", "-") else why
            note(f"no definitions shown: {bank.source} {why} (--dictionary DICT.jsonl gives them)")
            return {}
        if not bank.attrs.get("dictionary_sha256"):
            note(f"no definitions shown: {bank.source} records no SHA-256 of {recorded}, so it cannot be checked "
                 "(--dictionary DICT.jsonl gives them)")  # fmt: skip
            return {}
        if sha256_file(recorded) != bank.attrs.get("dictionary_sha256"):
            note(f"no definitions shown: {recorded} changed since {bank.source} was built (--dictionary)")
            return {}
        dictionary = recorded
    dictionary = Path(dictionary)
    if given and not dictionary.is_file():
        raise DefsentError("no such dictionary file", path=dictionary)
    # the very file the bank was built from: its rows' entries must be the bank's, in order (else the bank's entries
    # were damaged, and a hit would show another entry's name and definitions)
    recorded_sha = bank.attrs.get("dictionary_sha256")
    built_from = not given or (bool(recorded_sha) and sha256_file(dictionary) == recorded_sha)
    found: dict[str, list[tuple[str, str | None]]] = {}
    order: list[str] = []
    for row, entry in bank_rows(dictionary, bank.splits, unique=False):
        if row is None:
            continue
        order.append(entry.entry)
        if entry.entry not in found:
            meta = entry.meta or [{}] * len(entry.definitions)
            found[entry.entry] = [
                (d, normalize_pos(m.get("pos"))) for d, m in zip(entry.definitions, meta, strict=True)
            ]
    if built_from and not follows(bank, iter(order)):
        raise DefsentError(
            f"the bank's entries are not those of {dictionary}, from which it was built, row for row: the bank is "
            "damaged; rebuild it with defsent embed-entries",
            path=bank.source,
        )
    return found
