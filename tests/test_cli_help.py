"""Every command's --help: an example that runs the command, readable on an 80-column terminal."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from defsent_cli.cli.app import app

COMMANDS = sorted(command.name for command in app.registered_commands)


def test_every_command_is_registered():
    assert set(COMMANDS) == {
        "build-dict", "dict-stats", "embed-entries", "ica", "inspect", "train", "select-best", "lookup", "define",
        "eval-dict", "encode", "eval-sts", "eval-senteval", "eval-cluster", "fit-post", "ditto-search", "merge",
        "tsdae", "simcse", "train-pairs", "teacher", "label", "sample-pairs", "kde-filter", "plot",
        "index", "search", "serve",
    }  # fmt: skip


@pytest.mark.parametrize("name", COMMANDS)
def test_help_fits_80_columns_and_shows_an_example(name):
    env = {**os.environ, "COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    result = subprocess.run(
        [sys.executable, "-m", "defsent_cli", name, "--help"], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Usage: python -m defsent_cli {name} ")
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, too_long
    assert "…" not in result.stdout and "..." not in result.stdout.replace("]...", "]").replace("}...", "}")
    example = [i for i, line in enumerate(lines) if line.strip() in ("Example:", "Examples:")]
    assert example, "no Example: block"
    assert lines[example[0] + 1].strip().startswith(("defsent " + name, "HEAD=$(defsent " + name))


# What only the commands that run a model, a bank or a classifier may import: `defsent --help`, every
# `defsent COMMAND --help` and shell completion (run on every TAB) must not, so that they start at once.
HEAVY = ("torch", "transformers", "h5py", "sklearn", "scipy", "numpy")

# One interpreter runs the app as the console script does (prog_name "defsent") for each call in turn and
# reports, after each, its exit code, its stdout and which of HEAVY are imported so far.
DRIVER = r"""
import contextlib, io, json, os, sys

heavy, calls = json.loads(sys.argv[1]), json.loads(sys.argv[2])
from defsent_cli.cli.app import app

report = [{"call": "import", "code": 0, "out": "", "heavy": sorted(m for m in heavy if m in sys.modules)}]
for args, env in calls:
    os.environ.update(env)
    out, code = io.StringIO(), None
    try:
        with contextlib.redirect_stdout(out):
            app(args, prog_name="defsent")
    except SystemExit as exc:
        code = exc.code or 0
    for name in env:
        del os.environ[name]
    report.append({"call": " ".join(args) or env.get("COMP_WORDS"), "code": code, "out": out.getvalue(),
                   "heavy": sorted(m for m in heavy if m in sys.modules)})
print(json.dumps(report))
"""


def _completion(words: str) -> tuple[list, dict]:
    """A bash TAB after ``words`` (Click's protocol: the words so far and the index of the one completed)."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    return [], {"_DEFSENT_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}


def test_help_and_completion_import_no_heavy_library():
    import json

    calls = [(["--help"], {})] + [([name, "--help"], {}) for name in COMMANDS]
    calls += [_completion("defsent tr"), _completion("defsent train --po"), _completion("defsent encode --pooling ")]
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(HEAVY), json.dumps(calls)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    for row in report:
        assert row["code"] == 0, row
        assert row["heavy"] == [], f"{row['call']!r} imported {row['heavy']}"
    helps = [row["out"] for row in report[1 : 2 + len(COMMANDS)]]
    assert all(text.startswith("Usage: defsent") for text in helps)
    completions = [row["out"].split() for row in report[-3:]]
    assert "train" in completions[0] and "tsdae" not in completions[0]
    assert {"--pooling", "--pooler"} <= set(completions[1])
    assert {"mean", "cls", "prompt"} <= set(completions[2])
