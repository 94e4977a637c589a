"""The dictionary file (docs/formats.md, "Dictionary"): JSONL, one entry per line, line order = entry id::

    {"entry": "revitalize", "definitions": ["give new life or vigor to"], "sources": ["wordnet"], "split": "train"}

:func:`entry_from_json` is the one validator of a line. :func:`bank_rows` is the one rule that maps
entries to bank rows: a bank built from the splits S holds the entries of S in file order, so an
entry's row is its position among the entries whose split is in S.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DefsentError
from ..io import iter_jsonl, write_jsonl

if TYPE_CHECKING:  # numpy only where a sample is drawn: the command line lists SPLITS without importing it
    import numpy as np

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass
class Entry:
    """One dictionary entry: a headword or phrase with its definitions."""

    entry: str
    definitions: list[str]
    sources: list[str]
    split: str = "train"
    meta: list[dict[str, Any]] | None = None
    """Optional, one JSON object per definition (same order): what a source says about it (``pos``, ``labels``,
    ``origin``, ``categories``); None, or objects all empty, when it says nothing (the key is then not written)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSONL object (key order: entry, definitions, sources, split, and meta where any definition has one)."""
        row: dict[str, Any] = {
            "entry": self.entry,
            "definitions": list(self.definitions),
            "sources": list(self.sources),
            "split": self.split,
        }
        if self.meta and any(self.meta):
            row["meta"] = [dict(m) for m in self.meta]
        return row


def _strings(value: Any, name: str, path: str | Path, number: int, allow_empty: bool) -> list[str]:
    if not isinstance(value, list) or (not value and not allow_empty):
        raise DefsentError(
            f"'{name}' must be a {'' if allow_empty else 'non-empty '}list of strings", path=path, line=number
        )
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise DefsentError(f"'{name}' must hold non-empty strings, found {item!r}", path=path, line=number)
    return list(value)


def entry_from_json(obj: dict, path: str | Path, number: int) -> Entry:
    """Validate one dictionary JSONL object into an :class:`Entry` (the one validator).

    ``entry``: a non-blank string; ``definitions``: a non-empty list of non-blank strings;
    ``sources`` (optional): a list of non-blank strings; ``split`` (optional, default train):
    one of :data:`SPLITS`; ``meta`` (optional): one JSON object per definition.
    """
    entry = obj.get("entry")
    if not isinstance(entry, str) or not entry.strip():
        raise DefsentError("'entry' must be a non-empty string", path=path, line=number)
    definitions = _strings(obj.get("definitions"), "definitions", path, number, allow_empty=False)
    sources = _strings(obj.get("sources", []), "sources", path, number, allow_empty=True)
    split = obj.get("split", "train")
    if split not in SPLITS:
        raise DefsentError(f"'split' must be one of {', '.join(SPLITS)}, found {split!r}", path=path, line=number)
    meta = obj.get("meta")
    if meta is not None:
        if not isinstance(meta, list) or len(meta) != len(definitions) or not all(isinstance(m, dict) for m in meta):
            raise DefsentError(
                f"'meta' must be a list of {len(definitions)} JSON objects, one per definition", path=path, line=number
            )
    return Entry(entry, definitions, sources, split, meta)


def iter_entries(path: str | Path, encoding: str = "utf-8", unique: bool = True, hint: str = "") -> Iterator[Entry]:
    """Stream validated entries; ``unique``: a repeated entry string is an error naming both lines.

    (Two lines with one entry would give it two bank rows; build-dict merges them instead.)
    """
    seen: dict[str, int] = {}
    for number, obj in iter_jsonl(path, encoding, hint):
        entry = entry_from_json(obj, path, number)
        if unique:
            first = seen.setdefault(entry.entry, number)
            if first != number:
                raise DefsentError(
                    f"entry {entry.entry!r} repeats line {first}; merge its definitions into one line "
                    "(defsent build-dict FILE -o NEW merges them)",
                    path=path,
                    line=number,
                )
        yield entry


def check_dictionary(path: str | Path) -> Path:
    """A look at the first line of a file given as a dictionary, before anything slow (a model, a hash): a file
    that is no dictionary JSONL at all (a pairs file, a TSV, plain text) is told so, not taken for a dictionary
    with a bad line, nor for one that some bank was not built from."""
    import json

    from ..io import check_input, iter_lines
    from .pairs import looks_like

    path = check_input(path)
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            entry_from_json(obj, path, number)
            return path
        looks = looks_like(line)
        if looks is not None:
            raise DefsentError(
                f"is not a dictionary JSONL: line {number} looks like {looks}; a dictionary has one JSON object "
                'per line, {"entry": ..., "definitions": [...]}, as defsent build-dict writes it (build-dict '
                "--format tsv reads entry<TAB>definition lines; scored pairs train with train-pairs or teacher)",
                path=path,
            )
        break
    return path  # anything else: the reader's own error, naming the line


def read_dictionary(path: str | Path, encoding: str = "utf-8") -> list[Entry]:
    """Read and validate a whole dictionary (errors name file:line); at least one entry."""
    entries = list(iter_entries(path, encoding))
    if not entries:
        raise DefsentError("dictionary has no entries", path=path)
    return entries


def write_dictionary(path: str | Path, entries: Iterable[Entry]) -> int:
    """Atomically write the dictionary JSONL; returns the number of entries."""
    return write_jsonl(path, (e.to_dict() for e in entries))


def seeded_sample(n: int, limit: int | None, seed: int) -> np.ndarray | None:
    """Sorted indices of a seeded sample of ``limit`` of ``n`` items (``train``/``tsdae``/``eval-dict --limit``);
    None when the limit keeps everything."""
    import numpy as np

    if not limit or limit >= n:
        return None
    return np.sort(np.random.default_rng(seed).permutation(n)[:limit])


def check_splits(splits: Iterable[str]) -> list[str]:
    """Split names, checked, in the canonical order."""
    wanted = {s.strip() for s in splits if s.strip()}
    unknown = wanted - set(SPLITS)
    if unknown:
        raise DefsentError(f"unknown split(s) {', '.join(sorted(unknown))}; use {', '.join(SPLITS)}")
    if not wanted:
        raise DefsentError(f"no split given; use {', '.join(SPLITS)}")
    return [s for s in SPLITS if s in wanted]


def bank_rows(
    path: str | Path, bank_splits: Collection[str], unique: bool = True
) -> Iterator[tuple[int | None, Entry]]:
    """``(row, entry)`` for every entry: its row in a bank of ``bank_splits``, or None when not in it
    (``unique``: as :func:`iter_entries`)."""
    row = 0
    for entry in iter_entries(path, unique=unique):
        if entry.split in bank_splits:
            yield row, entry
            row += 1
        else:
            yield None, entry


@dataclasses.dataclass
class BankSize:
    """What a bank built from some splits of a dictionary holds: rows (entries), their definitions, and the
    UTF-8 bytes of their entry strings."""

    rows: int
    definitions: int
    entry_bytes: int


def bank_size(path: str | Path, bank_splits: Collection[str]) -> BankSize:
    """One pass over a dictionary: the :class:`BankSize` of a bank of ``bank_splits``, every line validated.

    A repeated entry is :func:`iter_entries`'s error, but found with 8 bytes per entry (a hash of each entry
    string) instead of a dict of every string, so the pass holds no entry: only when two hashes collide is
    the file read again with the exact check, which names the entry and both lines (or passes, for a
    collision of different strings)."""
    from array import array

    import numpy as np

    hashes = array("q")
    rows = definitions = size = 0
    for entry in iter_entries(path, unique=False):
        hashes.append(hash(entry.entry))
        if entry.split in bank_splits:
            rows += 1
            definitions += len(entry.definitions)
            size += len(entry.entry.encode("utf-8"))
    found = np.sort(np.frombuffer(hashes, dtype=np.int64))
    if found.size > 1 and bool((found[1:] == found[:-1]).any()):
        for _ in iter_entries(path):
            pass
    return BankSize(rows, definitions, size)


def split_definitions(
    path: str | Path, bank_splits: Collection[str], split: str, unique: bool = True
) -> tuple[list[str], list[int], int]:
    """``(definitions, bank rows, entries)`` of one split: every definition of its entries with the
    bank row of its entry (what training learns and the reverse dictionary is scored on); ``unique``: as
    :func:`iter_entries` (a dictionary that a bank's check matched was checked when the bank was built)."""
    if split not in bank_splits:
        raise DefsentError(
            f"the bank holds no {split!r} entries (its splits: {', '.join(sorted(bank_splits))}); "
            "rebuild it with embed-entries --splits"
        )
    texts: list[str] = []
    rows: list[int] = []
    entries = 0
    for row, entry in bank_rows(path, bank_splits, unique):
        if row is not None and entry.split == split:
            texts.extend(entry.definitions)
            rows.extend([row] * len(entry.definitions))
            entries += 1
    if not texts:
        raise DefsentError(f"the dictionary has no {split!r} definitions", path=path)
    return texts, rows, entries
