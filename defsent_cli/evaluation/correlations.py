"""Correlations of predicted similarities with gold scores, and the three ways STS12-16 aggregate them.

- ``all``:   concatenate a year's subsets, one correlation (SimCSE, DefSent and DefSent+ report this);
- ``mean``:  SentEval's plain average of the per-subset correlations;
- ``wmean``: SentEval's average weighted by the subsets' numbers of scored pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
