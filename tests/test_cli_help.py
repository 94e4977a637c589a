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
        "build-dict", "dict-stats", "embed-entries", "ica", "inspect", "train", "select-best", "lookup",
        "eval-dict", "encode", "eval-sts", "eval-senteval", "eval-cluster", "fit-post", "ditto-search", "merge",
        "tsdae",
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
