"""Post-processing chains (zscore, quantile, whiten, whiten-k, abtt, l2) on tiny hand-computed matrices."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest
from sklearn.preprocessing import QuantileTransformer

from defsent_cli.errors import DefsentError
from defsent_cli.formats.post import POST_FORMAT
from defsent_cli.space.linalg import pca_whiten
from defsent_cli.space.postprocess import PostChain, parse_post


def same_up_to_sign(a: np.ndarray, b: np.ndarray) -> bool:
    """Columns equal up to a sign each (eigenvectors have no canonical sign)."""
    return all(
        np.allclose(a[:, j], b[:, j], atol=1e-6) or np.allclose(a[:, j], -b[:, j], atol=1e-6) for j in range(a.shape[1])
    )


def random_matrix(n: int = 40, d: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d)).astype(np.float32)


# ---------------------------------------------------------------- steps against closed forms


def test_zscore_by_hand():
    x = np.array([[1, 10, 2], [3, 10, 2], [5, 30, 2], [7, 30, 2]], dtype=np.float32)
    out = parse_post("zscore").fit_transform(x)
    # column 0: mean 4, population std sqrt(5); column 1: mean 20, std 10; column 2 constant -> 0
    expected = np.column_stack([np.array([-3, -1, 1, 3]) / math.sqrt(5), [-1, -1, 1, 1], [0, 0, 0, 0]])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    np.testing.assert_allclose(parse_post("zscore").fit(x).transform([[4, 40, 9]]), [[0, 2, 7]], rtol=1e-6)


AXES = np.array([[1, 0], [-1, 0], [0, 2], [0, -2]], dtype=np.float64)  # mean 0, cov diag(0.5, 2)


def test_whiten_by_hand_and_su_et_al():
    chain = parse_post("whiten").fit(AXES)
    out = chain.transform(AXES)
    # descending eigenvalues: 2 (axis 1) then 0.5 (axis 0); W = U L^-1/2
    expected = np.column_stack([AXES[:, 1] / math.sqrt(2), AXES[:, 0] / math.sqrt(0.5)])
    assert same_up_to_sign(out, expected)
    np.testing.assert_allclose(np.cov(out.T, bias=True), np.eye(2), atol=1e-6)
    x = random_matrix()
    white = parse_post("whiten").fit_transform(x)
    np.testing.assert_allclose(np.cov(white.T, bias=True), np.eye(3), atol=1e-5)
    np.testing.assert_allclose(white, pca_whiten(x.astype(np.float64)), atol=1e-5)
    # the explicit formula with numpy's own eigendecomposition
    x64 = x.astype(np.float64)
    values, vectors = np.linalg.eigh(np.cov(x64.T, bias=True))
    order = np.argsort(values)[::-1]
    explicit = (x64 - x64.mean(axis=0)) @ (vectors[:, order] / np.sqrt(values[order]))
    assert same_up_to_sign(white, explicit)


def test_whiten_k_keeps_top_k_columns():
    chain = parse_post("whiten-k:1").fit(AXES)
    out = chain.transform(np.array([[0.0, 4.0], [3.0, 0.0]]))
    assert out.shape == (2, 1)
    np.testing.assert_allclose(np.abs(out[:, 0]), [4 / math.sqrt(2), 0], atol=1e-6)
    full = parse_post("whiten").fit_transform(random_matrix())
    np.testing.assert_allclose(parse_post("whiten-k:2").fit_transform(random_matrix()), full[:, :2], atol=1e-6)
    with pytest.raises(DefsentError, match="whiten-k:3 keeps more"):
        parse_post("whiten-k:3").fit(AXES)


def test_whiten_rank_deficient_clips_and_warns_once(library_log):
    x = np.column_stack([np.arange(12.0), 2 * np.arange(12.0), np.arange(12.0) ** 2])  # rank 2 of 3
    out = parse_post("whiten").fit_transform(x)
    assert np.isfinite(out).all()
    warnings = [text for level, text in library_log if level == "warning"]
    assert len(warnings) == 1 and "rank-deficient (1 of 3 eigenvalues ~0" in warnings[0]  # 12 rows = 4 x 3 dims


def test_abtt_removes_the_top_direction_exactly():
    u, v, mu = np.array([3, 4]) / 5, np.array([-4, 3]) / 5, np.array([1.0, 2.0])
    a, b = np.array([10, -10, 20, -20]), np.array([1, 1, -1, -1])  # centred and uncorrelated: u is the top PC
    x = mu + np.outer(a, u) + np.outer(b, v)
    chain = parse_post("abtt:1").fit(x)
    np.testing.assert_allclose(chain.transform(x), np.outer(b, v), atol=1e-6)
    np.testing.assert_allclose(chain.transform([mu + 7 * u + 3 * v]), [3 * v], atol=1e-6)
    assert chain.describe()["steps"] == [{"name": "abtt", "d": 1}]
    with pytest.raises(DefsentError, match="fewer directions"):
        parse_post("abtt:2").fit(x)


def test_quantile_uniform_by_hand_and_equals_sklearn():
    x = np.array([[3.0, -1], [1, 5], [4, 0], [0, 2], [2, 9]])
    out = parse_post("quantile").fit_transform(x)
    # n_quantiles = n = 5: the fit rows map to rank / (n - 1)
    np.testing.assert_allclose(out, [[0.75, 0], [0.25, 0.75], [1, 0.25], [0, 0.5], [0.5, 1]], atol=1e-6)
    assert (np.argsort(out, axis=0) == np.argsort(x, axis=0)).all()
    x = random_matrix(60)
    for spec, dist in (("quantile", "uniform"), ("quantile:normal", "normal")):
        ours = parse_post(spec).fit_transform(x)
        ref = QuantileTransformer(n_quantiles=60, output_distribution=dist, subsample=10**9, random_state=0)
        np.testing.assert_array_equal(ours, ref.fit_transform(x.astype(np.float64)).astype(np.float32))


def test_l2_by_hand():
    out = parse_post("l2").fit_transform(np.array([[3.0, 4], [0, 0], [-2, 0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0, 0], [-1, 0]])


def test_composition_order_matters():
    x = random_matrix(30)
    a, b = parse_post("zscore,l2").fit_transform(x), parse_post("l2,zscore").fit_transform(x)
    assert not np.allclose(a, b)
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    np.testing.assert_allclose(a, z / np.linalg.norm(z, axis=1, keepdims=True), atol=1e-5)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(b, (unit - unit.mean(axis=0)) / unit.std(axis=0), atol=1e-4)


# ---------------------------------------------------------------- parsing


def test_parse_forms_and_empty_chains():
    assert parse_post(" zscore , abtt:2 ").spec() == "zscore,abtt:2"
    assert parse_post(["zscore", "abtt:2"]).spec() == "zscore,abtt:2"
    assert parse_post(["zscore,quantile:normal", "whiten-k:4", "l2"]).spec() == "zscore,quantile:normal,whiten-k:4,l2"
    for empty in (None, "", [], "none"):
        chain = parse_post(empty)
        assert not chain and chain.is_empty() and chain.spec() == ""
    chain = parse_post("zscore,quantile:normal,whiten-k:4,abtt:2,l2")
    assert [type(step).__name__ for step in chain.steps] == ["ZScore", "Quantile", "WhitenK", "Abtt", "L2"]
    assert chain.steps[1].distribution == "normal" and chain.steps[2].k == 4 and chain.steps[3].d == 2
    assert chain and not chain.fitted


@pytest.mark.parametrize(
    "spec", ["foo", "abtt", "abtt:0", "abtt:x", "whiten-k:", "whiten-k:-1", "zscore:3", "whiten:2", "quantile:cauchy"]
)
def test_parse_errors_are_one_line(spec):
    with pytest.raises(DefsentError) as info:
        parse_post(spec)
    message = str(info.value)
    assert "\n" not in message and "zscore" in message and "abtt:D" in message


# ---------------------------------------------------------------- fit / transform checks


def test_few_rows_warning(library_log):
    parse_post("zscore").fit(np.arange(14.0).reshape(7, 2))  # 7 < 4 x 2
    assert len(library_log) == 1 and library_log[0][0] == "warning" and "4 x dims" in library_log[0][1]
    parse_post("zscore").fit(np.random.default_rng(0).normal(size=(8, 2)))
    parse_post("l2").fit(np.ones((2, 5)))  # no statistics, no warning
    assert len(library_log) == 1


def test_fit_and_transform_errors():
    chain = parse_post("zscore")
    assert not chain.fitted
    with pytest.raises(DefsentError, match="not fitted"):
        chain.transform(np.ones((3, 2)))
    for bad, match in ((np.ones(4), "2-D"), (np.ones((1, 2)), "at least 2 rows"), ([[1, np.nan], [0, 1]], "NaN")):
        with pytest.raises(DefsentError, match=match):
            chain.fit(bad)
    chain.fit(np.eye(3))
    assert chain.fitted
    with pytest.raises(DefsentError, match="fitted on 3 dims, got 2-dim"):
        chain.transform(np.ones((1, 2)))
    assert chain.describe() == {"post": "zscore", "steps": [{"name": "zscore"}], "fit_rows": 3, "fit_dims": 3}


# ---------------------------------------------------------------- save / load


def test_save_load_round_trip_is_exact(tmp_path):
    x, new = random_matrix(50), random_matrix(9, seed=1)
    chain = parse_post("zscore,quantile,whiten-k:2,abtt:1,l2").fit(x)
    path = tmp_path / "post.h5"
    attrs = {"model": "minilm", "pooling": "mean", "fit_on": "corpus.txt", "layers": 2}
    chain.save(path, attrs)
    loaded = PostChain.load(path)
    assert loaded.spec() == chain.spec() and loaded.fitted and loaded.attrs == attrs
    assert loaded.describe() == chain.describe()
    np.testing.assert_array_equal(loaded.transform(new), chain.transform(new))
    with h5py.File(path) as h5:
        assert h5.attrs["format"] == POST_FORMAT and h5.attrs["fit_rows"] == 50
        assert sorted(h5) == ["step-0-zscore", "step-1-quantile", "step-2-whiten-k", "step-3-abtt", "step-4-l2"]
        assert h5["step-1-quantile"]["quantiles"].shape == (50, 3) and h5["step-2-whiten-k"].attrs["k"] == 2


def test_loaded_quantile_runs_sklearn_bit_identically(tmp_path):
    x = random_matrix(80)
    chain = parse_post("quantile:normal").fit(x)
    chain.save(tmp_path / "q.h5")
    loaded = PostChain.load(tmp_path / "q.h5")
    assert type(loaded.steps[0].model) is QuantileTransformer and loaded.attrs == {}
    probe = np.vstack([random_matrix(20, seed=3) * 3, x])
    np.testing.assert_array_equal(loaded.transform(probe), chain.transform(probe))


def test_load_errors(tmp_path):
    with pytest.raises(DefsentError, match="no such"):
        PostChain.load(tmp_path / "missing.h5")
    (tmp_path / "text.h5").write_text("hello\n")
    with pytest.raises(DefsentError, match="not a readable defsent post"):
        PostChain.load(tmp_path / "text.h5")
    with h5py.File(tmp_path / "other.h5", "w") as h5:
        h5.attrs["format"] = "defsent-bank/1"
    with h5py.File(tmp_path / "truncated.h5", "w") as h5:
        h5.attrs.update({"format": POST_FORMAT, "spec": "zscore", "fit_rows": 4})
    with pytest.raises(DefsentError, match="not a readable"):
        PostChain.load(tmp_path / "truncated.h5")
    with pytest.raises(DefsentError, match="not a defsent post-processing file"):
        PostChain.load(tmp_path / "other.h5")
    with pytest.raises(DefsentError, match="not fitted"):
        parse_post("zscore").save(tmp_path / "unfitted.h5")


def test_failed_save_leaves_no_file(tmp_path, monkeypatch):
    chain = parse_post("zscore,abtt:1").fit(random_matrix())
    with pytest.raises(FileNotFoundError):  # the command line checks the folder first; the library raises
        chain.save(tmp_path / "no-such-dir" / "post.h5")

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(h5py.Group, "create_dataset", broken)
    with pytest.raises(OSError, match="disk full"):
        chain.save(tmp_path / "post.h5")
    assert list(tmp_path.iterdir()) == []
