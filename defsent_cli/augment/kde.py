"""Matching the silver scores' distribution to the gold one, on scipy's ``gaussian_kde``.

- ``kde`` (Thakur et al. 2021, Augmented SBERT): keep each silver pair with probability
  min(1, F_gold(s) / F_silver(s)), F the kernel density estimates of the gold and of all silver scores;
- ``iterative`` (Reiml 2023, Algorithm 1): shuffle the silver pairs, start the kept set with the first two
  (of different scores: a KDE of one value is singular), and sweep the rest: a pair whose gold density is
  above its density under the KDE of the pairs kept so far is kept, and that KDE is refitted; sweeps repeat
  until one keeps nothing (or ``max_rounds``). A hard cut instead of a draw, the density of what is kept
  compared with the target rather than that of everything offered.

:func:`histogram_distance` measures the result: the total variation distance between the gold and the kept
scores' histograms (0 = the same shape, 1 = disjoint).
"""

from __future__ import annotations

import numpy as np

from ..errors import DefsentError

METHODS = ("kde", "iterative")


def _kde(values: np.ndarray, what: str):
    from scipy.stats import gaussian_kde

    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2 or np.ptp(values) == 0:
        raise DefsentError(f"the {what} scores need at least two different values for a density estimate")
    return gaussian_kde(values)


def kde_sample(gold: np.ndarray, silver: np.ndarray, seed: int = 42) -> np.ndarray:
    """Thakur et al.'s KDE sampling: the sorted indices of the silver scores kept."""
    gold_density, silver_density = _kde(gold, "gold"), _kde(silver, "silver")
    silver = np.asarray(silver, dtype=np.float64)
    keep_probability = np.minimum(1.0, gold_density(silver) / np.maximum(silver_density(silver), 1e-300))
    draw = np.random.default_rng(seed).random(len(silver))
    return np.flatnonzero(draw < keep_probability)


def _kde_at(kept: np.ndarray, x: float) -> float:
    """The density at ``x`` of ``gaussian_kde(kept)`` (1-D, Scott's rule: bandwidth = the sample sd (ddof 1) x
    n^(-1/5)), computed directly: refitting scipy's object after every addition costs minutes for 10,000
    silver pairs, and the formula is all it does (tests/test_augment.py checks the two agree)."""
    n = len(kept)
    h = kept.std(ddof=1) * n ** (-0.2)
    z = (x - kept) / h
    return float(np.exp(-0.5 * z * z).sum() / (n * h * np.sqrt(2 * np.pi)))


def iterative_kde(gold: np.ndarray, silver: np.ndarray, seed: int = 42, max_rounds: int = 20) -> np.ndarray:
    """Reiml's iterative KDE (Algorithm 1): the sorted indices of the silver scores kept."""
    gold_density = _kde(gold, "gold")
    silver = np.asarray(silver, dtype=np.float64)
    order = np.random.default_rng(seed).permutation(len(silver))
    first = order[0]
    different = [i for i in order[1:] if silver[i] != silver[first]]
    if not different:
        raise DefsentError("the silver scores need at least two different values for a density estimate")
    kept = [int(first), int(different[0])]
    remaining = [int(i) for i in order if i not in (first, different[0])]
    gold_at = gold_density(silver)  # the gold density never changes: once for every silver score
    values = np.empty(len(silver))
    values[:2] = silver[kept]
    for _ in range(max_rounds):
        added, left = 0, []
        for i in remaining:
            if gold_at[i] > _kde_at(values[: len(kept)], silver[i]):
                values[len(kept)] = silver[i]
                kept.append(i)  # the kept set's KDE now includes it (it is refitted on every query)
                added += 1
            else:
                left.append(i)
        remaining = left
        if not added or not remaining:
            break
    return np.sort(np.asarray(kept, dtype=np.int64))


def histogram_distance(a: np.ndarray, b: np.ndarray, bins: int = 10, value_range: tuple[float, float] | None = None):
    """Total variation distance between the normalised histograms of ``a`` and ``b`` (shared bins)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    low, high = value_range or (min(a.min(), b.min()), max(a.max(), b.max()))
    edges = np.linspace(low, high if high > low else low + 1, bins + 1)
    ha, _ = np.histogram(np.clip(a, low, high), edges)
    hb, _ = np.histogram(np.clip(b, low, high), edges)
    return float(0.5 * np.abs(ha / max(ha.sum(), 1) - hb / max(hb.sum(), 1)).sum())


def plot_histograms(path, gold: np.ndarray, silver: np.ndarray, kept: np.ndarray, bins: int = 20):
    """The gold, all-silver and kept-silver score histograms (densities on shared bins), written atomically:
    whether the silver set now has the gold set's shape (Reiml 2023, Figures 6.3-6.5)."""
    from ..io import atomic_path
    from ..space.plots import _require_matplotlib, check_plot_path

    path = check_plot_path(path)
    figure_cls, canvas_cls = _require_matplotlib()
    fig = figure_cls(figsize=(7, 4), layout="constrained")
    canvas = canvas_cls(fig)
    ax = fig.subplots()
    low = min(gold.min(), silver.min())
    high = max(gold.max(), silver.max())
    edges = np.linspace(low, high if high > low else low + 1, bins + 1)
    for values, label, style in (
        (gold, f"gold ({len(gold):,})", {"color": "#1f77b4", "alpha": 0.45}),
        (silver, f"silver offered ({len(silver):,})", {"color": "0.6", "alpha": 0.35}),
        (kept, f"silver kept ({len(kept):,})", {"histtype": "step", "color": "#d62728", "linewidth": 2}),
    ):
        ax.hist(values, bins=edges, density=True, label=label, **style)
    ax.set_xlabel("score")
    ax.set_ylabel("density")
    ax.legend(fontsize=9)
    with atomic_path(path) as tmp:
        canvas.print_figure(str(tmp), format=path.suffix.lstrip(".").lower())
    return path
