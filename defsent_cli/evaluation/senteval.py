"""SentEval transfer tasks (MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC) with SentEval's own classifier protocol.

Features come from the frozen encoder; a linear classifier is trained on top, exactly as SentEval's
``MLP`` with ``nhid 0`` (``senteval/tools/classifier.py``): one ``nn.Linear`` layer, cross-entropy (batch
mean, as with any PyTorch >= 1.0), Adam or RMSprop with PyTorch's default hyper-parameters, the L2 weight
``weight_decay`` (on weight and bias) chosen from ``10^-5 .. 10^-2``, ``epoch_size`` passes between two
checks of dev accuracy, early stopping after ``tenacity`` non-improving checks (SentEval's counter never
resets), at most ``max_epoch`` passes, the best dev checkpoint kept. Each classifier is re-seeded with
``seed`` like SentEval's (same initial weights from ``torch.manual_seed(seed)``, same data order from
``np.random.seed(seed)`` permutations), so one fit reproduces SentEval's fit; many fits (one per L2 value
and fold) are trained side by side as one batched model, which makes the 400+ fits of an inner k-fold
task take seconds on a CPU instead of minutes.

Protocols (``senteval/tools/validation.py``):

- MR, CR, SUBJ, MPQA: ``InnerKFoldClassifier``: outer stratified k-fold; in each outer training part an
  inner k-fold picks the L2 value; refit with a 5% validation split; test accuracy averaged over folds.
- TREC, MRPC: ``KFoldClassifier``: k-fold on train picks the L2 value; refit on all of train (5%
  validation split); accuracy (and F1 for MRPC) on test.
- SST-2: ``SplitClassifier``: train / dev picks the L2 value; accuracy on test.

Configs as SentEval's README defines them: ``default`` (kfold 10, adam, batch 64, tenacity 5, epoch_size 4;
the papers' tables) and ``prototyping`` (kfold 5, rmsprop, batch 128, tenacity 3, epoch_size 2).
Samples are ordered as SentEval orders them (sorted by token count, then label) so the folds match.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from ..console import make_progress
from ..errors import DefsentError
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

TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST-2", "TREC", "MRPC")
MRPC_FEATURES = ("senteval", "concat")
L2_GRID = tuple(10.0**t for t in range(-5, -1))  # SentEval's grid for the PyTorch classifier
VALIDATION_SPLIT = 0.05  # SentEval's refit hold-out


@dataclass(frozen=True)
class ClassifierConfig:
    """SentEval's ``params.kfold`` + ``params.classifier`` (``nhid`` is always 0: logistic regression)."""

    name: str
    kfold: int
    optim: str
    batch_size: int
    tenacity: int
    epoch_size: int
    max_epoch: int = 200
    nhid: int = 0


CONFIGS = {
    "default": ClassifierConfig("default", kfold=10, optim="adam", batch_size=64, tenacity=5, epoch_size=4),
    "prototyping": ClassifierConfig("prototyping", kfold=5, optim="rmsprop", batch_size=128, tenacity=3, epoch_size=2),
}
# torch.optim defaults, which SentEval's "adam" / "rmsprop" strings select.
_ADAM = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
_RMSPROP = {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8}

_ALIASES = {"mr": "MR", "cr": "CR", "subj": "SUBJ", "mpqa": "MPQA", "sst2": "SST-2", "trec": "TREC", "mrpc": "MRPC"}


def get_config(config: str | ClassifierConfig) -> ClassifierConfig:
    if isinstance(config, ClassifierConfig):
        return config
    try:
        return CONFIGS[config]
    except KeyError:
        raise DefsentError(f"unknown SentEval config {config!r}; choose from {', '.join(CONFIGS)}") from None


def parse_transfer_tasks(tasks: str | Sequence[str] | None) -> list[str]:
    """Task names from ``--tasks`` (comma-separated or a list); default: all seven."""
    if tasks is None or (isinstance(tasks, str) and not tasks.strip()):
        return list(TRANSFER_TASKS)
    items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    names = []
    for item in items:
        key = item.strip().lower().replace("-", "").replace("_", "")
        if not key:
            continue
        if key not in _ALIASES:
            raise DefsentError(f"unknown transfer task {item.strip()!r}; choose from {', '.join(TRANSFER_TASKS)}")
        names.append(_ALIASES[key])
    return list(dict.fromkeys(names))


# --------------------------------------------------------------------------- data


@dataclass
class TransferTask:
    """A transfer task's texts and labels per part, in SentEval's order.

    ``parts`` maps ``all`` (inner k-fold), ``train``/``test`` (k-fold) or ``train``/``dev``/``test``
    (split) to ``(texts, labels)``; for MRPC ``texts`` is a pair of lists ``(A, B)``.
    """

    name: str
    protocol: str  # "inner-kfold" | "kfold" | "split"
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
    try:
        return path.read_text(encoding=encoding)
    except UnicodeDecodeError as exc:
        raise DefsentError(f"not valid {encoding} text ({exc.reason})", path=path) from None


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
    """Load the named transfer tasks (default: all seven)."""
    root = resolve_data_root(data_root)
    return [load_transfer_task(root, name) for name in parse_transfer_tasks(tasks)]


# --------------------------------------------------------------------------- the classifier


@dataclass
class Job:
    """One SentEval ``MLP.fit``: training rows, an L2 weight, and explicit dev rows or a validation split."""

    train: np.ndarray
    l2reg: float
    dev: np.ndarray | None = None
    validation_split: float = VALIDATION_SPLIT


@dataclass
class LinearFit:
    """The best-dev-accuracy weights of one fit."""

    weight: np.ndarray  # (d, C)
    bias: np.ndarray  # (C,)
    dev_accuracy: float
    epochs: int

    def predict(self, X: np.ndarray) -> np.ndarray:
        logits = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32)) @ torch.from_numpy(self.weight)
        return (logits + torch.from_numpy(self.bias)).argmax(dim=1).numpy()

    def score(self, X: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y))) if len(y) else 0.0


def linear_init(dim: int, nclasses: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.manual_seed(seed); nn.Linear(dim, nclasses)`` as SentEval builds it, without touching global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = torch.nn.Linear(dim, nclasses)
    return layer.weight.detach().t().contiguous(), layer.bias.detach().clone()


class _Group:
    """Parameters and optimiser state of several fits, stacked on a leading job axis."""

    def __init__(self, W: torch.Tensor, b: torch.Tensor, optim: str):
        if optim not in ("adam", "rmsprop"):
            raise DefsentError(f"unsupported optimiser {optim!r}; SentEval configs use adam or rmsprop")
        self.optim = optim
        self.W, self.b = W, b
        self.mW, self.mb = torch.zeros_like(W), torch.zeros_like(b)  # Adam first moments
        self.vW, self.vb = torch.zeros_like(W), torch.zeros_like(b)  # second moments / RMSprop square averages
        self.t = np.zeros(W.shape[0], dtype=np.float64)  # Adam step counts

    def take(self, rows: np.ndarray) -> _Group:
        sub = _Group.__new__(_Group)
        sub.optim = self.optim
        index = torch.from_numpy(rows)
        for name in ("W", "b", "mW", "mb", "vW", "vb"):
            setattr(sub, name, getattr(self, name)[index].clone())
        sub.t = self.t[rows].copy()
        return sub

    def put(self, rows: np.ndarray, sub: _Group) -> None:
        index = torch.from_numpy(rows)
        for name in ("W", "b", "mW", "mb", "vW", "vb"):
            getattr(self, name)[index] = getattr(sub, name)
        self.t[rows] = sub.t

    def step(self, gW: torch.Tensor, gb: torch.Tensor, wd: torch.Tensor, update: torch.Tensor | None) -> None:
        """One optimiser step per job, as ``torch.optim`` with ``weight_decay`` would take it; rows where
        ``update`` is False (no batch left in this pass) are left exactly as they were."""
        gW = gW + wd[:, None, None] * self.W
        gb = gb + wd[:, None] * self.b
        if self.optim == "adam":
            t = self.t + (1.0 if update is None else update.numpy().astype(np.float64))
            mW = torch.lerp(self.mW, gW, 1 - _ADAM["beta1"])
            mb = torch.lerp(self.mb, gb, 1 - _ADAM["beta1"])
            vW = self.vW * _ADAM["beta2"] + (1 - _ADAM["beta2"]) * gW * gW
            vb = self.vb * _ADAM["beta2"] + (1 - _ADAM["beta2"]) * gb * gb
            step_size = torch.from_numpy(_ADAM["lr"] / (1 - _ADAM["beta1"] ** np.maximum(t, 1))).float()
            bc2 = torch.from_numpy(np.sqrt(1 - _ADAM["beta2"] ** np.maximum(t, 1))).float()
            W = self.W - step_size[:, None, None] * mW / (vW.sqrt() / bc2[:, None, None] + _ADAM["eps"])
            b = self.b - step_size[:, None] * mb / (vb.sqrt() / bc2[:, None] + _ADAM["eps"])
        else:
            t = self.t
            mW, mb = self.mW, self.mb
            vW = self.vW * _RMSPROP["alpha"] + (1 - _RMSPROP["alpha"]) * gW * gW
            vb = self.vb * _RMSPROP["alpha"] + (1 - _RMSPROP["alpha"]) * gb * gb
            W = self.W - _RMSPROP["lr"] * gW / (vW.sqrt() + _RMSPROP["eps"])
            b = self.b - _RMSPROP["lr"] * gb / (vb.sqrt() + _RMSPROP["eps"])
        if update is not None:
            keep3, keep2 = update[:, None, None], update[:, None]
            W, mW, vW = (torch.where(keep3, new, old) for new, old in ((W, self.W), (mW, self.mW), (vW, self.vW)))
            b, mb, vb = (torch.where(keep2, new, old) for new, old in ((b, self.b), (mb, self.mb), (vb, self.vb)))
        self.W, self.b, self.mW, self.mb, self.vW, self.vb, self.t = W, b, mW, mb, vW, vb, t


def _train_pass(
    X: torch.Tensor, y: torch.Tensor, orders: list[np.ndarray], group: _Group, wd: torch.Tensor, batch_size: int
) -> None:
    """One pass over each job's (permuted) training rows, in mini-batches of ``batch_size``."""
    jobs = len(orders)
    lengths = np.asarray([len(o) for o in orders])
    steps = int(math.ceil(lengths.max() / batch_size)) if len(lengths) else 0
    index = np.full((jobs, max(steps, 1) * batch_size), -1, dtype=np.int64)
    for row, order in enumerate(orders):
        index[row, : len(order)] = order
    index_t = torch.from_numpy(index).view(jobs, -1, batch_size)
    full_until = int(lengths.min()) // batch_size  # steps where every job has a full batch
    nclasses = group.b.shape[1]
    for s in range(steps):
        rows = index_t[:, s]
        valid = rows >= 0
        safe = rows.clamp(min=0)
        Xb, yb = X[safe], y[safe]
        probs = torch.softmax(torch.baddbmm(group.b.unsqueeze(1), Xb, group.W), dim=-1)
        grad = probs - torch.nn.functional.one_hot(yb, nclasses).to(probs.dtype)
        if s < full_until:
            grad = grad / batch_size
            update = None
        else:  # the tail of a pass: batch sizes differ per job, some jobs may have none left
            counts = valid.sum(dim=1)
            grad = grad * (valid.to(grad.dtype) / counts.clamp(min=1)[:, None]).unsqueeze(-1)
            update = counts > 0
            if bool(update.all()):
                update = None
        group.step(torch.bmm(Xb.transpose(1, 2), grad), grad.sum(dim=1), wd, update)


def _dev_accuracy(X: torch.Tensor, y: torch.Tensor, group: _Group, devs: list[np.ndarray]) -> np.ndarray:
    """Each job's accuracy on its own dev rows (0 when it has none)."""
    rows = np.unique(np.concatenate(devs)) if devs else np.zeros(0, dtype=np.int64)
    if len(rows) == 0:
        return np.zeros(len(devs))
    logits = torch.matmul(X[torch.from_numpy(rows)].unsqueeze(0), group.W) + group.b.unsqueeze(1)
    correct = (logits.argmax(dim=-1) == y[torch.from_numpy(rows)].unsqueeze(0)).numpy()
    where = np.searchsorted(rows, np.concatenate(devs))
    out, start = np.zeros(len(devs)), 0
    for j, dev in enumerate(devs):
        if len(dev):
            out[j] = correct[j, where[start : start + len(dev)]].sum() / len(dev)
        start += len(dev)
    return out


def fit_linear(
    X: np.ndarray,
    y: np.ndarray,
    jobs: Sequence[Job],
    nclasses: int,
    config: ClassifierConfig,
    seed: int = 1111,
    max_parallel: int = 48,
    on_done: Callable[[int], None] | None = None,
) -> list[LinearFit]:
    """Train SentEval ``MLP(nhid=0)`` classifiers, one per job, batched; returns their best-dev fits."""
    X_t = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    y_t = torch.from_numpy(np.asarray(y, dtype=np.int64))
    if len(y_t) and (int(y_t.min()) < 0 or int(y_t.max()) >= nclasses):
        raise DefsentError(f"labels must lie in 0..{nclasses - 1}")
    W0, b0 = linear_init(X_t.shape[1], nclasses, seed)
    fits: list[LinearFit] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # thousands of small steps: thread hand-offs cost more than they bring (~9x on 2 cores)
    try:
        for start in range(0, len(jobs), max_parallel):
            fits.extend(_fit_group(X_t, y_t, list(jobs[start : start + max_parallel]), config, seed, W0, b0, on_done))
    finally:
        torch.set_num_threads(threads)
    return fits


def _fit_group(
    X: torch.Tensor,
    y: torch.Tensor,
    jobs: list[Job],
    config: ClassifierConfig,
    seed: int,
    W0: torch.Tensor,
    b0: torch.Tensor,
    on_done: Callable[[int], None] | None,
) -> list[LinearFit]:
    count = len(jobs)
    rngs = [np.random.RandomState(seed) for _ in jobs]  # SentEval: np.random.seed(seed) in every MLP
    trains, devs = [], []
    for job, rng in zip(jobs, rngs, strict=True):
        train = np.asarray(job.train, dtype=np.int64)
        if job.dev is not None:
            trains.append(train)
            devs.append(np.asarray(job.dev, dtype=np.int64))
        else:  # PyTorchClassifier.prepare_split with validation_split
            perm = rng.permutation(len(train))
            cut = int(job.validation_split * len(train))
            trains.append(train[perm[cut:]])
            devs.append(train[perm[:cut]])
    group = _Group(W0.expand(count, *W0.shape).clone(), b0.expand(count, *b0.shape).clone(), config.optim)
    wd = torch.tensor([job.l2reg for job in jobs], dtype=torch.float32)
    best_W, best_b = group.W.clone(), group.b.clone()
    best_acc = np.full(count, -1.0)
    patience = np.zeros(count, dtype=np.int64)
    stopped = np.zeros(count, dtype=bool)
    epochs = np.zeros(count, dtype=np.int64)
    nepoch = 0
    while nepoch <= config.max_epoch and not stopped.all():
        active = np.flatnonzero(~stopped)
        sub = group.take(active)
        for _ in range(config.epoch_size):
            orders = [trains[j][rngs[j].permutation(len(trains[j]))] for j in active]
            _train_pass(X, y, orders, sub, wd[torch.from_numpy(active)], config.batch_size)
        nepoch += config.epoch_size
        group.put(active, sub)
        accuracy = _dev_accuracy(X, y, sub, [devs[j] for j in active])
        for pos, j in enumerate(active):
            epochs[j] = nepoch
            if accuracy[pos] > best_acc[j]:
                best_acc[j] = accuracy[pos]
                best_W[j], best_b[j] = sub.W[pos], sub.b[pos]
            else:  # SentEval: the counter is never reset
                if patience[j] >= config.tenacity:
                    stopped[j] = True
                    if on_done:
                        on_done(1)
                patience[j] += 1
    if on_done and (~stopped).any():
        on_done(int((~stopped).sum()))
    return [
        LinearFit(best_W[j].numpy().copy(), best_b[j].numpy().copy(), float(best_acc[j]), int(epochs[j]))
        for j in range(count)
    ]


# --------------------------------------------------------------------------- protocols


def _stratified(n_splits: int, seed: int, X: np.ndarray, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedKFold

    counts = np.bincount(y)
    if counts[counts > 0].min() < n_splits:
        raise DefsentError(f"too few samples of a class for {n_splits}-fold cross-validation")
    return list(StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(X, y))


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
    outer = _stratified(config.kfold, seed, X, y)
    jobs = []
    for train, _ in outer:
        inner = _stratified(config.kfold, seed, X[train], y[train])
        for reg in grid:
            jobs.extend(Job(train[inner_train], reg, dev=train[inner_test]) for inner_train, inner_test in inner)
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


def check_options(config: str | ClassifierConfig, mrpc_features: str, pooling) -> ClassifierConfig:
    """Validate the settings before anything slow runs; returns the classifier config."""
    cfg = get_config(config)
    if mrpc_features not in MRPC_FEATURES:
        raise DefsentError(f"unknown MRPC features {mrpc_features!r}; choose from {', '.join(MRPC_FEATURES)}")
    if isinstance(pooling, str):
        from ..pooling import get_pooling

        get_pooling(pooling)
    return cfg


def _planned_fits(task: TransferTask, config: ClassifierConfig, grid: Sequence[float]) -> int:
    k = config.kfold
    if task.protocol == "inner-kfold":
        return k * len(grid) * k + k
    if task.protocol == "kfold":
        return len(grid) * k + 1
    return len(grid)


def mrpc_pair_features(a: np.ndarray, b: np.ndarray, kind: str = "senteval") -> np.ndarray:
    """SentEval's MRPC features ``[|u-v|, u*v]``, or ``concat`` = ``[u, v, |u-v|, u*v]`` (SNLI-style)."""
    if kind == "senteval":
        return np.concatenate([np.abs(a - b), a * b], axis=1)
    if kind == "concat":
        return np.concatenate([a, b, np.abs(a - b), a * b], axis=1)
    raise DefsentError(f"unknown MRPC features {kind!r}; choose from {', '.join(MRPC_FEATURES)}")


def run_transfer_task(
    task: TransferTask,
    encode_fn,
    config: ClassifierConfig,
    seed: int = 1111,
    mrpc_features: str = "senteval",
    show_progress: bool | None = None,
    grid: Sequence[float] = L2_GRID,
) -> dict:
    """Features from the frozen encoder (each distinct text once), then the task's SentEval protocol."""
    started = time.perf_counter()
    texts = task.texts()
    vectors = encode_unique(encode_fn, texts, f"{task.name} ({len(set(texts)):,} sentences)")
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
    batch_size: int = 32,
    max_length: int | None = None,
    mrpc_features: str = "senteval",
    show_progress: bool | None = None,
) -> dict:
    """SentEval transfer accuracies of a loaded model (or a ``texts -> vectors`` function): the results JSON object.

    ``result["tasks"][name]["acc"]`` is the test accuracy x100, ``result["average"]["acc"]`` their mean.
    """
    cfg = check_options(config, mrpc_features, pooling)
    started = time.perf_counter()
    if tasks and not isinstance(tasks, str) and all(isinstance(t, TransferTask) for t in tasks):
        loaded = list(tasks)
        root = resolve_data_root(data_root) if data_root is not None else loaded[0].root
    else:
        root = resolve_data_root(data_root)
        loaded = load_transfer_tasks(root, tasks)
    encode_fn = model_encoder(model, pooling, batch_size, max_length, show_progress, post)
    result = payload_header("senteval", model, pooling, root, post)
    result.update(
        {
            "config": cfg.name,
            "seed": seed,
            "classifier": {
                **asdict(cfg),
                "model": "logistic regression: SentEval MLP nhid=0 (torch nn.Linear + cross-entropy)",
                "l2_grid": list(L2_GRID),
                "validation_split": VALIDATION_SPLIT,
                "optimizer_defaults": _ADAM if cfg.optim == "adam" else _RMSPROP,
            },
            "mrpc_features": "[|u-v|, u*v]" if mrpc_features == "senteval" else "[u, v, |u-v|, u*v]",
            "batch_size": batch_size,
            "max_length": max_length,
            "tasks": {},
        }
    )
    for task in loaded:
        out = run_transfer_task(task, encode_fn, cfg, seed, mrpc_features, show_progress)
        result["tasks"][task.name] = {
            "acc": number(out["acc"], 2),
            "devacc": number(out["devacc"], 2),
            **({"f1": out["f1"]} if "f1" in out else {}),
            **{k: v for k, v in out.items() if k not in ("acc", "devacc", "f1")},
            "folder": str(task.folder),
        }
    result["average"] = {
        "acc": number(mean_or_none([t["acc"] for t in result["tasks"].values()]), 2),
        "tasks": len(result["tasks"]),
    }
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def senteval_table(result: dict):
    """The papers' table: MR ... MRPC, Avg. (test accuracy), with dev accuracy, MRPC F1 and sizes."""
    tasks = result["tasks"]
    columns = [*tasks, "Avg."]
    acc = [fmt(t["acc"]) for t in tasks.values()] + [fmt(result["average"]["acc"])]
    dev = [fmt(t["devacc"]) for t in tasks.values()] + [""]
    f1 = [fmt(t["f1"]) if "f1" in t else "" for t in tasks.values()] + [""]
    sizes = [
        f"{t['ndev']:,}/{t['ntest']:,}" if t["protocol"] != "inner-kfold" else f"{t['ntest']:,} (cv)"
        for t in tasks.values()
    ] + [""]
    rows = [("test acc", acc), ("dev acc", dev)]
    if any("f1" in t for t in tasks.values()):
        rows.append(("F1", f1))
    rows.append(("train|dev/test", sizes))
    cls = result["classifier"]
    title = "SentEval transfer: test accuracy x100 of a logistic-regression probe on frozen features"
    caption = "\n".join(
        [
            f"config {result['config']}: kfold {cls['kfold']}, {cls['optim']}, batch {cls['batch_size']}, "
            f"tenacity {cls['tenacity']}, epoch_size {cls['epoch_size']}; seed {result['seed']}; "
            f"MRPC features {result['mrpc_features']}",
            f"model {result['model']}",
            f"pooling {result['pooling']} | {result['seconds']:.0f} s",
        ]
    )
    return render_table(title, columns, rows, caption)
