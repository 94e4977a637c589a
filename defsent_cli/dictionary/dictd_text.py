"""What the parsers of dictd databases' blocks share (:mod:`.dictd` reads the database, :mod:`.gcide`,
:mod:`.foldoc` and :mod:`.jargon` parse their blocks): a parsed :class:`Block` and its :class:`Sense` s, the
final cleaning of a definition, blank-line paragraphs, and the numbered senses and leading bracket that FOLDOC
and the Jargon File both write."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .text import normalize_space


@dataclass
class Sense:
    """One definition of a block, with the headwords it defines (None: the block's own headwords)."""

    text: str
    names: list[str] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Block:
    """A parsed block: its own headwords (None: the index line's) and its senses."""

    names: list[str] | None
    senses: list[Sense]


_BRACES = re.compile(r"[{}]")
_CROSS_REFERENCE = re.compile(r"^(?:see|cf\.)\s[^{}]{0,30}\{[^{}]*\}[^{}]{0,30}$", re.IGNORECASE)


def finish(text: str) -> str:
    """Cross-reference braces dropped (their text kept), whitespace folded, dangling separators trimmed; ``""``
    for a definition that is only a cross-reference (``See {Bank}.``)."""
    text = normalize_space(text)
    if _CROSS_REFERENCE.match(text):
        return ""
    text = re.sub(r"(?<=\w)\.\.(?!\.)", ".", _BRACES.sub("", text))  # {Inc.}. -> Inc.
    return text.strip(" ;,:-").strip()


def split_paragraphs(lines: list[str]) -> list[str]:
    """Blank-line separated paragraphs, each folded to one line."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return paragraphs


CONTEXT = re.compile(r"^\[\{?([^\[\]{}]+)\}?\]\s*")  # FOLDOC's [{Usenet}], the Jargon File's [very common]
_SENSE = re.compile(r"^(\d+)\.\s+")


def numbered_senses(paragraphs: list[str]) -> tuple[str, list[str]]:
    """``(preface, senses)``: the paragraphs that start ``1.``, ``2.``, ... (a ``1.`` inside the first paragraph,
    after a preface, counts when a later paragraph starts ``2.``); no senses when there is no ``2.``."""
    numbered = [k for k, p in enumerate(paragraphs) if _SENSE.match(p)]
    numbers = [int(_SENSE.match(paragraphs[k]).group(1)) for k in numbered]
    preface = ""
    if 2 in numbers and 1 not in numbers and paragraphs:
        first = re.search(r"(?:^|\s)1\.\s+", paragraphs[0])
        if first:
            preface = paragraphs[0][: first.start()]
            paragraphs = [paragraphs[0][first.start() :].strip(), *paragraphs[1:]]
            numbered = [k for k, p in enumerate(paragraphs) if _SENSE.match(p)]
            numbers = [int(_SENSE.match(paragraphs[k]).group(1)) for k in numbered]
    if 1 not in numbers or 2 not in numbers:
        return "", []
    return preface, [_SENSE.sub("", paragraphs[k], count=1) for k in numbered]
