"""``defsent index --ann``: an HNSW graph (FAISS) stored in the index, used by ``search`` and ``serve`` unless
``--exact``; without FAISS, ``--ann`` is a one-line error and an index that has a graph is searched exactly."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from conftest import run_bounded, run_warm

pytest.importorskip("faiss", reason="FAISS (pip install 'defsent-cli[ann]') builds and reads the graph")

DEFSENT = [sys.executable, "-m", "defsent_cli"]
TORCH_FP32 = ["--runtime", "torch", "--precision", "fp32", "--device", "cpu"]
WORDS = ["red", "green", "blue", "cat", "dog", "fish", "runs", "sleeps", "eats", "big", "small", "old", "new"]


def defsent(*args, input: str | None = None, env: dict | None = None, warm: bool = True):
    """``defsent ARGS``, warm (conftest.run_warm) unless the test changes what the process imports."""
    run = run_warm if warm else run_bounded
    return run([*DEFSENT, *map(str, args)], 180, input=input, capture_output=True, text=True, env=env)


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(3, 7))) for _ in range(n)]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, tiny_st) -> dict:
    folder = tmp_path_factory.mktemp("ann")
    corpus = folder / "corpus.txt"
    corpus.write_text("".join(t + "\n" for t in texts(600, 0)))
    index = folder / "corpus.h5"
    done = defsent("index", corpus, "-m", tiny_st, "--ann", "-o", index, *TORCH_FP32)
    assert done.returncode == 0, done.stderr
    assert "HNSW graph" in done.stderr
    return {"model": tiny_st, "index": index, "folder": folder}


def search(indexed, queries: list[str], *extra: str, env=None) -> tuple[list[dict], str]:
    done = defsent(
        "search",
        "--index",
        indexed["index"],
        "-k",
        "10",
        "--json",
        *extra,
        input="\n".join(queries) + "\n",
        env=env,
        warm=env is None,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_the_graph_is_stored_with_the_index(indexed):
    import h5py

    with h5py.File(indexed["index"], "r") as h5:
        assert h5.attrs["ann"] == "faiss-hnsw-flat" and h5["vectors"].shape[0] == 600
        assert h5["ann_hnsw"].attrs["m"] == 32 and h5["ann_hnsw"].attrs["metric"] == "ip"


def test_search_uses_the_graph_and_finds_what_exact_search_finds(indexed):
    queries = texts(20, 1)
    approx, note = search(indexed, queries)
    exact, exact_note = search(indexed, queries, "--exact")
    assert {row["search"] for row in approx} == {"hnsw"} and {row["search"] for row in exact} == {"exact"}
    assert "HNSW graph" in note and "exact search" in exact_note
    overlap = []
    for a, e in zip(approx, exact, strict=True):
        found, truth = [hit["id"] for hit in a["results"]], [hit["id"] for hit in e["results"]]
        overlap.append(len(set(found) & set(truth)) / len(truth))
        truth_scores = {hit["id"]: hit["score"] for hit in e["results"]}
        for hit in a["results"]:  # a row the graph finds has the exact search's score: the cosine
            if hit["id"] in truth_scores:
                assert hit["score"] == pytest.approx(truth_scores[hit["id"]], abs=1e-5)
        assert [hit["score"] for hit in a["results"]] == sorted((hit["score"] for hit in a["results"]), reverse=True)
    assert np.mean(overlap) >= 0.95, overlap  # recall@10 on 600 rows: HNSW with efSearch 128 is all but exact


def test_without_faiss_ann_is_a_one_line_error_and_search_is_exact(indexed, tmp_path):
    blocker = tmp_path / "nofaiss"
    blocker.mkdir()
    (blocker / "faiss.py").write_text("raise ImportError('blocked for this test')\n")
    import os

    env = {**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = tmp_path / "x.h5"
    corpus = indexed["folder"] / "corpus.txt"
    done = defsent("index", corpus, "-m", indexed["model"], "--ann", "-o", out, *TORCH_FP32, env=env, warm=False)
    assert done.returncode != 0 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert "pip install 'defsent-cli[ann]'" in done.stderr and not out.exists()
    rows, note = search(indexed, texts(2, 2), env=env)
    assert {row["search"] for row in rows} == {"exact"} and "FAISS is not installed" in note


def test_the_graph_recalls_the_exact_top_ten_of_random_unit_vectors():
    """The builder on its own, against brute force computed here: 5,000 random unit vectors in 32 dims."""
    from defsent_cli.search.ann import Hnsw, HnswBuilder

    rng = np.random.default_rng(0)
    rows = rng.standard_normal((5000, 32)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    builder = HnswBuilder(32)
    for start in range(0, 5000, 1000):  # added chunk by chunk, as an index is written
        builder.add(rows[start : start + 1000])
    import faiss

    graph = Hnsw(faiss.deserialize_index(builder.serialized()), builder.settings)
    queries = rng.standard_normal((50, 32)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    found, scores = graph.search(queries, 10)
    truth = np.argsort(-(queries @ rows.T), axis=1)[:, :10]
    recall = np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)])
    assert recall >= 0.9, recall
    np.testing.assert_allclose(scores, np.take_along_axis(queries @ rows.T, found, axis=1), atol=1e-5)


@pytest.mark.parametrize("compress", ["none", "sq8"])
def test_a_reserved_graph_grows_in_place(compress):
    """Rows added chunk by chunk into a graph that reserved room for all of them: its rows and its neighbour
    lists never move (a growing array is copied into one twice its size: the rows held three times at once), and
    the graph finds each row it holds. Without the reservation the same adds move both (checked first)."""
    import faiss

    from defsent_cli.search.ann import HnswBuilder

    rng = np.random.default_rng(1)
    rows = rng.standard_normal((3000, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)

    def addresses(builder) -> tuple[set, set]:
        storage = faiss.downcast_index(builder.index.storage)
        codes, links = set(), set()
        for start in range(0, 3000, 100):
            builder.add(rows[start : start + 100])
            codes.add(int(storage.codes.data()))
            links.add(int(builder.index.hnsw.neighbors.data()))
        return codes, links

    grown = addresses(HnswBuilder(8, m=4, ef_construction=16, compress=compress))
    assert len(grown[0]) > 1 and len(grown[1]) > 1  # FAISS moves a growing graph
    reserved = HnswBuilder(8, m=4, ef_construction=16, compress=compress)
    reserved.reserve(3000)
    codes, links = addresses(reserved)
    assert len(codes) == 1 and len(links) == 1
    reserved.index.hnsw.efSearch = 64
    _, found = reserved.index.search(rows[::100], 1)
    assert reserved.index.ntotal == 3000 and (found[:, 0] == np.arange(0, 3000, 100)).all()


# ---------------------------------------------------------------------------- the 8-bit graph (--ann-compress sq8)


@pytest.fixture(scope="module")
def compressed(indexed) -> dict:
    index = indexed["folder"] / "corpus-sq8.h5"
    corpus = indexed["folder"] / "corpus.txt"
    done = defsent("index", corpus, "-m", indexed["model"], "--ann-compress", "sq8", "-o", index, *TORCH_FP32)
    assert done.returncode == 0, done.stderr
    assert "HNSW graph (faiss-hnsw-sq8)" in done.stderr  # --ann-compress implies --ann
    return {**indexed, "index": index}


def recall(found: list[dict], truth: list[dict]) -> float:
    return float(
        np.mean(
            [
                len({h["id"] for h in a["results"]} & {h["id"] for h in e["results"]}) / len(e["results"])
                for a, e in zip(found, truth, strict=True)
            ]
        )
    )


def test_an_sq8_graph_is_smaller_and_recalls_as_the_flat_one_does(indexed, compressed):
    import h5py

    from defsent_cli.search.ann import FLAT, SQ8, graph_bytes

    with h5py.File(compressed["index"], "r") as h5, h5py.File(indexed["index"], "r") as flat:
        assert h5.attrs["ann"] == SQ8 and h5["ann_hnsw"].attrs["kind"] == SQ8 and h5["ann_hnsw"].attrs["metric"] == "ip"
        assert h5["ann_hnsw"].attrs["trained_rows"] == 600  # the quantiser's ranges: from the first chunk of rows
        sizes = {SQ8: h5["ann_hnsw"].shape[0], FLAT: flat["ann_hnsw"].shape[0]}
    for kind, size in sizes.items():  # what graph_bytes computes is what is stored (and loaded)
        assert graph_bytes(600, 32, kind=kind) == pytest.approx(size, rel=0.03), (kind, size)
    assert sizes[FLAT] - sizes[SQ8] == pytest.approx(600 * 32 * 3, rel=0.02)  # 1 byte a dimension instead of 4
    assert graph_bytes(10_000_000, 384, kind=SQ8) < 0.37 * graph_bytes(10_000_000, 384, kind=FLAT)

    queries = texts(20, 1)
    found, note = search(compressed, queries)
    assert {row["search"] for row in found} == {"hnsw"} and "faiss-hnsw-sq8" in note
    truth, _ = search(compressed, queries, "--exact")
    flat, _ = search(indexed, queries)
    assert recall(found, truth) >= max(0.9, recall(flat, truth) - 0.05), (recall(found, truth), recall(flat, truth))
    for a, e in zip(found, truth, strict=True):  # the graph's candidates scored again exactly: cosines, in order
        exact = {hit["id"]: hit["score"] for hit in e["results"]}
        for hit in a["results"]:
            if hit["id"] in exact:
                assert hit["score"] == pytest.approx(exact[hit["id"]], abs=1e-5)
        assert [hit["score"] for hit in a["results"]] == sorted((hit["score"] for hit in a["results"]), reverse=True)
