"""+NM, Noise Matching as an auxiliary loss any sentence objective takes (``--nm-weight``; issue 57,
``training/noise_matching.py``, ``training/forward.py``): the term against hand-computed values, its
stop-gradient, its per-item draws, and through the real commands (train, simcse, train-pairs) that it adds exactly
λ times one term to the objective's loss, is recorded, and runs under torchrun as in one process."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import CORPUS, DEFSENT, WORDS, max_weight_diff, run_torchrun_test, torchrun, without_dropout

from defsent_cli.training.noise_matching import Noised, NoiseMatching

# --- the term ---------------------------------------------------------------------------------------------


def test_the_term_is_lambda_times_infonce_of_damaged_onto_originals_by_hand():
    originals = torch.tensor([[1.0, 0.0], [0.0, 2.0]], requires_grad=True)
    damaged = torch.tensor([[3.0, 4.0], [1.0, 1.0]], requires_grad=True)
    term = NoiseMatching(weight=0.5, temperature=0.5).loss(originals, damaged)
    # cosines, query i (original) against key j (damaged): row 0 (1, 0) . unit keys (0.6, 0.8), (0.7071, 0.7071)
    cos = [[0.6, 1 / math.sqrt(2)], [0.8, 1 / math.sqrt(2)]]
    by_hand = 0.0
    for i in range(2):
        logits = [2.0 * c for c in cos[i]]  # scale = 1 / temperature
        by_hand += -(logits[i] - math.log(sum(math.exp(x) for x in logits)))
    assert float(term.detach()) == pytest.approx(0.5 * by_hand / 2, rel=1e-6)  # λ x the mean over the queries
    term.backward()
    assert originals.grad is None  # the stop-gradient: the originals are targets
    assert damaged.grad is not None and float(damaged.grad.abs().sum()) > 0


def test_each_sentence_is_damaged_by_its_own_key_whatever_the_batch():
    nm = NoiseMatching(weight=1.0, deletion=0.6)
    texts = ["the cat sat on the warm mat today", "a long necked african animal of the plains", "give new life"]
    keys = [(4,), (9,), (11,)]
    together = nm.damage(Noised(texts, keys), seed=3, step=5)
    alone = [nm.damage(Noised([t], [k]), seed=3, step=5)[0] for t, k in zip(texts, keys, strict=True)]
    assert together == alone  # a torchrun share damages its items as one process would
    assert nm.damage(Noised(texts, keys), seed=3, step=5) == together  # and a resume the same way
    assert nm.damage(Noised(texts, keys), seed=3, step=6) != together  # another step, other deletions
    for original, copy in zip(texts, together, strict=True):
        words = copy.split()
        assert 1 <= len(words) < len(original.split())
        it = iter(original.split())
        assert all(word in it for word in words)  # a subsequence of the original


def test_settings_are_checked_in_the_one_wording():
    from defsent_cli.errors import DefsentError

    with pytest.raises(DefsentError, match=r"^--nm-temperature must be a finite number > 0, got 0.0$"):
        NoiseMatching(weight=0.1, temperature=0.0).check()
    with pytest.raises(DefsentError, match=r"^--nm-deletion must be a finite number in \[0, 1\), got 1.0$"):
        NoiseMatching(weight=0.1, deletion=1.0).check()


# --- through the commands ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory, tiny_bert) -> dict:
    from typer.testing import CliRunner

    from defsent_cli.cli import app

    root = tmp_path_factory.mktemp("nm")
    entries = [w for w in WORDS if w.isalpha() and len(w) >= 3][:12]
    rows = [{"entry": w, "definitions": [CORPUS[i % len(CORPUS)]]} for i, w in enumerate(entries)]
    dictionary = root / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = root / "bank.h5"
    made = CliRunner().invoke(
        app, ["embed-entries", str(dictionary), "-m", str(tiny_bert), "-o", str(bank), "--device", "cpu", "-q"]
    )
    assert made.exit_code == 0, made.output
    sentences = root / "sentences.txt"
    sentences.write_text("".join(line + "\n" for line in CORPUS))
    pairs = root / "pairs.tsv"
    pairs.write_text("".join(f"{CORPUS[i]}\t{CORPUS[(i + 3) % 10]}\t{i * 0.5}\n" for i in range(10)))
    return {"dictionary": dictionary, "bank": bank, "sentences": sentences, "pairs": pairs}


LOOP = ["--device", "cpu", "--seed", "5", "--log-every", "1", "--save-every", "0", "--precision", "fp32"]
LOOP += ["--max-steps", "1", "-b", "4", "--no-progress"]


def _command(name: str, files: dict, model: Path) -> list:
    if name == "train":
        return ["train", files["dictionary"], "--bank", files["bank"], "-m", model, "--eval-every", "0"]
    if name == "simcse":
        return ["simcse", files["sentences"], "-m", model]
    return ["train-pairs", files["pairs"], "-m", model, "--eval-every", "0"]


@pytest.mark.parametrize("command", ["train", "simcse", "train-pairs"])
def test_the_term_adds_lambda_times_one_value_to_the_objectives_loss(command, cli, files, tiny_bert, tmp_path):
    """The first step's loss with λ = 0, 0.5 and 1.5 (dropout on: the objective's own pass draws first, the damaged
    pass after it, so every run sees the same draws): L(λ) - L(0) is λ times one positive NM value."""
    losses = {}
    for weight in ("0", "0.5", "1.5"):
        out = tmp_path / f"nm-{weight}"
        result = cli(*_command(command, files, tiny_bert), *LOOP, "--nm-weight", weight, "-o", out)
        assert result.exit_code == 0, result.stderr
        losses[weight] = json.loads((out / "train_log.jsonl").read_text().splitlines()[0])["loss"]
        info = json.loads((out / "defsent.json").read_text())
        if weight == "0":
            assert "nm_weight" not in info  # a run without +NM records what it always did
            continue
        assert (info["nm_weight"], info["nm_temperature"], info["nm_deletion"]) == (float(weight), 0.05, 0.6)
        assert f"plus {float(weight):g} x Noise Matching" in (out / "README.md").read_text()
        assert "Noise Matching" in result.stderr  # the start-of-training note says so
    half, more = losses["0.5"] - losses["0"], losses["1.5"] - losses["0"]
    assert half > 1e-3  # InfoNCE over 4 sentences is about log 4 at the start
    assert more == pytest.approx(3 * half, rel=1e-4)


def test_teacher_and_tsdae_keep_their_own_options(cli, files, tiny_bert, tmp_path):
    refused = cli("teacher", files["pairs"], "-m", tiny_bert, "--nm-weight", "0.1", "-o", tmp_path / "t")
    assert refused.exit_code == 2 and "--nm-weight" in refused.stderr  # a cross-encoder encodes no sentence alone
    refused = cli("tsdae", files["sentences"], "-m", tiny_bert, "--nm-deletion", "0.3", "-o", tmp_path / "t")
    assert refused.exit_code == 2 and "--nm-deletion" in refused.stderr  # TSDAE + NM deletes with --deletion


@pytest.mark.parametrize("command", ["train", "train-pairs"])
def test_under_torchrun_the_term_is_the_one_process_term(command, files, tiny_bert, tmp_path):
    """2 processes against one on the same global batches (a last batch of 1 leaves rank 1 without items): the
    damaged sentences are drawn per item and the keys gathered from both processes (a pair's two sides: twice the
    rows), so the loss curve and the weights are one process's up to float noise."""
    model = without_dropout(tiny_bert, tmp_path / "bert-nodrop")
    args = [*_command(command, files, model), "--nm-weight", "1", "--lr", "0.05", "--adam-eps", "1"]
    args += ["--max-grad-norm", "1000", "-b", "4", "--batching", "bucket", "--device", "cpu", "--log-every", "1"]
    if command == "train":
        args += ["--pooling", "mean", "--limit", "9"]  # batches of 4, 4, 1
    else:
        args += ["--epochs", "1", "--limit", "9"]
    single, dist = tmp_path / "single", tmp_path / "dist"
    one = run_torchrun_test([*DEFSENT, *args, "-o", single])
    assert one.returncode == 0, one.stderr.decode()
    two = run_torchrun_test([*torchrun(2), *args, "-o", dist])
    assert two.returncode == 0, two.stderr.decode()
    a, b = (json.loads((f / "defsent.json").read_text()) for f in (single, dist))
    assert b["processes"] == 2 and a["steps"] == b["steps"] == 3 and a["nm_weight"] == 1.0
    assert np.allclose(np.array(a["loss_curve"]), np.array(b["loss_curve"]), atol=1e-5)
    assert max_weight_diff(single, dist) < 1e-5
