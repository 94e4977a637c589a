"""Dictionary sources: WordNet 3.0 database folders, Oxford (Ishiwatari et al. 2019) files,
``entry<TAB>definition`` TSV, the DefSent+ CSV and dictionary JSONL.

Readers yield ``(entry, definition, source)`` pairs (or :class:`Entry` objects for JSONL);
:mod:`.build` merges them into a dictionary.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import DefsentError
from ..formats.dictionary import Entry, iter_entries
from ..io import iter_lines

Pair = tuple[str, str, str]
"""``(entry, definition, source)`` as the readers yield them."""

FORMATS = ("auto", "wordnet", "oxford", "tsv", "defsent-csv", "jsonl")
DEFAULT_WORDNET_DIR = Path("/usr/share/wordnet")
WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
DEFSENT_SEPARATOR = "<|list_more_def|>"
ENCODING_HINT = "; pass --encoding (e.g. utf-16 for the DefSent+ CSV)"
WORDNET_HINT = "pass a WordNet database directory (apt-get install wordnet-base gives /usr/share/wordnet) or files"

_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")
_WHITESPACE = re.compile(r"\s+")


Item = Pair | Entry


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace to one space and strip the ends."""
    return _WHITESPACE.sub(" ", text).strip()


# --------------------------------------------------------------------------- readers


def _sniff_encoding(path: str | Path, encoding: str) -> str:
    """Switch the default UTF-8 to UTF-16 when the file starts with a UTF-16 byte-order mark.

    Such a file can never be valid UTF-8 (0xFF/0xFE are not UTF-8 bytes), so this only
    turns a certain decode error into the intended reading.
    """
    if str(path) == "-" or encoding.replace("_", "-").lower() not in ("utf-8", "utf8"):
        return encoding
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
    except OSError:
        return encoding  # open_text reports missing files / directories
    return "utf-16" if head in (b"\xff\xfe", b"\xfe\xff") else encoding


def _text_lines(path: str | Path, encoding: str) -> Iterator[tuple[int, str]]:
    """Non-blank lines with numbers; a leading byte-order mark is dropped."""
    for number, line in iter_lines(path, _sniff_encoding(path, encoding), ENCODING_HINT):
        if number == 1:
            line = line.lstrip("\ufeff")
        if line.strip():
            yield number, line


def parse_wordnet_line(line: str, include_examples: bool = False) -> tuple[list[str], str]:
    """Parse one ``data.*`` synset line into ``(lemmas, gloss)``; raises ValueError when malformed.

    Format: ``offset lex_filenum ss_type w_cnt word lex_id [word lex_id...] p_cnt ... | gloss``
    with ``w_cnt`` and ``lex_id`` hexadecimal. Lemmas get ``_`` -> space and lose the adjective
    markers ``(a)``, ``(p)``, ``(ip)``. The gloss is cut before the first ``; "`` (the examples)
    unless ``include_examples``.
    """
    head, bar, gloss = line.partition(" | ")
    fields = head.split()
    if len(fields) < 4 or not fields[0].isdigit():
        raise ValueError("expected 'offset lex_filenum ss_type w_cnt ...'")
    try:
        w_cnt = int(fields[3], 16)
    except ValueError:
        raise ValueError(f"word count {fields[3]!r} is not hexadecimal") from None
    if w_cnt < 1 or len(fields) < 4 + 2 * w_cnt:
        raise ValueError(f"word count {fields[3]} does not match the words on the line")
    lemmas = []
    for i in range(w_cnt):
        word = _ADJ_MARKER.sub("", fields[4 + 2 * i])
        lemmas.append(word.replace("_", " ").strip())
    gloss = gloss.strip()
    if not include_examples:
        gloss = gloss.split('; "', 1)[0].strip()
        # A few WordNet glosses end in a dangling ';' ("...as in the expression "on the job";").
        gloss = gloss.rstrip(";").rstrip()
    return lemmas, gloss


def read_wordnet(directory: str | Path, include_examples: bool = False) -> Iterator[Pair]:
    """Yield ``(lemma, gloss, "wordnet")`` for every lemma of every synset in a WordNet 3.0 directory.

    Reads ``data.noun``, ``data.verb``, ``data.adj``, ``data.adv`` (those present; at least one),
    skipping the licence header lines (they start with two spaces).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DefsentError(f"not a directory; {WORDNET_HINT}", path=directory)
    files = [directory / name for name in WORDNET_FILES if (directory / name).is_file()]
    if not files:
        raise DefsentError(f"no WordNet data files ({', '.join(WORDNET_FILES)}); {WORDNET_HINT}", path=directory)
    for path in files:
        for number, line in iter_lines(path):
            if line.startswith("  ") or not line.strip():
                continue
            try:
                lemmas, gloss = parse_wordnet_line(line, include_examples)
            except ValueError as exc:
                raise DefsentError(f"not a WordNet synset line: {exc}", path=path, line=number) from None
            for lemma in lemmas:
                yield lemma, gloss, "wordnet"


def read_oxford(path: str | Path, encoding: str = "utf-8") -> Iterator[Pair]:
    """Yield pairs from Ishiwatari et al. (2019) files: ``word%oxford.N<TAB>pos<TAB>source<TAB>definition...``.

    The entry is the text before the last ``%``; the source is the tag after it (``oxford``).
    """
    for number, line in _text_lines(path, encoding):
        columns = line.split("\t")
        if len(columns) < 4:
            raise DefsentError(
                f"expected at least 4 tab-separated columns (word%oxford.N, pos, source, definition), "
                f"found {len(columns)}; pass --format",
                path=path,
                line=number,
            )
        word, percent, tag = columns[0].rpartition("%")
        if not percent:
            word, tag = columns[0], "oxford"
        entry = normalize_space(word)
        if not entry:
            raise DefsentError("empty entry in column 1", path=path, line=number)
        yield entry, columns[3], tag.split(".", 1)[0] or "oxford"


def read_tsv(path: str | Path, encoding: str = "utf-8", source: str | None = None) -> Iterator[Pair]:
    """Yield pairs from ``entry<TAB>definition`` lines (one definition per line; source = file stem)."""
    source = source or Path(path).stem
    for number, line in _text_lines(path, encoding):
        entry, tab, definition = line.partition("\t")
        if not tab:
            raise DefsentError("expected 'entry<TAB>definition' (no tab on this line)", path=path, line=number)
        if not entry.strip():
            raise DefsentError("empty entry in column 1", path=path, line=number)
        yield entry, definition, source


def read_defsent_csv(path: str | Path, encoding: str = "utf-8", source: str | None = None) -> Iterator[Pair]:
    """Yield pairs from the DefSent+ CSV: ``entry<TAB>def1<|list_more_def|>def2...`` (often UTF-16)."""
    source = source or Path(path).stem
    for number, line in _text_lines(path, encoding):
        columns = line.split("\t")
        if len(columns) < 2:
            raise DefsentError(
                f"expected 'entry<TAB>def1{DEFSENT_SEPARATOR}def2...' (no tab on this line); "
                "if the file is UTF-16, pass --encoding utf-16",
                path=path,
                line=number,
            )
        if not columns[0].strip():
            raise DefsentError("empty entry in column 1", path=path, line=number)
        for definition in columns[1].split(DEFSENT_SEPARATOR):
            yield columns[0], definition, source


def read_jsonl(path: str | Path, encoding: str = "utf-8") -> Iterator[Entry]:
    """Yield validated :class:`Entry` objects from a dictionary JSONL file (repeats allowed: they merge)."""
    return iter_entries(path, encoding, unique=False, hint=ENCODING_HINT)


def detect_format(path: str | Path, encoding: str = "utf-8") -> str:
    """Guess a source's format: a directory is WordNet; ``.jsonl`` -> jsonl; ``.csv`` -> defsent-csv;
    a first line whose first column holds ``%oxford`` or that has >= 4 tab columns -> oxford; else tsv."""
    path = Path(path)
    if str(path) == "-":
        raise DefsentError("cannot detect the format of stdin; pass --format", path=path)
    if path.is_dir():
        return "wordnet"
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".csv":
        return "defsent-csv"
    for _, line in _text_lines(path, encoding):
        columns = line.split("\t")
        return "oxford" if "%oxford" in columns[0] or len(columns) >= 4 else "tsv"
    return "tsv"


def read_source(
    path: str | Path, fmt: str = "auto", encoding: str = "utf-8", include_examples: bool = False
) -> Iterator[Item]:
    """Yield pairs (or entries, for JSONL) from one source in the given or detected format."""
    if fmt not in FORMATS:
        raise DefsentError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt == "auto":
        fmt = detect_format(path, encoding)
    if fmt == "wordnet":
        return read_wordnet(path, include_examples)
    if Path(path).is_dir():
        raise DefsentError(f"is a directory, but --format is {fmt}; directories are read as WordNet", path=path)
    readers = {"oxford": read_oxford, "tsv": read_tsv, "defsent-csv": read_defsent_csv, "jsonl": read_jsonl}
    return readers[fmt](path, encoding)
