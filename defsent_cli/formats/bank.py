"""The entry bank file (docs/formats.md, "Entry bank"): HDF5 with ``entries``, ``vectors``, ``counts``
and provenance attributes. Row i of ``vectors`` belongs to ``entries[i]``; rows follow the
dictionary's order (see :func:`defsent_cli.formats.dictionary.bank_rows`).

Building a bank (encoding definitions) is :mod:`defsent_cli.training.entry_bank`; this module
only reads, writes and checks the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DefsentError
from ..io import hdf5_output, sha256_file
from .dictionary import SPLITS, bank_entries

if TYPE_CHECKING:  # numpy (and h5py) only where a bank is read or written: `embed-entries --help` lists KINDS
    import numpy as np

BANK_FORMAT = "defsent-bank/1"
#: Bank kinds and the pooling of the definition vectors they average (DefSent+'s AC and AMP).
KINDS = {"AC": "cls", "AMP": "mean"}
BANK_SUFFIXES = (".h5", ".hdf5")


@dataclass
class Bank:
    """Entry strings, their vectors, how many definitions each averages, and provenance."""

    entries: list[str]
    vectors: np.ndarray
    counts: np.ndarray
    attrs: dict = field(default_factory=dict)
    source: Path | None = None  # the file it was read from (for messages; not stored)

    @property
    def kind(self) -> str:
        return str(self.attrs.get("kind", ""))

    @property
    def splits(self) -> set[str]:
        """The dictionary splits whose entries the bank holds."""
        return set(str(self.attrs.get("splits", ",".join(SPLITS))).split(","))

    def __len__(self) -> int:
        return len(self.entries)


def check_bank_path(path: str | Path) -> Path:
    """A bank output must be named .h5 / .hdf5."""
    path = Path(path)
    if path.suffix.lower() not in BANK_SUFFIXES:
        raise DefsentError("a bank is HDF5: give the output an .h5 suffix", path=path)
    return path


def write_bank(path: str | Path, bank: Bank) -> None:
    """Atomically write a bank as HDF5 (``entries``, ``vectors``, ``counts`` + attrs)."""
    import h5py
    import numpy as np

    with hdf5_output(path) as h5:
        h5.create_dataset("entries", data=bank.entries, dtype=h5py.string_dtype("utf-8"))
        h5.create_dataset("vectors", data=np.asarray(bank.vectors, dtype=np.float32))
        h5.create_dataset("counts", data=np.asarray(bank.counts, dtype=np.int32))
        for key, value in bank.attrs.items():
            h5.attrs[key] = value


def read_bank(path: str | Path, dtype="float32") -> Bank:
    """Read a bank written by :func:`write_bank`; anything else is a one-line error naming the file.

    ``dtype`` (e.g. ``np.float16``): HDF5 converts the vectors while reading, so no float32 copy of
    the whole matrix is ever held.
    """
    import h5py
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise DefsentError("no such bank file", path=path)
    try:
        with h5py.File(path, "r") as h5:
            if h5.attrs.get("format") != BANK_FORMAT:
                raise DefsentError(f"not a defsent bank (format attribute is not {BANK_FORMAT!r})", path=path)
            shapes = {name: h5[name].shape for name in ("entries", "vectors", "counts")}
            if len(shapes["vectors"]) != 2 or len(shapes["entries"]) != 1 or len(shapes["counts"]) != 1:
                raise DefsentError(
                    f"bank datasets have the wrong shapes ({shapes}); expected entries (n,), vectors (n, d), "
                    "counts (n,)",
                    path=path,
                )
            if h5["vectors"].dtype.kind != "f":
                raise DefsentError(f"bank vectors must be floats, found {h5['vectors'].dtype}", path=path)
            entries = [e.decode("utf-8") if isinstance(e, bytes) else str(e) for e in h5["entries"][()]]
            vectors = np.asarray(h5["vectors"].astype(np.dtype(dtype))[()])
            counts = np.asarray(h5["counts"][()], dtype=np.int32)
            attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in h5.attrs.items()}
    except OSError as exc:
        raise DefsentError(f"cannot read HDF5 ({exc})", path=path) from None
    except KeyError as exc:
        raise DefsentError(f"bank is missing dataset {exc}", path=path) from None
    if vectors.shape[0] != len(entries) or counts.shape[0] != len(entries):
        raise DefsentError("bank datasets disagree in length", path=path)
    if not np.isfinite(vectors).all():
        bad = int((~np.isfinite(vectors)).any(axis=1).sum())
        raise DefsentError(f"bank has {bad} row(s) with NaN or infinite values; rebuild it", path=path)
    return Bank(entries, vectors, counts, attrs, source=Path(path))


def check_bank_matches(bank: Bank, dictionary: str | Path) -> None:
    """Fail unless the bank was built from exactly this dictionary (SHA-256 and entry strings)."""
    dictionary, bank_path = Path(dictionary), bank.source or "bank"
    if bank.attrs.get("dictionary_sha256") != sha256_file(dictionary):
        raise DefsentError(
            f"bank was built from another dictionary (SHA-256 differs from {dictionary}); rebuild it with embed-entries",
            path=bank_path,
        )
    if bank_entries(dictionary, bank.splits) != bank.entries:
        raise DefsentError(f"bank entries do not match {dictionary} line by line; rebuild it", path=bank_path)
