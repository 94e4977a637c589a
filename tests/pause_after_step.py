"""Run the defsent command line, holding the run still once ``PAUSE_AFTER_STEP`` training steps are done.

The fault injection of the interrupt tests, kept out of the package: before training step
``PAUSE_AFTER_STEP + 1`` starts (every earlier step logged and, when due, saved) the process writes the
file ``PAUSE_MARKER`` and then sleeps until a signal ends it, so a test sends SIGINT at a known point and
the run cannot finish first, however fast the machine: ``python tests/pause_after_step.py train ...``.
"""

import os
import signal
import sys
import time
from pathlib import Path

from defsent_cli.training import loop

PAUSE_AFTER = int(os.environ["PAUSE_AFTER_STEP"])
MARKER = Path(os.environ["PAUSE_MARKER"])
_train_step = loop.Loop.train_step


def train_step(self, index):
    if self.step == PAUSE_AFTER:
        partial = MARKER.with_name(MARKER.name + ".tmp")
        partial.write_text(f"{self.step}\n")
        os.replace(partial, MARKER)  # whole or absent: the test reads it
        while True:  # until SIGINT (KeyboardInterrupt) or another signal ends the process
            time.sleep(0.05)
    return _train_step(self, index)


loop.Loop.train_step = train_step
# A shell without job control starts background jobs with SIGINT ignored, and Python keeps an inherited
# "ignore": a suite launched that way (`... &` in a script or a CI runner) would wait out the deadline here.
# The tests are about defsent's answer to Ctrl-C, so the run gets Python's own handler whatever launched it.
signal.signal(signal.SIGINT, signal.default_int_handler)

if __name__ == "__main__":
    from defsent_cli.cli import run

    sys.argv[0] = "defsent"
    run()
