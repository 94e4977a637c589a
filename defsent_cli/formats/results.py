"""What every results JSON shares (docs/formats.md, "Results"): the format tag, the kind of
evaluation, the model, the pooling, the data root, when and with what it was made."""

from __future__ import annotations

import math
import platform
import time

from .. import __version__

RESULTS_FORMAT = "defsent-results/1"


def results_header(kind: str, model: str, pooling: str | None, data_root=None, **extra) -> dict:
    """The head of a results JSON; ``extra`` (pooling settings, post-processing, ...) follows it."""
    return {
        "format": RESULTS_FORMAT,
        "kind": kind,
        "model": model,
        "pooling": pooling,
        "data": str(data_root) if data_root is not None else None,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "defsent_version": __version__,
        "python": platform.python_version(),
        **{key: value for key, value in extra.items() if value is not None},
    }


def number(value: float | None, digits: int = 4) -> float | None:
    """A JSON-safe rounded float (NaN and inf become null)."""
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None
