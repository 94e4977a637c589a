"""The small linear algebra the spaces share: the covariance spectrum, the one PCA whitening, L2 rows.

Whitening (Su et al. 2021): mu = mean(X), cov = U L U^T (biased), x' = (x - mu) U L^-1/2, keeping the
k largest components. ``ica --method whiten`` and the ``whiten`` post-processing step both use
:func:`whitening_kernel`; they differ only in what a rank-deficient covariance does: a bank refuses
(``rank="raise"``: the user picks fewer components), a post-processing fit on a small task set
clips the tiny eigenvalues and says so (``rank="clip"``).
"""

from __future__ import annotations

import numpy as np

from ..errors import DefsentError
from ..log import warn

RANK_RTOL = 1e-12  # an eigenvalue below this times the largest one counts as zero


def covariance_spectrum(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, eigenvalues (descending) and eigenvectors of the (biased) covariance, float64."""
    x64 = np.asarray(x, dtype=np.float64)
    mean = x64.mean(axis=0)
    xc = x64 - mean
    cov = xc.T @ xc / x64.shape[0]
    values, vectors = np.linalg.eigh(cov)
    order = np.argsort(values)[::-1]
    values, vectors = np.clip(values[order], 0.0, None), vectors[:, order]
    vectors *= np.sign(vectors[0] + (vectors[0] == 0))  # deterministic signs, as scikit-learn's whitening
    return mean, values, vectors


def rank_of(values: np.ndarray) -> int:
    """How many eigenvalues (descending) are not zero relative to the largest."""
    return int((values > values[0] * RANK_RTOL).sum()) if values[0] > 0 else 0


def check_rank(values: np.ndarray, k: int) -> None:
    """Refuse ``k`` components when the covariance has fewer non-zero eigenvalues (says which k works)."""
    found = rank_of(values)
    if found < k:
        raise DefsentError(
            f"the space is rank-deficient (rank {found} < {k} components): some dimensions are constant or "
            f"collinear; pass --n-components {found} or fix the bank"
        )


def whitening_kernel(values: np.ndarray, vectors: np.ndarray, k: int, rank: str = "raise", name: str = "whiten"):
    """The (d, k) matrix U_k L_k^-1/2 of the top ``k`` components.

    ``rank="raise"``: fewer than ``k`` non-zero eigenvalues is an error that says which ``--n-components``
    would work; ``rank="clip"``: such eigenvalues are raised to the floor (largest x RANK_RTOL) and a
    warning says how many directions are amplified noise.
    """
    if values[0] <= 0:
        raise DefsentError("every dimension is constant: nothing to whiten")
    found = rank_of(values)
    floor = values[0] * RANK_RTOL
    if found < k:
        if rank == "raise":
            check_rank(values, k)
        warn(
            f"{name}: the fit set is rank-deficient ({k - found} of {k} eigenvalues ~0, clipped to {floor:.3g}); "
            "those directions are amplified noise"
        )
    return vectors[:, :k] / np.sqrt(np.maximum(values[:k], floor))


def pca_whiten(vectors: np.ndarray, n_components: int | None = None, rank: str = "raise") -> np.ndarray:
    """PCA whitening of an (n, d) matrix: centre, rotate onto the covariance eigenvectors, unit variance."""
    k = vectors.shape[1] if n_components is None else int(n_components)
    mean, values, eigvecs = covariance_spectrum(vectors)
    kernel = whitening_kernel(values, eigvecs, k, rank)
    dtype = vectors.dtype if vectors.dtype in (np.float32, np.float64) else np.float64
    return ((np.asarray(vectors, dtype=np.float64) - mean) @ kernel).astype(dtype, copy=False)


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; zero rows stay zero (same dtype for float input)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(np.asarray(vectors).dtype, copy=False)
