"""``defsent label``: score sentence pairs with a teacher (``defsent teacher``), writing a silver TSV."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from . import options as opt
from .boundary import guard


def label_command(
    pairs: Annotated[
        Path,
        typer.Argument(
            metavar="PAIRS",
            help="Pairs to score: sentence1<TAB>sentence2 (a score column, STS-B or SICK layouts are read and the "
            "gold scores ignored).",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Silver pairs: sentence1<TAB>sentence2<TAB>score.", show_default=False),
    ],
    model: opt.Model = None,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", min=1, help="Pairs per forward pass.")] = 64,
    device: opt.Device = "auto",
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Score sentence pairs with a teacher; the scores in the gold's scale (x the teacher's --max-score).

    \b
    Examples:
      defsent label unlabelled.tsv -m ce/ -o silver.tsv
      defsent train-pairs silver.tsv -m BASE -o student/

    A Cross-Encoder's score is sigmoid(logit) x max-score, in (0, max-score); a Cross-Bi-Encoder's is its
    cosine x max-score, which can go below 0 for unrelated pairs (train-pairs accepts that range).
    """
    from ..console import make_progress
    from ..formats.pairs import read_pairs
    from ..io import check_input, check_output, output_name, text_output
    from ..training.teachers import load_teacher

    check_output(output, force, stdout=True)
    found = read_pairs(check_input(pairs))
    scorer, info, loaded = load_teacher(model, device)
    scale = float(info.get("max_score", 5.0))
    with make_progress("pairs", show_progress) as progress:
        task = progress.add_task("labelling", total=len(found))
        scores = scorer.score(
            found.sent1, found.sent2, loaded.device, batch_size, progress=lambda n: progress.update(task, advance=n)
        )
    with text_output(output) as fh:
        for a, b, score in zip(found.sent1, found.sent2, scores, strict=True):
            fh.write(f"{a}\t{b}\t{score * scale:.4f}\n")
    say(
        f"wrote {output_name(output)}: {len(found):,} pairs scored by {model} ({info.get('arch')}), mean {scores.mean() * scale:.3f}"
    )


HELP_ORDER = 100  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("label")(guard(label_command))
