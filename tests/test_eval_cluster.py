"""``eval-cluster``: clustering accuracy (Hungarian) and NMI by hand, the loader on tiny folders in the real
format, the command end to end, and several models reported as mean ± sd (every eval command)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import TOPICS, build_tiny_bert, data_root, topic_encoder

from defsent_cli.errors import DefsentError
from defsent_cli.evaluation.cluster import cluster_accuracy, evaluate_cluster, nmi, score_clustering
from defsent_cli.evaluation.cluster_data import load_cluster_tasks, parse_cluster_tasks
from defsent_cli.evaluation.common import mean_sd, summarize_runs

# --------------------------------------------------------------------------- the scores by hand


def test_a_permuted_labelling_scores_one():
    labels = np.array([0, 0, 1, 1, 2, 2, 2])
    assert cluster_accuracy(labels, np.array([2, 2, 0, 0, 1, 1, 1])) == 1.0
    assert nmi(labels, np.array([5, 5, 3, 3, 0, 0, 0])) == pytest.approx(1.0)


def test_partial_accuracy_by_hand():
    # clusters x labels: c0 = {y0, y0, y1}, c1 = {y1, y2, y2}; best map c0->y0 (2), c1->y2 (2): 4/6
    labels = np.array([0, 0, 1, 1, 2, 2])
    clusters = np.array([0, 0, 0, 1, 1, 1])
    assert cluster_accuracy(labels, clusters) == pytest.approx(4 / 6)
    # a greedy per-cluster majority would count y1 twice; one-to-one: 3 clusters, c2 gets y1 (1): 5/6
    assert cluster_accuracy(labels, np.array([0, 0, 2, 1, 1, 1])) == pytest.approx(5 / 6)
    # one-to-one matters: everything in one cluster matches one label only
    assert cluster_accuracy(labels, np.zeros(6, dtype=int)) == pytest.approx(2 / 6)


def test_nmi_equals_sklearn_and_a_hand_value():
    from sklearn.metrics import normalized_mutual_info_score

    labels = np.array([0, 0, 1, 1])
    clusters = np.array([0, 1, 0, 1])  # independent of the labels: I = 0
    assert nmi(labels, clusters) == pytest.approx(0.0, abs=1e-12)
    rng = np.random.default_rng(3)
    y, c = rng.integers(0, 4, 50), rng.integers(0, 3, 50)
    assert nmi(y, c) == pytest.approx(normalized_mutual_info_score(y, c))
    # labels [0 0 1 1], clusters [0 0 0 1]: H(Y) = ln 2, H(C) = H(1/4, 3/4), I = H(Y) - H(Y|C),
    # H(Y|C) = 3/4 H(2/3, 1/3); NMI = I / ((H(Y) + H(C)) / 2)
    h = lambda *p: -sum(x * np.log(x) for x in p)  # noqa: E731
    mutual = np.log(2) - 0.75 * h(2 / 3, 1 / 3)
    assert nmi(labels, np.array([0, 0, 0, 1])) == pytest.approx(mutual / ((np.log(2) + h(0.25, 0.75)) / 2))


def test_score_clustering_mean_and_sd_over_seeds():
    vectors = np.array([[0, 0], [0, 0.1], [5, 5], [5, 5.1], [9, 0], [9, 0.1]], dtype=float)
    labels = np.array([0, 0, 1, 1, 2, 2])
    out = score_clustering(vectors, labels, 3, range(4))
    assert [r["seed"] for r in out["runs"]] == [0, 1, 2, 3]
    assert out["acc"] == 100.0 and out["acc_sd"] == 0.0 and out["nmi"] == 100.0
    assert mean_sd([1.0, 2.0, 4.0]) == (
        pytest.approx(7 / 3),
        pytest.approx(np.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)),
    )
    assert mean_sd([3.0]) == (3.0, None) and mean_sd([1.0, None]) == (None, None)


# --------------------------------------------------------------------------- data


def test_loader_reads_the_real_format(more):
    tasks = load_cluster_tasks(more, "agnews,TWEET")
    agnews, tweet = tasks
    assert (agnews.name, agnews.k, len(agnews.texts)) == ("agnews", 3, 24)
    assert agnews.label_names == ["1", "2", "3"] and agnews.texts[0] == "dog story 0"
    assert tweet.k == 2 and not any("\r" in t for t in tweet.texts)  # CRLF
    assert agnews.warnings() and "expected 8000" in agnews.warnings()[0]
    # --data may name senteval/ (or its downstream folder): clustering/ is found beside it
    assert load_cluster_tasks(more / "senteval" / "downstream", "tweet")[0].k == 2
    sample = load_cluster_tasks(more, "agnews", limit=6, seed=1)[0]
    assert len(sample.texts) == 6 and sample.k == 3
    with pytest.raises(DefsentError, match="unknown clustering task 'news'"):
        parse_cluster_tasks("news")
    assert parse_cluster_tasks(None) == [
        "agnews",
        "biomedical",
        "googlenews",
        "searchsnippets",
        "stackoverflow",
        "tweet",
    ]


@pytest.mark.parametrize(
    "line, message",
    [("no tab here", r"tweet-original-order.txt:3: expected 'label<TAB>text' \(no TAB"), ("1\t  ", "empty text")],
)
def test_malformed_line_is_a_one_line_error(more, line, message):
    path = more / "clustering" / "tweet" / "tweet-original-order.txt"
    lines = path.read_text().splitlines()
    lines.insert(2, line)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DefsentError, match=message):
        load_cluster_tasks(more, "tweet")


def test_library_with_a_fake_encoder_scores_100(more):
    result = evaluate_cluster(topic_encoder, more, "agnews,tweet", runs=3)
    assert result["kind"] == "cluster" and list(result["tasks"]) == ["agnews", "tweet"]
    agnews = result["tasks"]["agnews"]
    assert agnews["acc"] == 100.0 and agnews["nmi"] == 100.0 and agnews["acc_sd"] == 0.0 and agnews["k"] == len(TOPICS)
    assert [r["seed"] for r in agnews["runs"]] == [0, 1, 2]
    assert result["average"] == {"acc": 100.0, "nmi": 100.0, "tasks": 2}


# --------------------------------------------------------------------------- the command


def test_cli_end_to_end(cli, tiny_bert, more, tmp_path):
    out = tmp_path / "cluster.json"
    args = ["eval-cluster", "-m", tiny_bert, "--data", more, "--tasks", "agnews,tweet", "--runs", "3"]
    result = cli(*args, "--pooling", "mean", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and "accuracy" in result.stderr and "NMI" in result.stderr
    data = json.loads(out.read_text())
    assert data["format"] == "defsent-results/1" and data["kind"] == "cluster" and data["seeds"] == [0, 1, 2]
    for task in data["tasks"].values():
        accs = [r["acc"] for r in task["runs"]]
        assert task["acc"] == pytest.approx(np.mean(accs), abs=0.01)
        assert task["acc_sd"] == pytest.approx(np.std(accs, ddof=1), abs=0.01)
        assert 0 < task["acc"] <= 100
    assert data["average"]["acc"] == pytest.approx(np.mean([t["acc"] for t in data["tasks"].values()]), abs=0.01)
    again = cli(*args, "--pooling", "mean", "-o", out)
    assert again.exit_code == 2 and "--force" in again.stderr  # never overwritten silently
    one_task = [a if a != "agnews,tweet" else "tweet" for a in args]  # --tasks once: given twice it is refused
    with_post = cli(*one_task, "--post", "zscore,l2")
    assert with_post.exit_code == 0, with_post.stderr
    assert "accuracy" in with_post.stdout  # without -o the table is the output


def test_cli_clusters_a_sentence_transformers_folder_on_unit_vectors(
    cli, tiny_st, tiny_bert, more, tmp_path, monkeypatch
):
    """A folder whose modules.json ends in Normalize is clustered on unit vectors by default (what
    sentence-transformers gives), on the raw pooled ones with --no-normalize; the JSON says which and why."""
    import defsent_cli.evaluation.cluster as cluster

    norms: list[float] = []  # the lengths of the vectors k-means is given
    real_kmeans = cluster.kmeans

    def recording_kmeans(vectors, k, seed):
        norms.extend(np.linalg.norm(vectors, axis=1))
        return real_kmeans(vectors, k, seed)

    monkeypatch.setattr(cluster, "kmeans", recording_kmeans)
    args = ["eval-cluster", "--data", more, "--tasks", "agnews,tweet", "--runs", "3"]
    runs, lengths = {}, {}
    for name, extra in {
        "default": ["-m", tiny_st],
        "raw": ["-m", tiny_st, "--no-normalize"],
        "raw+l2": ["-m", tiny_st, "--no-normalize", "--post", "l2"],
        "plain": ["-m", tiny_bert, "--pooling", "mean"],  # the ST folder pools mean; a plain BERT, CLS
    }.items():
        out = tmp_path / f"{name}.json"
        norms.clear()
        result = cli(*args, *extra, "-o", out)
        assert result.exit_code == 0, result.stderr
        runs[name], lengths[name] = json.loads(out.read_text()), np.asarray(norms)
    np.testing.assert_allclose(lengths["default"], 1.0, atol=1e-5)
    assert np.abs(lengths["raw"] - 1.0).min() > 0.1 and np.abs(lengths["plain"] - 1.0).min() > 0.1
    assert runs["default"]["normalization"] == {"normalized": True, "by": "the model folder's Normalize module"}
    assert runs["raw"]["normalization"] == {"normalized": False, "by": "--no-normalize"}
    assert runs["plain"]["normalization"] == {"normalized": False, "by": "the model folder has no Normalize module"}
    for name in ("agnews", "tweet"):
        # the default clusters exactly what --post l2 makes of the raw vectors
        assert runs["default"]["tasks"][name]["runs"] == runs["raw+l2"]["tasks"][name]["runs"]
        # and tiny_st wraps tiny_bert: without its Normalize module it is the plain folder
        assert runs["raw"]["tasks"][name]["runs"] == runs["plain"]["tasks"][name]["runs"]
    # docs/formats.md names every key of a model's result head, normalization's included
    from conftest import REPO

    formats = (REPO / "docs" / "formats.md").read_text()
    missing = sorted(k for k in (*runs["default"], *runs["default"]["normalization"]) if f"`{k}`" not in formats)
    assert not missing, missing


@pytest.mark.parametrize(
    "setup, message",
    [
        ("missing", "clustering/ not found"),
        ("file", "tweet-original-order.txt: tweet: file not found"),
        ("malformed", "tweet-original-order.txt:2: expected 'label<TAB>text'"),
        ("task", "unknown clustering task 'news'"),
    ],
)
def test_cli_errors_are_one_line(cli, tiny_bert, more, tmp_path_factory, setup, message):
    data, tasks = more, "tweet"
    if setup == "missing":
        data = tmp_path_factory.mktemp("empty")
    elif setup == "file":
        (more / "clustering" / "tweet" / "tweet-original-order.txt").unlink()
    elif setup == "malformed":
        (more / "clustering" / "tweet" / "tweet-original-order.txt").write_text("1\tdog\nbroken line\n")
    else:
        tasks = "news"
    result = cli("eval-cluster", "-m", tiny_bert, "--data", data, "--tasks", tasks)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- several models: mean ± sd


def test_summarize_runs_by_value():
    runs = [
        {
            "kind": "cluster",
            "model": m,
            "pooling": "mean",
            "tasks": {"a": {"acc": a, "nmi": n}},
            "average": {"acc": a, "nmi": n},
            "seconds": 1.0,
        }
        for m, a, n in (("m1", 50.0, 10.0), ("m2", 60.0, 20.0), ("m3", 70.0, 60.0))
    ]
    result = summarize_runs(runs)
    assert result["models"] == ["m1", "m2", "m3"] and result["n_runs"] == 3 and result["runs"] == runs
    assert result["summary"]["tasks"]["a"]["acc"] == {"mean": 60.0, "sd": 10.0, "values": [50.0, 60.0, 70.0]}
    assert result["summary"]["average"]["nmi"]["mean"] == 30.0
    assert result["summary"]["average"]["nmi"]["sd"] == pytest.approx(np.std([10, 20, 60], ddof=1), abs=1e-4)
    assert result["seconds"] == 3.0 and "model" not in result


@pytest.fixture(scope="module")
def second_bert(tmp_path_factory):
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert-2"), seed=1)


def test_cli_several_models_mean_and_sd(cli, tiny_bert, second_bert, more, tmp_path):
    out = tmp_path / "sts.json"
    result = cli("eval-sts", "-m", tiny_bert, "-m", second_bert, "--data", more, "--tasks", "STS-B,SICK-R", "-o", out)
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["models"] == [str(tiny_bert), str(second_bert)] and len(data["runs"]) == 2
    for task in ("STS-B", "SICK-R"):
        values = [run["tasks"][task]["spearman"] for run in data["runs"]]
        spread = data["summary"]["tasks"][task]["spearman"]
        assert spread["values"] == values
        assert spread["mean"] == pytest.approx(np.mean(values), abs=1e-4)
        assert spread["sd"] == pytest.approx(np.std(values, ddof=1), abs=1e-4)
    assert values[0] != values[1]  # two different models, so the sd means something
    assert "±" in result.stderr and "mean ± sample sd over 2 models" in result.stderr
    # a single model keeps the plain result
    assert (
        cli("eval-sts", "-m", tiny_bert, "--data", more, "--tasks", "STS-B", "-o", tmp_path / "one.json").exit_code == 0
    )
    single = json.loads((tmp_path / "one.json").read_text())
    assert (
        "runs" not in single and single["tasks"]["STS-B"]["spearman"] == data["runs"][0]["tasks"]["STS-B"]["spearman"]
    )


def test_cli_glob_of_models_for_cluster_and_select_best(cli, tiny_bert, second_bert, more, tmp_path):
    import shutil

    for i, source in enumerate((tiny_bert, second_bert)):
        shutil.copytree(source, tmp_path / "seeds" / f"seed-{i}")
    out = tmp_path / "cluster.json"
    pattern = str(tmp_path / "seeds" / "seed-*")
    result = cli("eval-cluster", "-m", pattern, "--data", more, "--tasks", "tweet", "--runs", "2", "-o", out)
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert [m.rsplit("/", 1)[-1] for m in data["models"]] == ["seed-0", "seed-1"]
    accs = [run["tasks"]["tweet"]["acc"] for run in data["runs"]]
    assert data["summary"]["tasks"]["tweet"]["acc"]["mean"] == pytest.approx(np.mean(accs), abs=1e-4)
    nothing = cli("eval-cluster", "-m", str(tmp_path / "none-*"), "--data", more, "--tasks", "tweet")
    assert nothing.exit_code == 2 and "no model folder matches" in nothing.stderr

    ranking = tmp_path / "ranking.json"
    result = cli("select-best", pattern, "--data", more / "senteval", "-o", ranking)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(ranking.read_text())
    scores = [row["score"] for row in doc["ranking"]]
    assert doc["summary"]["n"] == 2 and doc["summary"]["mean"] == pytest.approx(np.mean(scores), abs=1e-4)
    assert doc["summary"]["sd"] == pytest.approx(np.std(scores, ddof=1), abs=1e-4)
    assert "mean ± sd" in result.stderr


# --------------------------------------------------------------------------- real data (cheap)


def test_real_clustering_sizes():
    root = data_root()
    if root is None or not (root / "clustering").is_dir():
        pytest.skip("real clustering data not available")
    tasks = load_cluster_tasks(root)
    assert {t.name: (len(t.texts), t.k) for t in tasks} == {
        "agnews": (8000, 4),
        "biomedical": (20000, 20),
        "googlenews": (11109, 152),
        "searchsnippets": (12340, 8),
        "stackoverflow": (20000, 20),
        "tweet": (2472, 89),
    }
    assert not any(t.warnings() for t in tasks)


def test_docs_formats_names_every_key(more):
    """docs/formats.md documents every key of a clustering result and of a several-model result."""
    from conftest import REPO

    formats = (REPO / "docs" / "formats.md").read_text()
    result = evaluate_cluster(topic_encoder, more, "tweet", runs=2)
    keys = set(result) | set(result["tasks"]["tweet"]) | set(result["tasks"]["tweet"]["runs"][0])
    keys |= set(summarize_runs([result, result])) | set(
        summarize_runs([result, result])["summary"]["tasks"]["tweet"]["acc"]
    )
    missing = sorted(k for k in keys if f"`{k}`" not in formats)
    assert not missing, missing
