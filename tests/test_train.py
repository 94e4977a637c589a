"""`defsent train`, `lookup`, `eval-dict`: the loss math, data order, heads, determinism,
resume after a real kill, and the checkpoint loading in transformers and sentence-transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from defsent_cli.loss import bank_cross_entropy
from defsent_cli.reverse_dict import rank_metrics
from defsent_cli.training import TrainConfig, epoch_batches, linear_schedule


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _same_weights(a: Path, b: Path) -> bool:
    wa, wb = _weights(a), _weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


# --- the math -------------------------------------------------------------------------------------


def test_bank_cross_entropy_hand_computed():
    reps = torch.tensor([[1.0, 0.0], [0.0, 2.0]], requires_grad=True)
    bank = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    labels = torch.tensor([0, 2])
    # logits row 0: [1, 0, 1]; row 1: [0, 2, 2]
    expected = ((np.log(np.e + 1 + np.e) - 1) + (np.log(1 + 2 * np.e**2) - 2)) / 2
    loss = bank_cross_entropy(reps, bank, labels)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    loss.backward()
    # d/d reps = (softmax - onehot) @ bank / B
    p0 = np.array([np.e, 1, np.e]) / (2 * np.e + 1)
    p1 = np.array([1, np.e**2, np.e**2]) / (1 + 2 * np.e**2)
    g0 = (p0 - [1, 0, 0]) @ bank.numpy() / 2
    g1 = (p1 - [0, 0, 1]) @ bank.numpy() / 2
    assert np.allclose(reps.grad.numpy(), np.stack([g0, g1]), atol=1e-6)


def test_bank_cross_entropy_matches_torch():
    torch.manual_seed(0)
    reps = torch.randn(7, 16, requires_grad=True)
    bank = torch.randn(300, 16)
    labels = torch.randint(0, 300, (7,))
    ours = bank_cross_entropy(reps, bank, labels)
    ours.backward()
    grad = reps.grad.clone()
    reps.grad = None
    ref = torch.nn.functional.cross_entropy(reps @ bank.T, labels)
    ref.backward()
    assert ours.item() == pytest.approx(ref.item(), rel=1e-6)
    assert torch.allclose(grad, reps.grad, atol=1e-6)


def test_epoch_batches_cover_everything_once_and_depend_only_on_seed():
    lengths = np.random.default_rng(0).integers(3, 60, size=1000)
    config = TrainConfig(batch_size=32, seed=3, bucket_batches=5)
    batches = epoch_batches(lengths, config, epoch=0)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(1000))
    again = epoch_batches(lengths, TrainConfig(batch_size=32, seed=3, bucket_batches=5), epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))
    other = epoch_batches(lengths, TrainConfig(batch_size=32, seed=4, bucket_batches=5), epoch=0)
    assert not all(np.array_equal(a, b) for a, b in zip(batches, other, strict=True))
    # bucketing keeps padding small compared with random batches
    padded = sum(len(b) * lengths[b].max() for b in batches)
    random_batches = epoch_batches(lengths, TrainConfig(batch_size=32, seed=3, batching="random"), epoch=0)
    padded_random = sum(len(b) * lengths[b].max() for b in random_batches)
    assert padded < 0.8 * padded_random


def test_linear_schedule_warmup_then_decay_to_zero():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([param], lr=1.0)
    sched = linear_schedule(opt, warmup=2, total=6)
    rates = []
    for _ in range(6):
        rates.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    assert rates == pytest.approx([0.0, 0.5, 1.0, 0.75, 0.5, 0.25])


def test_rank_metrics_hand_computed():
    metrics = rank_metrics(np.array([1, 2, 4, 20]))
    assert metrics["mrr"] == pytest.approx((1 + 0.5 + 0.25 + 0.05) / 4)
    assert metrics["top1"] == 0.25 and metrics["top3"] == 0.5 and metrics["top10"] == 0.75


# --- the CLI on tiny models ----------------------------------------------------------------------


@pytest.fixture
def bert_bank(cli, tiny_bert, tiny_dict, tmp_path) -> Path:
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank).exit_code == 0
    return bank


def _train(cli, tiny_dict, bank, model, out, *extra):
    result = cli("train", tiny_dict, "--bank", bank, "-m", model, "-o", out, "--batch-size", "2", *extra)
    assert result.exit_code == 0, result.output
    return out


def test_train_writes_a_checkpoint_that_transformers_and_sentence_transformers_load(
    cli, tiny_bert, tiny_dict, bert_bank, tmp_path
):
    out = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "ckpt", "--log-every", "1", "--lr", "1e-3")
    info = json.loads((out / "defsent.json").read_text())
    assert info["steps"] == 2 and info["training_definitions"] == 4 and info["bank_entries"] == 5
    assert info["head"] == "dense+tanh" and info["config"]["adam_eps"] == 1e-6
    assert [row[0] for row in info["loss_curve"]] == [1, 2]
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in log] == [1, 2] and all(np.isfinite(row["loss"]) for row in log)
    assert not (tmp_path / "ckpt.partial").exists()
    # the weights changed
    from transformers import AutoModel

    before = AutoModel.from_pretrained(tiny_bert)
    after = AutoModel.from_pretrained(out)
    assert not torch.equal(
        before.encoder.layer[0].attention.self.query.weight, after.encoder.layer[0].attention.self.query.weight
    )
    # sentence-transformers loads it with the inference pooling (cls), the same vectors as defsent encode
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(out), device="cpu")
    st_vecs = st.encode(["a feeling of great happiness"], convert_to_numpy=True)
    text = tmp_path / "one.txt"
    text.write_text("a feeling of great happiness\n")
    vec_file = tmp_path / "v.npy"
    assert cli("encode", "-m", out, "-i", text, "-o", vec_file).exit_code == 0
    assert np.allclose(np.load(vec_file), st_vecs, atol=1e-5)


def test_same_seed_same_weights_other_seed_differs(cli, tiny_bert, tiny_dict, bert_bank, tmp_path):
    a = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "a", "--seed", "7", "--lr", "1e-3")
    b = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "b", "--seed", "7", "--lr", "1e-3")
    c = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "c", "--seed", "8", "--lr", "1e-3")
    assert _same_weights(a, b)
    assert not _same_weights(a, c)


def test_resume_after_kill_gives_the_uninterrupted_weights(tiny_bert, tmp_path):
    """Kill a real process (SIGKILL) mid-run, resume it, compare with a run never killed."""
    import shutil

    rows = [
        {"entry": f"w{i}", "definitions": [f"a long-necked african animal {i % 3}", "give new life or vigor to"]}
        for i in range(12)
    ]
    dictionary = tmp_path / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    defsent = [sys.executable, "-m", "defsent_cli"]
    env = {**os.environ, "DEFSENT_NO_PROGRESS": "1"}
    bank = tmp_path / "bank.h5"
    subprocess.run([*defsent, "embed-entries", dictionary, "-m", tiny_bert, "-o", bank], check=True, env=env)
    args = ["train", dictionary, "--bank", bank, "-m", tiny_bert, "--batch-size", "4", "--lr", "1e-3"]
    args += ["--save-every", "2", "--log-every", "1", "--seed", "5"]
    full = tmp_path / "full"
    subprocess.run([*defsent, *args, "-o", full], check=True, env=env)
    killed = tmp_path / "killed"
    run = subprocess.run([*defsent, *args, "-o", killed], env={**env, "DEFSENT_TEST_KILL_AT_STEP": "5"})
    assert run.returncode == -9  # SIGKILL: no chance to clean up
    assert not killed.exists() and (tmp_path / "killed.partial" / "state.pt").exists()
    resumed = subprocess.run([*defsent, *args, "-o", killed, "--resume"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from step 4" in resumed.stderr
    assert _same_weights(full, killed)
    full_log = (full / "train_log.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in (killed / "train_log.jsonl").read_text().splitlines()] == [
        json.loads(x)["step"] for x in full_log
    ]
    shutil.rmtree(tmp_path / "full")


def test_roberta_gets_the_mlm_dense_head_and_mean_pooling(cli, tiny_roberta, tiny_dict, tmp_path):
    from transformers import AutoModelForMaskedLM

    bank = tmp_path / "rbank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_roberta, "--kind", "AC", "-o", bank).exit_code == 0
    out = _train(cli, tiny_dict, bank, tiny_roberta, tmp_path / "r", "--pooling", "mean", "--lr", "1e-9")
    info = json.loads((out / "defsent.json").read_text())
    assert info["head"] == "dense+gelu" and info["train_pooling"] == "mean"
    # with a negligible learning rate the pooler dense is (nearly) the MLM head dense
    mlm = AutoModelForMaskedLM.from_pretrained(tiny_roberta)
    dense = _weights(out)["pooler.dense.weight"]
    assert torch.allclose(dense, mlm.lm_head.dense.weight, atol=1e-6)


def test_pooler_none_and_missing_pooler_error(cli, tiny_roberta, tiny_dict, tmp_path):
    bank = tmp_path / "rbank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_roberta, "-o", bank).exit_code == 0
    out = _train(cli, tiny_dict, bank, tiny_roberta, tmp_path / "n", "--pooler", "none")
    assert json.loads((out / "defsent.json").read_text())["head"] == "none"
    # the RoBERTa MLM checkpoint has no pooler weights: keeping them would train a random init
    bad = cli("train", tiny_dict, "--bank", bank, "-m", tiny_roberta, "-o", tmp_path / "k", "--pooler", "keep")
    assert bad.exit_code == 2 and "no pooler weights" in bad.stderr
    assert "Traceback" not in bad.output


def test_linear_head_starts_at_the_identity_and_trains_at_its_own_rate(cli, tiny_bert, tiny_dict, bert_bank, tmp_path):
    from transformers import AutoModel

    out = _train(
        cli,
        tiny_dict,
        bert_bank,
        tiny_bert,
        tmp_path / "lin",
        "--pooler",
        "linear",
        "--lr",
        "1e-9",
        "--head-lr",
        "1e-3",
    )
    info = json.loads((out / "defsent.json").read_text())
    assert info["head"] == "dense+identity" and info["config"]["head_lr"] == 1e-3
    weights, base = _weights(out), AutoModel.from_pretrained(tiny_bert).state_dict()
    dense = weights["pooler.dense.weight"]
    moved = (dense - torch.eye(*dense.shape)).abs().max().item()
    # a few AdamW steps of ~1e-3 each moved the head off the identity; the encoder (lr 1e-9) stayed put
    assert 1e-4 < moved < 2e-2
    assert weights["pooler.dense.bias"].abs().max().item() < 2e-2
    key = "embeddings.word_embeddings.weight"
    assert torch.allclose(weights[key], base[key], atol=1e-6)
    # lookup rebuilds the identity-activation head from defsent.json
    result = cli("lookup", "-m", out, "--bank", bert_bank, "--json", "-k", "2", "a pet")
    assert result.exit_code == 0, result.output
    bad = cli("train", tiny_dict, "--bank", bert_bank, "-m", tiny_bert, "-o", tmp_path / "x", "--head-lr", "0")
    assert bad.exit_code == 2 and "--head-lr must be positive" in bad.stderr


def test_train_rejects_a_bank_from_another_dictionary(cli, tiny_bert, tiny_dict, bert_bank, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(tiny_dict.read_text().replace("giraffe", "zebra"))
    result = cli("train", other, "--bank", bert_bank, "-m", tiny_bert, "-o", tmp_path / "x")
    assert result.exit_code == 2 and "another dictionary" in result.stderr
    exists = cli("train", tiny_dict, "--bank", bert_bank, "-m", tiny_bert, "-o", tmp_path)
    assert exists.exit_code == 2 and "--force" in exists.stderr


def test_lookup_and_eval_dict(cli, tiny_bert, tiny_dict, bert_bank, tmp_path):
    out = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "ckpt")
    result = cli("lookup", "-m", out, "--bank", bert_bank, "--json", "-k", "3", "an animal that barks")
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert row["query"] == "an animal that barks" and len(row["results"]) == 3
    assert {hit["entry"] for hit in row["results"]} <= {"giraffe", "revitalize", "dog", "joy", "fish"}
    many = cli("lookup", "-m", out, "--bank", bert_bank, "-k", "2", input="give new life\na pet\n")
    assert many.exit_code == 0 and many.stdout.count("\n") == 6
    report = tmp_path / "dict-test.json"
    result = cli("eval-dict", tiny_dict, "-m", out, "--bank", bert_bank, "--split", "test", "-o", report)
    assert result.exit_code == 0, result.output
    metrics = json.loads(report.read_text())
    assert metrics["n"] == 1 and metrics["bank_entries"] == 5 and 0.2 <= metrics["mrr"] <= 1.0
    assert metrics["top10"] == 1.0  # five candidates only


# --- select-best ----------------------------------------------------------------------------------


def _mini_stsb(root: Path) -> Path:
    folder = root / "downstream" / "STS" / "STSBenchmark"
    folder.mkdir(parents=True)
    pairs = [
        ("a dog", "an animal that barks", 4.0),
        ("a feeling of great happiness", "joy", 3.5),
        ("two men are playing guitar on the street", "a woman is slicing an onion in the kitchen", 0.2),
        ("give new life or vigor to", "revitalize", 4.5),
        ("a long-necked african animal", "a fish", 1.0),
    ]
    rows = [f"main-news\tfile\t2016\t{i}\t{score}\t{a}\t{b}\n" for i, (a, b, score) in enumerate(pairs)]
    (folder / "sts-dev.csv").write_text("".join(rows))
    return root


def test_select_best_by_dict_dev_and_stsb_dev_with_link(cli, tiny_bert, tiny_dict, bert_bank, tmp_path):
    seeds = [
        _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / f"seed-{s}", "--seed", str(s), "--lr", "1e-3")
        for s in (1, 2)
    ]
    ranking = tmp_path / "ranking.json"
    result = cli("select-best", *seeds, "--by", "dict-dev", "-o", ranking, "--link", tmp_path / "best")
    assert result.exit_code == 0, result.output
    winner = Path(result.stdout.strip())
    assert winner in seeds
    data = json.loads(ranking.read_text())
    assert data["criterion"] == "dict-dev" and [row["rank"] for row in data["ranking"]] == [1, 2]
    assert data["ranking"][0]["score"] >= data["ranking"][1]["score"] and data["best"] == str(winner)
    assert (tmp_path / "best").is_symlink() and (tmp_path / "best").resolve() == winner.resolve()

    root = _mini_stsb(tmp_path / "data")
    result = cli(
        "select-best", *seeds, "--by", "stsb-dev", "--data", root, "--link", tmp_path / "best", "--copy", "--force"
    )
    assert result.exit_code == 0, result.output
    assert Path(result.stdout.strip()) in seeds
    assert (tmp_path / "best" / "defsent.json").is_file() and not (tmp_path / "best").is_symlink()

    missing = cli("select-best", *seeds, "--by", "stsb-dev", "--data", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "DEFSENT_DATA" in missing.stderr
    bad = cli("select-best", *seeds, "--by", "coin-flip")
    assert bad.exit_code == 2 and "stsb-dev" in bad.stderr
