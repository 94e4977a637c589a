"""The one channel for what the library has to say: the ``defsent`` logger.

Library code never prints. It calls :func:`warn` for something the user should act on (an
untrained pooler, a noisy fit, a selection made on test data) and :func:`note` for what it is
doing (resuming from step N). The command line renders both on stderr (``cli/boundary.py``);
a program using the library gets them through :mod:`logging` like any other library's
messages (warnings reach stderr through Python's last-resort handler even when logging is
not configured; notes are dropped unless a handler asks for INFO).
"""

from __future__ import annotations

import logging

logger = logging.getLogger("defsent")


def warn(message: str) -> None:
    """Something the user should know and may want to act on."""
    logger.warning(message)


def note(message: str) -> None:
    """What is being done (progress in words, not a problem)."""
    logger.info(message)
