"""``defsent index --append`` (issue 81, item 4): new texts added to an existing index as a user would add them, the
real CLI on real files. The grown index equals one built from all the texts at once, row for row (its ids
continued, its checksums taken again block by block, exact search's results the same), and its HNSW graph, flat or
sq8, grown rather than rebuilt, finds the new rows. Whatever is refused (another model, pooling, width or token
limit; an id the index holds; a file that is no index; a damaged index or graph; a model that gives NaN halfway)
is exit 2 and one ``error:`` line naming the user's path, and leaves the index byte for byte as it was, with no
temporary file beside it. The file keeps the mode the user's umask gives."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import stat
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import run_bounded
from test_integrity import nan_model  # noqa: F401 - tiny_st whose "fish" encodes to NaN

CPU = ["--runtime", "torch", "--precision", "fp32", "--device", "cpu"]
WORDS = ["red", "green", "blue", "cat", "dog", "fish", "runs", "sleeps", "eats", "big", "small", "old", "new"]
FIRST, ADDED = 300, 100
GRAPHS = {"no graph": [], "flat graph": ["--ann"], "sq8 graph": ["--ann-compress", "sq8"]}


def texts(n: int, seed: int, without: str = "") -> list[str]:
    rng = np.random.default_rng(seed)
    words = [w for w in WORDS if w != without]
    return [" ".join(rng.choice(words, size=rng.integers(3, 7))) for _ in range(n)]


def lines(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(t + "\n" for t in rows))
    return path


def one_error(result, path: Path | str, says: str) -> str:
    """Exit 2 and one ``error:`` line, the last, naming ``path`` and saying ``says``; no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.stdout[-500:], result.stderr)
    errors = [line for line in result.stderr.strip().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and result.stderr.strip().splitlines()[-1] == errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert str(path) in errors[0] and says in errors[0], errors[0]
    return errors[0]


def fingerprint(index: Path) -> tuple[str, int, list[str]]:
    """The file's SHA-256 and mode, and what else its folder holds (a temporary file left behind would show)."""
    return (
        hashlib.sha256(index.read_bytes()).hexdigest(),
        stat.S_IMODE(index.stat().st_mode),
        sorted(p.name for p in index.parent.iterdir()),
    )


def refused(cli, index: Path, path: Path | str, says: str, *args) -> str:
    """``index ARGS --append -o INDEX`` is refused and leaves the index (and its folder) as they were."""
    before = fingerprint(index)
    said = one_error(cli("index", *args, "--append", "-o", index, *CPU), path, says)
    assert fingerprint(index) == before
    return said


def hits(cli, index: Path, queries: list[str], *extra: str) -> list[dict]:
    done = cli("search", "--index", index, "-k", "10", "--json", *extra, *CPU, input="\n".join(queries) + "\n")
    assert done.exit_code == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("append-corpus")
    rows = texts(FIRST + ADDED, 0)
    return {
        "rows": rows,
        "first": lines(folder / "first.txt", rows[:FIRST]),
        "more": lines(folder / "more.txt", rows[FIRST:]),
        "all": lines(folder / "all.txt", rows),
    }


def block_digests(path: Path, block: int) -> tuple[list[str], list[str]]:
    """(the digests the index records, those of its vectors computed here, ``block`` rows at a time)."""
    with h5py.File(path, "r") as h5:
        rows = np.ascontiguousarray(h5["vectors"][()], dtype="<f4")
        recorded = [d.decode() for d in h5["vectors_sha256"][()]]
        assert h5.attrs["vectors_block_rows"] == block and h5.attrs["rows"] == len(rows)
    return recorded, [hashlib.sha256(rows[i : i + block]).hexdigest() for i in range(0, len(rows), block)]


@pytest.mark.parametrize("graph", list(GRAPHS))
def test_an_appended_index_equals_one_built_at_once(cli, tiny_st, corpus, tmp_path, monkeypatch, graph):
    """Blocks of 64 rows: the 300 rows end inside a block, which the append completes, adding two more."""
    if graph != "no graph":
        pytest.importorskip("faiss", reason="FAISS (pip install 'defsent-cli[ann]') builds the graph")
    from defsent_cli.formats import index as index_format

    monkeypatch.setattr(index_format, "BLOCK_ROWS", 64)
    grown, whole = tmp_path / "grown.h5", tmp_path / "whole.h5"
    for source, out in ((corpus["first"], grown), (corpus["all"], whole)):
        done = cli("index", source, "-m", tiny_st, "-o", out, *GRAPHS[graph], *CPU)
        assert done.exit_code == 0, done.stderr
    done = cli("index", corpus["more"], "--append", "-o", grown, *CPU)
    assert done.exit_code == 0, done.stderr
    assert f"added {ADDED} texts to {grown}: now {FIRST + ADDED} " in done.stderr
    assert f"the one {grown} was built with" in done.stderr  # no -m: the index's model

    with h5py.File(grown, "r") as a, h5py.File(whole, "r") as b:
        assert a["ids"][()].tolist() == b["ids"][()].tolist()  # line numbers continued: 301..400
        assert a["texts"][()].tolist() == b["texts"][()].tolist()
        np.testing.assert_allclose(a["vectors"][()], b["vectors"][()], atol=1e-6)  # batches differ: float noise
        for key in ("format", "encoder", "pooling", "max_length", "runtime", "normalized", "ann", "dim"):
            assert a.attrs.get(key) == b.attrs.get(key), key
        assert a.attrs["source"] == str(corpus["first"])
        appended = json.loads(a.attrs["appended"])
        assert [(e["source"], e["first_row"], e["rows"]) for e in appended] == [(str(corpus["more"]), 301, ADDED)]
        if graph != "no graph":
            settings = dict(a["ann_hnsw"].attrs)
            if graph == "sq8 graph":  # grown, not rebuilt: the quantiser's ranges are still those of the first rows
                assert settings.pop("trained_rows") == FIRST and b["ann_hnsw"].attrs["trained_rows"] == FIRST + ADDED
            assert settings == {k: v for k, v in b["ann_hnsw"].attrs.items() if k != "trained_rows"}
            stored = np.ascontiguousarray(a["ann_hnsw"][()])
            assert a.attrs["ann_hnsw_sha256"] == hashlib.sha256(stored).hexdigest()
    recorded, computed = block_digests(grown, 64)
    assert recorded == computed and len(recorded) == 7

    queries = texts(20, 5)
    exact = [[(h["id"], h["text"]) for h in row["results"]] for row in hits(cli, grown, queries, "--exact")]
    assert exact == [[(h["id"], h["text"]) for h in row["results"]] for row in hits(cli, whole, queries, "--exact")]
    if graph == "no graph":
        return
    new = corpus["rows"][FIRST:]
    found = hits(cli, grown, new)  # through the grown graph: each new text finds its own new row
    assert {row["search"] for row in found} == {"hnsw"}
    own = [FIRST + 1 + i in [h["id"] for h in row["results"]] for i, row in enumerate(found)]
    assert np.mean(own) >= 0.95, own
    truth = hits(cli, grown, new, "--exact")
    recall = np.mean(
        [
            len({h["id"] for h in a["results"]} & {h["id"] for h in e["results"]}) / 10
            for a, e in zip(found, truth, strict=True)
        ]
    )
    assert recall >= 0.9, recall


@pytest.fixture(scope="module")
def base(tmp_path_factory, tiny_st, corpus) -> dict:
    """An index of the first texts with a flat graph, one without, and one of JSONL with string ids."""
    from typer.testing import CliRunner

    from defsent_cli.cli import app

    folder = tmp_path_factory.mktemp("append-base")
    docs = folder / "docs.jsonl"
    docs.write_text("".join(json.dumps({"t": t, "id": f"a{i}"}) + "\n" for i, t in enumerate(corpus["rows"][:50])))
    built = {"folder": folder, "docs": docs}
    runner = CliRunner()
    for name, source, extra in (
        ("plain", corpus["first"], []),
        ("ann", corpus["first"], ["--ann"]),
        ("docs", docs, ["--field", "t", "--id-field", "id"]),
    ):
        if name == "ann" and not _has_faiss():
            continue
        built[name] = folder / f"{name}.h5"
        done = runner.invoke(app, ["index", str(source), "-m", str(tiny_st), "-o", str(built[name]), *CPU, *extra])
        assert done.exit_code == 0, done.stderr
    return built


def _has_faiss() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def copy(base: dict, name: str, tmp_path: Path) -> Path:
    if name not in base:
        pytest.skip("FAISS (pip install 'defsent-cli[ann]') builds the graph")
    target = tmp_path / "index" / f"{name}.h5"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(base[name], target)
    return target


def test_settings_other_than_the_indexs_are_refused(cli, base, corpus, tiny_bert, tmp_path):
    index, more = copy(base, "plain", tmp_path), corpus["more"]
    refused(cli, index, index, "not --pooling cls", more, "--pooling", "cls")
    refused(cli, index, index, "not --dims 16", more, "--dims", "16")
    refused(cli, index, index, "cut at 64 tokens, not --max-length 20", more, "--max-length", "20")
    refused(cli, index, index, f"not {tiny_bert}: new rows must be encoded by the same model", more, "-m", tiny_bert)
    refused(cli, index, index, "has no HNSW graph, and --append adds none", more, "--ann")
    flat = copy(base, "ann", tmp_path)
    refused(cli, flat, flat, "is faiss-hnsw-flat, not faiss-hnsw-sq8", more, "--ann-compress", "sq8")


def test_ids_the_index_holds_are_refused_naming_the_line_and_the_index(cli, base, tmp_path):
    index = copy(base, "docs", tmp_path)
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text("".join(json.dumps({"t": f"red cat {i}", "id": f"b{i}"}) + "\n" for i in range(5)))
    done = cli("index", fresh, "--field", "t", "--id-field", "id", "--append", "-o", index, *CPU)
    assert done.exit_code == 0, done.stderr
    said = refused(cli, index, f"{fresh}:1", "is already the id of row 51", fresh, "--field", "t", "--id-field", "id")
    assert str(index) in said and '"b0"' in said
    clash = tmp_path / "clash.jsonl"
    clash.write_text(json.dumps({"t": "a new text", "id": "new"}) + "\n" + json.dumps({"t": "x", "id": "a7"}) + "\n")
    refused(cli, index, f"{clash}:2", "is already the id of row 8", clash, "--field", "t", "--id-field", "id")
    with h5py.File(index, "r") as h5:
        assert [json.loads(i) for i in h5["ids"][-5:]] == [f"b{i}" for i in range(5)]


def test_a_file_that_is_no_index_is_refused(cli, base, corpus, tmp_path):
    more = corpus["more"]
    missing = tmp_path / "missing.h5"
    one_error(cli("index", more, "--append", "-o", missing, *CPU), missing, "no such index file")
    assert not missing.exists()
    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(b"not HDF5 at all\n" * 10)
    refused(cli, garbage, garbage, "cannot read HDF5", more)
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as h5:
        h5.attrs["format"] = "defsent-bank/1"
        h5["vectors"] = np.zeros((2, 4), dtype=np.float32)
    refused(cli, other, other, "not a defsent index", more)


def overwrite(path: Path, dataset: str, offset: int, data: bytes) -> None:
    with h5py.File(path, "r") as h5:
        start = h5[dataset].id.get_offset()
    with open(path, "r+b") as fh:
        fh.seek(start + offset)
        fh.write(data)


def test_a_damaged_index_is_not_appended_to(cli, base, corpus, tmp_path):
    more = corpus["more"]
    index = copy(base, "plain", tmp_path)
    with h5py.File(index, "r") as h5:
        other = np.ascontiguousarray(h5["vectors"][50], dtype="<f4").tobytes()
    overwrite(index, "vectors", 4 * 32 * 3, other)  # row 4 holds row 51's unit vector: only the checksum tells
    refused(cli, index, index, "do not match the SHA-256 recorded when it was built", more)
    graph = copy(base, "ann", tmp_path)
    with h5py.File(graph, "r") as h5:
        size = h5["ann_hnsw"].shape[0]
    overwrite(graph, "ann_hnsw", size - 4 * 32 * 10, bytes(4 * 32))  # a stored vector of the graph zeroed
    refused(cli, graph, graph, "its HNSW graph does not match the SHA-256", more)
    unverifiable = copy(base, "plain", tmp_path / "old")
    with h5py.File(unverifiable, "r+") as h5:
        for name in ("rows", "dim", "vectors_block_rows"):
            del h5.attrs[name]
        del h5["vectors_sha256"]
    refused(cli, unverifiable, unverifiable, "records no checksums", more)


@pytest.mark.parametrize("graph", ["no graph", "flat graph"])
def test_an_append_that_fails_halfway_leaves_the_index_as_it_was(cli, nan_model, tmp_path, graph):  # noqa: F811
    """The old rows are copied before the new ones are encoded: a new text whose vector is NaN fails the append
    after the new file is half written; the index is untouched and still searched."""
    if graph != "no graph":
        pytest.importorskip("faiss", reason="FAISS (pip install 'defsent-cli[ann]') builds the graph")
    folder = tmp_path / "index"
    folder.mkdir()
    index = folder / "fishless.h5"
    first = lines(tmp_path / "a.txt", texts(80, 1, "fish"))
    done = cli("index", first, "-m", nan_model, "-o", index, *GRAPHS[graph], *CPU)
    assert done.exit_code == 0, done.stderr
    more = lines(tmp_path / "more.txt", ["a red cat", "a big fish eats", "an old dog"])
    refused(cli, index, f"{more}:2", "NaN", more)
    assert len(hits(cli, index, ["a red cat"])[0]["results"]) == 10


@pytest.mark.parametrize("mask", [0o022, 0o027], ids=["umask-022", "umask-027"])
def test_the_grown_index_has_the_mode_of_the_users_umask(tiny_st, corpus, tmp_path, mask):
    index = tmp_path / "notes.h5"
    defsent = [sys.executable, "-m", "defsent_cli"]
    commands = [
        [*defsent, "index", corpus["first"], "-m", tiny_st, "-o", index, *CPU, "-q"],
        [*defsent, "index", corpus["more"], "--append", "-o", index, *CPU, "-q"],
    ]
    script = " && ".join([f"umask {mask:03o}", *(shlex.join(map(str, c)) for c in commands)])
    env = {**os.environ, "DEFSENT_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    done = run_bounded(["sh", "-c", script], 180, capture_output=True, env=env)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    assert stat.S_IMODE(index.stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.h5"]
    with h5py.File(index, "r") as h5:
        assert h5.attrs["rows"] == FIRST + ADDED and len(h5["texts"]) == FIRST + ADDED
