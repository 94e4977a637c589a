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


def fit_post(
    corpus: Annotated[
        Path, typer.Option("--input", "-i", help="Sentences to fit on, one per line.", show_default=False)
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The fitted chain (.h5), for --post-file.", show_default=False)
    ],
    model: opt.Model = None,
    post: opt.Post = None,
    pooling: opt.Pooling = None,
    batch_size: opt.BatchSize = 32,
    max_length: opt.MaxLength = None,
    device: opt.Device = "auto",
    runtime: opt.Runtime = opt.RUNTIME_DEFAULT,
    precision: opt.Precision = opt.PRECISION_DEFAULT,
    show_progress: opt.Progress = None,
    force: opt.Force = False,
    layers: opt.Layers = None,
    template: opt.Template = None,
    ditto_head: opt.DittoHead = None,
    weighting: opt.WeightingOption = None,
    idf_corpus: opt.IdfCorpus = None,
    drop_tokens: opt.DropTokens = None,
) -> None:
    """Fit a --post chain on a corpus encoded with MODEL and its pooling; save it for --post-file.

    \b
    Example:
      defsent fit-post -m ckpt/ --pooling mean --post whiten-k:256 \\
          -i wiki.txt -o post.h5
    """
    if not post:
        raise DefsentError("give the steps to fit with --post (e.g. --post zscore or --post whiten-k:256)")
    check_output(output, force, what="the fitted chain (HDF5)")
    if output.suffix.lower() not in (".h5", ".hdf5"):
        raise DefsentError("the fitted chain is HDF5: give the output a .h5 suffix", path=output)
    spec = opt.encode_spec(pooling, layers, template, ditto_head, weighting, idf_corpus, drop_tokens, post, corpus)
    loaded = opt.load(model, device, runtime, precision)
    encoder = spec.resolve(loaded, batch_size=batch_size, max_length=max_length, show_progress=show_progress)
    settings = {
        "model": str(model),
        "pooling": encoder.label,
        "pooling_settings": json.dumps(encoder.pooling.describe()),
    }
    encoder.post.save(output, settings)
    say(f"fitted {encoder.post.spec()} on {encoder.post.fit_rows:,} sentences ({encoder.label} pooling) -> {output}")


def register(app: typer.Typer) -> None:
    app.command("fit-post")(guard(fit_post))
