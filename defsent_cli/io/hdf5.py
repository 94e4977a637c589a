"""HDF5 files read and written safely: opened with a one-line error naming the file (a defsent bank's or index's
header checked: :func:`checked_file`), written atomically, streamed into space taken first (the free space checked
before the work starts)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
from collections.abc import Iterator
from pathlib import Path

from ..errors import DefsentError
from .files import atomic_path, write_bytes


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


@contextlib.contextmanager
def checked_file(
    path: Path, kind: str, fmt: str, datasets: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Iterator[tuple[object, dict]]:
    """A defsent HDF5 file (a bank, an index: ``kind``) opened for its header: there, of format ``fmt``, holding
    ``datasets`` (and ``optional`` ones where present) as datasets, not groups; yields the open file and its
    attributes as plain values. Anything else: one line naming it."""
    import h5py
    import numpy as np

    if not path.is_file():
        raise DefsentError(f"no such {kind} file", path=path)
    with hdf5_input(path, f"the {kind}") as h5:
        if h5.attrs.get("format") != fmt:
            raise DefsentError(f"not a defsent {kind} (format attribute is not {fmt!r})", path=path)
        missing = [name for name in datasets if name not in h5]
        if missing:
            raise DefsentError(f"{kind} is missing dataset {missing[0]!r}", path=path)
        for name in (*datasets, *(name for name in optional if name in h5)):
            if not isinstance(h5[name], h5py.Dataset):
                raise DefsentError(f"{kind} is damaged: {name!r} is not a dataset; rebuild it", path=path)
        yield h5, {k: (v.item() if isinstance(v, np.generic) else v) for k, v in h5.attrs.items()}


def is_text(dataset) -> bool:
    """Whether an HDF5 dataset holds strings (as the bank's and index's text datasets are written)."""
    import h5py

    return h5py.check_string_dtype(dataset.dtype) is not None or dataset.dtype.kind in ("S", "U")
