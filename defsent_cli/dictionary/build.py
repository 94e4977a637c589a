"""Build a dictionary: merge the sources' pairs into entries, filter, sample, split (by groups of entries that
share a definition, or by entry: ``splitting.py``).

:func:`build_dictionary` is the whole ``defsent build-dict`` pipeline; the pieces are public for
other pipelines. DefSent+'s datasets: "a" = :func:`merge` of WordNet and Oxford; "c" = "a" after
:func:`single_token`.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..console import make_progress
from ..errors import DefsentError
from ..formats.dictionary import Entry
from ..log import warn
from .choices import DEFAULT_WORDNET_DIR
from .sources import WORDNET_HINT, Item, normalize_space, read_source
from .splitting import assign_splits
from .text import ALPHANUMERIC, DUPLICATE, FRAGMENT, NO_WORD, first_sentence, is_fragment


def merge(
    items: Iterable[Item],
    lowercase: bool = False,
    origins: dict[str, list[str]] | None = None,
    dropped: Counter[tuple[str, str]] | None = None,
) -> list[Entry]:
    """Combine pairs / entries into one entry per headword (DefSent+ dataset "a").

    Entries match case-insensitively (``casefold`` after whitespace normalisation) and keep the
    first spelling seen (``lowercase=True`` lowercases them). Definitions are whitespace-normalised,
    empty ones dropped, duplicates dropped, first-seen order kept, each with the metadata of its first
    occurrence (an :class:`Entry` input's ``meta``). Sources are recorded once each, in order. An
    :class:`Entry` input keeps its split for a new headword (pairs give ``train``).

    ``origins``, when given, is filled with the source that gave each kept definition (the first source
    of the item it came first from), per casefolded entry, in definition order: :func:`.stats.source_stats`.
    A definition of punctuation alone (``.``, ``]``, ``...``) is no definition, from any source (the dictd and
    glossary readers drop more: ``1.``, a sense number alone; a file of one definition a line keeps ``pi``'s
    ``3.14159``), nor is a fragment no sentence holds (:func:`.text.is_fragment`: ``1.``, ``(C.``, ``D.L.``,
    ``1856-1922.``). ``dropped``, when given, counts what was dropped by ``(source, reason)``: those
    (``NO_WORD``, ``FRAGMENT``) and the duplicates.
    """
    merged: dict[str, Entry] = {}
    seen_definitions: dict[str, set[str]] = {}
    for item in items:
        if isinstance(item, Entry):
            name, definitions, sources, split, meta = item.entry, item.definitions, item.sources, item.split, item.meta
        else:
            name, definition, source = item
            definitions, sources, split, meta = [definition], [source], "train", None
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
        for k, definition in enumerate(definitions):
            definition = normalize_space(definition)
            if definition and not ALPHANUMERIC.search(definition):  # '.', ']', '...': from any source, none
                if dropped is not None:
                    dropped[(sources[0] if sources else "-", NO_WORD)] += 1
                continue
            if is_fragment(definition):  # '1.', '(C.', 'D.L.', '1856-1922.': a cut, no sentence, from any source
                if dropped is not None:
                    dropped[(sources[0] if sources else "-", FRAGMENT)] += 1
                continue
            if definition in seen and dropped is not None:
                dropped[(sources[0] if sources else "", DUPLICATE)] += 1
            if definition and definition not in seen:
                seen.add(definition)
                target.definitions.append(definition)
                found = meta[k] if meta else None
                if found and target.meta is None:
                    target.meta = [{} for _ in range(len(target.definitions) - 1)]
                if target.meta is not None:
                    target.meta.append(dict(found) if found else {})
                if origins is not None:
                    origins.setdefault(key, []).append(sources[0] if sources else "")
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


def single_token_ids(words: Sequence[str], tokenizer: Any, batch_size: int = 4096) -> list[int | None]:
    """The one token id of each word for ``tokenizer``, or None when it is several tokens or unknown.

    No special tokens are added. For tokenizers where a leading space changes the token
    (RoBERTa-style byte-level BPE) the word is tokenized as ``" " + word``, as DefSent's
    ``add_prefix_space``. ``build-dict --single-token`` and ``train --objective defsent`` both use this.
    """
    prefix = " " if _is_space_prefixed(tokenizer) else ""
    unk = getattr(tokenizer, "unk_token_id", None)
    ids: list[int | None] = []
    for start in range(0, len(words), batch_size):
        chunk = words[start : start + batch_size]
        encoded = tokenizer([prefix + w for w in chunk], add_special_tokens=False, verbose=False)["input_ids"]
        ids.extend(e[0] if len(e) == 1 and e[0] != unk else None for e in encoded)
    return ids


def single_token(entries: Iterable[Entry], tokenizer: Any) -> list[Entry]:
    """Keep the entries that are exactly one known token for ``tokenizer`` (DefSent+ dataset "c")."""
    entries = list(entries)
    ids = single_token_ids([e.entry for e in entries], tokenizer)
    return [e for e, token in zip(entries, ids, strict=True) if token is not None]


@dataclasses.dataclass
class WordTargets:
    """The definitions of one split whose entry is a single token, with that token's id (DefSent's data)."""

    texts: list[str]
    token_ids: list[int]
    entries: int  # single-token entries used
    skipped: int  # entries of the split that are several tokens (or unknown) for the tokenizer
    skipped_examples: list[str]


def word_targets(dictionary: str | Path, split: str, tokenizer: Any) -> WordTargets:
    """Every definition of ``split`` whose entry is one token for ``tokenizer`` (as ``build-dict --single-token``)."""
    from ..formats.dictionary import iter_entries

    entries = [e for e in iter_entries(dictionary) if e.split == split]
    ids = single_token_ids([e.entry for e in entries], tokenizer)
    texts: list[str] = []
    labels: list[int] = []
    skipped = [e.entry for e, token in zip(entries, ids, strict=True) if token is None]
    for entry, token in zip(entries, ids, strict=True):
        if token is not None:
            texts.extend(entry.definitions)
            labels.extend([token] * len(entry.definitions))
    if not texts:
        reason = (
            f"none of its {len(entries):,} {split!r} entries is a single token of the model's vocabulary"
            if entries
            else f"it has no {split!r} entries"
        )
        raise DefsentError(f"no definitions to predict words from: {reason}", path=dictionary)
    return WordTargets(texts, labels, len(entries) - len(skipped), len(skipped), skipped[:3])


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


# --------------------------------------------------------------------------- the pipeline


@dataclasses.dataclass
class BuildSettings:
    """Every build-dict option after the sources, in the order they apply."""

    encoding: str = "utf-8"
    include_examples: bool = False
    lowercase: bool = False
    tokenizer: Any = None  # --single-token: keep entries that are one token for it
    min_definitions: int = 1
    sample: int | None = None
    max_entries: int | None = None
    fractions: tuple[float, float, float] | None = None  # --split
    seed: int = 42
    split_by: str = "definition-group"  # --split-by: definition-group | entry (assign_splits)
    categories: tuple[str, ...] = ()  # --category: keep the definitions of these categories (FOLDOC's <tags>)
    first_sentence: bool = False  # --first-sentence: cut each definition to its first sentence


def default_sources(wordnet: Path | None, sources: Sequence[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """``(path, format)`` inputs: --wordnet first, then the files; nothing given = the system WordNet."""
    inputs = list(sources)
    if wordnet is not None:
        inputs.insert(0, (Path(wordnet), "wordnet"))
    if not inputs:
        if not DEFAULT_WORDNET_DIR.is_dir():
            raise DefsentError(f"no sources given and {DEFAULT_WORDNET_DIR} does not exist; {WORDNET_HINT}")
        inputs = [(DEFAULT_WORDNET_DIR, "wordnet")]
    return inputs


class CategoryFilter:
    """``--category``: keep the definitions whose metadata ``categories`` hold one of the wanted (case-insensitive);
    a source without categories at all passes whole, with a warning; none with any, or a wanted category
    that no definition has, is an error (after reading, before anything is written)."""

    def __init__(self, wanted: Sequence[str]) -> None:
        self.wanted = {w.strip().casefold(): w.strip() for w in wanted if w.strip()}
        self.found: Counter[str] = Counter()  # every category seen, by its first spelling
        self.matched: set[str] = set()
        self.with_categories: list[str] = []
        self.without: list[str] = []

    def apply(self, items: Iterable[Item], name: str) -> Iterator[Item]:
        """The items of one source, filtered; a source is one with categories as soon as one item has some (the
        items before that are held back, then dropped: a definition without a category is not of one)."""
        held: list[Item] = []
        has = False
        for item in items:
            meta = item.meta if isinstance(item, Entry) else None
            if not meta or not any(m.get("categories") for m in meta):
                if not has:
                    held.append(item)
                continue
            if not has:
                has, held = True, []
            keep = []
            for k, m in enumerate(meta):
                categories = [str(c) for c in m.get("categories") or []]
                self.found.update(categories)
                hits = {c.casefold() for c in categories} & self.wanted.keys()
                self.matched |= hits
                if hits:
                    keep.append(k)
            if keep:
                yield dataclasses.replace(
                    item, definitions=[item.definitions[k] for k in keep], meta=[meta[k] for k in keep]
                )
        (self.with_categories if has else self.without).append(name)
        yield from held

    def check(self) -> None:
        if not self.with_categories:
            raise DefsentError(
                f"--category: {', '.join(self.without)} {'has' if len(self.without) == 1 else 'have'} no categories "
                "(FOLDOC has: defsent build-dict /usr/share/dictd/foldoc.index --category programming)"
            )
        missing = [w for key, w in self.wanted.items() if key not in self.matched]
        if missing:
            common = ", ".join(c for c, _ in self.found.most_common(12))
            raise DefsentError(
                f"--category {', '.join(missing)}: no definition of {', '.join(self.with_categories)} has it; "
                f"its categories include {common}"
            )
        if self.without:
            warn(f"--category does not apply to {', '.join(self.without)} (no categories): kept whole")


def _first_sentence(item: Item) -> Item:
    """The item with each definition cut to its first sentence (:func:`.text.first_sentence`)."""
    if isinstance(item, Entry):
        return dataclasses.replace(item, definitions=[first_sentence(d) for d in item.definitions])
    entry, definition, source = item
    return entry, first_sentence(definition), source


def build_dictionary(
    inputs: Sequence[tuple[Path, str]],
    settings: BuildSettings,
    show_progress: bool | None = None,
    origins: dict[str, list[str]] | None = None,
    dropped: Counter[tuple[str, str]] | None = None,
) -> list[Entry]:
    """Read every source, merge case-insensitively, then filter, sample, cut and split (in that order).

    ``show_progress``: a bar on stderr counting the definitions read (None: on unless DEFSENT_NO_PROGRESS).
    ``settings.first_sentence`` cuts each definition to its first sentence as it is read (before duplicates are
    dropped). ``origins``: filled as :func:`merge` does (the source of each definition, for :func:`.stats.source_stats`);
    ``dropped``: the definitions dropped, by ``(source, reason)`` (:data:`.text.DROP_REASONS`: as the dictd and
    glossary readers read them, :func:`.sources.read_source`, and as :func:`merge` merges them)
    """
    categories = CategoryFilter(settings.categories) if settings.categories else None
    with make_progress("definitions", show_progress) as progress:
        task = progress.add_task("reading", total=None)

        def items():
            for path, fmt in inputs:
                progress.update(task, description=f"reading {Path(path).name}")
                read = 0
                found = read_source(
                    path, fmt, encoding=settings.encoding, include_examples=settings.include_examples, dropped=dropped
                )
                if categories is not None:
                    found = categories.apply(found, Path(path).name)
                for item in found:
                    yield _first_sentence(item) if settings.first_sentence else item
                    read += len(item.definitions) if isinstance(item, Entry) else 1
                    if read >= 1000:  # the bar in steps, not per definition
                        progress.advance(task, read)
                        read = 0
                progress.advance(task, read)

        entries = merge(items(), lowercase=settings.lowercase, origins=origins, dropped=dropped)
    if categories is not None:
        categories.check()
    if settings.tokenizer is not None:
        entries = single_token(entries, settings.tokenizer)
    entries = min_definitions(entries, settings.min_definitions)
    entries = sample_entries(entries, settings.sample, settings.seed)
    entries = max_entries(entries, settings.max_entries)
    if settings.fractions is not None:
        entries = assign_splits(entries, settings.fractions, settings.seed, by=settings.split_by)
    if not entries:
        raise DefsentError("no entries left after reading and filtering; nothing written")
    return entries
