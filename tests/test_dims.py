"""Smaller vectors (issue 79, the use side): ``--dims N`` keeps the leading N dimensions of each vector, re-normalised
where the model's vectors are normalised, on every command that encodes (``encode``, ``index``, ``embed-entries``,
``search``, ``lookup``, ``eval-sts``, ``eval-dict``) and in the server's ``dimensions``; a bank or an index records
the ``--dims`` it was built with, and one built at full width is searched at ``--dims N`` with both sides cut.

Every expected vector and score is computed here with numpy from the full-width vectors of ``encode``: a cut that
took other columns, or forgot to re-normalise (the tiny model's leading 8 of 32 dims have lengths 0.5-0.7), fails."""

from __future__ import annotations

import base64
import json
import shutil
import threading

import h5py
import numpy as np
import pytest
from test_serve import ENTRIES, TEXTS, TORCH_FP32, defsent, http, serving

WIDTH, CUT = 32, 8  # the tiny models' width (conftest), and the cut the tests take


def unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def encoded(cli, model, tmp_path, *extra, texts=TEXTS, run=TORCH_FP32) -> np.ndarray:
    """``defsent encode`` of ``texts`` (``run``: torch fp32 on the CPU), as a matrix."""
    out = tmp_path / f"v{len(list(tmp_path.glob('v*.npy')))}.npy"
    result = cli("encode", *texts, "-m", model, "-o", out, *run, *extra)
    assert result.exit_code == 0, result.stderr
    return np.load(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A dictionary (each entry one definition) and a text file."""
    folder = tmp_path_factory.mktemp("dims")
    dictionary = folder / "dict.jsonl"
    rows = [{"entry": e, "definitions": [d], "sources": ["test"], "split": "train"} for e, d in ENTRIES.items()]
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    texts = folder / "texts.txt"
    texts.write_text("".join(t + "\n" for t in TEXTS))
    return {"dict": dictionary, "texts": texts}


# ---------------------------------------------------------------- encode


def test_encode_dims_is_the_leading_slice_renormalised_where_the_model_normalises(cli, tiny_st, tiny_bert, tmp_path):
    full = encoded(cli, tiny_st, tmp_path)  # a sentence-transformers folder ending in Normalize: unit vectors
    lengths = np.linalg.norm(full[:, :CUT], axis=1)
    assert np.all(np.abs(lengths - 1) > 0.1)  # so a cut left un-normalised cannot pass below
    cut = encoded(cli, tiny_st, tmp_path, "--dims", CUT)
    assert cut.shape == (len(TEXTS), CUT)
    np.testing.assert_allclose(cut, unit(full[:, :CUT]), atol=1e-6, rtol=0)
    np.testing.assert_allclose(encoded(cli, tiny_st, tmp_path, "--dims", WIDTH), full, atol=0, rtol=0)  # unchanged
    # a folder without Normalize gives raw vectors: the cut is the plain slice, not re-normalised
    raw = encoded(cli, tiny_bert, tmp_path, "--pooling", "mean")
    np.testing.assert_allclose(
        encoded(cli, tiny_bert, tmp_path, "--pooling", "mean", "--dims", CUT), raw[:, :CUT], atol=1e-6
    )
    # --no-normalize on the normalising folder: the slice of its raw vectors, as asked
    plain = encoded(cli, tiny_st, tmp_path, "--no-normalize")
    np.testing.assert_allclose(
        encoded(cli, tiny_st, tmp_path, "--no-normalize", "--dims", CUT), plain[:, :CUT], atol=1e-6
    )
    # an h5 output records the cut
    out = tmp_path / "cut.h5"
    assert cli("encode", *TEXTS, "-m", tiny_st, "-o", out, "--dims", CUT, *TORCH_FP32).exit_code == 0
    with h5py.File(out, "r") as h5:
        assert h5.attrs["dims"] == CUT and json.loads(h5.attrs["encoding"])["dims"] == CUT
        np.testing.assert_allclose(h5["vectors"][:], cut, atol=0, rtol=0)


def test_encode_dims_on_onnx_runtime(cli, tiny_st, tmp_path):
    pytest.importorskip("onnxruntime")
    model = shutil.copytree(tiny_st, tmp_path / "st")  # the ONNX graph is cached beside the model: not the shared one
    onnx = ("--runtime", "onnx", "--precision", "fp32", "--device", "cpu")
    full = encoded(cli, model, tmp_path, run=onnx)
    cut = encoded(cli, model, tmp_path, "--dims", CUT, run=onnx)
    np.testing.assert_allclose(cut, unit(full[:, :CUT]), atol=1e-6, rtol=0)


def test_dims_out_of_range_is_a_one_line_error(cli, tiny_st, tmp_path):
    done = defsent("encode", "a baby pig", "-m", tiny_st, "--dims", WIDTH + 1, "-o", tmp_path / "x.npy", *TORCH_FP32)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
    assert f"--dims {WIDTH + 1}" in done.stderr and str(WIDTH) in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.npy").exists()
    zero = cli("encode", "a baby pig", "-m", tiny_st, "--dims", "0", "-o", tmp_path / "y.npy")
    assert zero.exit_code == 2 and "Invalid value '0' for '--dims'" in zero.stderr  # the value given, named
    short = cli("search", "--index", tmp_path / "none.h5", "-k0", "a baby pig")  # a short option's value attached
    assert short.exit_code == 2 and "Invalid value '0' for '--top-k' / '-k'" in short.stderr, short.stderr
    assert len(zero.stderr.strip().splitlines()) == 1
    twice = cli("encode", "a baby pig", "-m", tiny_st, "--dims", "4", "--dims", "5", "-o", tmp_path / "z.npy")
    assert twice.exit_code == 2 and "--dims" in twice.stderr and "more than once" in twice.stderr


# ---------------------------------------------------------------- index and search


def test_index_records_its_dims_and_search_cuts_both_sides(cli, tiny_st, files, tmp_path):
    full = encoded(cli, tiny_st, tmp_path, "--no-normalize")
    narrow, wide = tmp_path / "narrow.h5", tmp_path / "wide.h5"
    args = ("index", files["texts"], "-m", tiny_st, *TORCH_FP32)
    assert cli(*args, "--dims", CUT, "-o", narrow).exit_code == 0
    assert cli(*args, "-o", wide).exit_code == 0
    with h5py.File(narrow, "r") as h5:
        assert h5.attrs["dims"] == CUT and h5.attrs["dim"] == CUT and h5["vectors"].shape == (len(TEXTS), CUT)
        np.testing.assert_allclose(h5["vectors"][:], unit(full[:, :CUT]), atol=1e-6)
    with h5py.File(wide, "r") as h5:
        assert "dims" not in h5.attrs and h5.attrs["dim"] == WIDTH

    def search(index, *extra):
        result = cli("search", "--index", index, "--json", "-k", len(TEXTS), *extra, TEXTS[1])
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    def expected(n):  # the cosine of the query's leading n with each text's leading n, best first
        scores = unit(full[:, :n]) @ unit(full[1, :n])
        return [(i + 1, pytest.approx(float(scores[i]), abs=1e-5)) for i in np.argsort(-scores)]

    def found(row):
        return [(hit["id"], hit["score"]) for hit in row["results"]]

    row = search(narrow)  # the queries cut to the index's width, as it records
    assert row["dims"] == CUT and found(row) == expected(CUT)
    assert found(search(wide, "--dims", CUT)) == expected(CUT)  # a full-width index searched at --dims: both cut
    assert found(search(narrow, "--dims", 4)) == expected(4)  # narrower still
    assert "dims" not in search(wide) and found(search(wide)) == expected(WIDTH)
    wider = cli("search", "--index", narrow, "-m", tiny_st, "--dims", CUT + 1, TEXTS[1])
    assert wider.exit_code == 2 and wider.stderr.startswith("error: ") and str(narrow) in wider.stderr
    assert len(wider.stderr.strip().splitlines()) == 1 and f"{CUT}-dim" in wider.stderr
    over = cli("search", "--index", wide, "-m", tiny_st, "--dims", WIDTH + 1, TEXTS[1])  # wider than the model
    assert over.exit_code == 2 and f"--dims {WIDTH + 1}" in over.stderr and str(tiny_st) in over.stderr


def test_an_index_searched_by_another_model_or_narrowed_by_hand(cli, tiny_st, tiny_bert, files, tmp_path):
    # built by tiny_bert (128 tokens), searched by tiny_st (64): of the same width, a warning, and its queries read
    # as many tokens as tiny_st takes; not an error about a --max-length nobody gave
    index = tmp_path / "bert.h5"
    assert cli("index", files["texts"], "-m", tiny_bert, "--pooling", "mean", "-o", index, *TORCH_FP32).exit_code == 0
    with h5py.File(index, "r") as h5:
        assert int(h5.attrs["max_length"]) == 128
    other = cli("search", "--index", index, "-m", tiny_st, "--json", TEXTS[1])
    assert other.exit_code == 0, other.stderr
    assert "built with" in other.stderr and "--max-length" not in other.stderr and json.loads(other.stdout)["results"]
    # an index of narrower rows that lost its dims attribute: damaged, said so (not "search it with" this model)
    narrow = tmp_path / "narrow.h5"
    assert cli("index", files["texts"], "-m", tiny_st, "--dims", CUT, "-o", narrow, *TORCH_FP32).exit_code == 0
    with h5py.File(narrow, "a") as h5:
        del h5.attrs["dims"]
    lost = cli("search", "--index", narrow, "-m", tiny_st, TEXTS[1])
    assert lost.exit_code == 2 and str(narrow) in lost.stderr and "records no --dims" in lost.stderr
    assert "search it with" not in lost.stderr


# ---------------------------------------------------------------- banks: embed-entries, lookup, eval-dict


def test_bank_dims_lookup_and_eval_dict(cli, tiny_st, files, tmp_path):
    full_bank, cut_bank = tmp_path / "bank.h5", tmp_path / "bank8.h5"
    args = ("embed-entries", files["dict"], "-m", tiny_st, "--pool", "mean", *TORCH_FP32)
    assert cli(*args, "-o", full_bank).exit_code == 0
    assert cli(*args, "--dims", CUT, "-o", cut_bank).exit_code == 0
    with h5py.File(full_bank, "r") as a, h5py.File(cut_bank, "r") as b:
        assert b.attrs["dims"] == CUT and "dims" not in a.attrs
        rows = a["vectors"][:]
        np.testing.assert_allclose(b["vectors"][:], rows[:, :CUT], atol=1e-6)  # raw means: cut, never re-normalised
    entries = list(ENTRIES)
    query = ENTRIES["piglet"]
    q = encoded(cli, tiny_st, tmp_path, "--no-normalize", texts=[query])[0]  # lookup's query: mean pooling, no head

    def lookup(bank, *extra):
        result = cli(
            "lookup", "-m", tiny_st, "--bank", bank, "--json", "-k", len(entries), "--similarity", "dot", *extra, query
        )
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    def expected(n):  # dot products of the leading n dims of both sides, best first (lookup rounds to 4 places)
        scores = rows[:, :n] @ q[:n]
        return [(entries[i], pytest.approx(float(scores[i]), abs=2e-4)) for i in np.argsort(-scores)]

    def found(row):
        return [(hit["entry"], hit["score"]) for hit in row["results"]]

    for row in (lookup(cut_bank), lookup(full_bank, "--dims", CUT)):
        assert row["dims"] == CUT and found(row) == expected(CUT)
    assert found(lookup(cut_bank, "--dims", 4)) == expected(4)
    assert "dims" not in lookup(full_bank)
    wider = cli("lookup", "-m", tiny_st, "--bank", cut_bank, "--dims", CUT + 1, query)
    assert wider.exit_code == 2 and str(cut_bank) in wider.stderr and len(wider.stderr.strip().splitlines()) == 1
    over = cli("lookup", "-m", tiny_st, "--bank", full_bank, "--dims", WIDTH + 1, query)  # wider than the model
    assert over.exit_code == 2 and f"--dims {WIDTH + 1}" in over.stderr and str(tiny_st) in over.stderr
    # the vocabulary through a word head cannot be cut: refused, as eval-dict refuses it, not ignored
    head = cli("lookup", "-m", tiny_st, "--word-head", "embeddings", "--dims", CUT, query)
    assert head.exit_code == 2 and "cannot cut" in head.stderr and not head.stdout
    # eval-dict: the ranks of the leading CUT dims, recorded in the results JSON, the same from either bank
    scores = rows[:, :CUT].astype(np.float64) @ _raw(cli, tiny_st, tmp_path)[:, :CUT].T  # row j, query i
    ranks = 1 + np.sum(scores > np.diag(scores)[None, :], axis=0)  # query i's gold is row i
    for bank, extra in ((full_bank, ("--dims", CUT)), (cut_bank, ())):
        out = tmp_path / f"dict-{bank.stem}.json"
        result = cli("eval-dict", files["dict"], "--split", "train", "-m", tiny_st, "--bank", bank, *extra, "-o", out)
        assert result.exit_code == 0, result.stderr
        metrics = json.loads(out.read_text())
        assert metrics["dims"] == CUT and metrics["mrr"] == pytest.approx(np.mean(1 / ranks), abs=1e-9)
    over = cli("eval-dict", files["dict"], "-m", tiny_st, "--bank", full_bank, "--dims", WIDTH + 1)
    assert over.exit_code == 2 and f"--dims {WIDTH + 1}" in over.stderr


def _raw(cli, model, tmp_path) -> np.ndarray:
    """The raw (mean-pooled, unnormalised) vectors of the dictionary's definitions, in its order."""
    return encoded(cli, model, tmp_path, "--no-normalize", texts=list(ENTRIES.values()))


# ---------------------------------------------------------------- eval-sts


def test_eval_sts_dims_scores_the_cut_vectors(cli, tiny_st, mini, tmp_path):
    from scipy.stats import pearsonr

    pairs = [(f"a man plays {i}", f"a man is playing {i}", i * 1.1) for i in range(4)]  # conftest's STS-B dev
    first = encoded(cli, tiny_st, tmp_path, texts=[a for a, _, _ in pairs])
    second = encoded(cli, tiny_st, tmp_path, texts=[b for _, b, _ in pairs])
    gold = [g for _, _, g in pairs]
    results = {}
    for n in (CUT, WIDTH):
        out = tmp_path / f"sts-{n}.json"
        extra = ("--dims", CUT) if n == CUT else ()
        args = ("eval-sts", "-m", tiny_st, "--data", mini, "--split", "dev", "--tasks", "STS-B", *extra, "-o", out)
        result = cli(*args, "--device", "cpu", "--runtime", "torch")
        assert result.exit_code == 0, result.stderr
        results[n] = json.loads(out.read_text())
        cosines = np.sum(unit(first[:, :n]) * unit(second[:, :n]), axis=1)
        pearson = 100 * pearsonr(cosines, gold)[0]
        assert results[n]["tasks"]["STS-B"]["pearson"] == pytest.approx(pearson, abs=1e-3)
    assert results[CUT]["dims"] == CUT and "dims" not in results[WIDTH]
    assert results[CUT]["tasks"]["STS-B"]["pearson"] != pytest.approx(results[WIDTH]["tasks"]["STS-B"]["pearson"])


# ---------------------------------------------------------------- the server


def test_server_dimensions_is_encode_dims(cli, tiny_st, files, tmp_path):
    from openai import BadRequestError, OpenAI

    index = tmp_path / "narrow.h5"
    assert cli("index", files["texts"], "-m", tiny_st, "--dims", CUT, "-o", index, *TORCH_FP32).exit_code == 0
    inputs = ["A man is playing a guitar.", "a baby pig", "Someone plays the guitar on the street."]
    full = encoded(cli, tiny_st, tmp_path, texts=inputs)
    cut = encoded(cli, tiny_st, tmp_path, "--dims", CUT, texts=inputs)
    with serving(tmp_path, "-m", tiny_st, "--index", index, *TORCH_FP32) as server:
        client = OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=60)
        for fmt in ("float", "base64"):
            response = client.embeddings.create(model="tiny", input=inputs, dimensions=CUT, encoding_format=fmt)
            rows = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
            if fmt == "base64":
                rows = [np.frombuffer(base64.b64decode(row), dtype="<f4") for row in rows]
            np.testing.assert_allclose(np.array(rows, dtype=np.float32), cut, atol=1e-6, rtol=0)
        same = client.embeddings.create(model="tiny", input=inputs, dimensions=WIDTH)
        np.testing.assert_allclose([d.embedding for d in same.data], full, atol=1e-6, rtol=0)
        with pytest.raises(BadRequestError) as over:
            client.embeddings.create(model="tiny", input=inputs, dimensions=WIDTH + 1)
        assert over.value.status_code == 400 and str(WIDTH) in over.value.message
        for bad in (WIDTH + 1, 0, -3, "8", 8.5, True, [8]):
            code, _, answer = http("POST", server.url + "/v1/embeddings", {"input": "a baby pig", "dimensions": bad})
            assert code == 400 and answer["error"]["param"] == "dimensions", (bad, answer)
        # requests of several widths batched together: each gets its own cut
        answers: dict = {}

        def ask(n):
            body = {"input": inputs, **({} if n is None else {"dimensions": n})}
            answers[n] = http("POST", server.url + "/v1/embeddings", body)

        threads = [threading.Thread(target=ask, args=(n,)) for n in (None, CUT, 4, WIDTH + 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        for n, expected in ((None, full), (CUT, cut), (4, unit(full[:, :4]))):
            code, _, body = answers[n]
            assert code == 200 and np.allclose([d["embedding"] for d in body["data"]], expected, atol=1e-6), n
        assert answers[WIDTH + 1][0] == 400
        # /v1/search of an index built with --dims: the queries cut to its width
        code, _, answer = http("POST", server.url + "/v1/search", {"query": TEXTS[1], "k": 1})
        assert code == 200 and answer["dimensions"] == CUT
        assert answer["data"][0]["results"][0]["id"] == 2 and answer["data"][0]["results"][0]["score"] == pytest.approx(
            1
        )
        # a search's dimensions: its index's width, or a 400 (never ignored)
        code, _, same = http("POST", server.url + "/v1/search", {"query": TEXTS[1], "k": 1, "dimensions": CUT})
        assert code == 200 and same["data"] == answer["data"]
        for bad in (4, WIDTH, "8", True):
            code, _, refused = http("POST", server.url + "/v1/search", {"query": TEXTS[1], "dimensions": bad})
            assert code == 400 and refused["error"]["param"] == "dimensions", (bad, refused)
            assert (
                f"searched at its {CUT} dimensions" in refused["error"]["message"]
                and "--dims" in refused["error"]["message"]
            )
        assert "Traceback" not in server.stderr()
