"""STS data on local files: STS12-16 (SentEval layout or the original SemEval names), STS-B and SICK-R.

STS12-16 have several subsets per year. Files: the SentEval layout (``STS.input.<subset>.txt`` +
``STS.gs.<subset>.txt``, Moses-tokenised and lowercased by SentEval's script) and the original SemEval
names (``STS2016.input.<subset>.txt`` or ``.ascii``, with ``STS2016.gs.<subset>.txt``), detected per
folder. A gold line that is empty marks an unscored pair, which is skipped. Whitespace inside sentences
is normalised as SentEval's ``split()`` does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..io import iter_lines
from .choices import LAYOUTS, STS_SPLITS
from .common import resolve_data_root, task_folder

STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
STS_TASKS = (*STS_YEARS, "STS-B", "SICK-R")

# SentEval's subsets per year (STS13 without SMT, which is not distributed) and their scored pairs.
YEAR_SUBSETS: dict[str, dict[str, int]] = {
    "STS12": {"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 459, "surprise.OnWN": 750, "surprise.SMTnews": 399},
    "STS13": {"FNWN": 189, "headlines": 750, "OnWN": 561},
    "STS14": {"deft-forum": 450, "deft-news": 300, "headlines": 750, "images": 750, "OnWN": 750, "tweet-news": 750},
    "STS15": {"answers-forums": 375, "answers-students": 750, "belief": 375, "headlines": 750, "images": 750},
    "STS16": {"answer-answer": 254, "headlines": 249, "plagiarism": 230, "postediting": 244, "question-question": 209},
}
# Known numbers of scored pairs, to flag incomplete copies.
EXPECTED_PAIRS: dict[tuple[str, str], int] = {
    **{(year, "test"): sum(subsets.values()) for year, subsets in YEAR_SUBSETS.items()},
    ("STS-B", "train"): 5749,
    ("STS-B", "dev"): 1500,
    ("STS-B", "test"): 1379,
    ("SICK-R", "train"): 4500,
    ("SICK-R", "dev"): 500,
    ("SICK-R", "test"): 4927,
}
_YEAR_FOLDERS = {year: [f"STS/{year}-en-test", f"{year}-en-test"] for year in STS_YEARS}
_SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
_ALIASES = {
    "sts12": "STS12",
    "sts13": "STS13",
    "sts14": "STS14",
    "sts15": "STS15",
    "sts16": "STS16",
    "stsb": "STS-B",
    "sts-b": "STS-B",
    "stsbenchmark": "STS-B",
    "sickr": "SICK-R",
    "sick-r": "SICK-R",
    "sick": "SICK-R",
    "sickrelatedness": "SICK-R",
}


def canonical_task(name: str) -> str:
    """``stsb`` -> ``STS-B``, ``SICKRelatedness`` -> ``SICK-R``, ... (a DefsentError lists the choices)."""
    key = name.strip().lower().replace("_", "-")
    if key in _ALIASES:
        return _ALIASES[key]
    if key.replace("-", "") in _ALIASES:
        return _ALIASES[key.replace("-", "")]
    raise DefsentError(f"unknown STS task {name!r}; choose from {', '.join(STS_TASKS)}")


def parse_tasks(tasks: str | Sequence[str] | None, split: str = "test") -> list[str]:
    """Task names from ``--tasks`` (comma-separated or a list); default: every task that has ``split``."""
    if split not in STS_SPLITS:
        raise DefsentError(f"unknown split {split!r}; choose from {', '.join(STS_SPLITS)}")
    if tasks is None or (isinstance(tasks, str) and not tasks.strip()):
        return list(STS_TASKS) if split == "test" else ["STS-B", "SICK-R"]
    items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    names = list(dict.fromkeys(canonical_task(t) for t in items if t.strip()))
    for name in names:
        if name in STS_YEARS and split != "test":
            raise DefsentError(f"{name} has only a test split; use --split test or leave {name} out of --tasks")
    return names


@dataclass
class STSSubset:
    """The scored pairs of one file (unscored pairs already dropped)."""

    name: str
    sent1: list[str]
    sent2: list[str]
    gold: np.ndarray  # float64, one score per pair
    source: Path

    def __len__(self) -> int:
        return len(self.gold)


@dataclass
class STSTask:
    """One STS task on one split: its subsets and what the loader found."""

    name: str
    split: str
    subsets: list[STSSubset]
    folder: Path
    files: str  # the file pattern read, e.g. "STS.input.*.txt + STS.gs.*.txt"
    missing: list[str] = field(default_factory=list)  # known subsets not found
    root: Path | None = None  # the data root it was loaded from
    excluded: int = 0  # pairs left out because another file holds them (eval-sts --exclude-pairs)

    @property
    def n(self) -> int:
        return sum(len(s) for s in self.subsets)

    @property
    def expected(self) -> int | None:
        return EXPECTED_PAIRS.get((self.name, self.split))

    def warnings(self) -> list[str]:
        """Human-readable problems: missing subsets, pair counts that differ from the known sizes."""
        notes = []
        if self.missing:
            notes.append(
                f"{self.name}: {len(self.missing)} subset(s) missing in {self.folder} ({', '.join(self.missing)})"
            )
        if self.expected is not None and self.n + self.excluded != self.expected:
            notes.append(
                f"{self.name}: {self.n + self.excluded} scored pairs, expected {self.expected}; the folder is incomplete or "
                "altered, so the score is not comparable with published ones"
            )
        return notes


def _clean(text: str) -> str:
    """Whitespace as SentEval leaves it (``' '.join(s.split())``)."""
    return " ".join(text.split())


def _lines(path: Path, encoding: str = "utf-8-sig", strip_blank_tail: bool = False) -> list[str]:
    """All lines (LF or CRLF); optionally without trailing blank lines."""
    lines = [text for _, text in iter_lines(path, encoding)]
    while strip_blank_tail and lines and not lines[-1].strip():
        lines.pop()
    return lines


def read_pair_files(input_path: Path, gold_path: Path, name: str) -> STSSubset:
    """One STS subset: ``s1<TAB>s2[<TAB>source notes...]`` lines aligned with gold lines; empty gold = unscored.

    Blank lines after the last pair (the original STS2016 files end with one) are ignored; gold files may end
    with empty (unscored) lines.
    """
    inputs, golds = _lines(input_path, strip_blank_tail=True), _lines(gold_path)
    if len(golds) > len(inputs) and not any(g.strip() for g in golds[len(inputs) :]):
        golds = golds[: len(inputs)]
    if len(inputs) != len(golds):
        raise DefsentError(
            f"{len(golds)} gold lines for {len(inputs)} sentence pairs in {input_path.name}; the files must align line by line",
            path=gold_path,
        )
    sent1, sent2, gold = [], [], []
    for number_, (pair, score) in enumerate(zip(inputs, golds, strict=True), start=1):
        if not score.strip():
            continue
        try:
            value = float(score)
        except ValueError:
            raise DefsentError(f"gold score {score.strip()!r} is not a number", path=gold_path, line=number_) from None
        fields = pair.split("\t")
        if len(fields) < 2:
            raise DefsentError("expected two TAB-separated sentences", path=input_path, line=number_)
        sent1.append(_clean(fields[0]))
        sent2.append(_clean(fields[1]))
        gold.append(value)
    return STSSubset(name, sent1, sent2, np.asarray(gold, dtype=np.float64), input_path)


_ORIGINAL_INPUT = re.compile(r"^STS(20\d\d)\.input\.(.+)\.(txt|ascii)$")


def _year_files(folder: Path, layout: str) -> tuple[str, dict[str, tuple[Path, Path]]]:
    """(file pattern, {subset: (input, gold)}) for an STS year folder, by layout detection."""
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    senteval = {n[len("STS.input.") : -len(".txt")] for n in names if n.startswith("STS.input.") and n.endswith(".txt")}
    original: dict[str, Path] = {}
    year = ""
    for n in names:
        match = _ORIGINAL_INPUT.match(n)
        if match:
            year = match.group(1)
            subset, suffix = match.group(2), match.group(3)
            if subset not in original or suffix == "txt":  # prefer the UTF-8 .txt over .ascii
                original[subset] = folder / n
    use_original = (layout == "semeval" and original) or (layout == "auto" and original and not senteval)
    if use_original:
        files = {}
        for subset, path in original.items():
            gold = folder / f"STS{year}.gs.{subset}.txt"
            files[subset] = (path, gold if gold.exists() else folder / f"STS.gs.{subset}.txt")
        return f"STS{year}.input.*.txt|ascii + STS{year}.gs.*.txt", files
    files = {s: (folder / f"STS.input.{s}.txt", folder / f"STS.gs.{s}.txt") for s in senteval}
    return "STS.input.*.txt + STS.gs.*.txt", files


def load_sts_year(root: Path, year: str, layout: str = "auto") -> STSTask:
    """STS12..STS16 (test): SentEval's subsets of that year, from whichever file layout the folder has."""
    if layout not in LAYOUTS:
        raise DefsentError(f"unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")
    folder = next((root / rel for rel in _YEAR_FOLDERS[year] if (root / rel).is_dir()), None)
    if folder is None:
        task_folder(root, _YEAR_FOLDERS[year][0], year)  # raises the one-line error
    pattern, files = _year_files(folder, layout)
    subsets, missing = [], []
    for subset in YEAR_SUBSETS[year]:
        paths = files.get(subset)
        if paths is None or not paths[0].exists() or not paths[1].exists():
            missing.append(subset)
            continue
        subsets.append(read_pair_files(paths[0], paths[1], subset))
    if not subsets:
        raise DefsentError(
            f"{year}: none of the subsets {', '.join(YEAR_SUBSETS[year])} has an input and a gold file here",
            path=folder,
        )
    return STSTask(year, "test", subsets, folder, pattern, missing, root)


def _tab_rows(path: Path, min_fields: int, skip_header: bool) -> list[tuple[int, list[str]]]:
    rows = []
    for number_, line in iter_lines(path, "utf-8-sig"):
        if not line.strip():
            continue
        if skip_header and number_ == 1:
            continue
        fields = line.split("\t")
        if len(fields) < min_fields:
            raise DefsentError(
                f"expected at least {min_fields} TAB-separated fields, got {len(fields)}", path=path, line=number_
            )
        rows.append((number_, fields))
    return rows


def _score(text: str, path: Path, line: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise DefsentError(f"score {text.strip()!r} is not a number", path=path, line=line) from None


def load_stsb(root: Path, split: str = "test") -> STSTask:
    """STS Benchmark ``sts-<split>.csv``: TAB-separated genre, file, year, id, score, s1, s2."""
    folder = task_folder(root, "STS/STSBenchmark", "STS-B")
    path = folder / f"sts-{split}.csv"
    if not path.exists():
        raise DefsentError(f"STS-B: sts-{split}.csv not found", path=folder)
    rows = _tab_rows(path, 7, skip_header=False)
    subset = STSSubset(
        f"sts-{split}",
        [_clean(f[5]) for _, f in rows],
        [_clean(f[6]) for _, f in rows],
        np.asarray([_score(f[4], path, n) for n, f in rows], dtype=np.float64),
        path,
    )
    return STSTask("STS-B", split, [subset], folder, f"sts-{split}.csv", root=root)


def load_sickr(root: Path, split: str = "test") -> STSTask:
    """SICK relatedness: TAB-separated pair_ID, sentence_A, sentence_B, relatedness_score, ... with a header."""
    folder = task_folder(root, "SICK", "SICK-R")
    path = folder / _SICK_FILES[split]
    if not path.exists():
        raise DefsentError(f"SICK-R: {_SICK_FILES[split]} not found", path=folder)
    rows = _tab_rows(path, 4, skip_header=True)
    subset = STSSubset(
        split,
        [_clean(f[1]) for _, f in rows],
        [_clean(f[2]) for _, f in rows],
        np.asarray([_score(f[3], path, n) for n, f in rows], dtype=np.float64),
        path,
    )
    return STSTask("SICK-R", split, [subset], folder, _SICK_FILES[split], root=root)


def load_sts_tasks(
    data_root: str | Path | None, tasks: str | Sequence[str] | None = None, split: str = "test", layout: str = "auto"
) -> list[STSTask]:
    """Load the named tasks (default: all that have ``split``) from a SentEval data folder."""
    names = parse_tasks(tasks, split)
    root = resolve_data_root(data_root)
    loaded = []
    for name in names:
        if name in STS_YEARS:
            loaded.append(load_sts_year(root, name, layout))
        elif name == "STS-B":
            loaded.append(load_stsb(root, split))
        else:
            loaded.append(load_sickr(root, split))
    return loaded


def exclude_pairs(tasks: Sequence[STSTask], keys: set[tuple[str, str]]) -> list[STSTask]:
    """The tasks without the pairs whose :func:`~defsent_cli.formats.pairs.pair_key` is in ``keys`` (the pairs a
    model may have trained on); each task counts what it lost in ``excluded``."""
    from ..formats.pairs import pair_key

    kept_tasks = []
    for task in tasks:
        subsets, dropped = [], 0
        for sub in task.subsets:
            keep = np.array([pair_key(a, b) not in keys for a, b in zip(sub.sent1, sub.sent2, strict=True)], dtype=bool)
            dropped += int((~keep).sum())
            subsets.append(
                STSSubset(
                    sub.name,
                    [t for t, k in zip(sub.sent1, keep, strict=True) if k],
                    [t for t, k in zip(sub.sent2, keep, strict=True) if k],
                    sub.gold[keep],
                    sub.source,
                )
            )
        left = sum(len(sub.gold) for sub in subsets)
        if left < 2:  # a correlation needs two pairs at least: say so instead of scoring nothing
            raise DefsentError(
                f"--exclude-pairs leaves {left} of {task.n + task.excluded:,} pairs of {task.name}, nothing to "
                f"correlate: the files given hold (nearly) every pair of it; leave {task.name} out of --tasks"
            )
        subsets = [sub for sub in subsets if len(sub.gold)]  # a subset left empty is no subset to score
        kept_tasks.append(replace(task, subsets=subsets, excluded=task.excluded + dropped))
    return kept_tasks


def task_sentences(task: STSTask) -> list[str]:
    """Every sentence of a task, both sides, in order (duplicates kept; encode_unique removes them)."""
    return [s for sub in task.subsets for s in (*sub.sent1, *sub.sent2)]
