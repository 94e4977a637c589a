"""``defsent simcse`` (SimCSE, Noise Matching, + MLM) and ``defsent tsdae --nm-weight`` (TSDAE + NM).

The losses against a hand computation on a 3-sentence batch, which pass receives the gradient under each
stop-gradient, the deletion shared with TSDAE, the checkpoint every command and sentence-transformers read,
kill and resume, and the command line's refusals. Two processes against one: tests/test_distributed.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import CORPUS, KILLER, RESUME_FLAGS, run_warm

from defsent_cli.training.config import TrainConfig
from defsent_cli.training.loss import info_nce
from defsent_cli.training.sentences import damage, delete_words


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.fixture(scope="module")
def nodrop(tmp_path_factory, tiny_bert) -> Path:
    """The tiny BERT without dropout: both SimCSE views are the same, so the loss is a function of the weights."""
    model = tmp_path_factory.mktemp("nodrop") / "bert"
    shutil.copytree(tiny_bert, model)
    config = json.loads((model / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (model / "config.json").write_text(json.dumps(config))
    return model


@pytest.fixture
def sentences(tmp_path) -> Path:
    path = tmp_path / "s.txt"
    path.write_text("".join(line + "\n" for line in CORPUS))
    return path


def _hand_rows(q: np.ndarray, k: np.ndarray, scale: float) -> np.ndarray:
    """Row i: -log softmax_j(scale * cos(q_i, k_j))[i]."""
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    kn = k / np.linalg.norm(k, axis=1, keepdims=True)
    logits = scale * qn @ kn.T
    logits -= logits.max(axis=1, keepdims=True)
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -np.diag(log_softmax)


def _hand_info_nce(q: np.ndarray, k: np.ndarray, scale: float) -> float:
    return float(np.mean(_hand_rows(q, k, scale)))


def test_info_nce_is_the_mean_cross_entropy_of_scaled_cosines():
    q = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 2.0]])
    k = np.array([[0.8, 0.6], [1.0, 1.0], [-1.0, 0.5]])
    # row 0 by hand: cosines 0.8, 0.7071, -0.8944; scale 20 -> logits 16, 14.142, -17.889
    row0 = -16 + np.log(np.exp(16) + np.exp(20 / np.sqrt(2)) + np.exp(-20 / np.sqrt(5)))
    assert row0 == pytest.approx(0.14497, abs=1e-5)  # log(1 + e^(20/sqrt(2) - 16) + ...)
    rows = _hand_rows(q, k, 20.0)
    assert rows[0] == pytest.approx(row0, rel=1e-9)  # the numpy helper, checked against the hand-written row
    hand = float(rows.mean())
    got = float(info_nce(torch.tensor(q), torch.tensor(k), scale=20.0))
    assert got == pytest.approx(hand, rel=1e-6)
    assert float(info_nce(torch.tensor(q), torch.tensor(k), scale=1.0)) == pytest.approx(_hand_info_nce(q, k, 1.0))
    with pytest.raises(ValueError):
        info_nce(torch.tensor(q), torch.tensor(k[:2]))


def _trainer(model: Path, sentences: Path, **settings):
    from defsent_cli.training.contrastive import Contrastive
    from defsent_cli.training.loop import ObjectiveRun

    # on the CPU whatever the machine has: the hand computation below runs the model on host tensors, in fp32
    config = TrainConfig(
        pooling="cls", lr=1e-3, batch_size=3, max_length=32, adam_eps=1e-8, batching="random", device="cpu"
    )
    return ObjectiveRun(Contrastive(**settings), sentences, model, config)


def _cls(trainer, texts_or_ids) -> torch.Tensor:
    """head(CLS) computed by hand from the model's own output."""
    from defsent_cli.encoder.tokenize import pad_batch, pad_id, tokenize

    ids = texts_or_ids
    if isinstance(ids[0], str):
        ids = tokenize(ids, trainer.loaded.tokenizer, trainer.pool, trainer.max_length)
    input_ids, mask = pad_batch(ids, pad_id(trainer.loaded.tokenizer))
    cls = trainer.model(input_ids=input_ids, attention_mask=mask).last_hidden_state[:, 0]
    dense = trainer.head.dense
    return torch.tanh(cls @ dense.weight.T + dense.bias) if dense is not None else cls


def test_simcse_loss_on_three_sentences_is_the_hand_computed_one(nodrop, sentences):
    trainer = _trainer(nodrop, sentences)
    assert trainer.objective.mlp and trainer.head.dense is not None  # CLS trains through a fresh MLP, as SimCSE
    dense = trainer.head.dense
    assert float(dense.bias.detach().abs().max()) == 0 and 0.005 < float(dense.weight.detach().std()) < 0.04
    index = np.array([0, 4, 7])
    trainer.train_mode()
    loss = trainer.loss_on(index)
    with torch.no_grad():
        z = _cls(trainer, [trainer.data.token_ids[i] for i in index]).numpy()
    assert float(loss.detach()) == pytest.approx(_hand_info_nce(z, z, 20.0), rel=1e-5)
    # temperature 0.1 is scale 10
    trainer.objective.temperature = 0.1
    assert float(trainer.loss_on(index).detach()) == pytest.approx(_hand_info_nce(z, z, 10.0), rel=1e-5)


@pytest.mark.parametrize("side", ["original", "damaged", "none"])
def test_noise_matching_loss_and_which_pass_gets_the_gradient(side, nodrop, sentences):
    trainer = _trainer(nodrop, sentences, objective="nm", stop_gradient=side)
    index = np.array([1, 3, 8])
    texts = [trainer.data.texts[i] for i in index]
    trainer.objective.damaged = dict(zip(index.tolist(), damage(texts, 0.6, seed=42, step=0), strict=True))
    passes: list[bool] = []  # whether each encoder pass builds a graph
    hook = trainer.model.register_forward_hook(lambda m, a, out: passes.append(out.last_hidden_state.requires_grad))
    trainer.train_mode()
    loss = trainer.loss_on(index)
    hook.remove()
    loss.backward()
    got = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    trainer.optimizer.zero_grad(set_to_none=True)
    assert passes == ([False, True] if side != "none" else [True])  # the stop-gradient side runs without a graph

    q = _cls(trainer, [trainer.data.token_ids[i] for i in index])
    k = _cls(trainer, [trainer.objective.damaged[i] for i in index.tolist()])
    assert float(loss.detach()) == pytest.approx(_hand_info_nce(q.detach().numpy(), k.detach().numpy(), 20.0), rel=1e-5)
    if side == "original":
        q = q.detach()
    elif side == "damaged":
        k = k.detach()
    qn, kn = torch.nn.functional.normalize(q, dim=1), torch.nn.functional.normalize(k, dim=1)
    torch.nn.functional.cross_entropy(20 * qn @ kn.T, torch.arange(3)).backward()
    want = {n: p.grad for n, p in trainer.model.named_parameters() if p.grad is not None}
    assert got.keys() == want.keys()
    # atol 1% of the largest gradient (5e-4): one pass of 6 rows against two of 3 round differently from one CPU to
    # another (1.2e-6 seen); a wrong stop-gradient side differs by the gradient itself
    assert all(torch.allclose(got[n], want[n], atol=5e-6, rtol=1e-4) for n in want)


def test_noise_matching_damages_the_batch_as_tsdae_does(nodrop, sentences):
    """The positive of x is x with 60% of its words deleted, drawn from (seed, step) as defsent tsdae draws it."""
    trainer = _trainer(nodrop, sentences, objective="nm")
    index = trainer.schedule.batch(0)
    trainer.train_step(index)
    rng = np.random.default_rng([42, 0])
    expected = [delete_words(trainer.data.texts[i], 0.6, rng) for i in index]
    assert [trainer.objective.damaged[i] for i in index.tolist()] == expected
    assert all(
        set(d.split()) <= set(trainer.data.texts[i].replace("-", " - ").split())
        for i, d in zip(index, expected, strict=True)
    )
    from defsent_cli.training import tsdae

    assert tsdae.damage is damage  # one deletion for both commands


def test_simcse_writes_a_checkpoint_every_command_and_sentence_transformers_read(cli, tiny_bert, sentences, tmp_path):
    out = tmp_path / "simcse"
    result = cli("simcse", sentences, "-m", tiny_bert, "-o", out, "-b", "4", "--lr", "1e-3", "--epochs", "3")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and "wrote" in result.stderr
    info = json.loads((out / "defsent.json").read_text())
    assert info["kind"] == "contrastive" and info["objective"] == "simcse" and info["mlp"] is True
    assert info["steps"] == 9 and info["config"]["batching"] == "random" and info["max_length"] == 32
    before = {k.split(".", 1)[1]: v for k, v in _weights(tiny_bert).items() if k.startswith("bert.")}
    after = _weights(out)
    assert any(not torch.equal(before[k], after[k]) for k in after if k.startswith("encoder."))
    assert all(torch.equal(before[k], after[k]) for k in after if k.startswith("pooler."))  # the MLP is not kept
    card = (out / "README.md").read_text()
    assert "unsupervised SimCSE (Gao et al. 2021)" in card and "DefSent+" not in card
    assert f"| sentences | `{sentences.name}` (SHA-256 " in card and "| training sentences | 10 |" in card
    assert cli("encode", "-m", out, "-i", sentences, "-o", tmp_path / "v.npy").exit_code == 0
    from sentence_transformers import SentenceTransformer

    expected = SentenceTransformer(str(out), device="cpu").encode([CORPUS[0]])
    assert np.allclose(np.load(tmp_path / "v.npy")[0], expected[0], atol=1e-5)  # CLS, as the checkpoint says


def test_mlm_weight_adds_the_masked_lm_loss(cli, tiny_bert, sentences, tmp_path):
    plain, mlm = tmp_path / "plain", tmp_path / "mlm"
    args = [sentences, "-m", tiny_bert, "-b", "4", "--objective", "nm", "--max-steps", "2", "--log-every", "1"]
    assert cli("simcse", *args, "-o", plain).exit_code == 0
    assert cli("simcse", *args, "-o", mlm, "--mlm-weight", "0.5").exit_code == 0
    a, b = (json.loads((f / "defsent.json").read_text()) for f in (plain, mlm))
    assert b["config"]["mlm_weight"] == 0.5
    assert b["loss_curve"][0][1] > a["loss_curve"][0][1] + 0.5 * 2.0  # + 0.5 x a random model's MLM loss (~ln 60)


def test_tsdae_plus_noise_matching(cli, tiny_bert, sentences, tmp_path):
    plain, nm = tmp_path / "tsdae", tmp_path / "tsdae-nm"
    args = [sentences, "-m", tiny_bert, "-b", "4", "--max-steps", "2", "--log-every", "1"]
    assert cli("tsdae", *args, "-o", plain).exit_code == 0
    result = cli("tsdae", *args, "-o", nm, "--nm-weight", "1", "--temperature", "0.1")
    assert result.exit_code == 0, result.stderr
    a, b = (json.loads((f / "defsent.json").read_text()) for f in (plain, nm))
    assert b["nm_weight"] == 1.0 and b["temperature"] == 0.1 and "nm_weight" not in a
    card = (nm / "README.md").read_text()
    assert "TSDAE pre-training (Wang et al. 2021)" in card and "Loss: plus 1 x Noise Matching." in card
    assert b["loss_curve"][0][1] > a["loss_curve"][0][1]  # the same first batch, an InfoNCE term on top
    warned = cli("tsdae", *args, "-o", tmp_path / "t", "--temperature", "0.1")
    assert "--temperature has no effect" in warned.stderr


@pytest.mark.long
def test_simcse_resume_after_kill_gives_the_uninterrupted_weights(tiny_bert, sentences, tmp_path):
    defsent = [sys.executable, "-m", "defsent_cli"]
    env = {**os.environ, "DEFSENT_NO_PROGRESS": "1"}
    args = ["simcse", sentences, "-m", tiny_bert, "--objective", "nm", "--mlm-weight", "0.1", "-b", "2"]
    args += ["--lr", "1e-3", "--save-every", "2", "--seed", "5", *RESUME_FLAGS]
    full, killed = tmp_path / "full", tmp_path / "killed"
    run_warm([*defsent, *args, "-o", full], check=True, env=env)
    run = run_warm([*KILLER, *args, "-o", killed], env={**env, "KILL_AFTER_STEP": "3"})
    assert run.returncode == -9
    # a changed setting is refused, and the saved state is left as it was: the resume below still continues it
    refused = run_warm(
        [*defsent, *args, "-o", killed, "--resume", "--stop-gradient", "none"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and "--stop-gradient" in refused.stderr
    resumed = run_warm([*defsent, *args, "-o", killed, "--resume"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from step 2" in resumed.stderr
    a, b = _weights(full), _weights(killed)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_simcse_refusals_are_one_line(cli, tiny_bert, sentences, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    cases = [
        (["simcse", empty, "-m", tiny_bert, "-o", tmp_path / "o"], "no sentences"),
        (["simcse", sentences, "-m", tiny_bert, "-o", tmp_path / "o", "--temperature", "0"], "--temperature"),
        (["simcse", sentences, "-m", tiny_bert, "-o", tmp_path / "o", "--pooling", "max"], "'max' is not one of"),
        (["simcse", sentences, "-m", tiny_bert, "-o", tmp_path / "o", "--objective", "x"], "'x' is not one of"),
        (
            ["simcse", sentences, "-m", tiny_bert, "-o", tmp_path / "o", "--eval-every", "1", "--eval-on", "dict-dev"],
            "dict-dev",
        ),
    ]
    for args, message in cases:
        result = cli(*args)
        assert result.exit_code == 2 and message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "o").exists()
    warned = cli("simcse", sentences, "-m", tiny_bert, "-o", tmp_path / "w", "--max-steps", "1", "--deletion", "0.3")
    assert warned.exit_code == 0 and "--deletion has no effect" in warned.stderr


def test_eval_every_keeps_the_best_dev_step(cli, tiny_bert, sentences, mini, tmp_path):
    out = tmp_path / "best"
    args = ["simcse", sentences, "-m", tiny_bert, "-b", "4", "--epochs", "3", "--lr", "3e-3", "--pooling", "mean"]
    result = cli(*args, "--eval-every", "3", "--data", mini, "-o", out)
    assert result.exit_code == 0, result.stderr
    info = json.loads((out / "defsent.json").read_text())
    steps = [step for step, _ in info["eval_curve"]]
    assert steps == [0, 3, 6, 9] and info["eval_on"] == "dev" and info["mlp"] is False  # mean: no MLP
    scores = dict(map(tuple, info["eval_curve"]))
    assert info["kept_step"] == max((s for s in steps if s > 0), key=lambda s: (scores[s], -s))
    from defsent_cli.encoder.models import load_model
    from defsent_cli.evaluation.criteria import Criterion

    again = Criterion("dev", mini).score(load_model(out, "cpu"))
    assert again == pytest.approx(scores[info["kept_step"]], abs=1e-3)  # the kept step's weights were written
