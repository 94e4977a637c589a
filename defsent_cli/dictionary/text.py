"""What every dictionary reader shares: the pair it yields and the one whitespace cleaning (its own module so
the readers, :mod:`.sources` and the dictd and glossary readers it calls, import it without a cycle)."""

from __future__ import annotations

import re

Pair = tuple[str, str, str]
"""``(entry, definition, source)`` as the readers yield them."""

_WHITESPACE = re.compile(r"\s+")


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace to one space and strip the ends."""
    return _WHITESPACE.sub(" ", text).strip()


# a sentence ends at . ! ? followed by space and a capital, digit, quote or bracket, unless the word before the
# point is a common abbreviation
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "cf.", "vs.", "mr.", "mrs.", "dr.", "st.", "no.", "esp.", "approx.", "fig."}


def first_sentence(text: str) -> str:
    """The first sentence of a definition (``build-dict --first-sentence``): a FOLDOC or GCIDE definition is often a
    paragraph whose first sentence defines and the rest explains. The text is kept whole where no sentence ends."""
    text = normalize_space(text)
    for match in _SENTENCE_END.finditer(text):
        head = text[: match.start()]
        last_word = head.rsplit(" ", 1)[-1].lower()
        if last_word in _ABBREVIATIONS or (len(last_word) == 2 and last_word[0].isalpha()):  # "A." of a name
            continue
        return head
    return text


# why a definition is dropped as it is merged (build-dict --stats counts them, by source)
NO_WORD = "no word"
HEADWORD = "only the headword"
DUPLICATE = "duplicate"
DROP_REASONS = {  # the words build-dict --stats uses
    NO_WORD: "no word in it (. ] 1.)",
    HEADWORD: "only its headword",
    DUPLICATE: "a duplicate in its entry",
}
LETTER = re.compile(r"[^\W\d_]")  # a letter of any script
ALPHANUMERIC = re.compile(r"[^\W_]")  # a letter or a digit of any script
_ENDS = " \t.,;:!?\"'()[]{}"


def not_a_definition(entry: str, definition: str) -> str | None:
    """Why a (whitespace-folded, non-empty) definition of ``entry`` is none: :data:`NO_WORD` when it holds no
    letter (FOLDOC's ``.``, GCIDE's ``]``, ``1.``), :data:`HEADWORD` when it is only the entry's own headword
    (a block holding nothing else); None for a definition."""
    if not LETTER.search(definition):
        return NO_WORD
    if definition.strip(_ENDS).casefold() == normalize_space(entry).strip(_ENDS).casefold():
        return HEADWORD
    return None
