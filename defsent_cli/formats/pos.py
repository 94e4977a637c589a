"""Parts of speech, one scale for every source (docs/formats.md, "Dictionary"): :func:`normalize_pos` maps a
source's tag (WordNet's ``n v a s r``, GCIDE's ``n.``, ``v. t.``, ``a.``, ``adv.``, the Jargon File's ``n.``,
``vt.``, ``adj.``, ``interj.``) to one of :data:`POS_NAMES`; :func:`entry_pos` gives an entry's set of them as
the bank keeps it (a comma-joined string per row). No torch, no numpy."""

from __future__ import annotations

import re
from collections.abc import Iterable

POS_NAMES = ("noun", "verb", "adj", "adv", "other")

_FIRST = re.compile(r"[a-z]+")
_TAGS = {
    "noun": "noun", "n": "noun", "nn": "noun", "pl": "noun", "pron": "noun", "prop": "noun",
    "verb": "verb", "v": "verb", "vb": "verb", "vt": "verb", "vi": "verb",
    "adj": "adj", "adjective": "adj", "a": "adj", "s": "adj", "satellite": "adj",
    "adv": "adv", "adverb": "adv", "r": "adv",
}  # fmt: skip


def normalize_pos(tag: object) -> str | None:
    """``noun``, ``verb``, ``adj``, ``adv`` or ``other`` for a source's part-of-speech tag; None for no tag.

    The first word of the tag decides (``v. t.`` -> verb, ``n. pl.`` -> noun, ``a. & n.`` -> adj); a tag that is
    none of the four (``interj.``, ``prep.``, ``conj.``) is ``other``."""
    if not isinstance(tag, str) or not tag.strip():
        return None
    first = _FIRST.search(tag.strip().lower())
    if first is None:
        return "other"
    return _TAGS.get(first.group(0), "other")


def check_pos(name: str) -> str:
    """A part of speech asked for (``--pos``, ``pos:``, the ``pos`` field): one of :data:`POS_NAMES`, or a tag that
    normalises to one; ValueError naming the choices otherwise."""
    value = name.strip().lower()
    if value in POS_NAMES:
        return value
    found = normalize_pos(value)
    if found is None or (found == "other" and value not in ("interj", "prep", "conj")):
        raise ValueError(f"unknown part of speech {name!r}; use one of {', '.join(POS_NAMES)}")
    return found


def entry_pos(meta: Iterable[dict] | None) -> str:
    """An entry's parts of speech as the bank keeps them: the normalised tags of its definitions' ``meta``, in
    :data:`POS_NAMES` order, comma-joined (``noun,adj``); "" when none says."""
    found = {normalize_pos(m.get("pos")) for m in meta or () if isinstance(m, dict)}
    return ",".join(name for name in POS_NAMES if name in found)
