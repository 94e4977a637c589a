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
from ..formats.bank import Bank
from ..log import note, warn
from .choices import DTYPES, FUNS, METHODS, WHITEN_MODES
from .linalg import check_rank, covariance_spectrum, pca_whiten

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


def standardize(vectors: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance per dimension (scikit-learn ``StandardScaler``; keeps the dtype)."""
    from sklearn.preprocessing import StandardScaler

    return StandardScaler().fit_transform(vectors)


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


def _fastica_sklearn(x: np.ndarray, s: IcaSettings, k: int, show_progress: bool | None) -> tuple[np.ndarray, int, bool]:
    """scikit-learn FastICA; the nonlinearity is passed as a counting callable with the built-in's arithmetic,
    which gives a per-iteration progress bar and the same numbers as ``fun="logcosh"``."""
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
            sources = ica.fit_transform(x)
        progress.update(task, total=ica.n_iter_, completed=ica.n_iter_)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return sources, int(ica.n_iter_), converged


def fastica(
    vectors: np.ndarray, settings: IcaSettings | None = None, show_progress: bool | None = None
) -> tuple[np.ndarray, int, bool]:
    """FastICA sources of ``vectors`` (computed in its dtype): ``(sources, iterations, converged)``."""
    s = settings or IcaSettings()
    if s.fun not in FUNS:
        raise DefsentError(f"unknown --fun {s.fun!r}; use one of {', '.join(FUNS)}")
    if s.whiten not in WHITEN_MODES:
        raise DefsentError(f"unknown --whiten {s.whiten!r}; use one of {', '.join(WHITEN_MODES)}")
    if s.max_iter < 1 or s.tol < 0:
        raise DefsentError("--max-iter must be at least 1 and --tol non-negative")
    k = check_space(vectors, s.n_components)
    check_rank(covariance_spectrum(vectors)[1], k)
    return _fastica_sklearn(vectors, s, k, show_progress)


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
    if method not in METHODS:
        raise DefsentError(f"unknown --method {method!r}; use {' or '.join(METHODS)}")
    if dtype not in DTYPES:
        raise DefsentError(f"unknown --dtype {dtype!r}; use {' or '.join(DTYPES)}")
    s = settings or IcaSettings()
    asked = s.n_components
    standardize_first = (method == "ica") if standardize_first is None else standardize_first
    start = time.perf_counter()
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
    if standardize_first:
        x = standardize(x)
    attrs: dict = {
        "transform": method,
        "transform_scale": float(scale),
        "transform_standardize": bool(standardize_first),
        "transform_dtype": dtype,
        "transform_n_components": int(s.n_components or x.shape[1]),
        "transform_dead_dims": _dims(dead),
    }
    if method == "whiten":
        out, n_iter, converged = pca_whiten(x, s.n_components), 0, True
        attrs["transform_library"] = f"numpy {np.__version__}"
    else:
        out, n_iter, converged = fastica(x, s, show_progress)
        attrs.update(
            {
                "transform_library": _sklearn_version(),
                "transform_whiten": s.whiten,
                "transform_fun": s.fun,
                "transform_tol": float(s.tol),
                "transform_max_iter": int(s.max_iter),
                "transform_seed": int(s.seed),
                "transform_n_iter": int(n_iter),
                "transform_converged": bool(converged),
            }
        )
    if dead.size and asked is None:
        # all dimensions asked for: the components fill the live positions, the dead ones stay zero
        full = np.zeros((out.shape[0], vectors.shape[1]), dtype=out.dtype)
        full[:, np.setdiff1d(np.arange(vectors.shape[1]), dead)] = out
        out = full
    result = (np.asarray(out) * scale).astype(np.float32)
    seconds = time.perf_counter() - start
    attrs["transform_seconds"] = round(seconds, 3)
    return TransformResult(result, attrs, n_iter, converged, seconds, dead)


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
    previous = str(bank.attrs.get("transform", "none"))
    if previous != "none":
        note(f"{source or 'the bank'} is already transformed ({previous}); transforming again")
    result = transform_space(bank.vectors, method, **kwargs)
    attrs = {"transform_input": previous, **result.attrs}
    if source is not None:
        attrs["transform_source"] = str(source)
    if result.dead_dims.size:
        note(
            f"{result.dead_dims.size} constant dimension(s) ({attrs['transform_dead_dims']}) left out of the "
            "transform; they are zero columns in the output"
        )
    if method == "ica" and not result.converged:
        warn(
            f"FastICA did NOT converge in {result.n_iter} iterations (tol {attrs['transform_tol']:g}); the bank is "
            "marked transform_converged=False. Raise --max-iter or --tol to converge."
        )
    return _derived_bank(bank, result.vectors, attrs), result


def _derived_bank(bank: Bank, vectors: np.ndarray, changes: dict) -> Bank:
    """The same entries, counts and provenance with new vectors and these attributes, stamped now."""
    attrs = {**bank.attrs, **changes}
    attrs["transform_created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    attrs["defsent_version"] = __version__
    return Bank(list(bank.entries), vectors, bank.counts.copy(), attrs)


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
    return _derived_bank(bank, vectors, changes)
