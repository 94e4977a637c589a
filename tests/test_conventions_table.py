"""One behaviour across commands (issue 69 item 4): docs/conventions.md's table of every command that takes a
model, a bank, stdin or an output is generated here from the commands themselves, so it cannot drift:

- ``-m``: the default chain ($DEFSENT_MODEL, else the bundled model; a Hub name or a folder) where the option
  resolves through ``options.model_default``, ``required`` where it has no default, ``optional`` where leaving
  it out means something else;
- ``--bank``: ``required`` where the command cannot run without it, ``the checkpoint's`` where the bank a
  checkpoint was trained against is the default (``search_options.choose_bank``);
- stdin: where the main input is read from stdin when no file is given (the command's help says so, and running
  it with an empty stdin says stdin is empty rather than asking for an argument);
- ``-o -``: what ``tests/test_stdout_output.py`` walks and checks (stdout, or refused);
- ``-q``: every command (``boundary.guard``).

On a mismatch the test prints the table to paste between the markers."""

from __future__ import annotations

import re

import pytest
import typer
from conftest import REPO
from test_stdout_output import WALKED

from defsent_cli.cli import app
from defsent_cli.cli.options import model_default

DOC = REPO / "docs" / "conventions.md"
BEGIN, END = "<!-- commands table: tests/test_conventions_table.py -->", "<!-- end of the commands table -->"
#: commands whose bank defaults to the one the checkpoint was trained against
RECORDED_BANK = {"lookup", "eval-dict"}


def _commands() -> dict:
    return typer.main.get_command(app).commands


def _model(command) -> str:
    for param in command.params:
        if "--model" in getattr(param, "opts", []) or "-m" in getattr(param, "opts", []):
            if getattr(param.callback, "__wrapped__", param.callback) is model_default:
                return "default"
            return "required" if param.required else "optional"
    return ""


def _bank(name: str, command) -> str:
    for param in command.params:
        if "--bank" in getattr(param, "opts", []):
            if name in RECORDED_BANK:
                return "the checkpoint's"
            return "required" if param.required else "optional"
    return ""


def _stdin(command) -> str:
    text = " ".join([command.help or "", *(getattr(p, "help", None) or "" for p in command.params)])
    return "yes" if re.search(r"\bstdin\b", text) else ""


def _outputs(name: str) -> str:
    walked = WALKED.get(name, {})
    return ", ".join(f"{opt.removeprefix('--')}: {how}" for opt, how in sorted(walked.items()))


def table() -> str:
    rows = ["| command | `-m` | `--bank` | stdin | `-o -` (and other outputs) | `-q` |", "|---|---|---|---|---|---|"]
    for name, command in sorted(_commands().items()):
        cells = [_model(command), _bank(name, command), _stdin(command), _outputs(name)]
        if any(cells):
            rows.append(f"| `{name}` | " + " | ".join(c or "-" for c in cells) + " | yes |")
    return "\n".join(rows)


def test_the_conventions_table_is_the_commands_own():
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"docs/conventions.md lacks the markers {BEGIN} ... {END}"
    documented = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert documented == table(), "paste this between the markers in docs/conventions.md:\n" + table()


@pytest.mark.parametrize("name", sorted(n for n, c in _commands().items() if _stdin(c) == "yes"))
def test_a_command_that_says_it_reads_stdin_does(name, cli, tiny_bert, monkeypatch, tmp_path):
    """Given no input and an empty stdin (the default model set), it says stdin held nothing, never 'Missing
    argument'."""
    monkeypatch.setenv("DEFSENT_MODEL", str(tiny_bert))
    monkeypatch.chdir(tmp_path)
    needs = {"embed-entries": ["-o", "out.h5"], "index": ["-o", "out.h5"], "search": ["--index", "corpus.h5"]}
    if name == "search":
        (tmp_path / "texts.txt").write_text("a dog barks\na cat sleeps\n")
        assert cli("index", "texts.txt", "-o", "corpus.h5", "--device", "cpu").exit_code == 0
    result = cli(name, *needs.get(name, []), input="")
    assert result.exit_code == 2 and "stdin" in result.stderr and "Missing argument" not in result.stderr, result.stderr


def test_every_command_takes_quiet():
    assert all(any("--quiet" in getattr(p, "opts", []) for p in c.params) for c in _commands().values())
