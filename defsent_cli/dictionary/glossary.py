"""Glossary formats read through pyglossary (StarDict ``.ifo``, Babylon ``.bgl``, XDXF, ABBYY DSL, Octopus MDict,
Aard 2 ``.slob``, kaikki.org Wiktionary JSONL, ... : every format its installed version reads).

pyglossary is GPL-3.0-or-later and this project MIT: it is an optional extra
(``pip install 'defsent-cli[glossary]'``), imported only when ``build-dict`` is asked to read a glossary
(``--format glossary``, or a suffix in :data:`.sources.GLOSSARY_SUFFIXES`), never by anything else.

Each glossary entry gives its first headword (the others are inflections or alternate spellings) and its
definition: plain text, HTML or XDXF markup dropped, split into senses where it lists them (HTML ``<li>``
items, or lines numbered ``1.``, ``2)``); the source is the file name's stem.
"""

from __future__ import annotations

import html
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import DefsentError
from ..io import check_input
from ..log import warn
from .text import Pair, normalize_space

INSTALL_HINT = "pip install 'defsent-cli[glossary]'"
_LOGGER = "pyglossary"

_TAG = re.compile(r"<[^<>]*>")
# tags inside a line of text (HTML's inline elements, XDXF's): dropped with nothing in their place, so that
# "in <a>mathematics</a>." stays "in mathematics."; any other tag separates words
_INLINE_TAG = re.compile(
    r"<\s*/?\s*(?:a|abbr|b|bdi|bdo|big|cite|code|data|del|dfn|em|font|i|ins|kbd|mark|q|s|samp|small|span|strike"
    r"|strong|sub|sup|time|tt|u|var|wbr|abr|c|iref|kref)(?:\s[^<>]*)?/?>",
    re.IGNORECASE,
)
_SEPARATOR = "\x1f"  # what a block tag leaves until the spaces are settled
_BREAK = re.compile(r"<\s*(?:br|/p|/div|/li|/dd|/def)\b[^<>]*>", re.IGNORECASE)
_MODULE = re.compile(r"Module '([\w.]+)' not found")
_ITEM = re.compile(r"<\s*li\b[^<>]*>(.*?)(?=<\s*/?\s*li\b|<\s*/\s*[ou]l\s*>|$)", re.IGNORECASE | re.DOTALL)
_NESTED = re.compile(r"<\s*([ou]l)\b[^<>]*>.*?<\s*/\s*\1\s*>", re.IGNORECASE | re.DOTALL)
_NUMBERED = re.compile(r"^\s*(?:\d+|[ivx]+)[.)]\s+", re.MULTILINE)


class _Errors(logging.Handler):
    """Keeps pyglossary's warnings and errors (it logs a failed or a partial read rather than raising): the errors
    for our own one line, the warnings for ``warning:`` lines."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []  # the errors
        self.warnings: list[str] = []

    def clear(self) -> None:
        self.messages.clear()
        self.warnings.clear()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage().strip()
        first = text.splitlines()[0] if text else ""
        if not first and record.exc_info and record.exc_info[1] is not None:
            first = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        (self.messages if record.levelno >= logging.ERROR else self.warnings).append(first or record.levelname)


def load_pyglossary() -> Any:
    """pyglossary's ``Glossary`` class, initialised and quiet; a one-line error saying how to install it when
    it is not installed or cannot be imported on this Python."""
    hook, logger_class = sys.excepthook, logging.getLoggerClass()
    try:
        from pyglossary.glossary_v2 import Glossary
    except ImportError:
        raise DefsentError(f"reading glossary formats needs pyglossary: {INSTALL_HINT}") from None
    except SyntaxError:  # 5.3+ is written for Python 3.12 while its metadata says 3.10
        raise DefsentError(
            f"the installed pyglossary does not run on Python {sys.version_info.major}.{sys.version_info.minor}; "
            "pip install 'pyglossary>=5,<5.3' (or use Python 3.12+)"
        ) from None
    finally:  # importing pyglossary sets the process's excepthook and logger class: ours stay
        sys.excepthook = hook
        logging.setLoggerClass(logger_class)
    logger = logging.getLogger(_LOGGER)
    logger.propagate = False
    logger.setLevel(logging.WARNING)
    if not any(isinstance(h, _Errors) for h in logger.handlers):
        logger.addHandler(_Errors())
    Glossary.init()
    _errors().clear()  # what its set-up said is no reader's
    return Glossary


def _errors() -> _Errors:
    return next(h for h in logging.getLogger(_LOGGER).handlers if isinstance(h, _Errors))


def split_definition(defi: str, defi_format: str = "m") -> list[str]:
    """The senses of one glossary definition, as plain text: HTML / XDXF list items (``<li>``) each one, else
    lines numbered ``1.``, ``2)``, ... each one, else the whole text; markup dropped, entities decoded,
    whitespace folded."""
    if defi_format in ("h", "x") or _TAG.search(defi):
        items = [_NESTED.sub(" ", m.group(1)) for m in _ITEM.finditer(defi)]
        parts = items or [defi]
        texts = [html.unescape(_strip_tags(_BREAK.sub("\n" + _SEPARATOR, part))) for part in parts]
    else:
        texts = [defi]
    senses: list[str] = []
    for text in texts:
        pieces = _NUMBERED.split(text) if len(_NUMBERED.findall(text)) >= 2 else [text]
        senses.extend(normalize_space(p) for p in pieces)
    return [s for s in senses if s]


def _strip_tags(text: str) -> str:
    """Markup dropped without changing the text around it: an inline tag leaves nothing (``in <a>mathematics</a>.``
    -> ``in mathematics.``, ``<b>A</b>BC`` -> ``ABC``), any other a space, except before a stop or a closing bracket
    and after an opening one (``<td>one</td><td>two</td>`` -> ``one two``, ``one<br>.`` -> ``one.``)."""
    text = _TAG.sub(_SEPARATOR, _INLINE_TAG.sub("", text))
    text = re.sub(f"[{_SEPARATOR}\\s]*{_SEPARATOR}[{_SEPARATOR}\\s]*(?=[.,;:!?)\\]])", "", text)
    text = re.sub(f"(?<=[(\\[])[{_SEPARATOR}\\s]*{_SEPARATOR}[{_SEPARATOR}\\s]*", "", text)
    return text.replace(_SEPARATOR, " ")


def _missing_module(messages: list[str]) -> str | None:
    """The module a pyglossary reader could not import (its warning ``Module 'lxml' not found in ...``)."""
    found = next((m for m in map(_MODULE.search, messages) if m), None)
    return found.group(1).split(".")[0] if found else None


def read_glossary(path: str | Path, source: str | None = None) -> Iterator[Pair]:
    """Yield ``(headword, definition, source)`` for every sense of every entry of a glossary pyglossary reads
    (its format by the file's suffix, as pyglossary detects it); resource entries (images, sounds) skipped."""
    path = check_input(path)
    Glossary = load_pyglossary()
    source = source or _stem(path)
    errors = _errors()
    errors.clear()
    glossary = Glossary()
    try:
        glossary.directRead(str(path))
    except ModuleNotFoundError as exc:
        raise DefsentError(f"this format needs {exc.name}: pip install {exc.name}", path=path) from None
    except Exception as exc:  # pyglossary's own errors: no format for the suffix, a corrupt file, a missing module
        missing = _missing_module(errors.warnings)
        if missing:  # "readerClass is None": the reader's module could not import what it needs
            raise DefsentError(f"this format needs {missing}: pip install {missing}", path=path) from None
        raise DefsentError(f"pyglossary cannot read it: {exc}", path=path) from None
    if errors.messages and not getattr(glossary, "_readers", True):
        raise DefsentError(f"pyglossary cannot read it: {errors.messages[-1]}", path=path)
    read = entries = 0
    listed = _listed(glossary, path)
    try:
        for entry in glossary:
            if entry.isData():
                continue
            entries += 1
            words = [w for w in getattr(entry, "l_term", None) or entry.l_word if w.strip()]
            if not words:
                continue
            for definition in split_definition(entry.defi, entry.defiFormat):
                read += 1
                yield words[0], definition, source
    except ModuleNotFoundError as exc:
        raise DefsentError(f"this format needs {exc.name}: pip install {exc.name}", path=path) from None
    except Exception as exc:
        raise DefsentError(f"pyglossary failed while reading it: {exc}", path=path) from None
    finally:
        glossary.cleanup()
    if errors.messages:  # a partial read ("Index file is corrupted"): what was read is not the glossary
        more = f" (and {len(errors.messages) - 1:,} more)" if len(errors.messages) > 1 else ""
        raise DefsentError(
            f"pyglossary read {read:,} definitions but reported an error: {errors.messages[0]}{more}; the file is "
            "damaged or cut short",
            path=path,
        )
    if listed is not None and entries < listed:  # an .idx cut at an entry's end: pyglossary says nothing
        raise DefsentError(
            f"pyglossary read {entries:,} entries of the {listed:,} its .ifo lists (wordcount={listed}); the .idx "
            "is cut short or damaged",
            path=path,
        )
    if not read:
        why = f": {errors.warnings[-1]}" if errors.warnings else ""
        raise DefsentError(f"pyglossary read no definitions from it{why}", path=path)
    for message in dict.fromkeys(errors.warnings):
        warn(f"{path}: pyglossary: {message}")


def _listed(glossary: Any, path: Path) -> int | None:
    """The number of entries a StarDict .ifo says its .idx holds (``wordcount``); None for other formats."""
    if not path.name.lower().endswith(".ifo"):
        return None
    try:
        return int(str(glossary.getInfo("wordcount")).strip())
    except (ValueError, TypeError, AttributeError):
        return None


def _stem(path: Path) -> str:
    """``mine`` for mine.ifo, mine.dsl.dz, mine.tab.gz."""
    name = path.name
    for suffix in (".dz", ".gz", ".bz2", ".xz"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return Path(name).stem or name
