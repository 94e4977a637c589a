"""The reverse dictionary's answers over a bank (``lookup``, ``define``, the server's ``/v1/lookup`` and
``/v1/define``): a parsed query (``query_syntax.py``: text, part of speech, letter pattern) filtered, scored and
grouped.

- Filters come first: the rows whose entry has the part of speech (the bank's ``pos`` dataset) and matches the
  pattern are the only rows scored, so ``k`` results come back when ``k`` rows pass.
- A pattern alone encodes nothing: its matches are listed by :func:`~.query_syntax.pattern_order` (most senses
  first, then shorter, then alphabetically); their ``score`` is None.
- With a text, every result is ranked by the collection's similarity (cosine unless asked otherwise).
- Synonyms: entries with the same definitions and the same score (a WordNet synset: shote and piglet) are one
  result, ``words`` listing them all (``entry`` is the first).
"""

from __future__ import annotations

import numpy as np

from ..errors import DefsentError
from .collections import Collection
from .query_syntax import Query, pattern_matcher, pattern_order

#: Hits searched per result asked for, before synonyms are grouped (a group takes several hits).
GROUP_SLACK = 3


def _table(collection: Collection, name: str):
    """The bank's ``entries``, ``counts`` or ``pos``, read from its file once."""
    if name not in collection.tables:
        reader = {"entries": "all_entries", "counts": "all_counts", "pos": "all_pos"}[name]
        collection.tables[name] = getattr(collection.file, reader)()
    return collection.tables[name]


def has_pos(collection: Collection) -> bool:
    """Whether the bank knows its entries' parts of speech."""
    return collection.kind == "bank" and _table(collection, "pos") is not None


def no_pos_error(path) -> DefsentError:
    """The one-line error of a part of speech asked of a bank without them (``path``)."""
    return DefsentError(
        f"{path} keeps no parts of speech (built before embed-entries kept them, or from a dictionary "
        "without them), so it cannot filter by one; rebuild it with defsent embed-entries from a dictionary that "
        "has them (build-dict --wordnet, GCIDE), or ask without a part of speech"
    )


def allowed_rows(collection: Collection, query: Query) -> np.ndarray | None:
    """The rows a query's filters keep (sorted row numbers), None when it has none; a part of speech asked of a
    bank without them is :func:`no_pos_error`."""
    if query.pos is None and query.pattern is None:
        return None
    keep = np.ones(len(collection.file), dtype=bool)
    if query.pos is not None:
        pos = _table(collection, "pos")
        if pos is None:
            raise no_pos_error(collection.path)
        key = f"pos={query.pos}"  # each part of speech's rows found once (the server answers many queries)
        if key not in collection.tables:
            collection.tables[key] = np.fromiter((query.pos in tags.split(",") for tags in pos), bool, len(pos))
        keep &= collection.tables[key]
    if query.pattern is not None:
        match = pattern_matcher(query.pattern)
        entries = _table(collection, "entries")
        keep &= np.fromiter((match(entry) for entry in entries), dtype=bool, count=len(entries))
    return np.flatnonzero(keep)


def _decorate(collection: Collection, hit: dict, row: int | None, pos: str | None) -> dict:
    """A bank hit with its parts of speech and (with ``pos``) only the definitions of that part of speech."""
    tags = _table(collection, "pos")
    if tags is not None and row is not None:
        hit["pos"] = [t for t in tags[row].split(",") if t]
    senses = collection.senses.get(hit["entry"])
    if senses and pos is not None:
        hit["definitions"] = [text for text, tag in senses if tag == pos] or [text for text, _ in senses]
    return hit


def group_synonyms(hits: list[dict], k: int) -> list[dict]:
    """Hits with the same definitions and score as one result (``words``: every entry, in rank order); at most
    ``k`` results. Hits without definitions are never grouped (nothing says they mean the same)."""
    out: list[dict] = []
    groups: dict[tuple, dict] = {}
    for hit in hits:  # words of one group are equal: listed alphabetically, the first as ``entry``
        key = (hit.get("score"), tuple(hit.get("definitions") or ()))
        if key[1] and key in groups:
            groups[key]["words"].append(hit["entry"])
            continue
        result = {**hit, "words": [hit["entry"]]}
        if key[1]:
            groups[key] = result
        out.append(result)
    for result in out:
        result["words"].sort(key=lambda word: (word.casefold(), word))
        result["entry"] = result["words"][0]
    return out[:k]


def answer(collection: Collection, query: Query, vector: np.ndarray | None, k: int) -> list[dict]:
    """One query's results: ``vector`` (its text's, as the collection scores it) against the rows its filters keep,
    or, for a pattern alone (no text, ``vector`` None), the pattern's matches in :func:`pattern_order`."""
    allowed = allowed_rows(collection, query)
    if vector is None:
        if allowed is None:
            raise DefsentError("nothing to look up: give a description, a pattern (pig*), or both (a baby pig:p*)")
        entries, counts = _table(collection, "entries"), _table(collection, "counts")
        ranked = sorted(allowed.tolist(), key=lambda row: pattern_order(entries[row], counts[row]))[:k]
        hits = []
        for row in ranked:
            hit = {"entry": entries[row], "score": None, "senses": int(counts[row])}
            if collection.definitions:
                hit["definitions"] = collection.definitions.get(entries[row], [])
            hits.append(_decorate(collection, hit, row, query.pos))
        return group_synonyms(hits, k)
    found = collection.search_vectors(vector[None, :], k * GROUP_SLACK, allowed)[0]
    rows = _rows_of(collection, [hit["entry"] for hit in found]) if _table(collection, "pos") is not None else None
    hits = [_decorate(collection, hit, None if rows is None else rows[i], query.pos) for i, hit in enumerate(found)]
    return group_synonyms(hits, k)


def _rows_of(collection: Collection, entries: list[str]) -> list[int | None]:
    """The rows of these entry strings (a bank's entries are unique)."""
    if "row_of" not in collection.tables:
        collection.tables["row_of"] = {entry: row for row, entry in enumerate(_table(collection, "entries"))}
    row_of = collection.tables["row_of"]
    return [row_of.get(entry) for entry in entries]


def senses_of(senses: dict[str, list[tuple[str, str | None]]], word: str, where: str) -> dict:
    """A forward lookup in ``senses`` (entry -> ``[(definition, pos)]``, :func:`~.collections.bank_senses`):
    ``{entry, senses: [{definition, pos}]}`` of ``word`` (exact, else the entry that matches it case-insensitively);
    no definitions known, or a word that is no entry of ``where``, is an error saying so."""
    if not senses:
        raise DefsentError(
            f"no definitions known for {where}: its dictionary was not found (pass --dictionary DICT.jsonl)"
        )
    found = word if word in senses else None
    if found is None:
        folded = sorted(entry for entry in senses if entry.casefold() == word.strip().casefold())
        found = folded[0] if folded else None
    if found is None:
        raise DefsentError(f"{word!r} is not an entry of {where}")
    return {"entry": found, "senses": [{"definition": text, "pos": tag} for text, tag in senses[found]]}


def dictionary_senses(path) -> dict[str, list[tuple[str, str | None]]]:
    """entry -> ``[(definition, pos)]`` of every entry of a dictionary JSONL (``define --dictionary``)."""
    from ..formats.dictionary import iter_entries
    from ..formats.pos import normalize_pos

    found: dict[str, list[tuple[str, str | None]]] = {}
    for entry in iter_entries(path, unique=False):
        meta = entry.meta or [{}] * len(entry.definitions)
        found.setdefault(entry.entry, []).extend(
            (d, normalize_pos(m.get("pos"))) for d, m in zip(entry.definitions, meta, strict=True)
        )
    return found
