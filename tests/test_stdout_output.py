"""``-o -`` (and ``--plot -``, ``--link -``) on every command that writes an output (issue 68 item 2): a text
output (JSONL, TSV, JSON, the .npy stream) goes to stdout; anything else (an HDF5 bank, a picture, a checkpoint
folder) is refused in one line that says what to give instead; never a file or folder named ``-``.

The walk covers every option of every command that writes something: a command added with an output and no
row here fails :func:`test_every_output_option_is_walked`."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import typer
from conftest import CORPUS, write

from defsent_cli.cli import app

#: option names that name an output of their command
OUTPUT_OPTIONS = {"--output", "--plot", "--link"}

#: command -> output option -> "stdout" (the data comes there) or "refused"
WALKED = {
    "build-dict": {"--output": "stdout"},
    "embed-entries": {"--output": "refused"},
    "index": {"--output": "refused"},
    "ica": {"--output": "refused"},
    "fit-post": {"--output": "refused"},
    "inspect": {"--output": "stdout", "--plot": "refused"},
    "plot": {"--output": "refused"},
    "kde-filter": {"--output": "stdout", "--plot": "refused"},
    "sample-pairs": {"--output": "stdout"},
    "label": {"--output": "stdout"},
    "encode": {"--output": "stdout"},
    "eval-dict": {"--output": "stdout"},
    "eval-sts": {"--output": "stdout"},
    "eval-senteval": {"--output": "stdout"},
    "eval-cluster": {"--output": "stdout"},
    "select-best": {"--output": "refused", "--link": "refused"},
    "ditto-search": {"--output": "refused"},
    "merge": {"--output": "refused"},
    "train": {"--output": "refused"},
    "tsdae": {"--output": "refused"},
    "simcse": {"--output": "refused"},
    "train-pairs": {"--output": "refused"},
    "teacher": {"--output": "refused"},
}


def _output_options() -> dict[str, set[str]]:
    """Each command of the app and the output options it has."""
    group = typer.main.get_command(app)
    found = {}
    for name, command in group.commands.items():
        names = {opt for param in command.params for opt in getattr(param, "opts", []) if opt in OUTPUT_OPTIONS}
        if names:
            found[name] = names
    return found


def test_every_output_option_is_walked():
    assert {name: set(options) for name, options in WALKED.items()} == _output_options()


@pytest.fixture
def files(tmp_path, tiny_bert, tiny_dict, cli):
    """Small real inputs of every kind, and a bank and a trained teacher made by the CLI."""
    w = {"dict": tiny_dict, "model": tiny_bert}
    w["bank"] = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", w["bank"], "--device", "cpu").exit_code == 0
    w["texts"] = tmp_path / "texts.txt"
    write(w["texts"], CORPUS)
    w["gold"] = tmp_path / "gold.tsv"
    write(w["gold"], [f"{CORPUS[i]}\t{CORPUS[(i + 1) % 10]}\t{(i % 5) + 0.5}" for i in range(10)])
    w["silver"] = tmp_path / "silver.tsv"
    write(w["silver"], [f"{CORPUS[i]}\t{CORPUS[(i + 3) % 10]}\t{(i * 7 % 5) + 0.25}" for i in range(10)])
    w["vectors"] = tmp_path / "vectors.npy"
    np.save(w["vectors"], np.random.default_rng(0).standard_normal((20, 8)).astype(np.float32))
    return w


def _invocation(command: str, option: str, w: dict, tmp_path) -> list:
    """``command`` with ``option -`` and inputs that are otherwise fine."""
    d, m, b = w["dict"], w["model"], w["bank"]
    elsewhere = {"--output": ["-o", tmp_path / "out.json"]}
    loop = ["--max-steps", "1", "--device", "cpu"]
    args = {
        "build-dict": [d],
        "embed-entries": [d, "-m", m],
        "index": [w["texts"], "-m", m],
        "ica": [b],
        "fit-post": ["-m", m, "--post", "zscore", "-i", w["texts"]],
        "inspect": [w["vectors"]],
        "plot": [tmp_path / "run"],
        "kde-filter": [w["silver"], "--gold", w["gold"]],
        "sample-pairs": [w["texts"], "--strategy", "random"],
        "label": [w["gold"], "-m", tmp_path / "teacher"],
        "encode": ["-m", m, "--device", "cpu", "-i", w["texts"]],
        "eval-dict": [d, "-m", m, "--bank", b, "--split", "train", "--device", "cpu"],
        "eval-sts": ["-m", m, "--device", "cpu", "--split", "dev", "--data", w.get("mini", tmp_path)],
        "eval-senteval": ["-m", m, "--data", tmp_path / "nothing"],
        "eval-cluster": ["-m", m, "--data", tmp_path / "nothing"],
        "select-best": [m, "--by", "dict-dev", "--dictionary", d, "--bank", b],
        "ditto-search": ["-m", m, "--data", tmp_path / "nothing"],
        "merge": [m, m],
        "train": [d, "--bank", b, "-m", m, *loop],
        "tsdae": [w["texts"], "-m", m, *loop],
        "simcse": [w["texts"], "-m", m, *loop],
        "train-pairs": [w["gold"], "-m", m, *loop],
        "teacher": [w["gold"], "-m", m, *loop],
    }[command]
    if option != "--output" and command in ("inspect", "kde-filter", "select-best"):
        args = [*args, *elsewhere["--output"]]
    return [command, *args, option, "-"]


@pytest.mark.parametrize(
    ("command", "option"), [(c, o) for c, options in WALKED.items() for o in options if WALKED[c][o] == "refused"]
)
def test_an_output_that_cannot_be_a_stream_refuses_dash(command, option, cli, files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli(*_invocation(command, option, files, tmp_path))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "standard output" in lines[0], result.stderr
    assert " name" in lines[0]  # says what to give instead
    assert not (tmp_path / "-").exists()
    assert result.stdout == ""


def test_text_outputs_go_to_stdout(cli, files, tmp_path, monkeypatch, mini):
    """Each text output with ``-o -``: its data on stdout, the same as the file ``-o FILE`` writes, nothing named
    ``-``; the closing line on stderr says stdout."""
    teacher = tmp_path / "teacher"
    made = cli("teacher", files["gold"], "-m", files["model"], "--max-steps", "2", "--eval-every", "0", "-o", teacher)
    assert made.exit_code == 0, made.stderr
    monkeypatch.chdir(tmp_path)
    files["mini"] = mini
    same_as_file = {"build-dict", "kde-filter", "sample-pairs", "label", "encode"}
    for command in ("build-dict", "kde-filter", "sample-pairs", "label", "encode", "inspect", "eval-dict", "eval-sts"):
        args = _invocation(command, "--output", files, tmp_path)
        result = cli(*args)
        assert result.exit_code == 0, (command, result.stderr)
        assert not (tmp_path / "-").exists(), command
        assert result.stdout_bytes, command
        if command in same_as_file:
            suffix = {"build-dict": ".jsonl", "encode": ".npy"}.get(command, ".tsv")
            target = tmp_path / f"{command}{suffix}"
            assert cli(*args[:-1], target).exit_code == 0
            if command == "encode":
                got = np.load(io.BytesIO(result.stdout_bytes))
                assert np.array_equal(got, np.load(target))
            else:
                assert result.stdout == target.read_text(), command
            if command != "encode":  # its closing line names no output
                assert "stdout" in result.stderr and str(target) not in result.stderr
        else:
            assert isinstance(json.loads(result.stdout), dict), command
