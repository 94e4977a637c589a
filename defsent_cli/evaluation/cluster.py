"""Short-text clustering (Stankevičius & Lukoševičius 2024, Sec. 3.5): k-means on frozen sentence
embeddings, k = the number of classes, scored by clustering accuracy and NMI.

- k-means: scikit-learn ``KMeans(n_clusters=k, random_state=seed, n_init=1)`` (k-means++ start,
  Lloyd), one run per seed 0 .. runs-1 (default 10); every figure is the mean (and sample sd) over
  the runs. The vectors are clustered as the encoder gives them: unit vectors when the model folder
  has a Normalize module (sentence-transformers) or with ``--normalize``, else raw (``--post l2`` also
  puts them on the sphere).
- accuracy: the best one-to-one mapping of clusters to labels (the Hungarian algorithm, scipy's
  ``linear_sum_assignment`` on the contingency table), correct items / all items.
- NMI: scikit-learn's ``normalized_mutual_info_score`` (arithmetic normalisation).

Both x100. Data: :mod:`.cluster_data`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..console import make_progress
from ..errors import DefsentError
from ..formats.results import number, results_header
from .choices import DEFAULT_RUNS
from .cluster_data import ClusterTask, load_cluster_tasks
from .common import as_encoder, encode_unique, mean_or_none, mean_sd


def contingency(labels: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """counts[c, y] = items of label y put in cluster c."""
    labels, clusters = np.asarray(labels, dtype=np.int64), np.asarray(clusters, dtype=np.int64)
    if labels.shape != clusters.shape:
        raise DefsentError(f"{len(labels)} labels for {len(clusters)} cluster assignments")
    if labels.size and (labels.min() < 0 or clusters.min() < 0):
        raise DefsentError("labels and clusters must be non-negative integers")
    size = (int(clusters.max(initial=-1)) + 1, int(labels.max(initial=-1)) + 1)
    counts = np.zeros(size, dtype=np.int64)
    np.add.at(counts, (clusters, labels), 1)
    return counts


def cluster_accuracy(labels: np.ndarray, clusters: np.ndarray) -> float:
    """Accuracy under the best one-to-one cluster -> label mapping (Hungarian algorithm), in [0, 1]."""
    from scipy.optimize import linear_sum_assignment

    counts = contingency(labels, clusters)
    if counts.size == 0:
        raise DefsentError("no items to score")
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / counts.sum())


def nmi(labels: np.ndarray, clusters: np.ndarray) -> float:
    """Normalised mutual information (scikit-learn, arithmetic mean normalisation), in [0, 1]."""
    from sklearn.metrics import normalized_mutual_info_score

    return float(normalized_mutual_info_score(labels, clusters))


def kmeans(vectors: np.ndarray, k: int, seed: int) -> np.ndarray:
    """One scikit-learn k-means run (k-means++ start, one initialisation) seeded with ``seed``."""
    from sklearn.cluster import KMeans

    if k > len(vectors):
        raise DefsentError(f"k = {k} clusters for only {len(vectors)} texts")
    return KMeans(n_clusters=k, random_state=seed, n_init=1).fit_predict(np.asarray(vectors, dtype=np.float64))


def score_clustering(vectors: np.ndarray, labels: np.ndarray, k: int, seeds: Sequence[int], on_done=None) -> dict:
    """k-means once per seed; accuracy and NMI x100 per run, their mean and sample sd."""
    runs = []
    for seed in seeds:
        clusters = kmeans(vectors, k, seed)
        runs.append(
            {"seed": int(seed), "acc": 100 * cluster_accuracy(labels, clusters), "nmi": 100 * nmi(labels, clusters)}
        )
        if on_done:
            on_done(1)
    acc, acc_sd = mean_sd([r["acc"] for r in runs])
    nmi_mean, nmi_sd = mean_sd([r["nmi"] for r in runs])
    return {
        "acc": number(acc, 2),
        "acc_sd": number(acc_sd, 2),
        "nmi": number(nmi_mean, 2),
        "nmi_sd": number(nmi_sd, 2),
        "runs": [{**r, "acc": number(r["acc"], 2), "nmi": number(r["nmi"], 2)} for r in runs],
    }


def evaluate_cluster(
    model: object,
    data_root: str | Path | None = None,
    tasks: str | Sequence[str] | Sequence[ClusterTask] | None = None,
    runs: int = DEFAULT_RUNS,
    pooling=None,
    post=None,
    limit: int | None = None,
    **settings,
) -> dict:
    """Clustering accuracy and NMI of an Encoder (or a loaded model with ``pooling`` and ``post``, or a
    ``texts -> vectors`` function) on the short-text clustering sets: the results JSON object.

    ``result["tasks"][name]["acc"]`` is the mean accuracy x100 over k-means seeds 0 .. runs-1,
    ``result["average"]["acc"]`` the mean over the tasks. With ``post`` and no fit file, each set's
    chain is fitted on that set's texts (the "target" setting).
    """
    if runs < 1:
        raise DefsentError("--runs must be at least 1")
    show_progress = settings.get("show_progress", getattr(model, "show_progress", None))
    encoder = as_encoder(model, pooling, post, **settings)
    started = time.perf_counter()
    if tasks and not isinstance(tasks, str) and all(isinstance(t, ClusterTask) for t in tasks):
        loaded = list(tasks)
    else:
        loaded = load_cluster_tasks(data_root, tasks, limit)
    root = loaded[0].path.parent.parent if loaded else None
    result = results_header("cluster", encoder.name, encoder.label, root, **encoder.describe())
    seeds = list(range(runs))
    result.update(
        {
            "kmeans": "scikit-learn KMeans(n_clusters=k, random_state=seed, n_init=1), k = number of labels",
            "seeds": seeds,
            "metrics": "acc = best one-to-one mapping (Hungarian, scipy linear_sum_assignment); "
            "nmi = sklearn normalized_mutual_info_score; x100, mean and sample sd over the seeds",
            "limit": limit,
            "batch_size": getattr(encoder, "batch_size", None),
            "max_length": getattr(encoder, "max_length", None),
            "tasks": {},
        }
    )
    warnings: list[str] = []
    for task in loaded:
        warnings.extend(task.warnings())
        begun = time.perf_counter()
        vectors = encode_unique(encoder, task.texts, f"{task.name} ({len(set(task.texts)):,} texts)")
        encoded = time.perf_counter()
        with make_progress("runs", show_progress) as progress:
            bar = progress.add_task(f"{task.name} k-means (k={task.k})", total=runs)
            scores = score_clustering(vectors, task.labels, task.k, seeds, lambda n, bar=bar: progress.advance(bar, n))
        result["tasks"][task.name] = {
            **scores,
            "n": len(task.texts),
            "expected_n": task.expected,
            "k": task.k,
            "file": str(task.path),
            "encode_seconds": round(encoded - begun, 2),
            "cluster_seconds": round(time.perf_counter() - encoded, 2),
        }
    values = result["tasks"].values()
    result["average"] = {
        "acc": number(mean_or_none([t["acc"] for t in values]), 2),
        "nmi": number(mean_or_none([t["nmi"] for t in values]), 2),
        "tasks": len(result["tasks"]),
    }
    result["warnings"] = warnings
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result
