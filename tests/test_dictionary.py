"""Dictionary sources, merge, filters, splits, stats and the build-dict / dict-stats commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import data_root

from defsent_cli.dictionary import build, sources, splitting, stats
from defsent_cli.encoder import models
from defsent_cli.errors import DefsentError
from defsent_cli.formats import dictionary as fmt

LICENSE = [
    "  1 This software and database is being provided to you, the LICENSEE, by  ",
    "  2 Princeton University under the following license.  By obtaining, using  ",
    "  3   ",
]
NOUN_LINES = [
    # plain gloss, lemma with '_'
    "00001930 03 n 01 physical_entity 0 007 @ 00001740 n 0000 ~ 00002452 n 0000 ~ 00002684 n 0000 "
    "~ 00007347 n 0000 ~ 00020827 n 0000 ~ 00029677 n 0000 ~ 14580597 n 0000 | an entity that has physical existence  ",
    # ';' in the definition but no quoted example
    "00039021 04 n 01 interaction 0 006 @ 00037396 n 0000 + 01946440 a 0101 + 02376976 v 0101 ~ 00039211 n 0000 "
    "~ 00039297 n 0000 ~ 00040152 n 0000 | a mutual or reciprocal action; interacting  ",
    # three lemmas (one capitalised, two with '_'), a gloss with parentheses
    "02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 001 @ 02083346 n 0000 | a member of the genus Canis "
    "(probably descended from the common wolf) that has been domesticated by man since prehistoric times; "
    'occurs in many breeds; "the dog barked all night"  ',
    # w_cnt is hexadecimal: 0a = 10 lemmas
    "00736375 04 n 0a mischief 0 mischief-making 0 mischievousness 0 deviltry 1 devilry 1 devilment 0 rascality 0 "
    "roguery 0 roguishness 0 shenanigan 0 001 @ 00735936 n 0000 | reckless or malicious behavior that causes "
    "discomfort or annoyance in others  ",
]
DOG_GLOSS = (
    "a member of the genus Canis (probably descended from the common wolf) that has been domesticated by man "
    "since prehistoric times; occurs in many breeds"
)
ADJ_LINES = [
    # gloss with examples
    "00001740 00 a 01 able 0 005 = 05200169 n 0000 = 05616246 n 0000 + 05616246 n 0101 + 05200169 n 0101 "
    "! 00002098 a 0101 | (usually followed by `to') having the necessary means or skill or know-how or authority "
    'to do something; "able to swim"; "she was able to program her computer"  ',
    # adjective markers (a) and (ip); a dangling ';' at the end of the gloss
    "00020103 00 s 02 outback(a) 0 remote 0 003 & 00019874 a 0000 + 05085165 n 0202 + 08505110 n 0101 "
    "| inaccessible and sparsely populated;  ",
    '00014358 00 s 02 abounding 0 galore(ip) 0 001 & 00013887 a 0000 | existing in abundance; "abounding confidence"; '
    '"whiskey galore"  ',
]


@pytest.fixture
def wordnet_dir(tmp_path) -> Path:
    folder = tmp_path / "wordnet"
    folder.mkdir()
    (folder / "data.noun").write_text("\n".join(LICENSE + NOUN_LINES) + "\n")
    (folder / "data.adj").write_text("\n".join(LICENSE + ADJ_LINES) + "\n")
    return folder


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --------------------------------------------------------------------------- WordNet


def test_wordnet_reader_hand_checked(wordnet_dir):
    pairs = list(sources.read_wordnet(wordnet_dir))
    dog = DOG_GLOSS
    mischief = "reckless or malicious behavior that causes discomfort or annoyance in others"
    expected = [
        ("physical entity", "an entity that has physical existence", "wordnet"),
        ("interaction", "a mutual or reciprocal action; interacting", "wordnet"),
        ("dog", dog, "wordnet"),
        ("domestic dog", dog, "wordnet"),
        ("Canis familiaris", dog, "wordnet"),
        *[
            (w, mischief, "wordnet")
            for w in "mischief mischief-making mischievousness deviltry devilry devilment rascality roguery "
            "roguishness shenanigan".split()
        ],
        # data.adj comes after data.noun (data.verb, data.adv absent)
        (
            "able",
            "(usually followed by `to') having the necessary means or skill or know-how or authority to do something",
            "wordnet",
        ),
        ("outback", "inaccessible and sparsely populated", "wordnet"),
        ("remote", "inaccessible and sparsely populated", "wordnet"),
        ("abounding", "existing in abundance", "wordnet"),
        ("galore", "existing in abundance", "wordnet"),
    ]
    assert pairs == expected


def test_wordnet_senses_carry_their_part_of_speech_into_the_dictionary(wordnet_dir, tmp_path):
    senses = {s.entry: s for s in sources.read_wordnet_senses(wordnet_dir)}
    assert senses["dog"].meta == [{"pos": "noun"}] and senses["able"].meta == [{"pos": "adj"}]
    assert senses["remote"].meta == [{"pos": "adj"}]  # WordNet's 's', a satellite adjective
    merged = {e.entry: e for e in build.merge(sources.read_source(wordnet_dir, "wordnet"))}
    assert merged["interaction"].to_dict()["meta"] == [{"pos": "noun"}]
    old = tmp_path / "old.jsonl"  # a dictionary written before meta: still read, no meta
    old.write_text(json.dumps({"entry": "dog", "definitions": ["a pet"]}) + "\n")
    assert fmt.read_dictionary(old)[0].meta is None


def test_wordnet_reader_keeps_examples(wordnet_dir):
    glosses = {lemma: gloss for lemma, gloss, _ in sources.read_wordnet(wordnet_dir, include_examples=True)}
    assert glosses["galore"] == 'existing in abundance; "abounding confidence"; "whiskey galore"'
    assert glosses["able"].endswith('; "able to swim"; "she was able to program her computer"')
    assert glosses["interaction"] == "a mutual or reciprocal action; interacting"


def test_wordnet_reader_errors(tmp_path, wordnet_dir):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DefsentError, match="no WordNet data files.*wordnet-base"):
        list(sources.read_wordnet(tmp_path / "empty"))
    with pytest.raises(DefsentError, match="not a directory"):
        list(sources.read_wordnet(tmp_path / "missing"))
    (wordnet_dir / "data.verb").write_text("\n".join(LICENSE) + "\n00001740 29 v zz breathe 0 | draw air\n")
    with pytest.raises(DefsentError, match=r"data\.verb:4: .*not hexadecimal"):
        list(sources.read_wordnet(wordnet_dir))
    (wordnet_dir / "data.verb").write_text("00001740 29 v 03 breathe 0 | draw air\n")
    with pytest.raises(DefsentError, match=r"data\.verb:1: .*does not match"):
        list(sources.read_wordnet(wordnet_dir))


# --------------------------------------------------------------------------- other readers


def test_oxford_reader(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(
        "revitalize%oxford.1\tverb\toxford\timbue with new life and vitality\textra\n"
        "\n"
        "a cappella%oxford.2\tadverb\toxford\t(with reference to choral music) without instrumental accompaniment\n"
    )
    assert sources.detect_format(path) == "oxford"
    assert list(sources.read_oxford(path)) == [
        ("revitalize", "imbue with new life and vitality", "oxford"),
        ("a cappella", "(with reference to choral music) without instrumental accompaniment", "oxford"),
    ]
    bad = tmp_path / "bad.txt"
    bad.write_text("word%oxford.1\tnoun\toxford\tok\nword%oxford.2\tnoun\n")
    with pytest.raises(DefsentError, match=r"bad\.txt:2: expected at least 4"):
        list(sources.read_oxford(bad))


def test_tsv_reader(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("giraffe\ta long-necked african animal\r\n\ngiraffe\ta tall animal\n")
    assert sources.detect_format(path) == "tsv"
    assert list(sources.read_tsv(path)) == [
        ("giraffe", "a long-necked african animal", "mine"),
        ("giraffe", "a tall animal", "mine"),
    ]
    path.write_text("giraffe\ta tall animal\nno tab here\n")
    with pytest.raises(DefsentError, match=r"mine\.tsv:2: .*no tab"):
        list(sources.read_tsv(path))


def test_defsent_csv_reader_utf16(tmp_path):
    path = tmp_path / "Ox+WN.csv"
    text = "café\ta coffee house<|list_more_def|>a small restaurant\nrevitalize\tgive new life or vigor to\n"
    path.write_text(text, encoding="utf-16")
    assert sources.detect_format(path) == "defsent-csv"
    expected = [
        ("café", "a coffee house", "Ox+WN"),
        ("café", "a small restaurant", "Ox+WN"),
        ("revitalize", "give new life or vigor to", "Ox+WN"),
    ]
    assert list(sources.read_defsent_csv(path, encoding="utf-16")) == expected
    # A UTF-16 byte-order mark is recognised even with the default encoding.
    assert list(sources.read_defsent_csv(path)) == expected
    # Without a BOM, the wrong encoding is a one-line error that suggests --encoding.
    path.write_bytes(text.encode("utf-16-le"))
    assert list(sources.read_defsent_csv(path, encoding="utf-16-le")) == expected
    with pytest.raises(DefsentError, match="--encoding"):
        list(sources.read_defsent_csv(path))


def test_jsonl_reader_and_validation(tmp_path, tiny_dict):
    entries = fmt.read_dictionary(tiny_dict)
    assert [e.entry for e in entries] == ["giraffe", "revitalize", "dog", "joy", "fish"]
    assert entries[2].definitions[1] == "an animal that barks"
    assert [e.split for e in entries] == ["train", "train", "train", "dev", "test"]
    assert sources.detect_format(tiny_dict) == "jsonl"

    path = tmp_path / "defaults.jsonl"
    path.write_text('{"entry": "dog", "definitions": ["a pet"]}\n')
    assert fmt.read_dictionary(path) == [fmt.Entry("dog", ["a pet"], [], "train")]

    bad_rows = {
        '{"entry": "", "definitions": ["x"]}': "'entry' must be a non-empty string",
        '{"entry": "dog", "definitions": []}': "'definitions' must be a non-empty list",
        '{"entry": "dog", "definitions": "a pet"}': "'definitions' must be a non-empty list",
        '{"entry": "dog", "definitions": ["a pet", 3]}': "non-empty strings",
        '{"entry": "dog", "definitions": ["a pet"], "split": "valid"}': "'split' must be one of",
        '{"entry": "dog", "definitions": ["a pet"], "sources": "x"}': "'sources' must be a list",
        '{"entry": "dog", "definitions": ["a pet"]': "invalid JSON",
    }
    for row, message in bad_rows.items():
        path.write_text('{"entry": "cat", "definitions": ["a pet"]}\n' + row + "\n")
        with pytest.raises(DefsentError, match=rf"defaults\.jsonl:2: .*{message}"):
            fmt.read_dictionary(path)


def test_read_source_formats(tmp_path, wordnet_dir):
    path = tmp_path / "x.txt"
    path.write_text("dog\ta pet\n")
    assert list(sources.read_source(path, "tsv")) == [("dog", "a pet", "x")]
    assert sources.detect_format(wordnet_dir) == "wordnet"
    assert next(iter(sources.read_source(wordnet_dir))).entry == "physical entity"  # with its pos: an Entry
    with pytest.raises(DefsentError, match="unknown format"):
        sources.read_source(path, "xml")
    with pytest.raises(DefsentError, match="directories are read as WordNet"):
        sources.read_source(wordnet_dir, "tsv")


# --------------------------------------------------------------------------- merge, filters, splits


def test_merge_case_insensitive_and_whitespace():
    items = [
        ("Dog", "a  domesticated\tanimal ", "wordnet"),
        ("physical  entity", "an entity", "wordnet"),
        ("dog", "a domesticated animal", "oxford"),  # same after whitespace normalisation
        ("DOG", "a pet", "oxford"),
        ("cat", "", "oxford"),  # empty definition: no entry
        fmt.Entry("dog", ["a pet", "a loyal friend"], ["mine", "oxford"], "dev"),
        fmt.Entry("joy", ["great happiness"], ["mine"], "test"),
    ]
    merged = build.merge(items)
    assert merged == [
        fmt.Entry("Dog", ["a domesticated animal", "a pet", "a loyal friend"], ["wordnet", "oxford", "mine"], "train"),
        fmt.Entry("physical entity", ["an entity"], ["wordnet"], "train"),
        fmt.Entry("joy", ["great happiness"], ["mine"], "test"),
    ]
    assert [e.entry for e in build.merge(items, lowercase=True)] == ["dog", "physical entity", "joy"]


def test_filters():
    entries = [fmt.Entry(f"w{i}", [f"d{j}" for j in range(i % 3 + 1)], ["s"]) for i in range(10)]
    assert [e.entry for e in build.min_definitions(entries, 3)] == ["w2", "w5", "w8"]
    assert [e.entry for e in build.max_entries(entries, 4)] == ["w0", "w1", "w2", "w3"]
    assert build.max_entries(entries, None) == entries
    with pytest.raises(DefsentError):
        build.max_entries(entries, 0)


def test_single_token_bert(tiny_bert):
    tokenizer = models.load_tokenizer(tiny_bert)
    entries = [fmt.Entry(w, ["x"], []) for w in ["giraffe", "Dog", "animal", "physical entity", "zebra", "☃", "a"]]
    # BERT is uncased here: "Dog" -> "dog"; "☃" is one token, but [UNK].
    assert [e.entry for e in build.single_token(entries, tokenizer)] == ["giraffe", "Dog", "animal", "a"]


def test_single_token_roberta_uses_leading_space(tiny_roberta):
    tokenizer = models.load_tokenizer(tiny_roberta)
    assert tokenizer.tokenize("animal") != ["Ġanimal"]  # two pieces without the space...
    entries = [fmt.Entry(w, ["x"], []) for w in ["animal", "giraffe", "the", "physical entity", "Animal"]]
    # ...one piece with it, as DefSent's add_prefix_space.
    assert [e.entry for e in build.single_token(entries, tokenizer)] == ["animal", "the"]


def test_load_tokenizer_errors(tmp_path):
    with pytest.raises(DefsentError, match="no such folder"):  # a path, not a Hub name
        models.load_tokenizer(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DefsentError, match="no config.json") as info:
        models.load_tokenizer(tmp_path / "empty")
    assert "\n" not in str(info.value)
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(DefsentError, match="no tokenizer files"):
        models.load_tokenizer(tmp_path / "empty")
    (tmp_path / "empty" / "vocab.txt").write_text("")
    with pytest.raises(DefsentError, match="cannot load a tokenizer") as info:
        models.load_tokenizer(tmp_path / "empty")
    assert "\n" not in str(info.value)


def test_splits_deterministic_by_entry():
    entries = [fmt.Entry(f"word{i}", ["x"], []) for i in range(4000)]
    a = splitting.assign_splits(entries, (0.8, 0.1, 0.1), seed=1, by="entry")
    b = splitting.assign_splits(entries, "0.8,0.1,0.1", seed=1, by="entry")
    assert [e.split for e in a] == [e.split for e in b]
    assert all(e.split == "train" for e in entries)  # inputs are not modified
    counts = {s: sum(e.split == s for e in a) for s in fmt.SPLITS}
    assert abs(counts["train"] - 3200) < 150 and abs(counts["dev"] - 400) < 80 and abs(counts["test"] - 400) < 80
    # Another seed gives another split; an entry keeps its split when others are added or removed,
    # and the split ignores case.
    c = splitting.assign_splits(entries, (0.8, 0.1, 0.1), seed=2, by="entry")
    assert [e.split for e in a] != [e.split for e in c]
    sub = splitting.assign_splits(entries[::7] + [fmt.Entry("WORD3", ["x"], [])], (0.8, 0.1, 0.1), seed=1, by="entry")
    assert [e.split for e in sub[:-1]] == [e.split for e in a[::7]]
    assert sub[-1].split == a[3].split
    assert {e.split for e in splitting.assign_splits(entries, by="entry")} == {"train"}
    assert {e.split for e in splitting.assign_splits(entries, (0, 0, 1), by="entry")} == {"test"}
    # The default keeps entries sharing a definition together: all 4,000 share "x", one group, one split.
    assert len({e.split for e in splitting.assign_splits(entries, (0.8, 0.1, 0.1), seed=1)}) == 1


def test_a_split_left_empty_is_warned_about(library_log):
    two = [fmt.Entry("dog", ["a pet"], []), fmt.Entry("cat", ["another pet"], [])]
    splits = [e.split for e in splitting.assign_splits(two, (0.8, 0.1, 0.1), seed=42, by="entry")]
    missing = [name for name in fmt.SPLITS if name not in splits]
    warnings = [text for level, text in library_log if level == "warning"]
    assert missing and warnings == [f"--split gives {', '.join(missing)} no entries at all (2 entries split by hash)"]
    library_log.clear()
    assert [e.split for e in splitting.assign_splits(two, (0.8, 0.1, 0.1), seed=42)] == ["train", "train"]
    assert [text for level, text in library_log if level == "warning"] == [
        "--split gives dev, test no entries at all (2 entries in 2 groups sharing definitions)"
    ]
    library_log.clear()
    splitting.assign_splits([fmt.Entry(f"w{i}", [f"x{i}"], []) for i in range(200)], (0.8, 0.1, 0.1))
    splitting.assign_splits([fmt.Entry(f"w{i}", ["x"], []) for i in range(200)], (0.8, 0.1, 0.1), by="entry")
    assert library_log == []


@pytest.mark.parametrize("bad", ["0.8,0.1", "0.8,0.1,0.2", "1.2,-0.1,-0.1", "a,b,c", (0.5, 0.5)])
def test_split_fractions_validated(bad):
    with pytest.raises(DefsentError, match="--split"):
        splitting.parse_fractions(bad)


def test_write_read_roundtrip_and_stats(tmp_path, tiny_bert):
    entries = [
        fmt.Entry("dog", ["a domesticated carnivorous mammal kept as a pet", "an animal"], ["test"], "train"),
        fmt.Entry("joy", ["a feeling of great happiness"], ["test"], "dev"),
        fmt.Entry("giraffe", ["a long-necked african animal"], ["test"], "train"),
    ]
    path = tmp_path / "out.jsonl"
    assert fmt.write_dictionary(path, entries) == 3
    assert fmt.read_dictionary(path) == entries
    assert list(json.loads(path.read_text().splitlines()[0])) == ["entry", "definitions", "sources", "split"]

    counted = stats.dictionary_stats(entries)
    assert counted == {
        "train": {"entries": 2, "definitions": 3},
        "dev": {"entries": 1, "definitions": 1, "in_train": 0},
        "total": {"entries": 3, "definitions": 4},
    }
    counted = stats.dictionary_stats(entries, models.load_tokenizer(tiny_bert))
    # [CLS] + words + [SEP]: train 10, 4, 8 ("long-necked" is long - necked), dev 7.
    assert counted["train"] == {"entries": 2, "definitions": 3, "max_tokens": 10, "median_tokens": 8}
    assert counted["dev"] == {"entries": 1, "definitions": 1, "in_train": 0, "max_tokens": 7, "median_tokens": 7}
    assert counted["total"]["max_tokens"] == 10 and counted["total"]["median_tokens"] == 7.5


# --------------------------------------------------------------------------- CLI


def test_cli_build_dict_wordnet_and_files(cli, tmp_path, wordnet_dir):
    extra = tmp_path / "extra.tsv"
    able = "having the  necessary means or skill or know-how or authority to do something"
    extra.write_text(f"DOG\ta pet\nable\t{able}\n")
    out = tmp_path / "dict.jsonl"
    result = cli("build-dict", extra, "--wordnet", wordnet_dir, "-o", out, "--stats")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert "wrote 20 entries, 22 definitions from extra, wordnet" in result.stderr
    rows = lines(out)
    assert len(rows) == 20
    entries = fmt.read_dictionary(out)
    by_name = {e.entry: e for e in entries}
    assert by_name["dog"].sources == ["wordnet", "extra"]
    assert by_name["dog"].definitions[-1] == "a pet"
    assert by_name["able"].sources == ["wordnet", "extra"]  # "able" got one new definition from extra
    assert len(by_name["able"].definitions) == 2
    assert {r["split"] for r in rows} == {"train"}

    # refuses to overwrite without --force; one line, exit 2
    result = cli("build-dict", "--wordnet", wordnet_dir, "-o", out, "--split", "0.5,0.25,0.25", "--seed", "3")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "--force" in result.stderr
    assert len(lines(out)) == 20
    result = cli(
        "build-dict", "--wordnet", wordnet_dir, "-o", out, "--split", "0.5,0.25,0.25", "--seed", "3", "--force"
    )
    assert result.exit_code == 0, result.stderr
    first = out.read_text()
    assert len(lines(out)) == 20
    out.unlink()
    result = cli("build-dict", "--wordnet", wordnet_dir, "-o", out, "--split", "0.5,0.25,0.25", "--seed", "3")
    assert result.exit_code == 0
    assert out.read_text() == first  # same seed, same file


def test_cli_build_dict_progress_goes_to_stderr_and_no_progress_silences_it(cli, tmp_path, wordnet_dir, monkeypatch):
    """--progress / --no-progress as every command has them (and DEFSENT_NO_PROGRESS, set for the tests)."""
    extra = tmp_path / "extra.tsv"
    extra.write_text("".join(f"word{i}\tdefinition {i}\n" for i in range(2500)))
    shown = cli("build-dict", extra, "--wordnet", wordnet_dir, "-o", tmp_path / "a.jsonl", "--progress")
    assert shown.exit_code == 0, shown.stderr
    bar = shown.stderr.strip().splitlines()[0]
    # no terminal here: whole lines, not a redrawn bar (20 WordNet + 2,500 definitions read)
    assert bar.startswith("reading extra.tsv: 2,520, ") and "━" not in shown.stderr
    quiet = cli("build-dict", extra, "--wordnet", wordnet_dir, "-o", tmp_path / "b.jsonl", "--no-progress")
    assert quiet.exit_code == 0 and quiet.stdout == ""
    assert len(quiet.stderr.splitlines()) == 1 and quiet.stderr.startswith("wrote 2,520 entries")
    assert shown.stderr.strip().splitlines()[-1] == quiet.stderr.strip().replace("b.jsonl", "a.jsonl")
    monkeypatch.setenv("DEFSENT_NO_PROGRESS", "1")
    default = cli("build-dict", extra, "--wordnet", wordnet_dir, "-o", tmp_path / "c.jsonl")
    assert default.stderr.replace("c.jsonl", "b.jsonl") == quiet.stderr
    assert (
        (tmp_path / "a.jsonl").read_bytes()
        == (tmp_path / "b.jsonl").read_bytes()
        == (tmp_path / "c.jsonl").read_bytes()
    )


def test_cli_build_dict_filters(cli, tmp_path, wordnet_dir, tiny_bert):
    extra = tmp_path / "extra.tsv"
    extra.write_text("Zebra\ta striped animal\nGiraffe\ta tall animal\nJoy\tgreat happiness\n")
    out = tmp_path / "c.jsonl"
    args = ["-o", out, "--single-token", tiny_bert, "--lowercase", "--max-entries", "2"]
    result = cli("build-dict", wordnet_dir, extra, *args)
    assert result.exit_code == 0, result.stderr
    # One-token entries for the tiny BERT vocabulary, in source order: dog (WordNet), then giraffe
    # (zebra is several word pieces); joy is also one token but --max-entries 2 stops before it.
    assert lines(out) == [
        {
            "entry": "dog",
            "definitions": [DOG_GLOSS],
            "sources": ["wordnet"],
            "split": "train",
            "meta": [{"pos": "noun"}],
        },
        {"entry": "giraffe", "definitions": ["a tall animal"], "sources": ["extra"], "split": "train"},
    ]
    result = cli("build-dict", wordnet_dir, "-o", out, "--force", "--min-definitions", "2")
    assert result.exit_code == 2 and "no entries left" in result.stderr


def test_cli_build_dict_utf16_csv(cli, tmp_path):
    src = tmp_path / "Ox+WN.csv"
    src.write_text("café\ta coffee house<|list_more_def|>a small restaurant\n", encoding="utf-16")
    out = tmp_path / "d.jsonl"
    result = cli("build-dict", src, "--encoding", "utf-16", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert lines(out) == [
        {
            "entry": "café",
            "definitions": ["a coffee house", "a small restaurant"],
            "sources": ["Ox+WN"],
            "split": "train",
        }
    ]


@pytest.mark.parametrize(
    "content, args, message",
    [
        ("dog\ta pet\nno tab\n", ["--format", "tsv"], "bad.txt:2: "),
        ('{"entry": "dog"}\n', ["--format", "jsonl"], "bad.txt:1: 'definitions'"),
        ("x\ty\n", ["--split", "0.9,0.9,0.1"], "--split"),
        ("x\ty\n", ["--format", "xml"], "'xml' is not one of"),
        ("x\ty\n", ["--single-token", "/nonexistent/model"], "no such folder"),
    ],
)
def test_cli_bad_input_is_one_line(cli, tmp_path, content, args, message):
    src = tmp_path / "bad.txt"
    src.write_text(content)
    out = tmp_path / "out.jsonl"
    result = cli("build-dict", src, "-o", out, *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_cli_missing_source_and_default_wordnet(cli, tmp_path, monkeypatch):
    result = cli("build-dict", tmp_path / "nope.tsv", "--format", "tsv", "-o", tmp_path / "o.jsonl")
    assert result.exit_code == 2 and "nope.tsv: no such file" in result.stderr
    monkeypatch.setattr(build, "DEFAULT_WORDNET_DIR", tmp_path / "no-wordnet")
    result = cli("build-dict", "-o", tmp_path / "o.jsonl")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "apt-get install wordnet-base" in result.stderr


def test_cli_dict_stats(cli, tiny_dict, tiny_bert):
    result = cli("dict-stats", tiny_dict, "--json")
    assert result.exit_code == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["total"] == {"entries": 5, "definitions": 6}
    assert stats["train"]["entries"] == 3 and stats["dev"]["entries"] == 1 and stats["test"]["entries"] == 1
    result = cli("dict-stats", tiny_dict, "--tokenizer", tiny_bert, "--json")
    # [CLS] an animal that lives in water and swims with fins [SEP]
    assert json.loads(result.stdout)["total"]["max_tokens"] == 12
    result = cli("dict-stats", tiny_dict, "--tokenizer", tiny_bert)
    assert result.exit_code == 0 and "total" in result.stdout and "median tokens" in result.stdout
    result = cli("dict-stats", tiny_dict.parent / "missing.jsonl")
    assert result.exit_code == 2 and "no such file" in result.stderr


# --------------------------------------------------------------------------- real WordNet


def test_real_wordnet_counts():
    root = data_root()
    if root is None or not (root / "wordnet" / "data.noun").is_file():
        pytest.skip("real WordNet not available (../shared/data/wordnet or DEFSENT_DATA)")
    pairs = list(sources.read_wordnet(root / "wordnet"))
    # 117,659 synsets give 206,978 (lemma, gloss) pairs over 147,306 distinct lower-cased lemmas,
    # as the data README states.
    assert len(pairs) == 206_978
    assert len({lemma.lower() for lemma, _, _ in pairs}) == 147_306
    merged = build.merge(pairs)
    # Merging keeps one entry per lower-cased lemma. 72 pairs repeat a (lemma, gloss) already seen
    # case-insensitively, e.g. the letter synsets list both "A" and "a", and "ddC"/"ddc" share a gloss.
    assert len(merged) == 147_306
    assert sum(len(e.definitions) for e in merged) == 206_906


def test_sample_entries_seeded_and_ordered():
    entries = [fmt.Entry(f"w{i}", [f"def {i}"], ["test"]) for i in range(100)]
    a = build.sample_entries(entries, 10, seed=1)
    assert [e.entry for e in a] == [e.entry for e in build.sample_entries(entries, 10, seed=1)]
    assert [e.entry for e in a] != [e.entry for e in build.sample_entries(entries, 10, seed=2)]
    positions = [int(e.entry[1:]) for e in a]
    assert positions == sorted(positions) and len(set(positions)) == 10
    assert len(build.sample_entries(entries, 1000)) == 100
