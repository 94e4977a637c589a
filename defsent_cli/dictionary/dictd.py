"""dictd databases (RFC 2229), as Debian installs them in ``/usr/share/dictd/``: GCIDE, FOLDOC, the Jargon
File and any other (``dict-freedict-*``, ``dict-devil``, ...).

A database is ``NAME.index``, one line per headword, ``headword<TAB>offset<TAB>length`` with offset and length in
dictd's base64 (:data:`B64`, big-endian digits), and ``NAME.dict.dz`` (dictzip: a gzip file, read whole here) or
a plain ``NAME.dict``; each index line points at a block of that text. Several index lines can point at one block
(GCIDE's run-on phrases, FOLDOC's aliases): each block is read once. The ``00-database-*`` lines (and GCIDE's
``00-gcide-*``, ``00-web1913-*``) are the database's own information, not entries.

The layout of a block depends on the dictionary: :func:`.gcide.parse_gcide`, :func:`.foldoc.parse_foldoc` and
:func:`.jargon.parse_jargon` know theirs (which one by the database's ``00-database-short`` line, else the file
name) and give one definition per sense with its metadata (``pos``, ``labels``, ``origin``, ``categories``);
any other database is read as headword line + definition text (:func:`parse_plain`). This module is the
container: the files, the index, the pairing of index and text, the dispatch to a flavour's parser.
"""

from __future__ import annotations

import gzip
import re
import unicodedata
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..errors import DefsentError
from ..formats.dictionary import Entry
from ..log import warn
from .dictd_text import Block, Sense, finish
from .foldoc import parse_foldoc
from .gcide import gcide_text, parse_gcide
from .jargon import parse_jargon
from .text import normalize_space

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUE = {c: i for i, c in enumerate(B64)}
_B64_FIELD = re.compile(r"[A-Za-z0-9+/]+")
_META = re.compile(r"^00-?(?:database|[a-z0-9]+-)")
SUFFIXES = (".index", ".dict.dz", ".dict")
FLAVOURS = ("gcide", "foldoc", "jargon", "plain")
DICTD_HINT = "a dictd database is NAME.index + NAME.dict.dz (apt-get install dict-gcide gives /usr/share/dictd/gcide.*)"


def b64_decode(text: str) -> int:
    """dictd's base64 number (``"Gb9L"`` -> 1687371); ValueError when ``text`` is not one."""
    if not text or not _B64_FIELD.fullmatch(text):
        raise ValueError(f"{text!r} is not a dictd base64 number")
    value = 0
    for char in text:
        value = value * 64 + _B64_VALUE[char]
    return value


def b64_encode(value: int) -> str:
    """The inverse of :func:`b64_decode` (for writing test databases)."""
    if value < 0:
        raise ValueError("negative")
    digits = ""
    while True:
        value, digit = divmod(value, 64)
        digits = B64[digit] + digits
        if not value:
            return digits


def looks_like_index_line(line: str) -> bool:
    """A line of a dictd index: ``headword<TAB>offset<TAB>length``, the last two base64 numbers."""
    columns = line.rstrip("\r\n").split("\t")
    return len(columns) == 3 and all(_B64_FIELD.fullmatch(c) for c in columns[1:])


# --------------------------------------------------------------------------- the files


def _bases(path: str | Path) -> list[str]:
    """The base names NAME a path can stand for: itself without a dictd suffix, then without each further suffix
    of its file name (``foldoc.idx`` -> ``foldoc.idx``, ``foldoc``)."""
    text = str(path)
    bases = [next((text[: -len(s)] for s in SUFFIXES if text.endswith(s)), text)]
    while Path(bases[-1]).suffix:
        bases.append(bases[-1][: -len(Path(bases[-1]).suffix)])
    return bases


def is_index_file(path: str | Path) -> bool:
    """Whether ``path`` is a file whose first non-blank line is a dictd index line (under any name)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    first = next((line for line in head.split(b"\n") if line.strip()), b"")
    return looks_like_index_line(first.decode("latin-1"))


def data_name(index: str | Path) -> str:
    """The name the text of the dictd index ``index`` must have beside it: ``foldoc.dict.dz`` for
    ``foldoc.index`` (and for an index under another name, ``foldoc.idx``)."""
    bases = _bases(index)
    base = bases[0] if str(index).endswith(SUFFIXES) or len(bases) == 1 else bases[1]
    return Path(base).name + ".dict.dz"


def database_paths(path: str | Path) -> tuple[Path, Path] | None:
    """``(index, NAME.dict.dz or NAME.dict)`` for a path naming either file or the base name NAME, or an index
    under another name (``foldoc.idx`` beside ``foldoc.dict.dz``); None when ``path`` names no dictd database
    (no index, or no data beside the index)."""
    bases = _bases(path)
    index = Path(bases[0] + ".index")
    if not index.is_file():
        text = str(path)
        if text.endswith((".dict", ".dict.dz")) or not Path(text).is_file() or not is_index_file(text):
            return None
        index, bases = Path(text), bases[1:] if len(bases) > 1 else bases
    for base in bases:
        for suffix in (".dict.dz", ".dict"):
            data = Path(base + suffix)
            if data.is_file():
                return index, data
    return None


def _resolve(path: str | Path) -> tuple[Path, Path]:
    found = database_paths(path)
    if found is not None:
        return found
    text = str(path)
    if text == "-":
        raise DefsentError(
            "a dictd database cannot be read from stdin: pass its NAME.index, with NAME.dict.dz beside it"
        )
    base = _bases(path)[0]
    if Path(base + ".index").is_file() or (
        Path(text).is_file() and not text.endswith((".dict", ".dict.dz")) and is_index_file(text)
    ):
        name = data_name(base + ".index" if Path(base + ".index").is_file() else text)
        raise DefsentError(
            f"no {name} (or {name[: -len('.dz')]}) beside this dictd index: put the database's text there, under "
            f"that name; {DICTD_HINT}",
            path=path,
        )
    if Path(text).is_file() and not text.endswith((".dict", ".dict.dz")):
        raise DefsentError(
            f"is not a dictd index (its first line is not headword<TAB>offset<TAB>length); {DICTD_HINT}", path=path
        )
    raise DefsentError(f"no dictd index {Path(base).name}.index beside it; {DICTD_HINT}", path=path)


def _read_data(data: Path) -> bytes:
    try:
        if data.name.endswith(".dz"):
            with gzip.open(data, "rb") as fh:
                return fh.read()
        return data.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            raise  # the disk, a permission: the command line's own error
        raise DefsentError(f"not a dictzip (gzip) file: {exc}", path=data) from None


def iter_index(index: Path, encoding: str = "utf-8") -> Iterator[tuple[int, str, int, int]]:
    """``(line number, headword, offset, length)`` of every index line, the database's own lines included."""
    from ..io import iter_lines

    for number, line in iter_lines(index, encoding, "; pass --encoding (e.g. latin-1)"):
        if not line.strip():
            continue
        columns = line.rstrip("\r\n").split("\t")
        if len(columns) != 3:
            raise DefsentError(
                f"not a dictd index line: expected headword<TAB>offset<TAB>length, found {len(columns)} columns",
                path=index,
                line=number,
            )
        try:
            offset, length = b64_decode(columns[1]), b64_decode(columns[2])
        except ValueError as exc:
            raise DefsentError(f"not a dictd index line: {exc}", path=index, line=number) from None
        yield number, columns[0], offset, length


def _key(text: str) -> str:
    """A headword or a block's first line reduced to its letters and digits, for comparing them."""
    text = unicodedata.normalize("NFKD", gcide_text(text)).casefold()
    return "".join(c for c in text if c.isalnum())


def check_pairing(index: Path, data_path: Path, lines: list[tuple[int, str, int, int]], data: bytes, encoding: str):
    """Refuse an index beside another database's text (the Jargon File's index beside FOLDOC's .dict.dz): in a
    dictd database every block starts at the start of a line of the text, and with its headword (or one of the
    headwords pointing at it) where the database writes headwords; an index of another text points mostly
    mid-line. Checked on up to 2,000 blocks spread over the index; refused when most do not fit."""
    blocks: dict[tuple[int, int], tuple[int, list[str]]] = {}
    for number, headword, offset, length in lines:
        if not _META.match(headword):
            blocks.setdefault((offset, length), (number, []))[1].append(headword)
    if not blocks:
        return
    keys = list(blocks)
    step = max(1, len(keys) // 2000)
    checked = keys[::step]
    misfits = []
    for offset, length in checked:
        if offset + length > len(data):
            misfits.append((offset, length))
            continue
        if offset == 0 or data[offset - 1 : offset] == b"\n":
            continue
        first = data[offset : offset + min(length, 400)].decode(encoding, "replace").strip().split("\n", 1)[0]
        first_key = _key(first)
        if not any(_key(h) and first_key.startswith(_key(h)) for h in blocks[(offset, length)][1]):
            misfits.append((offset, length))
    if len(misfits) * 2 <= len(checked):
        return
    offset, length = misfits[0]
    number, headwords = blocks[(offset, length)]
    shown = normalize_space(data[offset : offset + 40].decode(encoding, "replace")) if offset < len(data) else ""
    at = f"points at {shown!r}" if shown else "points past its end"
    found = re.search(rb"(?:^|\n)00-?database-?short\n([^\n]{1,200})", data[:65536])
    holds = normalize_space(found.group(1).decode(encoding, "replace")) if found else ""
    stem = _bases(data_path)[0]
    named = detect_flavour(Path(stem).name, "")
    why = (
        f"{len(misfits):,} of the {len(checked):,} blocks checked start mid-line without their headword "
        f"(index line {number}, {headwords[0]!r}, {at})"
    )
    if holds and named != "plain" and detect_flavour("", holds) not in (named, "plain"):
        raise DefsentError(  # the data is not what its name says: it is the wrong file
            f"is not the text of {index.name} beside it: it holds {holds!r}; {why}; put {index.name}'s own "
            f"{data_path.name} there",
            path=data_path,
        )
    holding = f" ({data_path.name} holds {holds!r})" if holds else ""
    raise DefsentError(
        f"is not the index of {data_path.name} beside it{holding}: {why}; this index is another database's: put "
        f"the index that came with {data_path.name} there, or this one beside its own text",
        path=index,
    )


def read_dictd(
    path: str | Path, encoding: str = "utf-8", include_examples: bool = False, flavour: str | None = None
) -> Iterator[Entry]:
    """Yield one :class:`Entry` per headword of each block of a dictd database (``path``: its .index, its
    .dict.dz / .dict, or the base name), with its definitions' metadata; source = the file name's stem."""
    index, data_path = _resolve(path)
    source = Path(_bases(data_path)[0]).name
    lines = list(iter_index(index, encoding))
    if not lines:
        raise DefsentError("dictd index is empty", path=index)
    data = _read_data(data_path)
    check_pairing(index, data_path, lines, data, encoding)
    not_utf8: list[int] = []

    def text_of(number: int, offset: int, length: int) -> str:
        if offset + length > len(data):
            raise DefsentError(
                f"index line {number} points past the end of {data_path.name} (offset {offset:,} + length "
                f"{length:,} > {len(data):,} bytes): the index and the data are not one database",
                path=index,
                line=number,
            )
        raw = data[offset : offset + length]
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError as exc:
            if encoding.replace("_", "-").lower() in ("utf-8", "utf8"):
                try:  # GCIDE 0.48 holds three Windows-1252 bytes (’ ç ¹) in its UTF-8
                    text = raw.decode("cp1252")
                except UnicodeDecodeError:
                    pass
                else:
                    not_utf8.append(number)
                    return text
            raise DefsentError(
                f"the block of index line {number} is not {encoding}: {exc.reason}; pass --encoding (e.g. latin-1)",
                path=data_path,
            ) from None

    if flavour is None:
        short = next((text_of(n, o, k) for n, h, o, k in lines if h == "00-database-short"), "")
        flavour = detect_flavour(source, short)
    parse = {"gcide": parse_gcide, "foldoc": parse_foldoc, "jargon": parse_jargon, "plain": parse_plain}[flavour]
    done: set[tuple[int, int]] = set()
    for number, headword, offset, length in lines:
        if _META.match(headword):
            continue
        if parse is parse_plain:  # a block per index line: the headword is the index's
            yield from _entries(parse_plain(text_of(number, offset, length), headword), headword, source)
            continue
        if (offset, length) in done:
            continue
        done.add((offset, length))
        block = parse(text_of(number, offset, length), include_examples)
        yield from _entries(block, headword, source)
    if not_utf8:
        shown = ", ".join(str(n) for n in not_utf8[:5]) + (", ..." if len(not_utf8) > 5 else "")
        warn(
            f"{data_path}: {len(not_utf8)} block(s) not UTF-8 (index lines {shown}); read as Windows-1252 "
            "(--encoding sets another)"
        )


def detect_flavour(stem: str, short: str) -> str:
    """Which parser a database needs, by its ``00-database-short`` text, else its file name."""
    text = f"{short} {stem}".casefold()
    if "collaborative international dictionary" in text or stem.casefold() in ("gcide", "web1913"):
        return "gcide"
    if "dictionary of computing" in text or stem.casefold() == "foldoc":
        return "foldoc"
    if "jargon file" in text or stem.casefold() == "jargon":
        return "jargon"
    return "plain"


def _entries(block: Block, headword: str, source: str) -> Iterator[Entry]:
    """One Entry per headword of the block: its own headwords' senses, then each run-on phrase's."""
    own = block.names or [headword]
    grouped: dict[str, tuple[str, list[Sense]]] = {}
    for sense in block.senses:
        for name in sense.names or own:
            name = normalize_space(name)
            if name:
                grouped.setdefault(name.casefold(), (name, []))[1].append(sense)
    for name, senses in grouped.values():
        yield Entry(name, [s.text for s in senses], [source], "train", [dict(s.meta) for s in senses])


def parse_plain(block: str, headword: str) -> Block:
    """Any other dictd database: the text after the headword line (the whole block where its first line is not
    the headword), whitespace folded, cross-reference braces dropped; one definition."""
    lines = block.strip("\n").split("\n")
    if lines and lines[0].strip().casefold().startswith(headword.strip().casefold()) and len(lines) > 1:
        lines = lines[1:]
    text = finish(" ".join(lines))
    return Block(None, [Sense(text)] if text else [])
