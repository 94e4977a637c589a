"""Options shared by several subcommands, named as sentence-transformers names them."""

from __future__ import annotations

import typer

MODEL = typer.Option(
    ..., "--model", "-m", help="Local model folder (transformers, sentence-transformers or a defsent checkpoint)."
)
POOLING = typer.Option(
    None,
    "--pooling",
    "-p",
    help="cls | mean | max | prompt. Default: the model folder's own (sentence-transformers or defsent config), else mean.",
)
BATCH_SIZE = typer.Option(32, "--batch-size", "-b", min=1, help="Texts per forward pass.")
MAX_LENGTH = typer.Option(
    None, "--max-length", min=2, help="Truncate inputs to this many tokens (default: the model's limit)."
)
DEVICE = typer.Option("auto", "--device", envvar="DEFSENT_DEVICE", help="cpu, cuda, cuda:N or auto.")
PROGRESS = typer.Option(
    None, "--progress/--no-progress", help="Progress bar on stderr (default on; DEFSENT_NO_PROGRESS=1 turns it off)."
)
FORCE = typer.Option(False, "--force", help="Overwrite an existing output.")
