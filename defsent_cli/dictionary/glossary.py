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
from .text import Pair, normalize_space

INSTALL_HINT = "pip install 'defsent-cli[glossary]'"
_LOGGER = "pyglossary"

_TAG = re.compile(r"<[^<>]*>")
_BREAK = re.compile(r"<\s*(?:br|/p|/div|/li|/dd|/def)\b[^<>]*>", re.IGNORECASE)
_ITEM = re.compile(r"<\s*li\b[^<>]*>(.*?)(?=<\s*/?\s*li\b|<\s*/\s*[ou]l\s*>|$)", re.IGNORECASE | re.DOTALL)
_NESTED = re.compile(r"<\s*([ou]l)\b[^<>]*>.*?<\s*/\s*\1\s*>", re.IGNORECASE | re.DOTALL)
_NUMBERED = re.compile(r"^\s*(?:\d+|[ivx]+)[.)]\s+", re.MULTILINE)


class _Errors(logging.Handler):
    """Keeps pyglossary's error messages (it logs a failed read rather than raising) for our own one line."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().strip().splitlines()[0] if record.getMessage().strip() else "")


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
    logger.setLevel(logging.ERROR)
    if not any(isinstance(h, _Errors) for h in logger.handlers):
        logger.addHandler(_Errors())
    Glossary.init()
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
        texts = [html.unescape(_TAG.sub(" ", _BREAK.sub("\n", part))) for part in parts]
    else:
        texts = [defi]
    senses: list[str] = []
    for text in texts:
        pieces = _NUMBERED.split(text) if len(_NUMBERED.findall(text)) >= 2 else [text]
        senses.extend(normalize_space(p) for p in pieces)
    return [s for s in senses if s]


def read_glossary(path: str | Path, source: str | None = None) -> Iterator[Pair]:
    """Yield ``(headword, definition, source)`` for every sense of every entry of a glossary pyglossary reads
    (its format by the file's suffix, as pyglossary detects it); resource entries (images, sounds) skipped."""
    path = check_input(path)
    Glossary = load_pyglossary()
    source = source or _stem(path)
    errors = _errors()
    errors.messages.clear()
    glossary = Glossary()
    try:
        glossary.directRead(str(path))
    except ModuleNotFoundError as exc:
        raise DefsentError(
            f"pyglossary's reader for this format needs {exc.name}: pip install {exc.name}", path=path
        ) from None
    except Exception as exc:  # pyglossary's own errors: no format for the suffix, a corrupt file
        raise DefsentError(f"pyglossary cannot read it: {exc}", path=path) from None
    if errors.messages and not getattr(glossary, "_readers", True):
        raise DefsentError(f"pyglossary cannot read it: {errors.messages[-1]}", path=path)
    read = 0
    try:
        for entry in glossary:
            if entry.isData():
                continue
            words = [w for w in getattr(entry, "l_term", None) or entry.l_word if w.strip()]
            if not words:
                continue
            for definition in split_definition(entry.defi, entry.defiFormat):
                read += 1
                yield words[0], definition, source
    except ModuleNotFoundError as exc:
        raise DefsentError(
            f"pyglossary's reader for this format needs {exc.name}: pip install {exc.name}", path=path
        ) from None
    except Exception as exc:
        raise DefsentError(f"pyglossary failed while reading it: {exc}", path=path) from None
    finally:
        glossary.cleanup()
    if not read:
        why = f": {errors.messages[-1]}" if errors.messages else ""
        raise DefsentError(f"pyglossary read no definitions from it{why}", path=path)


def _stem(path: Path) -> str:
    """``mine`` for mine.ifo, mine.dsl.dz, mine.tab.gz."""
    name = path.name
    for suffix in (".dz", ".gz", ".bz2", ".xz"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return Path(name).stem or name
