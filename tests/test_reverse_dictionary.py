"""The reverse dictionary as people use it (issue 78): parts of speech (``formats/pos.py``), the query language
(``search/query_syntax.py``: ``pos:``, letter patterns), filters before the top k, synonyms grouped, and ``define``
(``search/reverse.py``, ``cli/lookup.py``, ``cli/define.py``). The server's side is in test_serve.py."""

from __future__ import annotations

import json

import h5py
import pytest

from defsent_cli.formats.pos import check_pos, entry_pos, normalize_pos
from defsent_cli.search.query_syntax import Query, parse_query, pattern_matcher, pattern_order

TORCH_FP32 = ["--runtime", "torch", "--precision", "fp32", "--device", "cpu"]
#: entry -> [(definition, the source's part-of-speech tag)]: WordNet's letters and GCIDE's abbreviations mixed
SENSES = {
    "piglet": [("a baby pig", "n")],
    "shote": [("a baby pig", "n.")],
    "piggy": [("a young pig", "noun"), ("like a pig; greedy", "s")],
    "piggyback": [("on the back or shoulders", "adv.")],
    "swim": [("move through water using arms and legs", "v. i.")],
    "booklet": [("a small book with a paper cover", "n")],
    "eaglet": [("a young eagle", "n")],
    "greedy": [("wanting more than one needs", "a.")],
}


# ---------------------------------------------------------------- pure functions, hand-written cases


@pytest.mark.parametrize(
    "tag, expected",
    [
        ("n", "noun"), ("n.", "noun"), ("n. pl.", "noun"), ("noun", "noun"), ("v", "verb"), ("v. t.", "verb"),
        ("v. i.", "verb"), ("vt.", "verb"), ("a", "adj"), ("s", "adj"), ("a.", "adj"), ("adj.", "adj"),
        ("a. & n.", "adj"), ("r", "adv"), ("adv.", "adv"), ("interj.", "other"), ("prep.", "other"),
        ("conj.", "other"), ("", None), (None, None), ("  ", None),
    ],
)  # fmt: skip
def test_normalize_pos(tag, expected):
    assert normalize_pos(tag) == expected


def test_entry_pos_and_check_pos():
    assert entry_pos([{"pos": "s"}, {"pos": "n."}, {}, {"labels": ["Obs."]}]) == "noun,adj"
    assert entry_pos(None) == "" and entry_pos([{}]) == ""
    assert check_pos("Noun") == "noun" and check_pos("v.") == "verb"
    with pytest.raises(ValueError, match="use one of noun, verb, adj, adv, other"):
        check_pos("banana")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a baby pig", Query("a baby pig")),
        ("pig*", Query("", None, "pig*")),
        ("????let", Query("", None, "????let")),
        ("a baby pig:p*", Query("a baby pig", None, "p*")),
        ("a baby pig :p*", Query("a baby pig", None, "p*")),
        ("pos:noun a baby pig", Query("a baby pig", "noun")),
        ("a baby   pig pos:ADJ", Query("a baby pig", "adj")),
        ("pos:noun *let", Query("", "noun", "*let")),
        ("greedy pos:adj:p*", Query("greedy", "adj", "p*")),  # the colon pattern after the pos: token
        ("time: the indefinite continued progress", Query("time: the indefinite continued progress")),
        ("pig", Query("pig")),  # one word and no wildcard: a description, encoded
    ],
)
def test_parse_query(text, expected):
    assert parse_query(text) == expected


def test_parse_query_fields_and_refusals():
    assert parse_query("a baby pig", pos="noun", pattern="p*") == Query("a baby pig", "noun", "p*")
    assert parse_query("a baby pig pos:noun", pos="noun") == Query("a baby pig", "noun")
    for text, kwargs, message in [
        ("x pos:noun pos:verb", {}, "two parts of speech"),
        ("x pos:noun", {"pos": "verb"}, "two parts of speech"),
        ("x pos:", {}, "needs a part of speech"),
        ("x pos:fruit", {}, "unknown part of speech"),
        ("x:p*", {"pattern": "q*"}, "two patterns"),
        ("*", {}, "matches every entry"),
        ("x", {"pattern": "a b*"}, "is not one"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_query(text, **kwargs)


def test_pattern_matcher_and_order():
    words = ["piglet", "Piggy", "piggyback", "booklet", "eaglet", "pig", "guinea pig", "p.m.", "pig-iron"]
    assert [w for w in words if pattern_matcher("pig*")(w)] == ["piglet", "Piggy", "piggyback", "pig", "pig-iron"]
    assert [w for w in words if pattern_matcher("????let")(w)] == ["booklet"]
    assert [w for w in words if pattern_matcher("*let")(w)] == ["piglet", "booklet", "eaglet"]
    assert [w for w in words if pattern_matcher("*pig")(w)] == ["pig", "guinea pig"]  # * runs over a space
    assert [w for w in words if pattern_matcher("p?g")(w)] == ["pig"]
    assert [w for w in words if pattern_matcher("p.m.")(w)] == ["p.m."]  # a dot is a dot, not a wildcard
    ranked = sorted([("piglet", 1), ("piggy", 2), ("piggyback", 1), ("pig", 1)], key=lambda e: pattern_order(*e))
    assert [e for e, _ in ranked] == ["piggy", "pig", "piglet", "piggyback"]


# ---------------------------------------------------------------- the command line over a bank


@pytest.fixture(scope="module")
def pos_bank(tmp_path_factory, tiny_st):
    """A dictionary whose definitions carry their source's part-of-speech tags, and its bank."""
    from typer.testing import CliRunner

    from defsent_cli.cli import app

    folder = tmp_path_factory.mktemp("pos")
    dictionary = folder / "dict.jsonl"
    rows = [
        {"entry": e, "definitions": [d for d, _ in s], "sources": ["test"], "meta": [{"pos": p} for _, p in s]}
        for e, s in SENSES.items()
    ]
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = folder / "bank.h5"
    args = ["embed-entries", dictionary, "-m", tiny_st, "--pool", "mean", "-o", bank, *TORCH_FP32, "-q"]
    done = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert done.exit_code == 0, done.stderr
    return {"dict": dictionary, "bank": bank, "model": tiny_st, "folder": folder}


def lookup(cli, world, *args, bank=None):
    result = cli("lookup", "-m", world["model"], "--bank", bank or world["bank"], *args)
    assert result.exit_code == 0, result.stderr
    return result


def results(cli, world, *args, bank=None) -> list[dict]:
    return json.loads(lookup(cli, world, "--json", *args, bank=bank).stdout)["results"]


def test_the_bank_keeps_each_entrys_parts_of_speech(pos_bank):
    with h5py.File(pos_bank["bank"], "r") as h5:
        entries = [e.decode() for e in h5["entries"][:]]
        pos = dict(zip(entries, (p.decode() for p in h5["pos"][:]), strict=True))
    assert pos == {
        "piglet": "noun", "shote": "noun", "piggy": "noun,adj", "piggyback": "adv", "swim": "verb",
        "booklet": "noun", "eaglet": "noun", "greedy": "adj",
    }  # fmt: skip


def test_lookup_groups_synonyms_and_shows_definitions(cli, pos_bank):
    found = results(cli, pos_bank, "-k", "3", "a baby pig")
    assert len(found) == 3  # three results, though the first holds two entries
    assert found[0]["words"] == ["piglet", "shote"] and found[0]["entry"] == "piglet"
    assert found[0]["score"] == pytest.approx(1.0, abs=1e-5) and found[0]["definitions"] == ["a baby pig"]
    assert found[0]["pos"] == ["noun"] and all(-1 <= hit["score"] <= 1 for hit in found)  # cosines
    text = lookup(cli, pos_bank, "-k", "2", "a baby pig")
    lines = text.stdout.splitlines()
    assert lines[0] == "a baby pig" and lines[1].startswith("   1. piglet, shote (noun)\t1.0000")
    assert lines[2] == "      a baby pig" and "cosine" in text.stderr


def test_lookup_pos_filters_before_the_top_k(cli, pos_bank):
    nouns = results(cli, pos_bank, "-k", "4", "--pos", "noun", "greedy")
    assert len(nouns) == 4 and all("noun" in hit["pos"] for hit in nouns)
    adjectives = results(cli, pos_bank, "-k", "5", "pos:adj greedy")
    assert sorted(w for hit in adjectives for w in hit["words"]) == ["greedy", "piggy"]  # only two adjectives
    piggy = next(hit for hit in adjectives if hit["entry"] == "piggy")
    assert piggy["definitions"] == ["like a pig; greedy"]  # the senses of the part of speech asked for
    assert results(cli, pos_bank, "--pos", "verb", "a baby pig")[0]["entry"] == "swim"


def test_lookup_patterns_alone_and_with_a_description(cli, pos_bank):
    alone = results(cli, pos_bank, "pig*")
    assert [hit["entry"] for hit in alone] == ["piggy", "piglet", "piggyback"]  # senses, then length
    assert alone[0]["score"] is None and alone[0]["senses"] == 2
    assert [hit["entry"] for hit in results(cli, pos_bank, "????let")] == ["booklet"]
    assert [hit["entry"] for hit in results(cli, pos_bank, "*let")] == ["eaglet", "piglet", "booklet"]
    meaning = results(cli, pos_bank, "a baby pig:p*")
    assert meaning[0]["words"] == ["piglet"] and {hit["entry"] for hit in meaning} == {"piglet", "piggy", "piggyback"}
    assert results(cli, pos_bank, "--pattern", "s*", "a baby pig")[0]["words"] == ["shote"]
    assert results(cli, pos_bank, "zz*") == []
    text = lookup(cli, pos_bank, "pig*").stdout.splitlines()
    assert text[1] == "   1. piggy (noun, adj)\t2 senses" and text[2] == "      a young pig"


def test_define_prints_every_sense(cli, pos_bank):
    result = cli("define", "piggy", "--bank", pos_bank["bank"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "piggy\n   1. (noun) a young pig\n   2. (adj) like a pig; greedy\n"
    result = cli("define", "SHOTE", "piglet", "--dictionary", pos_bank["dict"], "--json")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["entry"] for r in rows] == ["shote", "piglet"]
    assert rows[0]["senses"] == [{"definition": "a baby pig", "pos": "noun"}]
    missing = cli("define", "hog", "--bank", pos_bank["bank"])
    assert missing.exit_code == 2 and "'hog' is not an entry" in missing.stderr and missing.stdout == ""
    assert len(missing.stderr.strip().splitlines()) == 1
    neither = cli("define", "pig")
    assert neither.exit_code == 2 and "--bank" in neither.stderr


def test_a_bank_without_parts_of_speech_refuses_pos_in_one_line(cli, pos_bank, tmp_path):
    old = tmp_path / "old.h5"
    old.write_bytes(pos_bank["bank"].read_bytes())
    with h5py.File(old, "a") as h5:  # a bank written before embed-entries kept them
        del h5["pos"]
    for args in (["--pos", "noun", "a baby pig"], ["pos:noun a baby pig"]):
        result = cli("lookup", "-m", pos_bank["model"], "--bank", old, *args)
        assert result.exit_code == 2 and "keeps no parts of speech" in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""
    found = results(cli, pos_bank, "????let", bank=old)  # a pattern needs no parts of speech
    assert [hit["entry"] for hit in found] == ["booklet"] and "pos" not in found[0]
    bad = cli("lookup", "-m", pos_bank["model"], "--bank", pos_bank["bank"], "x pos:fruit")
    assert bad.exit_code == 2 and "unknown part of speech 'fruit'" in bad.stderr
