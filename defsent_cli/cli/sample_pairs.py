"""``defsent sample-pairs``: unlabelled sentence pairs from a pool of sentences (Augmented SBERT's sampling)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..errors import count
from . import options as opt
from .boundary import guard, warn_ineffective
from .groups import Values, change, takes_groups
from .models import MODEL, encode_spec, load_encoder

BiEncoder = Annotated[
    Path | None, typer.Option("--model", "-m", help="The bi-encoder of --strategy semantic.", show_default=False)
]


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
        str | None,
        typer.Option(
            "--strategy",
            help="random, bm25 (bm25s), semantic (nearest neighbours under --model), or a comma list for their union. "
            "Default: random,semantic (the thesis's) with --model, random without.",
            show_default=False,
        ),
    ] = None,
    per_sentence: Annotated[
        int, typer.Option("--per-sentence", "-k", min=1, help="Pairs per sentence and strategy.")
    ] = 3,
    model: Values = MODEL(model=change(annotation=BiEncoder), only=("model", "batch_size", "device")),
    pooling: opt.Pooling = None,
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
    from ..augment.sampling import check_sampling, read_pool, sample_pairs
    from ..io import check_output, output_name, text_output

    if strategy is None:  # the thesis's union needs a bi-encoder: without one, random pairs
        strategy = "random,semantic" if model.model is not None else "random"
    strategies = [s.strip() for s in strategy.split(",") if s.strip()]
    warn_ineffective(
        ctx, [("model", "semantic" not in strategies, "--model has no effect without --strategy semantic")]
    )
    check_output(output, force, stdout=True)
    pool, read_as = read_pool(sentences)
    check_sampling(pool, strategies, model.model is not None)  # before a model loads
    encode = None
    if "semantic" in strategies:
        encode = load_encoder(encode_spec(pooling), model, show_progress=show_progress)
    pairs = sample_pairs(pool, strategies, per_sentence, seed, encode)
    with text_output(output) as fh:
        for i, j in pairs:
            fh.write(f"{pool[i]}\t{pool[j]}\n")
    say(
        f"wrote {output_name(output)}: {count(len(pairs), 'pair')} from {count(len(pool), 'distinct sentence')} ({read_as}; "
        f"{', '.join(strategies)})"
    )


HELP_ORDER = 110  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("sample-pairs")(guard(takes_groups(sample_pairs_command)))
