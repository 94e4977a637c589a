"""examples/pst.sh as a user runs it: tiny model, every step's files, rerun skips, failures show the command."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import KILLER, kill_tree, run_warm, skip_without, warm_command, warm_defsent, warm_shell_env

ROOT = Path(__file__).resolve().parent.parent


WARM: dict | None = None
"""The warm start of the test running (tests/warm_defsent.py), or None: see :func:`warm_start`."""


@pytest.fixture(autouse=True)
def warm_start(request):
    """Every test here that runs a script on a model (it takes ``tiny_bert``) runs the script's ``defsent``
    commands warm: forked from one process that imported torch and transformers once (conftest's
    :func:`warm_defsent`), the real command line with the script's arguments, folder, environment and stdio. A
    chain of ten to twenty commands spent most of its time importing. The runs killed mid-step
    (:func:`kill_in_step_2`) and the tests without a model start the installed ``defsent``."""
    global WARM
    WARM = warm_defsent() if "tiny_bert" in request.fixturenames else None
    yield
    WARM = None


def run_script(
    script: str, *args, data: Path | None = None, cwd: Path, stub: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``examples/SCRIPT ARGS`` with this venv's ``defsent`` first on PATH, warm where :func:`warm_start`
    says (or, with ``stub``, the stand-in of :func:`stub_defsent`, which logs its calls to STUB/calls.log)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", DEFSENT_NO_PROGRESS="1")
    if WARM is not None:
        env = warm_shell_env(env)
    if stub is not None:
        env["PATH"] = f"{stub}:{env['PATH']}"
        env["STUB_LOG"] = str(stub / "calls.log")
    if data is not None:
        env["DEFSENT_DATA"] = str(data)
    return subprocess.run(
        ["bash", str(ROOT / "examples" / script), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True
    )


def run_table(script: str, *args) -> str:
    """Run the Python table script ``examples/SCRIPT ARGS`` and return its stdout (it must succeed)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *map(str, args)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def kill_in_step_2(*args, data: Path) -> None:
    """Run ``defsent ARGS --save-every 1`` and SIGKILL it in its second step (tests/kill_after_step.py), as a
    session that ends mid-run does: OUTPUT.partial/ is left with the state saved after step 1."""
    env = dict(os.environ, DEFSENT_DATA=str(data), DEFSENT_NO_PROGRESS="1", KILL_AFTER_STEP="2")
    killed = run_warm([*KILLER, *map(str, args), "--save-every", "1"], env=env)
    output = Path(args[args.index("-o") + 1])
    assert killed.returncode == -9 and (output.with_name(output.name + ".partial") / "state.safetensors").is_file()


@pytest.mark.skipif(sys.platform == "win32", reason="unix socket")
def test_the_warm_defsent_answers_as_the_installed_one(tiny_bert, tmp_path):
    """The warm start (tests/warm_defsent.py) against the installed ``defsent``, the same commands in a shell:
    the same stdout bytes from stdin, the same exit status and one-line error, the file written under the
    shell's umask and in its folder."""
    texts = tmp_path / "texts.txt"
    texts.write_text("a dog barks\na feeling of great happiness\n")
    script = (
        f"umask 027; defsent encode -m {tiny_bert} --format jsonl < {texts}; "
        f"defsent encode -m {tiny_bert} -i {texts} -o vecs.npy; ls -l vecs.npy | cut -c1-10; "
        f"defsent encode -m {tmp_path / 'no-model'} -i {texts}; echo exit $?"
    )
    answers = []
    for warm in (False, True):
        folder = tmp_path / f"run-{warm}"
        folder.mkdir()
        env = dict(os.environ, DEFSENT_NO_PROGRESS="1", PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
        env = warm_shell_env(env) if warm else env
        done = subprocess.run(["bash", "-c", script], cwd=folder, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        assert (folder / "vecs.npy").is_file()
        answers.append((done.stdout, done.stderr.splitlines()[-1]))
    assert answers[0] == answers[1]
    stdout, error = answers[0]
    assert stdout.count("\n") == 4 and "-rw-r-----" in stdout and stdout.endswith("exit 2\n")
    assert error.startswith("error:") and str(tmp_path / "no-model") in error


@pytest.mark.skipif(sys.platform == "win32", reason="unix socket")
def test_a_warm_command_whose_stand_in_is_killed_is_killed_with_all_it_started(tmp_path):
    """A test's deadline kills the process it started (conftest.run_bounded): when that is a warm stand-in, the
    command forked for it, and the processes the command started (torchrun's ranks), go too, not left running."""
    pids = tmp_path / "pids"
    script = tmp_path / "sleeper.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(600)\n"
    )
    stand_in = subprocess.Popen(warm_command([sys.executable, script]), env=warm_shell_env())
    deadline = time.monotonic() + 60
    while not pids.exists() or len(pids.read_text().split()) < 2:
        assert stand_in.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    started = [int(pid) for pid in pids.read_text().split()]
    assert stand_in.pid not in started  # the script ran in the warm server's fork, not in the stand-in
    kill_tree(stand_in.pid)
    assert stand_in.wait(timeout=30) == -signal.SIGKILL
    while any(_state(pid) not in ("", "Z") for pid in started):
        assert time.monotonic() < deadline, f"still running: {started}"
        time.sleep(0.1)


def _state(pid: int) -> str:
    """A process's state letter from /proc (Z: ended, not yet reaped); empty once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return ""


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_pst_two_steps_two_seeds_then_rerun_skips(tiny_bert, tiny_dict, mini, tmp_path):
    """Two PST steps of two seeds each, with --no-eval: a step's evaluation (eval-sts, eval-dict, inspect) and
    its rerun are test_pst_eval_every_and_merge's, on one seed."""
    out = tmp_path / "pst"
    args = ["--model", tiny_bert, "--dict", tiny_dict, "--out", out, "--seeds", "1 2", "--steps", "2"]
    args += ["--by", "dict-dev", "--pooler", "none", "--lr", "1e-3", "--no-eval"]
    first = run_script("pst.sh", *args, data=mini, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    for step in (1, 2):
        folder = out / f"step-{step}"
        for name in ("bank.h5", "seed-1", "seed-2", "ranking.json"):
            assert (folder / name).exists(), f"step-{step}/{name} missing"
        assert (folder / "best").is_symlink()
        assert not (folder / "sts.json").exists()  # --no-eval
    # step 2's bank comes from step 1's best, and every step trains a fresh copy of the base model
    commands = [line for line in first.stderr.splitlines() if line.startswith("+ defsent ")]
    assert any(c.startswith("+ defsent embed-entries") and f"--model {out / 'step-1' / 'best'} " in c for c in commands)
    trains = [c for c in commands if c.startswith("+ defsent train")]
    assert len(trains) == 4 and all(f"--model {tiny_bert} " in c for c in trains)
    stages = (out / "times.tsv").read_text().splitlines()
    assert len(stages) == 2 * (1 + 2)  # per step: embed-entries, 2 trains

    again = run_script("pst.sh", *args, data=mini, cwd=tmp_path)
    assert again.returncode == 0 and "+ defsent" not in again.stderr  # nothing rerun, select-best neither
    assert len((out / "times.tsv").read_text().splitlines()) == len(stages)

    # a variant of the last step (--start-from) shares steps 1..STEPS-1 and the last step's plain bank
    variant = tmp_path / "variant"
    args = [*args[: args.index("--out")], *args[args.index("--out") + 2 :], "--out", variant]
    result = run_script("pst.sh", *args, "--seeds", "3", "--start-from", out, data=mini, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    # only the last step trains (its seed); the shared step 1 is used as it is, never trained into
    assert "embed-entries" not in result.stderr and result.stderr.count("+ defsent train") == 1
    assert not list((out / "step-1").glob("seed-3*")) and (variant / "step-2" / "seed-3").is_dir()
    assert (variant / "step-1").is_symlink() and (variant / "step-2" / "bank.h5").is_symlink()
    assert (variant / "step-2" / "bank.h5").resolve() == (out / "step-2" / "bank.h5").resolve()
    assert (variant / "step-2" / "best").resolve() == (variant / "step-2" / "seed-3").resolve()


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
def test_pst_ica_last_with_scale_and_a_linear_head(tiny_bert, mini, tmp_path):
    import json

    import h5py
    import numpy as np

    words = "red blue small large animal tree river stone light dark old new fast slow warm cold".split()
    rng = np.random.default_rng(0)
    rows = [
        {"entry": f"w{i}", "definitions": [" ".join(rng.choice(words, 5))], "sources": ["t"], "split": "train"}
        for i in range(64)
    ]
    dictionary = tmp_path / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "ica"
    args = ["--model", tiny_bert, "--dict", dictionary, "--out", out, "--seeds", "1", "--steps", "1", "--no-eval"]
    args += ["--ica-last", "--ica-scale", "1", "--pooler", "linear", "--head-lr", "1e-3", "--lr", "1e-4"]
    result = run_script("pst.sh", *args, data=mini, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "defsent ica " in result.stderr and "--scale 1 " in result.stderr
    with h5py.File(out / "step-1" / "bank-ica.h5") as f:
        assert f.attrs["transform"] == "ica" and f.attrs["transform_scale"] == 1.0
    info = json.loads((out / "step-1" / "seed-1" / "defsent.json").read_text())
    assert info["head"] == "dense+identity" and info["config"]["head_lr"] == 1e-3
    assert info["bank"].endswith("bank-ica.h5")


def test_pst_stops_at_the_first_failure_and_shows_it(tiny_dict, tmp_path):
    result = run_script(
        "pst.sh", "--model", tmp_path / "no-model", "--dict", tiny_dict, "--out", tmp_path / "o", "--no-eval",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode != 0
    assert "pst.sh: FAILED (exit 2): defsent embed-entries" in result.stderr and "embed-entries" in result.stderr
    assert "error:" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o" / "step-1" / "seed-1").exists()


@pytest.mark.parametrize(
    "script",
    [
        "pst.sh",
        "grid.sh",
        "results.sh",
        "demo.sh",
        "baselines.sh",
        "more_evals.sh",
        "contrastive.sh",
        "augsbert.sh",
        "stsb_pairs.sh",
        "domain.sh",
    ],
)
def test_scripts_explain_themselves_with_help(script, tmp_path):
    result = run_script(script, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    usage = f"examples/{script}"
    assert usage in result.stdout and len(result.stdout.splitlines()) >= 3
    assert not any(tmp_path.iterdir())  # --help does nothing else


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_tuned_plan_on_a_tiny_model(cli, tiny_bert, more, tmp_path, monkeypatch):
    """examples/tuned.sh: seeds of a variant and their WiSE-FT merges, each evaluated, then a greedy soup of the
    seeds. First the base alone (SEEDS="") with every evaluation (EVALS: test STS, dev, the reverse dictionary),
    then the seeds and merges with the two tuned_tables.py needs, then the soup (SOUPS) unevaluated (EVALS=""):
    each eval line of the script runs for real, none again for nothing (a model's evaluation is one function,
    whatever the model)."""
    import json

    import numpy as np

    words = "red blue small large animal tree river stone light dark old new fast slow warm cold".split()
    rng = np.random.default_rng(0)
    rows = [
        {"entry": f"w{i}", "definitions": [" ".join(rng.choice(words, 5))], "split": ["train", "train", "test"][i % 3]}
        for i in range(30)
    ]
    dictionary = tmp_path / "dict.jsonl"
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", dictionary, "-m", tiny_bert, "--kind", "AC", "-o", bank).exit_code == 0
    out = tmp_path / "tuned"
    env = {"MODEL": str(tiny_bert), "DICT": str(dictionary), "BANK": str(bank), "SEEDS": "", "LIMIT": "16"}
    env |= {"EVAL_EVERY": "1", "STS_TASKS": "STS12,STS-B,SICK-R", "LR": "1e-3"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    base = run_script("tuned.sh", out, "cosine", data=more, cwd=tmp_path)
    assert base.returncode == 0, base.stderr[-3000:]
    assert [line.split("\t")[0] for line in (out / "times.tsv").read_text().splitlines()] == [
        f"base/base eval-{kind}" for kind in ("sts", "dev", "dict")
    ]
    assert not list((out / "cosine").iterdir())  # SEEDS="": the base only

    env = {"SEEDS": "1 2", "EVALS": "sts dev", "CLUSTER_MODELS": "base cosine/seed-2", "CLUSTER": "agnews"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = run_script("tuned.sh", out, "cosine", data=more, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    monkeypatch.setenv("SOUPS", "cosine")
    monkeypatch.setenv("EVALS", "")
    souped = run_script("tuned.sh", out, "cosine", data=more, cwd=tmp_path)
    assert souped.returncode == 0, souped.stderr[-3000:]
    assert [c.split()[2] for c in souped.stderr.splitlines() if c.startswith("+ defsent ")] == ["merge"]  # the soup
    times = (out / "times.tsv").read_text().splitlines()
    assert len([line for line in times if line.startswith("base/base ")]) == 3  # the first run's: none again
    for name in ("cosine/seed-1", "cosine/seed-2", "cosine/wise-1", "cosine/wise-2"):
        for kind in ("sts", "dev"):
            assert (out / f"{name}-{kind}.json").is_file(), f"{name}-{kind}.json missing"
        assert not (out / f"{name}-dict.json").exists()  # not in EVALS
    assert not list((out / "cosine").glob("soup-*.json"))  # EVALS=""
    info = json.loads((out / "cosine" / "seed-1" / "defsent.json").read_text())
    assert info["config"]["logits"] == "cosine" and info["config"]["scale"] == 20 and info["eval_on"] == "dev"
    wise = json.loads((out / "cosine" / "wise-1" / "defsent.json").read_text())
    assert len(wise["alpha_curve"]) == 11 and wise["selected_score"] >= wise["alpha_curve"][0][1]
    soup = json.loads((out / "cosine" / "soup" / "defsent.json").read_text())
    assert soup["method"] == "greedy" and len(soup["greedy"]) == 2
    assert any(line.startswith("cosine train seed 2\t") for line in times)
    assert any(line.startswith("cosine soup\t") for line in times)
    for name in ("base", "cosine/seed-2"):  # CLUSTER_MODELS: eval-cluster on the named models only
        clustered = json.loads((out / f"{name}-cluster.json").read_text())
        assert list(clustered["tasks"]) == ["agnews"] and 0 < clustered["tasks"]["agnews"]["acc"] <= 100
        assert clustered["model"] == str(tiny_bert if name == "base" else out / name)  # "base" is MODEL
    assert not (out / "cosine" / "seed-1-cluster.json").exists()

    # --choose: the group (seeds or their merges) with the best mean dev composite, then its best seed
    def dev(name):
        tasks = json.loads((out / f"{name}-dev.json").read_text())["tasks"]
        return (tasks["STS-B"]["spearman"] + tasks["SICK-R"]["spearman"]) / 2

    groups = {p: [dev(f"cosine/{p}-{s}") for s in (1, 2)] for p in ("seed", "wise")}
    means = {p: sum(v) / 2 for p, v in groups.items()}
    expected = "base"
    best = max(means, key=means.get)
    if means[best] > dev("base/base"):
        expected = str(out / "cosine" / f"{best}-{1 + groups[best].index(max(groups[best]))}")
    assert run_table("tuned_tables.py", out, "--choose", "--order", "cosine").strip() == expected


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_pst_eval_every_and_merge(tiny_bert, tiny_dict, mini, tmp_path):
    """--merge: each step's best merged with the base is the step's model (evaluated, and the next step's bank
    encoder). Step 1 alone, evaluated (eval-sts, eval-dict on the test split, inspect); then the run taken on to
    step 2 (--steps 2 --no-eval: step 1 is kept as it is); a rerun runs nothing. One seed: the choice among seeds
    is test_pst_two_steps_two_seeds_then_rerun_skips'."""
    import json

    out = tmp_path / "pst"
    args = ["--model", tiny_bert, "--dict", tiny_dict, "--out", out, "--seeds", "1", "--by", "dev"]
    args += ["--pooling", "mean", "--pooler", "none", "--lr", "1e-3", "--eval-every", "1", "--merge"]
    args += ["--eval-tasks", "STS-B,SICK-R", "--train-args", "--logits cosine --scale 10"]
    result = run_script("pst.sh", *args, "--steps", "1", data=mini, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    step1 = out / "step-1"
    for name in ("sts.json", "dict-test.json", "space.json", "space.png", "ranking.json"):
        assert (step1 / name).exists(), f"step-1/{name} missing"
    assert json.loads((step1 / "sts.json").read_text())["model"].endswith("merged")
    assert json.loads((step1 / "dict-test.json").read_text())["split"] == "test"
    stages = (out / "times.tsv").read_text().splitlines()
    assert len(stages) == 1 + 1 + 1 + 3  # embed-entries, train, merge, eval-sts, eval-dict, inspect

    more = run_script("pst.sh", *args, "--steps", "2", "--no-eval", data=mini, cwd=tmp_path)
    assert more.returncode == 0, more.stderr[-3000:]
    commands = [line.split()[2] for line in more.stderr.splitlines() if line.startswith("+ defsent ")]
    assert commands == ["embed-entries", "train", "select-best", "merge"]  # step 2 alone
    # step 2's bank is embedded by step 1's merged model
    assert f"embed-entries {tiny_dict} --model {out / 'step-1' / 'merged'} " in more.stderr
    assert not (out / "step-2" / "sts.json").exists()
    for step in (1, 2):
        merged = json.loads((out / f"step-{step}" / "merged" / "defsent.json").read_text())
        assert merged["kind"] == "merge" and merged["select"] == "dev" and len(merged["alpha_curve"]) == 11
        info = json.loads((out / f"step-{step}" / "seed-1" / "defsent.json").read_text())
        assert info["config"]["logits"] == "cosine" and info["config"]["scale"] == 10 and "eval_curve" in info
    stages = (out / "times.tsv").read_text().splitlines()
    again = run_script("pst.sh", *args, "--steps", "1", data=mini, cwd=tmp_path)
    assert again.returncode == 0 and "+ defsent" not in again.stderr  # nothing rerun: training, merge, evaluation
    assert len((out / "times.tsv").read_text().splitlines()) == len(stages)


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_more_evals_on_a_tiny_model(tiny_bert, more, tmp_path, monkeypatch):
    """examples/more_evals.sh: clustering, the added transfer tasks and the geometry for a toolbox row and for
    two checkpoints (mean ± sd), JSON per run, wall times, a table; a rerun skips finished runs. One row (each
    row is the same three commands with its options)."""
    import json
    import shutil

    for i in (1, 2):
        shutil.copytree(tiny_bert, tmp_path / f"ckpt-{i}")
    out = tmp_path / "out"
    env = {"ROWS": "t4-idf-whiten", "TASKS": "SICK-E,STS-B-5", "CONFIG": "prototyping", "RUNS": "2", "LIMIT": "5"}
    env["CLUSTER"] = "agnews,tweet"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = [out, tiny_bert, tmp_path / "ckpt-1", tmp_path / "ckpt-2"]
    result = run_script("more_evals.sh", *args, data=more, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    times = (out / "times.tsv").read_text().splitlines()
    assert [tuple(line.split("\t")[:2]) for line in times] == [
        (e, r) for r in ("t4-idf-whiten", "checkpoint") for e in ("cluster", "senteval", "inspect")
    ]
    assert all("--pooling prompt-avg --template T4 --weighting idf --post whiten" in line for line in times[:3])
    cluster = json.loads((out / "cluster" / "t4-idf-whiten.json").read_text())
    assert cluster["seeds"] == [0, 1] and cluster["tasks"]["agnews"]["n"] == 5
    both = json.loads((out / "senteval" / "checkpoint.json").read_text())
    assert both["n_runs"] == 2 and "STS-B-5" in both["summary"]["tasks"]
    geometry = json.loads((out / "inspect" / "checkpoint.json").read_text())
    assert len(geometry["sentences"]) == 2 and geometry["sentences"][0]["n"] == 5
    table = (out / "table.md").read_text()
    assert "### cluster" in table and "| checkpoint |" in table and "isoscore" in table and "±" in table
    again = run_script("more_evals.sh", *args, data=more, cwd=tmp_path)
    assert again.returncode == 0 and "+ defsent" not in again.stderr  # nothing rerun


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_augsbert_chain_on_a_tiny_model(tiny_bert, mini, tmp_path, monkeypatch):
    """examples/augsbert.sh: teacher, sampled pairs, labels, KDE filter, student on gold + silver (GOLD_ONLY=0: not
    on gold alone), STS on all pairs and with the training pairs left out; a rerun skips every stage. The teacher
    was killed after a saved state (a session that ended mid-run): the chain resumes it."""
    skip_without("bm25s", "the [augment] extra: the script samples --strategy random,bm25")
    import json

    from conftest import CORPUS

    gold = tmp_path / "gold.tsv"
    gold.write_text("".join(f"{CORPUS[i]}\t{CORPUS[(i + 1) % 10]}\t{i * 0.5}\n" for i in range(10)))
    pool = tmp_path / "pool.txt"
    pool.write_text("".join(f"{line} again\n" for line in CORPUS))
    env = {"ARCH": "cbe", "STRATEGY": "random,bm25", "K": "2", "METHOD": "kde", "MODEL": str(tiny_bert)}
    env.update(STS_TASKS="STS-B", TRAIN_ARGS="--epochs 2 --eval-every 0", GOLD_ONLY="0")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    out.mkdir()
    teacher_args = ["teacher", gold, "-m", tiny_bert, "--arch", "cbe", "--seed", "1", "--epochs", "2"]
    kill_in_step_2(*teacher_args, "--eval-every", "0", "-o", out / "teacher", data=mini)
    result = run_script("augsbert.sh", out, gold, pool, data=mini, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resuming from step 1 of 2" in result.stderr and not (out / "teacher.partial").exists()
    teacher = json.loads((out / "teacher" / "defsent.json").read_text())
    assert teacher["kind"] == "teacher" and teacher["arch"] == "cbe"
    silver = (out / "silver.tsv").read_text().splitlines()
    kept = (out / "kept.tsv").read_text().splitlines()
    train = (out / "train.tsv").read_text().splitlines()
    assert 0 < len(kept) <= len(silver) and len(train) == 10 + len(kept)
    student = json.loads((out / "student" / "defsent.json").read_text())
    assert student["kind"] == "pairs" and student["training_pairs"] == len(train)
    clean = json.loads((out / "student-sts.json").read_text())
    assert clean["exclude_pairs"] == [str(out / "train.tsv")] and not (out / "gold-only").exists()
    assert set(clean["all_pairs"]["tasks"]) == {"STS-B"} and clean["all_pairs"]["tasks"]["STS-B"]["n"] == 5
    again = run_script("augsbert.sh", out, gold, pool, data=mini, cwd=tmp_path)
    assert again.returncode == 0 and "+ defsent" not in again.stderr  # nothing rerun


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_stsb_pairs_supervised_stage_and_its_tables(tiny_bert, mini, tmp_path, monkeypatch):
    """examples/stsb_pairs.sh supervised: the bi-encoder and a teacher (CBE) on STS-B train, its scores of
    STS-B test, one STS pass per student (clean + all pairs); pairs_tables.py reads them back. The student was
    killed after a saved state (a session that ended mid-run): the stage resumes it."""
    import json

    from conftest import write

    bench = mini / "senteval" / "downstream" / "STS" / "STSBenchmark"
    # train shares "a man plays 1" / "a man is playing 1" with the test split: one pair to leave out
    rows = [
        f"main-captions\tMSRvid\t2012train\t{i:04d}\t{i * 0.5:.3f}\ta man plays {i}\ta man is playing {i}"
        for i in (1, 5, 6, 7, 8, 9)
    ]
    write(bench / "sts-train.csv", rows)
    monkeypatch.setenv("SEEDS", "7")
    monkeypatch.setenv("EPOCHS", "2")
    monkeypatch.setenv("TEACHERS", "cbe")
    monkeypatch.setenv("MODEL", str(tiny_bert))
    monkeypatch.setenv("STS_TASKS", "STS-B,SICK-R")
    out = tmp_path / "out"
    student = out / "supervised" / "bi-7"
    student.parent.mkdir(parents=True)
    student_args = ["train-pairs", bench / "sts-train.csv", "-m", tiny_bert, "--epochs", "2", "--seed", "7"]
    kill_in_step_2(*student_args, "-o", student, data=mini)
    result = run_script("stsb_pairs.sh", out, "supervised", data=mini, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resuming from step 1 of 2" in result.stderr and not (out / "supervised" / "bi-7.partial").exists()
    clean = json.loads((out / "supervised" / "bi-7-clean.json").read_text())
    assert clean["tasks"]["STS-B"]["excluded"] == 1 and clean["all_pairs"]["tasks"]["STS-B"]["n"] == 5
    assert json.loads((student / "defsent.json").read_text())["training_pairs"] == 6
    info = json.loads((out / "supervised" / "cbe-7" / "defsent.json").read_text())
    assert (info["kind"], info["arch"], info["training_pairs"]) == ("teacher", "cbe", 6)
    assert len((out / "supervised" / "cbe-7-test.tsv").read_text().splitlines()) == 5
    assert not (out / "supervised" / "ce-7").exists()
    tables = run_table("pairs_tables.py", out, "--data", mini)
    lines = tables.splitlines()
    assert any(line.startswith("| CBE | ") and line.endswith(" | 1 |") for line in lines), tables
    row = next(line for line in lines if line.startswith("| bi-encoder, STS-B train |"))
    # the STS-B test cell of the student row is its clean run's all-pairs figure
    assert row.split(" | ")[1] == f"{clean['all_pairs']['tasks']['STS-B']['spearman']:.2f}"
    again = run_script("stsb_pairs.sh", out, "supervised", data=mini, cwd=tmp_path)
    assert again.returncode == 0 and "+ defsent" not in again.stderr  # nothing rerun


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_stsb_pairs_semi_stage_carries_its_results_to_a_new_machine(tiny_bert, mini, tmp_path, monkeypatch):
    """examples/stsb_pairs.sh semi: a seeded gold sample of STS-B train, a teacher on it, silver pairs labelled
    and KDE-filtered, students on gold + silver; its JSON and teacher TSV files alone (no checkpoints, no
    silver) are a finished record: a rerun from them does nothing and makes the same tables, and a new
    strategy trains the teacher again and draws only the pairs it needs (the commands of that last run go to a
    stand-in defsent: each of them has run for real before it, and what they are is the script's choice)."""
    skip_without("bm25s", "the [augment] extra: the union strategy samples bm25 pairs")
    import json

    from conftest import CORPUS, write
    from scipy.stats import spearmanr

    from defsent_cli.formats.pairs import read_pairs

    bench = mini / "senteval" / "downstream" / "STS" / "STSBenchmark"
    rows = [
        f"main-captions\tMSRvid\t2012train\t{i:04d}\t{i % 6:.3f}\t{CORPUS[i % 10]}\t{CORPUS[(i + 3) % 10]} {i}"
        for i in range(12)
    ]
    write(bench / "sts-train.csv", rows)
    env = {"SEEDS": "7", "EPOCHS": "1", "TEACHERS": "cbe", "STRATEGIES": "semantic kde", "GOLD_SIZE": "6"}
    for name, value in {**env, "MODEL": str(tiny_bert), "STS_TASKS": "STS-B,SICK-R"}.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    result = run_script("stsb_pairs.sh", out, "semi", data=mini, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    seed = out / "semi" / "seed-7"
    train = read_pairs(bench / "sts-train.csv")
    train_rows = {f"{a}\t{b}\t{c:g}" for a, b, c in zip(train.sent1, train.sent2, train.scores, strict=True)}
    gold = (seed / "gold.tsv").read_text().splitlines()
    assert len(gold) == 6 and set(gold) <= train_rows

    def triples(path: Path) -> list[tuple[str, str, float]]:
        found = read_pairs(path)
        return list(zip(found.sent1, found.sent2, found.scores, strict=True))

    kept = (seed / "cbe-kde-kept.tsv").read_text().splitlines()
    assert kept and set(triples(seed / "cbe-kde-kept.tsv")) <= set(triples(seed / "cbe-union-silver.tsv"))
    assert (seed / "cbe-kde.png").is_file()
    assert (seed / "cbe-kde-train.tsv").read_text().splitlines() == gold + kept
    # every row is scored without STS-B train's pairs too: the silver pairs are recombined train sentences
    for row, data in (("gold-only", seed / "gold.tsv"), ("cbe-kde", seed / "cbe-kde-train.tsv")):
        clean = json.loads((seed / f"{row}-clean.json").read_text())
        assert clean["exclude_pairs"] == [str(data), str(bench / "sts-train.csv")]
    card = json.loads((seed / "cbe-kde-defsent.json").read_text())
    assert card == json.loads((seed / "cbe-kde" / "defsent.json").read_text())
    assert card["training_pairs"] == 6 + len(kept)
    semantic = (seed / "cbe-semantic-silver.tsv").read_text().splitlines()
    assert json.loads((seed / "cbe-semantic-defsent.json").read_text())["training_pairs"] == 6 + len(semantic)

    def tables(folder: Path) -> str:
        return run_table("pairs_tables.py", folder, "--data", mini)

    made = tables(out)
    lines = made.splitlines()
    test = read_pairs(bench / "sts-test.csv")
    teacher = 100 * spearmanr(read_pairs(seed / "cbe-test.tsv").scores, test.scores).statistic
    assert f"| CBE | {teacher:.2f} | 1 |" in lines, made
    assert any(line.startswith("| gold only (6 pairs) | ") for line in lines), made
    assert (
        f"| CBE teacher, kde | {len(kept):,} |" in lines and f"| CBE teacher, semantic | {len(semantic):,} |" in lines
    )
    rows = [line.split(" | ")[0] for line in lines if line.startswith("| CBE teacher, ")]
    assert rows[:2] == ["| CBE teacher, semantic", "| CBE teacher, kde"]  # the thesis's order, not the names'

    assert any(line.startswith("| CBE teacher, semantic | ") and line.endswith(" | 1 |") for line in lines)

    # the record alone, as carried to another machine: JSON, the drawn gold, the teacher's scores, the times
    carried = tmp_path / "carried"
    checkpoints = {path.parent for path in out.rglob("defsent.json")}
    for path in out.rglob("*"):
        record = path.suffix == ".json" or path.name in ("gold.tsv", "times.tsv") or path.name.endswith("-test.tsv")
        if record and not checkpoints.intersection(path.parents):
            target = carried / path.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    assert not (carried / "semi" / "seed-7" / "cbe").exists()
    assert (carried / "semi" / "seed-7" / "gold.tsv").read_text().splitlines() == gold  # the input kept with them
    assert json.loads((carried / "semi" / "seed-7" / "gold.json").read_text())["size"] == 6
    again = run_script("stsb_pairs.sh", carried, "semi", data=mini, cwd=tmp_path)
    assert again.returncode == 0 and "+ defsent" not in again.stderr, again.stderr[-3000:]
    assert tables(carried) == made

    # a new strategy: which commands the script runs (every one of them ran for real above), with the stand-in
    monkeypatch.setenv("STRATEGIES", "random")
    stub = stub_defsent(tmp_path / "bin")
    more = run_script("stsb_pairs.sh", carried, "semi", data=mini, cwd=tmp_path, stub=stub)
    assert more.returncode == 0, more.stderr[-3000:]
    commands = [line for line in more.stderr.splitlines() if line.startswith("+ defsent ")]
    expected = ["sample-pairs", "teacher", "label", "train-pairs", "eval-sts", "eval-sts"]
    assert [c.split()[2] for c in commands] == expected, more.stderr[-3000:]
    assert [line.split()[0] for line in (stub / "calls.log").read_text().splitlines()] == expected
    assert "--strategy random" in commands[0] and "cbe-random" in commands[3]
    record = carried / "semi" / "seed-7"  # random, no filter: the student trains on the gold + all of the silver
    train = (record / "cbe-random-train.tsv").read_text()
    assert train == (record / "gold.tsv").read_text() + (record / "cbe-random-silver.tsv").read_text()


# --- switches set empty -----------------------------------------------------------------------------------

#: The example scripts' list and on/off switches: set empty, each is empty (no teachers, no seeds, no rows,
#: off), never its default (``${X-default}``, not ``${X:-default}``, which takes an empty value for unset).
EMPTY_MEANS_EMPTY = {
    "stsb_pairs.sh": ["SEEDS", "TEACHERS", "STRATEGIES"],
    "augsbert.sh": ["GOLD_ONLY"],
    "contrastive.sh": ["SEEDS", "METHODS", "EVALS", "LIMIT"],
    "more_evals.sh": ["ROWS", "EVALS"],
    "results.sh": ["SENTEVAL", "RECIPE", "MERGE"],
    "tuned.sh": ["SEEDS", "MERGE", "LIMIT", "EVALS"],
    "domain.sh": ["SEEDS", "EVALS", "MERGE"],
}


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.parametrize(("script", "name"), [(s, n) for s, names in EMPTY_MEANS_EMPTY.items() for n in names])
def test_a_switch_set_empty_is_empty(script, name):
    """Each expansion of the switch in the script, evaluated by bash: unset, the default; set empty, empty."""
    import re

    text = (ROOT / "examples" / script).read_text()
    expansions = re.findall(r"\$\{" + name + r'(?::?[-=+?])(?:"[^"]*"|[^}"])*\}', text)
    assert expansions, f"{script} has no ${{{name}...}}"
    for expansion in expansions:
        assert not expansion.startswith(f"${{{name}:-"), f"{script}: {expansion} treats {name}='' as unset"
        if expansion.startswith((f"${{{name}-", f"${{{name}:+")):
            unset = subprocess.run(["bash", "-c", f"unset {name}; printf '[%s]' {expansion}"], capture_output=True)
            empty = subprocess.run(["bash", "-c", f"{name}=; printf '[%s]' {expansion}"], capture_output=True)
            assert empty.stdout == b"[]", (script, expansion, empty.stdout)
            assert unset.stdout != b"[]" or expansion.startswith(f"${{{name}:+"), (script, expansion)


STUB_DEFSENT = """#!/usr/bin/env bash
# a stand-in defsent: logs its arguments, writes what -o names (a folder with defsent.json for a training)
echo "$*" >> "$STUB_LOG"
out= prev=
for arg in "$@"; do [ "$prev" = -o ] && out=$arg; prev=$arg; done
case $1 in
  train-pairs|teacher) mkdir -p "$out" && echo '{}' > "$out/defsent.json" ;;
  *) [ -z "$out" ] || echo '{}' > "$out" ;;
esac
"""


def stub_defsent(folder: Path) -> Path:
    """``folder``/defsent, the stand-in (:data:`STUB_DEFSENT`); returns ``folder``, to put first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "defsent").write_text(STUB_DEFSENT)
    (folder / "defsent").chmod(0o755)
    return folder


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
def test_stsb_pairs_trains_no_teacher_when_teachers_is_empty_and_keeps_the_drawn_gold(mini, tmp_path):
    """TEACHERS="" trains no teacher in either stage (it trained both); semi draws the gold pairs into the results
    folder, gold.tsv with gold.json saying how: every row drawn from STS-B train by the seed, its hashes.
    defsent is a stand-in here (the order of the commands is the script's, the training is not tested)."""
    import hashlib
    import json

    from conftest import write

    from defsent_cli.formats.pairs import read_pairs

    bench = mini / "senteval" / "downstream" / "STS" / "STSBenchmark"
    rows = [
        f"main-captions\tMSRvid\t2012train\t{i:04d}\t{i % 6:.3f}\ta man plays {i}\ta dog runs {i}" for i in range(9)
    ]
    write(bench / "sts-train.csv", rows)
    stub = stub_defsent(tmp_path / "bin")
    log = tmp_path / "calls.log"
    env = dict(os.environ, PATH=f"{stub}:{Path(sys.executable).parent}:{os.environ['PATH']}", STUB_LOG=str(log))
    env.update(DEFSENT_DATA=str(mini), MODEL=str(tmp_path / "model"), SEEDS="7", GOLD_SIZE="4", TEACHERS="")
    for stage in ("supervised", "semi"):
        done = subprocess.run(
            ["bash", str(ROOT / "examples" / "stsb_pairs.sh"), tmp_path / "out", stage],
            cwd=tmp_path, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    commands = [line.split()[0] for line in log.read_text().splitlines()]
    assert "teacher" not in commands and "label" not in commands and "sample-pairs" not in commands
    assert commands.count("train-pairs") == 2  # supervised/bi-7 and semi/seed-7/gold-only
    seed = tmp_path / "out" / "semi" / "seed-7"
    gold = (seed / "gold.tsv").read_bytes()
    draw = json.loads((seed / "gold.json").read_text())
    assert draw["seed"] == 7 and draw["size"] == 4 and draw["file"] == "gold.tsv"
    assert draw["source"] == str((bench / "sts-train.csv").resolve())
    assert draw["source_sha256"] == hashlib.sha256((bench / "sts-train.csv").read_bytes()).hexdigest()
    assert draw["sha256"] == hashlib.sha256(gold).hexdigest()
    train = read_pairs(bench / "sts-train.csv")
    drawn = "".join(f"{train.sent1[i]}\t{train.sent2[i]}\t{train.scores[i]:g}\n" for i in draw["rows"])
    assert len(set(draw["rows"])) == 4 and drawn.encode() == gold


def test_tuned_tables_adds_clustering_and_transfer_columns_as_mean_and_sd(tmp_path):
    """tuned_tables.py (the table of docs/results.md section 8): a row's clustering accuracy / NMI and transfer
    average are the mean ± sd over its seeds of each run's average; the base row shows its own; columns appear
    only when some row has those results."""
    import json

    def results(name, spearman, cluster=None, transfer=None):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        task = {"spearman": spearman}
        sts = {"tasks": {t: task for t in ("STS12", "STS-B", "SICK-R")}, "average": task}
        (path.parent / f"{path.name}-sts.json").write_text(json.dumps(sts))
        (path.parent / f"{path.name}-dev.json").write_text(json.dumps(sts))
        if cluster is not None:
            average = {"acc": cluster[0], "nmi": cluster[1]}
            (path.parent / f"{path.name}-cluster.json").write_text(json.dumps({"average": average}))
        if transfer is not None:
            (path.parent / f"{path.name}-senteval.json").write_text(json.dumps({"average": {"acc": transfer}}))

    def table(order):
        lines = run_table("tuned_tables.py", tmp_path, "--order", order).splitlines()
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        rows = {
            line.split(" | ")[0].lstrip("| "): [c.strip() for c in line.strip("|").split("|")] for line in lines[2:]
        }
        return header, rows

    results("base/base", 70.0)
    results("wiki/simcse/seed-1", 71.0)
    header, _ = table("wiki/simcse")
    assert "cluster acc" not in header and "transfer" not in header
    results("base/base", 70.0, cluster=(60.0, 50.0), transfer=80.0)
    results("wiki/simcse/seed-1", 71.0, cluster=(61.0, 51.0), transfer=81.0)
    results("wiki/simcse/seed-2", 72.0, cluster=(64.0, 52.0), transfer=83.0)
    header, rows = table("wiki/simcse")
    col = {name: header.index(name) for name in ("seeds", "Avg.", "cluster acc", "cluster NMI", "transfer")}
    simcse = rows["wiki/simcse"]
    # hand-computed: acc 61, 64 -> 62.50 ± 2.12 (sample sd); NMI 51, 52 -> 51.50 ± 0.71; transfer 81, 83 -> 82.00 ± 1.41
    assert simcse[col["seeds"]] == "2" and simcse[col["Avg."]] == "71.50 ± 0.71"
    assert (simcse[col["cluster acc"]], simcse[col["cluster NMI"]]) == ("62.50 ± 2.12", "51.50 ± 0.71")
    assert simcse[col["transfer"]] == "82.00 ± 1.41"
    assert (rows["base"][col["cluster acc"]], rows["base"][col["transfer"]]) == ("60.00", "80.00")
    assert "base, CLS pooling" not in rows
    results("wiki/nm/seed-1", 70.5)
    results("wiki/nm/seed-2", 70.7, transfer=79.0)  # SentEval on one seed only: the cell says so
    _, rows = table("wiki/simcse,wiki/nm")
    assert rows["wiki/nm"][col["transfer"]] == "79.00 (1 of 2 seeds)" and rows["wiki/nm"][col["cluster acc"]] == "-"
    results("base/base-cls", 65.0, cluster=(55.0, 45.0))
    _, rows = table("wiki/simcse")
    cls = rows["base, CLS pooling"]
    assert (cls[col["Avg."]], cls[col["cluster acc"]], cls[col["transfer"]]) == ("65.00", "55.00", "-")
    # --sets: each named clustering set's accuracy and NMI in its own columns, mean ± sd over the seeds
    for name, nmi in (("base/base", 68.0), ("wiki/simcse/seed-1", 69.0), ("wiki/simcse/seed-2", 70.0)):
        tasks = {"stackoverflow": {"acc": nmi - 1, "nmi": nmi}, "tweet": {"acc": 1.0, "nmi": 2.0}}
        (tmp_path / f"{name}-cluster.json").write_text(json.dumps({"average": {"acc": 0, "nmi": 0}, "tasks": tasks}))
    lines = run_table("tuned_tables.py", tmp_path, "--order", "wiki/simcse", "--sets", "stackoverflow").splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[-3:] == ["stackoverflow acc", "stackoverflow NMI", "kept step / alpha"] and "tweet NMI" not in header
    rows = {line.split(" | ")[0].lstrip("| "): [c.strip() for c in line.strip("|").split("|")] for line in lines[2:]}
    assert rows["wiki/simcse"][-3:-1] == ["68.50 ± 0.71", "69.50 ± 0.71"] and rows["base"][-3:-1] == ["67.00", "68.00"]


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_contrastive_cls_method_with_clustering_on_a_tiny_model(tiny_bert, more, tmp_path, monkeypatch):
    """examples/contrastive.sh: a CLS method (SimCSE through its training-only MLP) on WikiText-2's sentences,
    evaluated with CLS pooling, as is the base beside its mean-pooled row; EVALS adds clustering; a rerun skips
    finished work."""
    import json

    env = {"SEEDS": "1", "METHODS": "simcse-cls", "EVALS": "dev cluster", "CLUSTER": "agnews,tweet", "BATCH": "4"}
    for name, value in {**env, "MODEL": str(tiny_bert)}.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    result = run_script("contrastive.sh", out, "wiki", data=more, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    info = json.loads((out / "wiki" / "simcse-cls" / "seed-1" / "defsent.json").read_text())
    assert (info["pooling"], info["mlp"], info["objective"]) == ("cls", True, "simcse")
    for name, pooling in (("base/base", "mean"), ("base/base-cls", "cls"), ("wiki/simcse-cls/seed-1", "cls")):
        for kind in ("dev", "cluster"):
            results = json.loads((out / f"{name}-{kind}.json").read_text())
            assert results["pooling"] == pooling, (name, kind, results["pooling"])
        assert not (out / f"{name}-sts.json").exists()  # not in EVALS
    sentences = (out / "wiki.txt").read_text().splitlines()  # headings and "Ok ." (too short) left out
    assert sentences[0] == "The dog runs fast ." and sentences[-1] == "Is this a question ?" and len(sentences) == 5
    again = run_script("contrastive.sh", out, "wiki", data=more, cwd=tmp_path)
    assert again.returncode == 0 and "+ defsent" not in again.stderr  # nothing rerun


def foldoc_blocks(n: int) -> list[tuple[list[str], str]]:
    """``n`` FOLDOC-style blocks: a term, its category tag, a definition of two sentences, a date."""
    words = ["cache", "kernel", "packet", "thread", "socket", "compiler", "buffer", "router", "shell", "parser"]
    blocks = []
    for i in range(n):
        term = f"{words[i % len(words)]} {i}"
        category = ("programming", "networking")[i % 2]
        blocks.append(
            (
                [term],
                f"{term}\n\n   <{category}> A {words[(i + 3) % len(words)]} that holds the {words[i % len(words)]} "
                f"of a program. It is used by the {words[(i + 5) % len(words)]}.\n\n   (2001-01-0{1 + i % 9})\n\n",
            )
        )
    return blocks


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_domain_glossary_with_wordnet_gloss_on_a_tiny_model(tiny_bert, more, tmp_path, monkeypatch):
    """examples/domain.sh's foldoc-wn: FOLDOC merged with a WordNet sample, trained for as many definitions as
    FOLDOC alone has, FOLDOC's entries in the same splits as alone; the glossary's reverse dictionary (EVALS
    "gloss") asks the same queries of the same candidates for every model; a rerun skips it all. One seed, no
    merge: the dev-best seed and its WiSE-FT are test_domain_pst_step_and_noise_matching_variants_on_a_tiny_model's."""
    import json

    from test_dictd import FOLDOC_SHORT, write_dictd
    from test_dictionary import ADJ_LINES, LICENSE, NOUN_LINES

    dictd = tmp_path / "dictd"
    dictd.mkdir()
    write_dictd(dictd, "foldoc", FOLDOC_SHORT, foldoc_blocks(40))
    (more / "wordnet").mkdir()
    (more / "wordnet" / "data.noun").write_text("\n".join(LICENSE + NOUN_LINES) + "\n")
    (more / "wordnet" / "data.adj").write_text("\n".join(LICENSE + ADJ_LINES) + "\n")
    env = {"SEEDS": "1", "EVALS": "gloss", "MERGE": "", "DICTD": str(dictd), "WN_SAMPLE": "3", "MODEL": str(tiny_bert)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    result = run_script("domain.sh", out, "foldoc-wn", data=more, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    def entries(path: Path) -> list[dict]:
        return [json.loads(line) for line in path.read_text().splitlines()]

    foldoc, merged = entries(out / "foldoc" / "dict.jsonl"), entries(out / "foldoc-wn" / "dict.jsonl")
    assert len(foldoc) == 40 and len(merged) == 43  # + the three entries of the WordNet sample
    split_of = {e["entry"]: e["split"] for e in merged}
    assert all(split_of[e["entry"]] == e["split"] for e in foldoc)
    assert all(d.endswith("of a program.") for e in foldoc for d in e["definitions"])  # --first-sentence
    train = sum(len(e["definitions"]) for e in foldoc if e["split"] == "train")
    merged_train = sum(len(e["definitions"]) for e in merged if e["split"] == "train")
    info = json.loads((out / "foldoc-wn" / "seed-1" / "defsent.json").read_text())
    assert info["training_definitions"] == train < merged_train  # --limit: FOLDOC's number, from both sources
    tests = sum(len(e["definitions"]) for e in foldoc if e["split"] == "test")
    for name in ("base/base", "foldoc-wn/seed-1"):
        gloss = json.loads((out / f"{name}-dict.json").read_text())
        assert (gloss["split"], gloss["n"], gloss["bank_entries"]) == ("test", tests, 40), name
        assert json.loads((out / f"{name}-dict-dev.json").read_text())["split"] == "dev"
        assert not (out / f"{name}-dev.json").exists()  # not in EVALS
    assert not list((out / "foldoc-wn").glob("wise-*"))  # MERGE=""
    again = run_script("domain.sh", out, "foldoc-wn", data=more, cwd=tmp_path)
    assert again.returncode == 0 and "+ defsent" not in again.stderr  # nothing rerun


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
@pytest.mark.long
def test_domain_pst_step_and_noise_matching_variants_on_a_tiny_model(tiny_bert, more, tmp_path, monkeypatch):
    """examples/domain.sh's foldoc (two seeds, each on dev, WiSE-FT of the dev-best seed only), then foldoc-pst (PST
    step 2: the AC bank rebuilt with the foldoc variant's dev-best seed, a fresh copy of the ORIGINAL model trained
    against it) and foldoc-nmL (+ L x Noise Matching), one seed each and no evaluation (the foldoc run evaluates
    each seed it trains, as every variant does); foldoc-pst before the foldoc variant's seeds is a one-line error."""
    import json

    from test_dictd import FOLDOC_SHORT, write_dictd

    dictd = tmp_path / "dictd"
    dictd.mkdir()
    write_dictd(dictd, "foldoc", FOLDOC_SHORT, foldoc_blocks(30))
    env = {"SEEDS": "1 2", "EVALS": "dev", "MERGE": "1", "DICTD": str(dictd), "MODEL": str(tiny_bert)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    early = run_script("domain.sh", out, "foldoc-pst", data=more, cwd=tmp_path)
    assert early.returncode == 2 and "foldoc-pst needs the foldoc variant's seeds" in early.stderr.splitlines()[-1]
    result = run_script("domain.sh", out, "foldoc", data=more, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    dev = {
        seed: sum(
            t["spearman"] for t in json.loads((out / "foldoc" / f"seed-{seed}-dev.json").read_text())["tasks"].values()
        )
        for seed in (1, 2)
    }
    best = max(dev, key=lambda seed: (dev[seed], -seed))
    assert sorted(p.name for p in (out / "foldoc").glob("wise-*") if p.is_dir()) == [f"wise-{best}"]
    alpha = json.loads((out / "foldoc" / f"wise-{best}" / "defsent.json").read_text())["alpha"]
    assert 0 <= alpha <= 1 and (out / "foldoc" / f"wise-{best}-dev.json").is_file()

    for name, value in {"SEEDS": "1", "EVALS": "", "MERGE": ""}.items():
        monkeypatch.setenv(name, value)
    result = run_script("domain.sh", out, "foldoc-nm0.5", "foldoc-pst", data=more, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    import h5py

    with h5py.File(out / "foldoc-pst" / "bank.h5") as bank:
        assert Path(bank.attrs["encoder"]).resolve() == (out / "foldoc" / f"seed-{best}").resolve()
        assert bank.attrs["kind"] == "AC"
    from defsent_cli.formats.checkpoint import read_info

    info = read_info(out / "foldoc-pst" / "seed-1")  # its paths recorded relative to it, read back resolved
    assert Path(info["base_model"]).resolve() == tiny_bert.resolve()  # a fresh copy of the original
    assert Path(info["bank"]).resolve() == (out / "foldoc-pst" / "bank.h5").resolve()
    nm = read_info(out / "foldoc-nm0.5" / "seed-1")
    assert nm["nm_weight"] == 0.5 and Path(nm["dictionary"]).resolve() == (out / "foldoc" / "dict.jsonl").resolve()
    assert not list((out / "foldoc-pst").glob("seed-1-*.json"))  # EVALS=""
    bad = run_script("domain.sh", out, "foldoc-nmx", data=more, cwd=tmp_path)
    assert bad.returncode == 2 and "needs a weight" in bad.stderr.splitlines()[-1]
