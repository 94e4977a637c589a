"""The ``defsent`` Typer app: built here, every command registered by its own module's ``register(app)``."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import typer

from .. import __version__
from .boundary import DefsentGroup


def command_modules() -> list:
    """Every command's module: each module of this package with a ``register(app)``, in its ``HELP_ORDER`` (the
    order ``defsent --help`` lists them in; last without one). A new command is one new module here, nothing else."""
    found = []
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        module = importlib.import_module(f"{__package__}.{info.name}")
        if callable(getattr(module, "register", None)):
            found.append(module)
    return sorted(found, key=lambda module: (getattr(module, "HELP_ORDER", 1000), module.__name__))


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


for module in command_modules():
    module.register(app)


def run() -> None:
    """Console-script entry point."""
    app()
