"""Dynamic batching: requests that arrive together are encoded together.

Each request's texts wait in a bounded queue; one worker takes the waiting requests, in order of arrival, until
``max_batch`` texts are taken, or as many requests wait as the last batch held, or ``max_wait`` seconds have
passed since the first of them arrived, and runs them as one call of ``fn`` on the encoding thread (one thread:
the model runs one batch at a time, and ``encode``'s own worker threads share the cores inside it). A request
larger than ``max_batch`` runs alone. The last batch's requests are the clients likely to come back together: a
lone client's request (the last batch held one) runs at once instead of waiting ``max_wait`` for company that is
not coming, while eight clients' requests wait (at most ``max_wait``) for each other; until the first batch has
run, the whole window is waited. A full queue is
refused at once (:class:`QueueFull`: the server answers 503 with Retry-After); a request whose client left
(its future cancelled) is dropped before it is encoded.

One request never fails another: when a batch of several requests fails, each of its requests is run again on
its own, so only the one whose texts fail gets the error (the server checks every text before it queues it, so
this is the rare case: a failure no check foresaw). When the server's drain time is up, the requests still
waiting are answered :class:`Stopping` (:meth:`Batcher.cut`).
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field


class QueueFull(Exception):
    """The batcher's queue holds ``max_queue`` requests already."""


class Stopping(Exception):
    """The server is stopping and this request was not encoded in the time it had."""


@dataclass
class _Job:
    texts: list[str]
    future: asyncio.Future
    arrived: float = field(default_factory=time.perf_counter)


class Batcher:
    """``await batcher.submit(texts)`` -> ``fn(texts)``'s result for these texts (a sequence, one item per text),
    computed in one call with the texts of the requests that arrived with them."""

    def __init__(
        self,
        fn: Callable[[list[str]], Sequence],
        executor: Executor,
        *,
        max_batch: int,
        max_wait: float,
        max_queue: int,
        on_batch: Callable[[int, int], None] | None = None,
    ):
        self.fn, self.executor = fn, executor
        self.max_batch, self.max_wait, self.max_queue = max_batch, max_wait, max_queue
        self.on_batch = on_batch  # (texts, requests) of each batch run, for the metrics
        self.pending: collections.deque[_Job] = collections.deque()
        self.expected: int | None = None  # requests the last batch held: how many to wait for (None: the window)
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    @property
    def depth(self) -> int:
        """Requests waiting (not yet taken into a batch; a request whose client left does not count)."""
        return sum(not job.future.done() for job in self.pending)

    def start(self) -> None:
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="defsent-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self.cut()

    def cut(self) -> int:
        """Answer every waiting request :class:`Stopping`; returns how many there were."""
        cut = 0
        for job in self.pending:
            if not job.future.done():
                job.future.set_exception(Stopping())
                cut += 1
        self.pending.clear()
        return cut

    def submit(self, texts: Sequence[str]) -> asyncio.Future:
        """Queue ``texts``; the future resolves to their results. Raises :class:`QueueFull` when the queue is full."""
        if len(self.pending) >= self.max_queue:
            self.pending = collections.deque(job for job in self.pending if not job.future.done())  # clients gone
        if len(self.pending) >= self.max_queue:
            raise QueueFull
        future = asyncio.get_running_loop().create_future()
        self.pending.append(_Job(list(texts), future))
        self._wake.set()
        return future

    def _enough(self) -> bool:
        """As many requests wait (their clients still there) as the last batch held."""
        return self.expected is not None and self.depth >= self.expected

    def _take(self) -> list[_Job]:
        taken, size = [], 0
        while self.pending:
            job = self.pending[0]
            if job.future.done():  # cancelled: its client left
                self.pending.popleft()
                continue
            if taken and size + len(job.texts) > self.max_batch:
                break
            taken.append(self.pending.popleft())
            size += len(job.texts)
        return taken

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.pending:
                first = self.pending[0].arrived
                while sum(len(j.texts) for j in self.pending) < self.max_batch and not self._enough():
                    remaining = first + self.max_wait - time.perf_counter()
                    if remaining <= 0:
                        break
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), remaining)
                    except (asyncio.TimeoutError, TimeoutError):
                        break
                jobs = self._take()
                if not jobs:
                    continue
                self.expected = len(jobs)
                texts = [t for job in jobs for t in job.texts]
                if self.on_batch is not None:
                    self.on_batch(len(texts), len(jobs))
                try:
                    results = await loop.run_in_executor(self.executor, self.fn, texts)
                except Exception as exc:  # noqa: BLE001 - handed to the request whose texts failed, alone
                    if len(jobs) == 1:
                        _settle(jobs[0], exception=exc)
                    else:
                        await self._apart(jobs)
                    continue
                start = 0
                for job in jobs:
                    _settle(job, results[start : start + len(job.texts)])
                    start += len(job.texts)

    async def _apart(self, jobs: list[_Job]) -> None:
        """A failed batch's requests run again one by one: only the guilty one fails."""
        loop = asyncio.get_running_loop()
        for job in jobs:
            if job.future.done():
                continue
            try:
                _settle(job, await loop.run_in_executor(self.executor, self.fn, job.texts))
            except Exception as exc:  # noqa: BLE001 - this request's own failure
                _settle(job, exception=exc)


def _settle(job: _Job, result=None, exception: BaseException | None = None) -> None:
    """The request's answer, unless its client left (its future cancelled) or it was cut."""
    if job.future.done():
        return
    if exception is not None:
        job.future.set_exception(exception)
    else:
        job.future.set_result(result)
