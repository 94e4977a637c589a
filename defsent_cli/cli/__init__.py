"""The command line: ``app.py`` builds the Typer app, ``options.py`` declares every shared option once,
``boundary.py`` turns errors into one line and renders the library's messages, ``render.py`` draws
tables, and one module per command (named after it) parses options and calls the library."""

from .app import app, run

__all__ = ["app", "run"]
