"""An entry bank from domain text (``embed-entries --texts``, banks/domain_text.py): which lines an entry
is found in, and that the bank is the one of a dictionary whose definitions are those lines."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from defsent_cli.banks.domain_text import find_texts, words
from defsent_cli.formats.bank import check_bank_matches, read_bank
from defsent_cli.io import sha256_file

LINES = [
    "Parsing C++ into an abstract syntax tree",
    "A street map in node.js",
    "",
    "How to walk a TREE in c++?",
    "c++ and C++ again",
    "nothing of interest",
]


def test_words_are_whole_and_lower_cased_and_keep_programming_names():
    assert words("Using C++ with Node.js? C# too") == ("using", "c++", "with", "node.js", "c#", "too")
    assert words("don't stop: x86-64.") == ("don't", "stop", "x86-64")
    assert words("a b c d e f g h i j") == tuple("abcdefgh")  # entries are looked up by their first 8 words


def test_each_entry_keeps_its_first_lines_once_each_and_stop_words_are_never_looked_up(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(LINES) + "\n")
    entries = ["C++", "tree", "Abstract Syntax Tree", "node.js", "to", "missing", "street map"]
    found = find_texts(corpus, entries, per_entry=2)
    assert found.lines == 5  # the blank line is not a text
    assert found.texts_of("c++") == [LINES[0], LINES[3]]  # the first two; line 4 names it twice, once kept
    assert found.texts_of("tree") == [LINES[0], LINES[3]]  # not in "street"
    assert found.texts_of("abstract syntax tree") == [LINES[0]]
    assert found.texts_of("Node.js") == [LINES[1]]
    assert found.texts_of("street map") == [LINES[1]]
    assert found.texts_of("to") is None  # a stop word: a third of any corpus would stand for it
    assert found.texts_of("missing") is None
    assert len(found.found) == 5
    assert find_texts(corpus, entries, per_entry=3).texts_of("C++") == [LINES[0], LINES[3], LINES[4]]


def _dictionary(path: Path, rows: list[tuple[str, list[str], str]]) -> Path:
    path.write_text("".join(json.dumps({"entry": e, "definitions": d, "split": s}) + "\n" for e, d, s in rows))
    return path


ROWS = [
    ("giraffe", ["a long-necked african animal"], "train"),
    ("revitalize", ["give new life or vigor to"], "train"),
    ("dog", ["a domesticated carnivorous mammal", "an animal that barks"], "train"),
    ("joy", ["a feeling of great happiness"], "dev"),
    ("fish", ["an animal that lives in water"], "test"),
]


@pytest.fixture(scope="module")
def bert(tiny_bert):
    from defsent_cli.encoder.models import load_model

    return load_model(tiny_bert, "cpu")


TEXTS = ["the giraffe ate leaves", "a dog and a Giraffe", "my dog barks at night", "nothing here"]


@pytest.mark.parametrize("part_size", ["1000", "2"])
def test_the_bank_is_that_of_a_dictionary_whose_definitions_are_the_lines(cli, tmp_path, tiny_bert, part_size):
    dictionary = _dictionary(tmp_path / "dict.jsonl", ROWS)
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "bank.h5"
    result = cli(
        "embed-entries", dictionary, "-m", tiny_bert, "--pool", "cls", "--texts", texts, "--texts-per-entry", "2",
        "--part-size", part_size, "-b", "3", "-o", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "(AC, 7 texts and definitions; 2 entries from" in result.stderr
    # the same bank, built the ordinary way from a dictionary where giraffe's and dog's definitions are the lines
    rewritten = [(e, {"giraffe": TEXTS[:2], "dog": TEXTS[1:3]}.get(e, d), s) for e, d, s in ROWS]
    expected = tmp_path / "expected.h5"
    assert cli(
        "embed-entries", _dictionary(tmp_path / "rewritten.jsonl", rewritten), "-m", tiny_bert, "--pool", "cls",
        "-o", expected,
    ).exit_code == 0  # fmt: skip
    got, want = read_bank(out), read_bank(expected)
    assert got.entries == want.entries == [e for e, _, _ in ROWS]
    np.testing.assert_allclose(got.vectors, want.vectors, atol=1e-5)
    assert got.counts.tolist() == [2, 1, 2, 1, 1]
    with h5py.File(out) as h5:
        attrs = dict(h5.attrs)
    assert attrs["dictionary_sha256"] == sha256_file(dictionary)  # the dictionary's bank: train takes it
    assert attrs["texts"] == f"./{texts.name}" and attrs["texts_sha256"] == sha256_file(texts)  # beside the bank
    assert (attrs["texts_lines"], attrs["texts_per_entry"], attrs["entries_from_texts"]) == (4, 2, 2)
    check_bank_matches(got, dictionary)
    trained = cli(
        "train", dictionary, "--bank", out, "-m", tiny_bert, "--max-steps", "1", "-b", "2", "-o", tmp_path / "c"
    )
    assert trained.exit_code == 0, trained.stderr
    assert (
        f"| bank from domain text | {texts.name}: 2 entries, up to 2 lines each |"
        in (tmp_path / "c/README.md").read_text()
    )


def test_one_line_per_entry_and_an_entry_found_nowhere_keeps_its_definitions(cli, tmp_path, tiny_bert, bert):
    from defsent_cli.banks.entry_bank import build_bank

    dictionary = _dictionary(tmp_path / "dict.jsonl", ROWS)
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "bank.h5"
    result = cli("embed-entries", dictionary, "-m", tiny_bert, "--kind", "AMP", "--texts", texts,
                 "--texts-per-entry", "1", "-o", out)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    bank, plain = read_bank(out), build_bank(dictionary, bert, "AMP")
    alone = build_bank(_dictionary(tmp_path / "lines.jsonl", [("a", [TEXTS[0]], "train"), ("b", [TEXTS[1]], "train")]),
                       bert, "AMP")  # fmt: skip
    assert bank.counts.tolist() == [1, 1, 1, 1, 1]
    np.testing.assert_allclose(bank.vectors[[0, 2]], alone.vectors, atol=1e-5)  # giraffe, dog: their first line
    np.testing.assert_allclose(bank.vectors[[1, 3, 4]], plain.vectors[[1, 3, 4]], atol=1e-5)  # the others: theirs
    assert np.abs(bank.vectors[[0, 2]] - plain.vectors[[0, 2]]).max() > 1e-2


def test_texts_per_entry_without_texts_is_warned_about_and_the_bank_is_the_plain_one(cli, tmp_path, tiny_bert, bert):
    from defsent_cli.banks.entry_bank import build_bank

    dictionary = _dictionary(tmp_path / "dict.jsonl", ROWS)
    result = cli("embed-entries", dictionary, "-m", tiny_bert, "--kind", "AMP", "--texts-per-entry", "4",
                 "-o", tmp_path / "b.h5")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "warning: --texts-per-entry has no effect without --texts" in result.stderr
    bank = read_bank(tmp_path / "b.h5")
    np.testing.assert_allclose(bank.vectors, build_bank(dictionary, bert, "AMP").vectors, atol=1e-5)
    assert "texts" not in bank.attrs
    # a text that mentions no entry: said, and the bank is the plain one
    texts = tmp_path / "none.txt"
    texts.write_text("nothing of the kind\n")
    none = cli("embed-entries", dictionary, "-m", tiny_bert, "--kind", "AMP", "--texts", texts, "-o", tmp_path / "n.h5")
    assert none.exit_code == 0, none.stderr
    assert f"warning: {texts} mentions none of the dictionary's entries" in none.stderr
    np.testing.assert_allclose(read_bank(tmp_path / "n.h5").vectors, bank.vectors, atol=1e-5)
