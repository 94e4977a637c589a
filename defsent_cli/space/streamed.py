"""A bank's transform fitted on a seeded sample of its rows and applied to every row a chunk at a time, read from
its file and written into the output's (``ica --fit-rows N``).

Memory holds the sample (with FastICA's working copies of it, a few times N x d) and one chunk of rows, whatever
the size of the bank: a bank larger than memory (10M x 384 float32 rows are 14.3 GiB) is transformed with the
fit of N of its rows. The sample is ``seeded_sample``'s (the ``--limit`` of every command: sorted indices drawn
with ``--seed``); with N at least the bank's rows it is every row, in order, and the output is
:func:`~defsent_cli.space.transforms.transform_bank`'s up to float32 rounding (FastICA's ``transform`` of the
rows instead of its ``fit_transform``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..console import make_progress
from ..formats.bank import READ_ROWS, BankFile, bank_output
from ..formats.dictionary import seeded_sample
from .transforms import FittedTransform, fit_transform, input_transform, transformed_attrs


def sample_rows(bank: BankFile, fit_rows: int, seed: int) -> tuple[np.ndarray | None, np.ndarray]:
    """``(indices, vectors)`` of the seeded sample of ``fit_rows`` rows (indices sorted; None: every row)."""
    keep = seeded_sample(len(bank), fit_rows, seed)
    return keep, (bank.rows() if keep is None else bank.rows_at(keep))


def transform_bank_file(
    bank: BankFile,
    output: str | Path,
    method: str = "ica",
    fit_rows: int = 100_000,
    seed: int = 42,
    source: str | Path | None = None,
    show_progress: bool | None = None,
    **settings,
) -> FittedTransform:
    """Fit ``method`` on a seeded sample of ``fit_rows`` of ``bank``'s rows (``settings``: those of
    :func:`~defsent_cli.space.transforms.fit_transform`) and write every row, transformed, into ``output``
    (entries, counts and provenance kept; ``transform_fit_rows`` and ``transform_fit_seed`` added), streamed
    in chunks (:func:`~defsent_cli.formats.bank.bank_output`). Returns the fitted transform."""
    start = time.perf_counter()
    previous = input_transform(bank, source)
    _, sample = sample_rows(bank, fit_rows, seed)
    fitted = fit_transform(sample, method, show_progress=show_progress, **settings)
    changes = {**fitted.attrs, "transform_fit_rows": len(sample), "transform_fit_seed": int(seed)}
    del sample
    attrs = transformed_attrs(bank.attrs, previous, source, changes, fitted.dead_dims, fitted.n_iter)
    entry_bytes = sum(len(entry.encode("utf-8")) for entry in bank.iter_entries())
    with (
        bank_output(output, len(bank), fitted.width, entry_bytes) as writer,
        make_progress("rows", show_progress) as progress,
    ):
        task = progress.add_task(f"{method} of every row", total=len(bank))
        for first in range(0, len(bank), READ_ROWS):
            part = bank.part(first, first + READ_ROWS)
            writer.write(first, part.entries, fitted.apply(part.vectors), part.counts)
            progress.advance(task, len(part))
        attrs["transform_seconds"] = round(time.perf_counter() - start, 3)
        writer.attrs.update(attrs)
    fitted.seconds = time.perf_counter() - start
    return fitted
