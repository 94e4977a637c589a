"""dictd databases (GCIDE, FOLDOC, the Jargon File, any other), glossaries through pyglossary, ``--category``,
per-source ``--stats``, and the readers' refusal of files in another format (a dictd index given as TSV)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, skip_without

from defsent_cli.dictionary import build, dictd, sources, stats
from defsent_cli.dictionary.gcide import gcide_text, parse_gcide
from defsent_cli.errors import DefsentError
from defsent_cli.formats import dictionary as fmt

REAL_FOLDOC = Path("/usr/share/dictd/foldoc.index")


def write_dictd(
    folder: Path, name: str, short: str, blocks: list[tuple[list[str], str]], data: str = ".dict.dz"
) -> Path:
    """A dictd database as dictfmt writes one: NAME.index (headword, offset, length in base64) and NAME.dict.dz
    (gzip) or NAME.dict; ``blocks``: (the index headwords pointing at it, the block's text)."""
    text = b""
    index = []
    for headwords, block in [(["00-database-short"], f"00-database-short\n     {short}\n"), *blocks]:
        raw = block.encode("utf-8")
        for headword in headwords:
            index.append(f"{headword}\t{dictd.b64_encode(len(text))}\t{dictd.b64_encode(len(raw))}\n")
        text += raw
    index.insert(1, f"00-database-info\t{dictd.b64_encode(0)}\t{dictd.b64_encode(5)}\n")
    (folder / f"{name}.index").write_text("".join(index), encoding="utf-8")
    if data == ".dict.dz":
        with gzip.open(folder / f"{name}.dict.dz", "wb") as fh:
            fh.write(text)
    else:
        (folder / f"{name}.dict").write_bytes(text)
    return folder / f"{name}.index"


BANK = """Bank \\Bank\\ (b[a^][ng]k), n. [OE. banke; akin to E. bench. See
   {Bench}.]
   1. A mound, pile, or ridge of earth, raised above the
      surrounding level; as, a bank of snow.
      [1913 Webster]

            They cast up a bank against the city. --2 Sam. xx.
                                                  15.
      [1913 Webster]

   2. (Mining)
      (a) The face of the coal at which miners are working.
      (b) The ground at the top of a shaft; as, ores are brought
          to bank.
          [1913 Webster]

   3. (A["e]ronautics) The lateral inclination of an
      a["e]roplane as it rounds a curve.
      [Webster 1913 Suppl.]

   4. A bench, as for rowers in a galley. [Obs.] --Shak.
      [1913 Webster]

   Syn: shoal; ridge; mound.
        [WordNet 1.5]

   {Bank beaver} (Zool.), the otter. [Local, U.S.]

   {Bank swallow}, a small American and European swallow
      ({Clivicola riparia}) that nests in a bank.
      [1913 Webster]

   {Bank credit}, or {Cash credit}. See under {Cash}.
      [1913 Webster]

"""
ABANDON_V = """Abandon \\A*ban"don\\, v. t. [imp. & p. p. {Abandoned}; p. pr.
   & vb. n. {Abandoning}.]
   1. To cast or drive out; to banish; to expel; to reject.
      [Obs.]
      [1913 Webster]

   2. To give up absolutely; to forsake entirely.
      "Hope was overthrown, yet could not be abandoned." --I. Taylor.
      [1913 Webster]

   Usage: {To Abandon}, {Desert}, {Forsake}. These words agree in
          representing a person as giving up.
          [1913 Webster]

"""
ABANDON_N = """Abandon \\A*ban"don\\, n.
   Abandonment; relinquishment. [Obs.]
   [1913 Webster]

"""
ABBE = """Abb['e] \\Ab`b['e]"\\, n. [F. abb['e], LL. abbas.]
   A title given in France to every one vested with the
   ecclesiastical habit. -- {Ab`b['e]"ship}, n.
   [1913 Webster]

"""
BANC = """Banc \\Banc\\, Bancus \\Ban"cus\\, n.
   A bench; a tribunal or court.
   [1913 Webster]

"""
SKILFUL = """Skilful \\Skil"ful\\, a.
   See {Skillful}.
   [1913 Webster]

"""
TWO = """2 \\2\\ adj.
   Denoting a quantity consisting of one more than one; --
   representing the number two as an Arabic numeral.

   Syn: two, ii
        [WordNet 1.5]

"""
GCIDE_SHORT = "The Collaborative International Dictionary of English v.0.48"
GCIDE_BLOCKS = [
    (["Abandon", "Abandoning"], ABANDON_V),
    (["Abandon"], ABANDON_N),
    (["Abb'e"], ABBE),
    (["Banc", "Bancus"], BANC),
    (["Bank", "Bank beaver", "Bank swallow", "Cash credit"], BANK),
    (["Skilful"], SKILFUL),
    (["2"], TWO),
]
WEBSTER = "1913 Webster"
GCIDE_EXPECTED = [
    {
        "entry": "Abandon",
        "definitions": [
            "To cast or drive out; to banish; to expel; to reject.",
            "To give up absolutely; to forsake entirely.",
            "Abandonment; relinquishment.",
        ],
        "sources": ["gcide-mini"],
        "split": "train",
        "meta": [
            {"pos": "v. t.", "labels": ["Obs."], "origin": WEBSTER},
            {"pos": "v. t.", "origin": WEBSTER},
            {"pos": "n.", "labels": ["Obs."], "origin": WEBSTER},
        ],
    },
    {
        "entry": "Abbé",
        "definitions": ["A title given in France to every one vested with the ecclesiastical habit."],
        "sources": ["gcide-mini"],
        "split": "train",
        "meta": [{"pos": "n.", "origin": WEBSTER}],
    },
    *[
        {
            "entry": name,
            "definitions": ["A bench; a tribunal or court."],
            "sources": ["gcide-mini"],
            "split": "train",
            "meta": [{"pos": "n.", "origin": WEBSTER}],
        }
        for name in ("Banc", "Bancus")
    ],
    {
        "entry": "Bank",
        "definitions": [
            "A mound, pile, or ridge of earth, raised above the surrounding level",
            "The face of the coal at which miners are working.",
            "The ground at the top of a shaft",
            "The lateral inclination of an aëroplane as it rounds a curve.",
            "A bench, as for rowers in a galley.",
        ],
        "sources": ["gcide-mini"],
        "split": "train",
        "meta": [
            {"pos": "n.", "origin": WEBSTER},
            {"pos": "n.", "labels": ["Mining"], "origin": WEBSTER},
            {"pos": "n.", "labels": ["Mining"], "origin": WEBSTER},
            {"pos": "n.", "labels": ["Aëronautics"], "origin": "Webster 1913 Suppl."},
            {"pos": "n.", "labels": ["Obs."], "origin": WEBSTER},
        ],
    },
    {
        "entry": "Bank beaver",
        "definitions": ["the otter."],
        "sources": ["gcide-mini"],
        "split": "train",
        "meta": [{"labels": ["Zool.", "Local, U.S."], "origin": WEBSTER}],
    },
    {
        "entry": "Bank swallow",
        "definitions": ["a small American and European swallow (Clivicola riparia) that nests in a bank."],
        "sources": ["gcide-mini"],
        "split": "train",
        "meta": [{"origin": WEBSTER}],
    },
    {
        "entry": "2",
        "definitions": [
            "Denoting a quantity consisting of one more than one; -- representing the number two as an Arabic numeral."
        ],
        "sources": ["gcide-mini"],
        "split": "train",
        "meta": [{"pos": "adj.", "origin": "WordNet 1.5"}],
    },
]

FOLDOC_SHORT = "The Free On-line Dictionary of Computing (19 January 2023)"
FOLDOC_BLOCKS = [
    (
        ["!", "exclamation mark", "shriek"],
        """exclamation mark
!
shriek

   <character> The character "!" with {ASCII} code 33.

   Common names: {bang}; pling; excl.

   (1998-09-17)

""",
    ),
    (
        ["hacker"],
        """hacker

   <person, jargon> (Originally, someone who makes furniture
   with an axe) 1. A person who enjoys exploring the details of
   programmable systems.

   2. One who programs enthusiastically (even obsessively).

   3. <security> A malicious meddler, see {cracker}.

   The term "hacker" also tends to connote membership.

   [{Jargon File}]

   (1996-08-26)

""",
    ),
    (
        ["python"],
        """Python

   <language> A simple, high-level interpreted language invented
   by Guido van Rossum <guido@cwi.nl> in 1991. See {the Python
   home page (http://www.python.org/)}.

   (2003-06-23)

""",
    ),
    (
        ["kill file"],
        """kill file

   [{Usenet}] Per-user file(s) used by some {Usenet} reading
   programs to discard summarily articles.

   [{Jargon File}]

""",
    ),
    (["ascii art"], "ASCII art\n\n   <character> See {ASCII}.\n\n   (1995-01-01)\n\n"),
]
EXCLAMATION = 'The character "!" with ASCII code 33.'
FOLDOC_EXPECTED = [
    *[
        {
            "entry": name,
            "definitions": [EXCLAMATION],
            "sources": ["foldoc-mini"],
            "split": "train",
            "meta": [{"categories": ["character"]}],
        }
        for name in ("exclamation mark", "!", "shriek")
    ],
    {
        "entry": "hacker",
        "definitions": [
            "A person who enjoys exploring the details of programmable systems.",
            "One who programs enthusiastically (even obsessively).",
            "A malicious meddler, see cracker.",
        ],
        "sources": ["foldoc-mini"],
        "split": "train",
        "meta": [
            {"categories": ["person", "jargon"]},
            {"categories": ["person", "jargon"]},
            {"categories": ["security"]},
        ],
    },
    {
        "entry": "Python",
        "definitions": [
            "A simple, high-level interpreted language invented by Guido van Rossum in 1991. See the Python home page."
        ],
        "sources": ["foldoc-mini"],
        "split": "train",
        "meta": [{"categories": ["language"]}],
    },
    {
        "entry": "kill file",
        "definitions": ["Per-user file(s) used by some Usenet reading programs to discard summarily articles."],
        "sources": ["foldoc-mini"],
        "split": "train",
        "meta": [{"labels": ["Usenet"]}],
    },
]

JARGON_BLOCKS = [
    (
        ["foo"],
        """foo
 /foo/

    1. interj. Term of disgust.

    2. [very common] Used very generally as a sample name for
    absolutely anything.

    When 'foo' is used in connection with 'bar' it has generally
    traced to FUBAR.

""",
    ),
    (
        ["/dev/null"],
        """/dev/null
 /dev·nuhl/, n.

    [from the Unix null device, used as a data sink] A notional
    ‘black hole’ in any information space. See {bit bucket}.

""",
    ),
]


@pytest.fixture
def gcide(tmp_path) -> Path:
    return write_dictd(tmp_path, "gcide-mini", GCIDE_SHORT, GCIDE_BLOCKS)


@pytest.fixture
def foldoc(tmp_path) -> Path:
    return write_dictd(tmp_path, "foldoc-mini", FOLDOC_SHORT, FOLDOC_BLOCKS)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --------------------------------------------------------------------------- the format


def test_base64_numbers():
    # from /usr/share/dictd/foldoc.index: "!<TAB>Gb9L<TAB>K5" is the block at 1,687,371 of 697 bytes
    assert dictd.b64_decode("Gb9L") == 1687371 and dictd.b64_decode("K5") == 697
    assert dictd.b64_decode("A") == 0 and dictd.b64_decode("/") == 63 and dictd.b64_decode("BA") == 64
    for n in (0, 1, 63, 64, 4095, 4096, 13527370, 2**40):
        assert dictd.b64_decode(dictd.b64_encode(n)) == n
    for bad in ("", "a b", "A=", "é"):
        with pytest.raises(ValueError):
            dictd.b64_decode(bad)
    assert dictd.looks_like_index_line("!\tGb9L\tK5") and not dictd.looks_like_index_line("dog\ta pet\tx y")


def test_gcide_senses_labels_origins_run_ons(gcide):
    entries = list(build.merge(dictd.read_dictd(gcide)))
    assert [e.to_dict() for e in entries] == GCIDE_EXPECTED
    # --examples keeps "; as, ..."
    kept = {e.entry: e for e in build.merge(dictd.read_dictd(gcide, include_examples=True))}
    assert kept["Bank"].definitions[0] == (
        "A mound, pile, or ridge of earth, raised above the surrounding level; as, a bank of snow."
    )
    assert kept["Bank"].definitions[2] == "The ground at the top of a shaft; as, ores are brought to bank."


def test_gcide_run_on_phrases_and_a_head_over_two_lines():
    block = (
        "Gripe \\Gripe\\, n., or Gripes \\Gripes\\, n. pl., formerly\n"
        "   {Gripen}. [AS. gripe.]\n"
        "   1. Grasp; seizure; fast hold; clutch.\n"
        "      [1913 Webster]\n\n"
        "   {In banc}, {In banco} (the ablative of bancus), {In bank}, in full\n"
        "      court.\n\n"
        "   {Gripe penny}, {a} miser; a niggard. --D. L. Mackenzie.\n"
        "      [1913 Webster]\n"
    )
    parsed = parse_gcide(block)
    assert parsed.names == ["Gripe", "Gripes"]
    assert [(s.names, s.text, s.meta) for s in parsed.senses] == [
        (None, "Grasp; seizure; fast hold; clutch.", {"origin": WEBSTER}),
        (["In banc", "In banco", "In bank"], "in full court.", {"origin": WEBSTER}),
        (["Gripe penny"], "a miser; a niggard.", {"origin": WEBSTER}),
    ]


def test_gcide_text_codes():
    assert gcide_text("Abb['e] a[\"e]roplane 45[deg] [ae]on c[,c] [OE]") == "Abbé aëroplane 45° æon cç Œ"
    assert gcide_text("[Obs.] [They] [root]47a") == "[Obs.] [They] √47a"


def test_foldoc_first_paragraph_categories_aliases(foldoc):
    assert [e.to_dict() for e in build.merge(dictd.read_dictd(foldoc))] == FOLDOC_EXPECTED


def test_jargon_and_plain_databases(tmp_path):
    jargon = write_dictd(tmp_path, "jargon-mini", "The Jargon File (version 4.4.7, 29 Dec 2003)", JARGON_BLOCKS)
    assert [e.to_dict() for e in build.merge(dictd.read_dictd(jargon))] == [
        {
            "entry": "foo",
            "definitions": ["Term of disgust.", "Used very generally as a sample name for absolutely anything."],
            "sources": ["jargon-mini"],
            "split": "train",
            "meta": [{"pos": "interj."}, {"labels": ["very common"]}],
        },
        {
            "entry": "/dev/null",
            "definitions": ["A notional ‘black hole’ in any information space. See bit bucket."],
            "sources": ["jargon-mini"],
            "split": "train",
            "meta": [{"pos": "n."}],
        },
    ]
    # any other database: the text after the headword line, one definition per index line
    devil = write_dictd(
        tmp_path,
        "devil",
        "The Devil's Dictionary (1881-1906)",
        [(["ABASEMENT"], "ABASEMENT\n   ABASEMENT, n. A decent and customary mental\n   attitude.\n\n")],
        data=".dict",
    )
    assert [e.to_dict() for e in build.merge(dictd.read_dictd(devil))] == [
        {
            "entry": "ABASEMENT",
            "definitions": ["ABASEMENT, n. A decent and customary mental attitude."],
            "sources": ["devil"],
            "split": "train",
        }
    ]


def test_a_database_by_any_of_its_names(tmp_path, gcide):
    base = str(gcide)[: -len(".index")]
    expected = [e.to_dict() for e in build.merge(dictd.read_dictd(gcide))]
    for given in (gcide, Path(base + ".dict.dz"), Path(base)):
        assert sources.detect_format(given) == "dictd"
        assert [e.to_dict() for e in build.merge(sources.read_source(given))] == expected
    plain = tmp_path / "plain"
    plain.mkdir()
    index = write_dictd(plain, "gcide-mini", GCIDE_SHORT, GCIDE_BLOCKS, data=".dict")
    assert [e.to_dict() for e in build.merge(sources.read_source(index, "dictd"))] == expected


def test_dictd_errors(tmp_path, gcide):
    lone = tmp_path / "lone.index"
    lone.write_text("dog\tA\tB\n")
    with pytest.raises(DefsentError, match=r"lone\.index: no lone\.dict\.dz \(or lone\.dict\) beside this dictd index"):
        list(dictd.read_dictd(lone))
    with pytest.raises(DefsentError, match=r"no dictd index nothing\.index beside it"):
        list(dictd.read_dictd(tmp_path / "nothing"))
    bad = tmp_path / "bad"
    bad.mkdir()
    index = write_dictd(bad, "x", "x", [(["dog"], "dog\n   a pet\n")], data=".dict")
    index.write_text(index.read_text() + "cat\tZZZZ\tB\n")
    with pytest.raises(DefsentError, match=r"x\.index:4: .*points past the end of x\.dict"):
        list(dictd.read_dictd(index))
    index.write_text(index.read_text().replace("cat\tZZZZ\tB", "cat\tA=\tB"))
    with pytest.raises(DefsentError, match=r"x\.index:4: not a dictd index line: 'A=' is not"):
        list(dictd.read_dictd(index))
    (bad / "x.dict").unlink()
    (bad / "x.dict.dz").write_bytes(b"not gzip at all")
    index.write_text(index.read_text().replace("cat\tA=\tB\n", ""))
    with pytest.raises(DefsentError, match=r"x\.dict\.dz: not a dictzip"):
        list(dictd.read_dictd(index))


# --------------------------------------------------------------------------- a reader refuses what it cannot read


def test_tsv_refuses_a_dictd_index_and_other_formats(tmp_path, gcide):
    # the index alone (no data beside it) read as TSV: named as what it is
    index = tmp_path / "alone" / "foldoc.index"
    index.parent.mkdir()
    index.write_text("!\tGb9L\tK5\n/dev/null\tUz\tE2\n")
    assert sources.detect_format(index) == "tsv"
    with pytest.raises(DefsentError, match=r"foldoc\.index:1: expected 'entry<TAB>definition', found 3 .*dictd index"):
        list(sources.read_source(index))
    with pytest.raises(DefsentError, match=r"gcide-mini\.index:1: .*this is a dictd index.*--format dictd"):
        list(sources.read_source(gcide, "tsv"))
    with pytest.raises(DefsentError, match=r"gcide-mini\.dict\.dz: is the text of a dictd database, not tsv"):
        list(sources.read_source(Path(str(gcide)[: -len(".index")] + ".dict.dz"), "tsv"))
    three = tmp_path / "three.tsv"
    three.write_text("dog\ta pet\nwolf\ta wild\tdog\n")
    with pytest.raises(DefsentError, match=r"three\.tsv:2: .*found 3 tab-separated columns; a definition cannot"):
        list(sources.read_tsv(three))
    jsonl = tmp_path / "dict.txt"
    jsonl.write_text('{"entry": "dog", "definitions": ["a pet"]}\n')
    with pytest.raises(DefsentError, match=r"dict\.txt:1: .*no tab on this line: this is JSONL.*--format jsonl"):
        list(sources.read_source(jsonl, "tsv"))
    gz = tmp_path / "words.tsv"
    gz.write_bytes(gzip.compress(b"dog\ta pet\n"))
    with pytest.raises(DefsentError, match=r"words\.tsv: is a gzip file, not plain text; gunzip it first"):
        list(sources.read_source(gz))
    kaikki = tmp_path / "kaikki.jsonl"
    kaikki.write_text(json.dumps({"word": "dog", "pos": "noun", "senses": [{"glosses": ["A mammal."]}]}) + "\n")
    with pytest.raises(DefsentError, match=r"kaikki\.jsonl: is not a dictionary JSONL: .*Wiktionary.*glossary"):
        list(sources.read_source(kaikki))
    stardict = tmp_path / "mine.ifo"
    stardict.write_text("StarDict's dict ifo file\n")
    assert sources.detect_format(stardict) == "glossary"
    with pytest.raises(DefsentError, match=r"mine\.ifo: is a glossary file \(\.ifo\), not tsv; .*--format glossary"):
        list(sources.read_source(stardict, "tsv"))
    with pytest.raises(DefsentError, match=r"holds dictd databases \(gcide-mini\.index\), not WordNet"):
        list(sources.read_source(gcide.parent))


def test_cli_dictd_index_given_as_tsv_is_one_line(cli, gcide, tmp_path):
    out = tmp_path / "f.jsonl"
    result = cli("build-dict", gcide, "--format", "tsv", "-o", out)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "this is a dictd index" in result.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- build-dict


def test_cli_build_dict_dictd_merged_with_tsv_and_stats(cli, gcide, foldoc, tmp_path):
    extra = tmp_path / "mine.tsv"
    extra.write_text("BANK\tA place where money is kept.\nbank\tA bench, as for rowers in a galley.\n")
    out = tmp_path / "d.jsonl"
    result = cli("build-dict", gcide, Path(str(foldoc)[: -len(".index")]), extra, "-o", out, "--stats")
    assert result.exit_code == 0, result.stderr
    assert "wrote 14 entries, 23 definitions from foldoc-mini, gcide-mini, mine" in result.stderr
    got = {r["entry"]: r for r in rows(out)}
    assert got["Bank"]["sources"] == ["gcide-mini", "mine"]
    assert got["Bank"]["definitions"][-1] == "A place where money is kept."  # the duplicate one dropped
    assert got["Bank"]["meta"][-1] == {}  # the TSV says nothing about its definition
    assert got["hacker"] == FOLDOC_EXPECTED[3]
    table = result.stderr[result.stderr.index("per source") :]
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if line.count("│") == 5]
    assert {c[0]: (int(c[1].replace(",", "")), int(c[2].replace(",", ""))) for c in cells} == {
        "gcide-mini": (8, 14),
        "foldoc-mini": (6, 8),
        "mine": (1, 1),  # Bank lists it; one of its two definitions was new
        "total": (14, 23),
    }

    # meta is kept through a rebuild from the JSONL
    again = tmp_path / "again.jsonl"
    assert cli("build-dict", out, "-o", again).exit_code == 0
    assert rows(again) == rows(out)


def test_source_stats_counts_each_definition_once():
    origins: dict[str, list[str]] = {}
    items = [("dog", "a pet", "wordnet"), ("Dog", "a pet", "gcide"), ("dog", "a hound", "gcide"), ("cat", "a", "x")]
    entries = build.merge(items, origins=origins)
    assert stats.source_stats(entries, origins) == {
        "wordnet": {"entries": 1, "definitions": 1},
        "gcide": {"entries": 1, "definitions": 1},
        "x": {"entries": 1, "definitions": 1},
        "total": {"entries": 2, "definitions": 3},
    }


def test_cli_category_filters_definitions(cli, foldoc, gcide, tmp_path):
    out = tmp_path / "c.jsonl"
    result = cli("build-dict", foldoc, "--category", "Person", "--category", "language", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert rows(out) == [
        {
            "entry": "hacker",
            "definitions": FOLDOC_EXPECTED[3]["definitions"][:2],
            "sources": ["foldoc-mini"],
            "split": "train",
            "meta": [{"categories": ["person", "jargon"]}] * 2,
        },
        FOLDOC_EXPECTED[4],
    ]
    # a source without categories: kept whole, with a warning; none with any: an error
    mixed = tmp_path / "m.jsonl"
    result = cli("build-dict", foldoc, gcide, "--category", "character", "-o", mixed)
    assert result.exit_code == 0, result.stderr
    assert "warning: --category does not apply to gcide-mini.index (no categories): kept whole" in result.stderr
    assert len(rows(mixed)) == 3 + 8
    result = cli("build-dict", gcide, "--category", "programming", "-o", tmp_path / "x.jsonl")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "--category: gcide-mini.index has no categories" in result.stderr
    result = cli("build-dict", foldoc, "--category", "programing", "-o", tmp_path / "x.jsonl")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "--category programing: no definition of foldoc-mini.index has it; its categories include" in result.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_meta_is_validated_and_optional(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"entry": "dog", "definitions": ["a pet", "a hound"], "meta": [{"pos": "n."}]}\n')
    with pytest.raises(DefsentError, match=r"d\.jsonl:1: 'meta' must be a list of 2 JSON objects"):
        fmt.read_dictionary(path)
    path.write_text('{"entry": "dog", "definitions": ["a pet"], "meta": [{"pos": "n."}], "split": "dev"}\n')
    [entry] = fmt.read_dictionary(path)
    assert entry.meta == [{"pos": "n."}] and entry.to_dict()["meta"] == [{"pos": "n."}]
    assert "meta" not in fmt.Entry("cat", ["a pet"], []).to_dict()
    assert "meta" not in fmt.Entry("cat", ["a pet"], [], meta=[{}]).to_dict()


# --------------------------------------------------------------------------- the real databases


@pytest.mark.skipif(not REAL_FOLDOC.is_file(), reason="apt-get install dict-foldoc gives /usr/share/dictd/foldoc.*")
def test_real_foldoc():
    entries = {e.entry: e for e in build.merge(sources.read_source(REAL_FOLDOC))}
    assert len(entries) > 14000
    null = entries["/dev/null"]
    assert null.definitions[0].startswith(
        "The Unix software device that discards any data written to it and supplies zero bytes of data when read."
    )
    assert null.meta[0]["categories"] == ["operating system"]
    assert entries["!"].definitions == [EXCLAMATION] and entries["!"].sources == ["foldoc"]
    assert not any(e.entry.startswith("00-database") for e in entries.values())


# --------------------------------------------------------------------------- glossaries through pyglossary


def test_glossary_without_pyglossary_says_how_to_install(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyglossary", None)
    monkeypatch.setitem(sys.modules, "pyglossary.glossary_v2", None)
    src = tmp_path / "mine.ifo"
    src.write_text("StarDict's dict ifo file\n")
    result = cli("build-dict", src, "-o", tmp_path / "g.jsonl")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "needs pyglossary: pip install 'defsent-cli[glossary]'" in result.stderr


def test_pyglossary_is_imported_only_for_glossaries(gcide, tmp_path):
    code = (
        "import sys; from pathlib import Path; from defsent_cli.dictionary import build; "
        f"build.build_dictionary([(Path({str(gcide)!r}), 'auto')], build.BuildSettings(), show_progress=False); "
        "import defsent_cli.cli; print('pyglossary' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_split_definition_senses():
    from defsent_cli.dictionary.glossary import split_definition

    assert split_definition(
        "<ol><li>a <b>domesticated</b> animal</li><li>a dull &amp; dreary person</li></ol>", "h"
    ) == [
        "a domesticated animal",
        "a dull & dreary person",
    ]
    assert split_definition("1. a small feline\n2. a spiteful woman") == ["a small feline", "a spiteful woman"]
    assert split_definition("a feeling of  great\nhappiness") == ["a feeling of great happiness"]
    assert split_definition("<p>one<br>two</p>", "h") == ["one two"]


def test_glossary_through_pyglossary(cli, tmp_path):
    skip_without("pyglossary", "the glossary extra: pip install 'defsent-cli[glossary]'")
    from defsent_cli.dictionary.glossary import load_pyglossary

    glossary_class = load_pyglossary()
    glossary = glossary_class()
    glossary.addEntry(
        glossary.newEntry(
            ["dog", "dogs"], "<ol><li>a <b>domesticated</b> carnivore</li><li>a dull person</li></ol>", "h"
        )
    )
    glossary.addEntry(glossary.newEntry("Joy", "a feeling of great happiness", defiFormat="m"))
    glossary.setInfo("name", "mine")
    glossary.write(str(tmp_path / "mine.ifo"), formatName="Stardict")
    extra = tmp_path / "extra.tsv"
    extra.write_text("joy\tdelight\n")
    out = tmp_path / "g.jsonl"
    result = cli("build-dict", tmp_path / "mine.ifo", extra, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert rows(out) == [
        {
            "entry": "dog",
            "definitions": ["a domesticated carnivore", "a dull person"],
            "sources": ["mine"],
            "split": "train",
        },
        {
            "entry": "Joy",
            "definitions": ["a feeling of great happiness", "delight"],
            "sources": ["mine", "extra"],
            "split": "train",
        },
    ]
    broken = tmp_path / "broken.ifo"
    broken.write_text("garbage\n")
    result = cli("build-dict", broken, "--format", "glossary", "-o", tmp_path / "b.jsonl")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "broken.ifo: pyglossary" in result.stderr


# --------------------------------------------------------------------------- examples/dictd.sh


def _script(*args, cwd: Path, **env) -> subprocess.CompletedProcess:
    import os

    environ = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", DEFSENT_NO_PROGRESS="1")
    return subprocess.run(
        ["bash", str(REPO / "examples" / "dictd.sh"), *map(str, args)],
        cwd=cwd,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
def test_dictd_example_script(foldoc, tmp_path):
    shown = _script("--help", cwd=tmp_path)
    assert shown.returncode == 0 and "examples/dictd.sh" in shown.stdout and "dict-foldoc" in shown.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foldoc-mini.dict.dz", "foldoc-mini.index"]
    done = _script(tmp_path / "out", foldoc, cwd=tmp_path, CATEGORY="person")
    assert done.returncode == 0, done.stderr
    written = rows(tmp_path / "out" / "foldoc-mini-person.jsonl")
    assert [r["entry"] for r in written] == ["hacker"]
    assert "per source" in done.stderr and "split" in done.stderr


@pytest.mark.parametrize(
    "text, first",
    [
        ("A language. It was designed in 1970.", "A language."),
        ("A protocol, e.g. TCP. Used widely.", "A protocol, e.g. TCP."),
        ("Named after J. Smith, its author. See also X.", "Named after J. Smith, its author."),
        ("One sentence with no end", "One sentence with no end"),
        ("Ends here.  (Not a new sentence?) Yes.", "Ends here."),
        ("  spaced   out.   Second.", "spaced out."),
        # FOLDOC's: a numbered sense, initials, a date, a byline open the sentence they belong to (issue 76)
        ("1. Boolean algebra. 2. A Boolean type.", "1. Boolean algebra."),
        ("(C. Anthony R. Hoare, Tony) A computer scientist. Hoare was responsible for CSP.",
         "(C. Anthony R. Hoare, Tony) A computer scientist."),
        ("D.L. Abt. A language for systems programming. Based on ALGOL 60.",
         "D.L. Abt. A language for systems programming."),
        ("1856-1922. The Russian mathematician after whom Markov chains are named. He studied probability.",
         "1856-1922. The Russian mathematician after whom Markov chains are named."),
        ("Thompson, 1956. Ran on IBM 650. Obsolete.", "Thompson, 1956. Ran on IBM 650."),
        ("(Or \"digirati\". By analogy with \"literati\") People who know computers. Slang.",
         "(Or \"digirati\". By analogy with \"literati\") People who know computers."),
        ("A language developed by A.P. Ershov ca. 1961. It had lists.", "A language developed by A.P. Ershov ca. 1961."),
        ("1958.", "1958."),  # no sentence ends: the whole (merge then drops it as a fragment)
        # and normal sentences are cut as before
        ("Released in 1995. It was widely used.", "Released in 1995."),
        ("A unit of information. Eight bits make a byte.", "A unit of information."),
        ("电脑。一种机器。", "电脑。一种机器。"),
    ],
)  # fmt: skip
def test_first_sentence_cuts_at_the_first_real_sentence_end(text, first):
    from defsent_cli.dictionary.text import first_sentence

    assert first_sentence(text) == first


@pytest.mark.parametrize(
    "definition, fragment",
    [("1.", True), ("(C.", True), ("D.L.", True), ("1856-1922.", True), ("1958.", True), ("a)", True),
     ("12", False), ("3.14159", False), ("K&R.", False), ("A jump.", False), ("Base two.", False), ("水", False)],
)  # fmt: skip
def test_a_fragment_is_no_sentence(definition, fragment):
    from defsent_cli.dictionary.text import is_fragment

    assert is_fragment(definition) is fragment


def test_build_dict_drops_fragments_from_any_source_and_counts_them(cli, tmp_path):
    """What a cut at the wrong point leaves (a sense number, initials, a year alone) is no definition, from a TSV
    as from a dictd database; a number stays; --stats counts them by source."""
    tsv = tmp_path / "d.tsv"
    tsv.write_text("tick\t1.\ntick\tA jiffy.\nchili\tD.L.\nzed\t1978.\ndozen\t12\n")
    out = tmp_path / "d.jsonl"
    result = cli("build-dict", tsv, "--first-sentence", "--stats", "-o", out)
    assert result.exit_code == 0, result.stderr
    rows = {r["entry"]: r["definitions"] for r in map(json.loads, out.read_text().splitlines())}
    assert rows == {"tick": ["A jiffy."], "dozen": ["12"]}
    cells = {tuple(c.strip() for c in line.split("│")[1:4]) for line in result.stderr.splitlines() if "│" in line}
    assert ("d", "a fragment, no sentence (1. (C. D.L. 1856-1922.)", "3") in cells, cells


def test_build_dict_first_sentence_option(cli, tmp_path):
    tsv = tmp_path / "d.tsv"
    tsv.write_text("lisp\tA programming language. It has many parentheses.\nlisp\tA programming language.\n")
    out = tmp_path / "d.jsonl"
    result = cli("build-dict", tsv, "--first-sentence", "-o", out)
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [{"entry": "lisp", "definitions": ["A programming language."], "sources": ["d"], "split": "train"}]
