"""Entry banks: AC/AMP averaging by hand, the HDF5 contract, streaming, the CLI."""

import json

import h5py
import numpy as np
import pytest
from conftest import REPO

from defsent_cli.encoder.encode import encode
from defsent_cli.encoder.models import load_model
from defsent_cli.errors import DefsentError
from defsent_cli.formats.bank import check_bank_matches, read_bank, write_bank
from defsent_cli.training.entry_bank import EntryMeans, build_bank


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
    np.testing.assert_allclose(bank.vectors, build_bank(tiny_dict, bert, "AC").vectors, atol=1e-6)
    again = cli("embed-entries", tiny_dict, "--encoder", tiny_bert, "-o", out)
    assert again.exit_code == 2 and "--force" in again.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"entry": "x", "definitions": []}\n')
    result = cli("embed-entries", bad, "--encoder", tiny_bert, "-o", tmp_path / "b2.h5")
    assert result.exit_code == 2 and "bad.jsonl:1:" in result.stderr
    assert not (tmp_path / "b2.h5").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
