"""`defsent train`, `lookup`, `eval-dict`: the loss math, data order, heads, determinism,
resume after a real kill, and the checkpoint loading in transformers and sentence-transformers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import KILLER, REPO, RESUME_FLAGS, run_warm

from defsent_cli.evaluation.reverse_dict import rank_metrics
from defsent_cli.training.config import TrainConfig
from defsent_cli.training.data import epoch_batches
from defsent_cli.training.loss import bank_cross_entropy
from defsent_cli.training.lr_schedule import linear_schedule


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
    bucket = {"batching": "bucket", "bucket_batches": 5}  # length buckets (the loop's neutral default is random)
    config = TrainConfig(batch_size=32, seed=3, **bucket)
    batches = epoch_batches(lengths, config, epoch=0)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(1000))
    again = epoch_batches(lengths, TrainConfig(batch_size=32, seed=3, **bucket), epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))
    other = epoch_batches(lengths, TrainConfig(batch_size=32, seed=4, **bucket), epoch=0)
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
    # the model card: written from defsent.json, names the data by hash and every setting
    card = (out / "README.md").read_text()
    from defsent_cli.io import sha256_file

    assert card.startswith("---\nlibrary_name: sentence-transformers")
    assert sha256_file(bert_bank) in card and sha256_file(tiny_dict) in card and f"`{tiny_bert.name}`" in card
    assert str(tiny_bert) not in card and str(tmp_path) not in card  # no local path in a card to publish
    assert (
        "| lr | 0.001 |" in card
        and "| adam_eps | 1e-06 |" in card
        and f"| final training loss | {info['final_loss']} |" in card
    )
    # docs/formats.md documents every key defsent.json holds (the contract stays true)
    formats = (REPO / "docs" / "formats.md").read_text()
    assert [key for key in info if f"`{key}`" not in formats] == []
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
    seed = ("--lr", "1e-3", *RESUME_FLAGS, "--seed")  # bit for bit on a GPU is promised under --deterministic
    a = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "a", *seed, "7")
    b = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "b", *seed, "7")
    c = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "c", *seed, "8")
    assert _same_weights(a, b)
    assert not _same_weights(a, c)


def test_resume_after_kill_gives_the_uninterrupted_weights(cli, tiny_bert, tmp_path):
    """Kill a real process (SIGKILL) mid-run, resume it, compare with a run never killed (the bank, an input of
    both, is built in this process)."""
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
    assert cli("embed-entries", dictionary, "-m", tiny_bert, "-o", bank).exit_code == 0
    args = ["train", dictionary, "--bank", bank, "-m", tiny_bert, "--batch-size", "4", "--lr", "1e-3"]
    args += ["--save-every", "2", "--log-every", "1", "--seed", "5", *RESUME_FLAGS]
    full = tmp_path / "full"
    run_warm([*defsent, *args, "-o", full], check=True, env=env)
    killed = tmp_path / "killed"
    run = run_warm([*KILLER, *args, "-o", killed], env={**env, "KILL_AFTER_STEP": "5"})
    assert run.returncode == -9  # SIGKILL: no chance to clean up
    assert not killed.exists() and (tmp_path / "killed.partial" / "state.safetensors").exists()
    again = run_warm([*defsent, *args, "-o", killed], env=env, capture_output=True, text=True)
    assert again.returncode == 2 and "--resume" in again.stderr  # a resumable state is never dropped silently
    resumed = run_warm([*defsent, *args, "-o", killed, "--resume"], env=env, capture_output=True, text=True)
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
    assert bad.exit_code == 2 and "'--head-lr': must be a finite number > 0, got 0.0" in bad.stderr


def test_train_rejects_a_bank_from_another_dictionary(cli, tiny_bert, tiny_dict, bert_bank, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(tiny_dict.read_text().replace("giraffe", "zebra"))
    result = cli("train", other, "--bank", bert_bank, "-m", tiny_bert, "-o", tmp_path / "x")
    assert result.exit_code == 2 and "another dictionary" in result.stderr
    (tmp_path / "exists").mkdir()
    exists = cli("train", tiny_dict, "--bank", bert_bank, "-m", tiny_bert, "-o", tmp_path / "exists")
    assert exists.exit_code == 2 and "--force" in exists.stderr
    holds = cli("train", tiny_dict, "--bank", bert_bank, "-m", tiny_bert, "-o", tiny_dict.parent, "--force")
    assert holds.exit_code == 2 and "holding the input" in holds.stderr


def _cls_states(folder: Path, texts: list[str], head: bool) -> np.ndarray:
    """CLS of the last layer, through the BERT pooler (dense + tanh, the training head) when ``head``,
    computed here with transformers alone."""
    from transformers import AutoModel, AutoTokenizer

    model, tokenizer = AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    with torch.inference_mode():
        cls = torch.stack([model(**tokenizer(t, return_tensors="pt")).last_hidden_state[0, 0] for t in texts])
        return (torch.tanh(model.pooler.dense(cls)) if head else cls).numpy()


def test_lookup_ranks_entries_by_the_training_logits(cli, tiny_bert, tiny_dict, bert_bank, tmp_path):
    out = _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / "ckpt")
    query = "an animal that barks"
    result = cli("lookup", "-m", out, "--bank", bert_bank, "--similarity", "dot", "--json", "-k", "3", query)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    from defsent_cli.formats.bank import read_bank

    bank = read_bank(bert_bank)
    scores = _cls_states(out, [query], head=True)[0] @ bank.vectors.T  # the training logits
    best = np.argsort(-scores)[:3]
    assert row["query"] == query
    assert [hit["entry"] for hit in row["results"]] == [bank.entries[i] for i in best]
    np.testing.assert_allclose([hit["score"] for hit in row["results"]], scores[best], atol=1e-3)
    many = cli("lookup", "-m", out, "--bank", bert_bank, "-k", "2", input="give new life\na pet\n")
    assert many.exit_code == 0 and many.stdout.count("\n") == 10  # per query: itself, 2 hits, each with its definition


def test_lookup_pools_queries_as_the_pooling_it_names_other_layers_included(cli, tiny_bert, tiny_dict, bert_bank):
    """``--pooling first-last`` reads the first and last layers (the head wrapped around the pooling once kept
    only its function, so the query was the last layer's mean, as ``--pooling mean``)."""
    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model
    from defsent_cli.formats.bank import read_bank

    bank, loaded, query = read_bank(bert_bank), load_model(tiny_bert, "cpu"), "an animal that barks"
    scores = {}
    for pooling in ("first-last", "mean"):
        result = cli(
            "lookup",
            "-m",
            tiny_bert,
            "--bank",
            bert_bank,
            "--similarity",
            "dot",
            "-p",
            pooling,
            "--json",
            "-k",
            "5",
            query,
        )
        assert result.exit_code == 0, result.output
        hits = json.loads(result.stdout)["results"]
        expected = encode([query], loaded, pooling, show_progress_bar=False)[0] @ bank.vectors.T
        scores[pooling] = [hit["score"] for hit in hits]
        np.testing.assert_allclose(scores[pooling], expected[[bank.entries.index(h["entry"]) for h in hits]], atol=1e-4)
    assert np.abs(np.array(scores["first-last"]) - np.array(scores["mean"])).max() > 1e-2  # the test can tell


def test_eval_dict_matches_ranks_computed_by_hand(cli, tiny_bert, tmp_path):
    """Six test definitions whose gold entries rank 1, 2, ..., 6 among twelve: MRR = (1 + 1/2 + ... + 1/6) / 6."""
    from defsent_cli.formats.bank import BANK_FORMAT, Bank, write_bank
    from defsent_cli.io import sha256_file

    words = ["dog", "cat", "fish", "joy", "giraffe", "tree", "river", "stone", "light", "rain", "park", "chess"]
    rows = [
        {"entry": w, "definitions": [f"a {w} near the {words[(i + 5) % 12]}"], "split": "test" if i < 6 else "train"}
        for i, w in enumerate(words)
    ]
    dictionary = tmp_path / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # Target scores T (6 queries x 12 rows): gold (row i) 1, decoy rows 6..6+i-1 score 2 for query i, all else 0,
    # so query i's gold entry ranks i + 1. Bank rows B solve Q B^T = T (Q: the model's CLS states, no head).
    target = np.zeros((6, 12))
    target[np.arange(6), np.arange(6)] = 1.0
    for i in range(6):
        target[i, 6 : 6 + i] = 2.0
    queries = _cls_states(tiny_bert, [r["definitions"][0] for r in rows[:6]], head=False).astype(np.float64)
    vectors = (np.linalg.pinv(queries) @ target).T.astype(np.float32)
    attrs = {"format": BANK_FORMAT, "kind": "AC", "pooling": "cls", "splits": "train,dev,test", "transform": "none"}
    attrs["dictionary_sha256"] = sha256_file(dictionary)
    bank_path = tmp_path / "bank.h5"
    write_bank(bank_path, Bank(words, vectors, np.ones(12, dtype=np.int32), attrs))
    report = tmp_path / "dict-test.json"
    result = cli("eval-dict", dictionary, "-m", tiny_bert, "--bank", bank_path, "--split", "test", "-o", report)
    assert result.exit_code == 0, result.output
    metrics = json.loads(report.read_text())
    assert metrics["n"] == 6 and metrics["bank_entries"] == 12 and metrics["pooling"] == "cls"
    assert metrics["mrr"] == pytest.approx(sum(1 / r for r in range(1, 7)) / 6)
    assert (metrics["top1"], metrics["top3"], metrics["top10"]) == pytest.approx((1 / 6, 3 / 6, 1.0))
    assert metrics["median_rank"] == 3.5


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


def test_select_best_picks_the_higher_score_and_links_it(cli, tiny_bert, tmp_path):
    words = "red blue small large animal tree river stone light dark old new fast slow warm cold".split()
    rng = np.random.default_rng(0)
    rows = [
        {"entry": f"w{i}", "definitions": [" ".join(rng.choice(words, 4)) for _ in range(2)], "split": "dev" if i % 3 == 0 else "train"}
        for i in range(24)
    ]  # fmt: skip
    tiny_dict = tmp_path / "dict.jsonl"
    tiny_dict.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bert_bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bert_bank).exit_code == 0
    # on the CPU whatever the machine has: the three seeds must differ on this 5-pair dev set, checked on the
    # CPU's runs (a GPU trains other models: bf16, its own dropout stream)
    on_cpu = ("--lr", "3e-3", "--device", "cpu")
    seeds = [
        _train(cli, tiny_dict, bert_bank, tiny_bert, tmp_path / f"seed-{s}", "--seed", str(s), *on_cpu)
        for s in (1, 2, 3)
    ]
    # dict-dev, scored independently: eval-dict's MRR on the dev split, x100
    expected = {}
    for seed in seeds:
        report = tmp_path / f"{seed.name}-dev.json"
        assert (
            cli("eval-dict", tiny_dict, "-m", seed, "--bank", bert_bank, "--split", "dev", "-o", report).exit_code == 0
        )
        expected[str(seed)] = 100 * json.loads(report.read_text())["mrr"]
    ranking = tmp_path / "ranking.json"
    result = cli("select-best", *seeds, "--by", "dict-dev", "-o", ranking, "--link", tmp_path / "best")
    assert result.exit_code == 0, result.output
    data = json.loads(ranking.read_text())
    assert len(set(expected.values())) > 1  # the seeds differ, so the choice means something
    assert {row["path"]: row["score"] for row in data["ranking"]} == pytest.approx(expected, abs=1e-3)
    assert [row["score"] for row in data["ranking"]] == pytest.approx(sorted(expected.values(), reverse=True), abs=1e-3)
    winner = Path(result.stdout.strip())
    assert expected[str(winner)] == max(expected.values()) and data["best"] == str(winner)
    assert [row["rank"] for row in data["ranking"]] == [1, 2, 3]
    assert [row["seed"] for row in data["ranking"]] == [int(Path(r["path"]).name[5:]) for r in data["ranking"]]
    assert (tmp_path / "best").is_symlink() and (tmp_path / "best").resolve() == winner.resolve()

    # stsb-dev: each checkpoint's STS-B dev Spearman, computed by the library, decides
    from defsent_cli.encoder.models import load_model
    from defsent_cli.evaluation.sts import evaluate_sts

    root = _mini_stsb(tmp_path / "data")
    dev = {str(p): evaluate_sts(load_model(p, "cpu"), root, ["STS-B"], "dev")["average"]["spearman"] for p in seeds}
    assert len(set(dev.values())) > 1  # the seeds differ, so the choice means something
    result = cli(
        "select-best", *seeds, "--by", "stsb-dev", "--data", root, "--link", tmp_path / "best", "--copy", "--force",
        "--device", "cpu",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert dev[result.stdout.strip()] == max(dev.values())
    assert (tmp_path / "best" / "defsent.json").is_file() and not (tmp_path / "best").is_symlink()

    missing = cli("select-best", *seeds, "--by", "stsb-dev", "--data", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "DEFSENT_DATA" in missing.stderr
    bad = cli("select-best", *seeds, "--by", "coin-flip")
    assert bad.exit_code == 2 and "stsb-dev" in bad.stderr
    nowhere = cli("select-best", *seeds, "--by", "dict-dev", "--link", tmp_path / "no" / "best")
    assert nowhere.exit_code == 2 and "does not exist" in nowhere.stderr  # refused before any scoring
    assert "reverse-dictionary MRR" not in nowhere.stderr
