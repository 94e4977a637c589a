"""Unsupervised STS: STS12-16, STS-B and SICK-R on local files, scored like SimCSE / DefSent / DefSent+.

Score = Spearman (and Pearson) x100 between the cosine of the two sentence vectors and the gold score; no
regressor is trained (STS-B and SICK-R are the unsupervised, cosine variants SimCSE introduced).

STS12-16 aggregate their subsets as :mod:`.correlations` says (``all`` by default, as the papers).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..formats.results import number, results_header
from .choices import AGGREGATION_HELP, AGGREGATIONS, BACKENDS
from .common import as_encoder, encode_unique, mean_or_none, resolve_data_root
from .correlations import aggregate, correlations, cosine_pairs
from .sts_data import STS_YEARS, STSTask, load_sts_tasks, task_sentences


def score_task_native(
    task: STSTask, encoder, known: dict[str, np.ndarray] | None = None
) -> tuple[list[tuple[float, float, int]], dict[str, dict[str, float]]]:
    """Encode a task's distinct sentences in one call (or look them up in ``known``, text -> vector);
    per-subset correlations and the three aggregations."""
    texts = task_sentences(task)
    if known is not None:
        vectors = np.stack([known[text] for text in texts]) if texts else np.zeros((0, 0), dtype=np.float32)
    else:
        vectors = encode_unique(encoder, texts, f"{task.name} ({len(set(texts)):,} sentences)")
    parts, offset = [], 0
    for sub in task.subsets:
        n = len(sub)
        a, b = vectors[offset : offset + n], vectors[offset + n : offset + 2 * n]
        offset += 2 * n
        parts.append((cosine_pairs(a, b), sub.gold))
    return [(*correlations(p, g), len(g)) for p, g in parts], aggregate(parts)


def check_options(aggregation: str, backend: str) -> None:
    """Validate the settings before anything slow runs."""
    if aggregation not in AGGREGATIONS:
        raise DefsentError(f"unknown aggregation {aggregation!r}; choose from {', '.join(AGGREGATIONS)}")
    if backend not in BACKENDS:
        raise DefsentError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if backend == "mteb":
        from .mteb import require_mteb

        require_mteb()


def _task_entry(task: STSTask, chosen: dict, aggregates: dict, per: list) -> dict:
    """One task's entry of the results: its score under the aggregation (``chosen``), its size and files; a year's
    task (STS12-16) also each aggregation's score and each subset's."""
    entry = {
        "spearman": number(chosen["spearman"]),
        "pearson": number(chosen["pearson"]),
        "n": task.n,
        "expected_n": task.expected,
        "complete": not task.missing and (task.expected is None or task.n + task.excluded == task.expected),
        "excluded": task.excluded,
        "split": task.split,
        "files": task.files,
        "folder": str(task.folder),
    }
    if task.name in STS_YEARS:
        entry["aggregates"] = {
            key: {"spearman": number(v["spearman"]), "pearson": number(v["pearson"])} for key, v in aggregates.items()
        }
        entry["subsets"] = {
            sub.name: {"spearman": number(s), "pearson": number(p), "n": n}
            for sub, (s, p, n) in zip(task.subsets, per, strict=True)
        }
        entry["missing_subsets"] = list(task.missing)
    return entry


def evaluate_sts(
    model: object,
    data_root: str | Path | None = None,
    tasks: str | Sequence[str] | Sequence[STSTask] | None = None,
    split: str = "test",
    aggregation: str = "all",
    pooling=None,
    post=None,
    layout: str = "auto",
    backend: str = "native",
    whole: Sequence[STSTask] | None = None,
    **settings,
) -> dict:
    """Evaluate an Encoder (or a loaded model with ``pooling`` and ``post``, or any ``texts -> vectors``
    function) on STS; returns the results JSON object.

    ``result["tasks"][name]["spearman"]`` is the task's score under ``aggregation``;
    ``result["average"]["spearman"]`` is the mean over the tasks (None if one is missing). Pass
    already loaded :class:`STSTask` objects as ``tasks`` to evaluate several models on the same data.
    ``whole``: the same tasks with every pair, when ``tasks`` had some left out (``eval-sts --exclude-pairs``):
    they are scored too, from the same vectors (each sentence encoded once), under ``result["all_pairs"]``
    (``tasks``: name -> spearman, pearson, n; ``average``).
    ``settings`` (batch_size, max_length, show_progress) apply to a loaded model.
    """
    check_options(aggregation, backend)
    encoder = as_encoder(model, pooling, post, **settings)
    if encoder.post and backend == "mteb":
        raise DefsentError("--post runs with --backend native (mteb's evaluator sees only the encoder)")
    weighting = getattr(getattr(encoder, "pooling", None), "weighting", None)
    if backend == "mteb" and getattr(weighting, "kind", None) == "idf" and not weighting.fitted:
        raise DefsentError("--weighting idf with --backend mteb needs --idf-corpus (mteb encodes each side apart)")
    started = time.perf_counter()
    if tasks and all(isinstance(t, STSTask) for t in tasks):
        loaded_tasks = list(tasks)
        root = resolve_data_root(data_root) if data_root is not None else loaded_tasks[0].root
        split = "/".join(dict.fromkeys(t.split for t in loaded_tasks))
    else:
        root = resolve_data_root(data_root)
        loaded_tasks = load_sts_tasks(root, tasks, split, layout)
    result = results_header("sts", encoder.name, encoder.label, root, **encoder.describe())
    result.update(
        {
            "split": split,
            "aggregation": aggregation,
            "aggregation_meaning": AGGREGATION_HELP[aggregation],
            "similarity": "cosine",
            "backend": backend,
            "layout": layout,
            "batch_size": getattr(encoder, "batch_size", None),
            "max_length": getattr(encoder, "max_length", None),
            "tasks": {},
        }
    )
    twins = {task.name: task for task in whole or ()}
    everything: dict[str, dict] = {}
    warnings: list[str] = []

    def scored(task: STSTask, known: dict[str, np.ndarray] | None = None) -> tuple[list, dict, dict]:
        if backend == "mteb":
            from .mteb import score_task_mteb

            per, aggregates = score_task_mteb(task, encoder)
        else:
            per, aggregates = score_task_native(task, encoder, known)
        return per, aggregates, aggregates[aggregation] if len(task.subsets) > 1 else aggregates["all"]

    for task in loaded_tasks:
        warnings.extend(task.warnings())
        known = None
        twin = twins.get(task.name)
        if twin is not None:
            if backend != "mteb":  # every sentence of the task once, for both scorings
                texts = list(dict.fromkeys(task_sentences(twin)))
                vectors = encode_unique(encoder, texts, f"{task.name} ({len(texts):,} sentences)")
                known = dict(zip(texts, vectors, strict=True))
            _, _, all_chosen = scored(twin, known)
            everything[task.name] = {
                "spearman": number(all_chosen["spearman"]),
                "pearson": number(all_chosen["pearson"]),
                "n": twin.n,
            }
        per, aggregates, chosen = scored(task, known)
        result["tasks"][task.name] = _task_entry(task, chosen, aggregates, per)
    scores = result["tasks"].values()
    result["average"] = {
        "spearman": number(mean_or_none([t["spearman"] for t in scores])),
        "pearson": number(mean_or_none([t["pearson"] for t in scores])),
        "tasks": len(result["tasks"]),
    }
    if whole is not None:
        result["all_pairs"] = {
            "tasks": everything,
            "average": {
                "spearman": number(mean_or_none([t["spearman"] for t in everything.values()])),
                "pearson": number(mean_or_none([t["pearson"] for t in everything.values()])),
                "tasks": len(everything),
            },
        }
    result["warnings"] = warnings
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result
