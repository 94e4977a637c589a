"""``defsent embed-entries``: a dictionary and an encoder in, an HDF5 entry bank out."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from .. import distributed
from ..console import say
from ..errors import DefsentError
from ..formats.bank import KINDS, check_bank_path
from ..formats.dictionary import SPLITS, check_splits
from ..io import check_output, sha256_file, stdin_as_file
from ..log import warn
from ..training.config import PART_DEFINITIONS
from . import options as opt
from .boundary import guard, warn_ineffective
from .groups import Values, takes_groups
from .models import MODEL, load

Kind = opt.choices("Kind", KINDS)
Pool = opt.choices("Pool", KINDS.values())


def embed_entries(
    ctx: typer.Context,
    output: Annotated[Path, typer.Option("--output", "-o", help="Output bank (.h5).", show_default=False)],
    dictionary: Annotated[
        Path | None,
        typer.Argument(
            metavar="[DICTIONARY]",
            help="Dictionary JSONL (build-dict output); default or '-': stdin.",
            show_default=False,
        ),
    ] = None,
    model: Values = MODEL(),
    kind: Annotated[
        Kind | None,
        typer.Option(
            "--kind",
            "-k",
            help="AC (mean of CLS states) or AMP (mean of mean-pooled states). Default: the model's own pooling "
            "(AMP for a mean-pooling folder such as all-MiniLM-L6-v2, AC for a plain BERT/RoBERTa).",
            show_default=False,
        ),
    ] = None,
    pool: Annotated[
        Pool | None,
        typer.Option("--pool", help="The same choice by pooling, as the paper names it: mean (AMP) or cls (AC)."),
    ] = None,
    splits: Annotated[
        str, typer.Option("--splits", help="Comma-separated splits whose entries enter the bank.")
    ] = ",".join(SPLITS),
    part_size: Annotated[
        int,
        typer.Option(
            "--part-size",
            min=1,
            help="Definitions per part: the entries are embedded in contiguous parts of about this many "
            "definitions, each written to the output before the next; memory holds one part (a definition shared "
            "by entries of two parts is encoded in each).",
        ),
    ] = PART_DEFINITIONS,
    texts: Annotated[
        list[Path] | None,
        typer.Option(
            "--texts",
            help="Domain text, one text per line (your domain's own sentences or titles, never your evaluation's): "
            "each entry it mentions (its words in a row, whole, any case; not an entry of stop words alone) is "
            "embedded as the mean of up to --texts-per-entry of those lines instead of its definitions; the "
            "other entries keep their definitions' mean. Repeatable: the files are read one after another, in "
            "the order given. docs/domain.md.",
            show_default=False,
        ),
    ] = None,
    texts_per_entry: Annotated[
        int,
        typer.Option("--texts-per-entry", min=1, help="With --texts: the lines kept per entry (the file's first)."),
    ] = 32,
    dims: opt.Dims = None,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Embed every dictionary entry as the mean of its definitions' vectors (AC or AMP bank); with --texts,
    an entry your domain's text mentions as the mean of the lines that mention it.

    \b
    Examples:
      defsent embed-entries dict.jsonl --model ckpt/ --kind AMP -o bank.h5
      defsent build-dict --wordnet /usr/share/wordnet -o - \\
          | defsent embed-entries --encoder ckpt/ --pool mean -o bank.h5
      defsent embed-entries glossary.jsonl --pool cls --texts titles.txt \\
          -o bank.h5
      defsent embed-entries dict.jsonl -m mrl-ckpt/ --dims 128 -o bank-128.h5

    Memory is bounded whatever the size of the dictionary: the model and one part of --part-size definitions;
    the rows are streamed into the output (its disk space checked and reserved first). Under torchrun the
    processes share the definitions and rank 0 writes the bank.
    """
    from ..banks.entry_bank import write_bank_streamed
    from ..encoder.onnx_runtime import describe  # torch: imported by the command, not by --help

    check_output(check_bank_path(output), force)
    texts = texts or None
    warn_ineffective(ctx, [("texts_per_entry", texts is None, "--texts-per-entry has no effect without --texts")])
    if texts is not None and any(str(path) == "-" for path in texts):
        raise DefsentError("--texts reads a file, not stdin: give its path")
    wanted = check_splits(splits.split(","))
    chosen = bank_kind(model.model, kind, pool)
    from_stdin = dictionary is None or str(dictionary) == "-"
    if from_stdin and distributed.active():
        raise DefsentError("under torchrun every process reads the dictionary: give it as a file, not on stdin")
    with stdin_as_file(".jsonl") if from_stdin else nullcontext(dictionary) as source:
        sha256_file(source)  # a missing dictionary or text file fails before the model loads
        found = None if texts is None else domain_texts(source, texts, texts_per_entry, wanted, splits)
        loaded = load(model)
        with distributed.session(loaded.device):
            bank = write_bank_streamed(
                source,
                loaded,
                output,
                chosen,
                wanted,
                model.batch_size,
                model.max_length,
                part_definitions=part_size,
                show_progress=show_progress,
                shard=True,
                dictionary_name="-" if from_stdin else None,
                texts=found,
                dims=dims,
            )
    if bank is None:  # not rank 0: rank 0 writes
        return
    named = None if texts is None else _names(texts)
    averaged = "definitions" if found is None else f"texts and definitions; {bank.from_texts} entries from {named}"
    cut = "" if dims is None else f", the leading {bank.dim} of {loaded.dim}"
    say(
        f"wrote {output}: {bank.entries} entries x {bank.dim} dims{cut} ({bank.kind}, "
        f"{bank.definitions} {averaged}, {describe(loaded)})"
    )


def domain_texts(dictionary: Path, texts: list[Path], per_entry: int, wanted: list[str], splits: str):
    """The lines of the ``texts`` files that mention the dictionary's entries (``--texts``, read in the order
    given), with a note of how many; a warning where they change no row of the bank: a file that mentions no
    entry, or mentions only entries outside ``--splits`` (``wanted``)."""
    from ..banks.domain_text import find_texts
    from ..formats.dictionary import iter_entries

    found = find_texts(texts, (entry.entry for entry in iter_entries(dictionary, unique=False)), per_entry)
    named = _names(texts)
    say(f"{named}: {found.lines:,} lines, kept up to {per_entry} per entry they mention")
    plain = "every row is its definitions' mean, as without --texts"
    if not found.found:
        warn(f"{named} {'mentions' if len(texts) == 1 else 'mention'} none of the dictionary's entries: {plain}")
    elif not found.occurrences(dictionary, wanted)[1]:
        warn(
            f"{named} {'mentions' if len(texts) == 1 else 'mention'} only entries outside --splits {splits} "
            f"({len(found.found):,} of them), which the bank does not hold: {plain}"
        )
    elif len(texts) > 1:
        for path, mentions in found.mentioning.items():
            if not mentions:
                warn(f"{path} mentions none of the dictionary's entries: its lines are in no row")
    return found


def _names(paths: list[Path]) -> str:
    """``a.txt``, ``a.txt and b.txt``, ``a.txt, b.txt and c.txt``."""
    names = list(map(str, paths))
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def bank_kind(model: Path, kind, pool) -> str:
    """The bank's kind: ``--kind``, or ``--pool`` by its pooling name, or the model's own pooling (AMP for mean,
    AC otherwise); the closing line says which."""
    kind, pool = opt.value(kind), opt.value(pool)
    by_pool = {pooling: name for name, pooling in KINDS.items()}
    if kind and pool and by_pool[pool] != kind:
        raise DefsentError(f"--kind {kind} and --pool {pool} disagree (--pool {pool} is --kind {by_pool[pool]})")
    if kind or pool:
        return kind or by_pool[pool]
    from ..encoder.models import own_pooling

    return by_pool.get(own_pooling(model), "AC")


HELP_ORDER = 20  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("embed-entries")(guard(takes_groups(embed_entries)))
