"""Augmented SBERT's data side: sampling pairs (random, BM25, semantic, their union) and matching the silver
score distribution to the gold one (Thakur et al.'s KDE, Reiml's iterative KDE), on synthetic scores and a toy
pool, through the library and the command line."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from conftest import CORPUS, REPO, run_bounded, skip_without, write
from scipy.stats import gaussian_kde

from defsent_cli.augment.kde import _kde_at, histogram_distance, iterative_kde, kde_sample
from defsent_cli.augment.sampling import bm25_pairs, random_pairs, sample_pairs, semantic_pairs
from defsent_cli.errors import DefsentError


def _scores(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gold centred at 0.6; silver mostly unrelated pairs near 0.1 plus a uniform fifth (random sampling's shape)."""
    rng = np.random.default_rng(seed)
    gold = np.clip(rng.normal(0.6, 0.2, 1000), 0, 1)
    silver = np.clip(np.concatenate([rng.normal(0.1, 0.08, 8000), rng.uniform(0, 1, 2000)]), 0, 1)
    return gold, silver


def test_the_iterative_kde_converges_to_the_gold_histogram():
    gold, silver = _scores()
    before = histogram_distance(gold, silver, 10, (0, 1))
    kept = iterative_kde(gold, silver, seed=1)
    after = histogram_distance(gold, silver[kept], 10, (0, 1))
    assert before > 0.7 and after < 0.05, (before, after)  # measured: 0.798 -> 0.021
    assert len(kept) == len(set(kept.tolist())) and 500 < len(kept) < 2000
    assert np.array_equal(kept, iterative_kde(gold, silver, seed=1))  # seeded
    original = kde_sample(gold, silver, seed=1)
    assert histogram_distance(gold, silver[original], 10, (0, 1)) < before / 2  # measured: 0.281
    assert after < histogram_distance(gold, silver[original], 10, (0, 1))  # the thesis's claim, on this case


def test_the_kept_sets_density_is_scipys_gaussian_kde():
    values = np.random.default_rng(3).random(9)
    for x in (0.0, 0.3, 0.95):
        assert _kde_at(values, x) == pytest.approx(gaussian_kde(values)(x)[0], rel=1e-12)


def test_kde_needs_two_different_scores():
    with pytest.raises(DefsentError, match="two different values"):
        iterative_kde(np.array([0.5, 0.6]), np.array([0.2, 0.2, 0.2]))
    with pytest.raises(DefsentError, match="gold"):
        kde_sample(np.array([0.5, 0.5]), np.array([0.2, 0.3]))


def test_random_pairs_have_k_distinct_partners_and_never_the_sentence_itself():
    pairs = random_pairs(6, 3, seed=0)
    assert len(pairs) == 18 and all(i != j for i, j in pairs)
    for i in range(6):
        partners = [j for a, j in pairs if a == i]
        assert len(set(partners)) == 3
    assert pairs == random_pairs(6, 3, seed=0) and pairs != random_pairs(6, 3, seed=1)


def test_bm25_finds_the_sentence_with_the_most_shared_words(monkeypatch):
    skip_without("bm25s", "the [augment] extra")
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)  # bm25_pairs sets it: undone after the test
    pool = ["a dog runs in the park", "the dog runs fast", "my cat sleeps", "the cat sleeps all day", "stocks fell"]
    best = dict(bm25_pairs(pool, 1))
    assert (best[0], best[1], best[2], best[3]) == (1, 0, 3, 2)
    # a repeated sentence may outrank a sentence's own row: still k pairs for every sentence, the last included
    thrice = ["the cat sleeps"] * 3 + ["a dog runs", "a dog runs fast", "stocks fell today"]
    pairs = bm25_pairs(thrice, 1)
    assert sorted(i for i, _ in pairs) == [0, 1, 2, 3, 4, 5] and all(i != j for i, j in pairs)


# a stand-in for bm25s that notes JAX_PLATFORMS as it is imported (the real one starts JAX there, if installed)
FAKE_BM25S = """import os
JAX_PLATFORMS_AT_IMPORT = os.environ.get("JAX_PLATFORMS")
def tokenize(texts, show_progress=False):
    return texts
class BM25:
    def index(self, tokens, show_progress=False):
        self.n = len(tokens)
    def retrieve(self, tokens, k, show_progress=False):
        return [[(i + 1) % self.n] for i in range(len(tokens))], None
"""

REPORT_JAX_PLATFORMS = """import sys
from defsent_cli.augment.sampling import bm25_pairs
print(bm25_pairs(["a", "b", "c"], 1))
print(sys.modules["bm25s"].JAX_PLATFORMS_AT_IMPORT)
"""


@pytest.mark.parametrize(("user_value", "seen"), [(None, "cpu"), ("cuda", "cuda")])
def test_bm25s_is_imported_with_jax_on_the_cpu_unless_the_user_chose(tmp_path, user_value, seen):
    # on a GPU machine with JAX, importing bm25s let JAX take 75% of the GPU's memory (the H100, 2026-11-27)
    (tmp_path / "bm25s").mkdir()
    (tmp_path / "bm25s" / "__init__.py").write_text(FAKE_BM25S)
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO), env.get("PYTHONPATH", "")])
    if user_value:
        env["JAX_PLATFORMS"] = user_value
    result = run_bounded([sys.executable, "-c", REPORT_JAX_PLATFORMS], 120, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[(0, 1), (1, 2), (2, 0)]", seen]


def test_semantic_pairs_are_the_nearest_by_cosine():
    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.05], [0.1, 0.9]])
    pairs = semantic_pairs(vectors, 2, chunk=2)
    assert pairs[:2] == [(0, 1), (0, 4)] and pairs[4:6] == [(2, 4), (2, 1)]
    union = sample_pairs([f"s{i}" for i in range(5)], ["semantic", "random"], 1, 0, lambda texts: vectors)
    keys = [(min(i, j), max(i, j)) for i, j in union]
    assert len(keys) == len(set(keys)) and (0, 1) in keys  # each pair once, in either order


def test_sample_label_filter_on_the_command_line(cli, tiny_bert, tmp_path, monkeypatch):
    skip_without("bm25s", "the [augment] extra: --strategy bm25")
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)  # bm25_pairs sets it in this process: undone after
    pool = tmp_path / "pool.txt"
    write(pool, CORPUS)
    pairs = tmp_path / "pairs.tsv"
    result = cli("sample-pairs", pool, "--strategy", "random,bm25,semantic", "-k", "2", "-m", tiny_bert, "-o", pairs)
    assert result.exit_code == 0, result.stderr
    rows = [line.split("\t") for line in pairs.read_text().splitlines()]
    keys = {tuple(sorted(r)) for r in rows}
    assert len(keys) == len(rows) and all(a != b and a in CORPUS and b in CORPUS for a, b in rows)
    assert 20 <= len(rows) <= 60
    no_model = cli("sample-pairs", pool, "--strategy", "semantic", "-o", tmp_path / "x.tsv")
    assert no_model.exit_code == 2 and "--model" in no_model.stderr
    bad = cli("sample-pairs", pool, "--strategy", "random,nearest", "-o", tmp_path / "x.tsv")
    assert bad.exit_code == 2 and "--strategy" in bad.stderr
    gold_scores, silver_scores = _scores()
    gold, silver = tmp_path / "gold.tsv", tmp_path / "silver.tsv"
    write(gold, [f"g{i}\th{i}\t{5 * s:.4f}" for i, s in enumerate(gold_scores)])
    write(silver, [f"s{i}\tt{i}\t{5 * s:.4f}" for i, s in enumerate(silver_scores)])
    kept = tmp_path / "kept.tsv"
    result = cli("kde-filter", silver, "--gold", gold, "-o", kept, "--plot", tmp_path / "scores.png")
    assert result.exit_code == 0, result.stderr
    assert "histogram distance to the gold 0.79" in result.stderr and (tmp_path / "scores.png").stat().st_size > 1000
    kept_scores = np.array([float(line.split("\t")[2]) for line in kept.read_text().splitlines()])
    assert histogram_distance(gold_scores, kept_scores / 5, 10, (0, 1)) < 0.05
    unscored = cli("kde-filter", pairs, "--gold", gold, "-o", tmp_path / "k2.tsv")
    assert unscored.exit_code == 2 and "has no scores" in unscored.stderr
    # silver scores where the gold has no mass: nothing is kept, and nothing is written (one line says why)
    far = tmp_path / "far.tsv"
    write(far, [f"f{i}\tu{i}\t{0.5 + 0.001 * i:.4f}" for i in range(50)])
    write(gold, [f"g{i}\th{i}\t{4 + 0.02 * i:.4f}" for i in range(50)])
    none = cli(
        "kde-filter", far, "--gold", gold, "--method", "kde", "-o", tmp_path / "k3.tsv", "--plot", tmp_path / "p3.png"
    )
    assert none.exit_code == 2 and "kept none of the 50 silver pairs" in none.stderr
    assert len(none.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "k3.tsv").exists() and not (tmp_path / "p3.png").exists()
    assert result.stdout == ""  # stderr only: stdout carries no data here
