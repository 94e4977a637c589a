"""Results that say where they came from, and checkpoints that say what they are (issue 55, part 6).

Every results JSON (``eval-sts``, ``eval-senteval``, ``eval-cluster``, ``eval-dict``, ``select-best``,
``inspect``, ``ditto-search``, ``lookup --json``, a merge's and any checkpoint's ``defsent.json``) holds a
``provenance`` object: the command line as typed, each model folder with the SHA-256 of its weights, the data
files with theirs, the versions and the seed (docs/formats.md, "Results JSON"). The values are checked, not
just present: each hash against ``hashlib`` on the file, the command against the one given, the versions
against the installed packages. ``train`` and ``eval-sts`` run as real processes (``sys.argv`` as a user's shell gives it); the
other commands in this process, ``sys.argv`` set as the installed ``defsent`` script would have it.

A checkpoint's model card carries the Hugging Face Hub's metadata (``base_model`` where it is a Hub model,
``library_name``, ``pipeline_tag``, ``tags``, ``model-index``) as ``huggingface_hub`` parses it, and the folder has
``config_sentence_transformers.json`` as sentence-transformers itself writes it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import re
import sys
import warnings
from pathlib import Path

import pytest
from conftest import build_more, run_warm

DEFSENT = [sys.executable, "-m", "defsent_cli"]
ENV = {**os.environ, "DEFSENT_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
DEADLINE = 300  # seconds per command (a hang fails, it does not stall the suite)


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _cli(*args, input=None):
    from typer.testing import CliRunner

    from defsent_cli.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)


def defsent_process(*args) -> list[str]:
    """Run ``defsent ARGS`` as a process; returns the arguments as the command line gave them."""
    argv = [str(a) for a in args]
    done = run_warm([*DEFSENT, *argv], DEADLINE, capture_output=True, env=ENV)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return argv


@pytest.fixture
def as_typed(monkeypatch):
    """Run ``defsent ARGS`` in this process with ``sys.argv`` as the installed script would have it."""

    def run(*args, input=None):
        argv = [str(a) for a in args]
        monkeypatch.setattr(sys, "argv", ["/usr/local/bin/defsent", *argv])
        result = _cli(*argv, input=input)
        assert result.exit_code == 0, result.output
        return argv, result

    return run


@pytest.fixture(scope="module")
def w(tmp_path_factory, tiny_bert):
    """A dictionary, its bank, the mini data sets and a checkpoint trained by a real ``defsent train``."""
    root = tmp_path_factory.mktemp("provenance")
    words = "red blue small large animal tree river stone light dark old new fast slow warm cold".split()
    rows = [
        {
            "entry": f"w{i}",
            "definitions": [" ".join(words[(i * k) % len(words)] for k in (1, 3, 5, 7, 11))],
            "split": ["train", "dev", "test"][i % 3],
        }
        for i in range(30)
    ]
    dictionary = root / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(row) + "\n" for row in rows))
    bank = root / "bank.h5"
    made = _cli("embed-entries", dictionary, "-m", tiny_bert, "-o", bank, "--kind", "AC")
    assert made.exit_code == 0, made.output
    data = build_more(root / "data")
    ckpt = root / "ckpt"
    train_argv = defsent_process(
        "train", dictionary, "--bank", bank, "-m", tiny_bert, "-o", ckpt, "--max-steps", "4", "-b", "4",
        "--eval-every", "2", "--eval-on", "stsb-dev", "--data", data, "--seed", "5",
    )  # fmt: skip
    return {"root": root, "dictionary": dictionary, "bank": bank, "data": data, "ckpt": ckpt, "train": train_argv}


def installed_versions() -> dict:
    import torch
    import transformers

    import defsent_cli

    return {
        "defsent": defsent_cli.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
    }


def model_record(folder: Path, *weights: str) -> dict:
    folder = Path(folder).absolute()
    return {"path": str(folder), "weights": {name: sha(folder / name) for name in weights}}


def check(
    prov: dict, argv: list[str], models: list[dict], files: list[Path], seed, folders=(), checkpoint: bool = False
) -> None:
    """``prov`` is exactly where the result came from: the command, the models and their weights' hashes,
    each data file with its hash (and each data folder), the installed versions, the seed. ``checkpoint``: ``prov``
    is a checkpoint's, as ``read_info`` reads it back (docs/formats.md, "Recorded paths"): its paths resolved, its
    command's absolute paths recorded relative to the working folder, which is the one it names, if any."""
    if checkpoint:
        from defsent_cli.formats.recorded import command_arguments

        assert prov["command"] == command_arguments(["defsent", *argv], os.getcwd())
        assert not any(os.path.isabs(argument) for argument in prov["command"])
        assert prov["cwd"] in (None, os.path.realpath(os.getcwd()))
    else:
        assert prov["command"] == ["defsent", *argv]
        assert prov["cwd"] == os.getcwd()
    assert prov["models"] == models
    data = {record["path"]: record for record in prov["data"]}
    for path in files:
        assert data[str(Path(path).absolute())] == {"path": str(Path(path).absolute()), "sha256": sha(path)}
    for folder in folders:
        assert data[str(Path(folder).absolute())]["folder"] is True
    assert prov["versions"] == installed_versions()
    assert prov["seed"] == seed


def task_folder_hashes(prov: dict, folder: Path) -> dict:
    """The ``files`` hashes recorded for a task folder, checked against the files."""
    record = next(r for r in prov["data"] if r["path"] == str(folder.absolute()))
    assert record["folder"] is True and record["files"]
    for name, digest in record["files"].items():
        assert digest == sha(folder / name), name
    return record["files"]


# --- checkpoints: provenance, the model card's metadata, sentence-transformers' config --------------------


def test_a_checkpoint_records_its_provenance(w, tiny_bert):
    from defsent_cli.formats.checkpoint import read_info

    check(
        read_info(w["ckpt"])["provenance"],
        w["train"],
        [model_record(tiny_bert, "model.safetensors")],
        [w["dictionary"], w["bank"]],
        seed=5,
        checkpoint=True,
    )


def front_matter(card: str) -> dict:
    """The model card's metadata as ``huggingface_hub`` parses it (what the Hub reads)."""
    from huggingface_hub import ModelCard

    return ModelCard(card).data.to_dict()


def test_the_model_card_carries_the_hubs_metadata(w, tiny_bert):
    """Parsed by huggingface_hub's own ModelCard, round-tripped without loss; a local base is no base_model (the
    text names it, with its weights' hash); the user's files are no Hub datasets; no absolute path anywhere."""
    from huggingface_hub import ModelCard

    info = json.loads((w["ckpt"] / "defsent.json").read_text())
    text = (w["ckpt"] / "README.md").read_text()
    card = ModelCard(text)
    meta = card.data.to_dict()
    assert ModelCard(str(card)).data.to_dict() == meta  # round-trips without loss
    assert "base_model" not in meta and "datasets" not in meta
    assert meta["library_name"] == "sentence-transformers" and meta["pipeline_tag"] == "sentence-similarity"
    assert {"defsent", "sentence-transformers", "defsent-plus"} <= set(meta["tags"])
    assert "license" not in meta  # the tiny base model's card states none
    [result] = card.data.eval_results
    kept = dict(map(tuple, info["eval_curve"]))[info["kept_step"]]
    assert card.data.model_name == "ckpt" and result.dataset_type == "mteb/stsbenchmark-sts"
    assert result.dataset_split == "validation" and result.metric_type == "cosine_spearman"
    assert result.metric_value == pytest.approx(kept / 100)
    weights = hashlib.sha256((tiny_bert / "model.safetensors").read_bytes()).hexdigest()
    assert f"a local model folder `{tiny_bert.name}` (weights SHA-256 {weights})" in text
    assert f"`{w['dictionary'].name}` (SHA-256 {hashlib.sha256(w['dictionary'].read_bytes()).hexdigest()})" in text
    assert "None" not in text and str(w["root"]) not in text and str(tiny_bert) not in text
    assert not re.search(r"(^|[\s(`\"'])/[^\s/]+/", text)  # no absolute path at all


def test_the_license_is_the_base_cards_when_it_states_one(tmp_path):
    from defsent_cli.formats.model_card import model_card

    base = tmp_path / "base"
    base.mkdir()
    (base / "README.md").write_text("---\nlanguage: en\nlicense: apache-2.0\n---\n# base\n")
    meta = front_matter(model_card("out", {"kind": "tsdae", "base_model": str(base), "sentences": "/x/wiki.txt"}))
    assert meta["license"] == "apache-2.0" and "datasets" not in meta and "tsdae" in meta["tags"]
    assert "model-index" not in meta  # no dev score recorded


def test_sentence_transformers_loads_the_checkpoint_and_writes_the_same_config(w, tmp_path):
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.WARNING)
    logger = logging.getLogger("sentence_transformers")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = SentenceTransformer(str(w["ckpt"]), device="cpu")
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == []
    assert [str(c.message) for c in caught if "config" in str(c.message).lower()] == []
    assert model.similarity_fn_name == "cosine"
    model.save(str(tmp_path / "saved"))  # what sentence-transformers itself writes for this model
    ours = json.loads((w["ckpt"] / "config_sentence_transformers.json").read_text())
    assert ours == json.loads((tmp_path / "saved" / "config_sentence_transformers.json").read_text())


# --- results JSON ---------------------------------------------------------------------------------------


def test_eval_sts_of_two_models_records_both_and_the_files_it_read(w, tiny_bert):
    out = w["root"] / "sts.json"
    senteval = w["data"] / "senteval"
    argv = defsent_process(
        "eval-sts", "-m", w["ckpt"], "-m", tiny_bert, "-d", senteval, "--tasks", "STS-B", "--split", "dev",
        "--seed", "7", "-o", out,
    )  # fmt: skip
    result = json.loads(out.read_text())
    models = [model_record(w["ckpt"], "model.safetensors"), model_record(tiny_bert, "model.safetensors")]
    prov = result["provenance"]
    check(prov, argv, models, [], seed=7, folders=[senteval / "downstream"])
    bench = senteval / "downstream" / "STS" / "STSBenchmark"
    assert {"sts-train.csv", "sts-dev.csv", "sts-test.csv"} <= set(task_folder_hashes(prov, bench))


def test_eval_dict_records_the_dictionary_and_bank(w, as_typed):
    out = w["root"] / "dict-eval.json"
    argv, _ = as_typed("eval-dict", w["dictionary"], "-m", w["ckpt"], "--bank", w["bank"], "--seed", "3", "-o", out)
    prov = json.loads(out.read_text())["provenance"]
    check(prov, argv, [model_record(w["ckpt"], "model.safetensors")], [w["dictionary"], w["bank"]], seed=3)


def test_lookup_json_lines_each_record_the_model_and_bank(w, as_typed):
    argv, result = as_typed(
        "lookup", "-m", w["ckpt"], "--bank", w["bank"], "--json", "-k", "2", "red tree", "old river"
    )
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 2
    for line in lines:
        check(line["provenance"], argv, [model_record(w["ckpt"], "model.safetensors")], [w["bank"]], seed=None)


def test_select_best_ranking_records_every_checkpoint(w, tiny_bert, as_typed):
    out = w["root"] / "ranking.json"
    argv, _ = as_typed("select-best", w["ckpt"], tiny_bert, "--by", "stsb-dev", "--data", w["data"], "-o", out)
    document = json.loads(out.read_text())
    ranked = [Path(row["path"]) for row in document["ranking"]]
    prov = document["provenance"]
    check(prov, argv, [model_record(path, "model.safetensors") for path in ranked], [], seed=None)
    assert {Path(p).resolve() for p in ranked} == {w["ckpt"].resolve(), tiny_bert.resolve()}
    assert "sts-dev.csv" in task_folder_hashes(prov, w["data"] / "senteval" / "downstream" / "STS" / "STSBenchmark")


def test_merge_records_every_model_given(w, tiny_bert, tmp_path, as_typed):
    out = tmp_path / "merged"
    argv, _ = as_typed("merge", w["ckpt"], tiny_bert, "--method", "uniform", "-o", out)
    from defsent_cli.formats.checkpoint import read_info

    check(
        read_info(out)["provenance"],
        argv,
        [model_record(w["ckpt"], "model.safetensors"), model_record(tiny_bert, "model.safetensors")],
        [],
        None,
        checkpoint=True,
    )


def test_eval_cluster_records_each_set_file(w, tiny_bert, as_typed):
    out = w["root"] / "cluster.json"
    argv, _ = as_typed(
        "eval-cluster", "-m", tiny_bert, "--data", w["data"], "--tasks", "agnews,tweet", "--runs", "2", "--seed", "4",
        "-o", out,
    )  # fmt: skip
    prov = json.loads(out.read_text())["provenance"]
    sets = [w["data"] / "clustering" / "agnews" / "agnewsdataraw-8000"]
    sets.append(w["data"] / "clustering" / "tweet" / "tweet-original-order.txt")
    check(prov, argv, [model_record(tiny_bert, "model.safetensors")], sets, seed=4)


def test_eval_senteval_records_the_task_folders(w, tiny_bert, as_typed):
    out = w["root"] / "senteval.json"
    argv, _ = as_typed(
        "eval-senteval", "-m", tiny_bert, "--data", w["data"], "--tasks", "SST-5", "-c", "prototyping", "-o", out
    )
    prov = json.loads(out.read_text())["provenance"]
    check(prov, argv, [model_record(tiny_bert, "model.safetensors")], [], seed=1111)
    fine = w["data"] / "senteval" / "downstream" / "SST" / "fine"
    assert set(task_folder_hashes(prov, fine)) == {"sentiment-train", "sentiment-dev", "sentiment-test"}


def test_weights_are_hashed_once_per_file_version(tmp_path, monkeypatch):
    """The hash of a model's weights is computed once per file in a process (a loop over models, or
    ``lookup``'s lines, do not read it again), and again when the file changes."""
    import defsent_cli.formats.results as results

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"one")
    (folder / "config.json").write_text("{}")
    calls: list[Path] = []
    real = results.sha256_file
    monkeypatch.setattr(results, "sha256_file", lambda path: calls.append(Path(path)) or real(path))
    first = results.model_provenance(folder)
    assert results.model_provenance(folder) == first == model_record(folder, "model.safetensors")
    assert len(calls) == 1
    (folder / "model.safetensors").write_bytes(b"two, longer")
    assert results.model_provenance(folder) == model_record(folder, "model.safetensors") != first
    assert len(calls) == 2


def test_inspect_and_ditto_search_record_what_they_read(w, tiny_bert, as_typed):
    out = w["root"] / "inspect.json"
    argv, _ = as_typed("inspect", w["bank"], "--seed", "2", "-o", out)
    check(json.loads(out.read_text())["provenance"], argv, [], [w["bank"]], seed=2)
    heads = w["root"] / "heads.json"
    argv, _ = as_typed("ditto-search", "-m", tiny_bert, "--data", w["data"], "-o", heads)
    prov = json.loads(heads.read_text())["provenance"]
    check(prov, argv, [model_record(tiny_bert, "model.safetensors")], [], seed=None)
    assert "sts-dev.csv" in task_folder_hashes(prov, w["data"] / "senteval" / "downstream" / "STS" / "STSBenchmark")
