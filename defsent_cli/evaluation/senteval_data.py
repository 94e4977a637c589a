"""SentEval transfer-task data on local files, in SentEval's order: the seven classic tasks (MR, CR, SUBJ,
MPQA, SST-2, TREC, MRPC) and five more (Stankevičius & Lukoševičius 2024): SST-5 (``SST/fine``,
``label sentence`` lines, labels 0-4), SICK-E (``SICK_{train,trial,test_annotated}.txt``, column 5:
CONTRADICTION 0, NEUTRAL 1, ENTAILMENT 2, as SentEval), SciCite (``scicite/`` beside ``senteval/``:
JSONL ``string`` + ``label``, background 0, method 1, result 2) and STS-B-5 / SICK-R-5 (SentEval's
STSBenchmark and SICKRelatedness tasks: the pair's gold score, classified into 5 soft classes).

File names and encodings as SentEval's loaders; samples sorted by (token count, label) as SentEval sorts
them, so the folds match its own (pairs by (tokens of A, tokens of B, label)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..io import check_input, iter_jsonl
from .common import find_data_folder, parse_names, resolve_data_root, task_folder

TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST-2", "TREC", "MRPC")  # the default: SentEval's seven
MORE_TASKS = ("SST-5", "SICK-E", "SciCite", "STS-B-5", "SICK-R-5")
ALL_TRANSFER_TASKS = (*TRANSFER_TASKS, *MORE_TASKS)  # --tasks all
RELATEDNESS_TASKS = ("STS-B-5", "SICK-R-5")
_ALIASES = {name.lower().replace("-", ""): name for name in ALL_TRANSFER_TASKS}
_ALIASES.update({"stsbenchmark5": "STS-B-5", "sickrelatedness5": "SICK-R-5", "sickentailment": "SICK-E"})


def parse_transfer_tasks(tasks: str | Sequence[str] | None) -> list[str]:
    """Task names from ``--tasks`` (comma-separated or a list, any case); default: the seven; ``all``:
    all twelve."""
    return parse_names(tasks, _ALIASES, TRANSFER_TASKS, "transfer task", {"all": ALL_TRANSFER_TASKS})


@dataclass
class TransferTask:
    """A transfer task's texts and labels per part, in SentEval's order.

    ``parts`` maps ``all`` (inner k-fold), ``train``/``test`` (k-fold) or ``train``/``dev``/``test``
    (split) to ``(texts, labels)``; for MRPC ``texts`` is a pair of lists ``(A, B)``.
    """

    name: str
    protocol: str  # "inner-kfold" | "kfold" | "split" | "relatedness" (labels are float scores)
    nclasses: int
    parts: dict[str, tuple[list[str] | tuple[list[str], list[str]], np.ndarray]]
    folder: Path
    root: Path | None = None  # the data root it was loaded from

    def texts(self) -> list[str]:
        out: list[str] = []
        for texts, _ in self.parts.values():
            if isinstance(texts, tuple):
                out.extend(texts[0])
                out.extend(texts[1])
            else:
                out.extend(texts)
        return out


def _read(path: Path, encoding: str) -> str:
    if not path.exists():
        raise DefsentError("file not found; check --data", path=path)
    check_input(path)
    try:
        return path.read_text(encoding=encoding)
    except UnicodeDecodeError as exc:
        shown = encoding.removesuffix("-sig")  # utf-8-sig: utf-8 read past a BOM (the codec's name is ours)
        raise DefsentError(f"not valid {shown} text ({exc.reason})", path=path) from None


def _file_lines(text: str) -> list[str]:
    """Lines as ``for line in open(...)`` yields them (universal newlines; no split on other separators)."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _sorted(samples: list[list[str]], labels: list[int]) -> tuple[list[str], np.ndarray]:
    """SentEval's order: sorted by (number of tokens, label), stable; tokens re-joined with spaces."""
    order = sorted(zip(samples, labels, strict=True), key=lambda z: (len(z[0]), z[1]))
    return [" ".join(s) for s, _ in order], np.asarray([y for _, y in order], dtype=np.int64)


def _load_binary(folder: Path, pos: str, neg: str) -> tuple[list[str], np.ndarray]:
    """Two files of one sentence per line (latin-1, as SentEval reads them); label 1 for ``pos``."""
    pos_lines = [line.split() for line in _read(folder / pos, "latin-1").splitlines()]
    neg_lines = [line.split() for line in _read(folder / neg, "latin-1").splitlines()]
    for name, lines in ((pos, pos_lines), (neg, neg_lines)):
        if not any(lines):
            raise DefsentError("has no sentences: a class with no examples cannot be scored", path=folder / name)
    return _sorted(pos_lines + neg_lines, [1] * len(pos_lines) + [0] * len(neg_lines))


_TREC_LABELS = {"ABBR": 0, "DESC": 1, "ENTY": 2, "HUM": 3, "LOC": 4, "NUM": 5}


def _load_trec(path: Path) -> tuple[list[str], np.ndarray]:
    samples, labels = [], []
    for number_, line in enumerate(_file_lines(_read(path, "latin-1")), start=1):
        if not line.strip():
            continue
        target, _, rest = line.strip().partition(":")
        parts = rest.split(" ", 1)
        if target not in _TREC_LABELS or len(parts) < 2:
            raise DefsentError("expected 'COARSE:fine question ...'", path=path, line=number_)
        samples.append(parts[1].split())
        labels.append(_TREC_LABELS[target])
    return _sorted(samples, labels)


def _load_sst(path: Path) -> tuple[list[str], np.ndarray]:
    samples, labels = [], []
    for number_, line in enumerate(_file_lines(_read(path, "utf-8")), start=1):
        if not line.strip():
            continue
        fields = line.strip().split("\t")
        if len(fields) < 2 or fields[1].strip() not in ("0", "1"):
            raise DefsentError("expected 'sentence<TAB>0|1'", path=path, line=number_)
        samples.append(fields[0].split())
        labels.append(int(fields[1]))
    return _sorted(samples, labels)


def _load_sst_fine(path: Path) -> tuple[list[str], np.ndarray]:
    """SentEval's fine-grained SST: ``label sentence`` (label 0-4, one space)."""
    samples, labels = [], []
    for number_, line in enumerate(_file_lines(_read(path, "utf-8")), start=1):
        if not line.strip():
            continue
        label, _, sentence = line.strip().partition(" ")
        if label not in ("0", "1", "2", "3", "4") or not sentence.strip():
            raise DefsentError("expected 'LABEL sentence' with LABEL 0-4", path=path, line=number_)
        samples.append(sentence.split())
        labels.append(int(label))
    return _sorted(samples, labels)


_SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
SICK_E_LABELS = {"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2}  # SentEval's label2id


def _sorted_pairs(
    rows: list[tuple[list[str], list[str], float]], dtype
) -> tuple[tuple[list[str], list[str]], np.ndarray]:
    """SentEval's pair order: sorted by (tokens of A, tokens of B, label), stable."""
    rows.sort(key=lambda z: (len(z[0]), len(z[1]), z[2]))
    return ([" ".join(r[0]) for r in rows], [" ".join(r[1]) for r in rows]), np.asarray(
        [r[2] for r in rows], dtype=dtype
    )


def _score(text: str, path: Path, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DefsentError(f"score {text.strip()!r} is not a number", path=path, line=line) from None
    if not 0.0 <= value <= 5.0:
        raise DefsentError(f"score {value:g} is outside 0-5", path=path, line=line)
    return value


def _load_sick(path: Path, entailment: bool):
    """SICK: header, then pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment (TAB)."""
    rows = []
    for number_, line in enumerate(_file_lines(_read(path, "utf-8")), start=1):
        if number_ == 1 or not line.strip():
            continue
        fields = line.strip().split("\t")
        if len(fields) < 5:
            raise DefsentError(
                "expected 'pair_ID<TAB>sentence_A<TAB>sentence_B<TAB>relatedness_score<TAB>entailment_judgment'",
                path=path,
                line=number_,
            )
        if entailment:
            if fields[4] not in SICK_E_LABELS:
                raise DefsentError(
                    f"entailment label {fields[4]!r} is not one of {', '.join(SICK_E_LABELS)}", path=path, line=number_
                )
            label = SICK_E_LABELS[fields[4]]
        else:
            label = _score(fields[3], path, number_)
        rows.append((fields[1].split(), fields[2].split(), label))
    return _sorted_pairs(rows, np.int64 if entailment else np.float64)


def _load_stsb(path: Path):
    """STS-B ``sts-<split>.csv``: genre, file, year, id, score, s1, s2 (TAB), no header."""
    rows = []
    for number_, line in enumerate(_file_lines(_read(path, "utf-8")), start=1):
        if not line.strip():
            continue
        fields = line.strip().split("\t")
        if len(fields) < 7:
            raise DefsentError(f"expected 7 TAB-separated fields, got {len(fields)}", path=path, line=number_)
        rows.append((fields[5].split(), fields[6].split(), _score(fields[4], path, number_)))
    return _sorted_pairs(rows, np.float64)


SCICITE_LABELS = {"background": 0, "method": 1, "result": 2}
_SCICITE_FILES = {"train": ("train.jsonl", "train_reconstructed.jsonl"), "dev": ("dev.jsonl",), "test": ("test.jsonl",)}


def _load_scicite(folder: Path, part: str) -> tuple[list[str], np.ndarray]:
    """SciCite JSONL: ``string`` (the citation context) and ``label`` (background / method / result)."""
    path = next((folder / n for n in _SCICITE_FILES[part] if (folder / n).exists()), folder / _SCICITE_FILES[part][0])
    if not path.exists():
        raise DefsentError(f"SciCite: {' or '.join(_SCICITE_FILES[part])} not found; check --data", path=folder)
    samples, labels = [], []
    # AllenAI's release was written by pandas: a missing sectionName is a bare NaN. Only string and label are read,
    # and both are checked below.
    for number_, row in iter_jsonl(path, allow_nan=True):
        text, label = row.get("string"), row.get("label")
        if not isinstance(text, str) or not text.strip():
            raise DefsentError("expected a non-empty 'string' field", path=path, line=number_)
        if label not in SCICITE_LABELS:
            raise DefsentError(f"label {label!r} is not one of {', '.join(SCICITE_LABELS)}", path=path, line=number_)
        samples.append(text.split())
        labels.append(SCICITE_LABELS[label])
    return _sorted(samples, labels)


def _load_mrpc(path: Path) -> tuple[tuple[list[str], list[str]], np.ndarray]:
    rows = []
    for number_, line in enumerate(_file_lines(_read(path, "utf-8-sig")), start=1):
        if number_ == 1 or not line.strip():  # header
            continue
        fields = line.strip().split("\t")
        if len(fields) < 5 or fields[0] not in ("0", "1"):
            raise DefsentError(
                "expected 'Quality<TAB>id1<TAB>id2<TAB>sentence1<TAB>sentence2'", path=path, line=number_
            )
        rows.append((fields[3].split(), fields[4].split(), int(fields[0])))
    rows.sort(key=lambda z: (len(z[0]), len(z[1]), z[2]))
    a = [" ".join(r[0]) for r in rows]
    b = [" ".join(r[1]) for r in rows]
    return (a, b), np.asarray([r[2] for r in rows], dtype=np.int64)


def load_transfer_task(data_root: str | Path | None, name: str) -> TransferTask:
    """Load one transfer task from a SentEval data folder (file names as SentEval's)."""
    root = resolve_data_root(data_root)
    name = parse_transfer_tasks([name])[0]
    if name in ("MR", "CR", "SUBJ", "MPQA"):
        folder = task_folder(root, name, name)
        pos, neg = {
            "MR": ("rt-polarity.pos", "rt-polarity.neg"),
            "CR": ("custrev.pos", "custrev.neg"),
            "SUBJ": ("subj.objective", "subj.subjective"),  # SentEval: objective = label 1
            "MPQA": ("mpqa.pos", "mpqa.neg"),
        }[name]
        return TransferTask(name, "inner-kfold", 2, {"all": _load_binary(folder, pos, neg)}, folder, root)
    if name == "SST-2":
        folder = task_folder(root, "SST/binary", name)
        parts = {part: _load_sst(folder / f"sentiment-{part}") for part in ("train", "dev", "test")}
        return TransferTask(name, "split", 2, parts, folder, root)
    if name == "SST-5":
        folder = task_folder(root, "SST/fine", name)
        parts = {part: _load_sst_fine(folder / f"sentiment-{part}") for part in ("train", "dev", "test")}
        return TransferTask(name, "split", 5, parts, folder, root)
    if name in ("SICK-E", "SICK-R-5"):
        folder = task_folder(root, "SICK", name)
        entailment = name == "SICK-E"
        parts = {part: _load_sick(folder / file, entailment) for part, file in _SICK_FILES.items()}
        return TransferTask(name, "split" if entailment else "relatedness", 3 if entailment else 5, parts, folder, root)
    if name == "STS-B-5":
        folder = task_folder(root, "STS/STSBenchmark", name)
        parts = {part: _load_stsb(folder / f"sts-{part}.csv") for part in ("train", "dev", "test")}
        return TransferTask(name, "relatedness", 5, parts, folder, root)
    if name == "SciCite":
        folder = find_data_folder(data_root, "scicite", name)
        parts = {part: _load_scicite(folder, part) for part in ("train", "dev", "test")}
        return TransferTask(name, "split", 3, parts, folder, root)
    if name == "TREC":
        folder = task_folder(root, "TREC", name)
        parts = {"train": _load_trec(folder / "train_5500.label"), "test": _load_trec(folder / "TREC_10.label")}
        return TransferTask(name, "kfold", 6, parts, folder, root)
    folder = task_folder(root, "MRPC", name)
    parts = {
        "train": _load_mrpc(folder / "msr_paraphrase_train.txt"),
        "test": _load_mrpc(folder / "msr_paraphrase_test.txt"),
    }
    return TransferTask(name, "kfold", 2, parts, folder, root)


def load_transfer_tasks(data_root: str | Path | None, tasks: str | Sequence[str] | None = None) -> list[TransferTask]:
    """Load the named transfer tasks (default: all seven); each must have data to score."""
    root = resolve_data_root(data_root)
    loaded = [load_transfer_task(root, name) for name in parse_transfer_tasks(tasks)]
    for task in loaded:
        check_task(task)
    return loaded


def check_task(task: TransferTask) -> None:
    """Every part has examples, and what the classifier trains on has at least two classes (else any
    accuracy would be meaningless: one class is 100% by construction)."""
    for part, (_, labels) in task.parts.items():
        if len(labels) == 0:
            raise DefsentError(f"{task.name}: the {part} part has no examples", path=task.folder)
        if part != "test" and task.protocol == "relatedness" and np.ptp(labels) == 0:
            raise DefsentError(f"{task.name}: every {part} pair has the same score", path=task.folder)
        if part != "test" and task.protocol != "relatedness" and len(np.unique(labels)) < 2:
            raise DefsentError(f"{task.name}: the {part} part has examples of one class only", path=task.folder)
