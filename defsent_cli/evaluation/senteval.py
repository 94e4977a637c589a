"""SentEval transfer tasks with SentEval's own classifier protocols: MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC,
and SST-5, SICK-E, SciCite, STS-B-5, SICK-R-5 (Stankevičius & Lukoševičius 2024's twelve).

Features come from the frozen encoder; SentEval's linear classifier (:mod:`.linear_probe`) is trained
on top, with the L2 weight chosen from ``10^-5 .. 10^-2`` by each task's protocol.

Protocols (``senteval/tools/validation.py``):

- MR, CR, SUBJ, MPQA: ``InnerKFoldClassifier``: outer stratified k-fold; in each outer training part an
  inner k-fold picks the L2 value; refit with a 5% validation split; test accuracy averaged over folds.
- TREC, MRPC: ``KFoldClassifier``: k-fold on train picks the L2 value; refit on all of train (5%
  validation split); accuracy (and F1 for MRPC) on test.
- SST-2, SST-5, SICK-E, SciCite: ``SplitClassifier``: train / dev picks the L2 value; accuracy on test.
- STS-B-5, SICK-R-5: SentEval's ``STSBenchmarkEval`` / ``SICKRelatednessEval`` (``RelatednessPytorch``):
  the gold score becomes a soft distribution over 5 classes (``linear_probe.soft_targets``: 3.6 -> 0.4
  on class 3, 0.6 on class 4), a softmax classifier is trained on it with MSE (Adam, no L2, 50 passes
  between checks, early stop on the dev Pearson of the expected score sum_k k p_k); reported as SentEval
  reports them: Pearson (the headline ``score``) and Spearman x100 of the expected score against the
  test gold scores, and the MSE. Not an accuracy: they are left out of ``average.acc`` and counted in
  ``average.score`` (the mean of every task's headline: accuracy, or Pearson for these two).

Pair tasks (MRPC, SICK-E, STS-B-5, SICK-R-5) use SentEval's pair features ``[|u-v|, u*v]``
(``--mrpc-features concat``: ``[u, v, |u-v|, u*v]``).

Configs as SentEval's README defines them: ``default`` (kfold 10, adam, batch 64, tenacity 5, epoch_size 4;
the papers' tables) and ``prototyping`` (kfold 5, rmsprop, batch 128, tenacity 3, epoch_size 2).
Data: :mod:`.senteval_data`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..console import make_progress
from ..errors import DefsentError
from ..formats.results import number, results_header
from .choices import MRPC_FEATURES
from .common import as_encoder, encode_unique, mean_or_none, resolve_data_root
from .linear_probe import (
    ADAM,
    L2_GRID,
    RELATEDNESS,
    RMSPROP,
    VALIDATION_SPLIT,
    ClassifierConfig,
    Job,
    fit_linear,
    get_config,
    soft_targets,
)
from .senteval_data import TransferTask, load_transfer_tasks

# --------------------------------------------------------------------------- protocols


def _stratified(n_splits: int, seed: int, X: np.ndarray, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedKFold

    counts = np.bincount(y)
    if counts[counts > 0].min() < n_splits:
        raise DefsentError(f"too few samples of a class for {n_splits}-fold cross-validation")
    return list(StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(X, y))


def inner_kfold_jobs(
    X: np.ndarray, y: np.ndarray, config: ClassifierConfig, seed: int = 1111, grid: Sequence[float] = L2_GRID
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[Job]]:
    """The outer folds of SentEval's ``InnerKFoldClassifier`` and its grid fits in SentEval's order: per outer
    fold, per L2 value, per inner fold (train on the inner training part, dev on the inner test part)."""
    outer = _stratified(config.kfold, seed, X, y)
    jobs = []
    for train, _ in outer:
        inner = _stratified(config.kfold, seed, X[train], y[train])
        for reg in grid:
            jobs.extend(Job(train[inner_train], reg, dev=train[inner_test]) for inner_train, inner_test in inner)
    return outer, jobs


def inner_kfold(
    X: np.ndarray,
    y: np.ndarray,
    nclasses: int,
    config: ClassifierConfig,
    seed: int = 1111,
    grid: Sequence[float] = L2_GRID,
    on_done: Callable[[int], None] | None = None,
) -> dict:
    """SentEval ``InnerKFoldClassifier`` (MR, CR, SUBJ, MPQA): dev and test accuracy x100."""
    outer, jobs = inner_kfold_jobs(X, y, config, seed, grid)
    fits = fit_linear(X, y, jobs, nclasses, config, seed, on_done=on_done)
    inner_acc = np.asarray([f.dev_accuracy for f in fits]).reshape(len(outer), len(grid), config.kfold)
    scores = np.round(100 * inner_acc.mean(axis=2), 2)  # SentEval: round(100 * np.mean(regscores), 2)
    chosen = [grid[int(np.argmax(row))] for row in scores]
    finals = fit_linear(
        X,
        y,
        [Job(train, reg) for (train, _), reg in zip(outer, chosen, strict=True)],
        nclasses,
        config,
        seed,
        on_done=on_done,
    )
    tests = [round(100 * fit.score(X[test], y[test]), 2) for fit, (_, test) in zip(finals, outer, strict=True)]
    return {
        "devacc": round(float(np.mean(scores.max(axis=1))), 2),
        "acc": round(float(np.mean(tests)), 2),
        "l2reg": chosen,
        "fits": len(jobs) + len(finals),
    }


def kfold(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    nclasses: int,
    config: ClassifierConfig,
    seed: int = 1111,
    grid: Sequence[float] = L2_GRID,
    on_done: Callable[[int], None] | None = None,
) -> dict:
    """SentEval ``KFoldClassifier`` (TREC, MRPC): CV accuracy on train picks L2; test accuracy and predictions."""
    folds = _stratified(config.kfold, seed, X_train, y_train)
    jobs = [Job(train, reg, dev=test) for reg in grid for train, test in folds]
    fits = fit_linear(X_train, y_train, jobs, nclasses, config, seed, on_done=on_done)
    acc = np.asarray([f.dev_accuracy for f in fits]).reshape(len(grid), len(folds))
    scores = np.round(100 * acc.mean(axis=1), 2)
    reg = grid[int(np.argmax(scores))]
    (final,) = fit_linear(
        X_train, y_train, [Job(np.arange(len(y_train)), reg)], nclasses, config, seed, on_done=on_done
    )
    yhat = final.predict(X_test)
    return {
        "devacc": float(scores.max()),
        "acc": round(100 * float(np.mean(yhat == y_test)), 2),
        "yhat": yhat,
        "l2reg": reg,
        "fits": len(jobs) + 1,
    }


def split_classifier(
    X: dict[str, np.ndarray],
    y: dict[str, np.ndarray],
    nclasses: int,
    config: ClassifierConfig,
    seed: int = 1111,
    grid: Sequence[float] = L2_GRID,
    on_done: Callable[[int], None] | None = None,
) -> dict:
    """SentEval ``SplitClassifier`` (SST-2): dev accuracy picks L2; test accuracy of that fit.

    SentEval refits with the chosen L2 and the same seed, which reproduces the grid's fit exactly, so
    the grid's fit is reused.
    """
    n_train = len(y["train"])
    X_all = np.concatenate([X["train"], X["dev"]])
    y_all = np.concatenate([y["train"], y["dev"]])
    dev = np.arange(n_train, len(y_all))
    fits = fit_linear(
        X_all, y_all, [Job(np.arange(n_train), reg, dev=dev) for reg in grid], nclasses, config, seed, on_done=on_done
    )
    scores = [round(100 * f.dev_accuracy, 2) for f in fits]
    best = int(np.argmax(scores))
    return {
        "devacc": float(scores[best]),
        "acc": round(100 * fits[best].score(X["test"], y["test"]), 2),
        "l2reg": grid[best],
        "fits": len(fits),
    }


def relatedness(
    X: dict[str, np.ndarray], scores: dict[str, np.ndarray], seed: int = 1111, config: ClassifierConfig = RELATEDNESS
) -> dict:
    """SentEval ``RelatednessPytorch``: soft 5-class targets, softmax + MSE, early stop on dev Pearson of
    the expected score; Pearson, Spearman (x100) and MSE of the expected score on test."""
    from scipy.stats import pearsonr, spearmanr

    n_train = len(scores["train"])
    X_all = np.concatenate([X["train"], X["dev"]])
    gold = np.concatenate([scores["train"], scores["dev"]])
    classes = np.arange(1, 6, dtype=np.float64)

    def dev_pearson(probs: np.ndarray, rows: np.ndarray) -> float:
        return _correlation(pearsonr, probs @ classes, gold[rows])

    (fit,) = fit_linear(
        X_all,
        None,
        [Job(np.arange(n_train), 0.0, dev=np.arange(n_train, len(gold)))],
        5,
        config,
        seed,
        targets=soft_targets(gold),
        loss="mse",
        dev_score=dev_pearson,
    )
    yhat = fit.proba(X["test"]).astype(np.float64) @ classes
    test = np.asarray(scores["test"], dtype=np.float64)
    return {
        "pearson": round(100 * _correlation(pearsonr, yhat, test), 2),
        "spearman": round(100 * _correlation(spearmanr, yhat, test), 2),
        "mse": round(float(np.mean((yhat - test) ** 2)), 4),
        "devpearson": round(100 * fit.dev_accuracy, 2),
        "epochs": fit.epochs,
        "fits": 1,
    }


def _correlation(fn, a: np.ndarray, b: np.ndarray) -> float:
    """SentEval's ``pr = 0 if pr != pr else pr``: a constant prediction scores 0, not NaN."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(fn(a, b)[0])
    return 0.0 if value != value else value


def check_options(config: str | ClassifierConfig, mrpc_features: str) -> ClassifierConfig:
    """Validate the settings before anything slow runs; returns the classifier config."""
    cfg = get_config(config)
    if mrpc_features not in MRPC_FEATURES:
        raise DefsentError(f"unknown MRPC features {mrpc_features!r}; choose from {', '.join(MRPC_FEATURES)}")
    return cfg


def _planned_fits(task: TransferTask, config: ClassifierConfig, grid: Sequence[float]) -> int:
    k = config.kfold
    if task.protocol == "inner-kfold":
        return k * len(grid) * k + k
    if task.protocol == "kfold":
        return len(grid) * k + 1
    if task.protocol == "relatedness":
        return 1
    return len(grid)


def mrpc_pair_features(a: np.ndarray, b: np.ndarray, kind: str = "senteval") -> np.ndarray:
    """SentEval's pair features (MRPC, SICK-E, relatedness) ``[|u-v|, u*v]``, or ``concat`` =
    ``[u, v, |u-v|, u*v]`` (SNLI-style)."""
    if kind == "senteval":
        return np.concatenate([np.abs(a - b), a * b], axis=1)
    if kind == "concat":
        return np.concatenate([a, b, np.abs(a - b), a * b], axis=1)
    raise DefsentError(f"unknown MRPC features {kind!r}; choose from {', '.join(MRPC_FEATURES)}")


def run_transfer_task(
    task: TransferTask,
    encoder,
    config: ClassifierConfig,
    seed: int = 1111,
    mrpc_features: str = "senteval",
    show_progress: bool | None = None,
    grid: Sequence[float] = L2_GRID,
) -> dict:
    """Features from the frozen encoder (each distinct text once), then the task's SentEval protocol."""
    started = time.perf_counter()
    texts = task.texts()
    vectors = encode_unique(encoder, texts, f"{task.name} ({len(set(texts)):,} sentences)")
    features: dict[str, np.ndarray] = {}
    offset = 0
    for part, (part_texts, _) in task.parts.items():
        if isinstance(part_texts, tuple):
            n = len(part_texts[0])
            a, b = vectors[offset : offset + n], vectors[offset + n : offset + 2 * n]
            features[part] = mrpc_pair_features(a, b, mrpc_features)
            offset += 2 * n
        else:
            features[part] = vectors[offset : offset + len(part_texts)]
            offset += len(part_texts)
    labels = {part: y for part, (_, y) in task.parts.items()}
    encoded = time.perf_counter()
    with make_progress("fits", show_progress) as progress:
        bar = progress.add_task(f"{task.name} classifiers", total=_planned_fits(task, config, grid))

        def done(n: int) -> None:
            progress.advance(bar, n)

        if task.protocol == "inner-kfold":
            out = inner_kfold(features["all"], labels["all"], task.nclasses, config, seed, grid, done)
            n_dev = n_test = len(labels["all"])
        elif task.protocol == "kfold":
            out = kfold(
                features["train"],
                labels["train"],
                features["test"],
                labels["test"],
                task.nclasses,
                config,
                seed,
                grid,
                done,
            )
            n_dev, n_test = len(labels["train"]), len(labels["test"])
            yhat = out.pop("yhat")
            if task.name == "MRPC":
                from sklearn.metrics import f1_score

                out["f1"] = round(100 * float(f1_score(labels["test"], yhat)), 2)
        elif task.protocol == "relatedness":
            out = relatedness(features, labels, seed)
            done(1)
            n_dev, n_test = len(labels["dev"]), len(labels["test"])
        else:
            out = split_classifier(features, labels, task.nclasses, config, seed, grid, done)
            n_dev, n_test = len(labels["dev"]), len(labels["test"])
    out.update(
        {
            "ndev": n_dev,
            "ntest": n_test,
            "protocol": task.protocol,
            "features_dim": int(next(iter(features.values())).shape[1]),
            "encode_seconds": round(encoded - started, 2),
            "classifier_seconds": round(time.perf_counter() - encoded, 2),
        }
    )
    return out


def evaluate_senteval(
    model: object,
    data_root: str | Path | None = None,
    tasks: str | Sequence[str] | Sequence[TransferTask] | None = None,
    config: str | ClassifierConfig = "default",
    seed: int = 1111,
    pooling=None,
    post=None,
    mrpc_features: str = "senteval",
    **settings,
) -> dict:
    """SentEval transfer accuracies of an Encoder (or a loaded model with ``pooling`` and ``post``, or a
    ``texts -> vectors`` function): the results JSON object.

    ``result["tasks"][name]["acc"]`` is the test accuracy x100, ``result["average"]["acc"]`` their mean.
    ``settings`` (batch_size, max_length, show_progress) apply to a loaded model.
    """
    cfg = check_options(config, mrpc_features)
    show_progress = settings.get("show_progress", getattr(model, "show_progress", None))
    encoder = as_encoder(model, pooling, post, **settings)
    started = time.perf_counter()
    if tasks and not isinstance(tasks, str) and all(isinstance(t, TransferTask) for t in tasks):
        loaded = list(tasks)
        root = resolve_data_root(data_root) if data_root is not None else loaded[0].root
    else:
        root = resolve_data_root(data_root)
        loaded = load_transfer_tasks(root, tasks)
    result = results_header("senteval", encoder.name, encoder.label, root, **encoder.describe())
    result.update(
        {
            "config": cfg.name,
            "seed": seed,
            "classifier": {
                **asdict(cfg),
                "model": "logistic regression: SentEval MLP nhid=0 (torch nn.Linear + cross-entropy)",
                "l2_grid": list(L2_GRID),
                "validation_split": VALIDATION_SPLIT,
                "optimizer_defaults": ADAM if cfg.optim == "adam" else RMSPROP,
            },
            "mrpc_features": "[|u-v|, u*v]" if mrpc_features == "senteval" else "[u, v, |u-v|, u*v]",
            "batch_size": getattr(encoder, "batch_size", None),
            "max_length": getattr(encoder, "max_length", None),
            "tasks": {},
        }
    )
    if any(task.protocol == "relatedness" for task in loaded):
        result["relatedness"] = {
            "targets": "SentEval encode_labels: score s -> s - floor(s) on class floor(s)+1, floor(s)+1 - s on "
            "class floor(s) (classes 1-5; a score below 1 keeps only s on class 1)",
            "classifier": "SentEval RelatednessPytorch: nn.Linear + softmax, MSE, Adam, l2 0, batch 64, "
            "50 passes per check, early stop on dev Pearson (tenacity 3), max 1000 passes",
            "score": "Pearson x100 of the expected score sum_k k p_k vs test gold (spearman also given)",
        }
    for task in loaded:
        out = run_transfer_task(task, encoder, cfg, seed, mrpc_features, show_progress)
        if task.protocol == "relatedness":
            head = {"score": number(out["pearson"], 2), "pearson": out.pop("pearson"), "spearman": out.pop("spearman")}
        else:
            head = {"acc": number(out["acc"], 2), "devacc": number(out["devacc"], 2), "score": number(out["acc"], 2)}
            head.update({"f1": out["f1"]} if "f1" in out else {})
        result["tasks"][task.name] = {
            **head,
            **{k: v for k, v in out.items() if k not in ("acc", "devacc", "f1")},
            "folder": str(task.folder),
        }
    classified = [t for t in result["tasks"].values() if t["protocol"] != "relatedness"]
    result["average"] = {
        "acc": number(mean_or_none([t["acc"] for t in classified]), 2) if classified else None,
        "score": number(mean_or_none([t["score"] for t in result["tasks"].values()]), 2),
        "tasks": len(result["tasks"]),
    }
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result
