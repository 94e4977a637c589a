"""The paper's pictures of an entry space: 2-D SVD projection (uncentred) and 2-D PCA-whitened projection,
plus the two coordinate axes with the largest excess kurtosis (where ICA's non-Gaussian axes show); and the
loss and dev curves of training runs (``defsent plot``, read by :mod:`defsent_cli.formats.curves`).

matplotlib is optional (the ``plot`` extra) and imported only here, with the Agg canvas:
no display, no pyplot global state.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import DefsentError
from ..formats.vectors import Space
from ..io import atomic_path, is_stdout, refuse_stdout
from .linalg import covariance_spectrum

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


def most_kurtotic_axes(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two coordinate axes with the largest excess kurtosis: their indices and kurtoses.

    After ICA these are the spikiest independent components; after PCA whitening, near-Gaussian ones.
    """
    x = np.asarray(vectors, dtype=np.float64)
    xc = x - x.mean(axis=0)
    m2 = (xc**2).mean(axis=0)
    kurt = np.where(m2 > 0, (xc**4).mean(axis=0) / np.where(m2 > 0, m2, 1.0) ** 2 - 3.0, -np.inf)
    top = np.argsort(kurt)[::-1][:2]
    return top, kurt[top]


def _require_matplotlib(needs: str = "--plot"):
    """matplotlib's Figure and Agg canvas; without matplotlib, one error line saying what ``needs`` it and how to
    install it."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise DefsentError(
            f"{needs} needs matplotlib: pip install 'defsent-cli[plot]' (or pip install matplotlib)"
        ) from None
    return Figure, FigureCanvasAgg


def check_plot_path(path: str | Path, needs: str = "--plot") -> Path:
    """The plot format is named by the suffix: .png, .pdf or .svg."""
    path = Path(path)
    if is_stdout(path):
        raise DefsentError(refuse_stdout("file", "a picture"))
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise DefsentError(
            f"unknown plot suffix {path.suffix or '(none)'}; use one of {', '.join(PLOT_SUFFIXES)}", path=path
        )
    _require_matplotlib(needs)
    return path


def plot_spaces(path: str | Path, spaces: Sequence[Space], points: int = 5000, seed: int = 0) -> Path:
    """Draw one row per space (SVD | PCA-whitened | most kurtotic axes), ``points`` sampled rows each, atomically."""
    path = check_plot_path(path)
    figure_cls, canvas_cls = _require_matplotlib()
    rows = len(spaces)
    fig = figure_cls(figsize=(16, 5.4 * rows), layout="constrained")
    canvas_cls(fig)
    subfigs = fig.subfigures(rows, 1, squeeze=False)[:, 0]
    rng = np.random.default_rng(seed)
    for subfig, space in zip(subfigs, spaces, strict=True):
        n = space.vectors.shape[0]
        pick = np.sort(rng.choice(n, size=min(points, n), replace=False))
        left, middle, right = subfig.subplots(1, 3)
        axes, kurt = most_kurtotic_axes(space.vectors)
        kurtotic = f"axes {axes[0]} and {axes[1]}: largest excess kurtosis ({kurt[0]:.1f}, {kurt[1]:.1f})"
        panels = (
            (
                left,
                svd_projection(space.vectors)[pick],
                "SVD, uncentred: top-2 singular directions",
                "#1f77b4",
                "direction",
            ),
            (
                middle,
                whitened_projection(space.vectors)[pick],
                "PCA-whitened: top-2 components",
                "#d62728",
                "component",
            ),
            (right, space.vectors[pick][:, axes], kurtotic, "#2ca02c", None),
        )
        for ax, proj, title, colour, unit in panels:
            ax.scatter(proj[:, 0], proj[:, 1], s=2, alpha=0.35, color=colour, linewidths=0, rasterized=True)
            ax.axhline(0, color="0.6", lw=0.6, zorder=0)
            ax.axvline(0, color="0.6", lw=0.6, zorder=0)
            ax.plot([0], [0], marker="+", color="k", ms=10)
            ax.set_aspect("equal", adjustable="datalim")
            ax.set_title(title, fontsize=10)
            ax.set_xlabel(f"{unit} 1" if unit else f"axis {axes[0]}")
            ax.set_ylabel(f"{unit} 2" if unit else f"axis {axes[1]}")
        subfig.suptitle(f"{space.describe()}\n({len(pick):,} of {n:,} points)", fontsize=10)
    fmt = path.suffix.lower()[1:]
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=110)
    return path


def plot_curves(path: str | Path, runs: Sequence, smooth: int = 1, title: str | None = None) -> Path:
    """The training curves of ``runs`` (:class:`~defsent_cli.formats.curves.RunCurves`), one colour a run,
    labelled by its name, written atomically: the loss against the step, as a trailing moving average of
    ``smooth`` logged points over the raw curve drawn faint (``smooth`` 1: as logged); below it, when any run
    was scored as it trained, the dev score against the step, the kept checkpoint's step starred."""
    from ..formats.curves import moving_average

    path = check_plot_path(path, needs="defsent plot")
    figure_cls, canvas_cls = _require_matplotlib("defsent plot")
    from matplotlib.ticker import MaxNLocator

    with_dev = any(run.dev for run in runs)
    fig = figure_cls(figsize=(8, 7.5 if with_dev else 4.5), layout="constrained")
    canvas = canvas_cls(fig)
    axes = fig.subplots(2 if with_dev else 1, 1, sharex=True, squeeze=False)[:, 0]
    loss_ax = axes[0]
    kept_shown, star = False, {"marker": "*", "ms": 12, "markeredgecolor": "k", "linestyle": "none"}
    for number, run in enumerate(runs):
        colour = f"C{number % 10}"
        if run.loss:
            steps, values = [s for s, _ in run.loss], [v for _, v in run.loss]
            marker = "o" if len(steps) <= 40 else None
            if smooth > 1:
                loss_ax.plot(steps, values, color=colour, alpha=0.25, lw=1)
                values = moving_average(values, smooth)
            loss_ax.plot(steps, values, color=colour, lw=1.6, marker=marker, ms=3, label=run.name)
        if with_dev and run.dev:
            dev_ax = axes[1]
            steps, scores = [s for s, _ in run.dev], [v for _, v in run.dev]
            dev_ax.plot(steps, scores, color=colour, lw=1.6, marker="o", ms=3, label=run.name)
            if run.kept_step is not None and run.kept_step in steps:
                kept = scores[steps.index(run.kept_step)]
                dev_ax.plot([run.kept_step], [kept], color=colour, **star)
                kept_shown = True
    smoothed = f", moving average of {smooth}" if smooth > 1 else ""
    loss_ax.set_ylabel(f"training loss{smoothed}")
    loss_ax.set_title("loss", fontsize=10)
    if kept_shown:  # one legend entry for the stars, in no run's colour
        axes[1].plot([], [], color="0.6", label="kept checkpoint", **star)
    if with_dev:
        criteria = sorted({run.eval_on for run in runs if run.dev and run.eval_on})
        axes[1].set_ylabel(f"dev score ({', '.join(criteria)})" if criteria else "dev score")
        axes[1].set_title("dev evaluations", fontsize=10)
    columns = 1 + (len(runs) - 1) // 12
    for ax in axes:
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
        ax.tick_params(labelbottom=True)
        ax.grid(True, color="0.9", lw=0.6)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, ncols=columns)
    if title:
        fig.suptitle(title)
    with atomic_path(path) as tmp:
        canvas.print_figure(str(tmp), format=path.suffix.lstrip(".").lower(), dpi=110)
    return path
