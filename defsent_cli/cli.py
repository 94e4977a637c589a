"""The ``defsent`` Typer app: one small function per subcommand, in ``commands/``.

Each command module exposes ``register(app)``; this file only builds the app,
wires ``--version`` and maps :class:`DefsentError` to one line + an exit code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape

from . import __version__
from .console import err_console
from .errors import DefsentError

app = typer.Typer(
    name="defsent",
    help="Sentence embeddings from dictionary definitions (DefSent+): build a dictionary, "
    "embed its entries, train, select, encode and evaluate.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
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


def command(name: str, **kwargs: Any) -> Callable[[Callable], Callable]:
    """Register a subcommand whose DefsentError becomes one line on stderr and a non-zero exit."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            try:
                return fn(*args, **kw)
            except DefsentError as exc:
                err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
                raise typer.Exit(exc.exit_code) from None
            except KeyboardInterrupt:
                err_console.print("[red]interrupted[/red]")
                raise typer.Exit(130) from None

        app.command(name, **kwargs)(wrapper)
        return fn

    return decorate


def _load_commands() -> None:
    # Imported for their side effect: each module registers its commands on ``app``.
    from .commands import bank, dictionary, encode, evaluate, lookup, select, space, toolbox, train  # noqa: F401


_load_commands()


def run() -> None:
    """Console-script entry point."""
    app()
