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
# point is a common abbreviation or an initial, a bracket is still open, or what it ends is no sentence (below)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "cf.", "vs.", "mr.", "mrs.", "dr.", "st.", "no.", "esp.", "approx.", "fig.",
                  "ca."}  # fmt: skip
_INITIALS = re.compile(r"^(?:[^\W\d_]\.)+$")  # "A.", "D.L.": a name's initials, no sentence end
#: a word: two letters in a row, or one character of a script that writes a word with one (CJK, kana, Hangul)
WORD = re.compile(r"[^\W\d_]{2,}|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_YEAR = r"\(?(?:1[0-9]|20)\d\d(?:\s*[-\u2013]\s*(?:\d{2,4}|present))?\)?"
_DATED = re.compile(rf"^{_YEAR}[.,]?$")
# the small words a byline holds besides names: "Arvind and R.S. Nikhil", "D.A. Harrison at Newcastle", "ca 1966"
_BYLINE_WORDS = {"and", "at", "ca", "ca.", "c.", "et", "al", "al.", "of", "von", "van", "de", "&"}
_OPENING, _CLOSING = "([{", ")]}"


def has_word(text: str) -> bool:
    """Whether ``text`` holds a word (:data:`WORD`): ``1.``, ``(C.``, ``D.L.``, ``1856-1922.`` hold none."""
    return WORD.search(text) is not None


def _byline(head: str) -> bool:
    """Who and when, FOLDOC's language list's opening (``Thompson, 1956.``, ``IBM 1962.``, ``D.L. Abt.``,
    ``R.C. Holt & J.R. Cordy, U Toronto, 1982.``): names (no word in lower case but the small ones of a byline)
    with initials or a year."""
    tokens = head.split()
    dated = any(_DATED.match(t) or _INITIALS.match(t.strip("(),")) for t in tokens)
    return dated and all(not t[:1].islower() or t.rstrip(",") in _BYLINE_WORDS for t in tokens)


def _sentence(head: str) -> bool:
    """Whether ``head``, which ends at a point followed by a capital, ends a sentence: not after an abbreviation
    or an initial (``e.g.``, ``J.``, ``(C.``, ``D.L.``), not inside a bracket, and holding a word that is not only
    a byline (a sense number ``1.``, a date ``1856-1922.``, ``Thompson, 1956.``, ``D.L. Abt.``)."""
    last = head.rsplit(" ", 1)[-1].lstrip("([{\"'").lower()
    if last in _ABBREVIATIONS or _INITIALS.match(last):
        return False
    if sum(head.count(c) for c in _OPENING) > sum(head.count(c) for c in _CLOSING):
        return False
    return has_word(head) and not _byline(head)


def first_sentence(text: str) -> str:
    """The first sentence of a definition (``build-dict --first-sentence``): a FOLDOC or GCIDE definition is often a
    paragraph whose first sentence defines and the rest explains. A numbered sense (``1. Boolean algebra.``), a
    date or a byline first (``1856-1922. The Russian mathematician ...``, ``D.L. Abt. A language ...``) stays with
    the sentence it opens; the text is kept whole where no sentence ends."""
    text = normalize_space(text)
    for match in _SENTENCE_END.finditer(text):
        head = text[: match.start()]
        if _sentence(head):
            return head
    return text


# what a cut at a point leaves that is no sentence: a sense number, a letter, initials or a year alone
_FRAGMENT = re.compile(rf"^[(\[\"']*(?:\d{{1,3}}|[^\W\d_]|(?:[^\W\d_]\.)+[^\W\d_]|{_YEAR})[.)]$")


def is_fragment(definition: str) -> bool:
    """Whether a (whitespace-folded) definition is a fragment, no sentence: ``1.``, ``a)``, ``(C.``, ``D.L.``,
    ``1856-1922.``, ``1958.`` (what a sentence splitter cutting at numbered senses, initials and dates leaves).
    A number stands (a dozen is ``12``; pi ``3.14159``)."""
    return _FRAGMENT.match(definition) is not None and not has_word(definition)


# why a definition is dropped as it is merged (build-dict --stats counts them, by source)
NO_WORD = "no word"
FRAGMENT = "fragment"
HEADWORD = "only the headword"
DUPLICATE = "duplicate"
DROP_REASONS = {  # the words build-dict --stats uses
    NO_WORD: "no word in it (. ] 1.)",
    FRAGMENT: "a fragment, no sentence (1. (C. D.L. 1856-1922.)",
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
