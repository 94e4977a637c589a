"""idf weights and dropped bias tokens against hand-computed values, and through the encoder."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from defsent_cli.encoder.token_weights import (
    IdfWeighting,
    bias_tokens,
    build_weighting,
    drop_tokens_for,
    parse_drop_groups,
)
from defsent_cli.errors import DefsentError


def test_idf_by_hand():
    # 4 documents over a vocabulary of 6: token 1 everywhere, 2 in two, 3 in one, 4 nowhere.
    docs = [[1, 2, 3], [1, 2], [1, 1], [1]]
    idf = IdfWeighting().fit(docs, 6)
    assert idf.n_docs == 4 and idf.df.tolist() == [0, 4, 2, 1, 0, 0]
    table = idf.table().tolist()
    assert table[1] == 0.0
    assert np.allclose([table[2], table[3]], [math.log(2), math.log(4)])
    assert np.isclose(table[4], math.log(4))  # unseen counts as df = 1
    ids = torch.tensor([[1, 2, 3, 0], [1, 1, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    w = idf.weights(ids, mask)
    assert torch.allclose(w[0], torch.tensor([0.0, math.log(2), math.log(4), 0.0]))
    assert w[1].tolist() == [1.0, 1.0, 0.0, 0.0]  # all-zero idf falls back to the plain mean


def test_unfitted_idf_is_an_error():
    with pytest.raises(DefsentError, match="before it was fitted"):
        IdfWeighting().table()
    with pytest.raises(DefsentError, match="at least one corpus line"):
        IdfWeighting().fit([], 5)


def test_bias_list_is_promptberts_36_tokens():
    tokens = bias_tokens()
    assert len(tokens) == 36 and tokens[:3] == [".", "a", "the"] and "##s" in tokens and tokens[-1] == "white"


def test_drop_groups_and_errors():
    assert parse_drop_groups("biases") == ("frequent", "punctuation", "subword")
    assert parse_drop_groups("punctuation,subword") == ("punctuation", "subword")
    with pytest.raises(DefsentError, match="use biases"):
        parse_drop_groups("stopwords")
    with pytest.raises(DefsentError, match="separate methods"):
        build_weighting(None, "idf", None, "biases")
    with pytest.raises(DefsentError, match="needs --weighting idf"):
        build_weighting(None, None, ["a line"], None)


def test_drop_tokens_on_a_wordpiece_vocab(tiny_bert):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    vocab = tok.get_vocab()
    drop = drop_tokens_for(tok, "biases")
    for token in ("the", ".", ",", "##s"):
        if token in vocab:
            assert vocab[token] in drop.dropped
    assert not set(tok.all_special_ids) & drop.dropped
    kept = [t for t in ("dog", "cat", "animal") if t in vocab and not t.startswith("##")]
    assert all(vocab[t] not in drop.dropped for t in kept if t not in bias_tokens())
    only_punct = drop_tokens_for(tok, "punctuation")
    assert "the" not in vocab or vocab["the"] not in only_punct.dropped
    ids = torch.tensor([[tok.cls_token_id, vocab.get("the", 0), tok.sep_token_id]])
    w = drop.weights(ids, torch.ones_like(ids))
    assert w[0, 0] == 1 and w[0, 2] == 1


def test_idf_mean_through_the_encoder_equals_hand_weighting(tiny_bert):
    """encode(pooling mean + idf) == Σ w h / Σ w over the same model's token states."""
    from defsent_cli.encoder.encode import encode, prepare_pooling
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.pooling import build_pooling
    from defsent_cli.encoder.tokenize import tokenize

    loaded = load_model(tiny_bert, "cpu")
    texts = ["a dog runs in the park", "the cat sleeps", "a dog and a cat"]
    pool = build_pooling("mean", weighting=build_weighting(loaded.tokenizer, "idf"))
    got = encode(texts, loaded, pooling=pool, show_progress_bar=False)
    ids = tokenize(texts, loaded.tokenizer, pool, 64)
    df = {}
    for row in ids:
        for t in set(row):
            df[t] = df.get(t, 0) + 1
    with torch.inference_mode():
        for row, vec in zip(ids, got, strict=True):
            states = loaded.model(input_ids=torch.tensor([row])).last_hidden_state[0].numpy()
            w = np.array([math.log(len(texts) / df[t]) for t in row])
            assert np.allclose(vec, (w[:, None] * states).sum(0) / w.sum(), atol=1e-5)
    # a fixed corpus gives other weights than the target texts
    fitted = prepare_pooling(pool, loaded, idf_corpus=["the the the", "a dog"])
    assert fitted.weighting.n_docs == 2
    other = encode(texts, loaded, pooling=fitted, show_progress_bar=False)
    assert not np.allclose(other, got)
