"""Entry banks: AC/AMP averaging by hand, the HDF5 contract, streaming, the CLI."""

import json

import h5py
import numpy as np
import pytest
from conftest import REPO

from defsent_cli.banks.entry_bank import EntryMeans, build_bank
from defsent_cli.encoder.encode import encode
from defsent_cli.encoder.models import load_model
from defsent_cli.errors import DefsentError
from defsent_cli.formats.bank import check_bank_matches, read_bank, write_bank


@pytest.fixture(scope="module")
def bert(tiny_bert):
    return load_model(tiny_bert, "cpu")


def test_entry_means_by_hand():
    acc = EntryMeans(3, 2)
    acc.add([0, 2, 0], np.array([[1.0, 2.0], [5.0, 5.0], [3.0, 0.0]]))
    acc.add([0], np.array([[2.0, 1.0]]))
    np.testing.assert_allclose(acc.means(), [[2.0, 1.0], [0.0, 0.0], [5.0, 5.0]])
    assert acc.counts.tolist() == [3, 0, 1]


@pytest.mark.parametrize("kind,pooling", [("AMP", "mean"), ("AC", "cls")])
def test_bank_rows_are_means_of_definition_vectors(tiny_dict, bert, kind, pooling):
    bank = build_bank(tiny_dict, bert, kind)
    rows = [json.loads(line) for line in tiny_dict.read_text().splitlines()]
    assert bank.entries == [r["entry"] for r in rows]
    assert bank.counts.tolist() == [len(r["definitions"]) for r in rows]
    for i, row in enumerate(rows):
        expected = encode(row["definitions"], bert, pooling).mean(axis=0)
        np.testing.assert_allclose(bank.vectors[i], expected, atol=1e-5)
    assert bank.attrs["kind"] == kind and bank.attrs["pooling"] == pooling


def test_streaming_chunks_do_not_change_the_bank(tiny_dict, bert):
    whole = build_bank(tiny_dict, bert, "AMP")
    chunked = build_bank(tiny_dict, bert, "AMP", chunk_definitions=1, batch_size=1)
    np.testing.assert_allclose(whole.vectors, chunked.vectors, atol=1e-5)


def test_splits_pick_entries(tiny_dict, bert):
    bank = build_bank(tiny_dict, bert, "AC", splits=["train"])
    assert bank.entries == ["giraffe", "revitalize", "dog"]
    assert bank.attrs["splits"] == "train"
    with pytest.raises(DefsentError, match="unknown split"):
        build_bank(tiny_dict, bert, "AC", splits=["valid"])
    with pytest.raises(DefsentError, match="unknown bank kind"):
        build_bank(tiny_dict, bert, "CLS")


def test_hdf5_round_trip_and_dictionary_check(tiny_dict, bert, tmp_path):
    bank = build_bank(tiny_dict, bert, "AMP")
    path = tmp_path / "bank.h5"
    write_bank(path, bank)
    with h5py.File(path) as h5:
        assert h5.attrs["format"] == "defsent-bank/1"
        assert h5["vectors"].dtype == np.float32 and h5["counts"].dtype == np.int32
        for attr in ("encoder", "dictionary_sha256", "transform", "created", "defsent_version", "kind"):
            assert attr in h5.attrs
        formats = (REPO / "docs" / "formats.md").read_text()
        assert [key for key in [*h5.attrs, *h5] if f"`{key}`" not in formats] == []  # the contract documents them
    again = read_bank(path)
    assert again.entries == bank.entries
    np.testing.assert_array_equal(again.vectors, bank.vectors)
    check_bank_matches(again, tiny_dict)
    other = tmp_path / "other.jsonl"
    other.write_text(tiny_dict.read_text().replace("giraffe", "camelopard"))
    with pytest.raises(DefsentError, match="another dictionary"):
        check_bank_matches(again, other)


def test_read_bank_rejects_other_files(tmp_path):
    with pytest.raises(DefsentError, match="no such bank"):
        read_bank(tmp_path / "missing.h5")
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as h5:
        h5["vectors"] = np.zeros((2, 2))
    with pytest.raises(DefsentError, match="not a defsent bank"):
        read_bank(plain)
    text = tmp_path / "text.h5"
    text.write_text("hello")
    with pytest.raises(DefsentError, match="cannot read HDF5"):
        read_bank(text)


def test_cli_embed_entries(cli, tiny_dict, tiny_bert, tmp_path, bert):
    out = tmp_path / "bank.h5"
    result = cli("embed-entries", tiny_dict, "--encoder", tiny_bert, "--kind", "AC", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "5 entries" in result.stderr and result.stdout == ""
    bank = read_bank(out)
    np.testing.assert_allclose(bank.vectors, build_bank(tiny_dict, bert, "AC").vectors, atol=1e-5)
    again = cli("embed-entries", tiny_dict, "--encoder", tiny_bert, "-o", out)
    assert again.exit_code == 2 and "--force" in again.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"entry": "x", "definitions": []}\n')
    result = cli("embed-entries", bad, "--encoder", tiny_bert, "-o", tmp_path / "b2.h5")
    assert result.exit_code == 2 and "bad.jsonl:1:" in result.stderr
    assert not (tmp_path / "b2.h5").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# --- embed-entries in bounded memory (issue 29): parts streamed into the output ---------------------------


def _shared_dict(tmp_path):
    """Entries with definitions shared inside and across parts, and a dev entry between them."""
    rows = [
        {"entry": "dog", "definitions": ["a domesticated carnivorous mammal kept as a pet", "an animal that barks"]},
        {"entry": "hound", "definitions": ["an animal that barks"], "split": "dev"},
        {"entry": "joy", "definitions": ["a feeling of great happiness"]},
        {"entry": "glee", "definitions": ["a feeling of great happiness", "give new life or vigor to"]},
        {"entry": "giraffe", "definitions": ["a long-necked african animal"]},
    ]
    path = tmp_path / "shared.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _h5(path):
    with h5py.File(path) as h5:
        return {name: (h5[name].dtype, h5[name][()]) for name in h5}, dict(h5.attrs)


@pytest.mark.parametrize("part", [1, 2, 3, 100])
def test_a_bank_written_part_by_part_is_the_in_memory_bank(tmp_path, bert, part):
    from defsent_cli.banks.entry_bank import bank_parts, write_bank_streamed

    dictionary = _shared_dict(tmp_path)
    parts = list(bank_parts(dictionary, ["train", "dev", "test"], part))
    assert [p.first for p in parts] == {1: [0, 1, 2, 3, 4], 2: [0, 1, 3, 4], 3: [0, 2, 4], 100: [0]}[part]
    assert [e for p in parts for e in p.entries] == ["dog", "hound", "joy", "glee", "giraffe"]
    write_bank(tmp_path / "memory.h5", build_bank(dictionary, bert, "AMP", batch_size=2))
    summary = write_bank_streamed(dictionary, bert, tmp_path / "parts.h5", "AMP", batch_size=2, part_definitions=part)
    assert (summary.entries, summary.dim, summary.kind, summary.definitions) == (5, 32, "AMP", 7)
    (want, want_attrs), (got, got_attrs) = _h5(tmp_path / "memory.h5"), _h5(tmp_path / "parts.h5")
    assert got.keys() == want.keys() == {"entries", "vectors", "counts", "pos"}
    assert got["pos"][1].tolist() == want["pos"][1].tolist() == [b""] * 5  # no parts of speech in this dictionary
    assert all(got[name][0] == want[name][0] for name in got)  # the same dataset types
    assert got["entries"][1].tolist() == want["entries"][1].tolist() and got["counts"][1].tolist() == [2, 1, 1, 2, 1]
    np.testing.assert_allclose(got["vectors"][1], want["vectors"][1], atol=1e-6)
    assert abs(got["vectors"][1]).min() > 0  # every row written
    assert got_attrs.keys() == want_attrs.keys()
    assert {k: v for k, v in got_attrs.items() if k != "created"} == {
        k: v for k, v in want_attrs.items() if k != "created"
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.h5", "parts.h5", "shared.jsonl"]  # no temporary left


def test_cli_embed_entries_in_parts_and_a_full_disk(cli, tmp_path, tiny_bert, bert, monkeypatch):
    import shutil
    from collections import namedtuple

    dictionary = _shared_dict(tmp_path)
    out = tmp_path / "bank.h5"
    result = cli(
        "embed-entries", dictionary, "-m", tiny_bert, "--pool", "mean", "--part-size", "2", "-b", "2", "-o", out
    )
    assert result.exit_code == 0, result.stderr
    assert "5 entries x 32 dims (AMP, 7 definitions" in result.stderr
    np.testing.assert_allclose(read_bank(out).vectors, build_bank(dictionary, bert, "AMP").vectors, atol=1e-5)
    check_bank_matches(read_bank(out), dictionary)
    # the disk has less room than the bank needs (5 x 32 float32 rows and more): one line, exit 1, nothing written
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 500, 500))
    full = cli("embed-entries", dictionary, "-m", tiny_bert, "-o", tmp_path / "full.h5")
    assert full.exit_code == 1 and full.stderr.strip() == f"error: {tmp_path / 'full.h5'}: no space left on the device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5", "shared.jsonl"]
