"""GPUs, first class: what `auto` means (ONNX Runtime, more processes than GPUs), mixed precision for inference
and training, the fp32 loss under autocast, the token budget, and the GPU encode loop. Everything here runs on
the CPU (bf16 autocast and half weights run there; the GPU count is mocked); the tests marked ``cuda`` run
only where there is a CUDA GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import KILLER, run_warm
from torch.utils._python_dispatch import TorchDispatchMode

from defsent_cli import distributed
from defsent_cli.errors import DefsentError

CUDA = torch.cuda.is_available()
cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
SENTS = ["a dog runs in the park", "the cat sleeps", "two men play chess on a long table in the park", "rain"] * 6


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def sents(tmp_path) -> Path:
    path = tmp_path / "sents.txt"
    path.write_text("\n".join(SENTS) + "\n")
    return path


def _encode(cli, model, sents, out, *extra) -> np.ndarray:
    result = cli("encode", "-m", model, "-i", sents, "-o", out, *extra)
    assert result.exit_code == 0, result.output
    return np.load(out)


# --- what --device auto means -----------------------------------------------------------------------


def _torchrun_env(monkeypatch, processes: int, local_rank: int, gpus: int) -> None:
    for name, value in (("WORLD_SIZE", processes), ("RANK", local_rank), ("LOCAL_RANK", local_rank)):
        monkeypatch.setenv(name, str(value))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(processes))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)


def test_more_processes_than_gpus_is_a_one_line_error_naming_both_counts(monkeypatch):
    _torchrun_env(monkeypatch, processes=2, local_rank=1, gpus=1)
    for device in ("auto", "cuda"):
        with pytest.raises(DefsentError) as error:
            distributed.local_device(device)
        message = str(error.value)
        assert "2 processes" in message and "1 GPU" in message and "--device cpu" in message
        assert "\n" not in message
    assert distributed.local_device("cpu") == "cpu"  # the way out: every process on the CPU


def test_one_process_per_gpu_takes_its_own(monkeypatch):
    _torchrun_env(monkeypatch, processes=2, local_rank=1, gpus=2)
    assert distributed.local_device("auto") == "cuda:1" and distributed.local_device("cuda") == "cuda:1"
    _torchrun_env(monkeypatch, processes=2, local_rank=1, gpus=0)
    assert distributed.local_device("auto") == "cpu"  # no GPU: auto is the CPU, as in one process
    with pytest.raises(DefsentError, match="CUDA is not available"):
        distributed.local_device("cuda")


def test_onnx_runtime_with_device_auto_runs_on_the_cpu_even_where_cuda_is_available(
    cli, tiny_bert, sents, tmp_path, monkeypatch
):
    pytest.importorskip("onnxruntime")
    import shutil

    from defsent_cli.cli import models

    model = Path(shutil.copytree(tiny_bert, tmp_path / "bert"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU box: auto alone would say cuda
    loaded = models.load(models.Values(model=model, device="auto", runtime="onnx", precision="fp32"))
    assert str(loaded.device) == "cpu" and loaded.runtime is not None
    monkeypatch.setenv("DEFSENT_RUNTIME", "onnx")  # the user's default, on every command
    out = tmp_path / "sts.npy"
    result = cli("encode", "-m", model, "-i", sents, "-o", out)
    assert result.exit_code == 0, result.output
    assert "onnx fp32" in result.stderr
    ref = _encode(cli, model, sents, tmp_path / "ref.npy", "--runtime", "torch", "--device", "cpu")
    assert np.abs(_unit(np.load(out)) - _unit(ref)).max() < 1e-4


def test_precision_and_runtime_combinations_are_checked_before_anything_loads(cli, tiny_bert, sents, tmp_path):
    out = tmp_path / "x.npy"
    for extra, says in (
        (["--runtime", "torch", "--precision", "int8"], "--runtime onnx"),
        (["--runtime", "onnx", "--precision", "fp16"], "--runtime torch"),
        (["--runtime", "onnx", "--precision", "bf16"], "--runtime torch"),
        (["--precision", "fp8"], "fp8"),
    ):
        result = cli("encode", "-m", tiny_bert, "-i", sents, "-o", out, *extra)
        assert result.exit_code == 2 and says in result.stderr, (extra, result.stderr)
        assert not out.exists()


# --- half-precision inference ---------------------------------------------------------------------


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_inference_is_close_to_fp32_and_says_what_ran(cli, tiny_bert, mini, sents, tmp_path, precision):
    fp32 = _encode(cli, tiny_bert, sents, tmp_path / "f.npy", "--device", "cpu")
    half = _encode(cli, tiny_bert, sents, tmp_path / "h.npy", "--device", "cpu", "--precision", precision)
    assert half.dtype == np.float32
    diff = np.abs(_unit(half) - _unit(fp32)).max()
    assert 0 < diff < 3e-2  # half precision ran (not the same numbers), and is close
    result = cli("eval-sts", "-m", tiny_bert, "--data", mini, "--device", "cpu", "--precision", precision,
                 "--tasks", "STS-B,SICK-R", "-o", tmp_path / "sts.json")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "sts.json").read_text())["runtime"] == f"torch {precision}"


def test_lookup_with_a_trained_head_runs_in_half_precision(cli, tiny_bert, tiny_dict, tmp_path):
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank, "--device", "cpu").exit_code == 0
    ckpt = tmp_path / "ckpt"
    train = cli("train", tiny_dict, "--bank", bank, "-m", tiny_bert, "-o", ckpt, "-b", "2", "--device", "cpu")
    assert train.exit_code == 0, train.output
    hits = {}
    for precision in ("fp32", "bf16"):  # the head's dense layer holds bf16 weights too
        result = cli("lookup", "a long-necked african animal", "-m", ckpt, "--bank", bank, "--json",
                     "--device", "cpu", "--precision", precision)  # fmt: skip
        assert result.exit_code == 0, result.output
        hits[precision] = [row["entry"] for row in json.loads(result.stdout)["results"]]
    assert hits["bf16"][0] == hits["fp32"][0]


# --- mixed-precision training ---------------------------------------------------------------------


def test_the_bank_loss_stays_float32_under_autocast():
    from defsent_cli.training.loss import bank_cross_entropy

    torch.manual_seed(0)
    reps = torch.randn(8, 64).to(torch.bfloat16).requires_grad_()
    bank, labels = torch.randn(300, 64) * 3, torch.randint(0, 300, (8,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = bank_cross_entropy(reps, bank, labels, chunk=128)
    ours.backward()
    exact = torch.nn.functional.cross_entropy(reps.detach().double() @ bank.double().T, labels)
    assert ours.dtype == torch.float32 and reps.grad.dtype == torch.bfloat16
    assert abs(ours.item() - exact.item()) < 1e-5  # bf16 logits would be off by ~1e-2
    with torch.autocast("cpu", dtype=torch.bfloat16):
        in_bf16 = torch.nn.functional.cross_entropy(reps @ bank.T.to(torch.bfloat16), labels)
    assert abs(in_bf16.item() - exact.item()) > 1e-4  # the check above can tell the two apart


def _train(cli, dictionary, bank, model, out, *extra) -> dict:
    args = ["train", dictionary, "--bank", bank, "-m", model, "-o", out, "-b", "4", "--lr", "1e-3", "--seed", "3"]
    result = cli(*args, "--device", "cpu", "--log-every", "1", *extra)
    assert result.exit_code == 0, result.output
    return json.loads((out / "defsent.json").read_text())


@pytest.fixture
def train_data(cli, tiny_bert, tmp_path) -> tuple[Path, Path]:
    rows = [{"entry": f"w{i}", "definitions": [f"a long-necked african animal {i}", f"give new life {i % 4}"]}
            for i in range(16)]  # fmt: skip
    dictionary = tmp_path / "d.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", dictionary, "-m", tiny_bert, "-o", bank, "--device", "cpu").exit_code == 0
    return dictionary, bank


def test_bf16_autocast_training_follows_the_fp32_run_and_auto_is_fp32_on_the_cpu(cli, tiny_bert, train_data, tmp_path):
    from safetensors.torch import load_file

    dictionary, bank = train_data
    fp32 = _train(cli, dictionary, bank, tiny_bert, tmp_path / "fp32", "--precision", "fp32")
    auto = _train(cli, dictionary, bank, tiny_bert, tmp_path / "auto")
    bf16 = _train(cli, dictionary, bank, tiny_bert, tmp_path / "bf16", "--precision", "bf16")
    assert (fp32["precision"], auto["precision"], bf16["precision"]) == ("fp32", "fp32", "bf16")
    weights = {name: load_file(str(tmp_path / name / "model.safetensors")) for name in ("fp32", "auto", "bf16")}
    assert all(torch.equal(weights["fp32"][k], weights["auto"][k]) for k in weights["fp32"])  # CPU: auto is fp32
    assert all(w.dtype == torch.float32 for w in weights["bf16"].values())  # fp32 master weights
    assert any(not torch.equal(weights["fp32"][k], weights["bf16"][k]) for k in weights["fp32"])  # autocast ran
    a, b = np.array(fp32["loss_curve"])[:, 1], np.array(bf16["loss_curve"])[:, 1]
    assert np.abs(a - b).max() < 0.05 * np.abs(a).max()  # the same run, in bf16 arithmetic


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_fp16_training_scales_the_loss_and_resumes_bit_identically(device, tiny_bert, train_data, tmp_path):
    """fp16 autocast with a gradient scaler; a killed run resumes to the uninterrupted weights (the scaler's
    state is part of the resumable state): on the CPU as it is, on a GPU under --deterministic."""
    from safetensors.torch import load_file

    dictionary, bank = train_data
    defsent = [sys.executable, "-m", "defsent_cli"]
    env = {**os.environ, "DEFSENT_NO_PROGRESS": "1"}
    args = ["train", dictionary, "--bank", bank, "-m", tiny_bert, "-b", "4", "--lr", "1e-3", "--seed", "3"]
    args += ["--precision", "fp16", "--device", device, "--save-every", "2"]
    args += ["--deterministic"] if device == "cuda" else []
    args = [str(a) for a in args]
    run_warm([*defsent, *args, "-o", tmp_path / "full"], check=True, env=env, timeout=300)
    info = json.loads((tmp_path / "full" / "defsent.json").read_text())
    assert info["precision"] == "fp16" and np.isfinite(info["final_loss"])
    run = run_warm([*KILLER, *args, "-o", tmp_path / "killed"], env={**env, "KILL_AFTER_STEP": "5"}, timeout=300)
    assert run.returncode == -9
    from safetensors import safe_open

    with safe_open(str(tmp_path / "killed.partial" / "state.safetensors"), "pt") as state:
        doc = json.loads(state.metadata()["defsent"])
    assert doc["scaler"]["scale"] > 1  # fp16's loss scale is saved
    resumed = run_warm([*defsent, *args, "-o", tmp_path / "killed", "--resume"], env=env, timeout=300,
                             capture_output=True, text=True)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    a, b = (
        load_file(str(tmp_path / "full" / "model.safetensors")),
        load_file(str(tmp_path / "killed" / "model.safetensors")),
    )
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_tf32_training_holds_tf32_over_the_backward_pass_too(cli, tiny_bert, train_data, tmp_path, monkeypatch):
    """--precision tf32: TF32 matrix products in every step's backward pass (about 2/3 of its products), not only
    in the forward pass, and torch's switch back as it was after the run; on the CPU the run is fp32's."""
    from safetensors.torch import load_file

    dictionary, bank = train_data
    seen, backward = [], torch.autograd.backward

    def watched(*args, **kwargs):
        seen.append(torch.backends.cuda.matmul.allow_tf32)
        return backward(*args, **kwargs)

    monkeypatch.setattr(torch.autograd, "backward", watched)
    before = torch.backends.cuda.matmul.allow_tf32
    info = _train(cli, dictionary, bank, tiny_bert, tmp_path / "tf32", "--precision", "tf32", "--max-steps", "3")
    assert info["precision"] == "tf32" and seen == [True, True, True]
    assert torch.backends.cuda.matmul.allow_tf32 is before
    seen.clear()
    _train(cli, dictionary, bank, tiny_bert, tmp_path / "fp32", "--precision", "fp32", "--max-steps", "3")
    assert seen == [before] * 3
    a, b = (load_file(str(tmp_path / name / "model.safetensors")) for name in ("tf32", "fp32"))
    assert all(torch.equal(a[k], b[k]) for k in a)  # TF32 is a GPU's: the CPU's products are fp32 either way


def test_training_precision_is_checked(cli, tiny_bert, train_data, tmp_path):
    dictionary, bank = train_data
    result = cli("train", dictionary, "--bank", bank, "-m", tiny_bert, "-o", tmp_path / "x", "--precision", "int8")
    assert result.exit_code == 2 and "int8" in result.stderr and not (tmp_path / "x").exists()


# --- batching by tokens ------------------------------------------------------------------------------


def test_a_token_budget_caps_each_batch_by_its_padded_size():
    from defsent_cli.encoder.tokenize import length_batches

    lengths = [10, 10, 10, 10, 2, 2, 2, 2, 2, 2, 2, 2, 30]
    batches = [b.tolist() for b in length_batches(lengths, 8, max_tokens=24)]
    # 30 alone (over the budget); 10s two at a time (2 x 10 <= 24); 2s up to --batch-size 8 (8 x 2 <= 24)
    assert batches == [[12], [0, 1], [2, 3], [4, 5, 6, 7, 8, 9, 10, 11]]
    assert [b.tolist() for b in length_batches(lengths, 8)] == [[12, 0, 1, 2, 3], [4, 5, 6, 7, 8, 9, 10, 11]]
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 40, 500)
    seen = []
    for batch in length_batches(list(lengths), 64, max_tokens=200):
        assert len(batch) <= 64 and (len(batch) == 1 or len(batch) * lengths[batch].max() <= 200)
        seen += batch.tolist()
    assert sorted(seen) == list(range(500))


def test_batch_tokens_gives_the_same_vectors(cli, tiny_bert, sents, tmp_path):
    ref = _encode(cli, tiny_bert, sents, tmp_path / "a.npy", "--device", "cpu", "-b", "64")
    got = _encode(cli, tiny_bert, sents, tmp_path / "b.npy", "--device", "cpu", "-b", "64", "--batch-tokens", "20")
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_pad_batch_hand_checked():
    from defsent_cli.encoder.tokenize import pad_batch

    ids, mask = pad_batch([[5, 6, 7], [8], [9, 10]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]] and ids.dtype == torch.long
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]] and mask.dtype == torch.long


def test_a_ready_sdpa_mask_gives_the_2d_masks_states(tiny_bert):
    from defsent_cli.encoder.encode import model_mask
    from defsent_cli.encoder.models import load_model

    model = load_model(tiny_bert, "cpu").model
    ids = torch.randint(5, 30, (3, 7))
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[0, 5:], mask[2, 2:] = 0, 0
    with torch.inference_mode():
        ref = model(input_ids=ids, attention_mask=mask).last_hidden_state
        ours = model(input_ids=ids, attention_mask=model_mask(model, mask, True)).last_hidden_state
    assert model_mask(model, mask, False) is None
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=0)


def test_a_ready_eager_mask_is_transformers_additive_mask_and_gives_the_2d_masks_states(tiny_bert, tiny_roberta):
    """Ditto's eager attention gets the 4D mask transformers would build: 0 at tokens, the dtype's minimum at
    padding, in the model's dtype (transformers 5.17 builds it from a host scalar, which a graph cannot record)."""
    from defsent_cli.encoder.encode import model_mask
    from defsent_cli.encoder.models import load_model

    ids = torch.randint(5, 30, (3, 7))
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[0, 5:], mask[2, 2:] = 0, 0
    for folder in (tiny_bert, tiny_roberta):
        model = load_model(folder, "cpu").model
        model.set_attn_implementation("eager")
        ready = model_mask(model, mask, True)
        low = torch.finfo(torch.float32).min
        assert ready.dtype == torch.float32 and ready.shape == (3, 1, 1, 7)
        assert ready[2, 0, 0].tolist() == [0.0, 0.0] + [low] * 5 and ready[1].eq(0).all()
        with torch.inference_mode():
            ref = model(input_ids=ids, attention_mask=mask).last_hidden_state
            ours = model(input_ids=ids, attention_mask=ready).last_hidden_state
        torch.testing.assert_close(ours, ref, atol=1e-6, rtol=0)
        assert model_mask(model.to(torch.bfloat16), mask, True).dtype == torch.bfloat16


class _HostTraffic(TorchDispatchMode):
    """Records the ops that read a value back to the host or build a tensor from host data: on a GPU, the first
    waits for the GPU and the second is a copy from pageable memory, neither of which a CUDA graph can record."""

    HOST = ("aten.lift_fresh", "aten._local_scalar_dense", "aten.is_nonzero", "aten.item")

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func).startswith(self.HOST):
            self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "prompt", "first-last", "ditto"])
def test_a_padded_forward_pass_and_pooling_only_queue_device_work(tiny_bert, tiny_roberta, pooling):
    """What --cuda-graphs records (encode's compute), checked on the CPU: no value read back, no tensor made
    from host data, for every pooling on BERT and RoBERTa (prompt's CPU-only safety net left out)."""
    from dataclasses import replace

    from defsent_cli.encoder.encode import model_outputs, prepare_pooling
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.pooling import build_pooling

    for folder in (tiny_bert, tiny_roberta):
        loaded = load_model(folder, "cpu")
        pool = prepare_pooling(build_pooling(pooling, ditto_head="1-2" if pooling == "ditto" else None), loaded)
        ids = torch.randint(5, 30, (2, 6))
        ids[:, 1] = loaded.tokenizer.mask_token_id
        mask = torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0]])
        with torch.inference_mode(), _HostTraffic() as traffic:
            batch = model_outputs(loaded.model, ids, mask, pool, True)
            if pooling != "prompt":
                pool(replace(batch, mask_token_id=loaded.tokenizer.mask_token_id))
        assert traffic.ops == [], (folder.name, traffic.ops)


# --- CUDA graphs (--cuda-graphs) ------------------------------------------------------------------------


def test_graph_batches_are_full_fixed_shapes_longest_first_hand_checked():
    from defsent_cli.encoder.cuda_graphs import graph_batches, round_up
    from defsent_cli.encoder.tokenize import rows_for

    assert [round_up(n, 8, 512) for n in (1, 8, 9, 16, 17)] == [8, 8, 16, 16, 24]
    assert round_up(17, 8, 20) == 20 and round_up(16, 8, 20) == 16  # never past the model's limit
    assert [rows_for(n, 4, None) for n in (8, 24)] == [4, 4] and [rows_for(n, 4, 32) for n in (8, 16, 24, 40)] == [
        4, 2, 1, 1
    ]  # fmt: skip
    lengths = [3, 9, 9, 17, 2, 8, 16]  # rounded: 8, 16, 16, 24, 8, 8, 16; longest first: 3, 6, 1, 2, 5, 0, 4
    assert [b.tolist() for b in graph_batches(lengths, 2, None, 512)] == [[3], [6, 1], [2], [5, 0], [4]]
    assert [b.tolist() for b in graph_batches(lengths, 4, 32, 512)] == [[3], [6, 1], [2], [5, 0, 4]]
    assert graph_batches([], 4, None, 512) == []


def test_pad_batch_pads_up_to_a_given_length():
    from defsent_cli.encoder.tokenize import pad_batch

    ids, mask = pad_batch([[5, 6, 7], [8]], pad_id=1, length=5)
    assert ids.tolist() == [[5, 6, 7, 1, 1], [8, 1, 1, 1, 1]] and mask.tolist() == [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]]
    assert pad_batch([[5, 6, 7]], pad_id=1, length=2)[0].tolist() == [[5, 6, 7]]  # never cut


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "prompt", "first-last", "ditto", "mean+idf"])
@pytest.mark.parametrize("batch_size, batch_tokens", [(4, None), (16, 64)])
def test_cuda_graph_batches_give_the_plain_loop_s_vectors(tiny_bert, monkeypatch, pooling, batch_size, batch_tokens):
    """encode() with ``cuda_graphs`` on the CPU: the same fixed-shape batches (rows filled up, lengths rounded up
    to 8 tokens) without the capture, which needs a GPU; each pooling reads the padding the rounding adds."""
    from defsent_cli.encoder import cuda_graphs
    from defsent_cli.encoder import encode as encode_module
    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.pooling import build_pooling
    from defsent_cli.encoder.token_weights import IdfWeighting

    made = []

    class Recorded(cuda_graphs.GraphedEncoder):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.seen = []  # (texts, rows, length, shortest text) of each batch
            made.append(self)

        def __call__(self, id_lists):
            rows, length = self.shape(id_lists)
            self.seen.append((len(id_lists), rows, length, min(map(len, id_lists))))
            return super().__call__(id_lists)

    monkeypatch.setattr(encode_module, "GraphedEncoder", Recorded)
    name, _, weighted = pooling.partition("+")
    texts = [f"{s} {'and more ' * (i % 5)}" for i, s in enumerate(SENTS[:7] + SENTS[::3])]
    head = "1-2" if name == "ditto" else None  # the tiny model's 2 layers x 2 heads
    pool = build_pooling(name, ditto_head=head, weighting=IdfWeighting() if weighted else None)
    loaded = load_model(tiny_bert, "cpu")
    loaded.batch_tokens = batch_tokens
    ref = encode(texts, loaded, pool, batch_size=batch_size, show_progress_bar=False)
    assert not made
    loaded.cuda_graphs = True
    ours = encode(texts, loaded, pool, batch_size=batch_size, show_progress_bar=False)
    np.testing.assert_allclose(ours, ref, atol=1e-5)
    (graphed,) = made
    assert not graphed.capture and len(graphed.shapes) > 1
    assert all(length % 8 == 0 for _, length in graphed.shapes)
    assert any(texts < rows for texts, rows, _, _ in graphed.seen)  # a batch filled up with copies
    assert any(shortest < length for _, _, length, shortest in graphed.seen)  # a text padded up to its length


def test_cuda_graphs_need_a_cuda_gpu_and_the_torch_runtime(cli, tiny_bert, tiny_dict, sents, tmp_path):
    from defsent_cli.encoder.cuda_graphs import check_cuda_graphs

    for command in (["encode", "-i", sents], ["embed-entries", tiny_dict]):
        out = tmp_path / ("x.npy" if command[0] == "encode" else "x.h5")
        result = cli(*command, "-m", tiny_bert, "-o", out, "--device", "cpu", "--cuda-graphs")
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().splitlines() == [
            "error: --cuda-graphs needs a CUDA GPU, and the device here is cpu: leave it out"
        ]
        assert not out.exists()
    with pytest.raises(DefsentError, match="not --runtime onnx"):
        check_cuda_graphs("onnx", "cpu")


def test_graph_padding_counts_positions_hand_checked():
    """bench/gpu_runs/graph_padding.py: lengths 10, 3, 3, 3 at batch 2. The plain loop: [10] (closed where the
    length changes), [3, 3], [3]: 10 + 6 + 3 = 19 positions. Graphs: 10 rounds up to 16, a (2, 16) shape, and 3 to
    8, (2, 8), each single row filled up: 32 + 16 + 16 = 64."""
    import runpy

    script = Path(__file__).parent.parent / "bench" / "gpu_runs" / "graph_padding.py"
    positions = runpy.run_path(str(script))["positions"]
    assert positions([3, 3, 10, 3], 2, 256) == (19, 64)
    assert positions([3, 3, 10, 3], 2, 12) == (19, 2 * 12 + 16 + 16)  # 10 rounds to the model's limit, 12


def test_the_gpu_suite_plugin_logs_each_test_as_it_ends(tmp_path):
    """bench/gpu_runs/live_failures.py, as suite.sh uses it: every finished test is in done.log as it ends, each
    failure's report in failures.log, and collected.txt names every test, so a run cut off by the lent machine's
    time limit says what failed and what never ran."""
    (tmp_path / "test_toy.py").write_text(
        "import pytest\n"
        "def test_a(): pass\n"
        "def test_b(): assert 1 == 2, 'b is wrong'\n"
        "@pytest.fixture\n"
        "def broken(): raise RuntimeError('no fixture')\n"
        "def test_c(broken): pass\n"
        "@pytest.mark.skip(reason='not here')\n"
        "def test_d(): pass\n"
    )
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PYTHONPATH": str(Path(__file__).parent.parent)}
    env.pop("PYTEST_XDIST_WORKER", None)  # this test may itself run in an xdist worker
    plugin = ["-p", "no:cacheprovider", "-p", "bench.gpu_runs.live_failures"]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", *plugin, "test_toy.py"], cwd=tmp_path, env=env)
    assert run.returncode == 1
    assert (out / "collected.txt").read_text().split() == [f"test_toy.py::test_{n}" for n in "abcd"]
    done = [line.split(" ", 2) for line in (out / "done.log").read_text().splitlines()]
    assert [(outcome, nodeid) for outcome, _, nodeid in done] == [
        ("passed", "test_toy.py::test_a"),
        ("failed", "test_toy.py::test_b"),
        ("failed", "test_toy.py::test_c"),  # its setup failed: finished, as an error
        ("skipped", "test_toy.py::test_d"),
    ]
    failures = (out / "failures.log").read_text()
    assert failures.startswith("==== test_toy.py::test_b (call, ") and "b is wrong" in failures
    assert "==== test_toy.py::test_c (setup, " in failures and "no fixture" in failures
    assert "test_a" not in failures and "test_d" not in failures


# --- on a CUDA GPU ------------------------------------------------------------------------------------


@cuda
def test_gpu_encode_matches_the_cpu_within_float_noise(cli, tiny_bert, sents, tmp_path):
    cpu = _encode(cli, tiny_bert, sents, tmp_path / "c.npy", "--device", "cpu")
    gpu = _encode(cli, tiny_bert, sents, tmp_path / "g.npy", "--device", "cuda", "-b", "5")
    assert np.abs(_unit(gpu) - _unit(cpu)).max() < 1e-4
    half = _encode(cli, tiny_bert, sents, tmp_path / "h.npy", "--device", "cuda", "--precision", "fp16")
    assert np.abs(_unit(half) - _unit(cpu)).max() < 1e-2


@cuda
@pytest.mark.parametrize("precision, tolerance", [("fp32", 1e-4), ("fp16", 1e-2)])
def test_cuda_graphs_give_the_plain_gpu_loop_s_vectors(cli, tiny_bert, sents, tmp_path, precision, tolerance):
    """Every pooling's graph captured and replayed on the GPU, with a filled-up last batch and a token budget."""
    for pooling in (["mean"], ["cls"], ["max"], ["prompt"], ["ditto", "--ditto-head", "1-2"]):
        for extra in (["-b", "5"], ["-b", "16", "--batch-tokens", "64"]):
            args = ["--device", "cuda", "--precision", precision, "--pooling", *pooling, *extra]
            plain = _encode(cli, tiny_bert, sents, tmp_path / "p.npy", *args, "--force")
            result = cli("encode", "-m", tiny_bert, "-i", sents, "-o", tmp_path / "g.npy", *args, "--force",
                         "--cuda-graphs")  # fmt: skip
            assert result.exit_code == 0, (pooling, extra, result.output)
            assert "CUDA graphs" in result.stderr
            graphed = np.load(tmp_path / "g.npy")
            assert np.abs(_unit(graphed) - _unit(plain)).max() < tolerance, (pooling, extra)


@cuda
def test_gpu_training_defaults_to_bf16_where_the_card_has_it(cli, tiny_bert, train_data, tmp_path):
    dictionary, bank = train_data
    args = ["train", dictionary, "--bank", bank, "-m", tiny_bert, "-o", tmp_path / "g", "-b", "4", "--device", "cuda"]
    assert cli(*args).exit_code == 0
    info = json.loads((tmp_path / "g" / "defsent.json").read_text())
    assert info["precision"] == ("bf16" if torch.cuda.is_bf16_supported() else "fp32")


@pytest.mark.parametrize("template", [None, "defsent"])
def test_tokenising_on_threads_gives_the_ids_of_one_call(tiny_bert, monkeypatch, template):
    from defsent_cli.encoder import tokenize as tok
    from defsent_cli.encoder.models import load_tokenizer
    from defsent_cli.encoder.pooling import build_pooling

    tokenizer = load_tokenizer(tiny_bert)
    pooling = build_pooling("prompt" if template else "mean", None, template, None, None)
    texts = [f"{s} {i}" for i, s in enumerate(SENTS * 20)]
    one = tok.tokenize(texts, tokenizer, pooling, 24)
    monkeypatch.setattr(tok, "TOKENIZE_CHUNK", 7)  # 69 chunks on every core there is
    monkeypatch.setattr(tok.os, "cpu_count", lambda: 4)
    assert tok.tokenize(texts, tokenizer, pooling, 24) == one and len(one) == len(texts)


def test_deterministic_changes_nothing_on_the_cpu_and_leaves_torch_as_it_was(cli, tiny_bert, train_data, tmp_path):
    from safetensors.torch import load_file

    dictionary, bank = train_data
    plain = _train(cli, dictionary, bank, tiny_bert, tmp_path / "plain")
    strict = _train(cli, dictionary, bank, tiny_bert, tmp_path / "strict", "--deterministic")
    assert strict["config"]["deterministic"] and not plain["config"]["deterministic"]
    a, b = (
        load_file(str(tmp_path / "plain" / "model.safetensors")),
        load_file(str(tmp_path / "strict" / "model.safetensors")),
    )
    assert all(torch.equal(a[k], b[k]) for k in a)  # the CPU is deterministic as it is
    assert not torch.are_deterministic_algorithms_enabled()  # switched back after the run
    assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()


def test_tsdae_records_its_precision(cli, tiny_bert, tmp_path):
    pytest.importorskip("sentence_transformers")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SENTS) + "\n")
    result = cli("tsdae", corpus, "-m", tiny_bert, "-o", tmp_path / "t", "--max-steps", "2", "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "t" / "defsent.json").read_text())["precision"] == "fp32"


def test_a_diverging_run_stops_at_the_first_read_of_its_loss_and_leaves_nothing(cli, tiny_bert, train_data, tmp_path):
    """The loss is read only when a row is logged (or before a save): a non-finite loss still stops the run
    there, naming the steps, and nothing is written."""
    dictionary, bank = train_data
    out = tmp_path / "nan"
    args = ["train", dictionary, "--bank", bank, "-m", tiny_bert, "-o", out, "-b", "4", "--device", "cpu"]
    result = cli(*args, "--lr", "1e30", "--pooler", "linear", "--log-every", "3", "--save-every", "0")
    assert result.exit_code != 0
    assert "loss became nan between steps" in result.stderr and "lower --lr" in result.stderr
    assert not out.exists() and not (tmp_path / "nan.partial").exists()


def test_a_checkpoint_keeps_its_base_s_normalize_module(cli, tiny_st, tiny_bert, tmp_path):
    """Trained from a sentence-transformers folder ending in Normalize, the checkpoint ends in Normalize too:
    encode gives unit vectors by default, as for the base and as sentence-transformers loads it."""
    from sentence_transformers import SentenceTransformer

    rows = [{"entry": f"w{i}", "definitions": [f"a long-necked african animal {i}"]} for i in range(8)]
    dictionary = tmp_path / "d.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sents = tmp_path / "s.txt"
    sents.write_text("\n".join(SENTS) + "\n")
    for base, normalized in ((tiny_st, True), (tiny_bert, False)):
        bank, out = tmp_path / f"{base.name}.h5", tmp_path / f"{base.name}-ckpt"
        assert cli("embed-entries", dictionary, "-m", base, "-o", bank, "--device", "cpu").exit_code == 0
        train = cli("train", dictionary, "--bank", bank, "-m", base, "-o", out, "-b", "4", "--device", "cpu",
                    "--pooling", "mean", "--pooler", "none")  # fmt: skip
        assert train.exit_code == 0, train.output
        info = json.loads((out / "defsent.json").read_text())
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((out / "modules.json").read_text())]
        assert info["normalize"] is normalized and ("Normalize" in modules) is normalized
        vectors = _encode(cli, out, sents, tmp_path / f"{base.name}.npy", "--device", "cpu")
        norms = np.linalg.norm(vectors, axis=1)
        assert np.allclose(norms, 1, atol=1e-5) is normalized
        theirs = SentenceTransformer(str(out), device="cpu").encode(SENTS)
        np.testing.assert_allclose(vectors, theirs, atol=1e-5)
