"""Paths that travel (docs/formats.md, "Recorded paths"): a bank records its dictionary relative to itself, so
``search`` and ``serve`` started from another folder show the definitions; a checkpoint records every path relative
to itself (or a Hub id, or a name with its SHA-256), so the folder names no home, temporary, repository or
virtual-environment folder; ``lookup`` finds the bank a moved checkpoint records and warns when it changed; ``-m
./x`` is a local folder, never a Hub name. Driven as a user drives them: the commands in subprocesses, from the
folder the test chooses."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REPO, run_warm
from test_serve import DEFSENT, TORCH_FP32

ENTRIES = {
    "piglet": "a baby pig",
    "giraffe": "a long-necked african animal",
    "joy": "a feeling of great happiness",
    "dog": "a domesticated carnivorous mammal kept as a pet",
    "fish": "an animal that lives in water and swims with fins",
}


def defsent(*args, cwd: Path, timeout: float = 300):
    return run_warm([*DEFSENT, *map(str, args)], timeout, cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_st) -> dict:
    """Folder A: a dictionary, its bank built there (paths as typed, relative to A), and a checkpoint trained there
    with every path given absolute; folder B: elsewhere, where the commands are then started."""
    root = tmp_path_factory.mktemp("travel")
    a, b = root / "A", root / "B"
    a.mkdir()
    b.mkdir()
    rows = [{"entry": e, "definitions": [d], "sources": ["test"], "split": "train"} for e, d in ENTRIES.items()]
    (a / "dict.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = defsent("embed-entries", "dict.jsonl", "-m", tiny_st, "--pool", "mean", "-o", "bank.h5", *TORCH_FP32, cwd=a)
    assert done.returncode == 0, done.stderr
    args = [a / "dict.jsonl", "--bank", a / "bank.h5", f"-m{tiny_st}", "-o", a / "ckpt", "--batch-size", "2"]
    done = defsent("train", *args, "--device", "cpu", "--max-steps", "2", "-q", cwd=a)
    assert done.returncode == 0, done.stderr
    return {"A": a, "B": b, "model": tiny_st}


# ---------------------------------------------------------------- a bank and its dictionary


def test_a_bank_built_in_one_folder_shows_its_definitions_searched_from_another(built):
    done = defsent("search", "--index", built["A"] / "bank.h5", "-m", built["model"], "-k", "1", "--json",
                   "a baby pig", *TORCH_FP32, cwd=built["B"])  # fmt: skip
    assert done.returncode == 0, done.stderr
    hit = json.loads(done.stdout)["results"][0]
    assert hit["entry"] == "piglet" and hit["definitions"] == ["a baby pig"], done.stderr
    assert "no definitions shown" not in done.stderr


def test_a_bank_linked_into_another_folder_shows_its_definitions(built, tmp_path):
    (tmp_path / "bank.h5").symlink_to(built["A"] / "bank.h5")  # its dictionary stays beside the real file
    done = defsent("lookup", "--bank", "bank.h5", "-m", built["model"], "-k", "1", "--json", "a baby pig",
                   *TORCH_FP32, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    hit = json.loads(done.stdout)["results"][0]
    assert hit["definitions"] == ["a baby pig"] and "no definitions shown" not in done.stderr


def test_a_bank_in_a_content_store_finds_its_dictionary_beside_its_link(built, tmp_path):
    """The Hugging Face cache's layout (git-annex's, DVC's): each file a link into a store of blobs."""
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "rev"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    for name, blob in (("bank.h5", "b1"), ("dict.jsonl", "d1")):
        shutil.copyfile(built["A"] / name, blobs / blob)
        (snapshot / name).symlink_to(Path("..", "..", "blobs", blob))
    done = defsent("lookup", "--bank", snapshot / "bank.h5", "-m", built["model"], "-k", "1", "--json", "a baby pig",
                   *TORCH_FP32, cwd=built["B"])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["definitions"] == ["a baby pig"], done.stderr


def test_a_bank_built_in_one_folder_shows_its_definitions_served_from_another(built, monkeypatch):
    from test_serve import http, serving

    monkeypatch.chdir(built["B"])  # the server starts here
    args = ["-m", built["model"], "--bank", built["A"] / "bank.h5", *TORCH_FP32]
    with serving(built["B"], *args) as server:
        code, _, answer = http("POST", server.url + "/v1/lookup", {"query": "a baby pig", "k": 1})
    assert code == 200, answer
    hit = answer["data"][0]["results"][0]
    assert hit["entry"] == "piglet" and hit["definitions"] == ["a baby pig"]


def test_a_bank_records_its_dictionary_relative_to_itself_and_reads_older_absolute_ones(built, tmp_path):
    import h5py

    from defsent_cli.formats.bank import open_bank

    with h5py.File(built["A"] / "bank.h5", "r") as h5:
        assert h5.attrs["dictionary"] == "./dict.jsonl"
    old = tmp_path / "old.h5"  # a bank of before: its dictionary's absolute path
    shutil.copyfile(built["A"] / "bank.h5", old)
    with h5py.File(old, "a") as h5:
        h5.attrs["dictionary"] = str(built["A"] / "dict.jsonl")
    assert open_bank(old).attrs["dictionary"] == str(built["A"] / "dict.jsonl")
    assert open_bank(built["A"] / "bank.h5").attrs["dictionary"] == str(built["A"] / "dict.jsonl")


def test_the_page_says_when_the_bank_comes_without_definitions():
    from defsent_cli.serve.page import page_html

    shown = page_html(True, False, False, "tiny", definitions=True)
    assert "with their definitions" in shown and "No definitions" not in shown
    missing = page_html(True, False, False, "tiny", definitions=False)
    assert "with their definitions" not in missing and "No definitions are shown" in missing
    assert "--dictionary" in missing


# ---------------------------------------------------------------- a checkpoint names no local folder


def no_local_folder(ckpt: Path, *more: Path) -> None:
    """Every file of the folder, as ``hf upload`` would publish it, names no home, temporary, repository or
    virtual-environment folder, nor ``more``."""
    prefixes = {str(Path.home()), tempfile.gettempdir(), str(REPO), sys.prefix, *map(str, more)}
    for path in sorted(p for p in ckpt.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8", errors="replace")
        found = [prefix for prefix in prefixes if prefix in text]
        assert not found, f"{path.relative_to(ckpt)} names {found}"


def test_a_trained_checkpoint_holds_no_absolute_local_path(built):
    """No local folder in the checkpoint, though every path was given absolute (the model's attached to its short
    option, -m/...); the paths recorded relative to it resolve to the files the run read."""
    from defsent_cli.formats.checkpoint import read_info

    ckpt = built["A"] / "ckpt"
    no_local_folder(ckpt, built["A"])
    raw = json.loads((ckpt / "defsent.json").read_text())
    assert raw["dictionary"] == "../dict.jsonl" and raw["bank"] == "../bank.h5"
    assert raw["bank_attrs"]["dictionary"] == "../dict.jsonl" and raw["provenance"]["cwd"] == ".."
    assert raw["provenance"]["command"][2] == "./dict.jsonl"  # relative to the working folder, as if typed so
    info = read_info(ckpt)  # read back: absolute, the files themselves
    assert Path(info["bank"]) == built["A"] / "bank.h5" and Path(info["dictionary"]) == built["A"] / "dict.jsonl"
    assert Path(info["base_model"]) == Path(built["model"]).resolve()
    assert Path(info["provenance"]["data"][0]["path"]) == built["A"] / "dict.jsonl"


def test_a_soup_names_its_models_relative_to_itself(built, mini):
    """A merge's every list of models (``models``, the soup's, the greedy log's), given absolute: relative to it."""
    a = built["A"]
    shutil.copytree(a / "ckpt", a / "ckpt2", dirs_exist_ok=True)
    for method in ("uniform", "greedy"):
        select = ["--select", "dev", "--data", mini] if method == "greedy" else []
        out = a / f"soup-{method}"
        done = defsent("merge", a / "ckpt", a / "ckpt2", "--method", method, *select, f"-o{out}", cwd=built["B"])
        assert done.returncode == 0, done.stderr
        no_local_folder(out, a)
        raw = json.loads((out / "defsent.json").read_text())
        assert raw["models"] and set(raw["soup"]) <= {"../ckpt", "../ckpt2"} and raw["soup"]
        if method == "greedy":
            assert {line["model"] for line in raw["greedy"]} == {"../ckpt", "../ckpt2"}


def test_a_hub_base_model_is_recorded_by_its_id_and_a_folder_far_away_by_its_name(tmp_path):
    """The bundled model (in the virtual environment's site-packages) is named by its Hub id; a file that shares
    no folder below the root with the checkpoint by its name alone (its SHA-256 is beside it)."""
    from defsent_cli.formats.origin import BUNDLED_HUB_ID, bundled_model
    from defsent_cli.formats.recorded import portable_info, resolved_info

    bundled = bundled_model()
    if bundled is None:
        pytest.skip("the bundled all-MiniLM-L6-v2 is not installed")
    far = "/nonexistent-root-folder/data/dict.jsonl"
    info = {"base_model": str(bundled), "dictionary": far, "provenance": {"cwd": "/", "command": ["defsent", far],
            "models": [{"path": str(bundled), "weights": {}}], "data": [{"path": far, "sha256": "0" * 64}]}}  # fmt: skip
    written = portable_info(info, tmp_path / "ckpt")
    assert written["base_model"] == BUNDLED_HUB_ID and written["provenance"]["models"][0]["path"] == BUNDLED_HUB_ID
    assert written["dictionary"] == "dict.jsonl" and written["provenance"]["data"][0]["path"] == "dict.jsonl"
    assert written["provenance"]["cwd"] is None and written["provenance"]["command"] == ["defsent", "dict.jsonl"]
    assert sys.prefix not in json.dumps(written) and "/nonexistent-root-folder" not in json.dumps(written)
    assert resolved_info(written, tmp_path / "ckpt")["base_model"] == BUNDLED_HUB_ID  # a name stays a name


def test_lookup_finds_the_bank_of_a_moved_checkpoint_and_warns_when_it_changed(built, tmp_path):
    import h5py

    moved = tmp_path / "moved"
    shutil.copytree(built["A"], moved)  # the checkpoint with its data, somewhere else
    query = ["lookup", "-m", moved / "ckpt", "-k", "1", "a baby pig", "--device", "cpu"]
    done = defsent(*query, cwd=built["B"])
    assert done.returncode == 0, done.stderr
    assert f"bank: {moved / 'bank.h5'}" in done.stderr and "warning" not in done.stderr
    with h5py.File(moved / "bank.h5", "a") as h5:  # the bank changes after training
        h5["vectors"][0] = h5["vectors"][0] * 2
    changed = defsent(*query, cwd=built["B"])
    assert changed.returncode == 0, changed.stderr
    warning = [line for line in changed.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and str(moved / "bank.h5") in warning[0] and "SHA-256" in warning[0], changed.stderr


def test_a_checkpoint_copied_by_select_best_still_names_its_data(built, tmp_path):
    """``select-best --link L --copy``: the copy records its paths again, relative to where it is."""
    from defsent_cli.evaluation.selection import link_winner
    from defsent_cli.formats.checkpoint import read_info

    (tmp_path / "deeper").mkdir()
    link = tmp_path / "deeper" / "best"
    link_winner(built["A"] / "ckpt", link, copy=True)
    raw = json.loads((link / "defsent.json").read_text())
    assert raw["bank"].startswith("../") and raw["bank"].endswith("/A/bank.h5")
    info = read_info(link)
    assert Path(info["bank"]) == built["A"] / "bank.h5" and Path(info["dictionary"]) == built["A"] / "dict.jsonl"


# ---------------------------------------------------------------- -m ./folder


@pytest.mark.parametrize("name", ["./missing-model", "../missing-model", "missing-model/"])
def test_a_model_given_as_a_path_that_is_not_there_is_no_such_folder(cli, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    result = cli("encode", "-m", name, "a sentence")
    assert result.exit_code == 2
    assert f"{name}: no such folder" in result.stderr and "Hugging Face" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    looked = cli("lookup", "-m", name, "--bank", tmp_path / "bank.h5", "a baby pig")
    assert looked.exit_code == 2 and f"{name}: no such folder" in looked.stderr, looked.stderr


def test_defsent_model_as_a_path_that_is_not_there_is_no_such_folder(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEFSENT_MODEL", "./gone")
    result = cli("encode", "a sentence")
    assert result.exit_code == 2 and "./gone: no such folder" in result.stderr, result.stderr
