"""--runtime onnx / --precision int8: export once, cache by weights, the same vectors as torch (fp32), close
ones (int8), torch for poolings the graph cannot serve; and embed-entries encoding each distinct text once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

TEXTS = ["a dog runs in the park", "the cat sleeps", "two men play chess on a long table in the park", "rain"]


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def bert(tmp_path, tiny_bert) -> Path:
    """A private copy of the tiny BERT (the graph cache is written into the model folder)."""
    return Path(shutil.copytree(tiny_bert, tmp_path / "bert"))


@pytest.fixture
def sents(tmp_path) -> Path:
    path = tmp_path / "sents.txt"
    path.write_text("\n".join(TEXTS * 5) + "\n")
    return path


def _encode(cli, model, sents, out, *extra) -> np.ndarray:
    result = cli("encode", "-m", model, "-i", sents, "-o", out, *extra)
    assert result.exit_code == 0, result.output
    return np.load(out)


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_fp32_graph_gives_the_torch_vectors(cli, family, tiny_bert, tiny_roberta, sents, tmp_path):
    model = Path(shutil.copytree(tiny_bert if family == "bert" else tiny_roberta, tmp_path / family))
    for pooling in ("mean", "cls", "max"):
        ref = _encode(cli, model, sents, tmp_path / f"t-{pooling}.npy", "--pooling", pooling, "-b", "3")
        got = _encode(
            cli, model, sents, tmp_path / f"o-{pooling}.npy", "--pooling", pooling, "-b", "3", "--runtime", "onnx"
        )
        assert np.abs(_unit(got) - _unit(ref)).max() < 1e-4
        assert not np.allclose(got, 0)


def test_int8_is_close_and_export_is_cached_by_weights(cli, bert, sents, tmp_path, library_log):
    fp32 = _encode(cli, bert, sents, tmp_path / "f.npy", "--runtime", "onnx")
    int8 = _encode(cli, bert, sents, tmp_path / "i.npy", "--runtime", "onnx", "--precision", "int8")
    cosine = np.sum(_unit(fp32) * _unit(int8), axis=1)
    assert cosine.min() > 0.95 and not np.allclose(fp32, int8)  # quantized: close, not the same
    graphs = sorted((bert / "onnx").glob("defsent-*.onnx"))
    assert [g.name.split("-")[1] for g in graphs] == ["fp32", "int8"]
    stamp = graphs[0].stat().st_mtime_ns
    library_log.clear()
    again = _encode(cli, bert, sents, tmp_path / "f2.npy", "--runtime", "onnx")
    np.testing.assert_array_equal(again, fp32)
    assert graphs[0].stat().st_mtime_ns == stamp and any("(cached" in text for _, text in library_log)
    # new weights: a new key, a new graph, the stale one removed, the new vectors follow the new weights
    from safetensors.torch import load_file, save_file

    weights = load_file(str(bert / "model.safetensors"))
    key = next(k for k in weights if k.endswith("layer.0.output.dense.weight"))
    weights[key] *= 1.5
    save_file(weights, str(bert / "model.safetensors"), metadata={"format": "pt"})
    changed = _encode(cli, bert, sents, tmp_path / "f3.npy", "--runtime", "onnx")
    ref = _encode(cli, bert, sents, tmp_path / "t3.npy")
    assert np.abs(_unit(changed) - _unit(ref)).max() < 1e-4 and not np.allclose(changed, fp32)
    now = sorted(g.name for g in (bert / "onnx").glob("defsent-fp32-*.onnx"))
    assert len(now) == 1 and now[0] != graphs[0].name


def test_read_only_model_folder_caches_elsewhere(cli, bert, sents, tmp_path, monkeypatch):
    from defsent_cli.encoder import onnx_runtime

    real = onnx_runtime._writable
    monkeypatch.setattr(onnx_runtime, "_writable", lambda folder: False if folder == bert / "onnx" else real(folder))
    monkeypatch.setenv("DEFSENT_CACHE", str(tmp_path / "cache"))
    _encode(cli, bert, sents, tmp_path / "f.npy", "--runtime", "onnx")
    assert not (bert / "onnx").exists() or not list((bert / "onnx").iterdir())
    assert len(list((tmp_path / "cache").rglob("defsent-fp32-*.onnx"))) == 1


def test_the_user_cache_is_defsent_cache_else_xdg_else_home(monkeypatch, tmp_path):
    from defsent_cli.encoder.onnx_runtime import user_cache

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DEFSENT_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert user_cache() == tmp_path / "home" / ".cache" / "defsent"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache() == tmp_path / "xdg" / "defsent"
    monkeypatch.setenv("DEFSENT_CACHE", str(tmp_path / "mine"))
    assert user_cache() == tmp_path / "mine"


def test_a_model_inside_an_installed_package_caches_in_the_user_cache(
    cli, tiny_bert, sents, tmp_path, monkeypatch, library_log
):
    """A pip-installed model (site-packages) is pip's folder: the graph goes to the user's cache, even though the
    folder could be written, and is found there the next time."""
    from defsent_cli.encoder.onnx_runtime import installed

    model = Path(shutil.copytree(tiny_bert, tmp_path / "lib" / "python3" / "site-packages" / "pkg" / "model"))
    assert installed(model) and not installed(tmp_path) and installed(tmp_path / "usr" / "dist-packages")
    monkeypatch.delenv("DEFSENT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    first = _encode(cli, model, sents, tmp_path / "f.npy", "--runtime", "onnx")
    assert not (model / "onnx").exists() and sorted(p.name for p in model.iterdir()) == sorted(
        p.name for p in tiny_bert.iterdir()
    )  # nothing written into the package
    graphs = list((tmp_path / "xdg" / "defsent" / "onnx").rglob("defsent-fp32-*.onnx"))
    assert len(graphs) == 1
    library_log.clear()
    again = _encode(cli, model, sents, tmp_path / "g.npy", "--runtime", "onnx")
    assert ("info", f"ONNX Runtime fp32 (cached {graphs[0]})") in library_log
    np.testing.assert_array_equal(again, first)


def test_poolings_the_graph_cannot_serve_run_on_torch_with_a_notice(cli, bert, sents, tmp_path):
    ref = _encode(cli, bert, sents, tmp_path / "t.npy", "--pooling", "first-last", "--device", "cpu")  # ONNX's
    result = cli(
        "encode", "-m", bert, "-i", sents, "-o", tmp_path / "o.npy", "--pooling", "first-last", "--runtime", "onnx"
    )
    assert result.exit_code == 0, result.output
    assert "running torch for it" in result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), ref)


def test_each_command_shows_its_notes_whatever_the_logger_level_was_left_at(cli, bert, sents, tmp_path):
    """Commands run one after another in one process (a notebook, a test session) each show their notes, even
    when something in between reset the ``defsent`` logger's level (as the library_log fixture does on exit)."""
    import logging

    args = ("encode", "-m", bert, "-i", sents, "--pooling", "first-last", "--runtime", "onnx")
    assert cli(*args, "-o", tmp_path / "a.npy").exit_code == 0
    logging.getLogger("defsent").setLevel(logging.NOTSET)
    result = cli(*args, "-o", tmp_path / "b.npy")
    assert result.exit_code == 0 and "running torch for it" in result.stderr


def test_runtime_choices_are_checked_first(cli, bert, sents, tmp_path):
    bad = cli("encode", "-m", bert, "-i", sents, "-o", tmp_path / "x.npy", "--runtime", "torch", "--precision", "int8")
    assert bad.exit_code == 2 and "--runtime onnx" in bad.stderr
    gpu = cli("encode", "-m", bert, "-i", sents, "-o", tmp_path / "x.npy", "--runtime", "onnx", "--device", "cuda")
    assert gpu.exit_code == 2 and "CPU" in gpu.stderr
    assert not (tmp_path / "x.npy").exists()


def test_results_and_commands_record_the_runtime(cli, bert, mini, tmp_path):
    out = tmp_path / "sts.json"
    args = [
        "eval-sts",
        "-m",
        bert,
        "--data",
        mini,
        "--tasks",
        "STS-B,SICK-R",
        "--runtime",
        "onnx",
        "--precision",
        "int8",
    ]
    result = cli(*args, "-o", out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["runtime"] == "onnx int8"


def test_embed_entries_encodes_each_distinct_definition_once(cli, bert, tmp_path, monkeypatch):
    """Entries sharing a gloss (as WordNet's lemmas of one synset do): each text is encoded once, and the bank
    is the one of encoding every (entry, definition) pair."""
    rows = [
        {"entry": "car", "definitions": ["a motor vehicle with four wheels", "a railway coach"]},
        {"entry": "auto", "definitions": ["a motor vehicle with four wheels"]},
        {"entry": "automobile", "definitions": ["a motor vehicle with four wheels", "the cat sleeps"]},
        {"entry": "kitty", "definitions": ["the cat sleeps"]},
        {"entry": "rail car", "definitions": ["a railway coach", "a dog runs in the park"]},
    ]
    dictionary = tmp_path / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from defsent_cli.encoder import encode as encode_module

    seen: list[int] = []
    original = encode_module.encode_ids

    def counting(loaded, id_lists, *args, **kwargs):
        seen.append(len(id_lists))
        return original(loaded, id_lists, *args, **kwargs)

    monkeypatch.setattr(encode_module, "encode_ids", counting)  # what the (sharded) bank build calls
    bank_path = tmp_path / "bank.h5"
    result = cli("embed-entries", dictionary, "-m", bert, "-o", bank_path, "--kind", "AMP", "-b", "2")
    assert result.exit_code == 0, result.output
    assert sum(seen) == 4  # 4 distinct texts of 8 definitions
    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model
    from defsent_cli.formats.bank import read_bank

    bank = read_bank(bank_path)
    loaded = load_model(bert, "cpu")
    for i, row in enumerate(rows):  # every pair encoded on its own, then averaged
        expected = encode(row["definitions"], loaded, "mean", batch_size=1, show_progress_bar=False).mean(axis=0)
        np.testing.assert_allclose(bank.vectors[i], expected, atol=1e-5)
    assert bank.counts.tolist() == [2, 1, 2, 1, 2]
    # the same bank from the ONNX graph
    onnx_bank = tmp_path / "bank-onnx.h5"
    assert (
        cli("embed-entries", dictionary, "-m", bert, "-o", onnx_bank, "--kind", "AMP", "--runtime", "onnx").exit_code
        == 0
    )
    np.testing.assert_allclose(read_bank(onnx_bank).vectors, bank.vectors, atol=1e-5)


def test_lookup_and_eval_dict_on_the_graph(cli, bert, tiny_dict, tmp_path):
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", bert, "-o", bank).exit_code == 0
    ckpt = tmp_path / "ckpt"
    assert cli("train", tiny_dict, "--bank", bank, "-m", bert, "-o", ckpt, "--max-steps", "2", "-b", "2").exit_code == 0
    torch_hits = cli("lookup", "-m", ckpt, "--bank", bank, "--json", "-k", "5", "an animal that barks")
    onnx_hits = cli(
        "lookup", "-m", ckpt, "--bank", bank, "--json", "-k", "5", "--runtime", "onnx", "an animal that barks"
    )
    assert onnx_hits.exit_code == 0, onnx_hits.output
    a, b = json.loads(torch_hits.stdout)["results"], json.loads(onnx_hits.stdout)["results"]
    assert [h["entry"] for h in a] == [h["entry"] for h in b]
    np.testing.assert_allclose([h["score"] for h in a], [h["score"] for h in b], atol=1e-3)


def test_precision_auto_means_the_same_for_every_command(cli, bert, sents, tmp_path):
    """``--precision auto`` is serve's meaning everywhere (encoder/precision.choose_runtime): on this CPU, with ONNX
    Runtime installed, int8 on ONNX Runtime; ``--runtime torch --precision auto`` fp32 on torch; ``--precision
    int8`` alone picks its runtime; the default stays torch fp32."""
    from defsent_cli.encoder.precision import choose_runtime

    assert choose_runtime("auto", "auto", "cpu") == ("onnx", "int8")
    assert choose_runtime("torch", "auto", "cpu") == ("torch", "fp32")
    assert choose_runtime("auto", "int8", "cpu") == ("onnx", "int8")
    assert choose_runtime("auto", "fp32", "cpu") == ("torch", "fp32")
    assert choose_runtime("auto", "bf16", "cpu") == ("torch", "bf16")
    assert choose_runtime("auto", "auto", "cuda") == ("torch", "fp16")
    auto = cli("encode", "-m", bert, "-i", sents, "-o", tmp_path / "auto.npy", "--precision", "auto")
    assert auto.exit_code == 0, auto.output
    assert "int8" in auto.stderr
    int8 = _encode(cli, bert, sents, tmp_path / "i.npy", "--runtime", "onnx", "--precision", "int8")
    np.testing.assert_array_equal(np.load(tmp_path / "auto.npy"), int8)
    torch_auto = _encode(cli, bert, sents, tmp_path / "t.npy", "--runtime", "torch", "--precision", "auto")
    default = _encode(cli, bert, sents, tmp_path / "d.npy")
    np.testing.assert_array_equal(torch_auto, default)
    for command in (["index", sents, "-o", tmp_path / "x.h5"],):
        done = cli(*command, "-m", bert, "--precision", "auto")
        assert done.exit_code == 0 and "onnx int8" in done.stderr, done.output
