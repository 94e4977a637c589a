"""Every file defsent writes has the mode the user's umask gives a new file (0o666 less the umask; folders
0o777 less it), as ``open()`` and ``mkdir`` would: outputs written to a temporary name first (``mkstemp``
makes them 0o600) and the weights ``save_pretrained`` writes must not come out private, or a checkpoint
folder cannot be shared as it is (issue 55, part 3).

Each case runs the real command line under ``sh -c 'umask MASK && defsent ...'``, one writer of each kind:
a dictionary (``build-dict``), a bank (``embed-entries``), a checkpoint folder (``train``), a results JSON
(``eval-sts -o``), vectors (``encode -o``) and a picture (``inspect --plot``).
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys

import pytest
from conftest import build_mini, run_bounded, warm_command, warm_defsent

DEFSENT = [sys.executable, "-m", "defsent_cli"]
ENV = {**os.environ, "DEFSENT_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
DEADLINE = 300  # seconds for the whole chain (about 25 s on 2 cores)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("umask-inputs")
    rows = [{"entry": f"w{i}", "definitions": [f"a word {i} that means thing {i % 5} or {i % 3}"]} for i in range(30)]
    source = root / "source.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    texts = root / "texts.txt"
    texts.write_text("a dog runs in the park\nthe cat sleeps\n")
    return {"source": source, "texts": texts, "data": build_mini(root / "mini") / "senteval"}


@pytest.mark.parametrize("mask", [0o022, 0o027], ids=["umask-022", "umask-027"])
def test_every_writer_follows_the_umask(inputs, tiny_bert, tmp_path, mask):
    out = tmp_path / "out"
    out.mkdir()
    d, bank, ckpt = out / "dict.jsonl", out / "bank.h5", out / "ckpt"
    commands = [
        ["build-dict", inputs["source"], "--format", "jsonl", "--split", "0.6,0.2,0.2", "-o", d],
        ["embed-entries", d, "-m", tiny_bert, "-o", bank, "--kind", "AC"],
        ["train", d, "--bank", bank, "-m", tiny_bert, "-o", ckpt, "--max-steps", "2", "-b", "4"],
        ["eval-sts", "-m", ckpt, "-d", inputs["data"], "--tasks", "STS-B", "--split", "dev", "-o", out / "sts.json"],
        ["encode", "-m", ckpt, "-i", inputs["texts"], "-o", out / "vectors.npy"],
        ["inspect", bank, "--plot", out / "space.png"],
    ]
    script = " && ".join([f"umask {mask:03o}", *(shlex.join(warm_command([*DEFSENT, *cmd])) for cmd in commands)])
    done = run_bounded(["sh", "-c", script], DEADLINE, capture_output=True, env={**ENV, **warm_defsent()["env"]})
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]

    written = sorted(out.rglob("*"))
    names = {path.relative_to(out).as_posix() for path in written}
    expected = {"dict.jsonl", "bank.h5", "ckpt", "ckpt/model.safetensors", "ckpt/defsent.json", "ckpt/README.md"}
    expected |= {"ckpt/1_Pooling", "ckpt/1_Pooling/config.json", "sts.json", "vectors.npy", "space.png"}
    assert expected <= names, f"missing: {sorted(expected - names)}"
    assert not [name for name in names if name.rsplit("/", 1)[-1].startswith(".")], "a temporary file was left"
    wrong = {}
    for path in written:
        want = (0o777 if path.is_dir() else 0o666) & ~mask
        have = stat.S_IMODE(path.lstat().st_mode)
        if have != want:
            wrong[path.relative_to(out).as_posix()] = f"{have:03o} (want {want:03o})"
    assert not wrong, f"umask {mask:03o}: {wrong}"
