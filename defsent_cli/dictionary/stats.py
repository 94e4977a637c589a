"""Dictionary statistics per split: entries, definitions, token lengths (the DefSent+ Table 1 view) and the held-out
definitions that are also training ones (:func:`held_out_in_train`); and per source (:func:`source_stats`)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from ..formats.dictionary import SPLITS, Entry
from .splitting import normalize_definition

HELD_OUT = ("dev", "test")


def held_out_in_train(entries: Iterable[Entry]) -> dict[str, int]:
    """Per held-out split (dev, test) present: how many of its definitions are also a definition of a train entry,
    compared as :func:`.splitting.normalize_definition` does (casefolded, whitespace collapsed, trailing punctuation
    stripped). Each definition of the split counts once per entry that has it. A split made with ``build-dict
    --split-by definition-group`` (the default) has none; ``--split-by entry`` can have many (shared glosses)."""
    entries = list(entries)
    train = {normalize_definition(d) for e in entries if e.split == "train" for d in e.definitions}
    train.discard("")
    counts: dict[str, int] = {}
    for e in entries:
        if e.split in HELD_OUT:
            counts[e.split] = counts.get(e.split, 0) + sum(normalize_definition(d) in train for d in e.definitions)
    return counts


def dictionary_stats(entries: Iterable[Entry], tokenizer: Any = None, batch_size: int = 4096) -> dict[str, dict]:
    """Per split (those present) and ``total``: entries, definitions, for dev and test ``in_train`` (their
    definitions that are also training ones: :func:`held_out_in_train`) and, with a tokenizer, the max and median
    definition length in tokens including special tokens."""
    groups: dict[str, list[Entry]] = {split: [] for split in SPLITS}
    entries = list(entries)
    for e in entries:
        groups.setdefault(e.split, []).append(e)
    lengths: dict[str, list[int]] = {}
    if tokenizer is not None:
        for split, group in groups.items():
            texts = [d for e in group for d in e.definitions]
            found: list[int] = []
            for start in range(0, len(texts), batch_size):
                ids = tokenizer(texts[start : start + batch_size], add_special_tokens=True, verbose=False)["input_ids"]
                found.extend(len(x) for x in ids)
            lengths[split] = found
    stats: dict[str, dict] = {}
    in_train = held_out_in_train(entries)
    for split, group in [*groups.items(), ("total", entries)]:
        if split != "total" and not group:
            continue
        row: dict[str, Any] = {"entries": len(group), "definitions": sum(len(e.definitions) for e in group)}
        if split in in_train:
            row["in_train"] = in_train[split]
        if tokenizer is not None:
            found = [n for s in SPLITS for n in lengths.get(s, [])] if split == "total" else lengths[split]
            row["max_tokens"] = max(found) if found else None
            row["median_tokens"] = statistics.median(found) if found else None
        stats[split] = row
    return stats


def source_stats(entries: Iterable[Entry], origins: dict[str, list[str]] | None = None) -> dict[str, dict]:
    """Per source, in order of first appearance, and ``total``: the entries that list it (an entry merged from
    several sources counts for each) and the definitions it gave (each definition counted once, for the source
    it came from first: ``origins`` as :func:`.build.merge` fills it; without it, for the entry's first source)."""
    rows: dict[str, dict[str, int]] = {}
    entries = list(entries)
    for e in entries:
        for source in e.sources:
            rows.setdefault(source, {"entries": 0, "definitions": 0})["entries"] += 1
        given = (origins or {}).get(e.entry.casefold())
        if given is None or len(given) != len(e.definitions):
            given = [e.sources[0] if e.sources else ""] * len(e.definitions)
        for source in given:
            rows.setdefault(source, {"entries": 0, "definitions": 0})["definitions"] += 1
    rows.pop("", None)
    rows["total"] = {"entries": len(entries), "definitions": sum(len(e.definitions) for e in entries)}
    return rows
