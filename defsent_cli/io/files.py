"""Paths and atomic writes: a path checked as an input or an output, every write atomic (a temporary file
beside the target with the umask's mode, fsynced, renamed; removed on any failure), OS errors read as such."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import DefsentError


def is_stdout(path: str | Path | None) -> bool:
    """``-o -``: the output is standard output."""
    return path is not None and str(path) == "-"


def check_input(path: str | Path, kind: str = "file") -> Path:
    """An input that exists and is a ``file`` or a ``folder`` (``-`` is stdin and passes)."""
    path = Path(path)
    if str(path) == "-":
        return path
    if not path.exists():
        raise DefsentError("no such file or folder", path=path)
    if kind == "file" and not path.is_file():
        raise DefsentError("is a folder, expected a file", path=path)
    if kind == "folder" and not path.is_dir():
        raise DefsentError("is a file, expected a folder", path=path)
    return path


def check_output(
    path: str | Path, force: bool = False, kind: str = "file", *, stdout: bool = False, what: str | None = None
) -> Path:
    """Where an output (a ``file`` or a ``folder``) goes: not there unless ``force``, not the other kind
    of thing, in a folder that exists. ``-`` is standard output where the command writes this output there
    (``stdout``: a text file, or a stream such as .npy); anywhere else it is refused, in one line saying what to
    give instead (``what`` names the output: "a checkpoint folder", "an HDF5 bank"), never a file named ``-``."""
    path = Path(path)
    if is_stdout(path):
        if stdout and kind == "file":
            return path
        raise DefsentError(refuse_stdout(kind, what))
    if path.exists() or path.is_symlink():
        if not force:
            raise DefsentError("output exists; pass --force to overwrite", path=path)
        if kind == "file" and path.is_dir():
            raise DefsentError("output is a folder; give a file name", path=path)
        if kind == "folder" and not path.is_dir():
            raise DefsentError("output is a file; give a folder name", path=path)
    if not path.parent.is_dir():
        raise DefsentError("output folder does not exist", path=path.parent)
    check_writable(path)
    return path


def refuse_stdout(kind: str = "file", what: str | None = None) -> str:
    """The message for ``-`` given as an output that cannot go to standard output."""
    what = what or ("this output, a folder," if kind == "folder" else "this output")
    return f"'-' means standard output, and {what} cannot be written there: give a {kind} name instead"


def _temporary_beside(path: Path, suffix: str) -> tuple[int, str]:
    """``mkstemp`` beside ``path``; a folder where nothing can be created (no permission, read-only, immutable)
    is an OSError about ``path``, the output the user named, never about the temporary name."""
    try:
        return tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent or ".")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def check_writable(path: str | Path) -> None:
    """That an output can appear at ``path``, tried now, before any work: a file is created beside it and removed
    (what every write does first). A folder that cannot be written fails here, naming ``path`` (exit 1), instead
    of after an hour's work, naming a temporary file."""
    path = Path(path)
    fd, probe = _temporary_beside(path, ".probe")
    os.close(fd)
    os.unlink(probe)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


@contextlib.contextmanager
def outputs_together(*paths: str | Path | None) -> Iterator[None]:
    """Outputs of one command written one after another (a table and its ``--plot``, a ranking and its
    ``--link``) that stand or fall together: when the block fails, any of ``paths`` it already wrote is removed,
    so a failed command leaves none of its outputs behind. None (an output not asked for) is skipped."""
    import shutil

    watched = [Path(p) for p in paths if p is not None and not is_stdout(p)]
    before = {p: _stamp(p) for p in watched}
    try:
        yield
    except BaseException:
        for path in watched:
            if _stamp(path) != before[path]:
                if path.is_symlink() or path.is_file():
                    path.unlink(missing_ok=True)
                elif path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
        raise


def _fsync(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def fsync_tree(folder: str | Path) -> None:
    """fsync every file below ``folder`` (before a folder written in place of another is renamed)."""
    for path in Path(folder).rglob("*"):
        if path.is_file() and not path.is_symlink():
            _fsync(path)


_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """The process's umask, read without changing it where the system tells it (Linux: ``/proc/self/status``);
    elsewhere set to 077 for an instant (a file another thread creates meanwhile is private, never too open)
    and restored. Read at each call: a program may change its umask between two outputs."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a plain ``open(path, "w")`` gives a new file: 0o666 less the umask."""
    return 0o666 & ~umask()


def folder_mode() -> int:
    """The mode ``mkdir`` gives a new folder: 0o777 less the umask."""
    return 0o777 & ~umask()


def share_tree(folder: str | Path) -> None:
    """Give ``folder`` and everything below it the modes a plain ``open`` / ``mkdir`` would (files 0o666, folders
    0o777, less the umask): libraries that write through private temporary files (``save_pretrained`` leaves
    ``model.safetensors`` at 0o600) would otherwise make a checkpoint that cannot be shared. Links are left alone."""
    files, folders = file_mode(), folder_mode()
    folder = Path(folder)
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        os.chmod(path, folders if path.is_dir() else files)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success. The file has the mode a
    plain ``open`` would give it (0o666 less the umask), not ``mkstemp``'s private 0o600."""
    path = Path(path)
    fd, tmp = _temporary_beside(path, ".tmp")
    try:
        os.fchmod(fd, file_mode())
    finally:
        os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        _fsync(tmp_path)  # a full disk surfaces here at the latest, before the output appears
        os.replace(tmp_path, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        if is_io_failure(exc):
            raise as_os_error(exc, path) from exc
        raise


_OS_ERROR_TEXT = re.compile(r"os error (\d+)|errno = (\d+)", re.IGNORECASE)


def is_io_failure(exc: BaseException) -> bool:
    """An OSError, or a library's own exception that wraps one (safetensors says "os error 28")."""
    return isinstance(exc, OSError) or (isinstance(exc, Exception) and bool(_OS_ERROR_TEXT.search(str(exc))))


def as_os_error(exc: BaseException, path: str | Path) -> OSError:
    """The same failure, told about the output the user named (not a temporary file), with an errno where
    a library (h5py, numpy, safetensors) gave only text."""
    number = getattr(exc, "errno", None)
    text = getattr(exc, "strerror", None) or " ".join(str(exc).split())
    match = _OS_ERROR_TEXT.search(text)
    if number is None and match:
        number = int(match.group(1) or match.group(2))
    if number is None:
        lowered = text.lower()
        for needle, code in (("no space left", errno.ENOSPC), ("file too large", errno.EFBIG),
                             ("permission denied", errno.EACCES), ("read-only", errno.EROFS)):  # fmt: skip
            if needle in lowered:
                number = code
                break
    return OSError(number, text, str(path) if path else None)


@contextlib.contextmanager
def atomic_text(path: str | Path, encoding: str = "utf-8") -> Iterator[io.TextIOBase]:
    """Open a text file for writing that appears at ``path`` only when complete."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding=encoding, newline="\n") as fh:
        yield fh


def _write_all(fh, data) -> None:
    """Every byte of ``data``, however many a raw (unbuffered) write takes per call."""
    view = memoryview(data)
    while view:
        written = fh.write(view)
        view = view[written if written is not None else len(view) :]


def write_bytes(path: str | Path, data) -> None:
    """Atomically write bytes."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        _write_all(fh, data)
