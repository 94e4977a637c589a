"""File plumbing every stage shares: path checks, atomic writes, stdout, line and JSONL readers, hashing.

Every check of a path lives here: :func:`check_input` (exists, and is a file or a folder as expected)
and :func:`check_output` (not there unless ``--force``, never a folder where a file goes or the other
way round, its folder exists). Every write is atomic (:func:`atomic_path`: a temporary file beside
the target, with the mode the umask gives a new file, flushed and fsynced, then renamed; removed on any
failure) and stdout is written and flushed at once (:func:`write_stdout`), so a full disk or a closed pipe
is an error, never a success.
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import json
import math
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .errors import DefsentError


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


@contextlib.contextmanager
def hdf5_output(path: str | Path):
    """An HDF5 file built in memory, written (atomically) only when the block ends without an error.

    h5py writes a file on disk lazily and can crash the whole process when the disk fills while it
    flushes; building the file in memory and writing its bytes ourselves turns a full disk into an
    ordinary error."""
    import h5py

    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h5:
        yield h5
    write_bytes(path, buffer.getbuffer())


@contextlib.contextmanager
def hdf5_input(path: str | Path, what: str = "the file"):
    """An HDF5 file open for reading; a file h5py cannot open, or a dataset it cannot read in the block, is a
    one-line error naming ``path`` (``what`` it was meant to be: "the bank", "the index")."""
    import h5py

    try:
        h5 = h5py.File(path, "r")
    except OSError as exc:
        raise DefsentError(f"cannot read HDF5 ({exc})", path=path) from None
    with h5:
        try:
            yield h5
        except (OSError, KeyError, ValueError) as exc:
            raise DefsentError(f"cannot read {what} ({exc})", path=path) from None


def check_free_space(path: str | Path, needed: int) -> None:
    """Fail at once, with the full-disk error (ENOSPC, naming ``path``), when the file system that will hold
    ``path`` has fewer than ``needed`` bytes free: a long streamed write should not run for an hour first."""
    import shutil

    path = Path(path)
    free = shutil.disk_usage(path.parent if str(path.parent) else ".").free
    if free < needed:
        raise OSError(errno.ENOSPC, f"needs {needed:,} bytes, {free:,} free", str(path))


def reserve_space(path: str | Path, size: int | None = None) -> None:
    """Have the file system allocate the blocks of the file's first ``size`` bytes (default: its size now) with
    ``posix_fallocate``, so that writing into that extent cannot run out of space; a disk without room, or a
    file-size limit, is an OSError here. A file system without fallocate is left as is."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, os.fstat(fd).st_size if size is None else size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def hdf5_stream(path: str | Path, needed: int):
    """An HDF5 file written on disk as it is built (for outputs too large for memory), appearing at ``path``
    only when the block ends without an error.

    h5py can crash the whole process when a write fails under it (see :func:`hdf5_output`), so no write may fail
    once it holds the file: the free space is checked first (:func:`check_free_space`), then ``needed`` bytes
    are allocated to the temporary file beside ``path`` before h5py opens it (a full disk or a file-size limit
    is the usual one-line error, at once); the writer should create its datasets at their final size and
    call :func:`reserve_space`, so the rows are written into blocks already allocated."""
    import h5py

    check_free_space(path, needed)
    with atomic_path(path) as tmp:
        reserve_space(tmp, needed)  # the probe: it fails here, cleanly, or the room is there
        os.truncate(tmp, 0)
        with h5py.File(tmp, "w") as h5:
            yield h5


def is_stdout(path: str | Path | None) -> bool:
    """``-o -``: the output is standard output."""
    return path is not None and str(path) == "-"


def json_text(obj: object, indent: int | None = None) -> str:
    """``obj`` as JSON text (UTF-8 kept), strictly: a NaN or infinite number, which JSON cannot carry (``json``
    would write ``NaN``, which no strict parser reads), is a one-line error instead, before anything is written."""
    try:
        return json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        if "JSON compliant" not in str(exc):
            raise
        raise DefsentError(
            "the output holds a NaN or infinite number, which JSON cannot carry; nothing was written (the input or "
            "the model gives non-finite values)"
        ) from None


def write_json(path: str | Path, obj: object) -> None:
    """Atomically write one JSON object (indented, UTF-8; strict: :func:`json_text`); ``-`` writes it to stdout."""
    text = json_text(obj, indent=2) + "\n"
    if is_stdout(path):
        write_stdout(text)
        return
    with atomic_text(path) as fh:
        fh.write(text)


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> int:
    """Atomically write JSONL (strict: :func:`json_text`); returns the number of lines. ``-`` writes them to stdout,
    a block at a time."""
    n = 0
    if is_stdout(path):
        block: list[str] = []
        for row in rows:
            block.append(json_text(row) + "\n")
            n += 1
            if len(block) >= 4096:
                write_stdout("".join(block))
                block = []
        write_stdout("".join(block))
        return n
    with atomic_text(path) as fh:
        for row in rows:
            fh.write(json_text(row) + "\n")
            n += 1
    return n


@contextlib.contextmanager
def text_output(path: str | Path, encoding: str = "utf-8") -> Iterator[io.TextIOBase]:
    """A text output (TSV, JSONL): ``-`` is standard output, written a block at a time (flushed at once, so a
    closed pipe is an error); a file appears at ``path`` only when complete (:func:`atomic_text`)."""
    if is_stdout(path):
        fh = _StdoutText()
        yield fh
        fh.flush()  # only on success: a failed command sends no more than the blocks already written
        return
    with atomic_text(path, encoding) as fh:
        yield fh


class _StdoutText(io.TextIOBase):
    """Text written to stdout through :func:`write_stdout`, a block of about 1 MiB at a time."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._parts.append(text)
        self._size += len(text)
        if self._size >= 1 << 20:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._parts:
            write_stdout("".join(self._parts))
            self._parts, self._size = [], 0


def output_name(path: str | Path) -> str:
    """How a message names an output: ``stdout`` for ``-``."""
    return "stdout" if is_stdout(path) else str(path)


def write_stdout(data: bytes | str) -> None:
    """Write to stdout and flush now: a full disk or a closed pipe raises here (and the command fails)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        sys.stdout.flush()
        _write_all(sys.stdout.buffer, data)  # an unbuffered stdout (python -u) may take part of it per write
        sys.stdout.buffer.flush()
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, "<stdout>") from None


def open_text(path: str | Path, encoding: str = "utf-8") -> io.TextIOBase:
    """Open a text input, '-' meaning stdin; a missing file is a DefsentError."""
    if str(path) == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding=encoding, newline=None)
    try:
        return open(path, encoding=encoding, newline=None)
    except FileNotFoundError:
        raise DefsentError("no such file", path=path) from None
    except IsADirectoryError:
        raise DefsentError("is a directory, expected a file", path=path) from None


def iter_lines(path: str | Path, encoding: str = "utf-8", hint: str = "") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with the line ending (LF, CRLF or CR) removed; ``hint`` ends the message
    of an undecodable file (e.g. "; pass --encoding utf-16" where the command has that option).

    The bytes are decoded a line at a time (an incremental decoder fed each line read), so a byte that is not
    ``encoding`` is reported on its own line, of a file or of stdin, not on the first line of a read-ahead block
    (a text stream decodes 8 KiB at once)."""
    import codecs

    shown = "utf-8" if encoding.lower().replace("_", "-") in ("utf-8-sig", "utf8-sig") else encoding
    name = "<stdin>" if str(path) == "-" else path
    raw = sys.stdin.buffer if str(path) == "-" else _open_binary(path)
    decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder(encoding)("strict"), translate=True)
    number, pending = 0, ""
    try:
        for chunk in itertools.chain(raw, [None]):
            try:
                text = decoder.decode(b"", final=True) if chunk is None else decoder.decode(chunk)
            except UnicodeError as exc:  # UnicodeDecodeError, or the UTF-16 codec's "stream does not start with BOM"
                reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
                # utf-8-sig is utf-8 that may start with a BOM: the codec's name is ours, not the user's
                raise DefsentError(f"not valid {shown} text ({reason}){hint}", path=name, line=number + 1) from None
            *complete, pending = (pending + text).split("\n")
            for line in complete:
                number += 1
                yield number, line
        if pending:
            yield number + 1, pending
    finally:
        if raw is not sys.stdin.buffer:
            raw.close()


def _open_binary(path: str | Path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise DefsentError("no such file", path=path) from None
    except IsADirectoryError:
        raise DefsentError("is a directory, expected a file", path=path) from None


class _NotJson(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python's json reads them, JSON has no such values."""


def _not_json(constant: str):
    raise _NotJson(constant)


def iter_jsonl(path: str | Path, encoding: str = "utf-8", hint: str = "") -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank JSONL line (strict JSON: ``NaN`` and ``Infinity`` are
    refused, as any JSON parser but Python's would)."""
    for number, line in iter_lines(path, encoding, hint):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_not_json)
        except _NotJson as exc:
            raise DefsentError(f"invalid JSON ({exc} is not a JSON number)", path=path, line=number) from None
        except json.JSONDecodeError as exc:
            raise DefsentError(f"invalid JSON ({exc.msg})", path=path, line=number) from None
        if not isinstance(obj, dict):
            raise DefsentError("expected a JSON object", path=path, line=number)
        yield number, obj


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (a missing file or a folder is a one-line error)."""
    import hashlib  # OpenSSL's library: loaded by what hashes, not by --help

    check_input(path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_texts(
    paths: list[str | Path],
    field: str | None = None,
    skip_blank: bool = False,
    check_first: Callable[[str | Path, str, int], None] | None = None,
    encoding: str = "utf-8",
) -> list[str]:
    """Texts from plain-text lines (or JSONL objects' ``field``), in order.

    A blank line (or empty field) is an error naming the file and line unless
    ``skip_blank``. ``-`` reads stdin. ``check_first(path, text, line_number)`` sees the first text of each
    file before the rest is read (``formats.plain.check_plain``: a file of another kind is refused).
    """
    return read_records(paths, field, skip_blank=skip_blank, check_first=check_first, encoding=encoding)[1]


def read_records(
    paths: list[str | Path],
    field: str | None = None,
    id_field: str | None = None,
    skip_blank: bool = False,
    check_first: Callable[[str | Path, str, int], None] | None = None,
    encoding: str = "utf-8",
    where: list[tuple[str, int]] | None = None,
) -> tuple[list, list[str]]:
    """:func:`read_texts` with an id for each text: the JSONL objects' ``id_field`` (a string or a finite number;
    it needs ``field``), else the line number (``FILE:LINE`` when there are several files). Ids are unique: a
    repeated ``id_field`` value is an error naming its line and the line that had it first (a file given twice:
    ``formats.plain.refuse_twice``). ``where``, when given, gets each text's file and line."""
    if id_field is not None and field is None:
        raise DefsentError("--id-field reads JSONL objects: pass --field NAME too (the text to read)")
    ids: list = []
    texts: list[str] = []
    first_line: dict[tuple[bool, object], tuple[str, int]] = {}
    for path in paths:
        if field is None:
            rows = ((n, text, None) for n, text in iter_lines(path, encoding))
        else:
            rows = (
                (n, _field(obj, field, path, n), _id(obj, id_field, path, n) if id_field else None)
                for n, obj in iter_jsonl(path, encoding)
            )
        first = True
        for number, text, given in rows:
            if not text.strip():
                if skip_blank:
                    continue
                raise DefsentError("blank input line; pass --skip-blank to skip it", path=_name(path), line=number)
            if first and check_first is not None:
                check_first(path, text, number)
            first = False
            if id_field:
                key = (isinstance(given, str), given)
                if key in first_line:
                    seen = first_line[key]
                    raise DefsentError(
                        f"id {json.dumps(given, ensure_ascii=False)} (--id-field {id_field}) is repeated: it was the id "
                        f"of {seen[0]}:{seen[1]} too; ids must be unique",
                        path=_name(path),
                        line=number,
                    )
                first_line[key] = (_name(path), number)
            texts.append(text)
            ids.append(given if id_field else number if len(paths) == 1 else f"{_name(path)}:{number}")
            if where is not None:
                where.append((_name(path), number))
    return ids, texts


def _id(obj: dict, field: str, path: str | Path, number: int) -> str | int | float:
    value = obj.get(field)
    if value is None:
        raise DefsentError(f"no field {field!r} (--id-field) in this JSON object", path=_name(path), line=number)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DefsentError(f"field {field!r} (--id-field) is not a string or a number", path=_name(path), line=number)
    if isinstance(value, float) and not math.isfinite(value):
        raise DefsentError(
            f"field {field!r} (--id-field) is {value}, not a finite number", path=_name(path), line=number
        )
    return value


def _name(path: str | Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _field(obj: dict, field: str, path: str | Path, number: int) -> str:
    value = obj.get(field)
    if value is None:
        raise DefsentError(f"no field {field!r} in this JSON object", path=_name(path), line=number)
    if not isinstance(value, str):
        raise DefsentError(f"field {field!r} is not a string", path=_name(path), line=number)
    return value


@contextlib.contextmanager
def stdin_as_file(suffix: str = "") -> Iterator[Path]:
    """Standard input copied to a temporary file, for a reader that takes a path and reads it twice (a
    dictionary: counted, then read); removed afterwards. An error about that file names ``<stdin>``."""
    if sys.stdin is None or sys.stdin.isatty():
        raise DefsentError("no input: give a file, or pipe one into stdin")
    with tempfile.TemporaryDirectory(prefix="defsent-stdin-") as folder:
        path = Path(folder) / f"stdin{suffix}"
        with open(path, "wb") as fh:
            for block in iter(lambda: sys.stdin.buffer.read(1 << 20), b""):
                fh.write(block)
        if not path.stat().st_size:
            raise DefsentError("stdin is empty: nothing to read")
        try:
            yield path
        except DefsentError as exc:
            text = str(exc).replace(str(path), "<stdin>")
            if text == str(exc):
                raise
            error = DefsentError(text)
            error.exit_code = exc.exit_code
            raise error from None
