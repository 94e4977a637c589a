"""--matryoshka on every training command (issue 79): the loss at each leading width, summed; the record, the card,
the resumable state; the refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import KILLER, RESUME_FLAGS, run_warm, without_dropout

ENV = {**os.environ, "DEFSENT_NO_PROGRESS": "1"}
#: the CPU's exact fp32 run, on a GPU machine too (bit-for-bit comparisons and a hand-computed loss; the widths'
#: training on a GPU is examples/matryoshka.sh's, docs/results.md section 11)
CPU = ["--device", "cpu"]


@pytest.fixture
def defsent(cli):
    """``defsent ARGS`` in this process (the training commands' start-up is most of a tiny run's time)."""

    def invoke(*args, check: bool = True):
        done = cli(*args)
        if check:
            assert done.exit_code == 0, done.stderr
        return done

    return invoke


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def first_loss(folder: Path) -> float:
    return json.loads((folder / "train_log.jsonl").read_text().splitlines()[0])["loss"]


@pytest.fixture(scope="module")
def still_bert(tiny_bert, tmp_path_factory) -> Path:
    """The tiny BERT (32 dimensions) without dropout: a step's loss is a function of the weights alone."""
    return without_dropout(tiny_bert, tmp_path_factory.mktemp("still") / "bert")


@pytest.fixture
def banked(tiny_dict, still_bert, tmp_path, defsent) -> tuple[Path, Path]:
    bank = tmp_path / "bank.h5"
    defsent("embed-entries", tiny_dict, "-m", still_bert, "--pool", "mean", "-o", bank)
    return tiny_dict, bank


def train_args(dictionary, bank, model, out, *extra) -> list:
    args = ["train", dictionary, "--bank", bank, "-m", model, "--pooling", "mean", "--pooler", "none"]
    return [*args, "--batch-size", "4", "--log-every", "1", "--lr", "1e-3", *CPU, *extra, "-o", out]


def test_the_loss_is_the_weighted_sum_over_the_widths_hand_computed(banked, still_bert, tmp_path, defsent):
    """One step on all four train definitions: the logged loss equals Σ_d w_d · CE(u[:d] . bank[:d]^T), computed
    here with transformers and numpy from the base model and the bank file."""
    from transformers import AutoModel, AutoTokenizer

    from defsent_cli.formats.bank import read_bank

    dictionary, bank = banked
    out = tmp_path / "m"
    defsent(*train_args(dictionary, bank, still_bert, out, "--max-steps", "1", "--matryoshka", "8:0.5,32"))
    rows = [json.loads(line) for line in dictionary.read_text().splitlines()]
    pairs = [(r["entry"], d) for r in rows if r["split"] == "train" for d in r["definitions"]]
    stored = read_bank(bank)
    row_of = {entry: i for i, entry in enumerate(stored.entries)}
    vectors = np.asarray(stored.vectors, dtype=np.float64)
    tokenizer, model = AutoTokenizer.from_pretrained(still_bert), AutoModel.from_pretrained(still_bert).eval()
    with torch.no_grad():
        inputs = tokenizer([d for _, d in pairs], padding=True, return_tensors="pt")
        states = model(**inputs).last_hidden_state.double()
        mask = inputs["attention_mask"].unsqueeze(-1).double()
        reps = ((states * mask).sum(1) / mask.sum(1)).numpy()
    labels = np.array([row_of[e] for e, _ in pairs])

    def cross_entropy(d: int) -> float:
        logits = reps[:, :d] @ vectors[:, :d].T
        top = logits.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
        return float(np.mean(lse - logits[np.arange(len(labels)), labels]))

    expected = 1.0 * cross_entropy(32) + 0.5 * cross_entropy(8)
    assert cross_entropy(8) != pytest.approx(cross_entropy(32), rel=1e-3)  # the widths' terms differ
    assert first_loss(out) == pytest.approx(expected, rel=1e-4)
    info = json.loads((out / "defsent.json").read_text())
    assert info["matryoshka_dims"] == [32, 8] and info["matryoshka_weights"] == [1.0, 0.5]  # widest first
    card = (out / "README.md").read_text()
    assert "- matryoshka" in card and "matryoshka_dims" in card  # the tag, and the settings' row


def test_one_full_width_is_the_plain_run_bit_for_bit_and_more_widths_change_it(banked, still_bert, tmp_path, defsent):
    """--matryoshka 32 (the model's width, weight 1) is the plain objective: the same weights to the bit (the
    recorded pass is the plain pass); 32,16 trains something else."""
    dictionary, bank = banked
    for name, extra in (("plain", []), ("full", ["--matryoshka", "32"]), ("two", ["--matryoshka", "32,16"])):
        defsent(*train_args(dictionary, bank, still_bert, tmp_path / name, "--max-steps", "3", *extra))
    plain, full, two = (weights(tmp_path / n) for n in ("plain", "full", "two"))
    assert all(torch.equal(plain[k], full[k]) for k in plain)
    assert any(not torch.equal(plain[k], two[k]) for k in plain)


@pytest.mark.parametrize(
    "command",
    [
        ["simcse", "{text}", "--pooling", "mean", "--batch-size", "4"],
        ["simcse", "{text}", "--pooling", "mean", "--batch-size", "4", "--mlm-weight", "0.1", "--nm-weight", "0.1"],
        ["tsdae", "{text}", "--pooling", "mean", "--batch-size", "4"],
        ["tsdae", "{text}", "--pooling", "mean", "--batch-size", "4", "--nm-weight", "0.5"],
        ["train", "{dict}", "--objective", "defsent", "--word-head", "embeddings", "--batch-size", "2"],
    ],
    ids=["simcse", "simcse+mlm+nm", "tsdae", "tsdae+nm", "defsent"],
)
def test_every_objective_trains_at_the_widths_and_the_full_width_alone_is_its_plain_run(
    command, still_bert, tiny_dict, tmp_path, defsent
):
    """Each objective under --matryoshka W (its full width alone) ends at its plain run's weights (so the prefix
    cache replays exactly what the plain run computes, the auxiliary terms included), and W,8 at other weights,
    with a larger first loss (a sum of two cross-entropies)."""
    text = tmp_path / "s.txt"
    text.write_text("".join(f"sentence number {i} about a {w}\n" for i, w in enumerate("cat dog fish bird".split())))
    args = [a.format(text=text, dict=tiny_dict) for a in command]
    common = ["-m", still_bert, "--max-steps", "2", "--log-every", "1", "--lr", "1e-3", "--seed", "3", *CPU]
    outs = {}
    for name, extra in (("plain", []), ("full", ["--matryoshka", "32"]), ("two", ["--matryoshka", "32,8"])):
        outs[name] = tmp_path / name
        defsent(*args, *common, *extra, "-o", outs[name])
    plain, full, two = (weights(outs[n]) for n in ("plain", "full", "two"))
    assert all(torch.equal(plain[k], full[k]) for k in plain)
    assert any(not torch.equal(plain[k], two[k]) for k in plain)
    assert first_loss(outs["two"]) > first_loss(outs["plain"])
    assert json.loads((outs["two"] / "defsent.json").read_text())["matryoshka_dims"] == [32, 8]


def test_train_pairs_takes_the_widths(still_bert, tmp_path, defsent):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "".join(f"a sentence {i}\tanother sentence {i % 3}\t{i % 5}\n" for i in range(8)), encoding="utf-8"
    )
    common = ["train-pairs", pairs, "-m", still_bert, "--epochs", "1", "--batch-size", "4", "--eval-every", "0", *CPU]
    defsent(*common, "-o", tmp_path / "plain")
    defsent(*common, "--matryoshka", "32,8", "-o", tmp_path / "two")
    plain, two = weights(tmp_path / "plain"), weights(tmp_path / "two")
    assert any(not torch.equal(plain[k], two[k]) for k in plain)
    assert json.loads((tmp_path / "two" / "defsent.json").read_text())["matryoshka_dims"] == [32, 8]


def test_a_killed_matryoshka_run_resumes_to_the_same_weights(banked, still_bert, tmp_path, defsent):
    dictionary, bank = banked
    args = ["--matryoshka", "32,16:0.5,8", "--save-every", "2", "--seed", "5", "--epochs", "4", *RESUME_FLAGS]
    full, killed = tmp_path / "full", tmp_path / "killed"
    defsent(*train_args(dictionary, bank, still_bert, full, *args))
    base = train_args(dictionary, bank, still_bert, killed, *args)
    died = run_warm([*KILLER, *map(str, base)], env={**ENV, "KILL_AFTER_STEP": "3"})
    assert died.returncode == -9
    other = [a if a != "32,16:0.5,8" else "32,8" for a in base]
    refused = defsent(*other, "--resume", check=False)
    assert refused.exit_code == 2 and "--matryoshka 32,8 (saved: 32,16:0.5,8)" in refused.stderr
    assert "--matryoshka-" not in refused.stderr  # the option a user types, not the recorded settings' names
    near = [a if a != "32,16:0.5,8" else "32,16:0.5000001,8" for a in base]  # a weight changed in its 7th digit
    refused = defsent(*near, "--resume", check=False)
    assert refused.exit_code == 2 and "--matryoshka 32,16:0.5000001,8 (saved: 32,16:0.5,8)" in refused.stderr
    unset = [a for a in base if a not in ("--matryoshka", "32,16:0.5,8")]
    refused = defsent(*unset, "--resume", check=False)
    assert refused.exit_code == 2 and "--matryoshka not given (saved: 32,16:0.5,8)" in refused.stderr
    resumed = defsent(*base, "--resume")
    assert "resuming from step 2" in resumed.stderr
    a, b = weights(full), weights(killed)
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--matryoshka", "64,32"], "--matryoshka 64,32: the model {model}'s vectors have 32 dimensions, not 64"),
        (["--matryoshka", ""], "--matryoshka '': give the widths"),
        (["--matryoshka", " "], "--matryoshka ' ': give the widths"),
        (["--matryoshka", "16,16"], "a width is given twice"),
        (["--matryoshka", "16,x"], "--matryoshka '16,x'"),
        (["--matryoshka", "16:0"], "weights positive"),
        (["--matryoshka", "16", "--logits", "cosine"], "--logits dot"),
    ],
)
def test_what_cannot_train_is_refused_in_one_line(banked, still_bert, tmp_path, extra, says, defsent):
    dictionary, bank = banked
    done = defsent("train", dictionary, "--bank", bank, "-m", still_bert, *extra, "-o", tmp_path / "o", check=False)
    assert done.exit_code == 2, done.stderr
    assert says.format(model=still_bert) in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.partial").exists()


def test_simcse_mlp_and_the_teacher_refuse_it(still_bert, tmp_path, defsent):
    text = tmp_path / "s.txt"
    text.write_text("".join(f"sentence {i}\n" for i in range(8)))
    args = ["-m", still_bert, "--matryoshka", "16"]
    done = defsent("simcse", text, *args, "--pooling", "cls", "-o", tmp_path / "o", check=False)
    assert done.exit_code == 2 and "--no-mlp" in done.stderr
    done = defsent("teacher", text, *args, "-o", tmp_path / "t", check=False)
    assert done.exit_code == 2 and "--matryoshka" in done.stderr


def test_a_merge_keeps_the_widths_every_model_in_it_was_trained_for(banked, still_bert, tmp_path, defsent):
    dictionary, bank = banked
    for name, extra in (("a", ["--seed", "1"]), ("b", ["--seed", "2"])):
        defsent(*train_args(dictionary, bank, still_bert, tmp_path / name, "--matryoshka", "32,8", *extra))

    def merged(name, *args) -> dict:
        defsent("merge", *args, "-o", tmp_path / name)
        return json.loads((tmp_path / name / "defsent.json").read_text())

    soup = merged("soup", tmp_path / "a", tmp_path / "b", "--method", "uniform")
    assert soup["matryoshka_dims"] == [32, 8] and soup["matryoshka_weights"] == [1.0, 1.0]
    card = (tmp_path / "soup" / "README.md").read_text()
    assert "- matryoshka" in card and "Trained with Matryoshka at 32, 8 dimensions" in card
    # WiSE-FT with the base, which was not trained for them: no widths; alpha 1 leaves the base out: its widths
    assert "matryoshka_dims" not in merged("wise", still_bert, tmp_path / "a", "--alpha", "0.5")
    assert merged("whole", still_bert, tmp_path / "a", "--alpha", "1")["matryoshka_dims"] == [32, 8]
