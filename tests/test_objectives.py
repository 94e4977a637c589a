"""The other objectives (issue 19): DefSent's word prediction (`train --objective defsent`), the auxiliary
MLM loss (`train --mlm-weight`) and TSDAE (`defsent tsdae`), on tiny random BERT and RoBERTa models."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import KILLER, RESUME_FLAGS, run_warm

from defsent_cli.dictionary.build import single_token_ids
from defsent_cli.encoder.models import load_model
from defsent_cli.encoder.word_head import load_word_head, read_word_head
from defsent_cli.training.lr_schedule import linear_factor
from defsent_cli.training.mlm import MaskedLM
from defsent_cli.training.sentences import delete_words


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _base_weights(folder: Path) -> dict[str, torch.Tensor]:
    """The encoder weights of a saved pre-training model, keyed as an AutoModel's."""
    weights = _weights(folder)
    return {k.split(".", 1)[1]: v for k, v in weights.items() if k.startswith(("bert.", "roberta."))}


def _word_dict(path: Path, tokenizer_folder: Path, n: int = 6) -> Path:
    """A dictionary of ``n`` train entries that are single tokens for the folder's tokenizer, one that is not,
    and a test split."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    words = ["animal", "dog", "fish", "giraffe", "joy", "cat", "pet", "water", "mammal", "life", "feeling", "great"]
    vocab = sorted({tokenizer.convert_tokens_to_string([t]).strip() for t in tokenizer.get_vocab()})
    words += [w for w in vocab if w.isalpha() and len(w) >= 3 and w not in words]
    single = [w for w, t in zip(words, single_token_ids(words, tokenizer), strict=True) if t is not None]
    assert len(single) >= n + 1, single
    rows = [
        {"entry": w, "definitions": [f"this sentence means {w}", f"a {w} kept as a pet"], "split": "train"}
        for w in single[:n]
    ]
    rows.append({"entry": "revitalize", "definitions": ["give new life or vigor to"], "split": "train"})
    rows.append({"entry": single[n], "definitions": [f"this sentence means {single[n]}"], "split": "test"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _info(folder: Path) -> dict:
    return json.loads((folder / "defsent.json").read_text())


# --- the frozen word head is exactly the model's MLM head ----------------------------------------------------


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_word_head_logits_equal_the_mlm_heads(family, tiny_bert, tiny_roberta):
    from transformers import AutoModelForMaskedLM

    folder = tiny_bert if family == "bert" else tiny_roberta
    mlm = AutoModelForMaskedLM.from_pretrained(folder).eval()
    head = load_word_head(load_model(folder, "cpu"), "mlm")
    u = torch.randn(5, mlm.config.hidden_size)
    reference = (mlm.cls if family == "bert" else mlm.lm_head)(u)
    assert torch.allclose(head.logits(u), reference, atol=1e-5)
    assert not any(p.requires_grad for p in head.transform.parameters())
    embeddings = load_word_head(load_model(folder, "cpu"), "embeddings")
    assert torch.allclose(embeddings.logits(u), u @ mlm.get_input_embeddings().weight.T, atol=1e-5)


def test_a_model_without_mlm_head_says_to_use_the_embeddings_head(cli, tiny_bert, tmp_path):
    from transformers import AutoModel

    plain = tmp_path / "plain"
    AutoModel.from_pretrained(tiny_bert).save_pretrained(plain)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        if (tiny_bert / name).exists():
            shutil.copy(tiny_bert / name, plain / name)
    dictionary = _word_dict(tmp_path / "d.jsonl", tiny_bert)
    result = cli("train", dictionary, "--objective", "defsent", "-m", plain, "-o", tmp_path / "o")
    assert result.exit_code == 2
    assert "no trained masked-LM head" in result.stderr and "--word-head embeddings" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    ok = cli(
        "train", dictionary, "--objective", "defsent", "--word-head", "embeddings", "-m", plain, "-o", tmp_path / "o"
    )
    assert ok.exit_code == 0, ok.stderr


# --- objective defsent --------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_defsent_objective_learns_with_the_frozen_parts_frozen(family, cli, tiny_bert, tiny_roberta, tmp_path):
    folder = tiny_bert if family == "bert" else tiny_roberta
    dictionary = _word_dict(tmp_path / "d.jsonl", folder)
    out = tmp_path / "out"
    args = ["train", dictionary, "--objective", "defsent", "-m", folder, "--lr", "3e-3", "--epochs", "15"]
    result = cli(*args, "--batch-size", "4", "--log-every", "1", "--seed", "3", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "1 of 7 train entries are not a single token" in result.stderr  # revitalize
    info = _info(out)
    assert info["objective"] == "defsent" and info["word_head"] == "mlm" and info["multi_token_entries_skipped"] == 1
    assert info["training_definitions"] == 12 and info["training_entries"] == 6
    config = info["config"]
    assert config["schedule"] == "constant" and config["warmup_ratio"] == 0.1 and config["batch_size"] == 4
    assert config["max_grad_norm"] == 0.0 and config["adam_eps"] == 1e-8 and config["lr"] == 3e-3  # DefSent's
    losses = [loss for _, loss in info["loss_curve"]]
    # the frozen random head of a tiny model bounds the logits (LayerNorm output . E rows of norm ~0.1): the loss
    # can only fall so far, but it falls
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.15
    before, after = _base_weights(folder), _weights(out)
    frozen = [k for k in after if k.startswith("embeddings.")]
    trained = [k for k in after if k.startswith("encoder.")]
    assert frozen and all(torch.equal(before[k], after[k]) for k in frozen)  # DefSent freezes the embeddings
    assert any(not torch.equal(before[k], after[k]) for k in trained)
    from safetensors.torch import load_file
    from transformers import AutoModelForMaskedLM

    stored = load_file(str(out / "word_head.safetensors"))
    decoder = AutoModelForMaskedLM.from_pretrained(folder).get_output_embeddings()
    pretrained = torch.cat([decoder.weight, decoder.bias.unsqueeze(1)], dim=1)
    assert torch.equal(stored["matrix"], pretrained)  # the stored head is the pretrained decoder [E | b]


def test_stored_word_head_reads_back_as_the_pretrained_head(cli, tiny_bert, tmp_path):
    from transformers import AutoModel, AutoModelForMaskedLM

    dictionary = _word_dict(tmp_path / "d.jsonl", tiny_bert)
    out = tmp_path / "out"
    result = cli("train", dictionary, "--objective", "defsent", "-m", tiny_bert, "--max-steps", "1", "-o", out)
    assert result.exit_code == 0, result.stderr
    model = AutoModel.from_pretrained(out)
    rng = torch.get_rng_state()
    head = read_word_head(out, model)
    assert torch.equal(torch.get_rng_state(), rng)  # the transform is rebuilt without drawing random weights
    pooled = torch.randn(5, model.config.hidden_size)
    mlm = AutoModelForMaskedLM.from_pretrained(tiny_bert).eval()
    with torch.no_grad():
        assert torch.allclose(head.logits(pooled), mlm.cls(pooled), atol=1e-5)  # frozen: still the pretrained head
    (out / "word_head.safetensors").write_bytes(b"not safetensors")
    result = cli("eval-dict", dictionary, "-m", out, "--split", "train", "-o", tmp_path / "r.json")
    assert result.exit_code == 2 and "cannot read the checkpoint's word head" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "r.json").exists()


def test_defsent_objective_and_build_dict_single_token_agree(cli, tiny_bert, tmp_path):
    dictionary = _word_dict(tmp_path / "d.jsonl", tiny_bert)
    kept = tmp_path / "kept.jsonl"
    assert cli("build-dict", dictionary, "--single-token", tiny_bert, "-o", kept).exit_code == 0
    out = tmp_path / "o"
    result = cli("train", dictionary, "--objective", "defsent", "-m", tiny_bert, "--max-steps", "1", "-o", out)
    assert result.exit_code == 0, result.stderr
    train_entries = [json.loads(line) for line in kept.read_text().splitlines()]
    assert _info(out)["training_entries"] == sum(1 for e in train_entries if e["split"] == "train")


def test_defsent_objective_refuses_defsent_plus_options(cli, tiny_bert, tiny_dict, tmp_path):
    for extra, said in ((["--pooler", "none"], "--pooler"), (["--bank", tiny_dict], "uses no --bank")):
        result = cli("train", tiny_dict, "--objective", "defsent", "-m", tiny_bert, *extra, "-o", tmp_path / "o")
        assert result.exit_code == 2 and said in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_eval_dict_over_the_vocabulary_matches_hand_computed_ranks(cli, tiny_bert, tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    dictionary = _word_dict(tmp_path / "d.jsonl", tiny_bert)
    out = tmp_path / "words.json"
    result = cli("eval-dict", dictionary, "-m", tiny_bert, "--word-head", "mlm", "--split", "train", "-o", out)
    assert result.exit_code == 0, result.stderr
    got = json.loads(out.read_text())
    # by hand: CLS of the last layer through BertForMaskedLM's own head, rank of the entry's token
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    mlm = AutoModelForMaskedLM.from_pretrained(tiny_bert).eval()
    ranks = []
    for row in map(json.loads, dictionary.read_text().splitlines()):
        token = tokenizer.convert_tokens_to_ids(row["entry"])
        if row["split"] != "train" or row["entry"] == "revitalize":
            continue
        for text in row["definitions"]:
            batch = tokenizer(text, return_tensors="pt")
            with torch.no_grad():
                logits = mlm(**batch, output_hidden_states=True).hidden_states[-1][0, 0]
                logits = mlm.cls(logits)
            ranks.append(1 + int((logits > logits[token]).sum()))
    ranks = np.asarray(ranks, dtype=float)
    assert got["n"] == len(ranks) == 12 and got["candidates"] == "vocabulary"
    assert got["mrr"] == pytest.approx(np.mean(1 / ranks), abs=1e-6)
    assert got["top10"] == pytest.approx(np.mean(ranks <= 10))
    assert got["mrr10"] == pytest.approx(np.mean(np.where(ranks <= 10, 1 / ranks, 0)), abs=1e-6)  # DefSent's
    assert got["multi_token_entries_skipped"] == 1


def test_a_defsent_checkpoint_looks_up_words_without_a_bank(cli, tiny_bert, tmp_path):
    dictionary = _word_dict(tmp_path / "d.jsonl", tiny_bert)
    out = tmp_path / "o"
    args = ["train", dictionary, "--objective", "defsent", "-m", tiny_bert, "--lr", "3e-3", "--epochs", "30"]
    assert cli(*args, "--batch-size", "4", "-o", out).exit_code == 0
    result = cli("lookup", "-m", out, "--json", "-k", "3", "this sentence means dog")
    assert result.exit_code == 0, result.stderr
    hits = json.loads(result.stdout)["results"]
    trained = {json.loads(line)["entry"] for line in dictionary.read_text().splitlines()[:6]}
    assert {hit["entry"] for hit in hits} <= trained  # it learned the toy dictionary's words out of 158 tokens
    plain = cli("lookup", "-m", tiny_bert, "this sentence means dog")
    assert plain.exit_code == 2 and "--word-head" in plain.stderr


# --- the auxiliary MLM loss ---------------------------------------------------------------------------------


def test_masking_follows_berts_scheme_and_never_touches_special_tokens(tiny_bert):
    loaded = load_model(tiny_bert, "cpu")
    tokenizer = loaded.tokenizer
    masker = MaskedLM(tokenizer, load_word_head(loaded, "mlm"), probability=0.15)
    torch.manual_seed(0)
    ids = torch.randint(10, len(tokenizer), (64, 40))
    ids[:, 0], ids[:, 30] = tokenizer.cls_token_id, tokenizer.sep_token_id
    mask = torch.ones_like(ids)
    mask[:, 31:], ids[:, 31:] = 0, tokenizer.pad_token_id
    masked, labels = masker.mask(ids, mask)
    chosen = labels != -100
    assert not chosen[:, 0].any() and not chosen[:, 30:].any()  # CLS, SEP and padding never chosen
    assert torch.equal(labels[chosen], ids[chosen]) and torch.equal(masked[~chosen], ids[~chosen])
    share = chosen[:, 1:30].float().mean().item()
    assert 0.12 < share < 0.18
    to_mask = (masked[chosen] == tokenizer.mask_token_id).float().mean().item()
    assert 0.74 < to_mask < 0.86  # 80% become [MASK]


def test_mlm_loss_is_the_cross_entropy_of_the_masked_tokens(tiny_bert):
    from transformers import AutoModelForMaskedLM

    loaded = load_model(tiny_bert, "cpu")
    masker = MaskedLM(loaded.tokenizer, load_word_head(loaded, "mlm"))
    states = torch.randn(2, 4, 32)
    labels = torch.tensor([[-100, 7, -100, -100], [-100, -100, 12, 3]])
    mlm = AutoModelForMaskedLM.from_pretrained(tiny_bert).eval()
    logits = mlm.cls(states)
    expected = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))
    assert masker.loss(states, masker.targets(labels, "cpu")).item() == pytest.approx(expected.item(), rel=1e-5)
    none = masker.targets(torch.full((2, 4), -100), "cpu")
    assert none is None and masker.loss(states, none).item() == 0.0  # nothing masked: no MLM loss


def test_max_pooling_and_trained_embeddings(cli, tiny_bert, tmp_path):
    dictionary = _word_dict(tmp_path / "d.jsonl", tiny_bert)
    out = tmp_path / "o"
    args = ["train", dictionary, "--objective", "defsent", "-m", tiny_bert, "--pooling", "max", "--train-embeddings"]
    assert cli(*args, "--lr", "1e-3", "--max-steps", "2", "-o", out).exit_code == 0
    info = _info(out)
    assert info["train_pooling"] == "max"
    assert info["config"]["freeze_embeddings"] is False
    before, after = _base_weights(tiny_bert), _weights(out)
    assert not torch.equal(before["embeddings.word_embeddings.weight"], after["embeddings.word_embeddings.weight"])


def test_no_mlm_pass_during_a_head_warmup(cli, tiny_bert, tiny_dict, tmp_path):
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank).exit_code == 0
    args = ["train", tiny_dict, "--bank", bank, "-m", tiny_bert, "--pooler", "linear", "--head-lr", "1e-2"]
    args += ["--head-warmup-steps", "50", "--epochs", "3", "--lr", "1e-2", "--log-every", "1"]
    assert cli(*args, "-o", tmp_path / "plain").exit_code == 0
    assert cli(*args, "--mlm-weight", "1", "-o", tmp_path / "mlm").exit_code == 0
    # the whole run is head warm-up: with no MLM pass there, the losses are the same with and without it
    assert _info(tmp_path / "mlm")["loss_curve"] == _info(tmp_path / "plain")["loss_curve"]
    assert torch.equal(
        _weights(tmp_path / "mlm")["pooler.dense.weight"], _weights(tmp_path / "plain")["pooler.dense.weight"]
    )


def test_mlm_weight_changes_training_and_is_recorded(cli, tiny_bert, tiny_dict, tmp_path):
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank).exit_code == 0
    base = ["train", tiny_dict, "--bank", bank, "-m", tiny_bert, "--lr", "1e-3", "--seed", "4"]
    plain, mixed = tmp_path / "plain", tmp_path / "mlm"
    assert cli(*base, "-o", plain).exit_code == 0
    result = cli(*base, "--mlm-weight", "0.1", "-o", mixed)
    assert result.exit_code == 0, result.stderr
    assert _info(mixed)["config"]["mlm_weight"] == 0.1
    a, b = _weights(plain), _weights(mixed)
    assert any(not torch.equal(a[k], b[k]) for k in a if k.startswith("encoder."))
    assert _info(mixed)["final_loss"] > _info(plain)["final_loss"]  # + 0.1 x a positive MLM loss


# --- schedule and noise -------------------------------------------------------------------------------------


def test_constant_schedule_after_warmup_is_defsents():
    factor = linear_factor(warmup=2, total=10, decay=False)
    assert [factor(s) for s in (0, 1, 2, 5, 9)] == [0.0, 0.5, 1.0, 1.0, 1.0]
    decays = linear_factor(warmup=2, total=10)
    assert [decays(s) for s in (0, 1, 2, 6, 10)] == [0.0, 0.5, 1.0, 0.5, 0.0]


def test_delete_words_keeps_about_forty_percent_and_at_least_one():
    rng = np.random.default_rng(0)
    text = " ".join(f"w{i}" for i in range(1000))
    kept = delete_words(text, 0.6, rng).split()
    assert 350 < len(kept) < 450 and all(w in text.split() for w in kept)
    assert delete_words("a, b", 0.0, rng) == "a , b"
    assert len(delete_words("one two", 0.999999, rng).split()) == 1


# --- TSDAE --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_tsdae_learns_and_writes_a_checkpoint_every_command_reads(family, cli, tiny_bert, tiny_roberta, tmp_path):
    folder = tiny_bert if family == "bert" else tiny_roberta
    sentences = tmp_path / "s.txt"
    sentences.write_text("".join(f"a long-necked african animal {w}\nan animal that barks {w}\n" for w in "abcd"))
    out = tmp_path / "tsdae"
    args = ["tsdae", sentences, "-m", folder, "--lr", "1e-3", "--epochs", "12", "--batch-size", "4", "-o", out]
    result = cli(*args, "--log-every", "1")
    assert result.exit_code == 0, result.stderr
    info = _info(out)
    assert info["kind"] == "tsdae" and info["training_sentences"] == 8 and info["config"]["schedule"] == "constant"
    losses = [loss for _, loss in info["loss_curve"]]
    assert np.mean(losses[-3:]) < 0.85 * np.mean(losses[:3])
    before, after = _base_weights(folder), _weights(out)
    assert any(not torch.equal(before[k], after[k]) for k in after if k.startswith("encoder."))
    assert not any("crossattention" in k for k in after)  # only the encoder is kept
    assert cli("encode", "-m", out, "-i", sentences, "-o", tmp_path / "v.npy").exit_code == 0
    from sentence_transformers import SentenceTransformer

    expected = SentenceTransformer(str(out), device="cpu").encode(["a long-necked african animal a"])
    assert np.allclose(np.load(tmp_path / "v.npy")[0], expected[0], atol=1e-5)  # CLS, as the checkpoint says
    dictionary = _word_dict(tmp_path / "d.jsonl", folder)
    assert cli("embed-entries", dictionary, "-m", out, "-o", tmp_path / "bank.h5").exit_code == 0


def test_tsdae_without_sentences_is_one_line(cli, tiny_bert, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    result = cli("tsdae", empty, "-m", tiny_bert, "-o", tmp_path / "o")
    assert result.exit_code == 2 and "no sentences" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_tsdae_resume_with_other_settings_is_refused(cli, tiny_bert, tmp_path):
    sentences = tmp_path / "s.txt"
    sentences.write_text("".join(f"an animal that barks {i}\n" for i in range(8)))
    args = ["tsdae", sentences, "-m", tiny_bert, "--batch-size", "2", "--save-every", "2", "-o", tmp_path / "o"]
    from defsent_cli.training import tsdae as module

    original = module.Tsdae.loss

    def stop_at_three(self, run, index):
        if run.step == 3:
            raise KeyboardInterrupt
        return original(self, run, index)

    module.Tsdae.loss = stop_at_three
    try:
        cli(*args)
    finally:
        module.Tsdae.loss = original
    assert (tmp_path / "o.partial" / "state.safetensors").exists()
    result = cli(*args, "--resume", "--deletion", "0.3")
    assert result.exit_code == 2 and "--deletion" in result.stderr, result.stderr
    assert cli(*args, "--resume").exit_code == 0


# --- resume after a real kill, for both new kinds of run ------------------------------------------------------


@pytest.mark.parametrize("kind", ["defsent+mlm", "tsdae"])
def test_resume_after_kill_gives_the_uninterrupted_weights(kind, tiny_bert, tmp_path):
    dictionary = _word_dict(tmp_path / "d.jsonl", tiny_bert)
    defsent = [sys.executable, "-m", "defsent_cli"]
    env = {**os.environ, "DEFSENT_NO_PROGRESS": "1"}
    if kind == "tsdae":
        args = ["tsdae", dictionary, "-m", tiny_bert, "--batch-size", "2"]
    else:
        args = ["train", dictionary, "--objective", "defsent", "-m", tiny_bert, "--mlm-weight", "0.5"]
        args += ["--batch-size", "2", "--lr", "1e-3"]
    args += ["--save-every", "2", "--seed", "5", *RESUME_FLAGS]
    full, killed = tmp_path / "full", tmp_path / "killed"
    run_warm([*defsent, *args, "-o", full], check=True, env=env)
    run = run_warm([*KILLER, *args, "-o", killed], env={**env, "KILL_AFTER_STEP": "5"})
    assert run.returncode == -9
    resumed = run_warm([*defsent, *args, "-o", killed, "--resume"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from step 4" in resumed.stderr
    a, b = _weights(full), _weights(killed)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("changed", [False, True])
def test_a_state_saved_before_the_objectives_kept_their_settings_still_resumes(changed, tmp_path):
    """Before issue 70 every run's state kept TrainConfig's DefSent+ fields in its config (a simcse run's said
    objective defsent-plus there) and the objective's own settings in "settings"; that state resumes the same run
    today, whose config holds the loop's and the objective's settings together, and refuses a changed one."""
    from dataclasses import asdict
    from types import SimpleNamespace

    from defsent_cli.errors import DefsentError
    from defsent_cli.training.config import TrainConfig
    from defsent_cli.training.state import check_resume

    loop = asdict(TrainConfig(pooling="cls", lr=3e-5))
    own = {"objective": "simcse", "split": "train", "mlp": True, "temperature": 0.05}
    old_config = {**loop, "pooler": "auto", "objective": "defsent-plus", "logits": "dot", "head_warmup_steps": 0}
    inputs = {"SENTENCES": {"path": "/x/s.txt", "sha256": "0" * 64}}
    doc = {"config": old_config, "settings": own, "inputs": inputs}
    now = {**own, "temperature": 0.1} if changed else own
    trainer = SimpleNamespace(run_settings=lambda: {**loop, **now}, settings=lambda: {}, inputs=lambda: inputs)
    if changed:
        with pytest.raises(DefsentError, match=r"--temperature 0.1 \(saved: 0.05\)"):
            check_resume(doc, trainer, tmp_path / "state.safetensors")
    else:
        check_resume(doc, trainer, tmp_path / "state.safetensors")
