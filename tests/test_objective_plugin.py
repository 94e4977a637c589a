"""An objective that plugs in by one module and one registration (issue 57): ``bow_objective.py``, a test-only
bag-of-words reconstruction, trains through the package's one loop, writes a checkpoint every reader loads,
saves its decoder in the resumable state, resumes to the weights of an uninterrupted run, and refuses a
resume with other settings."""

from __future__ import annotations

import json

import pytest
import torch
from bow_objective import BagOfWords
from conftest import CORPUS, checkpoint_weights

from defsent_cli.errors import DefsentError
from defsent_cli.training import run
from defsent_cli.training.config import TrainConfig
from defsent_cli.training.objective import OBJECTIVES


def _config(**changes) -> TrainConfig:
    settings = dict(pooling="mean", batch_size=4, lr=1e-3, epochs=2, save_every=2, log_every=1, device="cpu", seed=3)
    return TrainConfig(**{**settings, **changes})


def test_a_registered_objective_trains_saves_resumes_and_loads(tiny_bert, tmp_path, monkeypatch):
    assert OBJECTIVES["bag-of-words"] is BagOfWords
    sentences = tmp_path / "s.txt"
    sentences.write_text("".join(line + "\n" for line in CORPUS))
    # its declared constraint is checked for it, in the one wording, before anything loads
    with pytest.raises(DefsentError, match=r"^--positive-weight must be a finite number > 0, got 0.0$"):
        run.objective_fit(BagOfWords(0.0), sentences, tiny_bert, tmp_path / "bad", _config(), show_progress=False)
    assert not (tmp_path / "bad").exists() and not (tmp_path / "bad.partial").exists()
    full = run.objective_fit(BagOfWords(2.0), sentences, tiny_bert, tmp_path / "full", _config(), show_progress=False)
    assert full["kind"] == "bag-of-words" and full["positive_weight"] == 2.0 and full["steps"] == 6
    assert full["final_loss"] < full["loss_curve"][0][1]

    loss = BagOfWords.loss

    def interrupted(self, trainer, index):
        if trainer.step == 3:
            raise KeyboardInterrupt
        return loss(self, trainer, index)

    monkeypatch.setattr(BagOfWords, "loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run.objective_fit(BagOfWords(2.0), sentences, tiny_bert, tmp_path / "cut", _config(), show_progress=False)
    monkeypatch.setattr(BagOfWords, "loss", loss)
    state = tmp_path / "cut.partial" / "state.safetensors"
    from safetensors import safe_open

    with safe_open(str(state), "pt") as fh:
        assert {"extra.decoder.weight", "extra.decoder.bias"} <= set(fh.keys())
        saved = json.loads(fh.metadata()["defsent"])
    assert saved["config"]["positive_weight"] == 2.0 and saved["settings"] == {}  # the run's settings: one place
    with pytest.raises(DefsentError, match="--positive-weight 1.0 .saved: 2.0."):
        run.objective_fit(BagOfWords(1.0), sentences, tiny_bert, tmp_path / "cut", _config(), resume=True)
    resumed = run.objective_fit(
        BagOfWords(2.0), sentences, tiny_bert, tmp_path / "cut", _config(), resume=True, show_progress=False
    )
    assert resumed["loss_curve"] == full["loss_curve"]
    a, b = checkpoint_weights(tmp_path / "full"), checkpoint_weights(tmp_path / "cut")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not any("decoder" in k for k in a)  # the decoder trains only

    from sentence_transformers import SentenceTransformer

    from defsent_cli.encoder.models import load_model

    loaded = load_model(tmp_path / "cut", "cpu")
    assert loaded.source == "defsent"
    vectors = SentenceTransformer(str(tmp_path / "cut"), device="cpu").encode(CORPUS[:2])
    assert vectors.shape == (2, loaded.dim)
