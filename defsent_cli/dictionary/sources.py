"""Dictionary sources: WordNet 3.0 database folders, Oxford (Ishiwatari et al. 2019) files,
``entry<TAB>definition`` TSV, the DefSent+ CSV, dictionary JSONL, dictd databases (:mod:`.dictd`: GCIDE,
FOLDOC, the Jargon File, ...) and, through pyglossary where it is installed, other glossary formats
(:mod:`.glossary`: StarDict, Babylon, XDXF, DSL, ...).

Readers yield ``(entry, definition, source)`` pairs (or :class:`Entry` objects for JSONL and dictd);
:mod:`.build` merges them into a dictionary. A reader refuses a file it cannot read, and names the format
a file given in the wrong one is in (:func:`looks_like`).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import DefsentError
from ..formats.dictionary import Entry, iter_entries
from ..formats.pos import normalize_pos
from ..io import iter_lines
from .choices import FORMATS
from .text import Pair, normalize_space, not_a_definition

# what pyglossary reads that no reader here does: --format auto sends these to it (.dsl.dz: a gzipped DSL)
GLOSSARY_SUFFIXES = (".ifo", ".bgl", ".xdxf", ".dsl", ".dsl.dz", ".mdx", ".slob", ".ldf", ".tei", ".zim")
WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
DEFSENT_SEPARATOR = "<|list_more_def|>"
ENCODING_HINT = "; pass --encoding (e.g. utf-16 for the DefSent+ CSV)"
WORDNET_HINT = "pass a WordNet database directory (apt-get install wordnet-base gives /usr/share/wordnet) or files"

_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")


Item = Pair | Entry


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


def read_wordnet_senses(directory: str | Path, include_examples: bool = False) -> Iterator[Entry]:
    """Yield an :class:`Entry` of one definition for every lemma of every synset in a WordNet 3.0 directory, its
    ``meta`` the synset's part of speech (``n v a s r`` as noun, verb, adj, adj, adv: ``formats/pos.py``).

    Reads ``data.noun``, ``data.verb``, ``data.adj``, ``data.adv`` (those present; at least one),
    skipping the licence header lines (they start with two spaces).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DefsentError(f"not a directory; {WORDNET_HINT}", path=directory)
    files = [directory / name for name in WORDNET_FILES if (directory / name).is_file()]
    if not files:
        indexes = sorted(p.name for p in directory.glob("*.index"))
        if indexes:
            raise DefsentError(
                f"holds dictd databases ({', '.join(indexes[:4])}{', ...' if len(indexes) > 4 else ''}), not "
                f"WordNet; pass one: defsent build-dict {directory / indexes[0]} -o DICT.jsonl",
                path=directory,
            )
        raise DefsentError(f"no WordNet data files ({', '.join(WORDNET_FILES)}); {WORDNET_HINT}", path=directory)
    for path in files:
        for number, line in iter_lines(path):
            if line.startswith("  ") or not line.strip():
                continue
            try:
                lemmas, gloss = parse_wordnet_line(line, include_examples)
            except ValueError as exc:
                raise DefsentError(f"not a WordNet synset line: {exc}", path=path, line=number) from None
            pos = normalize_pos(line.split(" ", 3)[2])
            for lemma in lemmas:
                yield Entry(lemma, [gloss], ["wordnet"], meta=[{"pos": pos}] if pos else None)


def read_wordnet(directory: str | Path, include_examples: bool = False) -> Iterator[Pair]:
    """Yield ``(lemma, gloss, "wordnet")`` for every lemma of every synset in a WordNet 3.0 directory
    (:func:`read_wordnet_senses` without the part of speech)."""
    for sense in read_wordnet_senses(directory, include_examples):
        yield sense.entry, sense.definitions[0], "wordnet"


def read_oxford(path: str | Path, encoding: str = "utf-8") -> Iterator[Pair]:
    """Yield pairs from Ishiwatari et al. (2019) files: ``word%oxford.N<TAB>pos<TAB>source<TAB>definition...``.

    The entry is the text before the last ``%``; the source is the tag after it (``oxford``).
    """
    refuse_other_format(path, "oxford")
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
    """Yield pairs from ``entry<TAB>definition`` lines (one definition per line; source = file stem).

    Exactly two columns: a line with more (a dictd index's offsets, an Oxford file's columns) or with no tab
    (JSONL, plain text) is refused, naming the file:line and, where known, the format the file is in.
    """
    refuse_other_format(path, "tsv")
    source = source or Path(path).stem
    for number, line in _text_lines(path, encoding):
        columns = line.split("\t")
        if len(columns) != 2:
            found = "no tab on this line" if len(columns) == 1 else f"{len(columns)} tab-separated columns"
            what = looks_like(line, path)
            raise DefsentError(
                f"expected 'entry<TAB>definition', found {found}"
                + (f": {what}" if what else "" if len(columns) == 1 else "; a definition cannot hold a tab"),
                path=path,
                line=number,
            )
        entry, definition = columns
        if not entry.strip():
            raise DefsentError("empty entry in column 1", path=path, line=number)
        yield entry, definition, source


def read_defsent_csv(path: str | Path, encoding: str = "utf-8", source: str | None = None) -> Iterator[Pair]:
    """Yield pairs from the DefSent+ CSV: ``entry<TAB>def1<|list_more_def|>def2...`` (often UTF-16)."""
    refuse_other_format(path, "defsent-csv")
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
    """Yield validated :class:`Entry` objects from a dictionary JSONL file (repeats allowed: they merge).

    A Wiktionary extract (kaikki.org JSONL: ``{"word": ..., "senses": [...]}``) is refused with the way to
    read it (``--format glossary``)."""
    refuse_other_format(path, "jsonl")
    for _, line in _text_lines(path, encoding) if str(path) != "-" else ():  # stdin is read once
        what = looks_like(line, path)
        if what and "Wiktionary" in what:
            raise DefsentError(f"is not a dictionary JSONL: {what}", path=path)
        break
    return iter_entries(path, encoding, unique=False, hint=ENCODING_HINT)


def without_non_definitions(items: Iterable[Item], dropped: Counter[tuple[str, str]] | None = None) -> Iterator[Item]:
    """The items without the definitions that are none (:func:`.text.not_a_definition`: no word in it, only its
    headword), each counted in ``dropped`` by ``(source, reason)``; an entry left without definitions is dropped.

    For the readers that cut definitions out of a database's text (dictd, glossaries): FOLDOC's ``.`` (a paragraph
    that was only a URL), GCIDE's ``1.`` (a sense number), a block holding only its headword. A file that states
    its definitions one a line (WordNet, TSV, JSONL, ...) is taken as it is."""
    for item in items:
        if isinstance(item, Entry):
            keep = []
            for k, definition in enumerate(item.definitions):
                why = not_a_definition(item.entry, normalize_space(definition))
                if why is None:
                    keep.append(k)
                elif dropped is not None:
                    dropped[(item.sources[0] if item.sources else "", why)] += 1
            if len(keep) == len(item.definitions):
                yield item
            elif keep:
                meta = [item.meta[k] for k in keep] if item.meta else None
                yield dataclasses.replace(item, definitions=[item.definitions[k] for k in keep], meta=meta)
            continue
        entry, definition, source = item
        why = not_a_definition(entry, normalize_space(definition))
        if why is None:
            yield item
        elif dropped is not None:
            dropped[(source, why)] += 1


# --------------------------------------------------------------------------- what a file is


def _json_object(line: str) -> dict | None:
    import json

    if not line.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def looks_like(line: str, path: str | Path | None = None) -> str | None:
    """What a line of a file given in the wrong format shows the file to be, with how to read it; None when
    it shows nothing known."""
    from .dictd import data_name, database_paths, looks_like_index_line

    if looks_like_index_line(line):
        what = "this is a dictd index (headword<TAB>offset<TAB>length, in base64)"
        if path is None or str(path) == "-":
            return f"{what}; pass the database's NAME.index, with its NAME.dict.dz beside it"
        if database_paths(path) is None:
            name = data_name(path)
            return (
                f"{what}, and its text {name} (or {name[: -len('.dz')]}) is not beside it: put it there, under "
                "that name (apt-get install dict-foldoc puts foldoc.index and foldoc.dict.dz in /usr/share/dictd)"
            )
        return f"{what}; pass the database: defsent build-dict {path} --format dictd (or leave --format out)"
    obj = _json_object(line)
    if obj is not None:
        if "word" in obj and "senses" in obj:
            return (
                "this is a Wiktionary extract (kaikki.org JSONL); read it with --format glossary "
                "(pip install 'defsent-cli[glossary]')"
            )
        return "this is JSONL (a JSON object per line); name it .jsonl or pass --format jsonl"
    columns = line.split("\t")
    if len(columns) >= 4 and "%oxford" in columns[0]:
        return "this is an Oxford (Ishiwatari et al. 2019) file; pass --format oxford"
    return None


def refuse_other_format(path: str | Path, fmt: str) -> None:
    """Refuse, before reading a line, a file that is another format's: gzip (a dictd .dict.dz), the data of a
    dictd database, a glossary pyglossary reads."""
    from .dictd import database_paths

    if str(path) == "-" or not Path(path).is_file():
        return  # stdin; a missing file is open_text's error
    name = Path(path).name.lower()
    if name.endswith((".dict", ".dict.dz")) and database_paths(path) is not None:
        raise DefsentError(
            f"is the text of a dictd database, not {fmt}; pass the database: --format dictd (or leave --format out)",
            path=path,
        )
    if name.endswith(GLOSSARY_SUFFIXES):
        raise DefsentError(
            f"is a glossary file ({Path(path).suffix}), not {fmt}; read it with --format glossary "
            "(pip install 'defsent-cli[glossary]')",
            path=path,
        )
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
    except OSError:
        return
    if head == b"\x1f\x8b":
        if name.endswith(".dict.dz"):
            index = Path(str(path)[: -len(".dict.dz")] + ".index").name
            raise DefsentError(
                f"is the text of a dictd database without its index {index} beside it: put the index there, "
                "under that name, and pass the database (--format dictd, or leave --format out)",
                path=path,
            )
        raise DefsentError(f"is a gzip file, not {fmt} text; gunzip it first", path=path)


def detect_format(path: str | Path, encoding: str = "utf-8") -> str:
    """Guess a source's format: a directory is WordNet; a dictd database's .index, .dict.dz, .dict or base
    name (with the index and the data beside each other) -> dictd; a glossary suffix pyglossary reads
    (:data:`GLOSSARY_SUFFIXES`) -> glossary; ``.jsonl`` -> jsonl; ``.csv`` -> defsent-csv; a first line whose
    first column holds ``%oxford`` or that has >= 4 tab columns -> oxford; else tsv."""
    from .dictd import database_paths

    path = Path(path)
    if str(path) == "-":
        raise DefsentError("cannot detect the format of stdin; pass --format", path=path)
    if path.is_dir():
        return "wordnet"
    if database_paths(path) is not None:
        return "dictd"
    if path.name.lower().endswith(GLOSSARY_SUFFIXES):
        return "glossary"
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".csv":
        return "defsent-csv"
    refuse_other_format(path, "plain")
    for _, line in _text_lines(path, encoding):
        columns = line.split("\t")
        return "oxford" if "%oxford" in columns[0] or len(columns) >= 4 else "tsv"
    return "tsv"


def read_source(
    path: str | Path,
    fmt: str = "auto",
    encoding: str = "utf-8",
    include_examples: bool = False,
    dropped: Counter[tuple[str, str]] | None = None,
) -> Iterator[Item]:
    """Yield pairs (or entries, for JSONL and dictd) from one source in the given or detected format. What the
    dictd and glossary readers cut out of a database's text and is no definition is dropped
    (:func:`without_non_definitions`), counted in ``dropped`` by ``(source, reason)``."""
    if fmt not in FORMATS:
        raise DefsentError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt == "auto":
        fmt = detect_format(path, encoding)
    if fmt == "wordnet":
        return read_wordnet_senses(path, include_examples)
    if Path(path).is_dir():
        raise DefsentError(f"is a directory, but --format is {fmt}; directories are read as WordNet", path=path)
    if fmt == "dictd":
        from .dictd import read_dictd

        return without_non_definitions(read_dictd(path, encoding, include_examples), dropped)
    if fmt == "glossary":
        from .glossary import read_glossary

        return without_non_definitions(read_glossary(path), dropped)
    readers = {"oxford": read_oxford, "tsv": read_tsv, "defsent-csv": read_defsent_csv, "jsonl": read_jsonl}
    return readers[fmt](path, encoding)
