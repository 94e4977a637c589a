"""An index that proves it is intact (issue 76, item 3): the real CLI on damaged files. Bytes overwritten inside
the vectors, a row swapped for another unit vector, a zeroed block of the HNSW graph's stored vectors, a graph
from another index, a NaN row, a header that disagrees with the datasets: each is exit 2 and one ``error:`` line
naming the file, never a traceback and never a score. An index written before the checks still opens (with a
note). A model that gives NaN refuses to write an index, a bank or encode's JSON, naming the input line; every
JSON output parses with a strict parser. And the options of search that cannot take effect are warned about."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

CPU = ["--runtime", "torch", "--precision", "fp32", "--device", "cpu"]
WORDS = ["red", "green", "blue", "cat", "dog", "fish", "runs", "sleeps", "eats", "big", "small", "old", "new"]


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(3, 7))) for _ in range(n)]


def strict_json(line: str):
    """``json.loads`` as any parser but Python's: ``NaN`` and ``Infinity`` are not JSON."""

    def refuse(constant):
        raise AssertionError(f"{constant} in JSON output: {line[:200]}")

    return json.loads(line, parse_constant=refuse)


def one_error(result, path: Path | str | None = None, says: str = "") -> str:
    """Exit 2, the last stderr line the only ``error:`` line, naming ``path``; no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.stdout[-500:], result.stderr)
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    assert "Traceback" not in result.stderr
    if path is not None:
        assert str(path) in errors[0], errors[0]
    assert says in errors[0], errors[0]
    return errors[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_st) -> dict:
    """Two indexes of the same 200 texts (one with an HNSW graph where FAISS is there), and a third of other texts."""
    from typer.testing import CliRunner

    from defsent_cli.cli import app

    folder = tmp_path_factory.mktemp("integrity")
    corpus, other = folder / "corpus.txt", folder / "other.txt"
    corpus.write_text("".join(t + "\n" for t in texts(200, 0)))
    other.write_text("".join(t + "\n" for t in texts(200, 1)))
    runner = CliRunner()

    def index(source: Path, name: str, *extra: str) -> Path:
        out = folder / name
        done = runner.invoke(app, ["index", str(source), "-m", str(tiny_st), "-o", str(out), *CPU, "-q", *extra])
        assert done.exit_code == 0, done.stderr
        return out

    found = {"model": tiny_st, "folder": folder, "corpus": corpus, "plain": index(corpus, "plain.h5")}
    try:
        import faiss  # noqa: F401
    except ImportError:
        return found
    found["ann"] = index(corpus, "ann.h5", "--ann")
    found["other_ann"] = index(other, "other-ann.h5", "--ann")
    longer = folder / "longer.txt"
    longer.write_text(corpus.read_text() + "".join(t + "\n" for t in texts(30, 2)))
    found["longer_ann"] = index(longer, "longer-ann.h5", "--ann")
    found["sq8"] = index(corpus, "sq8.h5", "--ann-compress", "sq8")
    found["other_sq8"] = index(other, "other-sq8.h5", "--ann-compress", "sq8")
    return found


def copy(built, name: str, tmp_path) -> Path:
    target = tmp_path / f"damaged-{name}"
    shutil.copy(built[name], target)
    return target


def search(cli, index: Path, *queries: str, extra: tuple = ()):
    return cli("search", "--index", index, "-k", "3", "--json", *extra, *queries, *CPU)


def first_hits(result) -> list:
    assert result.exit_code == 0, result.stderr
    return [strict_json(line)["results"][0]["text"] for line in result.stdout.splitlines()]


def overwrite(path: Path, dataset: str, offset: int, data: bytes) -> None:
    """``data`` written over the bytes of ``dataset`` (contiguous in the file) from ``offset``, as a disk would."""
    with h5py.File(path, "r") as h5:
        start = h5[dataset].id.get_offset()
        assert start is not None and offset + len(data) <= h5[dataset].id.get_storage_size()
    with open(path, "r+b") as fh:
        fh.seek(start + offset)
        fh.write(data)


def needs(built, name: str) -> Path:
    if name not in built:
        pytest.skip("FAISS (pip install 'defsent-cli[ann]') builds the graph")
    return built[name]


# ---------------------------------------------------------------------------- the vectors


def test_an_index_records_its_size_and_checksums(built):
    import hashlib

    with h5py.File(built["plain"], "r") as h5:
        assert h5.attrs["rows"] == 200 and h5.attrs["dim"] == 32 and h5.attrs["vectors_block_rows"] == 65536
        rows = np.ascontiguousarray(h5["vectors"][()], dtype="<f4")
        assert [d.decode() for d in h5["vectors_sha256"][()]] == [hashlib.sha256(rows).hexdigest()]


def test_bytes_overwritten_inside_the_vectors_are_an_error_not_a_score(cli, built, tmp_path):
    index = copy(built, "plain", tmp_path)
    overwrite(index, "vectors", 4 * 32 * 17, b"\x7f\x7f\x7f\x7f" * 512)  # rows 18-33 become ~3.4e38
    one_error(search(cli, index, "red cat"), index, "rebuild it with defsent index")


def test_a_row_swapped_for_another_unit_vector_fails_the_checksum(cli, built, tmp_path):
    index = copy(built, "plain", tmp_path)
    with h5py.File(index, "r") as h5:
        other = np.ascontiguousarray(h5["vectors"][50], dtype="<f4").tobytes()
    overwrite(index, "vectors", 4 * 32 * 3, other)  # row 4 holds row 51's unit vector: every length still 1
    one_error(search(cli, index, "red cat"), index, "SHA-256")


def test_a_nan_row_is_an_error_naming_the_file(cli, built, tmp_path):
    index = copy(built, "plain", tmp_path)
    with h5py.File(index, "r+") as h5:
        h5["vectors"][7] = np.nan
    one_error(search(cli, index, "red cat"), index, "row 8")


def test_a_header_that_disagrees_with_the_datasets_is_an_error(cli, built, tmp_path):
    index = copy(built, "plain", tmp_path)
    with h5py.File(index, "r+") as h5:
        h5.attrs["rows"] = 199
    one_error(search(cli, index, "red cat"), index, "199 rows")
    index = copy(built, "plain", tmp_path)
    with h5py.File(index, "r+") as h5:
        del h5["vectors_sha256"]
    one_error(search(cli, index, "red cat"), index, "checksums")


@pytest.mark.parametrize("dataset", ["vectors", "texts", "ids", "vectors_sha256"])
def test_a_dataset_replaced_by_a_group_is_an_error_naming_the_file(cli, built, tmp_path, dataset):
    index = copy(built, "plain", tmp_path)
    with h5py.File(index, "r+") as h5:
        del h5[dataset]
        h5.create_group(dataset)
    one_error(search(cli, index, "red cat"), index, f"{dataset!r} is not a dataset")


def test_texts_that_are_no_strings_and_a_lost_block_size_are_named(cli, built, tmp_path):
    index = copy(built, "plain", tmp_path)
    with h5py.File(index, "r+") as h5:
        del h5["texts"]
        h5["texts"] = np.arange(200)
    one_error(search(cli, index, "red cat"), index, "texts must be strings")
    index = copy(built, "plain", tmp_path)
    with h5py.File(index, "r+") as h5:
        del h5.attrs["vectors_block_rows"]
    one_error(search(cli, index, "red cat"), index, "vectors_block_rows")


def test_a_bank_damaged_in_its_structure_is_an_error_naming_the_file(cli, built, tmp_path):
    dictionary = tmp_path / "dict.jsonl"
    words = ["piglet", "giraffe", "joy"]
    dictionary.write_text(
        "".join(f'{{"entry": "{w}", "definitions": ["a {w}"], "meta": [{{"pos": "noun"}}]}}\n' for w in words)
    )
    bank = tmp_path / "bank.h5"
    done = cli("embed-entries", dictionary, "-m", built["model"], "--pool", "mean", "-o", bank, *CPU)
    assert done.exit_code == 0, done.stderr

    def damaged(change) -> Path:
        target = tmp_path / f"bank-{len(list(tmp_path.glob('bank-*')))}.h5"
        shutil.copy(bank, target)
        with h5py.File(target, "r+") as h5:
            change(h5)
        return target

    def lookup(path):
        return cli("lookup", "--bank", path, "-m", built["model"], "a baby pig", *CPU)

    def regroup(name):
        def change(h5):
            del h5[name]
            h5.create_group(name)

        return change

    def replace(name, data):
        def change(h5):
            del h5[name]
            h5[name] = data

        return change

    for name in ("vectors", "entries", "counts", "pos"):
        target = damaged(regroup(name))
        one_error(lookup(target), target, f"{name!r} is not a dataset")
    target = damaged(replace("entries", np.arange(3)))
    one_error(lookup(target), target, "entries must be strings")
    target = damaged(replace("pos", np.array([b"noun"])))
    one_error(lookup(target), target, "parts of speech for 3 entries")

    # a damaged value in a row (finite, but no encoder's): refused by every reader, whatever the similarity
    def huge(h5):
        h5["vectors"][1, 5] = 1e38

    target = damaged(huge)
    for similarity in ("cosine", "dot"):
        one_error(cli("lookup", "--bank", target, "-m", built["model"], "--similarity", similarity, "a baby pig",
                      *CPU), target, "overflows float32")  # fmt: skip
    done = cli("eval-dict", dictionary, "--split", "train", "--bank", target, "-m", built["model"], *CPU)
    one_error(done, target, "overflows float32")
    # read as float16 (train --bank-dtype float16) the row becomes infinite: still damaged, not "the bank is fine"
    args = ["train", dictionary, "--bank", target, "-m", built["model"], "--bank-dtype", "float16", "--device", "cpu"]
    error = one_error(cli(*args, "-o", tmp_path / "t16"), target, "overflows float32")
    assert "is fine" not in error
    # entry names swapped in the file: the dictionary it was built from (there, unchanged) says so, not a hit
    target = damaged(replace("entries", np.array([b"giraffe", b"piglet", b"joy"], dtype=object)))
    one_error(lookup(target), target, "the bank is damaged")
    given = cli("lookup", "--bank", target, "--dictionary", dictionary, "-m", built["model"], "a baby pig", *CPU)
    one_error(given, target, "the bank is damaged")
    assert lookup(bank).exit_code == 0
    # a bank that records no checksum of its dictionary: said so, not that the dictionary changed

    def unsummed(h5):
        del h5.attrs["dictionary_sha256"]

    target = damaged(unsummed)
    done = lookup(target)
    assert done.exit_code == 0 and "records no SHA-256 of" in done.stderr and "changed since" not in done.stderr


def test_a_graph_added_without_its_checksum_says_so_in_one_sentence(cli, built, tmp_path):
    index = copy(built, "ann", tmp_path) if "ann" in built else needs(built, "ann")
    with h5py.File(index, "r+") as h5:
        del h5.attrs["ann_hnsw_sha256"]
    error = one_error(search(cli, index, "red cat"), index, "has no SHA-256 recorded beside it")
    assert "recorded when the index was built" not in error


def old(path: Path) -> Path:
    """The index as written before it recorded its size and checksums."""
    with h5py.File(path, "r+") as h5:
        for name in ("rows", "dim", "vectors_block_rows", "ann_hnsw_sha256"):
            if name in h5.attrs:
                del h5.attrs[name]
        if "vectors_sha256" in h5:
            del h5["vectors_sha256"]
    return path


def test_an_index_written_before_the_checks_opens_with_a_note_and_its_rows_still_checked(cli, built, tmp_path):
    index = old(copy(built, "plain", tmp_path))
    done = search(cli, index, "red cat")
    assert first_hits(done) and "cannot be verified" in done.stderr
    with h5py.File(index, "r+") as h5:
        h5["vectors"][7] = np.inf
    one_error(search(cli, index, "red cat"), index, "not a unit vector")


def test_the_blocks_are_checked_as_exact_search_reads_them(tmp_path, monkeypatch):
    """The library on its own, with blocks of 64 rows: a damaged block fails when a read reaches it, naming its
    rows; a read of other blocks goes through; rows read outside the block's range are checked all the same."""
    from defsent_cli.errors import DefsentError
    from defsent_cli.formats import index as index_format

    monkeypatch.setattr(index_format, "BLOCK_ROWS", 64)
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((300, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    path = tmp_path / "blocks.h5"
    with index_format.index_output(path, 300, 16, 3000) as writer:
        for start in range(0, 300, 70):  # written in chunks that straddle the blocks
            part = rows[start : start + 70]
            writer.write(start, list(range(start, start + len(part))), [f"t{i}" for i in range(len(part))], part)
        writer.attrs["format"] = index_format.INDEX_FORMAT
    opened = index_format.open_index(path)
    assert opened.verifiable and len(opened.digests) == 5 and opened.block_rows == 64
    np.testing.assert_array_equal(np.concatenate([r for _, r in opened.iter_rows(50)]), rows)
    with h5py.File(path, "r+") as h5:
        h5["vectors"][200] = rows[10]  # still a unit vector: only the checksum of rows 193-256 tells
    damaged = index_format.open_index(path)
    assert [first for first, _ in damaged.iter_rows(50, 0, 150)] == [0, 50, 64, 114, 128]
    with pytest.raises(DefsentError, match=r"rows 193-256 of the index do not match"):
        list(damaged.iter_rows(50, 190, 195))
    with pytest.raises(ValueError, match="NaN or infinite"):
        with index_format.index_output(tmp_path / "nan.h5", 2, 16, 10) as writer:
            writer.write(0, [1, 2], ["a", "b"], np.full((2, 16), np.nan, dtype=np.float32))
    assert not (tmp_path / "nan.h5").exists()


# ---------------------------------------------------------------------------- the HNSW graph


def graph_storage(path: Path) -> tuple[int, int]:
    """(offset of the graph's stored vectors inside the dataset ann_hnsw, bytes per row): FAISS writes an
    IndexHNSWFlat's rows last, n x d float32."""
    with h5py.File(path, "r") as h5:
        size = h5["ann_hnsw"].shape[0]
        n, d = h5["vectors"].shape
        vectors = np.ascontiguousarray(h5["vectors"][()], dtype="<f4").tobytes()
        stored = h5["ann_hnsw"][size - n * d * 4 :].tobytes()
    assert stored == vectors  # the layout this test relies on
    return size - n * d * 4, d * 4


def test_a_zeroed_block_of_the_graphs_vectors_is_an_error_and_exact_search_still_right(cli, built, tmp_path):
    index = copy(built, "ann", tmp_path)
    query = built["corpus"].read_text().splitlines()[120]
    assert first_hits(search(cli, index, query))[0] == query
    start, width = graph_storage(index)
    overwrite(index, "ann_hnsw", start + 112 * width, bytes(16 * width))  # rows 113-128, the query's own among them
    one_error(search(cli, index, query), index, "--exact")
    assert first_hits(search(cli, index, query, extra=("--exact",)))[0] == query


def test_a_graph_from_another_index_is_an_error_naming_the_file(cli, built, tmp_path):
    for donor, says in (("other_ann", "SHA-256"), ("longer_ann", "SHA-256")):
        index = copy(built, "ann", tmp_path)
        with h5py.File(needs(built, donor), "r") as source, h5py.File(index, "r+") as h5:
            del h5["ann_hnsw"]
            source.copy("ann_hnsw", h5)
        one_error(search(cli, index, "red cat"), index, says)


def test_an_old_index_checks_its_graph_against_its_rows(cli, built, tmp_path):
    """Without a recorded checksum, the graph's size and a sample of its vectors are checked against the rows."""
    for donor, says in (("longer_ann", "230 rows"), ("other_ann", "differs from the index's")):
        index = old(copy(built, "ann", tmp_path))
        with h5py.File(needs(built, donor), "r") as source, h5py.File(index, "r+") as h5:
            del h5["ann_hnsw"]
            source.copy("ann_hnsw", h5)
        one_error(search(cli, index, "red cat"), index, says)
    assert first_hits(search(cli, old(copy(built, "ann", tmp_path)), "red cat"))


def sq8_codes(path: Path) -> tuple[int, int]:
    """(offset of the 8-bit codes of the rows inside the dataset ann_hnsw, bytes per row): FAISS writes an
    IndexHNSWSQ's storage last, its codes, n x d bytes, at its end."""
    with h5py.File(path, "r") as h5:
        n, d = h5["vectors"].shape
        return h5["ann_hnsw"].shape[0] - n * d, d


def test_a_changed_byte_of_an_sq8_graph_is_an_error_and_exact_search_still_right(cli, built, tmp_path):
    needs(built, "sq8")
    index = copy(built, "sq8", tmp_path)
    query = built["corpus"].read_text().splitlines()[120]
    assert first_hits(search(cli, index, query))[0] == query
    start, width = sq8_codes(index)
    with h5py.File(index, "r") as h5:
        code = int(h5["ann_hnsw"][start + 120 * width])
    overwrite(index, "ann_hnsw", start + 120 * width, bytes([(code + 128) % 256]))  # one byte of the query's row
    one_error(search(cli, index, query), index, "SHA-256")
    assert first_hits(search(cli, index, query, extra=("--exact",)))[0] == query


def test_an_old_index_checks_its_sq8_graph_against_its_rows_within_a_step(cli, built, tmp_path):
    """Without a recorded checksum, a sample of the 8-bit rows is checked against the index's rows, each value
    within its dimension's quantisation step: the graph's own rows pass, another index's or a damaged one do not."""
    needs(built, "sq8")
    assert first_hits(search(cli, old(copy(built, "sq8", tmp_path)), "red cat"))
    index = old(copy(built, "sq8", tmp_path))
    with h5py.File(needs(built, "other_sq8"), "r") as source, h5py.File(index, "r+") as h5:
        del h5["ann_hnsw"]
        source.copy("ann_hnsw", h5)
    one_error(search(cli, index, "red cat"), index, "differs from the index's")
    index = old(copy(built, "sq8", tmp_path))
    start, width = sq8_codes(index)
    with h5py.File(index, "r") as h5:
        codes = h5["ann_hnsw"][start : start + width]  # row 1's, the first of the sample
    overwrite(index, "ann_hnsw", start, bytes(((codes.astype(int) + 9) % 256).astype(np.uint8)))
    one_error(search(cli, index, "red cat"), index, "vector of row 1 differs")


# ---------------------------------------------------------------------------- a model that gives NaN


@pytest.fixture(scope="module")
def nan_model(tmp_path_factory, tiny_st) -> Path:
    """tiny_st whose embedding of the token "fish" is NaN: a text holding "fish" encodes to NaN, the others do not."""
    from safetensors.numpy import load_file, save_file

    folder = tmp_path_factory.mktemp("nan-model") / "model"
    shutil.copytree(tiny_st, folder)
    weights = load_file(folder / "model.safetensors")
    vocab = (folder / "vocab.txt").read_text().splitlines()
    weights["bert.embeddings.word_embeddings.weight"][vocab.index("fish")] = np.nan
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def test_a_nan_vector_is_refused_at_build_naming_the_input_line(cli, nan_model, tmp_path):
    corpus = tmp_path / "texts.txt"
    corpus.write_text("a red cat\nthe old dog\na big fish eats\nblue\n")
    out = tmp_path / "nan.h5"
    one_error(cli("index", corpus, "-m", nan_model, "-o", out, *CPU), f"{corpus}:3", "NaN")
    assert not out.exists()
    done = cli("encode", "-m", nan_model, "-i", corpus, "-f", "jsonl", *CPU)
    one_error(done, f"{corpus}:3", "NaN")
    assert done.stdout == ""
    one_error(cli("encode", "-m", nan_model, "a dog", "one fish", "-f", "json", *CPU), None, "text 2")


def test_a_bank_of_nan_vectors_is_never_written(cli, nan_model, tmp_path):
    rows = [{"entry": "cat", "definitions": ["a red cat"]}, {"entry": "carp", "definitions": ["a big fish"]}]
    dictionary = tmp_path / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "bank.h5"
    one_error(cli("embed-entries", dictionary, "-m", nan_model, "-o", out, *CPU), None, "'carp'")
    assert not out.exists()


def test_a_query_the_model_gives_nan_for_is_an_error(cli, built, nan_model):
    one_error(search(cli, built["plain"], "a red cat", "a big fish", extra=("-m", nan_model)), None, "query 2")


def test_json_is_strict_everywhere(cli, built):
    from defsent_cli.errors import DefsentError
    from defsent_cli.io import json_text

    with pytest.raises(DefsentError, match="NaN or infinite"):
        json_text({"score": float("nan")})
    with pytest.raises(DefsentError, match="NaN or infinite"):
        json_text([1.0, float("inf")], indent=2)
    done = search(cli, built["plain"], "red cat", "blue fish")
    assert [len(strict_json(line)["results"]) for line in done.stdout.splitlines()] == [3, 3]


# ---------------------------------------------------------------------------- search's options


def warnings(result) -> list[str]:
    assert result.exit_code == 0, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("warning:")]


def test_a_search_option_the_index_lacks_the_means_for_is_warned_about(cli, built):
    plain = built["plain"]
    said = warnings(search(cli, plain, "red cat", extra=("--ef-search", "64", "--similarity", "dot")))
    assert len(said) == 2 and any("--ef-search has no effect" in s for s in said), said
    assert any("--similarity has no effect" in s for s in said), said
    said = warnings(search(cli, plain, "red cat", extra=("--exact",)))
    assert len(said) == 1 and "--exact has no effect" in said[0], said
    assert warnings(search(cli, plain, "red cat")) == []
    if "ann" in built:
        said = warnings(search(cli, built["ann"], "red cat", extra=("--exact", "--ef-search", "64")))
        assert len(said) == 1 and "--ef-search has no effect with --exact" in said[0], said
        assert warnings(search(cli, built["ann"], "red cat", extra=("--ef-search", "64"))) == []


def test_a_single_valued_option_given_twice_is_refused(cli, built):
    for argv in (
        ["search", "--index", built["plain"], "--index", built["plain"], "red cat"],
        ["search", f"--index={built['plain']}", "-k", "2", "--top-k", "3", "red cat"],
        ["serve", "--index", built["plain"], "--index", built["plain"], "--port", "-1"],
    ):
        one_error(cli(*argv), None, "more than once")
    listed = cli("encode", "-m", built["model"], "-i", built["corpus"], "-i", "-", "-f", "jsonl", *CPU, input="x y\n")
    assert listed.exit_code == 0 and len(listed.stdout.splitlines()) == 201, listed.stderr  # a list option repeats
