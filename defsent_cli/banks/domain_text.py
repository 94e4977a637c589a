"""An entry bank from domain text (``embed-entries --texts``): each entry that a corpus of the user's domain
mentions is embedded as the mean of the lines that mention it, instead of the mean of its definitions.

DefSent+ pulls each definition onto its entry's bank row. Built from definitions (AC, AMP), the row says what
the dictionary says a term is; built from domain text, it says how the domain uses the term, so training
pulls a glossary's definitions towards the domain's own sentences. An entry is found in a line when the line
holds its words in a row, whole and case-insensitive (:func:`words`: ``C++``, ``node.js`` and ``C#`` are
words; ``tree`` is not found in ``street``); up to ``per_entry`` lines per entry, the first ones of the file.
An entry made of English stop words alone (scikit-learn's list: ``to``, ``in``, ``not``, ``one``, also
``system``) is not looked up: a glossary of computing defines ``to`` and ``not``, and a third of the lines
of a corpus would stand for them. Entries found in no line keep the mean of their definitions, so the bank
has every row the dictionary's has and training checks it against the dictionary as any other bank
(docs/formats.md, "Bank").

Written here because no library does this: it is a phrase lookup over a stream of lines, bounded by the
entries (a set of their word tuples) and ``per_entry`` lines each, never by the corpus.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..formats.dictionary import bank_rows
from ..formats.plain import check_plain
from ..io import check_input, iter_lines, sha256_file
from .entry_bank import Definitions, Part

WORD = re.compile(r"\w(?:[\w+#.'-]*\w)?[+#]*")
MAX_WORDS = 8  # longer entries are looked up by their first 8 words


def words(text: str) -> tuple[str, ...]:
    """The lower-cased words of ``text`` as the lookup compares them (``"Using C++ with Node.js?"`` ->
    ``("using", "c++", "with", "node.js")``); entries and lines go through the same function."""
    return tuple(WORD.findall(text.lower()))[:MAX_WORDS]


@dataclass
class DomainTexts:
    """The lines of a corpus, one or several files read in the order given (``paths``), that mention each entry
    (``found``, by the entry's :func:`words`), at most ``per_entry`` each, in that order; ``lines`` is how many
    non-empty lines were read, ``mentioning`` how many of each file's lines mention an entry."""

    paths: list[Path]
    per_entry: int
    found: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    lines: int = 0
    mentioning: dict[Path, int] = field(default_factory=dict)

    def texts_of(self, entry: str) -> list[str] | None:
        return self.found.get(words(entry))

    def attrs(self, entries_found: int) -> dict:
        """What the bank records of its texts (docs/formats.md); ``entries_found``: :meth:`occurrences`'s."""
        return {  # several files: their paths and hashes one a line, in the order read
            "texts": "\n".join(map(str, self.paths)),
            "texts_sha256": "\n".join(sha256_file(path) for path in self.paths),
            "texts_lines": self.lines,
            "texts_per_entry": self.per_entry,
            "entries_from_texts": entries_found,
        }

    def occurrences(self, dictionary: Path, splits: Collection[str]) -> tuple[int, int]:
        """How many (entry, text) pairs the bank of ``splits`` averages once :meth:`rewrite` has replaced the
        definitions of the entries found (the progress bar's total), and how many of its entries were found."""
        pairs = found = 0
        for row, entry in bank_rows(dictionary, splits, unique=False):
            if row is not None:
                lines = self.texts_of(entry.entry)
                pairs += len(lines or entry.definitions)
                found += lines is not None
        return pairs, found

    def rewrite(self, parts: Iterable[Part]) -> Iterator[Part]:
        """Each part with the definitions of every entry the corpus mentions replaced by the lines that do; the
        other entries keep theirs. Rows are unchanged: the bank's rows, entries and order are the dictionary's."""
        return (_rewrite(part, self) for part in parts)


def find_texts(paths: str | Path | Sequence[str | Path], entries: Iterable[str], per_entry: int) -> DomainTexts:
    """Read ``paths`` (one file, or several one after another in the order given; one text per line) once and
    keep, for each entry they mention, its first ``per_entry`` lines (a line once per entry, however often it
    names the entry)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    paths = [check_input(path) for path in ([paths] if isinstance(paths, str | Path) else paths)]
    for k, path in enumerate(paths):
        if path.resolve() in {earlier.resolve() for earlier in paths[:k]}:
            raise DefsentError("is given twice with --texts: its lines would count twice", path=path)
    wanted = {w for w in map(words, entries) if w and not ENGLISH_STOP_WORDS.issuperset(w)}
    longest = max(map(len, wanted), default=0)
    found: dict[tuple[str, ...], list[str]] = {}
    lines, mentioning = 0, {}
    for path in paths:
        read = mentions = 0
        for number, line in iter_lines(path):
            text = line.strip()
            if not text:
                continue
            if not read:
                check_plain(line, path, "; --texts takes your domain's text, one text per line", number)
            read += 1
            tokens = WORD.findall(text.lower())
            seen = set()
            for n in range(1, longest + 1):
                for i in range(len(tokens) - n + 1):
                    key = tuple(tokens[i : i + n])
                    if key in wanted and key not in seen:
                        seen.add(key)
                        kept = found.setdefault(key, [])
                        if len(kept) < per_entry:
                            kept.append(text)
            mentions += bool(seen)
        if not read:
            raise DefsentError("no text in the file (one text per line)", path=path)
        lines += read
        mentioning[path] = mentions
    return DomainTexts(paths, per_entry, found, lines, mentioning)


def _rewrite(part: Part, texts: DomainTexts) -> Part:
    old = part.definitions
    own: dict[int, list[str]] = {}
    for text, row in zip(old.text_of.tolist(), old.rows.tolist(), strict=True):
        own.setdefault(row, []).append(old.texts[text])
    index: dict[str, int] = {}
    text_of, rows = [], []
    for row, entry in enumerate(part.entries):
        for text in texts.texts_of(entry) or own.get(row, []):
            text_of.append(index.setdefault(text, len(index)))
            rows.append(row)
    arrays = (np.asarray(text_of, dtype=np.int64), np.asarray(rows, dtype=np.int64))
    return Part(part.first, part.entries, Definitions(list(index), *arrays), part.pos)
