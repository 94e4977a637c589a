"""A pytest plugin for bench/gpu_runs/suite.sh: what the suite did is written to ``$OUT`` as it happens, so a suite
cut off by the lent machine's time limit still says what failed and what never ran (pytest's own summary and JUnit
report are written only at the end):

- ``failures.log``: each failed test's report, the moment it comes in;
- ``done.log``: one line per finished test, ``<outcome> <seconds> <node id>``;
- ``collected.txt``: every collected node id (written by one process), so ``collected`` minus ``done`` is what the
  time limit left unrun.

Under pytest-xdist the reports are written by the controller, the collection by the first worker."""

from __future__ import annotations

import os
from pathlib import Path

KEEP = 6000  # characters of each report's end: the assertion and the lines above it


def _out(name: str) -> Path:
    out = Path(os.environ.get("OUT", "/tmp/suite-out"))
    out.mkdir(parents=True, exist_ok=True)
    return out / name


def pytest_collection_finish(session) -> None:
    # the xdist controller never gets here (it collects nothing); of the workers, gw0 writes
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0":
        _out("collected.txt").write_text("".join(f"{item.nodeid}\n" for item in session.items))


def pytest_runtest_logreport(report) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.failed:
        with _out("failures.log").open("a") as log:
            log.write(f"==== {report.nodeid} ({report.when}, {report.duration:.1f} s)\n{report.longreprtext[-KEEP:]}\n")
    # a test is finished at its call, or at its setup when that did not pass (skipped, or an error)
    if report.when == "call" or (report.when == "setup" and not report.passed):
        with _out("done.log").open("a") as log:
            log.write(f"{report.outcome} {report.duration:.1f} {report.nodeid}\n")
