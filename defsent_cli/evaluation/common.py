"""What the evaluations share: where the SentEval data is, how a model becomes ``texts -> vectors``,
and encoding each distinct text once."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..encoder.models import LoadedModel
from ..encoder.spec import Encoder, apply_post, post_settings
from ..errors import DefsentError

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


@dataclass
class FunctionEncoder:
    """Any ``texts -> vectors`` function as an evaluated encoder (with optional post-processing)."""

    fn: TextEncoder
    post: object | None = None

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    label = None

    def __call__(self, texts: Sequence[str], description: str = "encoding") -> np.ndarray:
        return apply_post(self.post, np.asarray(self.fn(list(texts)), dtype=np.float32))

    def describe(self) -> dict:
        return {"post": post_settings(self.post)} if self.post else {}


def as_encoder(model: object, pooling=None, post=None, **settings) -> Encoder | FunctionEncoder:
    """An :class:`~defsent_cli.encoder.spec.Encoder` as it is, a loaded model with this pooling (and
    ``post``), or any ``texts -> vectors`` function."""
    if isinstance(model, Encoder):
        return model
    if isinstance(model, LoadedModel):
        encoder = Encoder.of(model, pooling, **settings)
        encoder.post = post
        return encoder
    if callable(model):
        return FunctionEncoder(model, post)
    raise DefsentError(f"cannot encode with a {type(model).__name__}: pass a loaded model or a function of texts")


def encode_unique(encoder: Callable, texts: Sequence[str], description: str) -> np.ndarray:
    """Encode each distinct text once (in one call, so length sorting works) and return one row per text."""
    unique = list(dict.fromkeys(texts))
    if not unique:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray(encoder(unique, description), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(unique):
        raise DefsentError(f"the encoder returned shape {vectors.shape} for {len(unique)} texts")
    where = {text: i for i, text in enumerate(unique)}
    return vectors[[where[t] for t in texts]]


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the values; None when any is missing (an average over fewer tasks would mislead)."""
    if not values or any(v is None for v in values):
        return None
    return float(np.mean(values))
