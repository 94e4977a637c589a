"""The one error boundary every command runs inside, and the renderer of the library's messages.

Exit codes (README, "Conventions"): 0 success; 2 bad usage or bad input (a DefsentError, an unknown
option or choice, a path that does not exist or is the wrong kind of thing); 1 a failure while running
on valid input (the disk full, no permission, stdout closed, out of memory, an error inside a library
we call); 130 interrupted. Every failure is one line on stderr, ``error: ...``, naming the file where
there is one; never a traceback (``DEFSENT_DEBUG=1`` shows it).

The ``defsent`` logger (:mod:`defsent_cli.log`) -> ``warning: ...`` / plain notes on stderr, rank 0 only.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

try:  # typer >= 0.22 parses with its own copy of Click
    from typer._click import exceptions as click_errors
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - older typer parses with Click itself
    from click import exceptions as click_errors
    from click.globals import get_current_context

from .. import distributed
from ..console import QUIET as _QUIET
from ..console import err_console, set_quiet
from ..environment import switch
from ..errors import DefsentError
from ..io import as_os_error, is_io_failure
from ..log import logger, warn


class _ConsoleHandler(logging.Handler):
    """Library messages on stderr: warnings in yellow, notes plain."""

    def emit(self, record: logging.LogRecord) -> None:
        message = escape(record.getMessage())
        if record.levelno >= logging.WARNING:
            err_console.print(f"[yellow]warning:[/yellow] {message}", soft_wrap=True, highlight=False)
        else:
            err_console.print(message, soft_wrap=True, highlight=False, markup=False)


def quiet_mode() -> bool:
    return bool(_QUIET["on"])


def install_log_handler() -> None:
    """Route the library's logger to the console, notes included, at every command (the handler added once;
    other torchrun ranks stay silent). The level is set each time: a program that runs several commands in one
    process may have changed it meanwhile, and the notes would then vanish."""
    logger.setLevel(logging.WARNING if quiet_mode() else logging.INFO)
    logger.propagate = False
    if any(isinstance(h, _ConsoleHandler) for h in logger.handlers):
        return
    logger.addHandler(_ConsoleHandler() if distributed.is_main() else logging.NullHandler())


def fail(message: str, exit_code: int = 2) -> typer.Exit:
    """Print ``error: message`` and return the Exit to raise."""
    return typer.Exit(_fail(message, exit_code))


#: OSError numbers that say a path was wrong (bad input, exit 2); any other OSError is a failure (exit 1).
_PATH_ERRORS = {errno.ENOENT: "no such file or folder", errno.EISDIR: "is a folder", errno.ENOTDIR: "not a folder"}
_RUNTIME_ERRORS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large for this file system or limit",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.EPIPE: "output closed (broken pipe)",
    errno.EBADF: "output closed (bad file descriptor)",
    errno.EIO: "input/output error",
}


def os_error_message(exc: OSError) -> tuple[str, int]:
    """One line and an exit code for an OSError: what went wrong, and with which file."""
    where = exc.filename or ("<stdout>" if exc.errno == errno.EPIPE else None)
    if exc.errno in _PATH_ERRORS:
        text, code = _PATH_ERRORS[exc.errno], 2
    else:
        text, code = _RUNTIME_ERRORS.get(exc.errno, exc.strerror or type(exc).__name__), 1
    return (f"{where}: {text}" if where else text), code


class _ClosedStdout:
    """Stands in for a closed stdout: writing data fails with EBADF (one line, exit 1); flushing nothing is fine."""

    def write(self, data: Any) -> int:
        raise OSError(errno.EBADF, "closed", "<stdout>")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "closed", "<stdout>")

    @property
    def buffer(self) -> _ClosedStdout:
        return self


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's last flush cannot fail too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - stdout without a file descriptor
        pass


#: The parameters that name what a command writes; every other path parameter is something it reads.
OUTPUT_PARAMETERS = ("output", "plot", "link")


def _paths(value: Any) -> list[Path]:
    values = value if isinstance(value, list | tuple) else [value]
    return [Path(v) for v in values if isinstance(v, Path) and str(v) != "-"]


def check_outputs_spare_inputs(kwargs: dict[str, Any]) -> None:
    """No output may be one of the command's inputs, or a folder holding one (``--force`` would destroy
    what the command reads), and no two outputs may be one path. Checked before any work starts."""
    outputs = [(name, path) for name in OUTPUT_PARAMETERS for path in _paths(kwargs.get(name))]
    inputs = [path for name, value in kwargs.items() if name not in OUTPUT_PARAMETERS for path in _paths(value)]
    seen: dict[Path, str] = {}
    for name, path in outputs:
        where = path.parent.resolve() / path.name  # an output that is a symlink is replaced, not followed
        if where in seen:
            raise DefsentError(f"--{name} and --{seen[where]} are the same path; give each its own", path=path)
        seen[where] = name
        for input_path in inputs:
            source = input_path.resolve()
            if source == where or where in source.parents:
                what = "is the input" if source == where else "is a folder holding the input"
                raise DefsentError(f"--{name} {what} {input_path}; write the output elsewhere", path=path)


def warn_ineffective(ctx: typer.Context, cases: Iterable[tuple[str, bool, str]]) -> None:
    """One warning for each option given on the command line that cannot take effect in this call: ``cases``
    are (parameter name, whether it cannot, what to say). An option left at its default, or set by its
    environment variable (``DEFSENT_DATA``, a standing setting rather than a request), is never warned about."""
    for name, ineffective, message in cases:
        source = ctx.get_parameter_source(name) if ineffective else None
        if source is not None and source.name == "COMMANDLINE":
            warn(message)


def warn_given(cases: Iterable[tuple[str, bool, str]]) -> None:
    """:func:`warn_ineffective` in the command being run (for code that is handed no context)."""
    ctx = get_current_context(silent=True)
    if ctx is not None:
        warn_ineffective(ctx, cases)


def refuse_repeated(command, ctx, args: list[str]) -> None:
    """An option that takes one value given twice (``serve --index A --index B``) is refused in one line: Click
    would keep the last and drop the first without a word. Options that take a list (``--input``, ``-m`` of the
    evaluations) may repeat, and so may flags. Arguments Click cannot parse are left to its own error."""
    if ctx.resilient_parsing:
        return
    sub = command.context_class(command, info_name=command.name, parent=ctx, resilient_parsing=True)
    try:
        _, _, order = command.make_parser(sub).parse_args(args=list(args))
    except click_errors.ClickException:
        return
    seen: set[str] = set()
    for param in order:
        single = getattr(param, "param_type_name", "") == "option" and not (
            param.multiple or param.count or param.is_flag
        )
        if not single:
            continue
        if param.name in seen:
            flags = "/".join(param.opts)
            raise click_errors.UsageError(
                f"{flags} was given more than once: it takes one value; give it once", ctx=sub
            )
        seen.add(param.name)


Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="Errors and warnings only: no progress, notes or summary lines.")
]


def _with_quiet(fn: Callable) -> inspect.Signature:
    """``fn``'s signature with the ``-q/--quiet`` option every command takes, and ``--revision`` where its
    ``-m`` takes a Hub name (added here, once)."""
    from .options import Revision

    signature = inspect.signature(fn, eval_str=True)
    added = [inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Quiet)]
    if takes_hub_name(signature):
        added.append(inspect.Parameter("revision", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Revision))
    params = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in [*signature.parameters.values(), *added]]
    return signature.replace(parameters=params)


def takes_hub_name(signature: inspect.Signature) -> bool:
    """Whether a command's ``-m`` is resolved by :func:`options.model_default` (a local folder or a Hub name)."""
    from .options import model_default

    parameter = signature.parameters.get("model")
    metadata = getattr(parameter.annotation, "__metadata__", ()) if parameter is not None else ()
    return any(getattr(info, "callback", None) is model_default for info in metadata)


def _say_model_note() -> None:
    """The note :func:`options.model_default` left when the model came from DEFSENT_MODEL or the bundle."""
    ctx = get_current_context(silent=True)
    if ctx is None:
        return
    for note in [ctx.meta.get("defsent.model_note"), *ctx.meta.get("defsent.hub_notes", [])]:
        if note:
            logger.info(note)


def guard(fn: Callable) -> Callable:
    """Run a command inside the boundary: every failure is one line and its exit code, never a traceback.
    Every command also gets ``-q/--quiet`` here."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        before = _QUIET["on"]
        set_quiet(kwargs.pop("quiet", False))
        try:
            return _run(*args, **kwargs)
        finally:
            set_quiet(before)  # -q is the command's: a process that runs commands in turn keeps its own setting

    def _run(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("revision", None)  # used by -m's callback (options.model_default)
        install_log_handler()
        _say_model_note()
        if sys.stdout is None:  # the shell closed it (>&-): data written there fails, nothing else does
            sys.stdout = _ClosedStdout()
        try:
            check_outputs_spare_inputs(kwargs)
            result = fn(*args, **kwargs)
            sys.stdout.flush()  # a stdout that cannot take the data is a failure, not a success
            return result
        except DefsentError as exc:
            raise fail(str(exc), exc.exit_code) from None
        except KeyboardInterrupt as exc:
            _interrupted(getattr(exc, "defsent_run", None))
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except OSError as exc:
            if switch("DEFSENT_DEBUG"):
                raise
            if exc.errno == errno.EPIPE:
                _quiet_stdout()
            message, code = os_error_message(exc)
            raise fail(message, code) from None
        except MemoryError:
            raise fail("out of memory; try a smaller --batch-size", 1) from None
        except Exception as exc:  # noqa: BLE001 - the boundary: a library's error is one line, not a traceback
            if switch("DEFSENT_DEBUG"):
                raise
            if is_io_failure(exc):  # a library's own wrapper of an OSError (safetensors: "os error 28")
                message, code = os_error_message(as_os_error(exc, getattr(exc, "filename", None) or ""))
                raise fail(message, code) from None
            text = " ".join(str(exc).split())[:300]
            raise fail(f"{type(exc).__name__}: {text} (DEFSENT_DEBUG=1 shows the traceback)", 1) from None

    wrapper.__signature__ = signature = _with_quiet(fn)
    # typer reads the type hints too, several times a command (typing.get_type_hints): the annotations evaluated
    # once here, rather than the strings of ``from __future__ import annotations`` compiled again each time
    wrapper.__annotations__ = {
        name: p.annotation for name, p in signature.parameters.items() if p.annotation is not p.empty
    }
    return wrapper


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM (``kill``, ``timeout``, Slurm, systemd, torchrun stopping its workers) is answered as Ctrl-C is:
    KeyboardInterrupt, so the same clean-up runs (no temporary file, a resumable state kept only where one was
    saved), then ``interrupted`` and exit 130. A second SIGTERM during that clean-up is ignored (SIGKILL still
    ends the process). The handler before is put back afterwards (a program that runs commands in-process)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler; a command run in another thread keeps the default
        return

    def interrupt(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


class DefsentGroup(TyperGroup):
    """The app's Click group: a usage error (unknown option, bad choice, missing value) is one line, as every
    other error is: ``error: <what>; see 'defsent CMD --help'``, exit 2."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # noqa: D102
        _ARGS[:] = list(sys.argv[1:] if args is None else args)  # the command as typed, for the resume line
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            with _sigterm_as_interrupt():
                code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click_errors.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else self._command_path(args, prog_name)
            what = _with_value(exc, exc.format_message().replace("Value error, ", "").rstrip("."))
            raise SystemExit(_fail(f"{what}; see '{where} --help'", exc.exit_code)) from None
        except click_errors.ClickException as exc:
            raise SystemExit(_fail(exc.format_message(), exc.exit_code)) from None
        except typer.Abort:  # typer >= 0.22 keeps Abort in typer.exceptions, not beside UsageError
            _interrupted()
            sys.exit(130)
        sys.exit(code if isinstance(code, int) else 0)

    def resolve_command(self, ctx, args):  # noqa: D102 - Click's, with repeated single-valued options refused
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            refuse_repeated(command, ctx, rest)
        return name, command, rest

    def _command_path(self, args, prog_name) -> str:
        """'defsent CMD' for an error Click raised without a context (an option missing its value)."""
        argv = list(sys.argv[1:] if args is None else args)
        name = next((a for a in argv if not a.startswith("-")), None)
        prog = prog_name or "defsent"
        return f"{prog} {name}" if name in self.commands else prog


def _fail(message: str, exit_code: int) -> int:
    """Print ``error: message`` (one line) and return the exit code. Under torchrun a documented error (bad usage
    or input, exit 2: the same in every process, which all read the same arguments and files) is printed by rank 0
    alone; a failure while running (exit 1) may be one process's own (its GPU out of memory), so every process
    that meets one says it."""
    if exit_code != 2 or distributed.is_main():
        err_console.print(f"[red]error:[/red] {escape(' '.join(message.split()))}", soft_wrap=True, highlight=False)
    return exit_code


#: The arguments of the command line being run (after ``defsent``), as :class:`DefsentGroup` was given them.
_ARGS: list[str] = []


def _with_value(exc, message: str) -> str:
    """``message`` naming the value the user gave where Click's (typer's range checks: "Input should be greater
    than or equal to 1") does not: ``Invalid value '0' for '--dims': input should be ...``."""
    param = getattr(exc, "param", None)
    if not isinstance(exc, click_errors.BadParameter) or param is None or not getattr(param, "opts", None):
        return message
    names = [*param.opts, *getattr(param, "secondary_opts", ())]
    given = None
    for i, arg in enumerate(_ARGS):
        name, equals, value = arg.partition("=")
        if name in names:
            given = value if equals else (_ARGS[i + 1] if i + 1 < len(_ARGS) else None)
        elif len(arg) > 2 and arg[:2] in names and not arg.startswith("--"):  # a short option's value attached: -k0
            given = arg[2:]
    if given is None or f"'{given}'" in message or f'"{given}"' in message:  # Click quotes a value it names
        return message
    start = "Invalid value for "
    if not message.startswith(start):
        return message
    hint, colon, reason = message[len(start) :].partition(": ")
    return f"Invalid value {given!r} for {hint}: {reason[:1].lower()}{reason[1:]}" if colon else message


def _interrupted(run=None) -> None:
    """The line an interrupt ends with (rank 0's alone under torchrun, which stops every process at once); after
    a training (``run``: :class:`~defsent_cli.training.run.Interrupted`), what was kept and how to go on."""
    if not distributed.is_main():
        return
    said = ""
    if run is not None and run.kept:
        import shlex

        args = [*_ARGS, *([] if "--resume" in _ARGS else ["--resume"])]
        command = shlex.join(["defsent", *args])
        launch = f"the same torchrun launch of {command}" if run.processes > 1 else command
        state = "the state saved last" if run.step is None else f"the state of step {run.step:,} of {run.total_steps:,}"
        said = f": {state} is kept in {run.work_dir}; resume with {launch}"
    elif run is not None:
        every = run.save_every
        when = f"--save-every {every:,}: " + (f"the first at step {every:,}" if every else "none is saved")
        said = f": no training state was saved yet ({when}), so nothing is kept; run the command again to start over"
    err_console.print(f"[red]interrupted[/red]{escape(said)}", soft_wrap=True, highlight=False)
