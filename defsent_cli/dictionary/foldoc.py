"""FOLDOC's markup (the Free On-line Dictionary of Computing, as ``dict-foldoc`` installs it):
:func:`parse_foldoc` reads a block into its senses with their categories and labels. :mod:`.dictd` reads the
database."""

from __future__ import annotations

import re
from typing import Any

from .dictd_text import CONTEXT, Block, Sense, finish, numbered_senses, split_paragraphs
from .text import normalize_space

_DATE = re.compile(r"^\(\d{4}-\d{2}-\d{2}\)$")
_CATEGORIES = re.compile(r"^<([^<>]+)>\s*")
_EMAIL = re.compile(r"\s*<[^<>\s]+@[^<>\s]+>")
_LINK = re.compile(r"\{([^{}]*?)\s*\((?:https?://|ftp://|[\w./-]+\.html?\b)[^()]*\)\}")


def parse_foldoc(block: str, include_examples: bool = False) -> Block:
    """A FOLDOC block: the headword and its aliases, one a line, then paragraphs. The definition is the first
    paragraph (each numbered sense's, where there are ``1.``, ``2.``, ...); its ``<category, ...>`` tags are
    kept as ``categories`` (a sense without tags takes the entry's), a leading ``[{Usenet}]`` as a label;
    the date line, the ``[{Jargon File}]`` source line and the later paragraphs are dropped."""
    lines = block.split("\n")
    cut = next((k for k, line in enumerate(lines) if not line.strip()), len(lines))
    names = [normalize_space(x) for x in lines[:cut] if x.strip()]
    paragraphs = [p for p in split_paragraphs(lines[cut:]) if not _DATE.match(p) and not re.fullmatch(r"\[.*\]", p)]
    preface, senses = numbered_senses(paragraphs)
    if not senses:
        senses = paragraphs[:1]
    base = _CATEGORIES.match(preface.strip() or (paragraphs[0] if paragraphs else ""))
    entry_categories = [c.strip() for c in base.group(1).split(",") if c.strip()] if base else []
    out = []
    for text in senses:
        meta: dict[str, Any] = {}
        labels = []
        categories = entry_categories
        while True:
            tags = _CATEGORIES.match(text)
            if tags:
                categories = [c.strip() for c in tags.group(1).split(",") if c.strip()]
                text = text[tags.end() :]
                continue
            context = CONTEXT.match(text)
            if context:
                labels.append(normalize_space(context.group(1)))
                text = text[context.end() :]
                continue
            break
        if categories:
            meta["categories"] = list(categories)
        if labels:
            meta["labels"] = labels
        text = finish(_EMAIL.sub("", _LINK.sub(r"\1", text)))
        if text:
            out.append(Sense(text, None, meta))
    return Block(names or None, out)
