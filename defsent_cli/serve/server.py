"""The HTTP server around the app: uvicorn, with a drain that loses no request.

On SIGTERM (or Ctrl-C) uvicorn alone stops listening, closes every idle keep-alive connection at once and waits
for the requests in flight. A keep-alive client that writes its next request just then finds its connection
closed and gets no answer. :class:`DrainingServer` drains first, for up to ``drain_seconds`` (``Limits``):

1. it stops accepting new connections, and from then on every response says ``Connection: close``
   (``Engine.draining``, read by the app's middleware), so each open connection ends after its next answer
   instead of under a request;
2. it waits until no request has been in flight for ``linger`` seconds (the time a client takes to send the next
   request on a connection it still believes open), or until ``drain_seconds`` have passed;
3. at the deadline the requests still waiting in a batcher are answered 503 ``shutting_down`` (``Engine.cut``),
   and uvicorn's own shutdown follows: the batch being encoded finishes, idle connections close.

A second signal stops at once, as uvicorn does.
"""

from __future__ import annotations

import logging
import signal
import time

import uvicorn

from .engine import Engine

logger = logging.getLogger("defsent")
#: seconds with no request in flight before the drain ends: longer than a client's pause between two requests
LINGER = 0.5
#: seconds uvicorn gives the batch being encoded after the drain's deadline
LAST_BATCH = 10.0


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, engine: Engine, linger: float = LINGER):
        config.timeout_graceful_shutdown = LAST_BATCH
        super().__init__(config)
        self.engine, self.drain_seconds, self.linger = engine, engine.limits.drain_seconds, linger
        self.drain_asked = False
        self.drain_started: float | None = None
        self.idle_since: float | None = None

    def handle_exit(self, sig: int, frame) -> None:
        """The signal handler: the first signal asks for the drain (begun on the next tick, inside the loop), a
        second one stops as uvicorn stops."""
        if self.drain_asked:
            if sig == signal.SIGINT:
                self.force_exit = True
            super().handle_exit(sig, frame)
            return
        self._captured_signals.append(sig)  # re-raised when the server has stopped: exit as interrupted
        self.drain_asked = True

    async def on_tick(self, counter: int) -> bool:
        if self.drain_asked and not self.should_exit:
            self._drain()
        return await super().on_tick(counter)

    def _drain(self) -> None:
        now = time.monotonic()
        if self.drain_started is None:
            self.drain_started = now
            self.engine.draining = True
            for server in self.servers:
                server.close()  # no new connections
        if self.engine.in_flight:
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = now
        if self.idle_since is not None and now - self.idle_since >= self.linger:
            self.should_exit = True
        elif now - self.drain_started >= self.drain_seconds:
            cut = self.engine.cut()
            if cut:
                logger.warning(f"the drain's {self.drain_seconds:g} s are up: {cut} waiting request(s) answered 503")
            self.should_exit = True
