"""``defsent sample-pairs``: unlabelled sentence pairs from a pool of sentences (Augmented SBERT's sampling)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from . import options as opt
from .boundary import guard, warn_ineffective


def sample_pairs_command(
    ctx: typer.Context,
    sentences: Annotated[
        Path,
        typer.Argument(
            metavar="SENTENCES",
            help="The pool: one sentence per line, or a pairs file (both sides of every pair, e.g. sts-train.csv).",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Pairs: sentence1<TAB>sentence2, one per line.", show_default=False)
    ],
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="random, bm25 (bm25s), semantic (nearest neighbours under --model), or a comma list for their union "
            "(the thesis: random,semantic).",
        ),
    ] = "random,semantic",
    per_sentence: Annotated[
        int, typer.Option("--per-sentence", "-k", min=1, help="Pairs per sentence and strategy.")
    ] = 3,
    model: Annotated[
        Path | None,
        typer.Option("--model", "-m", help="The bi-encoder of --strategy semantic.", show_default=False),
    ] = None,
    pooling: opt.Pooling = None,
    batch_size: opt.BatchSize = 32,
    device: opt.Device = "auto",
    seed: opt.Seed = opt.SEED_DEFAULT,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Draw unlabelled pairs from a pool of sentences for a teacher to label.

    \b
    Examples:
      defsent sample-pairs pool.txt --strategy random,semantic -m BASE -o new.tsv
      defsent sample-pairs sts-train.csv --strategy bm25 -k 5 -o bm25.tsv

    Each pair once (either order), never a sentence with itself. Then: defsent label new.tsv -m TEACHER.
    """
    from ..augment.sampling import sample_pairs
    from ..formats.pairs import read_pairs
    from ..io import atomic_text, check_input, check_output, read_texts

    strategies = [s.strip() for s in strategy.split(",") if s.strip()]
    warn_ineffective(
        ctx, [("model", "semantic" not in strategies, "--model has no effect without --strategy semantic")]
    )
    check_output(output, force)
    path = check_input(sentences)
    if path.suffix.lower() in (".tsv", ".csv") or path.name.startswith("SICK"):
        found = read_pairs(path)
        pool = list(dict.fromkeys([*found.sent1, *found.sent2]))
    else:
        pool = list(dict.fromkeys(read_texts([path], skip_blank=True)))
    encode = None
    if "semantic" in strategies:
        if model is None:
            from ..errors import DefsentError

            raise DefsentError("--strategy semantic needs a bi-encoder: pass --model")
        encoder = opt.encoder(opt.encode_spec(pooling), model, device, "torch", "fp32", batch_size, None, show_progress)
        encode = encoder
    pairs = sample_pairs(pool, strategies, per_sentence, seed, encode)
    with atomic_text(output) as fh:
        for i, j in pairs:
            fh.write(f"{pool[i]}\t{pool[j]}\n")
    say(f"wrote {output}: {len(pairs):,} pairs from {len(pool):,} distinct sentences ({', '.join(strategies)})")


def register(app: typer.Typer) -> None:
    app.command("sample-pairs")(guard(sample_pairs_command))
