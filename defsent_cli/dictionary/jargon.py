"""The Jargon File's markup (as ``dict-jargon`` installs it): :func:`parse_jargon` reads a block into its senses
with their part of speech and labels. :mod:`.dictd` reads the database."""

from __future__ import annotations

import re
from typing import Any

from .dictd_text import CONTEXT, Block, Sense, finish, numbered_senses, split_paragraphs
from .text import normalize_space

_JARGON_POS = re.compile(r"^((?:n|v|vt|vi|adj|adv|interj|pron|prep|conj|pl|excl)\.(?:,\s*(?:n|v|vt|vi|adj|adv)\.)*)\s+")


def parse_jargon(block: str, include_examples: bool = False) -> Block:
    """A Jargon File block: the headword, a line with its pronunciation (``/foo/``) and part of speech, then
    paragraphs. The definition is the first paragraph (each numbered sense's where there are some), without a
    leading bracket (``[from the Unix null device ...]`` etymology dropped, a short one such as ``[very
    common]`` kept as a label); the part of speech (of the entry, or the sense's own ``interj.``) as ``pos``."""
    lines = block.split("\n")
    cut = next((k for k, line in enumerate(lines) if not line.strip()), len(lines))
    head = [x.strip() for x in lines[:cut] if x.strip()]
    names = head[:1]
    pos = None
    for extra in head[1:]:
        extra = normalize_space(re.sub(r"/[^/]*/", " ", extra)).strip(" ,")
        if extra and re.fullmatch(r"(?:[a-z]+\.(?:,\s*)?)+", extra):
            pos = extra
    paragraphs = split_paragraphs(lines[cut:])
    paragraphs = [p for p in paragraphs if not re.fullmatch(r"\[[^\[\]]*\]", p)]  # a bracket alone: etymology
    _, senses = numbered_senses(paragraphs)
    if not senses:
        senses = paragraphs[:1]
    out = []
    for text in senses:
        meta: dict[str, Any] = {}
        text = re.sub(r"^/[^/]{1,60}/,?\s*", "", text)  # a sense's own pronunciation
        own = _JARGON_POS.match(text)
        if own:
            meta["pos"] = own.group(1)
            text = text[own.end() :]
        elif pos:
            meta["pos"] = pos
        context = CONTEXT.match(text)
        if context:
            label = normalize_space(context.group(1))
            if len(label.split()) <= 3 and not label.startswith(("from ", "orig")):
                meta["labels"] = [label]
            text = text[context.end() :]
        text = finish(text)
        if text:
            out.append(Sense(text, None, meta))
    return Block(names or None, out)
