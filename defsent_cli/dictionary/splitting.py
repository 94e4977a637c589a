"""The split of a dictionary into train, dev and test (``build-dict --split``, ``--split-by``): by groups of
entries that share a definition (:func:`definition_groups`, :func:`group_splits`), so that no held-out definition
is also a training one, or entry by entry (:func:`split_of`); each deterministic for a seed.
:func:`assign_splits` is the whole step; ``build.py`` runs it last, after the filters and the sample.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence

from ..errors import DefsentError
from ..formats.dictionary import SPLITS, Entry
from ..log import warn
from .choices import SPLIT_BY
from .sources import normalize_space

_TRAILING = " .,;:!?\u2026"  # stripped from the end of a normalised definition


def normalize_definition(text: str) -> str:
    """The form in which two definitions count as the same for the split: casefolded, whitespace collapsed to
    one space, and trailing spaces and punctuation (``. , ; : ! ?`` and the ellipsis ``…``) stripped; so
    ``"A pet."`` and ``"a  pet"`` are one definition."""
    return " ".join(text.split()).casefold().rstrip(_TRAILING)


def parse_fractions(text: str | Sequence[float]) -> tuple[float, float, float]:
    """Validate ``"0.8,0.1,0.1"`` (or a sequence): three non-negative numbers summing to 1."""
    if isinstance(text, str):
        try:
            values = [float(x) for x in text.split(",")]
        except ValueError:
            raise DefsentError(f"--split must be three numbers like 0.8,0.1,0.1, got {text!r}") from None
    else:
        values = [float(x) for x in text]
    if len(values) != 3 or any(not v >= 0 for v in values) or abs(sum(values) - 1.0) > 1e-6:
        raise DefsentError(f"--split must be three non-negative fractions (train,dev,test) summing to 1, got {text!r}")
    return values[0], values[1], values[2]


def _unit(key: str, seed: int) -> float:
    """SHA-256 of ``(seed, casefolded key)`` mapped to [0, 1)."""
    digest = hashlib.sha256(f"{seed}\0{normalize_space(key).casefold()}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def split_of(entry: str, fractions: Sequence[float], seed: int) -> str:
    """The split of one entry under ``--split-by entry``: SHA-256 of ``(seed, casefolded entry)`` mapped to [0, 1)
    and cut by the fractions.

    Hashing (rather than shuffling) makes an entry's split depend only on the seed and the entry
    itself, so adding or removing other entries never moves it; the split sizes follow the
    fractions approximately (binomially), not exactly.
    """
    u = _unit(entry, seed)
    train, dev, _ = fractions
    if u < train:
        return "train"
    if u < train + dev:
        return "dev"
    return "test"


def definition_groups(entries: Sequence[Entry]) -> list[int]:
    """The group of each entry: entries that share a definition (:func:`normalize_definition`), directly or
    through others, are one group (a union-find over the entries). A group is numbered by its first entry."""
    parent = list(range(len(entries)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        for definition in entry.definitions:
            key = normalize_definition(definition)
            if not key:
                continue
            j = first.setdefault(key, i)
            if j != i:
                a, b = find(i), find(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)  # the root is the group's first entry
    return [find(i) for i in range(len(entries))]


def group_splits(sizes: Sequence[int], keys: Sequence[str], fractions: Sequence[float], seed: int) -> list[str]:
    """The split of each group of entries (``sizes[g]`` entries, named by ``keys[g]``), the entries' fractions
    kept as closely as whole groups allow, deterministic for a seed.

    A group of several entries larger than half the share of a smaller split that is not empty (WordNet's
    synonyms chain 27,699 entries into one group) goes to the largest split: placed elsewhere it would swamp
    it. The others are ordered by SHA-256 of ``(seed, key)`` and laid end to end over the entries left; each
    goes to the split in whose share the middle of its run of entries falls, so a group's split does not
    depend on its size.
    """
    total = sum(sizes)
    targets = [share * total for share in fractions]
    largest = max(range(len(SPLITS)), key=lambda k: (fractions[k], -k))
    smaller = [targets[k] for k in range(len(SPLITS)) if k != largest and targets[k] > 0]
    limit = max(1.0, min(smaller) / 2) if smaller else float("inf")
    result = [""] * len(sizes)
    left = list(targets)
    for g, size in enumerate(sizes):
        if size > limit:
            result[g] = SPLITS[largest]
            left[largest] -= size
    left = [max(0.0, t) for t in left]
    rest = sorted((g for g in range(len(sizes)) if not result[g]), key=lambda g: (_unit(keys[g], seed), keys[g]))
    remaining = sum(sizes[g] for g in rest)
    scale = remaining / sum(left) if sum(left) > 0 else 0.0
    bounds = [sum(left[: k + 1]) * scale for k in range(len(SPLITS))]
    placed = 0
    for g in rest:
        middle = placed + sizes[g] / 2
        k = next((k for k, bound in enumerate(bounds) if middle < bound), None)
        if k is None:  # nothing left to share (the large groups filled every split): the largest
            k = largest
        result[g] = SPLITS[k]
        placed += sizes[g]
    return result


def assign_splits(
    entries: Iterable[Entry],
    fractions: Sequence[float] | str = (1.0, 0.0, 0.0),
    seed: int = 42,
    by: str = "definition-group",
) -> list[Entry]:
    """Return copies of ``entries`` with ``split`` assigned (the default gives every entry ``train``: DefSent+
    trains on the whole dictionary).

    ``by="definition-group"`` (``--split-by``'s default): entries that share a definition (FOLDOC's aliases,
    WordNet's synonyms under one synset gloss) are one group (:func:`definition_groups`), and the groups are
    split (:func:`group_splits`), so no held-out definition is also a training one. ``by="entry"``: each
    entry by itself (:func:`split_of`), as before; a definition shared by entries can then be in several splits.
    """
    if by not in SPLIT_BY:
        raise DefsentError(f"--split-by must be one of {', '.join(SPLIT_BY)}, got {by!r}")
    fractions = parse_fractions(fractions)
    entries = list(entries)
    if by == "entry":
        split = [dataclasses.replace(e, split=split_of(e.entry, fractions, seed)) for e in entries]
        how = "split by hash"
    else:
        groups = definition_groups(entries)
        members: dict[int, list[int]] = {}
        for i, g in enumerate(groups):
            members.setdefault(g, []).append(i)
        roots = list(members)
        keys = [min(normalize_space(entries[i].entry).casefold() for i in members[g]) for g in roots]
        chosen = dict(zip(roots, group_splits([len(members[g]) for g in roots], keys, fractions, seed), strict=True))
        split = [dataclasses.replace(e, split=chosen[g]) for e, g in zip(entries, groups, strict=True)]
        how = f"in {len(roots):,} groups sharing definitions"
    counts = Counter(e.split for e in split)
    empty = [name for name, share in zip(SPLITS, fractions, strict=True) if share > 0 and not counts[name]]
    if split and empty:
        warn(f"--split gives {', '.join(empty)} no entries at all ({len(split)} entries {how})")
    return split
