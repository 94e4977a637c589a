"""GCIDE's markup (the Collaborative International Dictionary of English, Webster 1913 and its additions, as
``dict-gcide`` installs it): :func:`gcide_text` turns its bracket codes into letters, :func:`parse_gcide` reads
a block into its senses and run-on phrases with their metadata. :mod:`.dictd` reads the database."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from .dictd_text import Block, Sense, finish
from .text import normalize_space

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
    return finish(text)


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
