"""``build-dict`` and ``dict-stats``: parse options, call :mod:`defsent_cli.dictionary`."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from .. import dictionary as lib
from ..cli import command
from ..console import err_console
from ..errors import DefsentError
from ..io import check_output


@command("build-dict")
def build_dict(
    sources: list[Path] = typer.Argument(
        None, help="WordNet directories or dictionary files (Oxford, TSV, DefSent+ CSV, JSONL).", show_default=False
    ),
    output: Path = typer.Option(..., "-o", "--output", help="Dictionary JSONL to write."),
    fmt: str = typer.Option("auto", "--format", help="Format of the SOURCES files: " + ", ".join(lib.FORMATS) + "."),
    wordnet: Path | None = typer.Option(
        None,
        "--wordnet",
        help=f"WordNet 3.0 database directory to add (default {lib.DEFAULT_WORDNET_DIR} when no SOURCES are given).",
    ),
    examples: bool = typer.Option(False, "--examples", help="Keep WordNet usage examples in the glosses."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Text encoding of the files (DefSent+ CSV: utf-16)."),
    lowercase: bool = typer.Option(False, "--lowercase", help="Lowercase entries."),
    single_token: Path | None = typer.Option(
        None, "--single-token", help="Keep only entries that are one token for this local model folder's tokenizer."
    ),
    min_definitions: int = typer.Option(
        1, "--min-definitions", min=1, help="Keep entries with at least N definitions."
    ),
    max_entries: int | None = typer.Option(
        None, "--max-entries", min=1, help="Keep the first N entries (after filters)."
    ),
    split: str | None = typer.Option(
        None,
        "--split",
        help="train,dev,test fractions, e.g. 0.8,0.1,0.1, assigned by entry (default: keep; all train).",
    ),
    sample: int | None = typer.Option(
        None, "--sample", min=1, help="Keep a seeded random sample of N entries, in dictionary order (after filters)."
    ),
    seed: int = typer.Option(42, "--seed", help="Seed for --split and --sample."),
    stats: bool = typer.Option(False, "--stats", help="Print the dictionary statistics table (stderr)."),
    force: bool = typer.Option(False, "--force", help="Overwrite OUTPUT."),
) -> None:
    """Build a dictionary JSONL from WordNet and/or dictionary files (merged case-insensitively).

    Example: defsent build-dict --wordnet /usr/share/wordnet -o dict.jsonl --split 0.8,0.1,0.1 --seed 42
    """
    check_output(output, force)
    fractions = lib.parse_fractions(split) if split is not None else None
    tokenizer = lib.load_tokenizer(single_token) if single_token is not None else None
    inputs: list[tuple[Path, str]] = [(path, fmt) for path in sources or []]
    if wordnet is not None:
        inputs.insert(0, (wordnet, "wordnet"))
    if not inputs:
        if not lib.DEFAULT_WORDNET_DIR.is_dir():
            raise DefsentError(f"no sources given and {lib.DEFAULT_WORDNET_DIR} does not exist; {lib.WORDNET_HINT}")
        inputs = [(lib.DEFAULT_WORDNET_DIR, "wordnet")]

    def items():
        for path, path_fmt in inputs:
            yield from lib.read_source(path, path_fmt, encoding=encoding, include_examples=examples)

    entries = lib.merge(items(), lowercase=lowercase)
    if tokenizer is not None:
        entries = lib.single_token(entries, tokenizer)
    entries = lib.min_definitions(entries, min_definitions)
    entries = lib.sample_entries(entries, sample, seed)
    entries = lib.max_entries(entries, max_entries)
    if fractions is not None:
        entries = lib.assign_splits(entries, fractions, seed)
    if not entries:
        raise DefsentError("no entries left after reading and filtering; nothing written", path=output)
    lib.write_dictionary(output, entries)

    n_defs = sum(len(e.definitions) for e in entries)
    names = sorted({s for e in entries for s in e.sources})
    splits = {s: sum(e.split == s for e in entries) for s in lib.SPLITS}
    split_text = ", ".join(f"{s} {n:,}" for s, n in splits.items() if n)
    err_console.print(
        f"wrote {len(entries):,} entries, {n_defs:,} definitions from {', '.join(names)} to {output} ({split_text})",
        soft_wrap=True,
        markup=False,
    )
    if stats:
        err_console.print(lib.stats_table(lib.dictionary_stats(entries, tokenizer), title=str(output)))


@command("dict-stats")
def dict_stats(
    path: Path = typer.Argument(..., help="Dictionary JSONL."),
    tokenizer_dir: Path | None = typer.Option(
        None, "--tokenizer", help="Local model folder whose tokenizer measures definition lengths."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the statistics as JSON on stdout."),
) -> None:
    """Show entries, definitions and token lengths per split of a dictionary (DefSent+ Table 1 view).

    Example: defsent dict-stats dict.jsonl --tokenizer models/bert-base-uncased --json
    """
    tokenizer = lib.load_tokenizer(tokenizer_dir) if tokenizer_dir is not None else None
    stats = lib.dictionary_stats(lib.read_dictionary(path), tokenizer)
    if as_json:
        typer.echo(json.dumps(stats, indent=2))
    else:
        Console(highlight=False).print(lib.stats_table(stats, title=str(path)))
