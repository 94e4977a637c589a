"""``defsent teacher`` (Cross-Encoder, Cross-Bi-Encoder) and ``defsent label``: the CBE's score against a hand
computation (which tokens each pooling reads, with and without special tokens), the CE folder as a
sentence-transformers CrossEncoder, and the chain teacher -> label -> train-pairs on real files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import CORPUS, write

from defsent_cli.training.teachers import PairScorer

PAIRS = [(CORPUS[i], CORPUS[(i + 2) % 10], round(i * 0.5, 1)) for i in range(10)]


@pytest.fixture
def gold(tmp_path) -> Path:
    path = tmp_path / "gold.tsv"
    write(path, [f"{a}\t{b}\t{s}" for a, b, s in PAIRS])
    return path


@pytest.mark.parametrize("special_tokens", [True, False])
def test_the_cross_bi_encoder_pools_each_sentence_over_its_own_tokens(special_tokens, tiny_bert):
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModel.from_pretrained(tiny_bert).eval()
    scorer = PairScorer(model, tokenizer, "cbe", 64, special_tokens)
    a, b = "a dog", "the cat sleeps"
    batch = scorer.batch([a, "x"], [b, "y"])
    ids_a, ids_b = tokenizer(a)["input_ids"], tokenizer(b)["input_ids"]  # [CLS] ... [SEP] each
    row = batch["input_ids"][0].tolist()
    assert row[: len(ids_a) + len(ids_b)] == ids_a + ids_b  # [CLS] a [SEP] [CLS] b [SEP]: a second [CLS]
    assert batch["token_type_ids"][0].tolist()[: len(ids_a) + len(ids_b)] == [0] * len(ids_a) + [1] * len(ids_b)
    first, second = scorer.pooling_masks(batch)
    span_a = list(range(len(ids_a))) if special_tokens else list(range(1, len(ids_a) - 1))
    span_b = [len(ids_a) + i for i in (range(len(ids_b)) if special_tokens else range(1, len(ids_b) - 1))]
    assert torch.nonzero(first[0]).flatten().tolist() == span_a
    assert torch.nonzero(second[0]).flatten().tolist() == span_b
    with torch.no_grad():
        states = model(
            input_ids=batch["input_ids"][:1], attention_mask=batch["attention_mask"][:1],
            token_type_ids=batch["token_type_ids"][:1],
        ).last_hidden_state[0]  # fmt: skip
    u, v = states[span_a].mean(0), states[span_b].mean(0)
    expected = float(torch.nn.functional.cosine_similarity(u, v, dim=0))
    got = scorer.score([a], [b], "cpu")
    assert got[0] == pytest.approx(expected, abs=1e-5)


def test_a_cross_encoder_teacher_is_a_sentence_transformers_cross_encoder(cli, tiny_bert, gold, mini, tmp_path):
    out = tmp_path / "ce"
    result = cli("teacher", gold, "-m", tiny_bert, "--arch", "ce", "-o", out, "-b", "4", "--lr", "1e-3", "--data", mini)
    assert result.exit_code == 0, result.stderr
    info = json.loads((out / "defsent.json").read_text())
    assert info["kind"] == "teacher" and info["arch"] == "ce" and info["max_score"] == 5.0
    assert [s for s, _ in info["eval_curve"]] == [0, 3, 6, 9] and "teacher's pair scores" in str(info["scores"])
    assert not (out / "modules.json").exists()  # not a bi-encoder folder
    silver = tmp_path / "silver.tsv"
    unlabelled = tmp_path / "new.tsv"
    write(unlabelled, [f"{CORPUS[i]}\t{CORPUS[9 - i]}" for i in range(5)])
    labelled = cli("label", unlabelled, "-m", out, "-o", silver)
    assert labelled.exit_code == 0, labelled.stderr
    rows = [line.split("\t") for line in silver.read_text().splitlines()]
    assert [(a, b) for a, b, _ in rows] == [(CORPUS[i], CORPUS[9 - i]) for i in range(5)]
    from sentence_transformers import CrossEncoder

    expected = CrossEncoder(str(out), device="cpu").predict([(CORPUS[i], CORPUS[9 - i]) for i in range(5)])
    assert np.allclose([float(s) for *_, s in rows], 5 * expected, atol=1e-3)  # sigmoid(logit) x max-score


def test_cross_bi_encoder_teacher_label_and_student(cli, tiny_bert, gold, mini, tmp_path):
    teacher = tmp_path / "cbe"
    args = ["teacher", gold, "-m", tiny_bert, "--arch", "cbe", "-b", "4", "--lr", "1e-3", "--eval-every", "0"]
    result = cli(*args, "-o", teacher)
    assert result.exit_code == 0, result.stderr
    info = json.loads((teacher / "defsent.json").read_text())
    assert info["arch"] == "cbe" and info["special_tokens"] is True and info["steps"] == 9
    silver = tmp_path / "silver.tsv"
    assert cli("label", gold, "-m", teacher, "-o", silver).exit_code == 0  # a scored file: its gold is ignored
    from defsent_cli.formats.pairs import read_pairs
    from defsent_cli.training.teachers import load_teacher

    scorer, _, _ = load_teacher(teacher, "cpu")
    cosines = scorer.score([a for a, _, _ in PAIRS], [b for _, b, _ in PAIRS], "cpu")
    labels = read_pairs(silver)
    assert np.allclose(labels.scores, 5 * cosines, atol=1e-3)  # the cosine in the gold's scale
    student = tmp_path / "student"
    trained = cli("train-pairs", silver, "-m", tiny_bert, "-o", student, "--eval-every", "0", "-b", "4")
    assert trained.exit_code == 0, trained.stderr
    assert json.loads((student / "defsent.json").read_text())["training_pairs"] == 10
    not_a_teacher = cli("label", gold, "-m", student, "-o", tmp_path / "x.tsv")
    assert not_a_teacher.exit_code == 2 and "is not a teacher" in not_a_teacher.stderr
