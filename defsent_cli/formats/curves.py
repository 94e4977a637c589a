"""The loss and dev curves of training runs, read back from their folders (``defsent plot`` draws them).

A run folder is a checkpoint written by ``train``, ``tsdae``, ``simcse``, ``train-pairs`` or ``teacher``
(``train_log.jsonl`` beside ``defsent.json``), or the ``OUTPUT.partial/`` folder of a run still going
(``log.jsonl``; docs/formats.md, "Training state"). The log holds two kinds of rows (training/loop.py):

- a loss row every ``--log-every`` steps: ``{"step", "definitions", "loss", "lr", "elapsed"}``;
- a dev row at every ``--eval-every`` (step 0 is the untrained model): ``{"step", "eval": {criterion: score}}``.

``defsent.json`` records the same curves, ``loss_curve`` ([step, loss] pairs) and ``eval_curve``
([step, score] pairs, with ``eval_on`` and ``kept_step``). The loss is taken from the log (from
``loss_curve`` when a folder has no log); the dev curve from ``eval_curve`` where there is one, since a
resumed run's log keeps only the loss rows of its saved state (training/run.py), while the state carried the
whole dev curve on. Plain data, no numpy: nothing here prints or draws.
"""

from __future__ import annotations

import glob
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DefsentError
from ..log import warn
from .checkpoint import INFO_FILE, read_info

LOG_FILE = "train_log.jsonl"  # in a checkpoint
PARTIAL_LOG_FILE = "log.jsonl"  # in OUTPUT.partial/, while the run goes on
_GLOB = set("*?[")

Point = tuple[int, float]


@dataclass
class RunCurves:
    """One run's curves: ``loss`` and ``dev`` as (step, value) pairs in step order."""

    name: str  # the label: the folder's name (with its parents where two runs share one)
    path: Path
    loss: list[Point] = field(default_factory=list)
    dev: list[Point] = field(default_factory=list)
    eval_on: str | None = None  # the dev criterion (dev, stsb-dev, dict-dev, ...)
    kept_step: int | None = None  # the step whose weights the checkpoint holds (None: a run still going)
    not_finite: int = 0  # the logged losses that are NaN or infinite (not drawn): a run that diverged
    diverged_at: int | None = None  # the step of the first of them
    logged: int = 0  # every loss logged, finite or not


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """The trailing moving average: point i is the mean of points max(0, i - window + 1) .. i (fewer at the
    start), so the curve keeps its length and no point looks ahead; ``window`` 1 returns the values."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def _natural(text: str) -> list:
    """Sort key: seed-2 before seed-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def expand_runs(patterns: Iterable[str | Path]) -> list[Path]:
    """The run folders named: each path as given, a quoted glob (``'step1/seed-*'``) expanded to the folders
    it matches (files beside them, such as results JSON, are passed over), in natural order, each once."""
    paths: list[Path] = []
    for pattern in patterns:
        path = Path(pattern)
        text = str(pattern)
        if not path.exists() and _GLOB & set(text):
            matches = [Path(m) for m in sorted(glob.glob(text), key=_natural) if Path(m).is_dir()]
            if not matches:
                raise DefsentError("no run folder matches this pattern", path=text)
            paths.extend(matches)
        else:
            paths.append(path)
    if not paths:
        raise DefsentError("no run given: name a run folder (a checkpoint or its .partial/ folder)")
    return list(dict.fromkeys(paths))


def _number(value, what: str, path: Path, line: int | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DefsentError(f"{what} is {json.dumps(value)}, not a number", path=path, line=line)
    return float(value)


def _step(value, path: Path, line: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DefsentError(f"step is {json.dumps(value)}, not a whole number >= 0", path=path, line=line)
    return value


def read_log(path: str | Path) -> tuple[list[Point], list[Point], str | None]:
    """A training log's (loss points, dev points, dev criterion), each in the order written.

    Every line must be a JSON object with a ``step``; a loss row has a number ``loss``, a dev row an ``eval``
    object of one criterion and its score; rows of any other kind are passed over. A last line without its
    newline that does not parse is a row still being written (a run going on): skipped with a warning.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DefsentError(f"not valid utf-8 ({exc.reason} at byte {exc.start})", path=path) from None
    lines = text.split("\n")
    loss: list[Point] = []
    dev: list[Point] = []
    eval_on: str | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # no newline after it: the writer has not finished this row
                warn(f"{path}:{number}: an unfinished last row was skipped (is the run still writing it?)")
                continue
            message = f"invalid JSON ({exc.msg}); a training log holds one JSON object a line"
            raise DefsentError(message, path=path, line=number) from None
        if not isinstance(row, dict):
            raise DefsentError(f"expected a JSON object, found {type(row).__name__}", path=path, line=number)
        if "step" not in row:
            raise DefsentError("a log row without a step", path=path, line=number)
        step = _step(row["step"], path, number)
        if "loss" in row:
            loss.append((step, _number(row["loss"], "loss", path, number)))
        if "eval" in row:
            scores = row["eval"]
            if not isinstance(scores, dict) or len(scores) != 1:
                raise DefsentError("eval must be an object of one criterion and its score", path=path, line=number)
            [(name, score)] = scores.items()
            dev.append((step, _number(score, f"the {name} score", path, number)))
            eval_on = eval_on or name
    return loss, dev, eval_on


def _pairs(info: dict, key: str, path: Path) -> list[Point]:
    """``defsent.json``'s [[step, value], ...] list under ``key`` ([] where there is none)."""
    value = info.get(key)
    if value is None:
        return []
    ok = isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value)
    if not ok:
        raise DefsentError(f"{key} is not a list of [step, value] pairs", path=path)
    return [(_step(step, path), _number(v, key, path)) for step, v in value]


def _finite(points: list[Point]) -> list[Point]:
    return [(step, value) for step, value in points if math.isfinite(value)]


def read_run(folder: str | Path) -> RunCurves:
    """The curves of one run folder: a checkpoint, or the ``OUTPUT.partial/`` of a run going on (a checkpoint
    named that is not written yet is looked for there)."""
    folder = Path(folder)
    if not folder.exists():
        partial = folder.with_name(folder.name + ".partial")
        if folder.name and partial.is_dir():
            folder = partial  # the run is still going: its log so far
        else:
            raise DefsentError("no such run folder", path=folder)
    if not folder.is_dir():
        raise DefsentError("not a folder: give a run folder (a checkpoint or its .partial/ folder)", path=folder)
    log = next((folder / name for name in (LOG_FILE, PARTIAL_LOG_FILE) if (folder / name).is_file()), None)
    info_path = folder / INFO_FILE
    if log is None and not info_path.is_file():
        raise DefsentError(
            f"not a training run: no {LOG_FILE} or {INFO_FILE} here (nor the {PARTIAL_LOG_FILE} of a .partial/ folder)",
            path=folder,
        )
    info = read_info(folder)
    loss, dev, eval_on = read_log(log) if log is not None else ([], [], None)
    if not loss:
        loss = _pairs(info, "loss_curve", info_path)
    recorded = _pairs(info, "eval_curve", info_path)
    if recorded:
        dev, eval_on = recorded, info.get("eval_on") or eval_on
    if not loss and not dev:
        where = log if log is not None else info_path
        raise DefsentError("records no loss or dev score yet: nothing to draw", path=where)
    kept = info.get("kept_step")
    bad = sorted(step for step, value in loss if not math.isfinite(value))
    return RunCurves(
        name=folder.name,
        path=folder,
        loss=sorted(_finite(loss)),
        dev=sorted(_finite(dev)),
        eval_on=eval_on,
        kept_step=kept if isinstance(kept, int) and not isinstance(kept, bool) else None,
        not_finite=len(bad),
        diverged_at=bad[0] if bad else None,
        logged=len(loss),
    )


def check_diverged(runs: Sequence[RunCurves]) -> None:
    """A run whose loss became NaN or infinite diverged, and its curve stops there (or is not drawn at all): a
    warning naming it and the step, so a picture never hides it; an error when no run leaves anything to draw."""
    diverged = [run for run in runs if run.not_finite]
    if not diverged:
        return
    if not any(run.loss or run.dev for run in runs):
        what = "every logged loss" if len(diverged) == len(runs) else "the logged losses"
        names = ", ".join(str(run.path) for run in diverged)
        raise DefsentError(
            f"{what} of {names} {'is' if len(diverged) == 1 else 'are'} NaN or infinite: the run diverged "
            f"(from step {min(run.diverged_at for run in diverged)}) and there is nothing to draw; "
            "train again with a lower --lr"
        )
    for run in diverged:
        finite = run.logged - run.not_finite
        shown = f"only its {finite} finite ones are drawn" if finite else "its loss curve is not drawn"
        warn(
            f"{run.path}: the run diverged: {run.not_finite} of its {run.logged} logged losses are NaN or infinite, "
            f"from step {run.diverged_at}; {shown} (train again with a lower --lr)"
        )


def _labels(paths: Sequence[Path]) -> list[str]:
    """Each run's folder name, with as many parent folders as it takes to tell runs of one name apart."""
    parts = [p.resolve().parts for p in paths]
    labels = [p.name or str(p) for p in paths]
    depth = 1
    while len(set(labels)) < len(labels) and depth < max(len(p) for p in parts):
        depth += 1
        labels = [
            str(Path(*p[-depth:])) if labels.count(label) > 1 else label for p, label in zip(parts, labels, strict=True)
        ]
    return labels


def read_runs(patterns: Iterable[str | Path]) -> list[RunCurves]:
    """Every run named (quoted globs expanded, :func:`expand_runs`), read by :func:`read_run`, labelled."""
    runs = [read_run(path) for path in expand_runs(patterns)]
    for run, label in zip(runs, _labels([run.path for run in runs]), strict=True):
        run.name = label
    return runs
