"""build-dict --split keeps entries that share a definition in one split (--split-by definition-group, the
default); --split-by entry is the old split, entry by entry; --stats and dict-stats count the held-out definitions
that are also training ones (issue 68 item 5)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

from defsent_cli.dictionary import splitting
from defsent_cli.formats import dictionary as fmt

# Aliases as FOLDOC has them (one gloss, several headwords) and synonyms as WordNet has them (a synset's gloss
# under each of its words), the glosses written with the differences normalisation ignores.
ALIASES = [
    ("!", "The exclamation mark."),
    ("exclamation mark", "the exclamation  mark"),
    ("bang", "THE EXCLAMATION MARK!"),
    ("pling", "the exclamation mark ;"),
]
CHAIN = [  # bank - depository (one gloss), depository - vault (another): one group of three
    ("bank", "a financial institution that accepts deposits"),
    ("depository", "a financial institution that accepts deposits."),
    ("depository", "a facility where things can be deposited for storage"),
    ("vault", "A facility where things can be deposited for storage"),
]


def write_tsv(path, pairs):
    path.write_text("".join(f"{entry}\t{definition}\n" for entry, definition in pairs))
    return path


def many_groups(n_groups=200, n_single=600):
    """Groups of 2-4 aliases with one gloss each (written differently per alias), and singletons."""
    pairs = []
    for g in range(n_groups):
        for k in range(2 + g % 3):
            gloss = f"gloss number {g} of the shared kind"
            pairs.append((f"alias{g}-{k}", gloss.upper() + "." if k % 2 else "  " + gloss))
    pairs += [(f"single{i}", f"a definition of its own, number {i}") for i in range(n_single)]
    return pairs


def read(path):
    return fmt.read_dictionary(path)


def splits_by_gloss(entries):
    """normalised definition -> the set of splits of the entries that have it."""
    found: dict[str, set[str]] = {}
    for e in entries:
        for d in e.definitions:
            found.setdefault(splitting.normalize_definition(d), set()).add(e.split)
    return found


def test_normalisation_is_the_documented_one():
    assert splitting.normalize_definition("  The  exclamation\tmark.!? ") == "the exclamation mark"
    assert splitting.normalize_definition("A pet…") == "a pet"
    # only the end is stripped, and only spaces and . , ; : ! ? …
    assert splitting.normalize_definition("a pet (informal).") == "a pet (informal)"
    assert splitting.normalize_definition("e.g. a pet") == "e.g. a pet"
    assert splitting.normalize_definition("'quoted'") == "'quoted'"
    assert splitting.normalize_definition("...") == ""


def test_aliases_and_chains_end_in_one_split(cli, tmp_path):
    src = write_tsv(tmp_path / "aliases.tsv", ALIASES + CHAIN + many_groups())
    for seed in range(1, 6):
        out = tmp_path / f"dict-{seed}.jsonl"
        result = cli("build-dict", src, "--split", "0.6,0.2,0.2", "--seed", seed, "-o", out)
        assert result.exit_code == 0, result.stderr
        entries = read(out)
        by_name = {e.entry: e.split for e in entries}
        assert len({by_name[name] for name, _ in ALIASES}) == 1
        assert by_name["bank"] == by_name["depository"] == by_name["vault"]
        assert all(len(splits) == 1 for splits in splits_by_gloss(entries).values())
        assert {e.split for e in entries} == set(fmt.SPLITS)


def test_the_old_split_by_entry_separates_aliases(cli, tmp_path):
    """What the default fixes: split entry by entry, a gloss shared by aliases is held out and trained on."""
    src = write_tsv(tmp_path / "aliases.tsv", many_groups())
    out = tmp_path / "entry.jsonl"
    assert cli("build-dict", src, "--split", "0.6,0.2,0.2", "--split-by", "entry", "-o", out).exit_code == 0
    leaked = [g for g, splits in splits_by_gloss(read(out)).items() if "train" in splits and len(splits) > 1]
    assert len(leaked) > 50


def old_split_of(entry: str, fractions, seed: int) -> str:
    """The split before --split-by, written out from its documentation (formats.md): SHA-256 of
    ``seed NUL casefolded entry``, its first 8 bytes as a fraction of 2**64, cut by the fractions."""
    digest = hashlib.sha256(f"{seed}\0{' '.join(entry.split()).casefold()}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    return "train" if u < fractions[0] else "dev" if u < fractions[0] + fractions[1] else "test"


def test_split_by_entry_reproduces_the_old_split_exactly(cli, tmp_path):
    pairs = ALIASES + CHAIN + many_groups()
    src = write_tsv(tmp_path / "aliases.tsv", pairs)
    for seed, fractions in ((42, (0.8, 0.1, 0.1)), (7, (0.6, 0.2, 0.2))):
        out = tmp_path / f"entry-{seed}.jsonl"
        split = ",".join(map(str, fractions))
        result = cli("build-dict", src, "--split", split, "--seed", seed, "--split-by", "entry", "-o", out)
        assert result.exit_code == 0, result.stderr
        entries = read(out)
        assert [e.split for e in entries] == [old_split_of(e.entry, fractions, seed) for e in entries]
    # and as the code before --split-by wrote them (20 synonyms, all with one definition, seeds 42 and 7)
    words = (
        "!|exclamation mark|bang|pling|shriek|Dog|domestic dog|Canis familiaris|cat|true cat|bank|depository "
        "financial institution|banking concern|banking company|giraffe|camelopard|Giraffa camelopardalis|joy|"
        "joyousness|joyfulness"
    ).split("|")
    src = write_tsv(tmp_path / "synonyms.tsv", [(w, "shared") for w in words])
    for seed, expected in ((42, "ttdttttttdtttttttdtt"), (7, "ttttttdtdtttddtttttt")):
        out = tmp_path / f"synonyms-{seed}.jsonl"
        args = ("--split", "0.6,0.2,0.2", "--seed", seed, "--split-by", "entry", "-o", out)
        assert cli("build-dict", src, *args).exit_code == 0
        assert "".join(e.split[0] for e in read(out)) == expected
        # the default keeps the twenty together
        out = tmp_path / f"grouped-{seed}.jsonl"
        assert cli("build-dict", src, "--split", "0.6,0.2,0.2", "--seed", seed, "-o", out).exit_code == 0
        assert len({e.split for e in read(out)}) == 1


def test_held_out_in_train_against_a_hand_count(cli, tmp_path):
    rows = [
        {"entry": "a", "definitions": ["The exclamation mark.", "a dog"], "split": "train"},
        {"entry": "b", "definitions": ["a cat", "a Dog!"], "split": "train"},
        # dev: 2 of 3 also in train ("the exclamation  mark", "A CAT"); "a dog's" is another text
        {"entry": "c", "definitions": ["the exclamation  mark", "A CAT", "a dog's"], "split": "dev"},
        # test: "a dog" (from a), "a cat" (from b), "a dog" again in another entry; "a bird" is dev's and test's only
        {"entry": "d", "definitions": ["a dog", "a bird"], "split": "test"},
        {"entry": "e", "definitions": ["a cat;", "a bird", "a dog"], "split": "test"},
    ]
    path = tmp_path / "hand.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = cli("dict-stats", path, "--json")
    assert result.exit_code == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["dev"] == {"entries": 1, "definitions": 3, "in_train": 2}
    assert stats["test"] == {"entries": 2, "definitions": 5, "in_train": 3}
    assert "in_train" not in stats["train"] and "in_train" not in stats["total"]
    table = cli("dict-stats", path)
    assert table.exit_code == 0, table.stderr
    assert "held-out definitions also in train: dev 2 of 3 (66.7%), test 3 of 5 (60.0%)" in " ".join(
        table.stdout.split()
    )


def test_build_dict_stats_reports_the_overlap(cli, tmp_path):
    src = write_tsv(tmp_path / "aliases.tsv", many_groups())
    counts = {}
    for by in ("entry", "definition-group"):
        out = tmp_path / f"{by}.jsonl"
        result = cli("build-dict", src, "--split", "0.6,0.2,0.2", "--split-by", by, "--stats", "-o", out)
        assert result.exit_code == 0, result.stderr
        shown = " ".join(result.stderr.split())
        assert "held-out definitions also in train: dev " in shown
        counts[by] = json.loads(cli("dict-stats", out, "--json").stdout)
        # the count --stats prints is the hand count over the file
        entries = read(out)
        train = {splitting.normalize_definition(d) for e in entries if e.split == "train" for d in e.definitions}
        for split in ("dev", "test"):
            held = [d for e in entries if e.split == split for d in e.definitions]
            hand = sum(splitting.normalize_definition(d) in train for d in held)
            assert counts[by][split]["in_train"] == hand
            assert f"{split} {hand:,} of {len(held):,} ({100 * hand / len(held):.1f}%)" in shown
    assert counts["entry"]["dev"]["in_train"] > 0 and counts["entry"]["test"]["in_train"] > 0
    assert counts["definition-group"]["dev"]["in_train"] == counts["definition-group"]["test"]["in_train"] == 0


def test_group_split_is_deterministic_per_seed_and_keeps_the_fractions(cli, tmp_path):
    src = write_tsv(tmp_path / "aliases.tsv", many_groups(300, 2000))
    files = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        files[name] = tmp_path / f"{name}.jsonl"
        result = cli("build-dict", src, "--split", "0.8,0.1,0.1", "--seed", seed, "-o", files[name])
        assert result.exit_code == 0, result.stderr
    assert files["a"].read_bytes() == files["b"].read_bytes()
    a, c = read(files["a"]), read(files["c"])
    assert [e.split for e in a] != [e.split for e in c]
    total = len(a)  # 2,000 singletons + 300 groups of 2-4 = 2,900 entries
    for entries in (a, c):
        counts = Counter(e.split for e in entries)
        # whole groups of at most 4 entries: each split within a group of its share (hashing alone: +-30)
        assert abs(counts["dev"] - 0.1 * total) <= 4 and abs(counts["test"] - 0.1 * total) <= 4
    # grouped entries are held out as often as single ones (the split does not depend on a group's size)
    held = [e for e in a if e.split != "train"]
    assert 0.05 < sum(e.entry.startswith("alias") for e in held) / len(held) < 0.6


def test_a_group_too_big_for_a_held_out_split_goes_to_train():
    giant = [fmt.Entry(f"synonym{i}", [f"gloss {i}", f"gloss {i + 1}"], []) for i in range(150)]  # one chain
    single = [fmt.Entry(f"word{i}", [f"own {i}"], []) for i in range(850)]
    for seed in range(5):
        entries = splitting.assign_splits(giant + single, (0.8, 0.1, 0.1), seed=seed)
        assert {e.split for e in entries[:150]} == {"train"}
        counts = Counter(e.split for e in entries)
        assert counts == {"train": 800, "dev": 100, "test": 100}
    assert len(set(splitting.definition_groups(giant))) == 1
    # all in one split when one split has everything
    assert {e.split for e in splitting.assign_splits(giant + single, (0, 0, 1))} == {"test"}
    assert {e.split for e in splitting.assign_splits(giant + single)} == {"train"}


def test_split_by_is_checked(cli, tmp_path):
    src = write_tsv(tmp_path / "a.tsv", ALIASES)
    result = cli("build-dict", src, "--split", "0.8,0.1,0.1", "--split-by", "sense", "-o", tmp_path / "o.jsonl")
    assert result.exit_code == 2 and "'sense' is not one of" in result.stderr
    assert not (tmp_path / "o.jsonl").exists()
    with pytest.raises(Exception, match="--split-by must be one of definition-group, entry"):
        splitting.assign_splits([fmt.Entry("a", ["x"], [])], (0.8, 0.1, 0.1), by="sense")
