"""``defsent train-pairs``: the bi-encoder on scored pairs. The loss against a hand computation, the epoch-wise
dev evaluation keeping the best epoch, the checkpoint sentence-transformers reads, the refusals, resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import CORPUS, write

from defsent_cli.errors import DefsentError
from defsent_cli.training.config import TrainConfig

PAIRS = [(CORPUS[i], CORPUS[(i + 1) % 10], round(i * 0.5, 1)) for i in range(10)]


@pytest.fixture
def pairs(tmp_path) -> Path:
    path = tmp_path / "gold.tsv"
    write(path, [f"{a}\t{b}\t{s}" for a, b, s in PAIRS])
    return path


def _trainer(model: Path, pairs: Path, loss: str = "cosine"):
    from defsent_cli.training.loop import ObjectiveRun
    from defsent_cli.training.pairs import Pairs

    # on the CPU whatever the machine has: the hand computation below runs the model on host tensors, in fp32
    config = TrainConfig(pooling="mean", lr=1e-3, batch_size=3, batching="random", device="cpu")
    return ObjectiveRun(Pairs(loss=loss, max_score=5.0), pairs, model, config)


def _mean(trainer, texts: list[str]) -> torch.Tensor:
    from defsent_cli.encoder.tokenize import pad_batch, pad_id, tokenize

    ids = tokenize(texts, trainer.loaded.tokenizer, trainer.pool, trainer.max_length)
    input_ids, mask = pad_batch(ids, pad_id(trainer.loaded.tokenizer))
    states = trainer.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
    return (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)


@pytest.mark.parametrize("loss", ["cosine", "cosent"])
def test_the_loss_on_three_pairs_is_the_hand_computed_one(loss, tiny_bert, pairs):
    trainer = _trainer(tiny_bert, pairs, loss)
    trainer.model.eval()  # no dropout: the hand computation sees the same vectors
    index = np.array([2, 5, 9])
    got = float(trainer.loss_on(index).detach())
    with torch.no_grad():
        u = _mean(trainer, [PAIRS[i][0] for i in index]).numpy()
        v = _mean(trainer, [PAIRS[i][1] for i in index]).numpy()
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    gold = np.array([PAIRS[i][2] / 5 for i in index])
    if loss == "cosine":
        expected = float(np.mean((cos - gold) ** 2))
    else:  # CoSENT: log(1 + sum over (i, j) with gold_i > gold_j of exp(20 (cos_j - cos_i)))
        terms = [20 * (cos[j] - cos[i]) for i in range(3) for j in range(3) if gold[i] > gold[j]]
        expected = float(np.log1p(np.sum(np.exp(terms))))
    assert got == pytest.approx(expected, rel=1e-5)


def test_train_pairs_keeps_the_best_epoch_and_writes_a_sentence_transformers_model(
    cli, tiny_bert, pairs, mini, tmp_path
):
    out = tmp_path / "bi"
    result = cli("train-pairs", pairs, "-m", tiny_bert, "-o", out, "--lr", "1e-3", "-b", "4", "--data", mini)
    assert result.exit_code == 0, result.stderr
    info = json.loads((out / "defsent.json").read_text())
    assert info["kind"] == "pairs" and info["training_pairs"] == 10 and info["loss"] == "cosine"
    assert info["config"]["weight_decay"] == 0.01 and info["config"]["warmup_ratio"] == 0.1
    assert info["eval_on"] == "stsb-dev" and [s for s, _ in info["eval_curve"]] == [0, 3, 6, 9]  # each epoch
    scores = dict(map(tuple, info["eval_curve"]))
    assert info["kept_step"] == max((s for s in scores if s > 0), key=lambda s: (scores[s], -s))
    card = (out / "README.md").read_text()
    assert "a bi-encoder trained on scored sentence pairs" in card and "| training pairs | 10 |" in card
    from sentence_transformers import SentenceTransformer

    sentences = tmp_path / "sentences.txt"
    sentences.write_text(f"{PAIRS[0][0]}\n{PAIRS[0][1]}\n")  # a pairs file is no plain text: encode refuses it
    assert cli("encode", "-m", out, "-i", sentences, "-o", tmp_path / "v.npy").exit_code == 0
    expected = SentenceTransformer(str(out), device="cpu").encode([PAIRS[0][0]])
    assert np.allclose(np.load(tmp_path / "v.npy")[0], expected[0], atol=1e-5)


def test_train_pairs_refusals_are_one_line(cli, tiny_bert, pairs, tmp_path):
    unscored = tmp_path / "unscored.tsv"
    write(unscored, ["a\tb", "c\td"])
    too_high = tmp_path / "high.tsv"
    write(too_high, ["a\tb\t7", "c\td\t1"])
    for args, message in [
        ([unscored, "--eval-every", "0"], "has no scores"),
        ([too_high, "--eval-every", "0"], "--max-score 5 must be at least the largest magnitude"),
        ([pairs, "--loss", "mse"], "'mse' is not one of"),
        ([pairs, "--max-score", "0"], "--max-score"),
        ([pairs, "--eval-on", "dict-dev"], "dict-dev"),
        ([pairs, "--data", tmp_path / "nowhere"], "data folder not found"),
    ]:
        result = cli("train-pairs", *args, "-m", tiny_bert, "-o", tmp_path / "o")
        assert result.exit_code == 2 and message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_eval_every_epoch_is_a_config_value_that_keeps_the_best_by_default():
    assert TrainConfig(eval_every="epoch").validate().kept == "best"
    assert TrainConfig(eval_every="epoch", keep="best").validate().kept == "best"
    assert TrainConfig(eval_every=0).validate().kept == "last"
    for wrong in ("weekly", -1, 2.5):
        with pytest.raises(DefsentError, match="--eval-every must be 0"):
            TrainConfig(eval_every=wrong).validate()


def test_no_progress_silences_the_dev_evaluations_too(cli, tiny_bert, pairs, mini, tmp_path, monkeypatch):
    monkeypatch.delenv("DEFSENT_NO_PROGRESS", raising=False)
    args = ["train-pairs", pairs, "-m", tiny_bert, "-b", "4", "--epochs", "1", "--data", mini]
    shown = cli(*args, "-o", tmp_path / "a", "--progress")
    quiet = cli(*args, "-o", tmp_path / "b", "--no-progress")
    assert shown.exit_code == quiet.exit_code == 0, (shown.stderr, quiet.stderr)
    assert "STS-B (" in shown.stderr  # the epoch's dev evaluation encodes STS-B dev with a bar
    # the training bar's loss field is text ("-" until the first loss is read), filled with the loss to 3 places
    assert re.search(r"loss \d+\.\d{3},? lr ", shown.stderr), shown.stderr  # a bar, or plain lines without a terminal
    assert "━" not in quiet.stderr and "STS-B (" not in quiet.stderr, quiet.stderr
