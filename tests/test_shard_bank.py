"""`train --shard-bank` (issue 29): the bank's rows split across torchrun processes (gloo, CPU), the softmax over
all entries computed across them; and the reverse dictionary over a bank read a chunk of rows at a time, or a
share of its rows per process.

The math in float64 across 2 and 3 processes (tests/shard_ranks.py); real runs of a tiny model without dropout:
2 and 3 processes give the loss curve, the dict-dev curve and the weights of one process on the same global
batches, with a float16 bank and label smoothing too; eval-dict under torchrun gives one process's figures.
Every torchrun run pins ``--device cpu`` and has a deadline.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    CORPUS,
    DEFSENT,
    TORCHRUN_ENV,
    max_weight_diff,
    run_torchrun_test,
    torchrun,
    without_dropout,
    without_option,
)

from defsent_cli.formats.bank import BANK_FORMAT, Bank, open_bank, write_bank
from defsent_cli.search import exact

# Adam with eps 1 and no clipping: a wrongly scaled gradient moves the weights by ~1e-3 instead of ~1e-7
# (see test_distributed.py); dict-dev scored every 3 steps and at the end, the last weights kept.
TRAIN = ["--batch-size", "4", "--lr", "1e-2", "--adam-eps", "1", "--max-grad-norm", "1000", "--seed", "3"]
TRAIN += ["--log-every", "1", "--save-every", "0", "--device", "cpu"]
TRAIN += ["--eval-every", "3", "--eval-on", "dict-dev", "--keep", "last"]
TRAIN += ["--pooling", "mean"]  # as the AMP bank below pools (a plain BERT would pool CLS)
HALF = ["--bank-dtype", "float16", "--label-smoothing", "0.1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_bert) -> dict:
    """A tiny BERT without dropout, a dictionary of 17 train and 6 dev entries (two with one definition, so one
    vector), its bank, and one-process runs with a float32 and a float16 bank."""
    root = tmp_path_factory.mktemp("shard")
    model = without_dropout(tiny_bert, root / "bert-nodrop")
    rows = [
        {"entry": f"w{i}", "definitions": [CORPUS[i % len(CORPUS)], f"give new life {i}"][: 1 + i % 2]}
        for i in range(17)
    ]  # 25 train definitions: batches of 4 end with a batch of 1, which leaves the other processes without items
    rows += [{"entry": f"d{i}", "definitions": [f"a dev definition {i % 5}"], "split": "dev"} for i in range(6)]
    dictionary = root / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = root / "bank.h5"
    made = run_torchrun_test(
        [*DEFSENT, "embed-entries", dictionary, "-m", model, "-o", bank, "--pool", "mean", "--device", "cpu"]
    )
    assert made.returncode == 0, made.stderr.decode()
    args = ["train", dictionary, "--bank", bank, "-m", model, *TRAIN]
    out = {"root": root, "model": model, "dictionary": dictionary, "bank": bank, "args": args}
    for name, extra in (("single", []), ("half", HALF)):
        run = run_torchrun_test([*DEFSENT, *args, *extra, "-o", root / name])
        assert run.returncode == 0, run.stderr.decode()
        out[name] = root / name
    return out


def _info(folder: Path) -> dict:
    return json.loads((folder / "defsent.json").read_text())


def test_sharded_bank_loss_is_the_one_process_loss_in_float64():
    """The loss, its gradient through the all-gather and DDP's average, and the reverse dictionary's ranks and
    top k, from shards of 2 and 3 processes against one (tests/shard_ranks.py)."""
    for processes in (2, 3):
        run = run_torchrun_test(torchrun(processes, str(Path(__file__).with_name("shard_ranks.py"))))
        assert run.returncode == 0, run.stderr.decode()
        out = run.stdout.decode()
        assert float(out.split("max difference")[1].split()[0]) < 1e-12, out  # measured 8.9e-16
        assert "rank mismatches 0\n" in out and "top-k mismatches 0\n" in out, out


@pytest.mark.parametrize("processes,extra", [(2, []), (3, []), (2, HALF)], ids=["2", "3", "2-float16-smoothing"])
def test_sharded_training_equals_one_process(runs, tmp_path, processes, extra):
    """Each process holds a third or a half of the bank: the loss curve, the dict-dev curve (every process scores
    its rows) and the weights of the one-process run; the dev entries d0 and d5 share their one vector."""
    out = tmp_path / "sharded"
    run = run_torchrun_test([*torchrun(processes), *runs["args"], *extra, "--shard-bank", "-o", out])
    assert run.returncode == 0, run.stderr.decode()
    assert run.stderr.decode().count("wrote ") == 1 and "bank sharded" in run.stderr.decode()
    single = runs["half" if extra else "single"]
    ours, theirs = _info(out), _info(single)
    assert ours["processes"] == processes and ours["bank_sharded"] is True and theirs["bank_sharded"] is False
    assert ours["steps"] == theirs["steps"] == 7
    assert np.allclose(np.array(ours["loss_curve"]), np.array(theirs["loss_curve"]), atol=1e-5)
    assert [step for step, _ in ours["eval_curve"]] == [0, 3, 6, 7]
    assert np.allclose(np.array(ours["eval_curve"]), np.array(theirs["eval_curve"]), atol=1e-3)  # MRR x100
    assert max_weight_diff(single, out) < 1e-6  # measured ~1e-7; a wrong weighting moves them by ~1e-3


def test_a_killed_sharded_run_resumes_replicated(runs, tmp_path):
    """A state saved with the bank sharded resumes with it replicated (the setting may change on --resume) and
    ends at the weights of the uninterrupted one-process run."""
    out = tmp_path / "killed"
    killer = torchrun(2, str(Path(__file__).with_name("kill_after_step.py")))
    args = [*without_option(runs["args"], "--save-every"), "--save-every", "2", "-o", out]
    run = run_torchrun_test([*killer, *args, "--shard-bank"], env={**TORCHRUN_ENV, "KILL_AFTER_STEP": "5"})
    assert run.returncode != 0 and not out.exists()
    resumed = run_torchrun_test([*torchrun(2), *args, "--no-shard-bank", "--resume"])
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert resumed.stderr.decode().count("resuming from step 4") == 1
    assert _info(out)["bank_sharded"] is False
    assert max_weight_diff(runs["single"], out) < 1e-6


def test_float16_bank_and_label_smoothing_change_the_run(runs):
    """The runs compared above differ from each other: the float16 / smoothing options took effect."""
    assert max_weight_diff(runs["single"], runs["half"]) > 1e-4
    assert _info(runs["half"])["config"]["bank_dtype"] == "float16"


def test_eval_dict_under_torchrun_equals_one_process(runs, tmp_path):
    args = ["eval-dict", runs["dictionary"], "-m", runs["single"], "--bank", runs["bank"], "--split", "dev"]
    args += ["--device", "cpu", "-b", "2"]
    one = run_torchrun_test([*DEFSENT, *args, "-o", tmp_path / "one.json"])
    assert one.returncode == 0, one.stderr.decode()
    two = run_torchrun_test([*torchrun(2), *args, "-o", tmp_path / "two.json"])
    assert two.returncode == 0, two.stderr.decode()
    a, b = (json.loads((tmp_path / name).read_text()) for name in ("one.json", "two.json"))
    assert a["n"] == b["n"] == 6
    assert {k: a[k] for k in ("mrr", "mrr10", "top1", "top3", "top10", "median_rank")} == {
        k: b[k] for k in ("mrr", "mrr10", "top1", "top3", "top10", "median_rank")
    }


def test_shard_bank_in_one_process_warns_and_trains_as_usual(cli, runs, tmp_path):
    args = [*without_option(runs["args"], "--eval-every"), "--max-steps", "1", "--eval-every", "0", "--shard-bank"]
    result = cli(*args, "-o", tmp_path / "o")
    assert result.exit_code == 0, result.stderr
    assert "warning: --shard-bank has no effect in one process" in result.stderr
    assert _info(tmp_path / "o")["bank_sharded"] is False


# --- the reverse dictionary a chunk of rows at a time, in one process ---------------------------------------


def test_ranks_and_top_k_by_hand_over_chunks_of_one_row(tmp_path, monkeypatch):
    """Rows 0 and 2 are one vector: scoring the same as the gold does not count against it."""
    monkeypatch.setattr(exact, "SCORE_ROWS", 1)
    monkeypatch.setattr(exact, "QUERY_ROWS", 1)
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    path = tmp_path / "bank.h5"
    write_bank(path, Bank(["a", "b", "c", "d"], vectors, np.ones(4, dtype=np.int32), {"format": BANK_FORMAT}))
    bank = open_bank(path)  # streamed from the file, one row at a time
    queries = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    # scores: q0 -> 1, 0, 1, 0.6; q1 -> 0, 2, 0, 1.6; q2 -> 3, 4, 3, 5
    ranks = exact.gold_ranks(queries, bank, np.array([2, 3, 0]))
    assert ranks.tolist() == [1, 2, 3]
    index, scores = exact.top_k(queries, bank, k=2)
    assert index[1].tolist() == [1, 3] and index[2].tolist() == [3, 1] and sorted(index[0].tolist()) == [0, 2]
    np.testing.assert_allclose(scores, [[1, 1], [2, 1.6], [5, 4]], rtol=1e-6)
