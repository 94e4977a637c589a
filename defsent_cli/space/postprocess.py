"""Training-free post-processing of sentence-embedding matrices: fitted on a corpus, then re-applied.

=============  ======================================================================================
step           definition (fitted on the rows given to :meth:`PostChain.fit`)
=============  ======================================================================================
``zscore``     z = (x - mu) / sigma per dimension, population std; constant dimensions get sigma 1
``quantile``   scikit-learn ``QuantileTransformer`` to U(0, 1), n_quantiles = min(1000, n), no
               subsampling ("quantile-u", Stankevičius & Lukoševičius 2024); ``quantile:normal`` to N(0, 1)
``whiten``     PCA whitening (Su et al. 2021): cov = U L U^T (biased), x' = (x - mu) U L^-1/2
``whiten-k:K`` the same, keeping the K columns of largest eigenvalue (Su et al.'s dimension reduction)
``abtt:D``     All-But-The-Top (Mu & Viswanath 2018): x' = x - mu, minus its projection on the top D
               principal directions u_1..u_D of the fit set: x' - sum_i (x' . u_i) u_i
``l2``         x / ||x||_2 per row (no statistics; zero rows stay zero)
=============  ======================================================================================

Steps run in the order given, each fitted on the previous one's output. A fitted chain is saved as
HDF5 (:mod:`defsent_cli.formats.post`) so the same statistics can be re-applied to other sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..errors import DefsentError
from ..formats.post import FittedStep, PostFile, read_post, write_post
from ..log import warn
from .linalg import covariance_spectrum, l2_normalize, whitening_kernel

CHOICES = "zscore, quantile[:normal], whiten, whiten-k:K, abtt:D, l2 (comma-separated or repeated, applied in order)"


class PostStep:
    """One post-processor: ``fit`` learns ``state`` arrays, ``transform`` applies them (float64 in and out)."""

    name: ClassVar[str] = ""
    stateful: ClassVar[bool] = True

    def __init__(self, arg: str | None = None) -> None:
        if arg is not None:
            raise DefsentError(f"post-processing step {self.name!r} takes no argument; use one of {CHOICES}")
        self.state: dict[str, np.ndarray] = {}

    def token(self) -> str:
        return self.name

    def params(self) -> dict[str, Any]:
        return {}

    def fit(self, x: np.ndarray) -> None:
        raise NotImplementedError

    def transform(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.state = {key: np.asarray(value) for key, value in arrays.items()}


def _count(arg: str | None, name: str, what: str) -> int:
    if arg is None or not arg.strip().isdecimal() or int(arg) < 1:
        raise DefsentError(f"{name} needs {what} >= 1, e.g. {name}:2 (got {arg!r}); use one of {CHOICES}")
    return int(arg)


class ZScore(PostStep):
    """z = (x - mu) / sigma per dimension, mu and population sigma over the fit rows; sigma 0 -> 1."""

    name = "zscore"

    def fit(self, x: np.ndarray) -> None:
        mean, std = x.mean(axis=0), x.std(axis=0)
        constant = np.ptp(x, axis=0) == 0
        mean[constant], std[constant] = x[0, constant], 1.0  # constant dimensions map to exactly 0
        self.state = {"mean": mean, "std": std}

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (x - self.state["mean"]) / self.state["std"]


class Quantile(PostStep):
    """scikit-learn ``QuantileTransformer`` (Stankevičius & Lukoševičius 2024's quantile-u; ``:normal`` too)."""

    name = "quantile"

    def __init__(self, arg: str | None = None) -> None:
        if arg not in (None, "uniform", "normal"):
            raise DefsentError(f"quantile takes uniform or normal, got {arg!r}; use one of {CHOICES}")
        self.distribution = arg or "uniform"
        self.state = {}
        self.model: Any = None

    def token(self) -> str:
        return "quantile:normal" if self.distribution == "normal" else "quantile"

    def params(self) -> dict[str, Any]:
        fitted = {"n_quantiles": int(self.state["quantiles"].shape[0])} if self.state else {}
        return {"output_distribution": self.distribution, **fitted}

    def _model(self, n_quantiles: int) -> Any:
        from sklearn.preprocessing import QuantileTransformer

        return QuantileTransformer(
            n_quantiles=n_quantiles, output_distribution=self.distribution, subsample=10**9, random_state=0
        )

    def fit(self, x: np.ndarray) -> None:
        self.model = self._model(min(1000, x.shape[0])).fit(x)
        self.state = {"quantiles": self.model.quantiles_, "references": self.model.references_}

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        super().restore(arrays)
        quantiles = self.state["quantiles"]
        self.model = self._model(quantiles.shape[0])  # scikit-learn's own transform on the saved fit
        self.model.n_quantiles_, self.model.n_features_in_ = quantiles.shape
        self.model.quantiles_, self.model.references_ = quantiles, self.state["references"]

    def transform(self, x: np.ndarray) -> np.ndarray:
        return self.model.transform(x)


class Whiten(PostStep):
    """PCA whitening (Su et al. 2021): W = U L^-1/2, x' = (x - mu) W; ``whiten-k:K`` keeps K columns."""

    name = "whiten"

    def __init__(self, arg: str | None = None, k: int | None = None) -> None:
        super().__init__(arg)
        self.k = k

    def token(self) -> str:
        return "whiten" if self.k is None else f"whiten-k:{self.k}"

    def params(self) -> dict[str, Any]:
        return {} if self.k is None else {"k": self.k}

    def fit(self, x: np.ndarray) -> None:
        if self.k is not None and self.k > x.shape[1]:
            raise DefsentError(f"whiten-k:{self.k} keeps more components than the {x.shape[1]} dimensions")
        mean, values, vectors = covariance_spectrum(x)
        kernel = whitening_kernel(values, vectors, self.k or x.shape[1], rank="clip", name=self.token())
        self.state = {"mean": mean, "kernel": kernel}

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (x - self.state["mean"]) @ self.state["kernel"]


class WhitenK(Whiten):
    name = "whiten-k"

    def __init__(self, arg: str | None = None) -> None:
        super().__init__(k=_count(arg, "whiten-k", "the number of kept components K"))


class Abtt(PostStep):
    """All-But-The-Top (Mu & Viswanath 2018): x' = x - mu; out = x' - (x' U) U^T, U the top D directions."""

    name = "abtt"

    def __init__(self, arg: str | None = None) -> None:
        self.d = _count(arg, "abtt", "the number of removed directions D")
        self.state = {}

    def token(self) -> str:
        return f"abtt:{self.d}"

    def params(self) -> dict[str, Any]:
        return {"d": self.d}

    def fit(self, x: np.ndarray) -> None:
        if self.d >= x.shape[1]:
            raise DefsentError(f"abtt:{self.d} must remove fewer directions than the {x.shape[1]} dimensions")
        mean, _, vectors = covariance_spectrum(x)
        self.state = {"mean": mean, "directions": vectors[:, : self.d]}

    def transform(self, x: np.ndarray) -> np.ndarray:
        centred, u = x - self.state["mean"], self.state["directions"]
        return centred - (centred @ u) @ u.T


class L2(PostStep):
    """x / ||x||_2 per row; zero rows stay zero."""

    name = "l2"
    stateful = False

    def fit(self, x: np.ndarray) -> None:
        self.state = {}

    def transform(self, x: np.ndarray) -> np.ndarray:
        return l2_normalize(x)


STEPS: dict[str, type[PostStep]] = {s.name: s for s in (ZScore, Quantile, Whiten, WhitenK, Abtt, L2)}


def _check_matrix(x: Any, what: str, min_rows: int = 0) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise DefsentError(f"{what} needs a 2-D (rows, dims) matrix, got shape {x.shape}")
    if x.shape[0] < min_rows:
        raise DefsentError(f"{what} needs at least {min_rows} rows, got {x.shape[0]}")
    if not np.isfinite(x).all():
        raise DefsentError(f"{what}: the matrix contains NaN or infinite values")
    return x


class PostChain:
    """Post-processing steps applied in order; ``fit`` on a corpus, then ``transform`` any rows."""

    def __init__(self, steps: Sequence[PostStep] = ()) -> None:
        self.steps: list[PostStep] = list(steps)
        self.fit_rows: int | None = None
        self.fit_dims: int | None = None
        self.attrs: dict[str, Any] = {}

    def __bool__(self) -> bool:
        return bool(self.steps)

    def is_empty(self) -> bool:
        return not self.steps

    @property
    def fitted(self) -> bool:
        return self.fit_dims is not None

    def spec(self) -> str:
        return ",".join(step.token() for step in self.steps)

    def fit(self, x: np.ndarray) -> PostChain:
        x = _check_matrix(x, f"fitting post-processing {self.spec()!r}", min_rows=2)
        n, d = x.shape
        if n < 4 * d and any(step.stateful for step in self.steps):
            warn(
                f"post-processing {self.spec()!r} fitted on {n} rows for {d} dims "
                f"(fewer than 4 x dims = {4 * d}): its statistics are noisy"
            )
        for step in self.steps:
            step.fit(x)
            x = step.transform(x)
        self.fit_rows, self.fit_dims = n, d
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        if self.steps and not self.fitted:
            raise DefsentError(f"post-processing {self.spec()!r} is not fitted; fit it on a corpus or load a saved fit")
        x = _check_matrix(x, f"post-processing {self.spec()!r}")
        if self.fit_dims is not None and x.shape[1] != self.fit_dims:
            raise DefsentError(
                f"post-processing {self.spec()!r} was fitted on {self.fit_dims} dims, got {x.shape[1]}-dim vectors"
            )
        for step in self.steps:
            x = step.transform(x)
        return x.astype(np.float32)

    def fit_transform(self, x: np.ndarray) -> np.ndarray:
        return self.fit(x).transform(x)

    def describe(self) -> dict[str, Any]:
        steps = [{"name": step.name, **step.params()} for step in self.steps]
        return {"post": self.spec(), "steps": steps, "fit_rows": self.fit_rows, "fit_dims": self.fit_dims}

    def save(self, path: str | Path, attrs: dict[str, Any] | None = None) -> None:
        """Write the fit (atomically) with the chain's ``attrs`` and these as provenance."""
        if not self.fitted:
            raise DefsentError(f"post-processing {self.spec()!r} is not fitted; nothing to save", path=path)
        steps = [FittedStep(step.name, step.params(), step.state) for step in self.steps]
        write_post(path, PostFile(self.spec(), steps, self.fit_rows, self.fit_dims, {**self.attrs, **(attrs or {})}))

    @classmethod
    def load(cls, path: str | Path) -> PostChain:
        """Read a fit written by :meth:`save`; its provenance lands in ``attrs``."""
        saved = read_post(path)
        chain = parse_post(saved.spec)
        if len(chain.steps) != len(saved.steps):
            raise DefsentError(f"the file holds {len(saved.steps)} fitted steps for {saved.spec!r}", path=path)
        chain.fit_rows, chain.fit_dims, chain.attrs = saved.fit_rows, saved.fit_dims, dict(saved.attrs)
        # A damaged file (a missing or reshaped array, a zero scale) must fail here, not as a numpy error or
        # silent infinities later: the restored chain has to map random vectors of its width to finite ones.
        probe = np.random.default_rng(0).standard_normal((4, max(saved.fit_dims, 1)))
        try:
            for step, fitted in zip(chain.steps, saved.steps, strict=True):
                step.restore(fitted.arrays)
            with np.errstate(all="ignore"):
                sound = bool(np.isfinite(chain.transform(probe)).all())
        except (KeyError, ValueError, IndexError, TypeError, AttributeError):
            sound = False
        if not sound:
            raise DefsentError(
                f"damaged post-processing file: its fitted {saved.spec!r} does not map {saved.fit_dims}-dim "
                "vectors to finite ones; refit it with defsent fit-post",
                path=path,
            )
        return chain


def parse_post(spec: str | Sequence[str] | None) -> PostChain:
    """``"zscore,abtt:2"``, ``["zscore", "abtt:2"]`` (a repeated option) or None / "" / "none" (empty)."""
    parts = [spec] if isinstance(spec, str) else list(spec or [])
    steps: list[PostStep] = []
    for token in (t.strip() for part in parts for t in str(part).split(",")):
        if not token or token.lower() == "none":
            continue
        name, _, arg = token.partition(":")
        step_cls = STEPS.get(name.strip().lower())
        if step_cls is None:
            raise DefsentError(f"unknown post-processing step {token!r}; use one of {CHOICES}")
        steps.append(step_cls(arg.strip() if ":" in token else None))
    return PostChain(steps)
