"""Readers of plain text (issue 68 items 1 and 3): every option that reads one text per line refuses a file that is
plainly of another kind (a dictionary JSONL, other JSON Lines, a scored pairs file), in one line naming the file
and the line; and a byte that is not the encoding is reported on its own line, of a file or of stdin."""

from __future__ import annotations

import json

import pytest
from conftest import CORPUS, write

from defsent_cli.errors import DefsentError
from defsent_cli.io import iter_lines


@pytest.fixture
def wrong(tmp_path, tiny_dict):
    """Files named .txt that are not plain text: a dictionary, JSON Lines, a scored pairs file."""
    files = {"dictionary": tmp_path / "dict.txt", "json lines": tmp_path / "rows.txt", "pairs": tmp_path / "pairs.txt"}
    files["dictionary"].write_text("\n" + tiny_dict.read_text())  # a blank first line: the error names line 2
    write(files["json lines"], [json.dumps({"text": s, "id": i}) for i, s in enumerate(CORPUS)])
    write(files["pairs"], [f"{CORPUS[i]}\t{CORPUS[i + 1]}\t{i % 5}.5" for i in range(9)])
    return files


def _readers(tiny_bert, tiny_dict, bank, texts, ok, out):
    """Each reader of plain text: a command line with ``texts`` in that place (``ok`` fills the others)."""
    m = ["-m", tiny_bert, "--device", "cpu"]
    return {
        "encode -i": ["encode", *m, "-i", texts, "--skip-blank", "-o", out / "v.npy"],
        "encode --idf-corpus": [
            *["encode", *m, "-i", ok, "--pooling", "mean", "--weighting", "idf", "--idf-corpus", texts],
            *["-o", out / "v.npy"],
        ],
        "encode --fit-on": ["encode", *m, "-i", ok, "--post", "zscore", "--fit-on", texts, "-o", out / "v.npy"],
        "embed-entries --texts": ["embed-entries", tiny_dict, *m, "--texts", texts, "-o", out / "b.h5"],
        "tsdae": ["tsdae", texts, *m, "--max-steps", "1", "-o", out / "ck"],
        "simcse": ["simcse", texts, *m, "--max-steps", "1", "-o", out / "ck"],
        "inspect --corpus": ["inspect", *m, "--corpus", texts],
    }


READERS = [
    "encode -i",
    "encode --idf-corpus",
    "encode --fit-on",
    "embed-entries --texts",
    "tsdae",
    "simcse",
    "inspect --corpus",
]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("kind", ["dictionary", "json lines", "pairs"])
def test_a_reader_of_plain_text_refuses_another_kind_of_file(reader, kind, cli, tiny_bert, tiny_dict, wrong, tmp_path):
    ok = tmp_path / "ok.txt"
    write(ok, CORPUS)
    (tmp_path / "out").mkdir()
    args = _readers(tiny_bert, tiny_dict, tmp_path / "bank.h5", wrong[kind], ok, tmp_path / "out")[reader]
    result = cli(*args)
    assert result.exit_code == 2, (reader, kind, result.stderr)
    line = 2 if kind == "dictionary" else 1
    assert result.stderr.startswith(f"error: {wrong[kind]}:{line}: "), result.stderr
    assert "not plain text" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not any((tmp_path / "out").iterdir())


def test_plain_text_with_braces_or_a_pool_of_sentences_is_still_read(cli, tiny_bert, tmp_path):
    texts = tmp_path / "texts.txt"
    write(texts, ["{not json, a sentence in braces}", *CORPUS])
    assert cli("encode", "-m", tiny_bert, "-i", texts, "-o", tmp_path / "v.npy").exit_code == 0


def test_a_bad_byte_is_reported_on_its_own_line(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"".join(b"sentence number %d\n" % i for i in range(1, 1000)) + b"caf\xe9 au lait\nmore\n")
    with pytest.raises(DefsentError, match=rf"^{path}:1000: not valid utf-8 text"):
        list(iter_lines(path))
    path.write_bytes(b"a\r\nb\rc\nd")  # CRLF, CR and LF, and no newline at the end
    assert list(iter_lines(path)) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    path.write_bytes("first\nsecond\n".encode("utf-16"))
    assert list(iter_lines(path, "utf-16")) == [(1, "first"), (2, "second")]


def test_a_bad_byte_on_stdin_and_in_a_file_is_reported_on_its_line_by_the_command(cli, tiny_bert, tmp_path):
    stdin = b"one sentence\nanother one\nbad \xff byte\nlast\n"
    result = cli("encode", "-m", tiny_bert, "-o", tmp_path / "v.npy", input=stdin)
    assert result.exit_code == 2 and result.stderr.startswith("error: <stdin>:3: not valid utf-8 text"), result.stderr
    path = tmp_path / "big.txt"
    path.write_bytes(b"".join(b"sentence %d\n" % i for i in range(1, 1000)) + b"caf\xe9\n")
    result = cli("encode", "-m", tiny_bert, "-i", path, "-o", tmp_path / "v.npy")
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {path}:1000: not valid utf-8"), result.stderr
    assert not (tmp_path / "v.npy").exists()


def test_queries_on_stdin_are_plain_text_too(cli, tiny_bert, tiny_dict, tmp_path):
    """lookup's definitions and search's queries, read from stdin, refuse a dictionary piped in by mistake."""
    bank, index, texts = tmp_path / "bank.h5", tmp_path / "corpus.h5", tmp_path / "texts.txt"
    write(texts, CORPUS)
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank, "--device", "cpu").exit_code == 0
    assert cli("index", texts, "-m", tiny_bert, "-o", index, "--device", "cpu").exit_code == 0
    piped = tiny_dict.read_text()
    for args in (["lookup", "-m", tiny_bert, "--bank", bank], ["search", "--index", index]):
        result = cli(*args, input=piped)
        assert result.exit_code == 2 and result.stdout == "", result.stderr
        assert result.stderr.startswith("error: <stdin>:1: is a dictionary JSONL"), result.stderr
        assert cli(*args, input="a pet that barks\n").exit_code == 0
