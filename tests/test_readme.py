"""The README stays a newcomer's start page: its quickstart runs as written, it is short, its first screen
has code, its command table names every command, and its links (and the docs pages') point at files.

The quickstart block (the first ```sh block after the ``## Quickstart`` heading) is run by bash as a user
would paste it, with ``set -euo pipefail``, in an empty folder, on a tiny random BERT (``DEFSENT_MODEL``, the
documented way to name a model without ``-m``), a tiny WordNet database (``WORDNET``, which the block reads as
``${WORDNET:-/usr/share/wordnet}``) and a mini SentEval folder (``DEFSENT_DATA``), so its last step runs too.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, build_mini, build_tiny_bert, run_bounded, wrap_sentence_transformers

README = REPO / "README.md"
DOCS = REPO / "docs"
QUICKSTART_DEADLINE = 600  # seconds; 54-85 s measured on 2 busy cores

# (lemmas, gloss): a WordNet data.noun of 36 synsets, enough for a 0.8/0.1/0.1 split with dev and test entries
SYNSETS = [
    (["piglet", "shoat"], "a young pig"),
    (["teakettle"], "kettle for boiling water to make tea"),
    (["giraffe", "camelopard"], "a long-necked african animal"),
    (["dog", "domestic_dog"], "a domesticated carnivorous mammal kept as a pet"),
    (["joy", "joyousness"], "a feeling of great happiness"),
    (["fish"], "an animal that lives in water and swims with fins"),
    (["sprint"], "the act of running quickly"),
    (["revival"], "the act of giving new life or vigor to something"),
    (["ability"], "having the necessary means or skill to do something"),
    (["guitarist"], "a musician who plays the guitar"),
    (["onion"], "a bulb eaten as a vegetable, sliced in the kitchen"),
    (["cat", "true_cat"], "a small domesticated animal that catches mice"),
    (["tree"], "a tall plant with a trunk and branches"),
    (["street"], "a road in a city or town"),
    (["kitchen"], "a room where food is prepared"),
    (["man"], "an adult male person"),
    (["woman"], "an adult female person"),
    (["sentence"], "a string of words that means something"),
    (["water"], "a clear liquid that falls as rain"),
    (["fin"], "a thin part of a fish used for swimming"),
    (["pet"], "an animal kept at home for company"),
    (["mammal"], "an animal that feeds its young with milk"),
    (["happiness"], "the state of being happy"),
    (["skill"], "the ability to do something well"),
    (["vigor", "vigour"], "active strength of body or mind"),
    (["tea"], "a drink made by pouring boiling water on dried leaves"),
    (["kettle"], "a pot with a lid for boiling water"),
    (["pig", "hog"], "a domestic animal with a flat snout kept for meat"),
    (["animal", "beast"], "a living thing that can move and feel"),
    (["music"], "sounds arranged to be pleasant to hear"),
    (["city"], "a large town where many people live"),
    (["room"], "a part of a building with walls and a door"),
    (["word"], "a unit of language that has a meaning"),
    (["rain"], "water falling from the clouds in drops"),
    (["milk"], "a white liquid that mammals feed their young"),
    (["running", "run"], "moving fast on foot"),
]


def tiny_wordnet(folder: Path) -> Path:
    """A WordNet 3.0 database folder (``data.noun`` only, with the licence header's leading-space lines)."""
    folder.mkdir(parents=True)
    lines = ["  1 This software and database is being provided to you, the LICENSEE, by  "]
    for k, (lemmas, gloss) in enumerate(SYNSETS):
        words = " ".join(f"{lemma} 0" for lemma in lemmas)
        lines.append(f"{1740 + 100 * k:08d} 05 n {len(lemmas):02x} {words} 000 | {gloss}  ")
    (folder / "data.noun").write_text("\n".join(lines) + "\n")
    return folder


def readme() -> str:
    return README.read_text(encoding="utf-8")


def quickstart_block(text: str) -> str:
    """The first ```sh block after the ``## Quickstart`` heading (before the next ``## `` heading)."""
    match = re.search(r"^## Quickstart\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, "README.md has no '## Quickstart' section"
    block = re.search(r"^```sh\n(.*?)^```\s*$", match.group(1), re.M | re.S)
    assert block, "README.md's Quickstart section has no ```sh block"
    return block.group(1)


def local_links(path: Path) -> list[str]:
    """The targets of the relative Markdown links of a page, code blocks left out, anchors cut off."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_readme_is_short_and_starts_with_code():
    lines = readme().splitlines()
    assert len(lines) < 400, f"README.md has {len(lines)} lines: move the long material into docs/"
    first = next((n for n, line in enumerate(lines, 1) if line.startswith("```")), None)
    assert first is not None and first <= 40, f"README.md's first code block starts on line {first}, not in 1-40"


def test_readme_quickstart_block_is_documented_as_run():
    """The block is copy-paste: no placeholders, WordNet's folder substitutable, no model to name."""
    block = quickstart_block(readme())
    assert "${WORDNET:-/usr/share/wordnet}" in block
    assert "BASE" not in block and "PATH/TO" not in block.upper()
    assert "mkdir" in block


def test_readme_links_point_at_files():
    pages = [README, *sorted(DOCS.glob("*.md"))]
    missing = [
        f"{page.relative_to(REPO)} -> {target}"
        for page in pages
        for target in local_links(page)
        if target and not (page.parent / target).exists()
    ]
    assert not missing, "links to missing files: " + "; ".join(missing)
    docs = {t for t in local_links(README) if t.startswith("docs/")}
    assert {"docs/results.md", "docs/conventions.md"} <= docs  # the report and the conventions in full
    assert docs & {"docs/README.md", "docs/index.md"}, "README.md does not link the docs index"


def test_readme_command_table_names_every_command():
    from defsent_cli.cli.app import app

    text = readme()
    commands = (DOCS / "commands.md").read_text(encoding="utf-8")
    for command in (c.name for c in app.registered_commands):
        assert re.search(rf"^\|[^|]*`{re.escape(command)}`", text, re.M), f"README's command table lacks {command}"
        assert re.search(rf"^\|[^|]*`{re.escape(command)}`", commands, re.M), f"docs/commands.md lacks {command}"


def expected_output(text: str) -> str:
    """The first ```text block of the Quickstart section: what the README says the block prints."""
    match = re.search(r"^## Quickstart\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, "README.md has no '## Quickstart' section"
    block = re.search(r"^```text\n(.*?)^```\s*$", match.group(1), re.M | re.S)
    assert block, "README.md's Quickstart section has no ```text block of its output"
    return block.group(1)


def message_keys(shown: str) -> list[str]:
    """The keys of the messages the README shows (``model``, ``wrote ckpt``, ``--pooler auto``: the one or two
    words before a line's first colon, the step number left out): each must be a line the quickstart prints."""
    keys = []
    for line in shown.splitlines():
        head = re.sub(r"^\s*(\d+\.\s+)?", "", line).split(": ", 1)
        if len(head) == 2 and re.fullmatch(r"[-\w.]+( [-\w.]+)?", head[0]):
            keys.append(head[0])
    return keys


def test_the_readme_shows_message_keys():
    assert message_keys("2. model: x (y)\n   wrote bank.h5: 2 entries\n   scores are dots (as in training: x)\n") == [
        "model",
        "wrote bank.h5",
    ]


@pytest.mark.long  # 54-85 s on 2 busy cores: nine CLI processes, each importing torch
def test_readme_quickstart_runs(tmp_path):
    """The block runs as written, on a model like the bundled all-MiniLM-L6-v2 (a sentence-transformers folder,
    mean pooling, a pooler never trained), and every message the README shows it printing is printed."""
    model = wrap_sentence_transformers(
        build_tiny_bert(tmp_path / "bert", trained_pooler=False), tmp_path / "st", pooling="mean"
    )
    block = quickstart_block(readme())
    data = build_mini(tmp_path / "data")  # senteval/ with STS-B dev and SICK-R trial
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DEFSENT_MODEL": str(model),
        "WORDNET": str(tiny_wordnet(tmp_path / "wordnet")),
        "DEFSENT_DATA": str(data),
        "DEFSENT_NO_PROGRESS": "1",
    }
    script = "set -euo pipefail\n" + block
    result = run_bounded(
        ["bash", "-c", script], QUICKSTART_DEADLINE, cwd=work, env=env, capture_output=True, check=False
    )
    out, err = result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")
    assert result.returncode == 0, f"the README's quickstart failed (exit {result.returncode}):\n{err[-4000:]}"
    # every step left what the README says it does
    [folder] = [p for p in work.iterdir() if p.is_dir()]  # the block's own mkdir
    entries = [json.loads(line) for line in (folder / "dict.jsonl").read_text().splitlines()]
    assert len(entries) == sum(len(lemmas) for lemmas, _ in SYNSETS)
    assert {e["split"] for e in entries} == {"train", "dev", "test"}
    from defsent_cli.formats.checkpoint import read_info

    info = read_info(folder / "ckpt")  # its paths recorded relative to it, read back resolved
    assert Path(info["base_model"]).resolve() == model.resolve()  # the model came from DEFSENT_MODEL
    vectors = np.load(folder / "vecs.npy")
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    assert "a baby pig" in out and "(3, 32)" in out  # lookup's hits and the python line's shape
    for name in ("base-dev.json", "ckpt-dev.json"):  # the SentEval step ran
        assert json.loads((folder / name).read_text())["tasks"], name
    printed = {line.strip().split(": ", 1)[0] for line in (out + err).splitlines() if ": " in line}
    keys = message_keys(expected_output(readme()))
    assert "wrote ckpt" in keys and "--pooler auto" in keys
    missing = [key for key in keys if key not in printed]
    assert not missing, f"the README shows lines the quickstart does not print: {missing}"


def test_readme_quickstart_says_how_to_get_the_data_when_it_skips_step_6(tmp_path):
    """Without $DEFSENT_DATA the last step is skipped, and says so: how to get the data and how to name it."""
    block = quickstart_block(readme())
    step6 = block[block.index("# 6.") :]
    env = {k: v for k, v in os.environ.items() if k != "DEFSENT_DATA"}
    env["PATH"] = f"{tmp_path}{os.pathsep}{env['PATH']}"  # a `defsent` that must not run
    (tmp_path / "defsent").write_text("#!/bin/sh\necho STUB-DEFSENT-RAN >&2\nexit 1\n")
    (tmp_path / "defsent").chmod(0o755)
    result = run_bounded(["bash", "-c", "set -euo pipefail\n" + step6], 60, cwd=tmp_path, env=env, capture_output=True)
    err = result.stderr.decode()
    assert result.returncode == 0 and "STUB-DEFSENT-RAN" not in err, err
    assert "skipped" in err and "DEFSENT_DATA" in err and "senteval/downstream" in err and "docs/install.md" in err


def test_quickstart_block_is_the_first_sh_block_of_its_section():
    text = "## Install\n\n```sh\npip\n```\n\n## Quickstart\n\n```text\nx\n```\n```sh\na\nb\n```\n```sh\nc\n```\n"
    assert quickstart_block(text) == "a\nb\n"
    with pytest.raises(AssertionError, match="no ```sh block"):
        quickstart_block("## Quickstart\n\nno code\n\n## Next\n\n```sh\nx\n```\n")
