"""The one error boundary every command runs inside, and the renderer of the library's messages.

- :class:`~defsent_cli.errors.DefsentError` -> ``error: <one line>`` on stderr, its exit code (2 for bad
  input); Ctrl-C -> ``interrupted``, exit 130.
- The ``defsent`` logger (:mod:`defsent_cli.log`) -> ``warning: ...`` / plain notes on stderr, rank 0 only.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

try:  # typer >= 0.22 parses with its own copy of Click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer parses with Click itself
    from click import exceptions as click_errors

from .. import distributed
from ..console import err_console
from ..errors import DefsentError
from ..log import logger


class _ConsoleHandler(logging.Handler):
    """Library messages on stderr: warnings in yellow, notes plain."""

    def emit(self, record: logging.LogRecord) -> None:
        message = escape(record.getMessage())
        if record.levelno >= logging.WARNING:
            err_console.print(f"[yellow]warning:[/yellow] {message}", soft_wrap=True, highlight=False)
        else:
            err_console.print(message, soft_wrap=True, highlight=False, markup=False)


def install_log_handler() -> None:
    """Route the library's logger to the console once (other torchrun ranks stay silent)."""
    if any(isinstance(h, _ConsoleHandler) for h in logger.handlers):
        return
    handler = _ConsoleHandler() if distributed.is_main() else logging.NullHandler()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def fail(message: str, exit_code: int = 2) -> typer.Exit:
    """Print ``error: message`` and return the Exit to raise."""
    return typer.Exit(_fail(message, exit_code))


def guard(fn: Callable) -> Callable:
    """Run a command inside the boundary: a DefsentError is one line and its exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        install_log_handler()
        try:
            return fn(*args, **kwargs)
        except DefsentError as exc:
            raise fail(str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("[red]interrupted[/red]")
            raise typer.Exit(130) from None

    return wrapper


class DefsentGroup(TyperGroup):
    """The app's Click group: a usage error (unknown option, bad choice, missing value) is one line, as every
    other error is: ``error: <what>; see 'defsent CMD --help'``, exit 2."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # noqa: D102
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click_errors.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "defsent"
            what = exc.format_message().replace("Value error, ", "").rstrip(".")
            raise SystemExit(_fail(f"{what}; see '{where} --help'", exc.exit_code)) from None
        except click_errors.ClickException as exc:
            raise SystemExit(_fail(exc.format_message(), exc.exit_code)) from None
        except click_errors.Abort:
            err_console.print("[red]interrupted[/red]")
            sys.exit(130)
        sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, exit_code: int) -> int:
    err_console.print(f"[red]error:[/red] {escape(' '.join(message.split()))}", soft_wrap=True, highlight=False)
    return exit_code
