"""Unsupervised STS: STS12-16, STS-B and SICK-R on local files, scored like SimCSE / DefSent / DefSent+.

Score = Spearman (and Pearson) x100 between the cosine of the two sentence vectors and the gold score; no
regressor is trained (STS-B and SICK-R are the unsupervised, cosine variants SimCSE introduced).

STS12-16 aggregate their subsets as :mod:`.correlations` says (``all`` by default, as the papers).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import DefsentError
from ..formats.results import number, results_header
from .choices import AGGREGATION_HELP, AGGREGATIONS, BACKENDS
from .common import as_encoder, encode_unique, mean_or_none, resolve_data_root
from .correlations import aggregate, correlations, cosine_pairs
from .sts_data import STS_YEARS, STSTask, load_sts_tasks, task_sentences


def score_task_native(task: STSTask, encoder) -> tuple[list[tuple[float, float, int]], dict[str, dict[str, float]]]:
    """Encode a task's distinct sentences in one call; per-subset correlations and the three aggregations."""
    texts = task_sentences(task)
    distinct = len(set(texts))
    vectors = encode_unique(encoder, texts, f"{task.name} ({distinct:,} sentences)")
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
    **settings,
) -> dict:
    """Evaluate an Encoder (or a loaded model with ``pooling`` and ``post``, or any ``texts -> vectors``
    function) on STS; returns the results JSON object.

    ``result["tasks"][name]["spearman"]`` is the task's score under ``aggregation``;
    ``result["average"]["spearman"]`` is the mean over the tasks (None if one is missing). Pass
    already loaded :class:`STSTask` objects as ``tasks`` to evaluate several models on the same data.
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
    warnings: list[str] = []
    for task in loaded_tasks:
        warnings.extend(task.warnings())
        if backend == "mteb":
            from .mteb import score_task_mteb

            per, aggregates = score_task_mteb(task, encoder)
        else:
            per, aggregates = score_task_native(task, encoder)
        chosen = aggregates[aggregation] if len(task.subsets) > 1 else aggregates["all"]
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
                key: {"spearman": number(v["spearman"]), "pearson": number(v["pearson"])}
                for key, v in aggregates.items()
            }
            entry["subsets"] = {
                sub.name: {"spearman": number(s), "pearson": number(p), "n": n}
                for sub, (s, p, n) in zip(task.subsets, per, strict=True)
            }
            entry["missing_subsets"] = list(task.missing)
        result["tasks"][task.name] = entry
    scores = result["tasks"].values()
    result["average"] = {
        "spearman": number(mean_or_none([t["spearman"] for t in scores])),
        "pearson": number(mean_or_none([t["pearson"] for t in scores])),
        "tasks": len(result["tasks"]),
    }
    result["warnings"] = warnings
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result
