"""``defsent kde-filter``: keep the silver pairs whose scores make the gold distribution (Augmented SBERT)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from . import options as opt
from .boundary import guard

Method = opt.choices("KdeMethod", ("kde", "iterative"))


def kde_filter_command(
    silver: Annotated[
        Path,
        typer.Argument(
            metavar="SILVER",
            help="Scored pairs: defsent label's TSV, or an STS-B or SICK file (as train-pairs reads them).",
            show_default=False,
        ),
    ],
    gold: Annotated[Path, typer.Option("--gold", help="The gold scored pairs whose score distribution to match.")],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="The silver pairs kept, in the silver's order, always as TSV whatever the silver's layout: "
            "sentence1<TAB>sentence2<TAB>score on each line.",
        ),
    ],
    method: Annotated[
        Method,
        typer.Option(
            "--method",
            help="kde: keep with probability min(1, F_gold / F_silver) (Thakur et al. 2021); iterative: Reiml "
            "2023's Algorithm 1 (a pair is kept while the gold density beats the kept set's).",
        ),
    ] = Method.iterative,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Draw the gold, offered and kept score histograms (.png, .pdf, .svg)."),
    ] = None,
    seed: opt.Seed = opt.SEED_DEFAULT,
    force: opt.Force = False,
) -> None:
    """Keep the silver pairs whose score distribution matches the gold one (kernel density estimates).

    \b
    Examples:
      defsent kde-filter silver.tsv --gold gold.tsv -o kept.tsv --plot scores.png
      defsent kde-filter silver.tsv --gold sts-train.csv --method kde -o kept.tsv

    Prints the total variation distance between the gold and the silver score histograms (10 bins) before
    and after: 0 is the same shape.
    """
    import numpy as np

    from ..augment.kde import histogram_distance, iterative_kde, kde_sample, plot_histograms
    from ..formats.pairs import read_pairs
    from ..io import check_output, output_name, outputs_together, text_output

    check_output(output, force, stdout=True)
    if plot is not None:
        from ..space.plots import check_plot_path

        check_output(check_plot_path(plot), force)
    found, target = read_pairs(silver), read_pairs(gold)
    for pairs, name in ((found, silver), (target, gold)):
        if pairs.scores is None:
            from ..errors import DefsentError

            raise DefsentError("has no scores: kde-filter compares score distributions", path=name)
        if len(set(pairs.scores)) < 2:  # a density estimate needs a spread: name the file that has none
            from ..errors import DefsentError

            n = len(pairs.scores)
            one = (
                f"its one pair scores {pairs.scores[0]:g}"
                if n == 1
                else f"all its {n:,} pairs score {pairs.scores[0]:g}"
            )
            raise DefsentError(
                f"{one}: kde-filter needs at least two different scores for a density estimate", path=name
            )
    scores, gold_scores = np.asarray(found.scores), np.asarray(target.scores)
    silver_top, gold_top = float(np.abs(scores).max()), float(np.abs(gold_scores).max())
    scales = None
    if min(silver_top, gold_top) * 3 <= max(silver_top, gold_top):  # 0-1 scores against 0-5: another scale
        scales = (
            f"the silver scores reach {silver_top:g} and the gold ones {gold_top:g}: on different scales, the filter "
            "matches shapes that do not line up (label writes scores in the teacher's --max-score scale; train the "
            "teacher on this gold file, or rescale one of them)"
        )
    kept = (iterative_kde if opt.value(method) == "iterative" else kde_sample)(gold_scores, scores, seed)
    if len(kept) == 0:  # an empty silver set is no output: say why instead of writing one
        from ..errors import DefsentError

        raise DefsentError(
            f"kept none of the {len(scores):,} silver pairs: where their scores lie "
            f"({scores.min():g} to {scores.max():g}) the gold density (scores {gold_scores.min():g} to "
            f"{gold_scores.max():g}) is far below theirs; nothing written ("
            + (scales or "try --method iterative, or more pairs")
            + ")",
            path=silver,
        )
    if scales is not None:
        from ..log import warn

        warn(scales)
    with outputs_together(output, plot):  # the plot first: one that fails leaves no pairs, on stdout either
        if plot is not None:
            plot_histograms(plot, gold_scores, scores, scores[kept])
        with text_output(output) as fh:
            for i in kept:
                fh.write(f"{found.sent1[i]}\t{found.sent2[i]}\t{found.scores[i]:g}\n")
    before, after = histogram_distance(gold_scores, scores), histogram_distance(gold_scores, scores[kept])
    say(
        f"wrote {output_name(output)}: kept {len(kept):,} of {len(scores):,} pairs; histogram distance to the gold "
        f"{before:.3f} -> {after:.3f}"
    )


HELP_ORDER = 120  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("kde-filter")(guard(kde_filter_command))
