"""How long ``defsent`` takes to start: ``--help``, ``COMMAND --help`` for every command, and a shell completion
(bash's TAB after a command name and inside a command's options), each run as a fresh process.

    python bench/startup.py [--repeats 5]

Runs this checkout (``python -m defsent_cli``; completion through the ``defsent`` console script beside the
interpreter, with this checkout first on ``PYTHONPATH``) and prints the best of ``--repeats`` wall times per
call and the time of a bare ``python -c pass`` for reference. Which libraries these calls may import is a
test (tests/test_cli_help.py); how long they take is measured here.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def best_time(argv: list[str], env: dict, repeats: int) -> tuple[float, int]:
    best, code = float("inf"), 0
    for _ in range(repeats):
        started = time.perf_counter()
        code = subprocess.run(argv, env=env, capture_output=True, check=False).returncode
        best = min(best, time.perf_counter() - started)
    return best, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    sys.path.insert(0, str(REPO))
    from defsent_cli.cli.app import app

    cli = [sys.executable, "-m", "defsent_cli"]
    script = str(Path(sys.executable).parent / "defsent")
    calls = [("--help", [*cli, "--help"], {})]
    calls += [(f"{c.name} --help", [*cli, c.name, "--help"], {}) for c in app.registered_commands]
    for words in ("defsent tr", "defsent train --po"):
        complete = {
            "_DEFSENT_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        }
        calls.append((f"completion of '{words}'", [script], complete))
    calls.append(("python -c pass", [sys.executable, "-c", "pass"], {}))
    for name, argv, extra in calls:
        seconds, code = best_time(argv, {**env, **extra}, args.repeats)
        print(f"{seconds:6.3f} s  {name}" + (f"  (exit {code})" if code else ""), flush=True)


if __name__ == "__main__":
    main()
