"""bench/scale.py --quick: the scale benchmark's smoke run (a 2,000-entry dictionary, its bank, training in 1 and
2 gloo processes with the bank sharded) ends and reports what it measured."""

from __future__ import annotations

import json
import sys

from conftest import REPO, TORCHRUN_ENV, run_bounded


def test_scale_benchmark_quick_mode(tmp_path):
    out = tmp_path / "scale"
    run = run_bounded(
        [sys.executable, REPO / "bench" / "scale.py", "--quick", "--out", out],
        300,
        env=TORCHRUN_ENV,
        capture_output=True,
    )
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert [b["entries"] for b in results["banks"]] == [2000] and results["banks"][0]["peak_mib"][0] > 0
    rows = [(r["entries"], r["processes"], r["sharded"], len(r["peak_mib"])) for r in results["training"]]
    assert rows == [(2000, 1, False, 1), (2000, 2, True, 2)]
    assert all(r["step_seconds"] >= 0 and min(r["peak_mib"]) > 0 for r in results["training"])
    info = json.loads((out / "t-2k-2" / "ckpt" / "defsent.json").read_text())
    assert info["bank_sharded"] is True and info["processes"] == 2 and info["steps"] == 3
    table = (out / "table.md").read_text()
    assert table == run.stdout.decode() and "| 2,000 | 2 | sharded |" in table
