"""The suite's own scheduling (tests/conftest.py): under pytest-xdist each test marked ``long`` starts first, on
a worker of its own, instead of all of them queueing on the first worker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import run_bounded

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

# a suite in miniature: the long tests last in the file, as test_examples.py's are in the collection
TESTS = """
import os
from pathlib import Path

import pytest


def record(name):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with (Path(os.environ["SCHEDULE_LOG"]) / f"{worker}.txt").open("a") as log:
        log.write(name + "\\n")


@pytest.mark.parametrize("i", range(40))
def test_short(i):
    record(f"short-{i}")


@pytest.mark.long
def test_long_a():
    record("long-a")


@pytest.mark.long
def test_long_b():
    record("long-b")
"""

# the hooks under test, taken from the real conftest (runpy: tests/ is not a package)
HOOKS = f"""
import runpy

_conftest = runpy.run_path({str(CONFTEST)!r})
pytest_configure = _conftest["pytest_configure"]
pytest_collection_modifyitems = _conftest["pytest_collection_modifyitems"]
"""


def test_each_long_test_starts_first_on_a_worker_of_its_own(tmp_path):
    """With 42 tests on 2 workers xdist's ``--dist load`` hands each worker a first chunk of 5 consecutive tests
    unless told otherwise: both long tests would queue on gw0. Here each worker's first test is a long one."""
    pytest.importorskip("xdist")
    suite, log = tmp_path / "suite", tmp_path / "log"
    suite.mkdir()
    log.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    long: a long test\n")
    (suite / "conftest.py").write_text(HOOKS)
    (suite / "test_mini.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | {"SCHEDULE_LOG": str(log)}
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "load", "-p", "no:cacheprovider", "."]
    done = run_bounded(command, 300, cwd=suite, env=env, capture_output=True, text=True)  # ~7 s on 2 cores
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = {path.stem: path.read_text().split() for path in log.iterdir()}
    assert sorted(runs) == ["gw0", "gw1"]
    assert sorted(name for names in runs.values() for name in names) == sorted(
        ["long-a", "long-b"] + [f"short-{i}" for i in range(40)]
    )
    assert sorted(names[0] for names in runs.values()) == ["long-a", "long-b"], runs
