"""defsent merge: WiSE-FT interpolation and model soups, by hand on tiny models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import build_tiny_bert


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _hf_weights(folder: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModel

    return {k: v.detach().clone() for k, v in AutoModel.from_pretrained(folder).state_dict().items()}


@pytest.fixture(scope="module")
def three(tmp_path_factory, tiny_bert) -> list[Path]:
    """The tiny BERT and two more of the same architecture and tokenizer, other weights (seeds 1, 2)."""
    import shutil

    root = tmp_path_factory.mktemp("merge")
    out = [tiny_bert]
    for seed in (1, 2):
        folder = build_tiny_bert(root / f"m{seed}", seed=seed)
        shutil.copy(tiny_bert / "vocab.txt", folder / "vocab.txt")  # one tokenizer for all
        out.append(folder)
    return out


def test_interpolate_by_hand_keeps_the_base_head(cli, three, tmp_path):
    base, ckpt = three[0], three[1]
    out = tmp_path / "merged"
    result = cli("merge", base, ckpt, "--alpha", "0.3", "-o", out)
    assert result.exit_code == 0, result.output
    a, b, merged = _hf_weights(base), _hf_weights(ckpt), _weights(out)
    key = "encoder.layer.0.attention.self.query.weight"
    torch.testing.assert_close(merged[key], 0.7 * a[key] + 0.3 * b[key])
    torch.testing.assert_close(
        merged["embeddings.word_embeddings.weight"],
        0.7 * a["embeddings.word_embeddings.weight"] + 0.3 * b["embeddings.word_embeddings.weight"],
    )
    assert torch.equal(merged["pooler.dense.weight"], a["pooler.dense.weight"])  # the head is not merged
    info = json.loads((out / "defsent.json").read_text())
    assert info["kind"] == "merge" and info["alpha"] == 0.3 and info["weights"] == [0.7, 0.3]
    assert info["head"] == "none" and "Merge" in (out / "README.md").read_text()
    # a normal checkpoint: sentence-transformers loads it and agrees with defsent encode
    from sentence_transformers import SentenceTransformer

    text = tmp_path / "one.txt"
    text.write_text("a feeling of great happiness\n")
    assert cli("encode", "-m", out, "-i", text, "-o", tmp_path / "v.npy").exit_code == 0
    st = SentenceTransformer(str(out), device="cpu").encode(["a feeling of great happiness"])
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), st, atol=1e-5)


def test_alpha_grid_on_dev_is_never_worse_than_the_base(cli, three, mini, tmp_path):
    base, ckpt = three[0], three[2]
    out = tmp_path / "wise"
    result = cli("merge", base, ckpt, "--alpha", "0:1:0.25", "--select", "dev", "--data", mini, "-o", out)
    assert result.exit_code == 0, result.output
    info = json.loads((out / "defsent.json").read_text())
    curve = dict(map(tuple, info["alpha_curve"]))
    assert list(curve) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert info["alpha"] == max(curve, key=lambda a: (curve[a], -a)) and info["selected_score"] == curve[info["alpha"]]
    from defsent_cli.encoder.models import load_model
    from defsent_cli.evaluation.criteria import Criterion

    criterion = Criterion("dev", mini)
    assert curve[0.0] == pytest.approx(
        criterion.score(load_model(base, "cpu"), pooling="cls"), abs=1e-3
    )  # a plain BERT pools CLS
    assert criterion.score(load_model(out, "cpu")) == pytest.approx(info["selected_score"], abs=1e-3)
    assert info["selected_score"] >= curve[0.0]  # alpha 0 is the base: never worse on dev
    assert len(set(curve.values())) > 1


def test_uniform_and_greedy_soups(cli, three, mini, tmp_path):
    out = tmp_path / "uniform"
    assert cli("merge", *three, "--method", "uniform", "-o", out).exit_code == 0
    ws = [_hf_weights(m) for m in three]
    key = "encoder.layer.1.output.dense.weight"
    torch.testing.assert_close(_weights(out)[key], (ws[0][key] + ws[1][key] + ws[2][key]) / 3)
    greedy = tmp_path / "greedy"
    result = cli("merge", *three, "--method", "greedy", "--select", "dev", "--data", mini, "-o", greedy)
    assert result.exit_code == 0, result.output
    info = json.loads((greedy / "defsent.json").read_text())
    log = info["greedy"]
    assert [row["own"] for row in log] == sorted((row["own"] for row in log), reverse=True)
    soup = [row["soup"] for row in log if row["added"]]
    assert soup == sorted(soup) and log[0]["added"]  # the soup's score never falls
    assert all(row["soup"] < max(soup) or row["added"] for row in log)
    assert info["soup"] == [row["model"] for row in log if row["added"]]


def test_greedy_soup_logic_with_a_known_scorer():
    from defsent_cli.merging.search import greedy_soup
    from defsent_cli.merging.weights import Ingredient

    def ingredient(name: str, value: float) -> Ingredient:
        return Ingredient(Path(name), {"w": torch.tensor([value])}, {}, {}, "mean", {})

    models = [ingredient("a", 1.0), ingredient("b", 4.0), ingredient("c", 3.0), ingredient("d", -10.0)]
    score = lambda weights: -abs(float(weights["w"][0]) - 3.5)  # noqa: E731 - best soups average near 3.5
    soup, log = greedy_soup(models, score)
    # own scores: b -0.5, c -0.5 (ties keep order), a -2.5, d -13.5; b+c = 3.5 -> 0 (kept); +a = 2.67 (left out)
    assert [str(m.path) for m in soup] == ["b", "c"]
    # the log names each model absolute (the checkpoint records it relative to itself: test_paths_travel)
    assert [(row["model"], row["added"]) for row in log] == [
        (str(Path(name).resolve()), added) for name, added in (("b", True), ("c", True), ("a", False), ("d", False))
    ]


def test_merge_refuses_models_that_do_not_fit(cli, three, tiny_roberta, tmp_path):
    out = tmp_path / "x"
    arch = cli("merge", three[0], tiny_roberta, "-o", out)
    assert arch.exit_code == 2 and "different architectures (model_type: bert vs roberta)" in arch.stderr
    other_vocab = build_tiny_bert(tmp_path / "vocab", seed=3)
    (other_vocab / "vocab.txt").write_text((other_vocab / "vocab.txt").read_text().replace("giraffe", "zebra"))
    (other_vocab / "tokenizer.json").unlink()
    tok = cli("merge", three[0], other_vocab, "-o", out)
    assert tok.exit_code == 2 and "different tokenizers" in tok.stderr
    grid = cli("merge", three[0], three[1], "--alpha", "0:1:0.5", "-o", out)
    assert grid.exit_code == 2 and "--select" in grid.stderr
    greedy = cli("merge", *three, "--method", "greedy", "-o", out)
    assert greedy.exit_code == 2 and "--select" in greedy.stderr
    bad = cli("merge", three[0], three[1], "--alpha", "1.5", "-o", out)
    assert bad.exit_code == 2 and "between 0" in bad.stderr
    assert not out.exists() and not list(tmp_path.glob(".x*"))
