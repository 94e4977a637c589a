"""Encoded vectors (docs/formats.md, "Vectors"): ``defsent encode`` writes .npy, .h5, .jsonl or .json, chosen by
suffix or ``--format``, to a file or (but .h5) to stdout; ``inspect`` reads a bank or any 2-D float .npy as a
:class:`Space`."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..io import hdf5_output, is_stdout, json_text, text_output, write_bytes, write_stdout
from .bank import nonfinite_rows, open_bank
from .dictionary import seeded_sample

VECTOR_SUFFIXES = (".npy", ".h5", ".hdf5", ".jsonl", ".json")
#: the formats ``encode --format`` names (h5 only as a file)
VECTOR_FORMATS = ("npy", "jsonl", "json", "h5")


def vector_format(path: str | Path) -> str:
    """The vector file format named by a suffix: npy, h5, jsonl or json."""
    suffix = Path(path).suffix.lower()
    if suffix not in VECTOR_SUFFIXES:
        raise DefsentError(
            f"unknown output suffix {suffix or '(none)'}; use one of {', '.join(VECTOR_SUFFIXES)} (or --format)",
            path=path,
        )
    return {".hdf5": "h5"}.get(suffix, suffix[1:])


def write_vectors(
    path: str | Path,
    vectors: np.ndarray,
    texts: list[str] | None = None,
    attrs: dict | None = None,
    *,
    fmt: str | None = None,
    ids: list | None = None,
    store_text: bool = False,
) -> None:
    """Write a float32 matrix as ``fmt`` (default: the suffix's) to a file, atomically, or to stdout (``-``, but
    h5): .npy; .h5 (dataset ``vectors``, ``texts``, attributes); .jsonl, one ``{"id", "embedding"}`` object per
    row (``ids``, default 1, 2, ...; ``"text"`` too with ``store_text``); .json, a list of those objects."""
    fmt = fmt or vector_format(path)
    vectors = np.asarray(vectors, dtype=np.float32)
    if fmt == "npy":
        if is_stdout(path):
            write_npy_stdout(vectors)
        else:
            write_bytes(path, npy_bytes(vectors))
    elif fmt in ("jsonl", "json"):
        rows = vector_rows(vectors, ids, texts if store_text else None)
        with text_output(path) as fh:
            if fmt == "jsonl":
                for row in rows:
                    fh.write(json_text(row) + "\n")
            else:
                fh.write("[\n" + ",\n".join(json_text(row) for row in rows) + "\n]\n")
    elif fmt == "h5":
        import h5py

        with hdf5_output(path) as h5:
            h5.create_dataset("vectors", data=vectors)
            if texts is not None:
                h5.create_dataset("texts", data=texts, dtype=h5py.string_dtype())
            for key, value in (attrs or {}).items():
                h5.attrs[key] = value
    else:
        raise DefsentError(f"unknown vector format {fmt!r}; use one of {', '.join(VECTOR_FORMATS)}")


def refuse_nonfinite(
    vectors: np.ndarray, model, where: list[tuple[str, int]] | None = None, start: int = 0, what: str = "text"
) -> None:
    """The vectors of texts (``what``: or queries) ``start``, ``start + 1``, ... as a model gave them: one that is
    NaN or infinite is an error naming the text's input line (``where[i]``: its file and line), else its number;
    nothing is written."""
    bad = nonfinite_rows(vectors)
    if not len(bad):
        return
    row = start + int(bad[0])
    message = (
        f"the model {model} gives NaN or infinite values for this {what} ({len(bad):,} such {what}(s)); nothing "
        "was written: check the model (its weights, or its post-processing)"
    )
    if where is not None and row < len(where):
        raise DefsentError(message, path=where[row][0], line=where[row][1])
    raise DefsentError(f"{what} {row + 1:,}: {message}")


def vector_rows(vectors: np.ndarray, ids: list | None = None, texts: list[str] | None = None):
    """The JSON rows of a matrix: ``{"id", ["text",] "embedding"}`` (ids 1, 2, ... when none are given)."""
    for i, row in enumerate(vectors):
        obj: dict = {"id": ids[i] if ids is not None else i + 1}
        if texts is not None:
            obj["text"] = texts[i]
        obj["embedding"] = row.tolist()
        yield obj


def npy_bytes(vectors: np.ndarray) -> bytes:
    """A float32 matrix as the bytes of a .npy file."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(vectors, dtype=np.float32))
    return buffer.getvalue()


def write_npy_stdout(vectors: np.ndarray) -> None:
    """Write a float32 .npy to stdout (for pipes), flushed at once (a failed write is an error)."""
    write_stdout(npy_bytes(vectors))


@dataclass
class Space:
    """Vectors to inspect, with the file they came from and its provenance."""

    path: Path
    vectors: np.ndarray
    attrs: dict = field(default_factory=dict)
    rows: int | None = None  # the file's rows, when ``vectors`` is a sample of them

    def describe(self) -> str:
        """One line of provenance for titles and tables."""
        a = self.attrs
        n, d = self.vectors.shape
        parts = [self.path.name]
        if a.get("kind"):
            parts.append(f"{a['kind']} bank")
        if a.get("encoder"):
            encoder = Path(str(a["encoder"]))
            parts.append(f"encoder {encoder.parent.name + '/' if encoder.parent.name else ''}{encoder.name}")
        transform = str(a.get("transform", "none"))
        if transform == "ica":
            state = "converged" if a.get("transform_converged", True) else "NOT converged"
            transform += f" x{a.get('transform_scale', 1):g} ({a.get('transform_n_iter', '?')} iterations, {state})"
        elif transform == "whiten":
            transform += f" x{a.get('transform_scale', 1):g}"
        parts.append(f"transform {transform}")
        parts.append(f"{n:,} x {d}" if self.rows is None else f"{n:,} of {self.rows:,} rows (a seeded sample) x {d}")
        return ", ".join(parts)


def load_space(path: str | Path, limit: int | None = None, seed: int = 42) -> Space:
    """A defsent bank (.h5) or a plain float matrix (.npy, e.g. ``defsent encode`` output); ``limit``: only a
    seeded sample of that many rows is read (``seeded_sample``, the ``--limit`` of every command)."""
    path = Path(path)
    if path.suffix.lower() == ".npy":
        if not path.is_file():
            raise DefsentError("no such file", path=path)
        try:
            vectors = np.load(path, allow_pickle=False, mmap_mode="r")  # rows read when taken
        except (OSError, ValueError, EOFError) as exc:
            raise DefsentError(f"cannot read .npy ({exc or 'empty file'})", path=path) from None
        if vectors.ndim != 2 or not np.issubdtype(vectors.dtype, np.floating):
            raise DefsentError(f"expected a 2-D float matrix, got {vectors.dtype} {vectors.shape}", path=path)
        keep = seeded_sample(len(vectors), limit, seed)
        taken = np.array(vectors if keep is None else vectors[keep])
        return Space(path, taken, {}, None if keep is None else len(vectors))
    bank = open_bank(path)
    keep = seeded_sample(len(bank), limit, seed)
    vectors = bank.rows() if keep is None else bank.rows_at(keep)
    return Space(path, vectors, dict(bank.attrs), None if keep is None else len(bank))
