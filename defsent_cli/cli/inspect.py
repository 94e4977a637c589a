"""``defsent inspect``: isotropy figures and pictures of entry spaces, and the geometry of a model's
sentence embeddings (IsoScore, alignment, uniformity)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..errors import DefsentError
from ..io import check_output, json_text, outputs_together, write_json, write_stdout
from . import options as opt
from .boundary import guard
from .groups import Values, change, takes_groups
from .models import BUDGET, MODEL, TOOLBOX, encode_spec, load_encoder
from .render import inspect_table, show
from .results import expand_models

InspectModels = Annotated[
    list[Path] | None,
    typer.Option(
        "--model",
        "-m",
        help="Describe this model's sentence embeddings instead (repeatable, quoted globs): the figures on "
        "--corpus, alignment / uniformity on STS-B train.",
        show_default=False,
    ),
]


def inspect(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(metavar="PATHS", help="Bank(s) (.h5) or vector files (.npy) to describe, in order."),
    ] = None,
    model: Values = MODEL(model=change(annotation=InspectModels), without=BUDGET),
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            "-d",
            envvar="DEFSENT_DATA",
            help="With --model: the folder holding wikitext-2/ and senteval/ (e.g. ../shared/data).",
            show_default=False,
        ),
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="With --model: sentences to describe, one per line (default: WikiText-2 test sentences of >= 10 "
            "characters, wikitext-2/wiki.test.raw).",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            min=2,
            help="A seeded random sample (--seed) of this many rows of each bank or .npy (read alone: a bank larger "
            "than memory can be inspected), or with --model of the corpus.",
        ),
    ] = None,
    stsb: Annotated[
        bool, typer.Option("--stsb/--no-stsb", help="With --model: alignment and uniformity on STS-B train.")
    ] = True,
    pairs: Annotated[
        int, typer.Option("--pairs", min=1, help="Random pairs for the mean cosine (all pairs if fewer).")
    ] = 100_000,
    seed: opt.Seed = opt.SEED_DEFAULT,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Draw the SVD and PCA-whitened 2-D projections (.png, .pdf, .svg).")
    ] = None,
    points: Annotated[
        int, typer.Option("--points", min=10, help="Points per projection in the plot (a random sample).")
    ] = 5000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON on stdout.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the figures as JSON to this file.")
    ] = None,
    force: opt.Force = False,
    pooling: opt.Pooling = None,
    toolbox: Values = TOOLBOX(),
    show_progress: opt.Progress = None,
) -> None:
    """Isotropy figures (mean cosine, variance shares, I(W), IsoScore, skewness / kurtosis) of entry spaces,
    optional plot; or of a model's sentence embeddings, with alignment and uniformity.

    Several banks (e.g. PST steps, before / after ICA) give one column and one plot row each.

    Memory: each bank or matrix is read whole and its figures work on float64 copies of it, a peak of about
    12 times its float32 size (n x d x 4 bytes; measured: 1.7 GiB for 100,000 x 384); --limit N reads only a
    seeded sample of N rows of each.

    \b
    Examples:
      defsent inspect bank.h5 bank-ica.h5 --plot space.png
      defsent inspect -m ckpt/ --pooling mean --post whiten -d ../shared/data \\
          -o geometry.json
    """
    from ..formats.vectors import load_space  # numpy: imported by the command, not by --help
    from ..space.isotropy import space_report

    folders = model.model  # -m, repeatable
    if not paths and not folders:
        raise DefsentError("nothing to inspect: give bank or vector files, or --model PATH")
    if output is not None:
        check_output(output, force, stdout=True)
    if plot is not None:
        from ..space.plots import check_plot_path

        check_output(check_plot_path(plot), force)
        if not paths:
            raise DefsentError("--plot draws bank or vector files: give PATHS")
    spaces = [load_space(p, limit, seed) for p in paths or []]
    reports = [space_report(space, pairs, seed) for space in spaces]
    models, sentences = [], []
    if folders:
        spec = encode_spec(pooling, toolbox)
        models = expand_models(folders)
        sentences = _sentence_figures(models, model, spec, show_progress, data, corpus, limit, seed, stsb, pairs)
    if reports:
        show(inspect_table(reports), to_stdout=False)
    if sentences:
        show(inspect_table(sentences, "sentence-space figures"), to_stdout=False)
    for number, report in enumerate(reports + sentences, start=1):
        say(f"{number}: {report['describe']}")
    document = {"pairs": pairs, "seed": seed, "banks": reports}
    if sentences:
        document["sentences"] = sentences
    if output is not None or as_json:
        from ..formats.results import provenance

        inputs_read = [*(paths or []), *([corpus] if folders and corpus else []), *([data] if folders and data else [])]
        document["provenance"] = provenance(models, inputs_read, seed)
    _write(document, output, plot, spaces, points, seed, as_json)


def _write(document: dict, output: Path | None, plot: Path | None, spaces, points: int, seed: int, as_json: bool):
    """The figures as JSON (``-o``; on stdout with ``--json``) and the plot of the spaces (``--plot``), the two files
    written together: a plot that fails takes the JSON with it."""
    with outputs_together(output, plot):
        if output is not None:
            write_json(output, document)
        if plot is not None:
            from ..space.plots import plot_spaces

            plot_spaces(plot, spaces, points=points, seed=seed)
    if output is not None:
        say(f"wrote {output}")
    if plot is not None:
        say(f"wrote {plot}")
    if as_json:
        write_stdout(json_text(document, indent=2) + "\n")


def _sentence_figures(
    models: list[Path], model: Values, spec, show_progress, data, corpus, limit, seed: int, stsb: bool, pairs: int
) -> list[dict]:
    """``inspect --model``: the figures of each model's sentence embeddings (each seeded alike) on the corpus and
    STS-B train, read before any model loads (data problems surface first)."""
    import torch

    from ..evaluation.geometry import GeometryData, sentence_geometry

    inputs = GeometryData.load(data, corpus, limit, seed, stsb)
    found = []
    for path in models:
        torch.manual_seed(seed)
        encoder = load_encoder(spec, model, path, show_progress)
        found.append(sentence_geometry(encoder, inputs, pairs, seed))
    return found


HELP_ORDER = 40  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("inspect")(guard(takes_groups(inspect)))
