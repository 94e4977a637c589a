"""A pytest plugin for bench/gpu_runs/suite.sh: each failed test's report is appended to ``$OUT/failures.log`` the
moment it comes in, so a suite cut off by the lent machine's time limit still names its failures (pytest's own
summary and JUnit report are written only at the end). Under pytest-xdist only the controller writes."""

from __future__ import annotations

import os
from pathlib import Path

KEEP = 6000  # characters of each report's end: the assertion and the lines above it


def pytest_runtest_logreport(report) -> None:
    if not report.failed or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    path = Path(os.environ.get("OUT", "/tmp/suite-out")) / "failures.log"
    with path.open("a") as log:
        log.write(f"==== {report.nodeid} ({report.when}, {report.duration:.1f} s)\n{report.longreprtext[-KEEP:]}\n")
