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


def _given_data(data: str | Path | None, hint: str = DATA_HINT) -> Path:
    """The folder the user gave (``--data``, else ``$DEFSENT_DATA``), which must exist."""
    if data is None or str(data) == "":
        data = os.environ.get("DEFSENT_DATA") or None
    if data is None:
        raise DefsentError(f"no evaluation data given; {hint}")
    root = Path(data).expanduser()
    if not root.is_dir():
        raise DefsentError(f"data folder not found; {hint}", path=root)
    return root


def resolve_data_root(data: str | Path | None) -> Path:
    """The SentEval ``downstream`` folder under ``data`` (or ``$DEFSENT_DATA``).

    Accepts the ``downstream`` folder itself or any of its usual parents (``senteval/``, a SentEval
    checkout's ``data/``, the shared data folder holding ``senteval/``).
    """
    root = _given_data(data)
    for candidate in _DOWNSTREAM_CANDIDATES:
        folder = (root / candidate).resolve()
        if folder.is_dir() and any((folder / name).is_dir() for name in _TASK_DIRS):
            return folder
    raise DefsentError(f"no SentEval task folders (STS/, SICK/, MR/, ...) found here; {DATA_HINT}", path=root)


def find_data_folder(data: str | Path | None, relative: str, what: str) -> Path:
    """A data set that sits beside ``senteval/`` in the shared data folder (``clustering/``, ``scicite/``,
    ``wikitext-2/``): ``relative`` under ``data`` (or ``$DEFSENT_DATA``) or under one of its parents, so
    the same ``--data`` that finds the SentEval folder finds it too."""
    hint = f"pass --data DIR or set DEFSENT_DATA to the folder holding {relative}/ (e.g. ../shared/data)"
    root = _given_data(data, hint)
    for base in (root, *root.resolve().parents[:2]):
        if (base / relative).is_dir():
            return base / relative
    raise DefsentError(f"{what}: {relative}/ not found here or in its parents; {hint}", path=root)


def parse_names(
    tasks: str | Sequence[str] | None,
    aliases: dict[str, str],
    default: Sequence[str],
    what: str,
    groups: dict[str, Sequence[str]] | None = None,
) -> list[str]:
    """Task names from ``--tasks`` (comma-separated or a list; any case, ``-`` and ``_`` ignored) through
    ``aliases`` (normalised key -> name), each once, in order; ``groups`` names several at once;
    nothing given: ``default``."""
    if tasks is None or (isinstance(tasks, str) and not tasks.strip()):
        return list(default)
    groups = groups or {}
    items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    names: list[str] = []
    for item in items:
        key = item.strip().lower().replace("-", "").replace("_", "")
        if not key:
            continue
        if key in groups:
            names.extend(groups[key])
        elif key in aliases:
            names.append(aliases[key])
        else:
            choices = ", ".join(dict.fromkeys(aliases.values()))
            extra = f" or {', '.join(groups)}" if groups else ""
            raise DefsentError(f"unknown {what} {item.strip()!r}; choose from {choices}{extra}")
    return list(dict.fromkeys(names))


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


def mean_sd(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof 1) of several runs; sd is None for one run, both None
    when any run has no value."""
    if not values or any(v is None for v in values):
        return None, None
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), (float(array.std(ddof=1)) if len(array) > 1 else None)


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the values; None when any is missing (an average over fewer tasks would mislead)."""
    if not values or any(v is None for v in values):
        return None
    return float(np.mean(values))


#: the per-task figures a multi-model summary averages, by results kind
SUMMARY_METRICS = {
    "sts": ("spearman", "pearson"),
    "senteval": ("acc", "score", "pearson", "spearman"),
    "cluster": ("acc", "nmi"),
}


def _spread(values: list) -> dict:
    mean, sd = mean_sd(values)
    return {
        "mean": None if mean is None else round(mean, 4),
        "sd": None if sd is None else round(sd, 4),
        "values": values,
    }


def summarize_runs(runs: Sequence[dict]) -> dict:
    """One results object for several models (e.g. the seeds of a recipe): the shared settings of the
    first run, ``models``, every run's full result in ``runs``, and ``summary``: per task and for the
    average, each figure's mean and sample sd over the runs (DefSent's n-seed means)."""
    if not runs:
        raise DefsentError("no runs to summarise")
    kind = runs[0]["kind"]
    metrics = SUMMARY_METRICS.get(kind, ())
    names = list(runs[0]["tasks"])
    for run in runs[1:]:
        if list(run["tasks"]) != names:
            raise DefsentError("the runs to summarise scored different tasks")
    summary: dict = {"tasks": {}, "average": {}}
    for name in names:
        first = runs[0]["tasks"][name]
        summary["tasks"][name] = {
            key: _spread([run["tasks"][name].get(key) for run in runs]) for key in metrics if key in first
        }
    for key in metrics:
        if runs[0]["average"].get(key) is not None or key in runs[0]["average"]:
            summary["average"][key] = _spread([run["average"].get(key) for run in runs])
    shared = {k: v for k, v in runs[0].items() if k not in ("model", "tasks", "average", "warnings", "seconds")}
    return {
        **shared,
        "models": [run["model"] for run in runs],
        "n_runs": len(runs),
        "summary": summary,
        "runs": list(runs),
        "warnings": list(dict.fromkeys(w for run in runs for w in run.get("warnings", []))),
        "seconds": round(sum(run.get("seconds", 0.0) for run in runs), 2),
    }
