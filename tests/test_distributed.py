"""`torchrun`: 2 CPU processes (gloo) against one process, on a tiny model.

Training: the same global batch gives the same weights (float noise); a run
killed mid-way resumes under torchrun.  Encoding and embed-entries: the same
rows in the same order.  Every torchrun run pins ``--device cpu`` (these are tests of the gloo path; on a GPU
machine ``auto`` would pick NCCL) and has a deadline: a run that hangs fails in minutes instead of stalling
the suite.  A short training runs several times in a row, for the hang at exit of issue 27.  Plus the
single-process no-op contract of ``defsent_cli.distributed``, the order in which it tears a group down, and
the float16 bank loss.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import weakref
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import (
    CORPUS,
    DEFSENT,
    TORCHRUN_ENV,
    checkpoint_weights,
    max_weight_diff,
    torchrun,
    without_dropout,
    without_option,
)
from conftest import run_torchrun_test as _run

from defsent_cli import distributed
from defsent_cli.errors import DefsentError
from defsent_cli.training.loss import bank_cross_entropy

ENV = TORCHRUN_ENV
TORCHRUN = torchrun(2)

# Adam with eps 1 and no clipping: the update is nearly linear in the gradient, so
# a wrongly scaled loss (say, forgetting that DDP averages) moves the weights by
# ~1e-3 instead of ~1e-7.  Adam's default eps 1e-6 is blind to such a scale.
TRAIN = ["--batch-size", "4", "--lr", "1e-2", "--adam-eps", "1", "--max-grad-norm", "1000", "--seed", "3"]
TRAIN += ["--log-every", "1", "--save-every", "2", "--device", "cpu"]
MEAN = ["--pooling", "mean"]  # train as the mean bank (AMP) is pooled; a plain BERT would pool CLS
CPU = ["--device", "cpu"]
_weights, _max_diff = checkpoint_weights, max_weight_diff


@pytest.fixture(scope="module")
def setup(tmp_path_factory, tiny_bert) -> dict:
    """A tiny BERT without dropout, a 25-definition dictionary, its bank and a one-process training run."""
    root = tmp_path_factory.mktemp("dist")
    model = without_dropout(tiny_bert, root / "bert-nodrop")
    rows = [
        {"entry": f"w{i}", "definitions": [CORPUS[i % len(CORPUS)], f"give new life {i}"][: 1 + i % 2]}
        for i in range(17)
    ]  # 25 definitions: batches of 4 end with a batch of 1, which leaves rank 1 without items
    dictionary = root / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = root / "bank.h5"
    _run([*DEFSENT, "embed-entries", dictionary, "-m", model, "-o", bank, "--pool", "mean", *CPU], check=True)
    single = root / "single"
    _run([*DEFSENT, "train", dictionary, "--bank", bank, "-m", model, "-o", single, *TRAIN, *MEAN], check=True)
    return {"root": root, "model": model, "dictionary": dictionary, "bank": bank, "single": single}


def test_distributed_training_equals_one_process_with_the_same_global_batch(setup):
    out = setup["root"] / "dist"
    run = _run(
        [
            *TORCHRUN,
            "train",
            setup["dictionary"],
            "--bank",
            setup["bank"],
            "-m",
            setup["model"],
            "-o",
            out,
            *TRAIN,
            *MEAN,
        ]
    )
    assert run.returncode == 0, run.stderr.decode()
    stderr = run.stderr.decode()
    assert stderr.count("wrote ") == 1 and "2 processes" in stderr  # rank 0 alone speaks
    assert not (setup["root"] / "dist.partial").exists()
    base = {k.removeprefix("bert."): v for k, v in _weights(setup["model"]).items()}
    trained = _weights(setup["single"])
    assert max(float((trained[k] - base[k]).abs().max()) for k in trained) > 1e-3  # training moved the weights
    assert _max_diff(setup["single"], out) < 1e-6  # measured ~1e-7
    info = json.loads((out / "defsent.json").read_text())
    assert info["processes"] == 2 and info["steps"] == 7
    single_curve = json.loads((setup["single"] / "defsent.json").read_text())["loss_curve"]
    assert np.allclose(np.array(info["loss_curve"]), np.array(single_curve), atol=1e-5)


def test_distributed_training_resumes_after_a_kill(setup):
    args = ["train", setup["dictionary"], "--bank", setup["bank"], "-m", setup["model"], *TRAIN, *MEAN]
    out = setup["root"] / "killed"
    killer = torchrun(2, str(Path(__file__).with_name("kill_after_step.py")))
    run = _run([*killer, *args, "-o", out], env={**ENV, "KILL_AFTER_STEP": "5"})
    assert run.returncode != 0 and not out.exists()
    assert (setup["root"] / "killed.partial" / "state.safetensors").exists()
    resumed = _run([*TORCHRUN, *args, "-o", out, "--resume"])
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert resumed.stderr.decode().count("resuming from step 4") == 1
    assert _max_diff(setup["single"], out) < 1e-6
    steps = [json.loads(line)["step"] for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 8))


LOOPS = 4  # ~10 s each on 2 cores


@pytest.mark.long
def test_distributed_training_ends_every_time(setup, tmp_path):
    """Issue 27: a 2-process run could hang for good at exit, after writing its checkpoint (DDP's Reducer freed
    the gloo group holding the GIL while a gloo worker waited for the GIL; 1 run in 40 here). A short run,
    saving and gathering every step, run several times in a row: each ends in time, with the same weights."""
    args = ["train", setup["dictionary"], "--bank", setup["bank"], "-m", setup["model"]]
    args += [*without_option(TRAIN, "--save-every"), *MEAN, "--max-steps", "2", "--save-every", "1"]
    runs = [tmp_path / f"run-{i}" for i in range(LOOPS)]
    for out in runs:
        run = _run([*TORCHRUN, *args, "-o", out])
        assert run.returncode == 0, run.stderr.decode()
        info = json.loads((out / "defsent.json").read_text())
        assert info["processes"] == 2 and info["steps"] == 2
        assert not out.with_name(out.name + ".partial").exists()
    base = {k.removeprefix("bert."): v for k, v in _weights(setup["model"]).items()}
    moved = _weights(runs[0])
    assert max(float((moved[k] - base[k]).abs().max()) for k in moved) > 1e-3  # the runs trained
    assert max(_max_diff(runs[0], out) for out in runs[1:]) < 1e-7


@pytest.mark.long
def test_gathered_in_batch_negatives_give_the_one_process_gradient_in_float64():
    """Issue 28, the math alone: 2 and 3 gloo processes, a linear encoder in float64 (tests/gather_ranks.py)."""
    for processes in ("2", "3"):
        cmd = torchrun(processes, str(Path(__file__).with_name("gather_ranks.py")))
        run = _run(cmd)
        assert run.returncode == 0, run.stderr.decode()
        worst = float(run.stdout.decode().split("max difference")[1])
        assert worst < 1e-12, worst


CONTRASTIVE = ["--batch-size", "4", "--lr", "0.5", "--adam-eps", "1", "--max-grad-norm", "1000", "--seed", "3"]
CONTRASTIVE += ["--log-every", "1", "--device", "cpu", "--split", "all", "--batching", "bucket"]


@pytest.mark.parametrize("objective", ["simcse", "nm"])
def test_distributed_contrastive_training_equals_one_process(objective, setup, tmp_path):
    """Issue 28: the in-batch negatives gathered from both processes (the 25 definitions end with a batch of 1,
    which leaves rank 1 without a sentence): the same loss curve and weights as one process on the same global
    batches. The stop-gradient of Noise Matching and the gathered keys' gradients are both in play."""
    args = ["simcse", setup["dictionary"], "-m", setup["model"], "--objective", objective, *CONTRASTIVE]
    single, dist = tmp_path / "single", tmp_path / "dist"
    one = _run([*DEFSENT, *args, "-o", single])
    assert one.returncode == 0, one.stderr.decode()
    two = _run([*TORCHRUN, *args, "-o", dist])
    assert two.returncode == 0, two.stderr.decode()
    base = {k.removeprefix("bert."): v for k, v in _weights(setup["model"]).items()}
    trained = _weights(single)
    moved = max(float((trained[k] - base[k]).abs().max()) for k in trained)
    assert moved > 5e-4  # training moved the weights
    # float32 noise, grown by the steps (measured: moved 2.6e-3, differ 3.5e-6 after 7 steps of SimCSE); a wrong
    # weighting or a missing gather differs by as much as the weights move (the float64 test holds the math)
    assert _max_diff(single, dist) < 1e-2 * moved
    a, b = (json.loads((f / "defsent.json").read_text()) for f in (single, dist))
    assert b["processes"] == 2 and b["steps"] == a["steps"] == 7
    assert np.allclose(np.array(a["loss_curve"]), np.array(b["loss_curve"]), atol=1e-5)


def _pairs_run_in_one_and_two_processes(tmp_path: Path, command: str, *options) -> tuple[Path, Path]:
    """``command`` (train-pairs, teacher) on 9 scored pairs in batches of 4 (the last batch of 1 leaves rank 1
    without a pair), in one process and under torchrun: the two output folders."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{CORPUS[i]}\t{CORPUS[(i + 3) % 10]}\t{i * 0.5}\n" for i in range(9)))
    args = [command, pairs, *options, *without_option(TRAIN, "--save-every")]
    single, dist = tmp_path / "single", tmp_path / "dist"
    one = _run([*DEFSENT, *args, "-o", single])
    assert one.returncode == 0, one.stderr.decode()
    two = _run([*TORCHRUN, *args, "-o", dist])
    assert two.returncode == 0, two.stderr.decode()
    # every trainable parameter is in the loss (the bi-encoder's pooler is frozen): DDP does not look for unused ones
    assert b"find_unused_parameters=True" not in two.stderr, two.stderr.decode()[-2000:]
    return single, dist


def test_distributed_train_pairs_equals_one_process(setup, tmp_path):
    """Issue 30: the per-pair cosine loss under torchrun (9 pairs in batches of 4: the last batch of 1 leaves
    rank 1 without a pair) gives the loss curve and weights of one process."""
    single, dist = _pairs_run_in_one_and_two_processes(
        tmp_path, "train-pairs", "-m", setup["model"], "--batching", "bucket", "--eval-every", "0"
    )
    base = {k.removeprefix("bert."): v for k, v in _weights(setup["model"]).items()}
    trained = _weights(single)
    moved = max(float((trained[k] - base[k]).abs().max()) for k in trained)
    assert moved > 1e-3 and _max_diff(single, dist) < 1e-2 * moved
    a, b = (json.loads((f / "defsent.json").read_text()) for f in (single, dist))
    assert b["processes"] == 2 and b["steps"] == a["steps"] == 9  # 3 epochs of 3 batches
    assert np.allclose(np.array(a["loss_curve"]), np.array(b["loss_curve"]), atol=1e-5)


def test_distributed_teacher_is_scored_on_dev_and_equals_one_process(setup, tmp_path):
    """A cross-encoder teacher under torchrun, scored on dev after every epoch (its default): rank 0 scores
    while the other waits (every rank once asked the criterion for an attribute it lacked, and died), and the
    loss and dev curves are those of one process."""
    from conftest import build_mini

    data = build_mini(tmp_path / "data")
    single, dist = _pairs_run_in_one_and_two_processes(
        tmp_path, "teacher", "-m", setup["model"], "--arch", "ce", "--data", data, "--batching", "bucket"
    )
    a, b = (json.loads((f / "defsent.json").read_text()) for f in (single, dist))
    assert b["processes"] == 2 and b["steps"] == a["steps"] == 9
    assert [s for s, _ in b["eval_curve"]] == [s for s, _ in a["eval_curve"]] == [0, 3, 6, 9]
    assert np.allclose([v for _, v in a["eval_curve"]], [v for _, v in b["eval_curve"]], atol=1e-3)
    assert np.allclose(np.array(a["loss_curve"]), np.array(b["loss_curve"]), atol=1e-5)


def test_distributed_encode_from_stdin_equals_one_process(setup, cli, tmp_path):
    texts = [" ".join(CORPUS[i % len(CORPUS)].split()[: 2 + i % 7]) + f" {i}" for i in range(37)]
    source = tmp_path / "sents.txt"
    source.write_text("\n".join(texts) + "\n")
    single = tmp_path / "single.npy"
    assert cli("encode", "-m", setup["model"], "-b", "4", "-i", source, "-o", single, *CPU).exit_code == 0
    with open(source, "rb") as stdin:
        run = _run([*TORCHRUN, "encode", "-m", setup["model"], "-b", "4", *CPU], stdin=stdin)
    assert run.returncode == 0, run.stderr.decode()
    import io

    vectors = np.load(io.BytesIO(run.stdout))  # one .npy on stdout: rank 0 alone writes
    expected = np.load(single)
    assert vectors.shape == expected.shape == (37, 32)
    assert np.allclose(vectors, expected, atol=1e-6)  # measured: bit-equal (the same batches)
    nearest = np.argmin(((vectors[:, None] - expected[None]) ** 2).sum(-1), axis=1)
    assert nearest.tolist() == list(range(37))  # row i is text i


def test_distributed_embed_entries_equals_one_process(setup, tmp_path):
    from defsent_cli.formats.bank import read_bank

    out = tmp_path / "bank.h5"
    run = _run(
        [
            *TORCHRUN,
            "embed-entries",
            setup["dictionary"],
            "-m",
            setup["model"],
            "-b",
            "3",
            "--pool",
            "mean",
            "-o",
            out,
            *CPU,
        ]
    )
    assert run.returncode == 0, run.stderr.decode()
    assert run.stderr.decode().count("wrote ") == 1
    ours, theirs = read_bank(out), read_bank(setup["bank"])
    assert ours.entries == theirs.entries and np.array_equal(ours.counts, theirs.counts)
    assert np.allclose(ours.vectors, theirs.vectors, atol=1e-6)


# --- in one process ---------------------------------------------------------------------------------


def test_one_process_is_a_no_op():
    assert not distributed.active() and distributed.world() == 1 and distributed.is_main()
    assert distributed.shard(np.arange(5)).tolist() == [0, 1, 2, 3, 4]
    assert distributed.gather_object("x") == ["x"] and distributed.broadcast_object(3) == 3
    assert distributed.all_reduce_sum(1.5) == 1.5 and distributed.local_device("cuda:1") == "cuda:1"
    with distributed.session("cpu"):
        distributed.barrier()
    assert not torch.distributed.is_initialized()


@pytest.fixture
def one_rank_group(monkeypatch):
    """A real gloo group of one process, opened by ``distributed.init`` as under torchrun. Its store listens on
    a port the system picks (port 0: alone in the group, nobody has to know it), so parallel tests never race
    for one."""
    env = {"WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(distributed, "active", lambda: True)  # world 1 is a no-op otherwise
    yield
    distributed.destroy(wait=False)
    assert not torch.distributed.is_initialized()


def _gloo_threads() -> int:
    """gloo's worker threads in this process (alive while a gloo group is)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/comm") as fh:
            names.append(fh.read().strip())
    return names.count("pt_gloo_runloop")


def _gloo_started(before: int, deadline: float = 60.0) -> bool:
    """Whether gloo's workers are running: they name themselves once they are scheduled, which on a loaded
    machine can be a while after the group is created, so wait for it (bounded) instead of looking once."""
    import time

    stop = time.monotonic() + deadline
    while _gloo_threads() <= before and time.monotonic() < stop:
        time.sleep(0.05)
    return _gloo_threads() > before


def test_teardown_frees_the_ddp_reducer_before_the_group_and_the_group_for_good(one_rank_group, monkeypatch):
    """The order of issue 27's fix: the DDP wrapper's Reducer (a C++ owner of the group, freed with the GIL held)
    goes while the group is alive, even if something still holds the wrapper (a traceback); the group is then
    destroyed, and freed for good once its last Python reference goes (torch frees those with the GIL
    released), its gloo workers joined, not left for the interpreter's exit."""
    import torch.distributed as dist

    before = _gloo_threads()
    with distributed.session("cpu"):
        assert distributed.initialized() and _gloo_started(before)
        trainer = SimpleNamespace(net=torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2)))
        trainer.net(torch.ones(4, 3)).sum().backward()
        distributed.all_reduce_sum(1.0)
        held = trainer.net  # as a traceback's frame would
        reducer = weakref.ref(held.reducer)
        distributed.on_teardown(lambda: setattr(trainer, "net", distributed.unwrap(trainer.net)))
        seen = []
        real = dist.destroy_process_group

        def spy(group=None):
            seen.append((reducer() is None, dist.is_initialized(), _gloo_threads() > before))
            real(group)

        monkeypatch.setattr(dist, "destroy_process_group", spy)
    assert seen == [(True, True, True)]  # the Reducer gone first, the group still open
    assert type(trainer.net) is torch.nn.Linear and held.module is trainer.net
    assert not dist.is_initialized() and not distributed.initialized()
    del held  # its Python reference to the group was the last one: the group is freed with the GIL released
    gc.collect()
    assert _gloo_threads() == before  # freed for good: the workers were joined


def test_a_failed_session_closes_without_waiting_for_the_other_ranks(one_rank_group, monkeypatch):
    """After an error the ranks may stand at different collectives: no barrier then (it could wait forever);
    a normal end waits for every rank once."""
    import torch.distributed as dist

    barriers = []
    real = dist.barrier
    monkeypatch.setattr(dist, "barrier", lambda *a, **k: barriers.append(1) or real(*a, **k))
    before = _gloo_threads()
    with pytest.raises(KeyboardInterrupt), distributed.session("cpu"):
        distributed.all_reduce_sum(1.0)
        raise KeyboardInterrupt
    assert barriers == [] and not dist.is_initialized()
    assert _gloo_threads() == before  # the group freed within the session's end
    with distributed.session("cpu"):
        distributed.all_reduce_sum(1.0)
    assert barriers == [1] and not dist.is_initialized() and _gloo_threads() == before


def test_rank_helpers_under_a_torchrun_environment(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert distributed.active() and not distributed.is_main()
    assert distributed.shard(np.arange(5)).tolist() == [3, 4]  # contiguous, the first ranks one longer
    assert distributed.shard(np.arange(1)).tolist() == []
    batches = [np.array([i]) for i in range(5)]
    assert [b.tolist() for b in distributed.my_batches(batches)] == [[1], [3]]
    assert distributed.local_device("cpu") == "cpu"
    with pytest.raises(DefsentError, match="--device cuda"):
        distributed.local_device("cuda:0")


def test_float16_bank_loss_matches_the_float32_loss_on_the_same_values():
    torch.manual_seed(0)
    reps = torch.randn(7, 16, requires_grad=True)
    bank = torch.randn(300, 16).half()
    labels = torch.randint(0, 300, (7,))
    ref = bank_cross_entropy(reps, bank.float(), labels)
    ref.backward()
    grad, reps.grad = reps.grad.clone(), None
    ours = bank_cross_entropy(reps, bank, labels, chunk=64)  # 5 chunks, the last one short
    ours.backward()
    assert ours.item() == pytest.approx(ref.item(), rel=1e-6)
    assert torch.allclose(grad, reps.grad, atol=1e-6)


def test_train_with_a_float16_bank(cli, setup, tmp_path):
    out = tmp_path / "half"
    args = ["train", setup["dictionary"], "--bank", setup["bank"], "-m", setup["model"], *TRAIN, *MEAN]
    result = cli(*args, "-o", out, "--bank-dtype", "float16")
    assert result.exit_code == 0, result.output
    info = json.loads((out / "defsent.json").read_text())
    assert info["config"]["bank_dtype"] == "float16"
    single = json.loads((setup["single"] / "defsent.json").read_text())
    assert info["final_loss"] == pytest.approx(single["final_loss"], abs=1e-2)  # only the bank's rounding differs
    bad = cli(*args, "-o", tmp_path / "x", "--bank-dtype", "int8")
    assert bad.exit_code == 2 and "--bank-dtype" in bad.stderr
