"""The dictionary readers never turn bad input into entries, and every hint they give works when followed (issue
68, items 1 and 3): a dictd index beside another database's text is refused, naming the wrong file; definitions
without a word, or that are only their headword, are dropped and counted by ``--stats``; a glossary that
pyglossary reads only in part is an error, its warnings reach stderr; markup goes without changing the text
around it; ``--encoding`` applies to a dictd index; the advice for an index without its text (or under another
name) works; a glossary format whose reader needs lxml says so. Each case drives ``defsent build-dict`` on files
written here, and follows the hint it printed."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import skip_without
from test_dictd import FOLDOC_SHORT, write_dictd

JARGON_SHORT = "The Jargon File (version 4.4.7, 29 Dec 2003)"
WORDS = ["cache", "kernel", "packet", "thread", "socket", "compiler", "buffer", "router", "shell", "parser"]


# GCIDE 0.48's block of Alate (adv.) ends with the headword after its last source tag
ALATE = """Alate \\A*late"\\, adv. [Pref. a- + late.]
   Lately; of late. [Archaic]
   [1913 Webster]

         There hath been alate such tales spread abroad.
                                                  --Latimer.
   [1913 Webster] Alate

"""


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def one_line_error(result, *names: str) -> str:
    """The one ``error:`` line of a refused build-dict (exit 2, nothing on stdout, no traceback)."""
    assert result.exit_code == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr
    for name in names:
        assert name in result.stderr, (name, result.stderr)
    return result.stderr


def foldoc_blocks(n: int) -> list[tuple[list[str], str]]:
    """``n`` FOLDOC-style blocks of a few lines each (the headword, a category, two sentences, a date)."""
    blocks = []
    for i in range(n):
        term = f"{WORDS[i % len(WORDS)]} {i}"
        blocks.append(
            (
                [term],
                f"{term}\n\n   <programming> A {WORDS[(i + 3) % 10]} that holds the {WORDS[i % 10]} of a\n"
                f"   program, as a {WORDS[(i + 7) % 10]} does. It is used by the {WORDS[(i + 5) % 10]}\n"
                f"   when the {WORDS[(i + 1) % 10]} is full.\n\n   (2001-01-0{1 + i % 9})\n\n",
            )
        )
    return blocks


def jargon_blocks(n: int) -> list[tuple[list[str], str]]:
    """``n`` Jargon-File-style blocks, shorter than :func:`foldoc_blocks`'s (so its index fits in FOLDOC's text)."""
    return [([f"j{i}"], f"j{i}\n /jay/, n.\n\n    A {WORDS[i % 10]} hacker.\n\n") for i in range(n)]


# --------------------------------------------------------------------------- an index of another database's text


def test_an_index_beside_another_databases_text_is_refused_naming_the_wrong_file(cli, tmp_path):
    own = {}
    for name, short, blocks in (
        ("foldoc", FOLDOC_SHORT, foldoc_blocks(40)),
        ("jargon", JARGON_SHORT, jargon_blocks(40)),
    ):
        (tmp_path / name).mkdir()
        own[name] = write_dictd(tmp_path / name, name, short, blocks)
    assert (tmp_path / "jargon" / "jargon.dict.dz").stat().st_size < (
        tmp_path / "foldoc" / "foldoc.dict.dz"
    ).stat().st_size
    out = tmp_path / "out.jsonl"

    # the Jargon File's index beside FOLDOC's text under FOLDOC's name: the index is the wrong file
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(own["jargon"], mixed / "foldoc.index")
    shutil.copy(tmp_path / "foldoc" / "foldoc.dict.dz", mixed / "foldoc.dict.dz")
    error = one_line_error(cli("build-dict", mixed / "foldoc.index", "-o", out), f"{mixed / 'foldoc.index'}: ")
    assert "is not the index of foldoc.dict.dz beside it" in error and "FOLDOC" not in error
    assert "holds 'The Free On-line Dictionary of Computing" in error and "another database's" in error
    assert re.search(r"\d\d of the 40 blocks checked start mid-line without their headword \(index line", error)
    assert not out.exists()
    # followed: the index that came with foldoc.dict.dz put there
    shutil.copy(own["foldoc"], mixed / "foldoc.index")
    result = cli("build-dict", mixed / "foldoc.index", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert len(rows(out)) == 40

    # FOLDOC's text beside the Jargon File's index under the Jargon File's name: the data is the wrong file
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    shutil.copy(own["jargon"], swapped / "jargon.index")
    shutil.copy(tmp_path / "foldoc" / "foldoc.dict.dz", swapped / "jargon.dict.dz")
    error = one_line_error(
        cli("build-dict", swapped / "jargon", "-o", out, "--force"), f"{swapped / 'jargon.dict.dz'}: "
    )
    assert "is not the text of jargon.index beside it: it holds 'The Free On-line Dictionary" in error
    shutil.copy(tmp_path / "jargon" / "jargon.dict.dz", swapped / "jargon.dict.dz")  # followed
    result = cli("build-dict", swapped / "jargon", "-o", out, "--force")
    assert result.exit_code == 0, result.stderr
    assert [r["definitions"] for r in rows(out)][:2] == [["A cache hacker."], ["A kernel hacker."]]


def test_a_database_whose_text_holds_no_headwords_is_read(cli, tmp_path):
    # dictfmt --without-headword: the blocks do not start with their headword, but at the start of a line
    blocks = [([f"w{i}"], f"   The {WORDS[i % 10]} of the {WORDS[(i + 1) % 10]}.\n") for i in range(30)]
    index = write_dictd(tmp_path, "bare", "A dictionary without headwords", blocks, data=".dict")
    out = tmp_path / "bare.jsonl"
    result = cli("build-dict", index, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert rows(out)[0]["entry"] == "w0" and rows(out)[0]["definitions"] == ["The cache of the kernel."]


# --------------------------------------------------------------------------- definitions that are none


def test_definitions_without_a_word_or_only_their_headword_are_dropped_and_counted(cli, tmp_path):
    foldoc = write_dictd(
        tmp_path,
        "foldoc",
        FOLDOC_SHORT,
        [
            (["ACP"], "ACP\n\n   (ACP)\n   {(http://www.acp.example/)}.\n\n   [Summary?]\n\n   (1995-11-23)\n\n"),
            (["bang path"], "bang path\n\n   <networking> {(http://bang.example/)}.\n\n   (1996-01-01)\n\n"),
            (["kernel"], "kernel\n\n   <operating system> The essential part of Unix.\n\n   (1999-01-01)\n\n"),
        ],
    )
    gcide = write_dictd(
        tmp_path,
        "gcide",
        "The Collaborative International Dictionary of English v.0.48",
        [
            (
                ["adrenaline"],
                "adrenaline \\adrenaline\\ n.\n   1. .\n\n   Syn: epinephrine, adrenalin\n        [WordNet 1.5]\n\n",
            ),
            (["Alate"], ALATE),
        ],
    )
    plain = write_dictd(
        tmp_path, "devil", "The Devil's Dictionary", [(["ABC"], "ABC\n"), (["ABET"], "ABET\n   To aid.\n")]
    )
    extra = tmp_path / "numbers.tsv"
    extra.write_text("pi\t3.14159\npi\tThe ratio of a circle's circumference to its diameter.\nkernel\tKernel.\n")
    out = tmp_path / "d.jsonl"
    result = cli("build-dict", foldoc, gcide, plain, extra, "-o", out, "--stats")
    assert result.exit_code == 0, result.stderr
    got = {r["entry"]: r["definitions"] for r in rows(out)}
    assert got == {
        "kernel": ["The essential part of Unix.", "Kernel."],  # a TSV's definitions are the file's own: kept
        "Alate": ["Lately; of late."],
        "ABET": ["To aid."],
        "pi": ["3.14159", "The ratio of a circle's circumference to its diameter."],
    }
    assert "wrote 4 entries, 6 definitions" in result.stderr
    table = result.stderr[result.stderr.index("dropped definitions") :]
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if line.count("│") == 4]
    assert {(c[0], c[1]): int(c[2]) for c in cells} == {
        ("foldoc", "no word in it (. ] 1.)"): 1,  # bang path: a URL and its stop
        ("foldoc", "only its headword"): 1,  # ACP: "(ACP)"
        ("gcide", "no word in it (. ] 1.)"): 1,  # adrenaline: "1. ." a sense number
        ("gcide", "only its headword"): 1,  # Alate: the headword after the source tag
        ("devil", "only its headword"): 1,  # ABC: a block holding only its headword
    }
    # nothing dropped: --stats says so
    clean = cli("build-dict", extra.with_name("clean.tsv"), "-o", tmp_path / "c.jsonl", "--stats")
    assert clean.exit_code == 2  # (a missing file: checked before anything is read)
    extra.with_name("clean.tsv").write_text("dog\ta pet\n")
    clean = cli("build-dict", extra.with_name("clean.tsv"), "-o", tmp_path / "c.jsonl", "--stats")
    assert clean.exit_code == 0 and "dropped definitions: none" in clean.stderr


# --------------------------------------------------------------------------- glossaries through pyglossary


def _stardict(folder: Path, n: int = 30) -> Path:
    from defsent_cli.dictionary.glossary import load_pyglossary

    glossary = load_pyglossary()()
    for i in range(n):
        defi = f"the <b>study</b> of <i>{WORDS[i % 10]}s</i> in <a href='x'>mathematics</a>."
        glossary.addEntry(glossary.newEntry([f"w{i:02d}"], defi, "h"))
    glossary.addEntry(glossary.newEntry(["zz"], "<p><b>ZZ</b></p>", "h"))  # only its headword
    glossary.addEntry(glossary.newEntry(["zzz"], "<p>1.</p>", "h"))  # a sense number
    glossary.setInfo("name", "mine")
    folder.mkdir()
    glossary.write(str(folder / "mine.ifo"), formatName="Stardict")
    return folder / "mine.ifo"


def test_a_glossary_read_in_part_is_an_error_and_its_warnings_reach_stderr(cli, tmp_path):
    skip_without("pyglossary", "the glossary extra: pip install 'defsent-cli[glossary]'")
    whole = _stardict(tmp_path / "whole")
    out = tmp_path / "g.jsonl"
    result = cli("build-dict", whole, "-o", out, "--stats")
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr
    assert "wrote 30 entries, 30 definitions from mine" in result.stderr
    table = result.stderr[result.stderr.index("dropped definitions") :]
    assert re.search(r"│ mine +│ no word in it \(\. \] 1\.\) +│ +1 │", table), table
    assert re.search(r"│ mine +│ only its headword +│ +1 │", table), table
    # markup dropped without changing the text around it: no "mathematics ." (a space before the stop)
    assert rows(out)[0]["definitions"] == ["the study of caches in mathematics."]

    idx = whole.with_suffix(".idx").read_bytes()
    end = 0
    for _ in range(4):  # an entry is its word, a NUL, and two 32-bit numbers
        end = idx.index(b"\0", end) + 9
    for name, cut in (("mid-entry", idx.index(b"\0", end) + 3), ("at-an-entry-end", end)):
        short = tmp_path / name
        shutil.copytree(whole.parent, short)
        (short / "mine.idx").write_bytes(idx[:cut])
        error = one_line_error(cli("build-dict", short / "mine.ifo", "-o", tmp_path / f"{name}.jsonl"), "mine.ifo: ")
        assert ("Index file is corrupted" in error) == (name == "mid-entry"), error
        assert "cut short" in error
        assert not (tmp_path / f"{name}.jsonl").exists()

    # a warning of pyglossary's reaches stderr as a warning line; the read goes on
    odd = tmp_path / "odd"
    shutil.copytree(whole.parent, odd)
    ifo = (odd / "mine.ifo").read_text(encoding="utf-8")
    (odd / "mine.ifo").write_text(re.sub(r"sametypesequence=\w", "sametypesequence=k", ifo), encoding="utf-8")
    result = cli("build-dict", odd / "mine.ifo", "-o", tmp_path / "odd.jsonl")
    assert result.exit_code == 0, result.stderr
    assert f"warning: {odd / 'mine.ifo'}: pyglossary: Definition type 'k' is not supported\n" in result.stderr


def test_markup_goes_without_changing_the_text_around_it():
    from defsent_cli.dictionary.glossary import split_definition

    cases = {
        "in <a href='x'>mathematics</a>.": ["in mathematics."],
        "<b>A</b>BC <i>de</i>f, g": ["ABC def, g"],
        "<table><tr><td>one</td><td>two</td></tr></table>": ["one two"],
        "one<br>. (<div>two</div>)": ["one. (two)"],
        "<p>1. first</p><p>2. second</p>": ["first", "second"],
        "a &amp; <span class='x'>b</span>; c": ["a & b; c"],
    }
    assert {text: split_definition(text, "h") for text in cases} == cases


def test_a_format_that_needs_lxml_says_so(cli, tmp_path):
    skip_without("pyglossary", "the glossary extra: pip install 'defsent-cli[glossary]'")
    try:
        import lxml  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("lxml is installed: the XDXF reader works")
    xdxf = tmp_path / "mine.xdxf"
    xdxf.write_text(
        '<?xml version="1.0" encoding="UTF-8" ?>\n<xdxf lang_from="ENG" lang_to="ENG" format="logical">\n'
        "<meta_info><title>t</title></meta_info>\n<lexicon><ar><k>dog</k><def>a pet</def></ar></lexicon>\n</xdxf>\n",
        encoding="utf-8",
    )
    error = one_line_error(cli("build-dict", xdxf, "-o", tmp_path / "x.jsonl"), f"{xdxf}: ")
    assert error == f"error: {xdxf}: this format needs lxml: pip install lxml\n"
    assert "readerClass" not in error


# --------------------------------------------------------------------------- --encoding, and hints that work


def test_encoding_applies_to_a_dictd_index(cli, tmp_path):
    from defsent_cli.dictionary import dictd

    text, index = b"", []
    for headword, block in (("café", "café\n   A small restaurant.\n"), ("naïve", "naïve\n   Lacking experience.\n")):
        raw = block.encode("latin-1")
        index.append(f"{headword}\t{dictd.b64_encode(len(text))}\t{dictd.b64_encode(len(raw))}\n")
        text += raw
    (tmp_path / "menu.index").write_bytes("".join(index).encode("latin-1"))
    (tmp_path / "menu.dict").write_bytes(text)
    out = tmp_path / "menu.jsonl"
    error = one_line_error(cli("build-dict", tmp_path / "menu.index", "-o", out), f"{tmp_path / 'menu.index'}:1: ")
    hint = re.search(r"pass (--encoding) \(e\.g\. ([\w-]+)\)", error)
    assert hint, error
    result = cli("build-dict", tmp_path / "menu.index", hint.group(1), hint.group(2), "-o", out)  # followed
    assert result.exit_code == 0, result.stderr
    assert {r["entry"]: r["definitions"] for r in rows(out)} == {
        "café": ["A small restaurant."],
        "naïve": ["Lacking experience."],
    }


@pytest.fixture
def database(tmp_path) -> tuple[bytes, bytes]:
    """The index and the text of a small FOLDOC database (written elsewhere: each case puts them where it needs)."""
    index = write_dictd(tmp_path, "src", FOLDOC_SHORT, foldoc_blocks(12))
    return index.read_bytes(), (tmp_path / "src.dict.dz").read_bytes()


def _follow_put(error: str, folder: Path, index: bytes, data: bytes) -> None:
    """Do what a hint says to put where: 'its text NAME (or ...) is not beside it: put it there', 'no NAME (or
    ...) beside this dictd index: put the database's text there', 'without its index NAME beside it: put the
    index there'."""
    text = re.search(r"its text (\S+) \(or \S+\) is not beside it: put it there", error) or re.search(
        r"no (\S+) \(or \S+\) beside this dictd index: put the database's text there", error
    )
    wanted_index = re.search(r"without its index (\S+) beside it: put the index there", error) or re.search(
        r"no dictd index (\S+) beside it", error
    )
    assert text or wanted_index, error
    if text:
        (folder / text.group(1)).write_bytes(data if text.group(1).endswith(".dz") else gzip.decompress(data))
    else:
        (folder / wanted_index.group(1)).write_bytes(index)


@pytest.mark.parametrize(
    "given, fmt",
    [
        ("foldoc.index", None),  # an index without its text: read as TSV, named, and what to put there
        ("foldoc.index", "dictd"),
        ("foldoc.idx", None),  # an index under another name
        ("foldoc.idx", "dictd"),
        ("foldoc.dict.dz", None),  # the text without its index
        ("foldoc.dict.dz", "tsv"),
        ("foldoc.dict.dz", "dictd"),
    ],
)
def test_each_dictd_hint_followed_works(cli, tmp_path, database, given, fmt):
    index, data = database
    folder = tmp_path / "db"
    folder.mkdir()
    (folder / given).write_bytes(data if given.endswith(".dz") else index)
    out = tmp_path / "out.jsonl"
    error = one_line_error(
        cli("build-dict", folder / given, *(["--format", fmt] if fmt else []), "-o", out), f"{folder / given}"
    )
    assert "--format dictd" not in error or "leave --format out" in error
    _follow_put(error, folder, index, data)
    formats = [fmt]
    if "and pass the database (--format dictd, or leave --format out)" in error:
        formats = ["dictd", None]  # followed both ways
    for followed in formats:
        result = cli("build-dict", folder / given, *(["--format", followed] if followed else []), "-o", out, "--force")
        assert result.exit_code == 0, (error, followed, result.stderr)
        assert len(rows(out)) == 12 and rows(out)[0]["sources"] == ["foldoc"]


@pytest.mark.parametrize("given", ["foldoc.index", "foldoc.idx", "foldoc"])
def test_an_index_given_as_tsv_gets_a_format_that_works(cli, tmp_path, database, given):
    index, data = database
    folder = tmp_path / "db"
    folder.mkdir()
    (folder / given).write_bytes(index)
    (folder / "foldoc.dict.dz").write_bytes(data)
    out = tmp_path / "out.jsonl"
    error = one_line_error(cli("build-dict", folder / given, "--format", "tsv", "-o", out), "this is a dictd index")
    command = re.search(r"pass the database: defsent (build-dict \S+ --format dictd) \(or leave --format out\)", error)
    assert command, error
    for args in (command.group(1).split(), ["build-dict", str(folder / given)]):  # followed, both ways
        result = cli(*args, "-o", out, "--force")
        assert result.exit_code == 0, (args, result.stderr)
        assert len(rows(out)) == 12 and rows(out)[0]["sources"] == ["foldoc"]


def test_a_definition_without_a_letter_is_dropped_from_any_source(cli, tmp_path):
    """TSV and JSONL dictionaries too: '.', ']', '...' (punctuation alone) are no definitions; an entry left
    with none goes; a number stays (a dozen is 12); --stats counts them by source."""
    tsv = tmp_path / "d.tsv"
    tsv.write_text("foo\t.\nbar\t...\nbar\tto stand at a bar\nbaz\t]\ndozen\t12\n")
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text(json.dumps({"entry": "qux", "definitions": ["...", "a kind of thing"]}) + "\n")
    out = tmp_path / "out.jsonl"
    result = cli("build-dict", tsv, jsonl, "--stats", "-o", out)
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["entry"]: r["definitions"] for r in rows} == {
        "bar": ["to stand at a bar"],
        "dozen": ["12"],
        "qux": ["a kind of thing"],
    }
    rows = {tuple(cell.strip() for cell in line.split("│")[1:4]) for line in result.stderr.splitlines() if "│" in line}
    assert ("d", "no word in it (. ] 1.)", "3") in rows and ("-", "no word in it (. ] 1.)", "1") in rows, rows
