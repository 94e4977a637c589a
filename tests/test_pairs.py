"""Sentence-pair files (formats/pairs.py) and ``eval-sts --exclude-pairs``: the three layouts, the one-line
errors, the pair identity (either order, case and spacing aside), and the pairs left out of STS."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import write

from defsent_cli.errors import DefsentError
from defsent_cli.formats.pairs import pair_key, pair_keys, read_pairs


def test_the_three_layouts(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    write(tsv, ["a  man plays\tA man is playing\t4.5", "", "two dogs\tcats\t0"])
    pairs = read_pairs(tsv)
    assert (pairs.layout, pairs.sent1, pairs.sent2, pairs.scores) == (
        "tsv", ["a man plays", "two dogs"], ["A man is playing", "cats"], [4.5, 0.0]
    )  # fmt: skip
    assert pairs.lines == [1, 3]
    unscored = tmp_path / "unscored.tsv"
    write(unscored, ["a\tb", "c\td"])
    assert read_pairs(unscored).scores is None and len(read_pairs(unscored)) == 2
    stsb = tmp_path / "sts-train.csv"
    write(stsb, ["main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane takes off.\tAn air plane is taking off.\tx"])
    pairs = read_pairs(stsb)
    assert (pairs.layout, pairs.sent1, pairs.sent2, pairs.scores) == (
        "stsb", ["A plane takes off."], ["An air plane is taking off."], [5.0]
    )  # fmt: skip
    sick = tmp_path / "SICK_train.txt"
    write(sick, ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment", "1\tA\tB\t4.2\tNEUTRAL"])
    pairs = read_pairs(sick)
    assert (pairs.layout, pairs.sent1, pairs.sent2, pairs.scores, pairs.lines) == ("sick", ["A"], ["B"], [4.2], [2])


@pytest.mark.parametrize(
    "lines,message,line",
    [
        (["a\tb\t1", "c\td"], "got 2 fields", 2),
        (["a\tb", "c\td\t3"], "got 3 fields", 2),
        (["a\tb\tx"], "score 'x' is not a number", 1),
        (["a\tb\tnan"], "not a finite number", 1),
        (["a\t \t1"], "a sentence of the pair is empty", 1),
        (["one field"], "holds one sentence and no TAB", 1),
        (['{"entry": "dog", "definitions": ["a pet"]}'], "a dictionary JSONL?", 1),
        (["a\tb\tc\td"], "holds 4 TAB-separated fields", 1),
        (["pair_ID\tsentence_A\tsentence_B\trelatedness_score", "1\tA\tB"], "relatedness_score", 2),
        (["", "  "], "holds no sentence pairs", None),
    ],
)
def test_bad_pair_files_are_one_line_errors_naming_the_line(lines, message, line, tmp_path):
    path = tmp_path / "bad.tsv"
    write(path, lines)
    with pytest.raises(DefsentError) as error:
        read_pairs(path)
    assert message in str(error.value)
    assert str(error.value).startswith(f"{path}:{line}: " if line else f"{path}: ")


def test_a_pair_is_the_same_two_sentences_in_either_order_case_and_spacing_aside(tmp_path):
    assert pair_key("A man  plays.", "a woman sings") == pair_key("A WOMAN sings", "a man plays.")
    assert pair_key("a man plays", "a woman sings") != pair_key("a man plays", "a woman sang")
    path = tmp_path / "p.tsv"
    write(path, ["x\ty", "y\tx", "X \tz"])
    assert pair_keys([path]) == {("x", "y"), ("x", "z")}


def test_eval_sts_leaves_out_the_pairs_of_a_file_and_counts_them(cli, tiny_bert, mini, tmp_path):
    # STS-B test of the mini folder: "a man plays i" / "a man is playing i", gold 1.1 i, for i = 0..4
    seen = tmp_path / "seen.tsv"
    write(seen, ["A MAN IS PLAYING 1\ta man plays 1\t5", "a man plays 3\ta  man is playing 3\t1", "not\tthere\t2"])
    args = ["eval-sts", "-m", tiny_bert, "--pooling", "mean", "--data", mini, "--tasks", "STS-B,SICK-R"]
    full = cli(*args, "-o", tmp_path / "full.json")
    clean = cli(*args, "--exclude-pairs", seen, "-o", tmp_path / "clean.json")
    assert full.exit_code == 0 and clean.exit_code == 0, clean.stderr
    assert f"left out the pairs of {seen}: STS-B 2 of 5, SICK-R 0 of 5" in clean.stderr
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("full", "clean"))
    assert (a["tasks"]["STS-B"]["n"], b["tasks"]["STS-B"]["n"], b["tasks"]["STS-B"]["excluded"]) == (5, 3, 2)
    assert b["tasks"]["SICK-R"] == {**a["tasks"]["SICK-R"], "excluded": 0} and b["exclude_pairs"] == [str(seen)]
    # every pair too, from the same vectors: the figures of the run without --exclude-pairs
    for name in ("STS-B", "SICK-R"):
        expected = {key: a["tasks"][name][key] for key in ("spearman", "pearson", "n")}
        assert b["all_pairs"]["tasks"][name] == pytest.approx(expected, abs=1e-4)
    assert b["all_pairs"]["average"]["spearman"] == pytest.approx(a["average"]["spearman"], abs=1e-4)
    assert "all_pairs" not in a and "Spearman, all" in clean.stderr and "Spearman, clean" in clean.stderr
    # the mini folder is not the real STS-B (5 pairs, not 1,379): the pairs left out count as present
    assert b["warnings"] == a["warnings"] and "STS-B: 5 scored pairs, expected 1379" in b["warnings"][0]
    # the clean score is the Spearman of the three pairs left (0, 2, 4), computed from the model's own vectors
    from scipy.stats import spearmanr

    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.spec import EncodeSpec

    encoder = EncodeSpec("mean").check().resolve(load_model(tiny_bert, "cpu"))
    left = [0, 2, 4]
    u = encoder([f"a man plays {i}" for i in left])
    v = encoder([f"a man is playing {i}" for i in left])
    cosine = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    expected = 100 * spearmanr(cosine, [1.1 * i for i in left]).statistic
    assert b["tasks"]["STS-B"]["spearman"] == pytest.approx(expected, abs=1e-6)
    bad = cli(*args, "--exclude-pairs", tmp_path / "missing.tsv")
    assert bad.exit_code == 2 and "missing.tsv" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
