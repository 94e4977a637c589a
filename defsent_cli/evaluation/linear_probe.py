"""SentEval's classifier (``senteval/tools/classifier.py``, ``MLP`` with ``nhid 0``), many fits at once.

One ``nn.Linear`` layer, cross-entropy (batch mean, as with any PyTorch >= 1.0), Adam or RMSprop with
PyTorch's default hyper-parameters, the L2 weight ``weight_decay`` (on weight and bias), ``epoch_size``
passes between two checks of dev accuracy, early stopping after ``tenacity`` non-improving checks
(SentEval's counter never resets), at most ``max_epoch`` passes, the best dev checkpoint kept. Each
classifier is re-seeded with ``seed`` like SentEval's (same initial weights from
``torch.manual_seed(seed)``, same data order from ``np.random.seed(seed)`` permutations), so one fit
reproduces SentEval's fit; many fits (one per L2 value and fold) are trained side by side as one
batched model, which makes the 400+ fits of an inner k-fold task take seconds on a CPU instead of
minutes. Written by hand because no library trains thousands of small seeded Adam fits at once with
SentEval's exact early-stopping rule (scikit-learn's LogisticRegression is another optimiser and
would not reproduce SentEval's numbers).

The same trainer runs SentEval's relatedness classifier (``senteval/tools/relatedness.py``,
``RelatednessPytorch``) for STS-B / SICK-R as 5-class tasks: soft targets (:func:`soft_targets`), a
softmax output trained with mean squared error against them (``loss="mse"``; SentEval's code comment
speaks of KL, its code uses ``nn.MSELoss``), Adam without weight decay, 50 passes between checks, and
the dev Pearson of the expected score instead of dev accuracy (``dev_score``): :data:`RELATEDNESS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import DefsentError
from .choices import CONFIGS, ClassifierConfig

L2_GRID = tuple(10.0**t for t in range(-5, -1))  # SentEval's grid for the PyTorch classifier
VALIDATION_SPLIT = 0.05  # SentEval's refit hold-out

# torch.optim defaults, which SentEval's "adam" / "rmsprop" strings select.
ADAM = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
RMSPROP = {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8}


# RelatednessPytorch: batch 64, Adam, l2reg 0, trainepoch(nepoches=50) between checks, early stop after
# 3 non-improving checks (the same never-reset counter), maxepoch 1000. No k-fold.
RELATEDNESS = ClassifierConfig(
    "relatedness", kfold=0, optim="adam", batch_size=64, tenacity=3, epoch_size=50, max_epoch=1000
)
LOSSES = ("cross-entropy", "mse")


def soft_targets(scores: np.ndarray, nclasses: int = 5) -> np.ndarray:
    """SentEval's ``encode_labels`` (Tai, Socher & Manning 2015): a score s between classes floor(s) and
    floor(s) + 1 (classes numbered 1..nclasses; column i is class i + 1) puts weight s - floor(s) on class
    floor(s) + 1 and floor(s) + 1 - s on class floor(s): 3.6 -> 0.4 on class 3 (column 2), 0.6 on class 4
    (column 3); 5.0 -> 1.0 on class 5. As in SentEval, a score below 1 (STS-B's 0-1 range) keeps only
    s on class 1, so its row sums to s (0 for a score of 0)."""
    s = np.asarray(scores, dtype=np.float64)
    floor = np.floor(s)
    out = np.zeros((len(s), nclasses), dtype=np.float32)
    for i in range(nclasses):
        out[:, i] = np.where(i + 1 == floor + 1, s - floor, 0.0) + np.where(i + 1 == floor, floor - s + 1, 0.0)
    return out


def get_config(config: str | ClassifierConfig) -> ClassifierConfig:
    if isinstance(config, ClassifierConfig):
        return config
    try:
        return CONFIGS[config]
    except KeyError:
        raise DefsentError(f"unknown SentEval config {config!r}; choose from {', '.join(CONFIGS)}") from None


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

    def logits(self, X: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32)) @ torch.from_numpy(
            self.weight
        ) + torch.from_numpy(self.bias)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.logits(X).argmax(dim=1).numpy()

    def proba(self, X: np.ndarray) -> np.ndarray:
        """Softmax class probabilities (the relatedness classifier's output)."""
        return torch.softmax(self.logits(X), dim=1).numpy()

    def score(self, X: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y))) if len(y) else 0.0


def linear_init(dim: int, nclasses: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.manual_seed(seed); nn.Linear(dim, nclasses)`` as SentEval builds it, without touching global RNG:
    the weight in nn.Linear's own (nclasses, dim) layout, and the bias."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = torch.nn.Linear(dim, nclasses)
    return layer.weight.detach().clone(), layer.bias.detach().clone()


class _Group:
    """Parameters and optimiser state of several fits, stacked on a leading job axis; weights (jobs, C, d) as
    nn.Linear stores them (a layout the batched products of a step run several times faster in than (d, C):
    their inner dimension is d, not the 2-6 classes)."""

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
            mW = torch.lerp(self.mW, gW, 1 - ADAM["beta1"])
            mb = torch.lerp(self.mb, gb, 1 - ADAM["beta1"])
            vW = self.vW * ADAM["beta2"] + (1 - ADAM["beta2"]) * gW * gW
            vb = self.vb * ADAM["beta2"] + (1 - ADAM["beta2"]) * gb * gb
            step_size = torch.from_numpy(ADAM["lr"] / (1 - ADAM["beta1"] ** np.maximum(t, 1))).float()
            bc2 = torch.from_numpy(np.sqrt(1 - ADAM["beta2"] ** np.maximum(t, 1))).float()
            W = self.W - step_size[:, None, None] * mW / (vW.sqrt() / bc2[:, None, None] + ADAM["eps"])
            b = self.b - step_size[:, None] * mb / (vb.sqrt() / bc2[:, None] + ADAM["eps"])
        else:
            t = self.t
            mW, mb = self.mW, self.mb
            vW = self.vW * RMSPROP["alpha"] + (1 - RMSPROP["alpha"]) * gW * gW
            vb = self.vb * RMSPROP["alpha"] + (1 - RMSPROP["alpha"]) * gb * gb
            W = self.W - RMSPROP["lr"] * gW / (vW.sqrt() + RMSPROP["eps"])
            b = self.b - RMSPROP["lr"] * gb / (vb.sqrt() + RMSPROP["eps"])
        if update is not None:
            keep3, keep2 = update[:, None, None], update[:, None]
            W, mW, vW = (torch.where(keep3, new, old) for new, old in ((W, self.W), (mW, self.mW), (vW, self.vW)))
            b, mb, vb = (torch.where(keep2, new, old) for new, old in ((b, self.b), (mb, self.mb), (vb, self.vb)))
        self.W, self.b, self.mW, self.mb, self.vW, self.vb, self.t = W, b, mW, mb, vW, vb, t


def _train_pass(
    X: torch.Tensor,
    Y: torch.Tensor,
    orders: list[np.ndarray],
    group: _Group,
    wd: torch.Tensor,
    batch_size: int,
    loss: str = "cross-entropy",
) -> None:
    """One pass over each job's (permuted) training rows, in mini-batches of ``batch_size``; ``Y`` holds
    one target distribution per row (one-hot for hard labels)."""
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
        flat = safe.reshape(-1)  # index_select: ~3x faster than advanced indexing for this gather
        Xb = X.index_select(0, flat).view(jobs, batch_size, -1)
        Yb = Y.index_select(0, flat).view(jobs, batch_size, -1)
        probs = torch.softmax(torch.baddbmm(group.b.unsqueeze(1), Xb, group.W.transpose(1, 2)), dim=-1)
        if loss == "mse":  # d/dz of mean((softmax(z) - t)^2) over the classes, through the softmax
            g = 2.0 / nclasses * (probs - Yb)
            grad = probs * (g - (g * probs).sum(dim=-1, keepdim=True))
        else:  # cross-entropy against the target distribution
            grad = probs - Yb
        if s < full_until:
            grad = grad / batch_size
            update = None
        else:  # the tail of a pass: batch sizes differ per job, some jobs may have none left
            counts = valid.sum(dim=1)
            grad = grad * (valid.to(grad.dtype) / counts.clamp(min=1)[:, None]).unsqueeze(-1)
            update = counts > 0
            if bool(update.all()):
                update = None
        group.step(torch.bmm(grad.transpose(1, 2), Xb), grad.sum(dim=1), wd, update)


DevScore = Callable[[np.ndarray, np.ndarray], float]


def _dev_accuracy(
    X: torch.Tensor, y: torch.Tensor | None, group: _Group, devs: list[np.ndarray], dev_score: DevScore | None = None
) -> np.ndarray:
    """Each job's accuracy on its own dev rows (0 when it has none), or ``dev_score(probabilities, rows)``."""
    rows = np.unique(np.concatenate(devs)) if devs else np.zeros(0, dtype=np.int64)
    if len(rows) == 0:
        return np.zeros(len(devs))
    logits = torch.matmul(X[torch.from_numpy(rows)].unsqueeze(0), group.W.transpose(1, 2)) + group.b.unsqueeze(1)
    if dev_score is None:
        correct = (logits.argmax(dim=-1) == y[torch.from_numpy(rows)].unsqueeze(0)).numpy()
    else:
        probs = torch.softmax(logits, dim=-1).numpy()
    where = np.searchsorted(rows, np.concatenate(devs))
    out, start = np.zeros(len(devs)), 0
    for j, dev in enumerate(devs):
        if len(dev):
            mine = where[start : start + len(dev)]
            out[j] = correct[j, mine].sum() / len(dev) if dev_score is None else dev_score(probs[j, mine], dev)
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
    *,
    targets: np.ndarray | None = None,
    loss: str = "cross-entropy",
    dev_score: DevScore | None = None,
) -> list[LinearFit]:
    """Train SentEval ``MLP(nhid=0)`` classifiers, one per job, batched; returns their best-dev fits.

    ``targets`` (n, nclasses) replaces the one-hot rows of ``y`` (soft labels); ``loss`` is
    ``cross-entropy`` (SentEval's MLP) or ``mse`` on the softmax output (its relatedness classifier);
    ``dev_score(probabilities, dev_rows)`` replaces dev accuracy as the early-stopping criterion (then
    ``y`` may be None)."""
    if loss not in LOSSES:
        raise DefsentError(f"unknown loss {loss!r}; choose from {', '.join(LOSSES)}")
    X_t = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    y_t = None if y is None else torch.from_numpy(np.asarray(y, dtype=np.int64))
    if y_t is not None and len(y_t) and (int(y_t.min()) < 0 or int(y_t.max()) >= nclasses):
        raise DefsentError(f"labels must lie in 0..{nclasses - 1}")
    if targets is None:
        if y_t is None:
            raise DefsentError("fit_linear needs labels or soft targets")
        Y_t = torch.nn.functional.one_hot(y_t, nclasses).to(torch.float32)
    else:
        Y_t = torch.from_numpy(np.ascontiguousarray(targets, dtype=np.float32))
        if Y_t.shape != (X_t.shape[0], nclasses):
            raise DefsentError(
                f"soft targets of shape {tuple(Y_t.shape)} for {X_t.shape[0]} rows and {nclasses} classes"
            )
    if dev_score is None and y_t is None:
        raise DefsentError("dev accuracy needs labels: pass y or a dev_score")
    W0, b0 = linear_init(X_t.shape[1], nclasses, seed)
    fits: list[LinearFit] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # thousands of small steps: thread hand-offs cost more than they bring (~9x on 2 cores)
    try:
        for start in range(0, len(jobs), max_parallel):
            chunk = list(jobs[start : start + max_parallel])
            fits.extend(_fit_group(X_t, y_t, Y_t, chunk, config, seed, W0, b0, on_done, loss, dev_score))
    finally:
        torch.set_num_threads(threads)
    return fits


def _fit_group(
    X: torch.Tensor,
    y: torch.Tensor | None,
    Y: torch.Tensor,
    jobs: list[Job],
    config: ClassifierConfig,
    seed: int,
    W0: torch.Tensor,
    b0: torch.Tensor,
    on_done: Callable[[int], None] | None,
    loss: str = "cross-entropy",
    dev_score: DevScore | None = None,
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
            _train_pass(X, Y, orders, sub, wd[torch.from_numpy(active)], config.batch_size, loss)
        nepoch += config.epoch_size
        group.put(active, sub)
        accuracy = _dev_accuracy(X, y, sub, [devs[j] for j in active], dev_score)
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
        LinearFit(best_W[j].t().numpy().copy(), best_b[j].numpy().copy(), float(best_acc[j]), int(epochs[j]))
        for j in range(count)
    ]
