"""``defsent fit-post``: fit a post-processing chain on a corpus, for ``--post-file``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..errors import DefsentError
from ..io import check_output
from . import options as opt
from .boundary import guard
from .groups import Values, takes_groups
from .models import BUDGET, MODEL, TOOLBOX, encode_spec, load_encoder


def fit_post(
    corpus: Annotated[
        Path, typer.Option("--input", "-i", help="Sentences to fit on, one per line.", show_default=False)
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The fitted chain (.h5), for --post-file.", show_default=False)
    ],
    model: Values = MODEL(without=BUDGET),
    pooling: opt.Pooling = None,
    toolbox: Values = TOOLBOX(without=("fit_on", "post_file", "normalize")),
    show_progress: opt.Progress = None,
    force: opt.Force = False,
) -> None:
    """Fit a --post chain on a corpus encoded with MODEL and its pooling; save it for --post-file.

    \b
    Example:
      defsent fit-post -m ckpt/ --pooling mean --post whiten-k:256 \\
          -i wiki.txt -o post.h5
    """
    if not toolbox.post:
        raise DefsentError("give the steps to fit with --post (e.g. --post zscore or --post whiten-k:256)")
    check_output(output, force, what="the fitted chain (HDF5)")
    if output.suffix.lower() not in (".h5", ".hdf5"):
        raise DefsentError("the fitted chain is HDF5: give the output a .h5 suffix", path=output)
    spec = encode_spec(pooling, toolbox, fit_on=corpus)
    encoder = load_encoder(spec, model, show_progress=show_progress)
    settings = {
        "model": str(model.model),
        "pooling": encoder.label,
        "pooling_settings": json.dumps(encoder.pooling.describe()),
    }
    encoder.post.save(output, settings)
    say(f"fitted {encoder.post.spec()} on {encoder.post.fit_rows:,} sentences ({encoder.label} pooling) -> {output}")


HELP_ORDER = 250  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("fit-post")(guard(takes_groups(fit_post)))
