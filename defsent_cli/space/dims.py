"""Smaller vectors: the leading dimensions of each vector (``--dims N``, the server's ``dimensions``), as a model
trained with ``--matryoshka`` makes them stand alone (Kusupati et al. 2022; sentence-transformers' ``truncate_dim``).

:func:`leading` is the one cut every path takes (``encode``, ``index``, ``embed-entries``, ``search``, ``lookup``,
``eval-sts``, ``eval-dict``, the server): the first N columns, scaled back to unit length where the vectors were unit
vectors before the cut (a normalising model folder, ``--normalize``), left as they are otherwise (a bank's raw means,
``lookup``'s dot products). :class:`LeadingRows` is a bank's or an index's rows cut the same way as they are read,
so a collection built at full width is searched at ``--dims N`` with both sides cut: the scores of one built with
``--dims N`` (docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..errors import DefsentError
from .linalg import l2_normalize


def dims_problem(n, width: int) -> str | None:
    """Why ``n`` is no width the vectors of a ``width``-dim model can be cut to, as the end of a sentence naming it
    (None: it is one): a whole number from 1 to ``width``."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        return f"must be a whole number from 1 to {width}"
    if n < 1:
        return f"must be at least 1 (and at most {width}, the model's width)"
    if n > width:
        return f"is more than the model's {width} dimensions: give 1 to {width}"
    return None


def check_dims(n: int | None, width: int, option: str = "--dims", model=None) -> int | None:
    """``n`` checked against the vectors' ``width`` (a one-line error naming ``option``, and the ``model`` where
    given, otherwise); None stays None."""
    if n is None:
        return None
    wrong = dims_problem(n, width)
    if wrong is not None:
        raise DefsentError(f"{option} {n} {wrong}" + ("" if model is None else f" ({model})"))
    return int(n)


def leading(vectors: np.ndarray, n: int | None, normalize: bool) -> np.ndarray:
    """The leading ``n`` dimensions of each row (all of them for None or the full width), re-normalised to unit
    length where ``normalize`` (the rows were unit vectors before the cut); a zero row stays zero."""
    vectors = np.asarray(vectors)
    if n is None or n >= vectors.shape[-1]:
        return vectors
    cut = np.ascontiguousarray(vectors[..., :n])
    return l2_normalize(cut) if normalize else cut


class LeadingRows:
    """The rows of a bank or an index (anything with ``iter_rows``, ``rows_at``, ``len`` and ``dim``) cut to their
    leading ``n`` dimensions as they are read (:func:`leading`; ``normalize``: back to unit length, for an index's
    unit rows); everything else is the file's."""

    def __init__(self, rows, n: int, normalize: bool = False):
        self.file, self.n, self.normalize = rows, int(n), normalize

    def __len__(self) -> int:
        return len(self.file)

    def __getattr__(self, name: str):
        return getattr(self.file, name)

    @property
    def dim(self) -> int:
        return self.n

    def iter_rows(self, chunk: int, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        for first, rows in self.file.iter_rows(chunk, start, stop):
            yield first, leading(rows, self.n, self.normalize)

    def rows_at(self, rows) -> np.ndarray:
        return leading(self.file.rows_at(rows), self.n, self.normalize)


def cut_rows(rows, n: int | None, normalize: bool = False):
    """``rows`` cut to ``n`` dims (:class:`LeadingRows`) where ``n`` is below their width, else ``rows`` itself."""
    return rows if n is None or n >= rows.dim else LeadingRows(rows, n, normalize)


def another_width(stored: int, model: int, recorded) -> bool:
    """Whether a file's ``stored``-dim rows are another model's, not this ``model``-dim one's: wider, or narrower
    without the ``dims`` attribute (``recorded``) that says it was built with ``--dims`` at that width (a bank ``ica``
    reduced to fewer components keeps the attribute of the bank it read, not its width)."""
    return stored > model or (stored < model and recorded != stored)


def collection_dims(n: int | None, stored: int, model: int, path, what: str = "file", model_path=None) -> int | None:
    """The width a bank's or an index's queries are cut to: ``n`` (``--dims``) where given, else the file's own
    width where it is narrower than the model's (built with ``--dims``); None: the model's full width. The caller
    has refused a file of another model's width (:func:`another_width`); an ``n`` wider than the model is a one-line
    error naming the model (``model_path``), one wider than the file's rows one naming the file (``path``; ``what``:
    ``index`` or ``bank``)."""
    if n is None:
        return stored if stored < model else None
    check_dims(n, model, model=model_path)
    if n > stored:
        raise DefsentError(
            f"--dims {n} is wider than the {what}'s {stored}-dim vectors (built with --dims {stored}): search it at "
            f"--dims {stored} or less, or rebuild it at full width",
            path=path,
        )
    return n if n < model else None
