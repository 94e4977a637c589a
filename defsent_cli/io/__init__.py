"""File plumbing every stage shares: path checks, atomic writes, stdout, line and JSONL readers, hashing.

Every check of a path lives here: :func:`check_input` (exists, and is a file or a folder as expected)
and :func:`check_output` (not there unless ``--force``, never a folder where a file goes or the other
way round, its folder exists). Every write is atomic (:func:`atomic_path`: a temporary file beside
the target, with the mode the umask gives a new file, flushed and fsynced, then renamed; removed on any
failure) and stdout is written and flushed at once (:func:`write_stdout`), so a full disk or a closed pipe
is an error, never a success.

The package's modules, one concern each: :mod:`.files` (path checks, atomic writes), :mod:`.hdf5` (HDF5 in and
out), :mod:`.output` (JSON, stdout), :mod:`.reading` (lines, JSON Lines, records, hashes). Every name is imported
from here: ``from defsent_cli.io import check_output``.
"""

from .files import *  # noqa: F403
from .files import _write_all  # noqa: F401 - private, shared by the modules
from .hdf5 import *  # noqa: F403
from .output import *  # noqa: F403
from .reading import *  # noqa: F403
