"""The paper's pictures of an entry space: 2-D SVD projection (uncentred) and 2-D PCA-whitened projection.

matplotlib is optional (the ``plot`` extra) and imported only here, with the Agg canvas:
no display, no pyplot global state.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import DefsentError
from .io import atomic_path
from .space import Space, covariance_spectrum

PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def svd_projection(vectors: np.ndarray) -> np.ndarray:
    """Coordinates on the two largest right-singular directions of the uncentred matrix (n, 2).

    Signs are chosen so the mean projection is non-negative: a cone points right / up.
    """
    x = np.asarray(vectors, dtype=np.float64)
    values, eigvecs = np.linalg.eigh(x.T @ x)
    top = eigvecs[:, np.argsort(values)[::-1][:2]]
    proj = x @ top
    proj *= np.where(proj.mean(axis=0) < 0, -1.0, 1.0)
    return proj


def whitened_projection(vectors: np.ndarray) -> np.ndarray:
    """Coordinates on the two top principal components, each scaled to unit variance (n, 2)."""
    x = np.asarray(vectors, dtype=np.float64)
    mean, values, eigvecs = covariance_spectrum(x)
    scale = np.sqrt(np.where(values[:2] > 0, values[:2], 1.0))
    return (x - mean) @ eigvecs[:, :2] / scale


def _require_matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise DefsentError(
            "--plot needs matplotlib: pip install 'defsent-cli[plot]' (or pip install matplotlib)"
        ) from None
    return Figure, FigureCanvasAgg


def check_plot_path(path: str | Path) -> Path:
    """The plot format is named by the suffix: .png, .pdf or .svg."""
    path = Path(path)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise DefsentError(
            f"unknown plot suffix {path.suffix or '(none)'}; use one of {', '.join(PLOT_SUFFIXES)}", path=path
        )
    _require_matplotlib()
    return path


def plot_spaces(path: str | Path, spaces: Sequence[Space], points: int = 5000, seed: int = 0) -> Path:
    """Draw one row per space (SVD | PCA-whitened), ``points`` sampled rows each, atomically to ``path``."""
    path = check_plot_path(path)
    figure_cls, canvas_cls = _require_matplotlib()
    rows = len(spaces)
    fig = figure_cls(figsize=(11, 5.2 * rows), layout="constrained")
    canvas_cls(fig)
    subfigs = fig.subfigures(rows, 1, squeeze=False)[:, 0]
    rng = np.random.default_rng(seed)
    for subfig, space in zip(subfigs, spaces, strict=True):
        n = space.vectors.shape[0]
        pick = np.sort(rng.choice(n, size=min(points, n), replace=False))
        left, right = subfig.subplots(1, 2)
        projections = (
            (left, svd_projection(space.vectors)[pick], "SVD, uncentred: top-2 singular directions", "#1f77b4"),
            (right, whitened_projection(space.vectors)[pick], "PCA-whitened: top-2 components", "#d62728"),
        )
        for ax, proj, title, colour in projections:
            ax.scatter(proj[:, 0], proj[:, 1], s=2, alpha=0.35, color=colour, linewidths=0, rasterized=True)
            ax.axhline(0, color="0.6", lw=0.6, zorder=0)
            ax.axvline(0, color="0.6", lw=0.6, zorder=0)
            ax.plot([0], [0], marker="+", color="k", ms=10)
            ax.set_aspect("equal", adjustable="datalim")
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("direction 1")
            ax.set_ylabel("direction 2")
        subfig.suptitle(f"{space.describe()}\n({len(pick):,} of {n:,} points)", fontsize=10)
    fmt = path.suffix.lower()[1:]
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=110)
    return path
