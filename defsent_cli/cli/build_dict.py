"""``defsent build-dict`` and ``defsent dict-stats``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..dictionary.choices import DEFAULT_WORDNET_DIR, FORMATS, SPLIT_BY
from ..io import check_output, is_stdout, write_stdout
from . import options as opt
from .boundary import guard, warn_given
from .render import show, stats_table

SourceFormat = opt.choices("SourceFormat", FORMATS)
SplitBy = opt.choices("SplitBy", SPLIT_BY)

Sources = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="SOURCES",
        help="Dictionary files (Oxford, TSV, DefSent+ CSV, JSONL), dictd databases (NAME.index, NAME.dict.dz or "
        "NAME: GCIDE, FOLDOC, the Jargon File and others), glossaries pyglossary reads (StarDict .ifo, .bgl, .xdxf, "
        ".dsl and more) "
        "or WordNet folders.",
        show_default=False,
    ),
]
SourceFormatOption = Annotated[
    SourceFormat,
    typer.Option(
        "--format",
        help="Format of the SOURCES files (auto: by suffix and first line; glossary: through pyglossary, "
        "pip install 'defsent-cli[glossary]').",
    ),
]
SplitByOption = Annotated[
    SplitBy,
    typer.Option(
        "--split-by",
        help="What --split keeps together: definition-group = entries that share a definition (casefolded, "
        "whitespace and trailing punctuation ignored) go to one split, so no held-out definition is a training "
        "one; entry = each entry alone, as before (aliases and synonyms that share a gloss can end up on both sides).",
    ),
]


def build_dict(
    output: Annotated[Path, typer.Option("--output", "-o", help="Dictionary JSONL to write.", show_default=False)],
    sources: Sources = None,
    fmt: SourceFormatOption = SourceFormat.auto,
    wordnet: Annotated[
        Path | None,
        typer.Option(
            "--wordnet", help=f"WordNet 3.0 database folder to add (default {DEFAULT_WORDNET_DIR} without SOURCES)."
        ),
    ] = None,
    examples: Annotated[
        bool,
        typer.Option(
            "--examples",
            help="Keep usage examples in the definitions (WordNet's quoted ones, GCIDE's '; as, a bank of snow').",
        ),
    ] = False,
    encoding: Annotated[
        str, typer.Option("--encoding", help="Text encoding of the files (DefSent+ CSV: utf-16).")
    ] = "utf-8",
    lowercase: Annotated[bool, typer.Option("--lowercase", help="Lowercase entries.")] = False,
    category: Annotated[
        list[str] | None,
        typer.Option(
            "--category",
            help="Keep only the definitions of this category (repeatable; FOLDOC's <programming>, <networking> tags); "
            "sources without categories are kept whole.",
            show_default=False,
        ),
    ] = None,
    first_sentence: Annotated[
        bool,
        typer.Option(
            "--first-sentence",
            help="Cut each definition to its first sentence (FOLDOC's and GCIDE's definitions are often paragraphs "
            "whose first sentence defines).",
        ),
    ] = False,
    single_token: Annotated[
        Path | None,
        typer.Option("--single-token", help="Keep only entries that are one token for this model folder's tokenizer."),
    ] = None,
    min_definitions: Annotated[
        int, typer.Option("--min-definitions", min=1, help="Keep entries with at least N definitions.")
    ] = 1,
    max_entries: Annotated[
        int | None, typer.Option("--max-entries", min=1, help="Keep the first N entries (after filters).")
    ] = None,
    split: Annotated[
        str | None,
        typer.Option("--split", help="train,dev,test fractions of the entries, e.g. 0.8,0.1,0.1 (default: all train)."),
    ] = None,
    split_by: SplitByOption = SplitBy.definition_group,
    sample: Annotated[
        int | None,
        typer.Option("--sample", min=1, help="Keep a seeded random sample of N entries, in order (after filters)."),
    ] = None,
    seed: opt.Seed = opt.SEED_DEFAULT,
    stats: Annotated[
        bool, typer.Option("--stats", help="Print the statistics per split and per source (stderr).")
    ] = False,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Build a dictionary JSONL from WordNet, dictd databases and/or dictionary files (merged case-insensitively).

    \b
    Examples:
      defsent build-dict --wordnet /usr/share/wordnet --split 0.8,0.1,0.1 \\
          -o dict.jsonl --stats
      defsent build-dict /usr/share/dictd/foldoc.index --category programming \\
          -o foldoc.jsonl --stats
    """
    from ..dictionary.build import BuildSettings, build_dictionary, default_sources
    from ..dictionary.splitting import parse_fractions
    from ..encoder.models import load_tokenizer
    from ..formats.dictionary import write_dictionary

    check_output(output, force, stdout=True)
    _check_encoding(encoding)
    warn_given(
        [
            ("split_by", split is None, "--split-by has no effect without --split: every entry is in train"),
            ("seed", split is None and sample is None, "--seed has no effect without --split or --sample"),
        ]
    )
    settings = BuildSettings(
        encoding=encoding,
        include_examples=examples,
        lowercase=lowercase,
        tokenizer=load_tokenizer(single_token) if single_token is not None else None,
        min_definitions=min_definitions,
        sample=sample,
        max_entries=max_entries,
        fractions=parse_fractions(split) if split is not None else None,
        seed=seed,
        split_by=opt.value(split_by),
        categories=tuple(category or ()),
        first_sentence=first_sentence,
    )
    inputs = default_sources(wordnet, [(path, opt.value(fmt)) for path in sources or []])
    origins: dict[str, list[str]] = {}
    dropped: Counter[tuple[str, str]] = Counter()
    entries = build_dictionary(inputs, settings, show_progress=show_progress, origins=origins, dropped=dropped)
    write_dictionary(output, entries)
    _report(output, entries, settings.tokenizer, origins, dropped, stats)


def _report(output: Path, entries, tokenizer, origins: dict[str, list[str]], dropped: Counter, stats: bool) -> None:
    """What build-dict wrote, in one line on stderr; with ``--stats`` the tables per split, per source and of the
    definitions dropped."""
    from ..dictionary.stats import dictionary_stats, source_stats
    from ..formats.dictionary import SPLITS

    n_defs = sum(len(e.definitions) for e in entries)
    names = sorted({s for e in entries for s in e.sources})
    counts = {s: sum(e.split == s for e in entries) for s in SPLITS}
    where = "stdout" if is_stdout(output) else output
    split_text = ", ".join(f"{s} {n:,}" for s, n in counts.items() if n)
    say(f"wrote {len(entries):,} entries, {n_defs:,} definitions from {', '.join(names)} to {where} ({split_text})")
    if stats:
        show(stats_table(dictionary_stats(entries, tokenizer), title=str(output)), to_stdout=False)
        show(source_table(source_stats(entries, origins)), to_stdout=False)
        show(dropped_table(dropped), to_stdout=False)


def dropped_table(dropped: Counter[tuple[str, str]]):
    """The definitions build-dict dropped as it merged them, by source and reason (``build-dict --stats``)."""
    from rich.table import Table

    from ..dictionary.text import DROP_REASONS

    if not dropped:
        return "dropped definitions: none"
    table = Table(title="dropped definitions")
    for name, justify in (("source", "left"), ("why", "left"), ("definitions", "right")):
        table.add_column(name, justify=justify)
    for (source, why), n in sorted(dropped.items(), key=lambda kv: (kv[0][0], list(DROP_REASONS).index(kv[0][1]))):
        table.add_row(source, DROP_REASONS[why], f"{n:,}")
    return table


def source_table(rows: dict[str, dict]):
    """The per-source table of ``build-dict --stats``."""
    from rich.table import Table

    table = Table(title="per source")
    for name, justify in (("source", "left"), ("entries", "right"), ("definitions", "right"), ("defs/entry", "right")):
        table.add_column(name, justify=justify)
    for name, row in rows.items():
        if name == "total":
            table.add_section()
        per = row["definitions"] / row["entries"] if row["entries"] else 0.0
        table.add_row(name, f"{row['entries']:,}", f"{row['definitions']:,}", f"{per:.2f}")
    return table


def _check_encoding(encoding: str) -> None:
    import codecs

    from ..errors import DefsentError

    try:
        codecs.lookup(encoding)
    except LookupError:
        raise DefsentError(f"unknown --encoding {encoding!r}; e.g. utf-8, utf-16, latin-1") from None


def dict_stats(
    path: Annotated[Path, typer.Argument(metavar="DICTIONARY", help="Dictionary JSONL.", show_default=False)],
    tokenizer_dir: Annotated[
        Path | None,
        typer.Option("--tokenizer", help="Local model folder whose tokenizer measures definition lengths."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the statistics as JSON on stdout.")] = False,
) -> None:
    """Show entries, definitions and token lengths per split of a dictionary (DefSent+ Table 1 view).

    \b
    Example:
      defsent dict-stats dict.jsonl --tokenizer models/bert-base-uncased --json
    """
    from ..dictionary.stats import dictionary_stats
    from ..encoder.models import load_tokenizer
    from ..formats.dictionary import read_dictionary

    tokenizer = load_tokenizer(tokenizer_dir) if tokenizer_dir is not None else None
    stats = dictionary_stats(read_dictionary(path), tokenizer)
    if as_json:
        write_stdout(json.dumps(stats, indent=2) + "\n")
    else:
        show(stats_table(stats, title=str(path)), to_stdout=True)


HELP_ORDER = 10  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("build-dict")(guard(build_dict))
    app.command("dict-stats")(guard(dict_stats))
