"""dictd databases (RFC 2229), as Debian installs them in ``/usr/share/dictd/``: GCIDE, FOLDOC, the Jargon
File and any other (``dict-freedict-*``, ``dict-devil``, ...).

A database is ``NAME.index``, one line per headword, ``headword<TAB>offset<TAB>length`` with offset and length in
dictd's base64 (:data:`B64`, big-endian digits), and ``NAME.dict.dz`` (dictzip: a gzip file, read whole here) or
a plain ``NAME.dict``; each index line points at a block of that text. Several index lines can point at one block
(GCIDE's run-on phrases, FOLDOC's aliases): each block is read once. The ``00-database-*`` lines (and GCIDE's
``00-gcide-*``, ``00-web1913-*``) are the database's own information, not entries.

The layout of a block depends on the dictionary: :func:`parse_gcide`, :func:`parse_foldoc` and
:func:`parse_jargon` know theirs (which one by the database's ``00-database-short`` line, else the file name)
and give one definition per sense with its metadata (``pos``, ``labels``, ``origin``, ``categories``);
any other database is read as headword line + definition text (:func:`parse_plain`).
"""

from __future__ import annotations

import gzip
import re
import unicodedata
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DefsentError
from ..formats.dictionary import Entry
from ..log import warn
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


# --------------------------------------------------------------------------- shared cleaning

_BRACES = re.compile(r"[{}]")
_CROSS_REFERENCE = re.compile(r"^(?:see|cf\.)\s[^{}]{0,30}\{[^{}]*\}[^{}]{0,30}$", re.IGNORECASE)


def _finish(text: str) -> str:
    """Cross-reference braces dropped (their text kept), whitespace folded, dangling separators trimmed; ``""``
    for a definition that is only a cross-reference (``See {Bank}.``)."""
    text = normalize_space(text)
    if _CROSS_REFERENCE.match(text):
        return ""
    text = re.sub(r"(?<=\w)\.\.(?!\.)", ".", _BRACES.sub("", text))  # {Inc.}. -> Inc.
    return text.strip(" ;,:-").strip()


def _paragraphs(lines: list[str]) -> list[str]:
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


# --------------------------------------------------------------------------- GCIDE

# GCIDE writes letters it cannot type in brackets: ['e] é, ["o] ö, [=a] ā, [a^] ă, [ae] æ, [deg] °, ...
_ACCENTS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "=": "\u0304", ",": "\u0327"}
_ACCENT_BEFORE = re.compile(r"\[([\"'`^~=,])([A-Za-z])\]")
_ACCENT_AFTER = re.compile(r"\[([A-Za-z])\^\]")  # breve
_NAMED = {
    "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "deg": "°", "root": "√", "eth": "ð", "ETH": "Ð", "thorn": "þ",
    "THORN": "Þ", "yogh": "ȝ", "sect": "§", "ng": "ŋ", "aum": "ä", "imac": "ī", "frac12": "½", "frac13": "⅓",
    "frac14": "¼", "frac23": "⅔", "frac34": "¾", "pound": "£", "cent": "¢", "para": "¶", "dagger": "†",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "zeta": "ζ", "eta": "η", "theta": "θ",
    "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "omicron": "ο", "pi": "π",
    "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
}  # fmt: skip
_NAMED_CODE = re.compile(r"\[(" + "|".join(sorted(_NAMED, key=len, reverse=True)) + r")\]")
# a bracketed line or group that tells where the text comes from: [1913 Webster], [WordNet 1.5 +PJC], [RDH]
_ORIGIN = re.compile(
    r"(?:(?:1913 Webster|Webster 1913 Suppl\.|Webster|WordNet(?: \d+(?:\.\d+)?| sense \d+)?|PJC\.?"
    r"|Century Dict\.(?: \d{4})?|[A-Z]{2,4})(?:\s*\+\s*|\s+|$))+"
)
_LABEL = re.compile(r"[A-Za-z][\w.,'& -]{0,38}")  # a usage label: [Obs.], [Colloq.], [Local, U.S.], [vulgar slang]
_DOMAIN = re.compile(r"^\(([A-Z][\w.,'& ]{0,38})\)\s*")  # a leading (Zool.), (Mar. Law), (Aëronautics)
_NUMBERED = re.compile(r"^( {0,6})(\d+)\.\s+(.*)$")
_LETTERED = re.compile(r"^( {2,8})\(([a-z])\)\s+(.*)$")
_NOTE = re.compile(r"^(?:Syn|Ant|Usage|Note|Syn\.|Obs|Also|Hence)\s*:|^[A-Z][A-Za-z. ]{0,20}:\s")
_PHRASE = re.compile(r"\{([^{}]+)\}(?:\s*\(([^()]*)\))?")
_PHRASE_SEPARATOR = re.compile(r"\s*,?\s*(?:or\s+|and\s+)?(?=\{)")
_CITATION = re.compile(r"\s*(?:\"[^\"]*\"\s*)?--(?=[A-Z0-9\[(])")  # --Milton., "quoted." --Shak.
_EXAMPLES = re.compile(r"[;:,]\s+as,\s")
_DERIVED = re.compile(r"\s--\s*(?=[^\s,]*[\"*`])")  # -- Top`o*nym"ic, a.: derived words, syllabified
_POS = re.compile(
    r"(?:(?:n|v|a|adj|adv|prep|conj|interj|pron|p|pr|imp|pl|sing|t|i|vb|superl|compar|pref|suff|prefix|suffix"
    r"|abbr|obs|fem|masc|pers|poss|dem|rel|interrog|indef|def|art|num|ordinal|cardinal)\.?(?:\s*(?:&|,|or|and)\s*|\s+|$))+",
    re.IGNORECASE,
)


def gcide_text(text: str) -> str:
    """GCIDE's bracket codes as Unicode letters (``Abb['e]`` -> ``Abbé``, ``a["e]roplane`` -> ``aëroplane``)."""
    if "[" not in text:
        return text
    text = _ACCENT_BEFORE.sub(lambda m: m.group(2) + _ACCENTS[m.group(1)], text)
    text = _ACCENT_AFTER.sub(lambda m: m.group(1) + "\u0306", text)
    text = _NAMED_CODE.sub(lambda m: _NAMED[m.group(1)], text)
    return unicodedata.normalize("NFC", text)


def _bracket_depth(text: str) -> int:
    return text.count("[") - text.count("]")


def _strip_groups(text: str, opening: str, closing: str) -> tuple[str, list[str]]:
    """``text`` without its outermost ``opening...closing`` groups (nesting counted), and the groups' contents."""
    out: list[str] = []
    groups: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == opening:
            if depth:
                current.append(char)
            depth += 1
        elif char == closing and depth:
            depth -= 1
            if depth:
                current.append(char)
            else:
                groups.append("".join(current))
                current = []
        elif depth:
            current.append(char)
        else:
            out.append(char)
    return "".join(out), groups


def _name(text: str) -> str:
    """A headword as GCIDE writes it in braces, without syllable and stress marks (``Faint"-heart`ed*ly``) or
    quotes around it."""
    text = re.sub(r'(?<=\w)"(?=\w)', "", normalize_space(text))  # ka"ma ru"pa
    if "*" in text or "`" in text or text.count('"') % 2:
        text = re.sub(r'[*`"]', "", text)
    return text.strip('"').strip()


def _head_names(first_line: str) -> list[str]:
    """The headwords of a head line: ``Banc \\Banc\\, Bancus \\Ban"cus\\, Bank \\Bank\\, n.`` -> Banc, Bancus, Bank."""
    names = []
    for match in re.finditer(r"(?:^|,\s*(?:or\s+)?)([^\\,][^\\]*?)\s*\\[^\\]*\\", first_line):
        # "Gripe \\Gripe\\, n., or Gripes \\Gripes\\": the part of speech between two headwords is no name's
        name = _name(re.sub(r"^(?:(?:n|v|a|adj|adv|prep|pl|t|i)\.[\s,]*)+(?:or\s+)?", "", match.group(1)))
        if name and re.fullmatch(r"[^\[\]{}();.]{1,80}|[^\[\]{}();]{1,30}", name):
            names.append(name)  # not "n. [F.] Also, sometimes, Anglicized Deculassment"
        if first_line[match.end() :].lstrip()[:1] not in (",", ""):
            break
    return names


def _run_on(text: str) -> tuple[list[str], list[str], str]:
    """``(phrases, labels, definition)`` of a run-on line: ``{Bank credit}, or {Cash credit}. See ...``,
    ``{In banc}, {In banco} (the ablative of bancus), {In bank}, in full court``, ``{Bank beaver} (Zool.), the
    otter``; a brace group that starts the definition (``{Gripe penny}, {a} miser``) is not a phrase."""
    names: list[str] = []
    labels: list[str] = []
    end = 0
    while True:
        match = _PHRASE.match(text, end)
        if match is None:
            break
        name = _name(match.group(1))
        if names and (name.casefold() in ("a", "an", "the") or name[:1].isupper() != names[0][:1].isupper()):
            break
        if name not in names:
            names.append(name)
        if match.group(2) and _DOMAIN.match(f"({match.group(2).strip()})"):
            labels.append(match.group(2).strip())
        end = match.end()
        separator = _PHRASE_SEPARATOR.match(text, end)
        if separator is None:
            break
        following = _PHRASE.match(text, separator.end())
        if following is None or (
            _name(following.group(1)).casefold() in ("a", "an", "the")
            or _name(following.group(1))[:1].isupper() != names[0][:1].isupper()
        ):
            break
        end = separator.end()
    return names, labels, re.sub(r"^\s*[,.]\s*", "", text[end:])


def _head_pos_labels(head: str) -> tuple[str | None, list[str]]:
    """The part of speech and the domain labels of a head: ``Cat \\Cat\\, v. t. [imp. ...] (Naut.)`` -> v. t., Naut."""
    text = re.sub(r"\\[^\\]*\\", " ", head)  # pronunciations
    text, _ = _strip_groups(text, "[", "]")  # etymology, inflections
    _, parens = _strip_groups(text, "(", ")")
    labels = [p.strip() for p in parens if _DOMAIN.match(f"({p.strip()})") and '"' not in p]
    parts = re.split(r"\\[^\\]*\\", head)
    tail, _ = _strip_groups(parts[-1] if len(parts) > 1 else "", "[", "]")
    tail, _ = _strip_groups(tail, "(", ")")
    tail = normalize_space(tail).strip(" ,;")
    return (tail if tail and _POS.fullmatch(tail) else None), labels


def _take_brackets(text: str, meta: dict[str, Any]) -> str:
    """Remove the bracket groups of a sense's text: source tags to ``origin``, short usage labels to ``labels``,
    the rest (etymology, editorial notes) dropped."""
    text, groups = _strip_groups(text, "[", "]")
    for group in groups:
        group = normalize_space(group)
        if not group:
            continue
        if _ORIGIN.fullmatch(group):
            meta.setdefault("origin", group)
        elif _LABEL.fullmatch(group) and len(group.split()) <= 4 and "See" not in group:
            meta.setdefault("labels", [])
            if group not in meta["labels"]:
                meta["labels"].append(group)
    return text


def _clean_gcide(text: str, meta: dict[str, Any], include_examples: bool) -> str:
    text = _take_brackets(text, meta)
    if re.match(r'\s*(?:--|[\w-]+["*`])', text):  # -- Faint"-heart`ed*ly, adv.: derived words, no definition
        return ""
    match = _DOMAIN.match(normalize_space(text))
    if match:
        meta.setdefault("labels", [])
        if match.group(1) not in meta["labels"]:
            meta["labels"].append(match.group(1))
        text = normalize_space(text)[match.end() :]
    derived = _DERIVED.search(text)
    if derived:
        text = text[: derived.start()]
    citation = _CITATION.search(text)
    if citation:
        text = text[: citation.start()]
    if not include_examples:
        example = _EXAMPLES.search(text)
        if example:
            text = text[: example.start()]
    return _finish(text)


@dataclass
class _Item:
    lines: list[str]
    names: list[str] | None
    labels: list[str]
    indent: int
    origin: str | None = None
    has_subs: bool = False


def parse_gcide(block: str, include_examples: bool = False) -> Block:
    """A GCIDE block: the head (headwords, pronunciation, part of speech, etymology in brackets), then numbered
    senses (``1.``, with ``(a)``, ``(b)`` sub-senses), or one unnumbered sense, then run-on phrases
    (``{Bank swallow}, a small ... swallow``), with source tags (``[1913 Webster]``), quotations with their
    authors (``--Milton.``), ``Syn:`` / ``Usage:`` / ``Note:`` paragraphs between them.

    Each sense (each sub-sense where there are some) is one definition; the quotations, notes, etymology and
    examples (``; as, a bank of snow``, kept with ``include_examples``) are dropped; the part of speech, the
    labels (``(Mining)``, ``[Obs.]``) and the source tag are the definition's metadata.
    """
    lines = gcide_text(block).split("\n")
    first = next((k for k, line in enumerate(lines) if line[:1].strip()), 0)
    lines = lines[first:]  # a stray quotation before the head (the block of "0")
    end, depth, slashes = 0, 0, 0
    while end < len(lines):  # the head goes on while a bracket, a parenthesis or a pronunciation is open, or
        line = lines[end].rstrip()  # its line ends mid-phrase ("formerly", "Sinto \\Sin"to\\,"), or "\\Aa*ron"ic*al\\"
        depth += _bracket_depth(line) + line.count("(") - line.count(")")
        slashes += line.count("\\")
        end += 1
        following = lines[end].strip() if end < len(lines) else ""
        if not following or _NUMBERED.match(lines[end]) or following.startswith("["):
            break
        if depth <= 0 and not slashes % 2 and not following.startswith("\\") and not re.search(r"[\w,;&]$", line):
            break
    if depth > 0 or slashes % 2:  # never closed: the first line is the head
        end = 1
    head_lines, lines = lines[:end], lines[end:]
    head = " ".join(x.strip() for x in head_lines)
    names = _head_names(head) or None
    pos, head_labels = _head_pos_labels(head)

    items: list[_Item] = []
    pending: list[_Item] = []  # waiting for their source tag
    current: _Item | None = None
    parent: _Item | None = None  # the numbered sense or run-on that lettered sub-senses belong to
    broken = True  # a blank or tag line since current's last line (or no sense yet)

    def start(text: str, names: list[str] | None, labels: list[str], indent: int) -> _Item:
        nonlocal current, broken
        match = _DOMAIN.match(text)
        labels = list(labels)
        if match:
            labels.append(match.group(1))
            text = text[match.end() :]
        item = _Item([text], names, labels, indent)
        items.append(item)
        pending.append(item)
        current, broken = item, False
        return item

    for line in lines:
        stripped = line.strip()
        if not stripped:
            broken = True
            continue
        indent = len(line) - len(line.lstrip(" "))
        if re.fullmatch(r"-{3,}.*", stripped):  # a rule: what follows is no sense's text
            current, broken = None, True
            continue
        if stripped.startswith("[") and stripped.endswith("]") and _bracket_depth(stripped[1:-1]) == 0:
            inner = normalize_space(stripped[1:-1])
            if _ORIGIN.fullmatch(inner):
                for item in pending:
                    item.origin = item.origin or inner
                pending.clear()
                broken = True
            elif current is not None and not broken:
                current.lines.append(stripped)  # [Obs.] on its own line: _take_brackets makes it a label
            continue
        numbered = _NUMBERED.match(line)
        lettered = _LETTERED.match(line)
        # "See def. 5\n (a) above.", "published in\n 1913. It was": a marker only after a finished line
        after_stop = current is None or broken or current.lines[-1].rstrip().endswith((".", ":", ";", ")", "]"))
        if numbered and (indent <= 3 or parent is not None) and (after_stop or numbered.group(3)[:1].isupper()):
            inside = indent > 3 and parent is not None and parent.names is not None
            item = start(numbered.group(3), parent.names if inside else None, [], indent)
            if not inside:
                parent = item
            continue
        if lettered and parent is not None and (after_stop or lettered.group(3)[:1].isupper()):
            parent.has_subs = True
            start(lettered.group(3), parent.names, parent.labels, indent)
            continue
        if indent <= 8 and _NOTE.match(stripped):
            current, broken = None, True
            continue
        if indent <= 3 and stripped.startswith("{") and (broken or current is None or current.names is not None):
            phrase_names, labels, rest = _run_on(stripped)
            if phrase_names:
                parent = start(rest, phrase_names, labels, indent)
                continue
        if indent <= 3:
            if current is not None and not broken and current.indent == indent and current.names is None:
                current.lines.append(stripped)  # an unnumbered sense goes on at the same indent
            else:
                parent = start(stripped, None, [], indent)
            continue
        if current is not None and not broken:
            current.lines.append(stripped)
        else:
            current = None  # after a blank line, deeper text is a quotation (or a note's): dropped

    senses: list[Sense] = []
    for item in items:
        meta: dict[str, Any] = {}
        if pos and item.names is None:  # a run-on phrase ("At rovers" under Rover, n.) is not its head's part of speech
            meta["pos"] = pos
        labels = [*head_labels, *item.labels]
        if labels:
            meta["labels"] = list(dict.fromkeys(labels))
        text = _clean_gcide(" ".join(item.lines), meta, include_examples)
        if item.origin:
            meta["origin"] = item.origin
        if not text or (item.has_subs and len(text.split()) <= 3):
            continue  # a numbered sense that only heads its sub-senses: "5. (Mining)"
        senses.append(Sense(text, item.names, meta))
    return Block(names, senses)


# --------------------------------------------------------------------------- FOLDOC and the Jargon File

_DATE = re.compile(r"^\(\d{4}-\d{2}-\d{2}\)$")
_CATEGORIES = re.compile(r"^<([^<>]+)>\s*")
_CONTEXT = re.compile(r"^\[\{?([^\[\]{}]+)\}?\]\s*")  # FOLDOC's [{Usenet}], the Jargon File's [very common]
_SENSE = re.compile(r"^(\d+)\.\s+")
_EMAIL = re.compile(r"\s*<[^<>\s]+@[^<>\s]+>")
_LINK = re.compile(r"\{([^{}]*?)\s*\((?:https?://|ftp://|[\w./-]+\.html?\b)[^()]*\)\}")


def _numbered_senses(paragraphs: list[str]) -> tuple[str, list[str]]:
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


def parse_foldoc(block: str, include_examples: bool = False) -> Block:
    """A FOLDOC block: the headword and its aliases, one a line, then paragraphs. The definition is the first
    paragraph (each numbered sense's, where there are ``1.``, ``2.``, ...); its ``<category, ...>`` tags are
    kept as ``categories`` (a sense without tags takes the entry's), a leading ``[{Usenet}]`` as a label;
    the date line, the ``[{Jargon File}]`` source line and the later paragraphs are dropped."""
    lines = block.split("\n")
    cut = next((k for k, line in enumerate(lines) if not line.strip()), len(lines))
    names = [normalize_space(x) for x in lines[:cut] if x.strip()]
    paragraphs = [p for p in _paragraphs(lines[cut:]) if not _DATE.match(p) and not re.fullmatch(r"\[.*\]", p)]
    preface, senses = _numbered_senses(paragraphs)
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
            context = _CONTEXT.match(text)
            if context:
                labels.append(normalize_space(context.group(1)))
                text = text[context.end() :]
                continue
            break
        if categories:
            meta["categories"] = list(categories)
        if labels:
            meta["labels"] = labels
        text = _finish(_EMAIL.sub("", _LINK.sub(r"\1", text)))
        if text:
            out.append(Sense(text, None, meta))
    return Block(names or None, out)


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
    paragraphs = _paragraphs(lines[cut:])
    paragraphs = [p for p in paragraphs if not re.fullmatch(r"\[[^\[\]]*\]", p)]  # a bracket alone: etymology
    _, senses = _numbered_senses(paragraphs)
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
        context = _CONTEXT.match(text)
        if context:
            label = normalize_space(context.group(1))
            if len(label.split()) <= 3 and not label.startswith(("from ", "orig")):
                meta["labels"] = [label]
            text = text[context.end() :]
        text = _finish(text)
        if text:
            out.append(Sense(text, None, meta))
    return Block(names or None, out)


def parse_plain(block: str, headword: str) -> Block:
    """Any other dictd database: the text after the headword line (the whole block where its first line is not
    the headword), whitespace folded, cross-reference braces dropped; one definition."""
    lines = block.strip("\n").split("\n")
    if lines and lines[0].strip().casefold().startswith(headword.strip().casefold()) and len(lines) > 1:
        lines = lines[1:]
    text = _finish(" ".join(lines))
    return Block(None, [Sense(text)] if text else [])
