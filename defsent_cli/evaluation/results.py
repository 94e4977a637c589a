"""What both evaluations share: the data root, embedding with de-duplication, the results JSON and the table.

Results follow DESIGN.md: one JSON object with the model, the pooling, the data root, per-task scores, the
average and every setting that changes the numbers; a rich table goes to stderr (or stdout without ``-o``).
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import DefsentError

RESULTS_FORMAT = "defsent-results/1"

# Folders that mark a SentEval ``downstream`` directory.
_TASK_DIRS = ("STS", "SICK", "MR", "CR", "SUBJ", "MPQA", "SST", "TREC", "MRPC")
# Where the ``downstream`` folder may sit below what the user passed.
_DOWNSTREAM_CANDIDATES = (
    ".",
    "downstream",
    "senteval/downstream",
    "data/downstream",
    "senteval",
    "SentEval/data/downstream",
)

DATA_HINT = "pass --data DIR or set DEFSENT_DATA to the folder holding the SentEval data (senteval/downstream/...)"

#: Any function from a list of texts to a float (n, d) matrix, e.g. a wrapped defsent model.
TextEncoder = Callable[[Sequence[str]], np.ndarray]


def resolve_data_root(data: str | Path | None) -> Path:
    """The SentEval ``downstream`` folder under ``data`` (or ``$DEFSENT_DATA``).

    Accepts the ``downstream`` folder itself or any of its usual parents (``senteval/``, a SentEval
    checkout's ``data/``, the shared data folder holding ``senteval/``).
    """
    if data is None or str(data) == "":
        data = os.environ.get("DEFSENT_DATA") or None
    if data is None:
        raise DefsentError(f"no evaluation data given; {DATA_HINT}")
    root = Path(data).expanduser()
    if not root.is_dir():
        raise DefsentError(f"data folder not found; {DATA_HINT}", path=root)
    for candidate in _DOWNSTREAM_CANDIDATES:
        folder = (root / candidate).resolve()
        if folder.is_dir() and any((folder / name).is_dir() for name in _TASK_DIRS):
            return folder
    raise DefsentError(f"no SentEval task folders (STS/, SICK/, MR/, ...) found here; {DATA_HINT}", path=root)


def task_folder(root: Path, relative: str, task: str) -> Path:
    """``root/relative``, or a one-line error naming the task and what to do."""
    folder = root / relative
    if not folder.exists():
        raise DefsentError(
            f"{task}: {relative} not found under the data root; {DATA_HINT}, or leave {task} out with --tasks",
            path=root,
        )
    return folder


def model_encoder(
    model: object,
    pooling: str | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    show_progress: bool | None = None,
    post=None,
) -> Callable[[Sequence[str], str], np.ndarray]:
    """A ``(texts, description) -> vectors`` function over a loaded model or any :data:`TextEncoder`.

    A :class:`~defsent_cli.models.LoadedModel` goes through the one encode loop (length-sorted batches,
    the pooling registry); anything else is called with the texts. ``post``: a post-processing chain,
    applied to each call's vectors (fitted on them first when it is not fitted: the "target" setting).
    """
    from ..encoding import encode
    from ..models import LoadedModel
    from ..toolbox import apply_post

    if isinstance(model, LoadedModel):

        def run(texts: Sequence[str], description: str) -> np.ndarray:
            return apply_post(
                post,
                encode(
                    list(texts),
                    model,
                    pooling=pooling,
                    batch_size=batch_size,
                    max_length=max_length,
                    show_progress_bar=show_progress,
                    description=description,
                ),
            )

        return run
    if callable(model):
        return lambda texts, description: apply_post(post, np.asarray(model(list(texts)), dtype=np.float32))
    raise DefsentError(f"cannot encode with a {type(model).__name__}: pass a loaded model or a function of texts")


def encode_unique(
    encode_fn: Callable[[Sequence[str], str], np.ndarray], texts: Sequence[str], description: str
) -> np.ndarray:
    """Encode each distinct text once (in one call, so length sorting works) and return one row per text."""
    unique = list(dict.fromkeys(texts))
    if not unique:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray(encode_fn(unique, description), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(unique):
        raise DefsentError(f"the encoder returned shape {vectors.shape} for {len(unique)} texts")
    where = {text: i for i, text in enumerate(unique)}
    return vectors[[where[t] for t in texts]]


def pooling_name(model: object, pooling) -> str | None:
    """The pooling actually used: the given one (a name or a Pooling's label), else the loaded model's default."""
    from ..models import LoadedModel
    from ..pooling import Pooling

    if isinstance(pooling, Pooling):
        return pooling.label
    if pooling:
        return pooling
    return model.default_pooling if isinstance(model, LoadedModel) else None


def model_name(model: object) -> str:
    from ..models import LoadedModel

    return str(model.path) if isinstance(model, LoadedModel) else getattr(model, "__name__", type(model).__name__)


def number(value: float | None, digits: int = 4) -> float | None:
    """A JSON-safe rounded float (NaN and inf become null)."""
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the values; None when any is missing (an average over fewer tasks would mislead)."""
    if not values or any(v is None for v in values):
        return None
    return float(np.mean(values))


def payload_header(kind: str, model: object, pooling, data_root: Path | None, post=None) -> dict:
    """The common head of every results JSON (pooling settings and post-processing when there are any)."""
    from ..pooling import Pooling
    from ..toolbox import post_settings

    extra: dict = {}
    if isinstance(pooling, Pooling):
        extra["pooling_settings"] = pooling.describe()
    if post:
        extra["post"] = post_settings(post)
    return {
        "format": RESULTS_FORMAT,
        "kind": kind,
        "model": model_name(model),
        "pooling": pooling_name(model, pooling),
        "data": str(data_root) if data_root is not None else None,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "defsent_version": __version__,
        "python": platform.python_version(),
        **extra,
    }


def fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def render_table(title: str, columns: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]], caption: str = ""):
    """A title line, a rich table (one header row of task names, then labelled rows) and caption lines."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box_style())
    table.add_column("", style="bold")
    for column in columns:
        table.add_column(column, justify="right")
    for label, cells in rows:
        table.add_row(label, *cells)
    parts = [Text(title, style="bold")]
    parts.append(table)
    parts.extend(Text(line, style="dim") for line in caption.splitlines() if line)
    return Group(*parts)


def box_style():
    from rich import box

    return box.SIMPLE_HEAD


def print_table(table, to_stdout: bool) -> None:
    """Tables go to stdout when no ``-o`` was given (the table is the output), else to stderr."""
    from rich.console import Console

    from ..console import err_console

    (Console(highlight=False) if to_stdout else err_console).print(table)
