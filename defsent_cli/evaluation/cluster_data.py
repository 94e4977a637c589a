"""Short-text clustering data (Stankevičius & Lukoševičius 2024, Sec. 3.5): the six sets of the
short-text clustering literature, one ``label<TAB>text`` item per line (UTF-8, LF or CRLF), in the
shared data folder's ``clustering/`` (docs/formats.md, "Clustering data").

A line without a TAB, with an empty label or an empty text is an error naming ``file:line``; blank
lines are skipped. Labels are kept as strings (any set of names or numbers) and numbered in order of
first appearance; the number of clusters k is the number of distinct labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..io import iter_lines
from .choices import CLUSTER_TASKS
from .common import find_data_folder, parse_names


def parse_cluster_tasks(tasks: str | Sequence[str] | None) -> list[str]:
    """Task names from ``--tasks`` (comma-separated or a list, any case); default: all six."""
    return parse_names(tasks, {name: name for name in CLUSTER_TASKS}, list(CLUSTER_TASKS), "clustering task")


@dataclass
class ClusterTask:
    """One clustering set: texts, integer labels (0..k-1, in order of first appearance) and their names."""

    name: str
    texts: list[str]
    labels: np.ndarray
    label_names: list[str]
    path: Path
    expected: int | None = None  # the known number of texts (None for unknown sets)

    @property
    def k(self) -> int:
        return len(self.label_names)

    def warnings(self) -> list[str]:
        if self.expected is not None and len(self.texts) != self.expected:
            return [
                f"{self.name}: {len(self.texts)} texts, expected {self.expected}; the file is incomplete or altered "
                "(or sampled with --limit), so the score is not comparable with published ones"
            ]
        return []


def read_cluster_file(path: Path, name: str) -> ClusterTask:
    """``label<TAB>text`` lines; a malformed line is a one-line error naming the file and line."""
    if not path.exists():
        raise DefsentError(f"{name}: file not found; check --data or leave {name} out with --tasks", path=path)
    texts, labels = [], []
    for number, line in iter_lines(path, "utf-8-sig"):
        if not line.strip():
            continue
        label, tab, text = line.partition("\t")
        label, text = label.strip(), " ".join(text.split())
        if not tab:
            raise DefsentError("expected 'label<TAB>text' (no TAB on this line)", path=path, line=number)
        if not label or not text:
            raise DefsentError(
                f"expected 'label<TAB>text' (empty {'label' if not label else 'text'})", path=path, line=number
            )
        texts.append(text)
        labels.append(label)
    if not texts:
        raise DefsentError(f"{name}: the file has no items", path=path)
    names = list(dict.fromkeys(labels))
    index = {label: i for i, label in enumerate(names)}
    if len(names) < 2:
        raise DefsentError(f"{name}: only one label in the file; clustering needs at least two classes", path=path)
    return ClusterTask(name, texts, np.asarray([index[x] for x in labels], dtype=np.int64), names, path)


def load_cluster_tasks(
    data: str | Path | None, tasks: str | Sequence[str] | None = None, limit: int | None = None, seed: int = 0
) -> list[ClusterTask]:
    """Load the named sets (default: all six) from ``clustering/`` under ``data`` or a parent of it;
    ``limit`` keeps a seeded random sample of that many texts per set (k stays the full set's)."""
    names = parse_cluster_tasks(tasks)
    folder = find_data_folder(data, "clustering", "clustering")
    loaded = []
    for name in names:
        relative, expected, _ = CLUSTER_TASKS[name]
        task = read_cluster_file(folder / relative, name)
        task.expected = expected
        if limit is not None and limit < len(task.texts):
            keep = np.sort(np.random.default_rng(seed).choice(len(task.texts), size=limit, replace=False))
            task.texts = [task.texts[i] for i in keep]
            task.labels = task.labels[keep]
        loaded.append(task)
    return loaded
