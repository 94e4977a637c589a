"""Dictionaries: read sources (WordNet, Oxford, TSV, DefSent+ CSV, JSONL), merge, filter, split, stats.

The output is the JSONL dictionary of DESIGN.md, one entry per line, line order = entry id::

    {"entry": "revitalize", "definitions": ["give new life or vigor to"], "sources": ["wordnet"], "split": "train"}

Readers yield ``(entry, definition, source)`` pairs (or :class:`Entry` objects for JSONL);
:func:`merge` combines them into entries (DefSent+ dataset "a"), :func:`single_token` keeps
the entries that are one token for a model (dataset "c").
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import re
import statistics
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import DefsentError
from .io import iter_jsonl, iter_lines, write_jsonl

Pair = tuple[str, str, str]
"""``(entry, definition, source)`` as the readers yield them."""

SPLITS = ("train", "dev", "test")
FORMATS = ("auto", "wordnet", "oxford", "tsv", "defsent-csv", "jsonl")
DEFAULT_WORDNET_DIR = Path("/usr/share/wordnet")
WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
DEFSENT_SEPARATOR = "<|list_more_def|>"
WORDNET_HINT = "pass a WordNet database directory (apt-get install wordnet-base gives /usr/share/wordnet) or files"

_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")
_WHITESPACE = re.compile(r"\s+")


@dataclasses.dataclass
class Entry:
    """One dictionary entry: a headword or phrase with its definitions."""

    entry: str
    definitions: list[str]
    sources: list[str]
    split: str = "train"

    def to_dict(self) -> dict[str, Any]:
        """The JSONL object of DESIGN.md (key order: entry, definitions, sources, split)."""
        return {
            "entry": self.entry,
            "definitions": list(self.definitions),
            "sources": list(self.sources),
            "split": self.split,
        }


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
    for number, line in iter_lines(path, _sniff_encoding(path, encoding)):
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


def _check_strings(value: Any, name: str, path: str | Path, number: int, allow_empty: bool) -> list[str]:
    if not isinstance(value, list) or (not value and not allow_empty):
        raise DefsentError(
            f"'{name}' must be a {'' if allow_empty else 'non-empty '}list of strings", path=path, line=number
        )
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise DefsentError(f"'{name}' must hold non-empty strings, found {item!r}", path=path, line=number)
    return list(value)


def entry_from_json(obj: dict, path: str | Path, number: int) -> Entry:
    """Validate one dictionary JSONL object (DESIGN.md) into an :class:`Entry`."""
    entry = obj.get("entry")
    if not isinstance(entry, str) or not entry.strip():
        raise DefsentError("'entry' must be a non-empty string", path=path, line=number)
    definitions = _check_strings(obj.get("definitions"), "definitions", path, number, allow_empty=False)
    sources = _check_strings(obj.get("sources", []), "sources", path, number, allow_empty=True)
    split = obj.get("split", "train")
    if split not in SPLITS:
        raise DefsentError(f"'split' must be one of {', '.join(SPLITS)}, found {split!r}", path=path, line=number)
    return Entry(entry, definitions, sources, split)


def read_jsonl(path: str | Path, encoding: str = "utf-8") -> Iterator[Entry]:
    """Yield validated :class:`Entry` objects from a dictionary JSONL file."""
    for number, obj in iter_jsonl(path, encoding):
        yield entry_from_json(obj, path, number)


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


# --------------------------------------------------------------------------- merge and filters


def merge(items: Iterable[Item], lowercase: bool = False) -> list[Entry]:
    """Combine pairs / entries into one entry per headword (DefSent+ dataset "a").

    Entries match case-insensitively (``casefold`` after whitespace normalisation) and keep the
    first spelling seen (``lowercase=True`` lowercases them). Definitions are whitespace-normalised,
    empty ones dropped, duplicates dropped, first-seen order kept. Sources are recorded once each,
    in order. An :class:`Entry` input keeps its split for a new headword (pairs give ``train``).
    """
    merged: dict[str, Entry] = {}
    seen_definitions: dict[str, set[str]] = {}
    for item in items:
        if isinstance(item, Entry):
            name, definitions, sources, split = item.entry, item.definitions, item.sources, item.split
        else:
            name, definition, source = item
            definitions, sources, split = [definition], [source], "train"
        name = normalize_space(name)
        if lowercase:
            name = name.lower()
        if not name:
            continue
        key = name.casefold()
        target = merged.get(key)
        if target is None:
            target = merged[key] = Entry(name, [], [], split)
            seen_definitions[key] = set()
        seen = seen_definitions[key]
        for definition in definitions:
            definition = normalize_space(definition)
            if definition and definition not in seen:
                seen.add(definition)
                target.definitions.append(definition)
        for source in sources:
            if source not in target.sources:
                target.sources.append(source)
    return [entry for entry in merged.values() if entry.definitions]


def _is_space_prefixed(tokenizer: Any) -> bool:
    """True for byte-level BPE tokenizers (RoBERTa, GPT-2) where a word-initial token carries the space."""
    try:
        return tokenizer.tokenize(" x") != tokenizer.tokenize("x")
    except Exception:  # pragma: no cover - exotic tokenizers
        return False


def single_token(entries: Iterable[Entry], tokenizer: Any, batch_size: int = 4096) -> list[Entry]:
    """Keep the entries that are exactly one known token for ``tokenizer`` (DefSent+ dataset "c").

    No special tokens are added. For tokenizers where a leading space changes the token
    (RoBERTa-style byte-level BPE) the entry is tokenized as ``" " + entry``, as DefSent's
    ``add_prefix_space``. An entry that maps to the unknown token is dropped.
    """
    entries = list(entries)
    prefix = " " if _is_space_prefixed(tokenizer) else ""
    unk = getattr(tokenizer, "unk_token_id", None)
    kept: list[Entry] = []
    for start in range(0, len(entries), batch_size):
        chunk = entries[start : start + batch_size]
        encoded = tokenizer([prefix + e.entry for e in chunk], add_special_tokens=False, verbose=False)["input_ids"]
        kept.extend(e for e, ids in zip(chunk, encoded, strict=True) if len(ids) == 1 and ids[0] != unk)
    return kept


def min_definitions(entries: Iterable[Entry], n: int) -> list[Entry]:
    """Keep entries with at least ``n`` definitions."""
    return [e for e in entries if len(e.definitions) >= n]


def max_entries(entries: Iterable[Entry], n: int | None) -> list[Entry]:
    """Keep the first ``n`` entries (all when ``n`` is None)."""
    entries = list(entries)
    if n is None:
        return entries
    if n < 1:
        raise DefsentError(f"--max-entries must be at least 1, got {n}")
    return entries[:n]


def sample_entries(entries: Iterable[Entry], n: int | None, seed: int = 42) -> list[Entry]:
    """A seeded random sample of ``n`` entries, kept in their original order (all when ``n`` is None)."""
    entries = list(entries)
    if n is None or n >= len(entries):
        return entries
    if n < 1:
        raise DefsentError(f"--sample must be at least 1, got {n}")
    keep = sorted(random.Random(seed).sample(range(len(entries)), n))
    return [entries[i] for i in keep]


# --------------------------------------------------------------------------- splits


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


def split_of(entry: str, fractions: Sequence[float], seed: int) -> str:
    """The split of one entry: SHA-256 of ``(seed, casefolded entry)`` mapped to [0, 1) and cut by the fractions.

    Hashing (rather than shuffling) makes an entry's split depend only on the seed and the entry
    itself, so adding or removing other entries never moves it; the split sizes follow the
    fractions approximately (binomially), not exactly.
    """
    digest = hashlib.sha256(f"{seed}\0{normalize_space(entry).casefold()}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    train, dev, _ = fractions
    if u < train:
        return "train"
    if u < train + dev:
        return "dev"
    return "test"


def assign_splits(
    entries: Iterable[Entry], fractions: Sequence[float] | str = (1.0, 0.0, 0.0), seed: int = 42
) -> list[Entry]:
    """Return copies of ``entries`` with ``split`` assigned by entry (see :func:`split_of`).

    The default gives every entry ``train`` (DefSent+ trains on the whole dictionary).
    """
    fractions = parse_fractions(fractions)
    return [dataclasses.replace(e, split=split_of(e.entry, fractions, seed)) for e in entries]


# --------------------------------------------------------------------------- files


def write_dictionary(path: str | Path, entries: Iterable[Entry]) -> int:
    """Atomically write the dictionary JSONL; returns the number of entries."""
    return write_jsonl(path, (e.to_dict() for e in entries))


def read_dictionary(path: str | Path, encoding: str = "utf-8") -> list[Entry]:
    """Read and validate a dictionary JSONL (errors name file:line); line order = entry id."""
    entries = list(read_jsonl(path, encoding))
    if not entries:
        raise DefsentError("dictionary has no entries", path=path)
    return entries


def load_tokenizer(path: str | Path) -> Any:
    """Load a tokenizer from a local model folder (never downloads); failures are one-line errors."""
    path = Path(path)
    if not path.is_dir():
        raise DefsentError("not a model folder; tokenizers load only from local folders", path=path)
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # transformers raises many kinds (OSError, ValueError, KeyError...)
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise DefsentError(f"cannot load a tokenizer from this folder ({reason})", path=path) from None


# --------------------------------------------------------------------------- stats


def dictionary_stats(entries: Iterable[Entry], tokenizer: Any = None, batch_size: int = 4096) -> dict[str, dict]:
    """Per split (those present) and ``total``: entries, definitions and, with a tokenizer, the max
    and median definition length in tokens including special tokens (the DefSent+ Table 1 view)."""
    groups: dict[str, list[Entry]] = {split: [] for split in SPLITS}
    entries = list(entries)
    for e in entries:
        groups.setdefault(e.split, []).append(e)
    lengths: dict[str, list[int]] = {}
    if tokenizer is not None:
        for split, group in groups.items():
            texts = [d for e in group for d in e.definitions]
            found: list[int] = []
            for start in range(0, len(texts), batch_size):
                ids = tokenizer(texts[start : start + batch_size], add_special_tokens=True, verbose=False)["input_ids"]
                found.extend(len(x) for x in ids)
            lengths[split] = found
    stats: dict[str, dict] = {}
    for split, group in [*groups.items(), ("total", entries)]:
        if split != "total" and not group:
            continue
        row: dict[str, Any] = {"entries": len(group), "definitions": sum(len(e.definitions) for e in group)}
        if tokenizer is not None:
            found = [n for s in SPLITS for n in lengths.get(s, [])] if split == "total" else lengths[split]
            row["max_tokens"] = max(found) if found else None
            row["median_tokens"] = statistics.median(found) if found else None
        stats[split] = row
    return stats


def stats_table(stats: dict[str, dict], title: str = "dictionary"):
    """A rich table of :func:`dictionary_stats` output."""
    from rich.table import Table

    table = Table(title=title)
    with_tokens = any("max_tokens" in row for row in stats.values())
    table.add_column("split")
    table.add_column("entries", justify="right")
    table.add_column("definitions", justify="right")
    table.add_column("defs/entry", justify="right")
    if with_tokens:
        table.add_column("max tokens", justify="right")
        table.add_column("median tokens", justify="right")
    for split, row in stats.items():
        per = row["definitions"] / row["entries"] if row["entries"] else 0.0
        cells = [split, f"{row['entries']:,}", f"{row['definitions']:,}", f"{per:.2f}"]
        if with_tokens:
            cells += [str(row.get("max_tokens")), str(row.get("median_tokens"))]
        if split == "total":
            table.add_section()
        table.add_row(*cells)
    return table
