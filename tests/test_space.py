"""Entry-space transforms (FastICA, whitening), isotropy figures on hand-made spaces, plots, the CLI."""

import json
import math

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from defsent_cli.errors import DefsentError
from defsent_cli.formats.bank import BANK_FORMAT, Bank, read_bank, write_bank
from defsent_cli.space.isotropy import axis_moments, mean_cosine, partition_isotropy, space_figures
from defsent_cli.space.linalg import pca_whiten
from defsent_cli.space.transforms import IcaSettings, fastica, transform_bank, transform_space


def sources_and_mixture(n: int = 6000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four independent non-Gaussian sources, linearly mixed and shifted (float32)."""
    rng = np.random.default_rng(seed)
    sources = np.column_stack(
        [rng.laplace(size=n), rng.uniform(-1, 1, size=n), rng.exponential(size=n), rng.standard_t(5, size=n)]
    )
    mixing = rng.standard_normal((4, 4))
    return sources, (sources @ mixing.T + 3.0).astype(np.float32)


def matched_abs_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|corr| of the columns of a and b after the best one-to-one matching (sign and order free)."""
    k = a.shape[1]
    corr = np.abs(np.corrcoef(a.T, b.T)[:k, k:])
    rows, cols = linear_sum_assignment(-corr)
    return corr[rows, cols]


def test_ica_recovers_independent_sources():
    sources, mixed = sources_and_mixture()
    result = transform_space(mixed, "ica")
    assert result.converged and 0 < result.n_iter < 1000
    assert result.vectors.dtype == np.float32 and result.vectors.shape == mixed.shape
    assert matched_abs_corr(result.vectors, sources).min() > 0.99
    # unit-variance sources, times 100
    np.testing.assert_allclose(result.vectors.std(axis=0), 100.0, rtol=1e-3)
    np.testing.assert_allclose(result.vectors.mean(axis=0), 0.0, atol=1e-2)
    assert result.attrs["transform"] == "ica" and result.attrs["transform_library"].startswith("scikit-learn")
    assert result.attrs["transform_converged"] is True and result.attrs["transform_n_iter"] == result.n_iter


def test_sklearn_backend_equals_plain_defsent_plus_recipe():
    from sklearn.decomposition import FastICA
    from sklearn.preprocessing import StandardScaler

    _, mixed = sources_and_mixture(n=3000, seed=1)
    ica = FastICA(n_components=4, max_iter=1000, tol=1e-4, whiten="unit-variance", fun="logcosh", random_state=42)
    expected = (ica.fit_transform(StandardScaler().fit_transform(mixed)) * 100).astype(np.float32)
    np.testing.assert_array_equal(transform_space(mixed).vectors, expected)


@pytest.mark.parametrize("fun", ["exp", "cube"])
def test_other_nonlinearities_equal_sklearn_builtins(fun):
    from sklearn.decomposition import FastICA

    _, mixed = sources_and_mixture(n=3000, seed=2)
    x = mixed.astype(np.float64)
    expected = FastICA(n_components=4, fun=fun, max_iter=1000, tol=1e-4, random_state=42).fit_transform(x)
    result = transform_space(x, settings=IcaSettings(fun=fun), dtype="float64", standardize_first=False, scale=1.0)
    np.testing.assert_allclose(result.vectors, expected.astype(np.float32), atol=1e-5)


def test_seed_fixes_the_output_and_non_convergence_is_reported():
    _, mixed = sources_and_mixture(n=2000, seed=3)
    a = transform_space(mixed, settings=IcaSettings(seed=7))
    b = transform_space(mixed, settings=IcaSettings(seed=7))
    np.testing.assert_array_equal(a.vectors, b.vectors)
    stuck = transform_space(mixed, settings=IcaSettings(max_iter=1, tol=0.0))
    assert stuck.converged is False and stuck.n_iter == 1
    assert stuck.attrs["transform_converged"] is False


def test_pca_whitening_is_su_et_al():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3000, 5)) @ rng.standard_normal((5, 5)) + 10.0
    white = pca_whiten(x)
    np.testing.assert_allclose(white.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(np.cov(white.T, bias=True), np.eye(5), atol=1e-10)
    # Su et al.: W = U L^-1/2 from cov = U L U^T; same up to the sign of each column
    mu = x.mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov(x.T, bias=True))
    order = np.argsort(values)[::-1]
    expected = (x - mu) @ (vectors[:, order] / np.sqrt(values[order]))
    np.testing.assert_allclose(np.abs(white), np.abs(expected), atol=1e-8)
    assert pca_whiten(x, n_components=2).shape == (3000, 2)
    scaled = transform_space(x.astype(np.float32), "whiten")
    assert scaled.vectors.dtype == np.float32 and scaled.attrs["transform_standardize"] is False
    np.testing.assert_allclose(scaled.vectors.std(axis=0), 100.0, rtol=1e-3)


def test_bad_spaces_are_clear_errors():
    with pytest.raises(DefsentError, match="more entries than dimensions"):
        transform_space(np.ones((4, 8), dtype=np.float32))
    rank1 = np.outer(np.arange(50.0), np.ones(3))
    with pytest.raises(DefsentError, match="rank-deficient"):
        fastica(rank1)
    with pytest.raises(DefsentError, match="rank-deficient"):
        pca_whiten(rank1)
    with pytest.raises(DefsentError, match="NaN"):
        transform_space(np.full((10, 2), np.nan))
    with pytest.raises(DefsentError, match="--n-components"):
        transform_space(np.ones((10, 2)), settings=IcaSettings(n_components=3))
    with pytest.raises(DefsentError, match="unknown --method"):
        transform_space(np.ones((10, 2)), "pca")


# ---------------------------------------------------------------- isotropy figures, hand-made spaces


def cross_polytope(d: int, s: float = 1.0) -> np.ndarray:
    """The 2d points +-s e_k: centred, isotropic covariance."""
    eye = np.eye(d) * s
    return np.vstack([eye, -eye])


def test_figures_of_a_cross_polytope():
    d, s = 6, 2.0
    x = cross_polytope(d, s)
    figures = space_figures(x)
    # each point: one antipode (cos -1), 2d-2 orthogonal points (cos 0)
    assert figures["mean_cosine"] == pytest.approx(-1 / (2 * d - 1))
    assert figures["pairs"] == 2 * d * (2 * d - 1) // 2
    assert figures["top1_variance_share"] == pytest.approx(1 / d)
    assert figures["top10_variance_share"] == pytest.approx(1.0)
    assert figures["isotropy_I"] == pytest.approx(1.0)
    assert figures["isotropy_I_unit"] == pytest.approx(1.0)
    # axis k holds s, -s and 2d-2 zeros: symmetric, excess kurtosis d - 3
    assert figures["mean_abs_skewness"] == pytest.approx(0.0, abs=1e-12)
    assert figures["mean_excess_kurtosis"] == pytest.approx(d - 3)
    assert figures["mean_norm"] == pytest.approx(s)


def test_figures_of_a_cone_and_of_identical_vectors():
    v = np.array([3.0, 4.0, 0.0])  # |v| = 5
    same = np.tile(v, (20, 1))
    assert mean_cosine(same)[0] == pytest.approx(1.0)
    # Z(v/|v|) = n e^|v|, Z(c orthogonal) = n
    assert partition_isotropy(same) == pytest.approx(math.exp(-5.0))
    # a one-dimensional spread around v: all variance in one direction
    line = v + np.linspace(-1, 1, 41)[:, None] * np.array([0.0, 0.0, 1.0])
    figures = space_figures(line)
    assert figures["top1_variance_share"] == pytest.approx(1.0)
    assert figures["mean_cosine"] > 0.9


def test_mean_cosine_sampling_and_moments():
    rng = np.random.default_rng(5)
    gaussian = rng.standard_normal((4000, 20))
    cos, used = mean_cosine(gaussian, pairs=20_000, seed=1)
    assert used == 20_000 and abs(cos) < 0.01
    assert mean_cosine(gaussian, pairs=20_000, seed=1) == (cos, used)
    skew, kurt = axis_moments(rng.exponential(size=(200_000, 2)))
    assert skew == pytest.approx(2.0, rel=0.05) and kurt == pytest.approx(6.0, rel=0.15)
    assert abs(axis_moments(gaussian)[1]) < 0.2


# ---------------------------------------------------------------- banks, plots, CLI


def make_bank(path, n: int = 400, d: int = 6, seed: int = 0) -> Bank:
    rng = np.random.default_rng(seed)
    vectors = (rng.laplace(size=(n, d)) @ rng.standard_normal((d, d)) + 5.0).astype(np.float32)
    attrs = {
        "format": BANK_FORMAT,
        "kind": "AMP",
        "encoder": "/models/tiny",
        "dictionary_sha256": "ab" * 32,
        "transform": "none",
        "created": "2024-01-01T00:00:00+00:00",
        "defsent_version": "0",
    }
    bank = Bank([f"entry {i}" for i in range(n)], vectors, np.arange(1, n + 1, dtype=np.int32), attrs)
    write_bank(path, bank)
    return bank


def test_transform_bank_keeps_entries_and_provenance(tmp_path):
    bank = make_bank(tmp_path / "bank.h5")
    new, result = transform_bank(bank, "ica", source="bank.h5")
    assert new.entries == bank.entries and new.counts.tolist() == bank.counts.tolist()
    for key in ("kind", "encoder", "dictionary_sha256", "created", "format"):
        assert new.attrs[key] == bank.attrs[key]
    assert new.attrs["transform"] == "ica" and new.attrs["transform_input"] == "none"
    assert new.attrs["transform_source"] == "bank.h5" and new.attrs["transform_seed"] == 42
    assert new.attrs["transform_scale"] == 100.0 and new.attrs["transform_fun"] == "logcosh"


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from defsent_cli.formats.vectors import load_space
    from defsent_cli.space.plots import most_kurtotic_axes, plot_spaces, svd_projection, whitened_projection

    make_bank(tmp_path / "bank.h5")
    space = load_space(tmp_path / "bank.h5")
    proj = svd_projection(space.vectors)
    assert proj.shape == (400, 2) and proj[:, 0].mean() > 0
    np.testing.assert_allclose(np.cov(whitened_projection(space.vectors).T, bias=True), np.eye(2), atol=1e-8)
    axes, kurt = most_kurtotic_axes(
        np.column_stack([np.ones(400), space.vectors, np.random.default_rng(0).laplace(size=400)])
    )
    assert axes[0] == 7 and kurt[0] > 1.0
    out = plot_spaces(tmp_path / "space.png", [space, space], points=100)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_cli_ica(cli, tmp_path):
    src = tmp_path / "bank.h5"
    bank = make_bank(src)
    out = tmp_path / "bank-ica.h5"
    result = cli("ica", src, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "converged in" in result.stderr and result.stdout == ""
    new = read_bank(out)
    assert new.entries == bank.entries and new.vectors.dtype == np.float32
    assert new.attrs["transform"] == "ica" and new.attrs["transform_converged"] is True
    assert new.attrs["encoder"] == "/models/tiny"
    expected = transform_space(bank.vectors).vectors
    np.testing.assert_array_equal(new.vectors, expected)

    again = cli("ica", src, "-o", out)
    assert again.exit_code == 2 and "--force" in again.stderr
    stuck = cli("ica", src, "-o", out, "--force", "--max-iter", "1", "--tol", "0")
    assert stuck.exit_code == 0 and "did NOT converge" in stuck.stderr
    assert read_bank(out).attrs["transform_converged"] is False

    white = cli("ica", src, "-o", tmp_path / "white.h5", "--method", "whiten", "--scale", "1")
    assert white.exit_code == 0, white.stderr
    wbank = read_bank(tmp_path / "white.h5")
    assert wbank.attrs["transform"] == "whiten"
    np.testing.assert_allclose(np.cov(wbank.vectors.T, bias=True), np.eye(6), atol=1e-4)


def test_cli_ica_rescale_equals_a_fit_at_the_new_scale(cli, tmp_path):
    src = tmp_path / "bank.h5"
    bank = make_bank(src)
    assert cli("ica", src, "-o", tmp_path / "x100.h5").exit_code == 0
    result = cli("ica", tmp_path / "x100.h5", "--rescale", "--scale", "1", "-o", tmp_path / "x1.h5")
    assert result.exit_code == 0, result.stderr
    assert "rescaled x100 -> x1" in result.stderr and "FastICA" not in result.stderr
    rescaled = read_bank(tmp_path / "x1.h5")
    fitted = transform_space(bank.vectors, scale=1.0).vectors
    np.testing.assert_allclose(rescaled.vectors, fitted, rtol=1e-6, atol=1e-7)
    assert rescaled.entries == bank.entries and rescaled.attrs["transform"] == "ica"
    assert rescaled.attrs["transform_scale"] == 1.0 and rescaled.attrs["transform_rescaled_from"] == 100.0
    assert rescaled.attrs["transform_seed"] == 42 and rescaled.attrs["encoder"] == "/models/tiny"
    # a plain bank has nothing to rescale: one line, exit 2, no output
    plain = cli("ica", src, "--rescale", "--scale", "1", "-o", tmp_path / "no.h5")
    assert plain.exit_code == 2 and "bank.h5: --rescale needs an ica or whiten bank" in plain.stderr
    assert "Traceback" not in plain.stderr and not (tmp_path / "no.h5").exists()


def test_cli_ica_errors_are_one_line(cli, tmp_path):
    not_bank = tmp_path / "plain.h5"
    not_bank.write_text("hello")
    result = cli("ica", not_bank, "-o", tmp_path / "o.h5")
    assert result.exit_code == 2 and "plain.h5" in result.stderr and "Traceback" not in result.stderr
    small = tmp_path / "small.h5"
    make_bank(small, n=5, d=6)
    result = cli("ica", small, "-o", tmp_path / "o.h5")
    assert result.exit_code == 2 and "small.h5: " in result.stderr and "more entries than dimensions" in result.stderr
    result = cli("ica", small, "-o", tmp_path / "o.h5", "--fun", "tanh")
    assert result.exit_code == 2 and "--fun" in result.stderr
    result = cli("ica", small, "-o", tmp_path / "o.txt")
    assert result.exit_code == 2 and ".h5" in result.stderr
    assert not (tmp_path / "o.h5").exists()


def _with_a_dead_dimension(path, n: int = 400) -> Bank:
    bank = make_bank(path, n=n)
    bank.vectors[:, 2] = 1.5  # a constant dimension: left out of the fit, a zero column after
    write_bank(path, bank)
    return bank


@pytest.mark.parametrize("method", ["ica", "whiten"])
def test_cli_ica_fit_rows_at_least_the_bank_is_the_whole_bank_fit(cli, tmp_path, monkeypatch, method):
    from defsent_cli.space import streamed

    monkeypatch.setattr(streamed, "READ_ROWS", 64)  # 7 chunks
    src = tmp_path / "bank.h5"
    bank = _with_a_dead_dimension(src)
    whole = cli("ica", src, "--method", method, "-o", tmp_path / "whole.h5")
    assert whole.exit_code == 0, whole.stderr
    for rows in ("400", "100000"):
        out = tmp_path / f"fit-{rows}.h5"
        result = cli("ica", src, "--method", method, "--fit-rows", rows, "-o", out)
        assert result.exit_code == 0, result.stderr
        assert "fitted on 400 rows" in result.stderr and "1 constant dimension(s) (2)" in result.stderr
        ours, theirs = read_bank(out), read_bank(tmp_path / "whole.h5")
        assert ours.entries == bank.entries and ours.counts.tolist() == bank.counts.tolist()
        # FastICA's transform of the rows instead of its fit_transform: float32 rounding at scale 100
        np.testing.assert_allclose(ours.vectors, theirs.vectors, atol=2e-3 if method == "ica" else 1e-5)
        assert np.abs(ours.vectors).max() > 10 and not ours.vectors[:, 2].any()
        moved = {"transform_created", "transform_seconds", "transform_fit_rows", "transform_fit_seed"}
        assert {k: v for k, v in ours.attrs.items() if k not in moved} == {
            k: v for k, v in theirs.attrs.items() if k not in moved
        }
        assert ours.attrs["transform_fit_rows"] == 400 and ours.attrs["transform_fit_seed"] == 42


def test_cli_ica_fit_rows_fits_exactly_the_seeded_rows(cli, tmp_path, monkeypatch):
    from defsent_cli.formats.dictionary import seeded_sample
    from defsent_cli.space import streamed

    monkeypatch.setattr(streamed, "READ_ROWS", 64)
    src = tmp_path / "bank.h5"
    bank = _with_a_dead_dimension(src)
    out = tmp_path / "sampled.h5"
    result = cli("ica", src, "--fit-rows", "150", "--seed", "7", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "fitted on 150 rows (seed 7)" in result.stderr
    got = read_bank(out)
    assert got.attrs["transform_fit_rows"] == 150 and got.attrs["transform_seed"] == 7
    keep = seeded_sample(400, 150, 7)
    fitted = transform_space(bank.vectors[keep], settings=IcaSettings(seed=7)).vectors  # today's fit, on the sample
    np.testing.assert_allclose(got.vectors[keep], fitted, atol=2e-3)
    # every other row went through that same fit: the one affine map from inputs to outputs of the sample
    inputs = np.column_stack([bank.vectors[keep].astype(np.float64), np.ones(len(keep))])
    affine = np.linalg.lstsq(inputs, fitted.astype(np.float64), rcond=None)[0]
    everything = np.column_stack([bank.vectors.astype(np.float64), np.ones(400)]) @ affine
    np.testing.assert_allclose(got.vectors, everything, atol=5e-3)
    other = transform_space(bank.vectors[:150], settings=IcaSettings(seed=7)).vectors  # another sample's fit
    assert np.abs(got.vectors[:150] - other).max() > 1.0
    rescale = cli("ica", out, "--rescale", "--fit-rows", "10", "-o", tmp_path / "r.h5")
    assert rescale.exit_code == 2 and "drop --fit-rows" in rescale.stderr


def test_cli_inspect(cli, tmp_path):
    make_bank(tmp_path / "bank.h5")
    np.save(tmp_path / "poly.npy", cross_polytope(4).astype(np.float32))
    result = cli("inspect", tmp_path / "bank.h5", tmp_path / "poly.npy", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [b["path"].rsplit("/", 1)[-1] for b in doc["banks"]] == ["bank.h5", "poly.npy"]
    assert doc["banks"][0]["kind"] == "AMP" and doc["banks"][0]["n"] == 400
    assert doc["banks"][1]["mean_cosine"] == pytest.approx(-1 / 7, abs=1e-6)
    assert "mean cosine" in result.stderr and "I(W)" in result.stderr

    out = tmp_path / "figures.json"
    result = cli("inspect", tmp_path / "bank.h5", "-o", out)
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(out.read_text())["banks"][0]["d"] == 6
    assert cli("inspect", tmp_path / "bank.h5", "-o", out).exit_code == 2

    result = cli("inspect", tmp_path / "missing.h5")
    assert result.exit_code == 2 and "missing.h5" in result.stderr
    result = cli("inspect", tmp_path / "bank.h5", "--plot", tmp_path / "x.jpg")
    assert result.exit_code == 2 and "suffix" in result.stderr


def test_cli_inspect_limit_reads_a_seeded_sample_of_rows(cli, tmp_path):
    from defsent_cli.formats.dictionary import seeded_sample

    bank = make_bank(tmp_path / "bank.h5")
    np.save(tmp_path / "rows.npy", bank.vectors)
    result = cli("inspect", tmp_path / "bank.h5", tmp_path / "rows.npy", "--limit", "50", "--seed", "3", "--json")
    assert result.exit_code == 0, result.stderr
    sample = bank.vectors[seeded_sample(400, 50, 3)]
    expected = space_figures(sample, pairs=100_000, seed=3)
    for found in json.loads(result.stdout)["banks"]:
        assert found["n"] == 50 and "50 of 400 rows (a seeded sample) x 6" in found["describe"]
        for name in ("mean_cosine", "top1_variance_share", "isoscore", "mean_norm"):
            assert found[name] == pytest.approx(expected[name], rel=1e-9)


def test_cli_inspect_plot(cli, tmp_path):
    pytest.importorskip("matplotlib")
    make_bank(tmp_path / "bank.h5")
    png = tmp_path / "space.png"
    result = cli("inspect", tmp_path / "bank.h5", "--plot", png, "--points", "200")
    assert result.exit_code == 0, result.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_dead_dimensions_stay_zero_columns():
    sources, mixed = sources_and_mixture(n=3000, seed=6)
    const = np.full(len(mixed), 0.5, dtype=np.float32)
    tiny = (-1e-9 + 1e-12 * (np.arange(len(mixed)) % 3)).astype(np.float32)  # float noise, as in MiniLM
    m = mixed
    with_dead = np.column_stack([m[:, 0], const, m[:, 1], m[:, 2], tiny, m[:, 3]])
    result = transform_space(with_dead)
    assert result.vectors.shape == (3000, 6) and result.dead_dims.tolist() == [1, 4]
    assert result.attrs["transform_dead_dims"] == "1,4" and result.attrs["transform_n_components"] == 4
    assert not result.vectors[:, [1, 4]].any()
    live = np.delete(result.vectors, [1, 4], axis=1)
    np.testing.assert_allclose(live, transform_space(mixed).vectors, atol=0.05)
    assert transform_space(with_dead, settings=IcaSettings(n_components=2)).vectors.shape == (3000, 2)
    with pytest.raises(DefsentError, match="live dimensions"):
        transform_space(with_dead, settings=IcaSettings(n_components=5))
    white = transform_space(with_dead, "whiten", scale=1.0)
    np.testing.assert_allclose(np.cov(np.delete(white.vectors, [1, 4], axis=1).T, bias=True), np.eye(4), atol=1e-4)


# --------------------------------------------------------------------------- IsoScore, alignment, uniformity


def test_isoscore_extremes_and_a_hand_computed_case():
    from defsent_cli.space.isotropy import isoscore

    rng = np.random.default_rng(0)
    assert isoscore(rng.normal(size=(20000, 8))) > 0.99  # isotropic Gaussian
    line = np.outer(rng.normal(size=300), rng.normal(size=8))  # every point on one line
    assert isoscore(line) == pytest.approx(0.0, abs=1e-9)
    # equal variance in 2 of 4 dimensions: v = [sqrt2, sqrt2, 0, 0], defect^2 = 2 - sqrt2,
    # IsoScore = ((4 - (2 - sqrt2) * 2)^2 - 4) / 12 = (8 - 4) / 12 = 1/3 (= (k - 1) / (n - 1) for k = 2)
    square = np.array([[1, 0, 0, 0], [-1, 0, 0, 0], [0, 1, 0, 0], [0, -1, 0, 0]], dtype=float)
    assert isoscore(square) == pytest.approx(1 / 3)
    assert isoscore(square @ np.linalg.qr(rng.normal(size=(4, 4)))[0] * 7 + 3) == pytest.approx(
        1 / 3
    )  # rotation, scale


def test_isoscore_equals_the_reference_steps():
    """The IsoScore package's steps (sklearn PCA, np.cov, sqrt(n) scaling, defect, score) on a skewed cloud."""
    from sklearn.decomposition import PCA

    from defsent_cli.space.isotropy import isoscore

    points = np.random.default_rng(1).normal(size=(60, 5)) * [4, 2, 1, 1, 0.3]
    pca = PCA(n_components=5).fit_transform(points).T
    variances = np.cov(pca)[np.diag_indices(5)]
    n = 5
    normalized = variances * np.sqrt(n) / np.linalg.norm(variances)
    defect = np.linalg.norm(normalized - 1) / np.sqrt(2 * (n - np.sqrt(n)))
    expected = ((n - defect**2 * (n - np.sqrt(n))) ** 2 - n) / (n * (n - 1))
    assert isoscore(points) == pytest.approx(expected, rel=1e-9)


def test_alignment_and_uniformity_by_hand():
    from defsent_cli.space.isotropy import alignment, uniformity

    square = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], dtype=float)
    # pairs (e1, e2) and (e2, -e1): squared distance 2 each
    assert alignment(square[:2], square[1:3]) == pytest.approx(2.0)
    assert alignment(square[:2] * 5, square[:2]) == pytest.approx(0.0)  # normalised first
    # 6 pairs: 4 at squared distance 2, 2 at 4 -> log((4 e^-4 + 2 e^-8) / 6)
    expected = np.log((4 * np.exp(-4) + 2 * np.exp(-8)) / 6)
    assert uniformity(square) == pytest.approx(expected)
    assert uniformity(square * 3, block=1) == pytest.approx(expected)  # blocks and scale change nothing
    three = np.array([[1, 0], [1, 0], [0, 1]], dtype=float)  # distances^2 0, 2, 2
    assert uniformity(three) == pytest.approx(np.log((1 + 2 * np.exp(-4)) / 3))


def test_wikitext_sentences_and_geometry_data(more):
    from defsent_cli.evaluation.geometry import GeometryData, wikitext_sentences

    sentences = wikitext_sentences(more / "wikitext-2" / "wiki.test.raw")
    assert sentences == [
        "The dog runs fast .",
        "A fish swims in water .",
        "The tree is old and tall .",
        "Joy is a feeling of great happiness !",
        "Is this a question ?",
    ]
    inputs = GeometryData.load(more / "senteval")
    a, b, everything, _ = inputs.stsb
    # STS-B train: pairs 10 and 21 are scored 5.0; 30 distinct first and 10 distinct second sentences
    assert len(a) == len(b) == 2 and len(everything) == 40


def test_cli_inspect_model(cli, tiny_bert, more, tmp_path):
    out = tmp_path / "geometry.json"
    result = cli("inspect", "-m", tiny_bert, "--data", more, "--pooling", "mean", "-o", out)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(out.read_text())
    (report,) = doc["sentences"]
    assert doc["banks"] == [] and report["n"] == 5 and report["normalized"] is True
    assert 0 <= report["isoscore"] <= 1 and report["alignment_pairs"] == 2 and report["uniformity_sentences"] == 40
    assert report["uniformity"] < 0 and 0 <= report["alignment"] <= 4
    assert "IsoScore" in result.stderr and "alignment" in result.stderr
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a dog\n\na fish\na tree\n")
    result = cli("inspect", "-m", tiny_bert, "--corpus", corpus, "--no-stsb", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sentences"][0]["n"] == 3
    missing = cli("inspect", "-m", tiny_bert, "--data", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "data folder not found" in missing.stderr
    assert cli("inspect").exit_code == 2
