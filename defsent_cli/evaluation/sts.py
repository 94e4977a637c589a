"""Unsupervised STS: STS12-16, STS-B and SICK-R on local files, scored like SimCSE / DefSent / DefSent+.

Score = Spearman (and Pearson) x100 between the cosine of the two sentence vectors and the gold score; no
regressor is trained (STS-B and SICK-R are the unsupervised, cosine variants SimCSE introduced).

STS12-16 have several subsets per year; ``aggregation`` says how they become one number:

- ``all``:   concatenate a year's subsets, one correlation (SimCSE, DefSent and DefSent+ report this);
- ``mean``:  SentEval's plain average of the per-subset correlations;
- ``wmean``: SentEval's average weighted by the subsets' numbers of scored pairs.

Files: the SentEval layout (``STS.input.<subset>.txt`` + ``STS.gs.<subset>.txt``, Moses-tokenised and
lowercased by SentEval's script) and the original SemEval names (``STS2016.input.<subset>.txt`` or
``.ascii``, with ``STS2016.gs.<subset>.txt``), detected per folder. A gold line that is empty marks an
unscored pair, which is skipped. Whitespace inside sentences is normalised as SentEval's ``split()`` does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..io import iter_lines
from .results import (
    encode_unique,
    fmt,
    mean_or_none,
    model_encoder,
    number,
    payload_header,
    render_table,
    resolve_data_root,
    task_folder,
)

STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
STS_TASKS = (*STS_YEARS, "STS-B", "SICK-R")
AGGREGATIONS = ("all", "mean", "wmean")
SPLITS = ("test", "dev", "train")
LAYOUTS = ("auto", "senteval", "semeval")
BACKENDS = ("native", "mteb")

AGGREGATION_HELP = {
    "all": "subsets of a year concatenated, one correlation (SimCSE / DefSent / DefSent+)",
    "mean": "mean of the per-subset correlations (SentEval 'mean')",
    "wmean": "per-subset correlations weighted by their pair counts (SentEval 'wmean')",
}

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
    if split not in SPLITS:
        raise DefsentError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
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
        if self.expected is not None and self.n != self.expected:
            notes.append(
                f"{self.name}: {self.n} scored pairs, expected {self.expected}; the folder is incomplete or "
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


# --------------------------------------------------------------------------- scoring


def cosine_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine in float64; a zero vector gives 0 (SentEval's ``nan_to_num``)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    num = np.einsum("ij,ij->i", a, b)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def correlations(predicted: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """(Spearman, Pearson) x100; NaN when either side is constant or there are fewer than 2 pairs."""
    from scipy.stats import pearsonr, spearmanr

    predicted = np.asarray(predicted, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.float64)
    if len(gold) < 2 or np.ptp(predicted) == 0 or np.ptp(gold) == 0:
        return float("nan"), float("nan")
    return 100.0 * float(spearmanr(predicted, gold).statistic), 100.0 * float(pearsonr(predicted, gold).statistic)


def aggregate(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> dict[str, dict[str, float]]:
    """All three aggregations of per-subset (predicted, gold) arrays.

    ``all`` correlates the concatenation; ``mean`` averages the per-subset correlations; ``wmean``
    weights them by the subsets' sizes (SentEval's ``np.average(..., weights=nsamples)``).
    """
    per = [(*correlations(p, g), len(g)) for p, g in parts]
    concat = correlations(np.concatenate([p for p, _ in parts]), np.concatenate([g for _, g in parts]))
    return aggregate_correlations(per, concat)


def aggregate_correlations(
    per_subset: Sequence[tuple[float, float, int]], concatenated: tuple[float, float]
) -> dict[str, dict[str, float]]:
    """The same three aggregations from correlations already computed (e.g. by mteb)."""
    sizes = np.asarray([n for _, _, n in per_subset], dtype=np.float64)
    out = {"all": {"spearman": concatenated[0], "pearson": concatenated[1]}}
    for key, index in (("spearman", 0), ("pearson", 1)):
        values = np.asarray([c[index] for c in per_subset], dtype=np.float64)
        out.setdefault("mean", {})[key] = float(np.mean(values))
        out.setdefault("wmean", {})[key] = float(np.average(values, weights=sizes))
    return out


def task_sentences(task: STSTask) -> list[str]:
    """Every sentence of a task, both sides, in order (duplicates kept; encode_unique removes them)."""
    return [s for sub in task.subsets for s in (*sub.sent1, *sub.sent2)]


def score_task_native(task: STSTask, encode_fn) -> tuple[list[tuple[float, float, int]], dict[str, dict[str, float]]]:
    """Encode a task's distinct sentences in one call; per-subset correlations and the three aggregations."""
    texts = task_sentences(task)
    distinct = len(set(texts))
    vectors = encode_unique(encode_fn, texts, f"{task.name} ({distinct:,} sentences)")
    parts, offset = [], 0
    for sub in task.subsets:
        n = len(sub)
        a, b = vectors[offset : offset + n], vectors[offset + n : offset + 2 * n]
        offset += 2 * n
        parts.append((cosine_pairs(a, b), sub.gold))
    return [(*correlations(p, g), len(g)) for p, g in parts], aggregate(parts)


def check_options(aggregation: str, backend: str, pooling) -> None:
    """Validate the settings before anything slow runs."""
    if aggregation not in AGGREGATIONS:
        raise DefsentError(f"unknown aggregation {aggregation!r}; choose from {', '.join(AGGREGATIONS)}")
    if backend not in BACKENDS:
        raise DefsentError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if isinstance(pooling, str):
        from ..pooling import get_pooling

        get_pooling(pooling)
    if backend == "mteb":
        from ..mteb import require_mteb

        require_mteb()


def evaluate_sts(
    model: object,
    data_root: str | Path | None = None,
    tasks: str | Sequence[str] | Sequence[STSTask] | None = None,
    split: str = "test",
    aggregation: str = "all",
    pooling=None,
    post=None,
    batch_size: int = 32,
    max_length: int | None = None,
    layout: str = "auto",
    backend: str = "native",
    show_progress: bool | None = None,
) -> dict:
    """Evaluate a loaded model (or any ``texts -> vectors`` function) on STS; returns the results JSON object.

    ``result["tasks"][name]["spearman"]`` is the task's score under ``aggregation``;
    ``result["average"]["spearman"]`` is the mean over the tasks (None if one is missing). Pass
    already loaded :class:`STSTask` objects as ``tasks`` to evaluate several models on the same data.
    """
    check_options(aggregation, backend, pooling)
    if post and backend == "mteb":
        raise DefsentError("--post runs with --backend native (mteb's evaluator sees only the encoder)")
    weighting = getattr(pooling, "weighting", None)
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
    encode_fn = model_encoder(model, pooling, batch_size, max_length, show_progress, post)

    result = payload_header("sts", model, pooling, root, post)
    result.update(
        {
            "split": split,
            "aggregation": aggregation,
            "aggregation_meaning": AGGREGATION_HELP[aggregation],
            "similarity": "cosine",
            "backend": backend,
            "layout": layout,
            "batch_size": batch_size,
            "max_length": max_length,
            "tasks": {},
        }
    )
    warnings: list[str] = []
    for task in loaded_tasks:
        warnings.extend(task.warnings())
        if backend == "mteb":
            from ..mteb import score_task_mteb

            per, aggregates = score_task_mteb(task, model, pooling, batch_size, max_length, show_progress)
        else:
            per, aggregates = score_task_native(task, encode_fn)
        chosen = aggregates[aggregation] if len(task.subsets) > 1 else aggregates["all"]
        entry = {
            "spearman": number(chosen["spearman"]),
            "pearson": number(chosen["pearson"]),
            "n": task.n,
            "expected_n": task.expected,
            "complete": not task.missing and (task.expected is None or task.n == task.expected),
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


def sts_table(result: dict):
    """The papers' table: STS12 ... SICK-R, Avg.; Spearman, Pearson and pair counts."""
    tasks = result["tasks"]
    columns = [*tasks, "Avg."]
    spearman = [fmt(t["spearman"]) for t in tasks.values()] + [fmt(result["average"]["spearman"])]
    pearson = [fmt(t["pearson"]) for t in tasks.values()] + [fmt(result["average"]["pearson"])]
    pairs = []
    for t in tasks.values():
        cell = f"{t['n']:,}"
        if not t["complete"]:
            expected = f"/{t['expected_n']:,}" if t["expected_n"] else ""
            cell = f"[yellow]{cell}{expected}![/yellow]"
        pairs.append(cell)
    pairs.append(f"{sum(t['n'] for t in tasks.values()):,}")
    has_years = any(name in STS_YEARS for name in tasks)
    title = f"STS ({result['split']}): Spearman x100 of cosine similarity vs gold"
    caption = []
    if has_years:
        caption.append(f"STS12-16 aggregation: {result['aggregation']} = {result['aggregation_meaning']}")
    caption.append(f"model {result['model']}")
    caption.append(f"pooling {result['pooling']} | backend {result['backend']} | {result['seconds']:.0f} s")
    rows = [("Spearman", spearman), ("Pearson", pearson), ("pairs", pairs)]
    return render_table(title, columns, rows, "\n".join(caption))
