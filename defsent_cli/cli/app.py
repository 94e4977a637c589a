"""The ``defsent`` Typer app: built here, every command registered by its own module's ``register(app)``."""

from __future__ import annotations

import typer

from .. import __version__
from . import (
    build_dict,
    define,
    ditto_search,
    embed_entries,
    encode,
    eval_cluster,
    eval_dict,
    eval_senteval,
    eval_sts,
    fit_post,
    ica,
    index,
    inspect,
    kde_filter,
    label,
    lookup,
    merge,
    plot,
    sample_pairs,
    search,
    select_best,
    serve,
    simcse,
    teacher,
    train,
    train_pairs,
    tsdae,
)
from .boundary import DefsentGroup

COMMAND_MODULES = (
    build_dict,
    embed_entries,
    ica,
    inspect,
    train,
    tsdae,
    simcse,
    train_pairs,
    teacher,
    label,
    sample_pairs,
    kde_filter,
    plot,
    select_best,
    merge,
    lookup,
    define,
    eval_dict,
    encode,
    index,
    search,
    serve,
    eval_sts,
    eval_senteval,
    eval_cluster,
    fit_post,
    ditto_search,
)

app = typer.Typer(
    name="defsent",
    cls=DefsentGroup,
    help="Sentence embeddings from dictionary definitions (DefSent+): build a dictionary, embed its entries, "
    "train, select, encode and evaluate.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain Click help: wraps cleanly at any width, nothing cut with "..."
    context_settings={
        "help_option_names": ["-h", "--help"],
        "max_content_width": 100,
        # The group's own flags left unset are None, which typer (0.2x) coerces through pydantic, importing it
        # (~60 ms) on every `defsent COMMAND ...` call; False defaults keep `COMMAND --help` from paying for it.
        "default_map": {"help": False, "install_completion": False, "show_completion": False},
    },
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"defsent {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Sentence embeddings from dictionary definitions (DefSent+)."""


for module in COMMAND_MODULES:
    module.register(app)


def run() -> None:
    """Console-script entry point."""
    app()
