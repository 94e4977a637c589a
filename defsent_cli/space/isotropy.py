"""Isotropy figures of an entry or sentence space: mean cosine of random pairs, share of variance in the
top 1 / 10 principal directions, the partition score I(W) of Mu & Viswanath (2018), IsoScore (Rudman et
al. 2022), the mean |skewness| and excess kurtosis of the axes (ICA looks for non-Gaussian axes); and
alignment and uniformity (Wang & Isola 2020) of sentence pairs.

IsoScore is written here rather than taken from the ``IsoScore`` package: it is five lines of linear
algebra on the covariance spectrum this module already computes, the package's PCA step needs at least
as many points as dimensions, and the package would be one more dependency for them. The steps are the
package's (``IsoScore.IsoScore``): PCA-reorient, take the variance of each principal axis, scale that
vector to norm sqrt(n), its distance from the all-ones vector divided by sqrt(2(n - sqrt n)) is the
isotropy defect delta, and IsoScore = ((n - delta^2 (n - sqrt n))^2 - n) / (n (n - 1)), the fraction
of the n dimensions used, in [0, 1] (1 = isotropic). The sample-or-population choice of variance
cancels in the scaling."""

from __future__ import annotations

import numpy as np

from ..errors import DefsentError
from .linalg import covariance_spectrum, l2_normalize

FIGURES = {
    "mean_cosine": "mean cosine, random pairs",
    "top1_variance_share": "variance share, top 1 PC",
    "top10_variance_share": "variance share, top 10 PCs",
    "isotropy_I": "I(W) (1 = isotropic)",
    "isotropy_I_unit": "I(W), unit-length rows",
    "isoscore": "IsoScore (1 = isotropic)",
    "mean_abs_skewness": "mean |skewness| of axes",
    "mean_excess_kurtosis": "mean excess kurtosis of axes",
    "mean_norm": "mean L2 norm",
}
#: sentence spaces only (``defsent inspect --model``)
PAIR_FIGURES = {
    "alignment": "alignment (STS-B train, 5.0 pairs)",
    "uniformity": "uniformity (STS-B train)",
    "alignment_pairs": "pairs for alignment",
    "uniformity_sentences": "sentences for uniformity",
}


def mean_cosine(vectors: np.ndarray, pairs: int = 100_000, seed: int = 0) -> tuple[float, int]:
    """Mean cosine over distinct pairs: all of them when there are at most ``pairs``, else a random sample."""
    x = np.asarray(vectors, dtype=np.float64)
    n = x.shape[0]
    if n < 2:
        raise DefsentError("the mean cosine needs at least 2 vectors")
    unit = l2_normalize(x)
    if n * (n - 1) // 2 <= pairs:
        gram = unit @ unit.T
        upper = np.triu_indices(n, 1)
        return float(gram[upper].mean()), len(upper[0])
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=pairs)
    j = rng.integers(0, n - 1, size=pairs)
    j += j >= i  # uniform over j != i
    return float(np.einsum("ij,ij->i", unit[i], unit[j]).mean()), pairs


def partition_isotropy(vectors: np.ndarray) -> float:
    """I(W) = min_c Z(c) / max_c Z(c), Z(c) = sum_i exp(c . w_i), c over the eigenvectors of W^T W (uncentred).

    Computed in log space, so large vectors (ICA x100) give a small number, not an overflow.
    """
    x = np.asarray(vectors, dtype=np.float64)
    _, eigvecs = np.linalg.eigh(x.T @ x)
    proj = x @ eigvecs  # (n, d)
    peak = proj.max(axis=0)
    log_z = peak + np.log(np.exp(proj - peak).sum(axis=0))
    return float(np.exp(log_z.min() - log_z.max()))


def isoscore(vectors: np.ndarray) -> float:
    """IsoScore (Rudman et al. 2022) of an (n_points, d) matrix: 1 = isotropic, 0 = one direction only
    (see the module docstring). NaN when every dimension is constant."""
    x = np.asarray(vectors, dtype=np.float64)
    _, variances, _ = covariance_spectrum(x)  # the variances of the PCA-reoriented points
    n = variances.shape[0]
    if n < 2:
        raise DefsentError("IsoScore needs at least 2 dimensions")
    size = np.linalg.norm(variances)
    if size == 0:
        return float("nan")
    normalized = variances * np.sqrt(n) / size
    defect = np.linalg.norm(normalized - 1.0) / np.sqrt(2 * (n - np.sqrt(n)))
    return float(((n - defect**2 * (n - np.sqrt(n))) ** 2 - n) / (n * (n - 1)))


def alignment(a: np.ndarray, b: np.ndarray, alpha: float = 2.0) -> float:
    """Wang & Isola (2020) alignment: mean ||f(x) - f(y)||^alpha over positive pairs (rows of ``a`` and
    ``b``), on L2-normalised vectors (their definition lives on the unit sphere). Lower is better."""
    a, b = l2_normalize(np.asarray(a, dtype=np.float64)), l2_normalize(np.asarray(b, dtype=np.float64))
    if a.shape != b.shape or len(a) == 0:
        raise DefsentError(f"alignment needs two equal, non-empty sets of vectors, got {a.shape} and {b.shape}")
    return float((np.linalg.norm(a - b, axis=1) ** alpha).mean())


def uniformity(vectors: np.ndarray, t: float = 2.0, block: int = 2048) -> float:
    """Wang & Isola (2020) uniformity: log of the mean of exp(-t ||f(x) - f(y)||^2) over all distinct
    pairs (i < j), on L2-normalised vectors, computed in blocks in log space. Lower is better."""
    from scipy.special import logsumexp

    x = l2_normalize(np.asarray(vectors, dtype=np.float64))
    n = len(x)
    if n < 2:
        raise DefsentError("uniformity needs at least 2 vectors")
    sq = (x**2).sum(axis=1)
    parts = []
    for start in range(0, n - 1, block):
        rows = x[start : start + block]
        d2 = np.maximum(sq[start : start + block, None] + sq[None, :] - 2 * rows @ x.T, 0.0)
        i = np.arange(start, start + len(rows))[:, None]
        parts.append(logsumexp(-t * d2[i < np.arange(n)[None, :]]))
    return float(logsumexp(parts) - np.log(n * (n - 1) / 2))


def axis_moments(vectors: np.ndarray) -> tuple[float, float]:
    """Mean |skewness| and mean excess kurtosis over the axes (population moments; constant axes skipped)."""
    x = np.asarray(vectors, dtype=np.float64)
    xc = x - x.mean(axis=0)
    m2 = (xc**2).mean(axis=0)
    live = m2 > 0
    if not live.any():
        return float("nan"), float("nan")
    xc, m2 = xc[:, live], m2[live]
    skew = (xc**3).mean(axis=0) / m2**1.5
    kurt = (xc**4).mean(axis=0) / m2**2 - 3.0
    return float(np.abs(skew).mean()), float(kurt.mean())


def space_figures(vectors: np.ndarray, pairs: int = 100_000, seed: int = 0) -> dict:
    """Every isotropy figure of an (n, d) space (see :data:`FIGURES`), plus n, d and the pairs used."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise DefsentError(f"need an (n, d) matrix with n >= 2, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise DefsentError("the space contains NaN or infinite values")
    cos, used = mean_cosine(x, pairs, seed)
    _, values, _ = covariance_spectrum(x)
    total = values.sum()
    norms = np.linalg.norm(x, axis=1)
    skew, kurt = axis_moments(x)
    return {
        "n": int(x.shape[0]),
        "d": int(x.shape[1]),
        "mean_cosine": cos,
        "pairs": int(used),
        "top1_variance_share": float(values[0] / total) if total > 0 else float("nan"),
        "top10_variance_share": float(values[:10].sum() / total) if total > 0 else float("nan"),
        "isotropy_I": partition_isotropy(x),
        "isotropy_I_unit": partition_isotropy(l2_normalize(x)),
        "isoscore": isoscore(x),
        "mean_abs_skewness": skew,
        "mean_excess_kurtosis": kurt,
        "mean_norm": float(norms.mean()),
    }


def space_report(space, pairs: int = 100_000, seed: int = 0) -> dict:
    """Every figure of one loaded space (:class:`~defsent_cli.formats.vectors.Space`) with its provenance,
    JSON-ready (NaN becomes null)."""
    try:
        figures = space_figures(space.vectors, pairs=pairs, seed=seed)
    except DefsentError as exc:
        raise DefsentError(str(exc), path=space.path) from None
    provenance = {k: space.attrs[k] for k in ("kind", "encoder", "transform") if k in space.attrs}
    figures = {k: (None if isinstance(v, float) and v != v else v) for k, v in figures.items()}
    return {"path": str(space.path), "describe": space.describe(), **provenance, **figures}
