"""`defsent ica` against a plain scikit-learn FastICA call with the same settings, on one bank, in one run.

    flock /tmp/defsent-heavy.lock .venv/bin/python bench/ica.py BANK [--subsample N] [--torch] [--baselines]

In this order:
  1. plain: StandardScaler().fit_transform, then FastICA(n_components=d, whiten="unit-variance",
     fun="logcosh", tol=1e-4, max_iter=1000, random_state=42).fit_transform, x100, float32 (in-process,
     the bank already in memory), on the same columns defsent transforms: constant ("dead") dimensions
     left out (all-MiniLM-L6-v2 has three; StandardScaler blows their float noise up to unit variance, so
     the literal recipe turns them into noise components). ``--plain-all-columns`` runs it on every column;
  2. `defsent ica BANK -o OUT` (a subprocess: its time includes start-up, reading and writing the bank;
     the compute-only time is read back from the bank's ``transform_seconds``);
  3. ``--torch``: the candidate faster implementation, the same parallel FastICA fixed point (scikit-learn's
     whitening and ``w_init``) with the data passes in torch float32, block by block;
  4. ``--baselines``: how stable the ICA of this bank is: plain again with the rows shuffled (only the
     summation order changes) and plain with seed + 1.
Prints times, iterations, convergence, the speed-up over plain, and the agreement with plain: max |difference|
and |corr| of the components after matching them one-to-one (ICA is unique only up to sign and order;
Hungarian assignment on |corr|): mean, min, and how many exceed 0.99.
``--subsample N`` runs all of it on N random rows (seed 0) written to a temporary bank first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from defsent_cli.formats.bank import Bank, read_bank, write_bank  # noqa: E402
from defsent_cli.space.transforms import dead_dimensions  # noqa: E402


def matched_abs_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|corr| between the columns of a and b after the best one-to-one matching."""
    from scipy.optimize import linear_sum_assignment

    a = (a - a.mean(0)) / a.std(0)
    b = (b - b.mean(0)) / b.std(0)
    corr = np.abs(a.T.astype(np.float64) @ b.astype(np.float64)) / a.shape[0]
    rows, cols = linear_sum_assignment(-corr)
    return corr[rows, cols]


def plain_fastica(x: np.ndarray, max_iter: int, tol: float, seed: int) -> tuple[np.ndarray, int, bool, float]:
    """The DefSent+ recipe, verbatim: StandardScaler, FastICA, x100, float32."""
    from sklearn.decomposition import FastICA
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import StandardScaler

    start = time.perf_counter()
    scaled = StandardScaler().fit_transform(x)
    ica = FastICA(
        n_components=x.shape[1], max_iter=max_iter, tol=tol, whiten="unit-variance", fun="logcosh", random_state=seed
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        out = (ica.fit_transform(scaled) * 100).astype(np.float32)
    seconds = time.perf_counter() - start
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return out, int(ica.n_iter_), converged, seconds


def _sym_decorrelation(w: np.ndarray) -> np.ndarray:
    """W <- (W W^T)^-1/2 W, as scikit-learn computes it."""
    from scipy import linalg

    s, u = linalg.eigh(np.dot(w, w.T))
    s = np.clip(s, a_min=np.finfo(w.dtype).tiny, a_max=None)
    return np.linalg.multi_dot([u * (1.0 / np.sqrt(s)), u.T, w])


def torch_fastica(
    x: np.ndarray, max_iter: int, tol: float, seed: int, block: int = 16384
) -> tuple[np.ndarray, int, bool, float]:
    """Candidate: StandardScaler, then scikit-learn's parallel FastICA (logcosh) with the passes in torch."""
    import torch
    from scipy import linalg
    from sklearn.preprocessing import StandardScaler

    start = time.perf_counter()
    x = StandardScaler().fit_transform(x)
    n, k = x.shape
    xt = np.array(x, copy=True).T  # (d, n), centred, as scikit-learn does
    xt -= xt.mean(axis=-1)[:, np.newaxis]
    u, d = linalg.svd(xt, full_matrices=False, check_finite=False)[:2]
    u *= np.sign(u[0])
    kernel = (u / d).T[:k]
    white = kernel @ xt
    white *= np.sqrt(n)
    rows = torch.from_numpy(np.ascontiguousarray(white.T))  # (n, k) white rows
    del white, u, d
    w = _sym_decorrelation(np.asarray(np.random.RandomState(seed).normal(size=(k, k)), dtype=x.dtype))
    converged, n_iter = False, 0
    for iteration in range(1, max_iter + 1):
        n_iter = iteration
        wt = torch.from_numpy(w)
        acc = torch.zeros((k, k), dtype=rows.dtype)
        dsum = torch.zeros(k, dtype=rows.dtype)
        for first in range(0, n, block):
            chunk = rows[first : first + block]
            proj = torch.tanh_(chunk @ wt.T)  # (m, k)
            acc.addmm_(proj.T, chunk)
            dsum += proj.shape[0] - torch.linalg.vector_norm(proj, dim=0) ** 2
        w1 = _sym_decorrelation((acc / n).numpy() - (dsum / n).numpy()[:, np.newaxis] * w)
        lim = float(np.max(np.abs(np.abs(np.einsum("ij,ij->i", w1, w)) - 1)))
        w = w1
        if lim < tol:
            converged = True
            break
    sources = np.linalg.multi_dot([w, kernel, xt]).T
    sources /= np.std(sources, axis=0, keepdims=True)
    out = (sources * 100).astype(np.float32)
    return out, n_iter, converged, time.perf_counter() - start


def report(name: str, seconds: float, n_iter: int, converged: bool, out: np.ndarray, plain: np.ndarray, plain_s: float):
    corr = matched_abs_corr(out, plain)
    diff = float(np.abs(out - plain).max()) if out.shape == plain.shape else float("nan")
    print(f"{name:>24}: {seconds:8.1f}s  {n_iter} iterations, converged={converged}")
    print(f"{'':>24}  speed-up over plain (plain time / this time): {plain_s / seconds:.2f}x")
    print(
        f"{'':>24}  agreement with plain: max |diff| {diff:.3g} (x100 scale), matched |corr| mean "
        f"{corr.mean():.6f}, min {corr.min():.6f}, {int((corr > 0.99).sum())}/{len(corr)} above 0.99"
    )
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bank", type=Path)
    parser.add_argument("--subsample", type=int, default=None, help="Random rows to use (default: all).")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--keep", type=Path, default=None, help="Keep the defsent output in this folder.")
    parser.add_argument("--plain-all-columns", action="store_true", help="Plain FastICA on the dead columns too.")
    parser.add_argument("--torch", action="store_true", help="Also time the torch candidate implementation.")
    parser.add_argument("--baselines", action="store_true", help="Also run plain on shuffled rows and seed + 1.")
    args = parser.parse_args()

    import sklearn
    import torch

    defsent = Path(sys.executable).with_name("defsent")
    work = Path(tempfile.mkdtemp(prefix="bench-ica-"))
    bank = read_bank(args.bank)
    source = args.bank
    if args.subsample and args.subsample < len(bank):
        pick = np.sort(np.random.default_rng(0).choice(len(bank), size=args.subsample, replace=False))
        bank = Bank([bank.entries[i] for i in pick], bank.vectors[pick], bank.counts[pick], bank.attrs)
        source = work / "subsample.h5"
        write_bank(source, bank)
    n, d = bank.vectors.shape
    print(f"bank: {args.bank} ({n:,} x {d}{', random subsample, seed 0' if source != args.bank else ''})")
    print(
        f"scikit-learn {sklearn.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"numpy {np.__version__}, {os.cpu_count()} CPUs"
    )
    print(
        f"settings: StandardScaler, FastICA logcosh unit-variance tol={args.tol:g} max_iter={args.max_iter} "
        f"seed={args.seed}, x100, float32"
    )
    dead = dead_dimensions(bank.vectors)
    print(f"constant (dead) dimensions: {dead.tolist() or 'none'}")
    sys.stdout.flush()

    live = bank.vectors if args.plain_all_columns else np.delete(bank.vectors, dead, axis=1)
    plain, plain_iter, plain_conv, plain_s = plain_fastica(live, args.max_iter, args.tol, args.seed)
    print(f"{'plain scikit-learn':>24}: {plain_s:8.1f}s  {plain_iter} iterations, converged={plain_conv}")
    print(f"{'':>24}  ({live.shape[1]} columns)")
    sys.stdout.flush()

    out = (args.keep or work) / "ica.h5"
    cmd = [str(defsent), "ica", str(source), "-o", str(out), "--force"]
    cmd += ["--max-iter", str(args.max_iter), "--tol", str(args.tol), "--seed", str(args.seed)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=dict(os.environ, DEFSENT_NO_PROGRESS="1"), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"defsent ica failed: {proc.stderr.strip()}")
    result = read_bank(out)
    ours = np.delete(result.vectors, dead, axis=1)  # the dead columns are zeros
    a = result.attrs
    report("defsent ica (wall)", wall, a["transform_n_iter"], a["transform_converged"], ours, plain, plain_s)
    print(f"{'':>24}  compute only (transform_seconds): {a['transform_seconds']:.1f}s")

    if args.torch:
        cand, it, conv, secs = torch_fastica(live, args.max_iter, args.tol, args.seed)
        report("torch candidate", secs, it, conv, cand, plain, plain_s)
    if args.baselines:
        perm = np.random.default_rng(1).permutation(n)
        shuffled, it, conv, secs = plain_fastica(live[perm], args.max_iter, args.tol, args.seed)
        unshuffled = np.empty_like(shuffled)
        unshuffled[perm] = shuffled
        report("plain, rows shuffled", secs, it, conv, unshuffled, plain, plain_s)
        other, it, conv, secs = plain_fastica(live, args.max_iter, args.tol, args.seed + 1)
        report(f"plain, seed {args.seed + 1}", secs, it, conv, other, plain, plain_s)


if __name__ == "__main__":
    main()
