"""Entry-space transforms: FastICA as DefSent+ runs it, PCA whitening, and a change of scale.

ICA, DefSent+'s ``ICA-transform.py`` settings: ``StandardScaler`` per dimension, then
``FastICA(n_components=d, whiten="unit-variance", fun="logcosh", tol=1e-4, max_iter=1000,
random_state=42)`` on the float32 matrix, then x100, float32. (A torch re-implementation was
measured on the real MiniLM bank: no faster on CPU and a different fixed point; see ``bench/ica.py``.)

Whitening (Su et al. 2021): :func:`defsent_cli.space.linalg.pca_whiten`.
"""

from __future__ import annotations

import datetime as _dt
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .. import __version__
from ..console import make_progress
from ..errors import DefsentError
from ..formats.bank import Bank, BankFile
from ..log import note, warn
from .choices import DTYPES, FUNS, METHODS, WHITEN_MODES
from .linalg import check_rank, covariance_spectrum, pca_whiten, whitening_kernel

DEAD_RTOL = 1e-6  # a dimension whose std is below this times the largest std is constant ("dead")


@dataclass
class IcaSettings:
    """FastICA settings; the defaults are DefSent+'s."""

    n_components: int | None = None
    whiten: str = "unit-variance"
    fun: str = "logcosh"
    tol: float = 1e-4
    max_iter: int = 1000
    seed: int = 42


@dataclass
class TransformResult:
    """Transformed vectors (float32, scaled) and what was done to get them."""

    vectors: np.ndarray
    attrs: dict = field(default_factory=dict)
    n_iter: int = 0
    converged: bool = True
    seconds: float = 0.0
    dead_dims: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


# ---------------------------------------------------------------- checks


def check_space(vectors: np.ndarray, n_components: int | None = None, what: str = "the space") -> int:
    """Validate an (n, d) finite matrix with more rows than components; return the component count."""
    if vectors.ndim != 2:
        raise DefsentError(f"{what} must be a 2-D matrix, got shape {vectors.shape}")
    n, d = vectors.shape
    k = d if n_components is None else int(n_components)
    if not 1 <= k <= d:
        raise DefsentError(f"--n-components must be between 1 and {d} (the dimension), got {k}")
    if n <= k:
        raise DefsentError(
            f"{what} has {n} rows for {k} components; ICA / whitening needs more entries than dimensions"
        )
    if not np.isfinite(vectors).all():
        raise DefsentError(f"{what} contains NaN or infinite values")
    return k


def _logcosh(x: np.ndarray, alpha: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    # Same arithmetic as scikit-learn's private ``_logcosh`` (in place, row means in a loop).
    x *= alpha
    gx = np.tanh(x, x)
    g_x = np.empty(x.shape[0], dtype=x.dtype)
    for i, gx_i in enumerate(gx):
        g_x[i] = (alpha * (1 - gx_i**2)).mean()
    return gx, g_x


def _exp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    exp = np.exp(-(x**2) / 2)
    gx = x * exp
    g_x = (1 - x**2) * exp
    return gx, g_x.mean(axis=-1)


def _cube(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x**3, (3 * x**2).mean(axis=-1)


_NP_FUNS: dict[str, Callable] = {"logcosh": _logcosh, "exp": _exp, "cube": _cube}


def _fastica_sklearn(
    x: np.ndarray, s: IcaSettings, k: int, show_progress: bool | None, fit_only: bool = False
) -> tuple[object, int, bool]:
    """scikit-learn FastICA; the nonlinearity is passed as a counting callable with the built-in's arithmetic,
    which gives a per-iteration progress bar and the same numbers as ``fun="logcosh"``. Returns the sources of
    ``x`` (``fit_only``: the fitted estimator, whose ``transform`` gives the sources of any rows)."""
    from sklearn.decomposition import FastICA
    from sklearn.exceptions import ConvergenceWarning

    with make_progress("it", show_progress) as progress:
        task = progress.add_task(f"FastICA, <= {s.max_iter} it", total=s.max_iter)
        g = _NP_FUNS[s.fun]

        def fun(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            progress.advance(task)
            return g(values)

        ica = FastICA(
            n_components=k,
            whiten=s.whiten,
            fun=fun,
            tol=s.tol,
            max_iter=s.max_iter,
            random_state=s.seed,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            out = ica.fit(x) if fit_only else ica.fit_transform(x)
        progress.update(task, total=ica.n_iter_, completed=ica.n_iter_)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return out, int(ica.n_iter_), converged


def fastica(
    vectors: np.ndarray, settings: IcaSettings | None = None, show_progress: bool | None = None, fit_only: bool = False
) -> tuple[object, int, bool]:
    """FastICA sources of ``vectors`` (computed in its dtype): ``(sources, iterations, converged)``; ``fit_only``:
    the fitted estimator instead of the sources."""
    s = settings or IcaSettings()
    if s.fun not in FUNS:
        raise DefsentError(f"unknown --fun {s.fun!r}; use one of {', '.join(FUNS)}")
    if s.whiten not in WHITEN_MODES:
        raise DefsentError(f"unknown --whiten {s.whiten!r}; use one of {', '.join(WHITEN_MODES)}")
    if s.max_iter < 1 or s.tol < 0:
        raise DefsentError("--max-iter must be at least 1 and --tol non-negative")
    k = check_space(vectors, s.n_components)
    check_rank(covariance_spectrum(vectors)[1], k)
    return _fastica_sklearn(vectors, s, k, show_progress, fit_only)


@dataclass
class _Prepared:
    """The matrix a transform is fitted on: constant dimensions left out, standardised if asked."""

    x: np.ndarray
    dead: np.ndarray
    dim: int  # the input's dimension (dead ones included)
    asked: int | None  # --n-components as given
    settings: IcaSettings
    scaler: object | None  # the fitted StandardScaler
    attrs: dict


def _prepare(
    vectors,
    method: str,
    settings: IcaSettings | None = None,
    scale: float = 100.0,
    standardize_first=None,
    dtype="float32",
) -> _Prepared:
    if method not in METHODS:
        raise DefsentError(f"unknown --method {method!r}; use {' or '.join(METHODS)}")
    if dtype not in DTYPES:
        raise DefsentError(f"unknown --dtype {dtype!r}; use {' or '.join(DTYPES)}")
    s = settings or IcaSettings()
    asked = s.n_components
    standardize_first = (method == "ica") if standardize_first is None else standardize_first
    x = np.asarray(vectors, dtype=dtype)
    check_space(x, s.n_components)
    dead = dead_dimensions(x)
    if dead.size:
        x = np.delete(x, dead, axis=1)
        if s.n_components is not None and s.n_components > x.shape[1]:
            raise DefsentError(
                f"--n-components {s.n_components} exceeds the {x.shape[1]} live dimensions "
                f"({dead.size} are constant: {_dims(dead)})"
            )
        s = replace(s, n_components=s.n_components or x.shape[1])
    scaler = None
    if standardize_first:
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler()  # zero mean, unit variance per dimension (keeps the dtype)
        x = scaler.fit_transform(x)
    attrs: dict = {
        "transform": method,
        "transform_scale": float(scale),
        "transform_standardize": bool(standardize_first),
        "transform_dtype": dtype,
        "transform_n_components": int(s.n_components or x.shape[1]),
        "transform_dead_dims": _dims(dead),
    }
    return _Prepared(x, dead, np.asarray(vectors).shape[1], asked, s, scaler, attrs)


def _ica_attrs(s: IcaSettings, n_iter: int, converged: bool) -> dict:
    return {
        "transform_library": _sklearn_version(),
        "transform_whiten": s.whiten,
        "transform_fun": s.fun,
        "transform_tol": float(s.tol),
        "transform_max_iter": int(s.max_iter),
        "transform_seed": int(s.seed),
        "transform_n_iter": int(n_iter),
        "transform_converged": bool(converged),
    }


def _finish(out: np.ndarray, prep: _Prepared, scale: float) -> np.ndarray:
    """Components back at the live positions (dead ones zero, when all were asked for), times ``scale``, float32."""
    if prep.dead.size and prep.asked is None:
        full = np.zeros((out.shape[0], prep.dim), dtype=out.dtype)
        full[:, np.setdiff1d(np.arange(prep.dim), prep.dead)] = out
        out = full
    return (np.asarray(out) * scale).astype(np.float32)


def transform_space(
    vectors: np.ndarray,
    method: str = "ica",
    *,
    settings: IcaSettings | None = None,
    scale: float = 100.0,
    standardize_first: bool | None = None,
    dtype: str = "float32",
    show_progress: bool | None = None,
) -> TransformResult:
    """ICA (DefSent+ defaults) or PCA whitening of an (n, d) matrix, times ``scale``, as float32.

    ``standardize_first`` defaults to True for ICA (DefSent+) and False for whitening (Su et al.).
    Constant ("dead") dimensions (see :func:`dead_dimensions`) are left out of the transform: with all
    components asked for, they stay zero columns at their positions, so the output keeps d columns.
    """
    start = time.perf_counter()
    prep = _prepare(vectors, method, settings, scale, standardize_first, dtype)
    s, attrs = prep.settings, prep.attrs
    if method == "whiten":
        out, n_iter, converged = pca_whiten(prep.x, s.n_components), 0, True
        attrs["transform_library"] = f"numpy {np.__version__}"
    else:
        out, n_iter, converged = fastica(prep.x, s, show_progress)
        attrs.update(_ica_attrs(s, n_iter, converged))
    result = _finish(out, prep, scale)
    seconds = time.perf_counter() - start
    attrs["transform_seconds"] = round(seconds, 3)
    return TransformResult(result, attrs, n_iter, converged, seconds, prep.dead)


@dataclass
class FittedTransform:
    """A transform fitted on some rows (ICA or whitening, with its dead dimensions and standardisation), applied
    to any rows by :meth:`apply`: ``ica --fit-rows`` fits on a sample and transforms the bank chunk by chunk."""

    prep: _Prepared
    method: str
    scale: float
    model: object  # FastICA, or (mean, kernel) of the whitening
    n_iter: int = 0
    converged: bool = True
    seconds: float = 0.0

    @property
    def attrs(self) -> dict:
        return self.prep.attrs

    @property
    def dead_dims(self) -> np.ndarray:
        return self.prep.dead

    @property
    def width(self) -> int:
        """Columns of the output: the input's, or --n-components when given."""
        return self.prep.dim if self.prep.asked is None else int(self.prep.asked)

    def apply(self, rows: np.ndarray) -> np.ndarray:
        """The transformed rows, as :func:`transform_space` gives them for the rows it was fitted on."""
        x = np.asarray(rows, dtype=self.prep.attrs["transform_dtype"])
        if self.prep.dead.size:
            x = np.delete(x, self.prep.dead, axis=1)
        if self.prep.scaler is not None:
            x = self.prep.scaler.transform(x)
        if self.method == "whiten":
            mean, kernel = self.model
            out = ((np.asarray(x, dtype=np.float64) - mean) @ kernel).astype(x.dtype, copy=False)
        else:
            out = self.model.transform(x)
        return _finish(out, self.prep, self.scale)


def fit_transform(
    sample: np.ndarray, method: str = "ica", *, scale: float = 100.0, show_progress: bool | None = None, **options
) -> FittedTransform:
    """The transform of :func:`transform_space` fitted on ``sample``, to apply to other rows; ``options``:
    ``settings``, ``standardize_first`` and ``dtype``, as there."""
    start = time.perf_counter()
    prep = _prepare(sample, method, scale=scale, **options)
    s = prep.settings
    if method == "whiten":
        k = prep.x.shape[1] if s.n_components is None else int(s.n_components)
        mean, values, vectors = covariance_spectrum(prep.x)
        fitted = FittedTransform(prep, method, scale, (mean, whitening_kernel(values, vectors, k)))
        prep.attrs["transform_library"] = f"numpy {np.__version__}"
    else:
        model, n_iter, converged = fastica(prep.x, s, show_progress, fit_only=True)
        fitted = FittedTransform(prep, method, scale, model, n_iter, converged)
        prep.attrs.update(_ica_attrs(s, n_iter, converged))
    fitted.seconds = time.perf_counter() - start
    return fitted


def dead_dimensions(vectors: np.ndarray, rtol: float = DEAD_RTOL) -> np.ndarray:
    """Indices of constant dimensions: standard deviation at most ``rtol`` times the largest one.

    Some encoders have them (all-MiniLM-L6-v2 has three); they carry nothing and make the covariance singular.
    """
    std = np.asarray(vectors, dtype=np.float64).std(axis=0)
    if std.max() <= 0:
        raise DefsentError("every dimension is constant: nothing to transform")
    return np.flatnonzero(std <= std.max() * rtol)


def _dims(indices: np.ndarray) -> str:
    return ",".join(str(int(i)) for i in indices)


def _sklearn_version() -> str:
    import sklearn

    return f"scikit-learn {sklearn.__version__}"


def transform_bank(
    bank: Bank, method: str = "ica", source: str | Path | None = None, **kwargs
) -> tuple[Bank, TransformResult]:
    """A new bank with the same entries, counts and provenance, vectors transformed (see :func:`transform_space`).

    Says (through :mod:`defsent_cli.log`) when the bank was already transformed, which constant dimensions
    were left out, and when FastICA did not converge (the bank is still returned, marked as such).
    """
    previous = input_transform(bank, source)
    result = transform_space(bank.vectors, method, **kwargs)
    attrs = transformed_attrs(bank.attrs, previous, source, result.attrs, result.dead_dims, result.n_iter)
    return Bank(list(bank.entries), result.vectors, bank.counts.copy(), attrs), result


def input_transform(bank: Bank | BankFile, source: str | Path | None) -> str:
    """The transform the input bank already had (with a note when it had one)."""
    previous = str(bank.attrs.get("transform", "none"))
    if previous != "none":
        note(f"{source or 'the bank'} is already transformed ({previous}); transforming again")
    return previous


def transformed_attrs(
    attrs: dict, previous: str, source: str | Path | None, changes: dict, dead: np.ndarray, n_iter: int
) -> dict:
    """The attributes of a transformed bank: its input's, ``changes`` (the transform's), stamped now; says which
    constant dimensions were left out and when FastICA did not converge (the bank is still written, marked)."""
    changes = {"transform_input": previous, **changes}
    if source is not None:
        changes["transform_source"] = str(source)
    if dead.size:
        note(
            f"{dead.size} constant dimension(s) ({changes['transform_dead_dims']}) left out of the "
            "transform; they are zero columns in the output"
        )
    if changes.get("transform_converged") is False:
        warn(
            f"FastICA did NOT converge in {n_iter} iterations (tol {changes['transform_tol']:g}); the bank is "
            "marked transform_converged=False. Raise --max-iter or --tol to converge."
        )
    return _stamped({**attrs, **changes})


def _stamped(attrs: dict) -> dict:
    attrs["transform_created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    attrs["defsent_version"] = __version__
    return attrs


def rescale_bank(bank: Bank, scale: float, source: str | Path | None = None) -> Bank:
    """The same transformed bank with its vectors multiplied to ``scale`` instead of its ``transform_scale``.

    ICA and whitening are linear up to the final scale, so this equals fitting again with ``scale``
    (up to float32 rounding) without the fit (FastICA on a full WordNet bank takes up to 20 minutes).
    """
    method = str(bank.attrs.get("transform", "none"))
    if method not in METHODS:
        raise DefsentError(f"--rescale needs an ica or whiten bank; this one has transform {method!r}")
    old = float(bank.attrs.get("transform_scale", 1.0))
    if not (np.isfinite(old) and old != 0) or not (np.isfinite(scale) and scale != 0):
        raise DefsentError(f"--rescale goes between finite non-zero scales, not x{old:g} -> x{scale:g}")
    vectors = (np.asarray(bank.vectors, dtype=np.float64) * (scale / old)).astype(np.float32)
    changes = {"transform_scale": float(scale), "transform_rescaled_from": old}
    if source is not None:
        changes["transform_rescale_source"] = str(source)
    return Bank(list(bank.entries), vectors, bank.counts.copy(), _stamped({**bank.attrs, **changes}))
