"""Run the defsent command line, SIGKILLing the process right after training step ``KILL_AFTER_STEP``.

The fault injection of the resume tests (a real kill: no cleanup runs), kept out of the package:
``python tests/kill_after_step.py train ...`` or ``torchrun ... tests/kill_after_step.py train ...``.
"""

import os
import signal
import sys

from defsent_cli.training import loop

KILL_AFTER = int(os.environ["KILL_AFTER_STEP"])
_train_step = loop.Loop.train_step


def train_step(self, index):
    loss = _train_step(self, index)
    if self.step + 1 == KILL_AFTER:
        os.kill(os.getpid(), signal.SIGKILL)
    return loss


loop.Loop.train_step = train_step

if __name__ == "__main__":
    from defsent_cli.cli import run

    sys.argv[0] = "defsent"
    run()
