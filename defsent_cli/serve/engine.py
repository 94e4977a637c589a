"""What the server computes, without HTTP: the embeddings of ``defsent encode`` (same pooling, same normalisation,
same vectors) with each text's token count, and the search of a served index and bank (:mod:`.search`), each
behind its own dynamic batcher (:mod:`.batcher`) on one encoding thread; the encoded queries are searched on a
thread of their own, so the next batch is encoded meanwhile.

Each request's texts are tokenised first, once, on a thread of their own with a tokenizer of their own
(:meth:`Engine.measure`: the ids the model reads and whether each text fits the model's window), so a text the model
cannot read whole is refused before it joins a batch (:class:`TooLong`) unless its request asked for truncation;
the embeddings batcher then takes the ids, not the texts, and the token counts of ``usage`` are their lengths: the
encoding thread tokenises nothing."""

from __future__ import annotations

import copy
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..encoder.tokenize import tokenize
from ..search.collections import Collection
from .batcher import Batcher, QueueFull, Stopping
from .limits import Limits
from .metrics import Metrics


class TooLong(Exception):
    """A text longer than the model's window, in a request that did not ask for truncation."""

    def __init__(self, number: int, tokens: int, limit: int):
        super().__init__(
            f"[{number}] is longer than this model reads ({tokens if tokens <= limit else f'over {limit}'} tokens; "
            f'the model\'s window is {limit}): shorten it, or send "truncate": true to have it cut'
        )
        self.number, self.tokens, self.limit = number, tokens, limit


class Engine:
    """The model's encoder (``encode``'s vectors) and the served collections, each with a batcher."""

    def __init__(
        self,
        encoder,
        model_name: str,
        limits: Limits,
        bank: Collection | None = None,
        index: Collection | None = None,
        metrics: Metrics | None = None,
    ):
        self.encoder, self.loaded = encoder, encoder.loaded
        self.model_name, self.limits = model_name, limits
        self.bank, self.index = bank, index
        self.metrics = metrics or Metrics()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="defsent-serve")
        # requests are measured on a thread of their own, with a tokenizer of their own (a fast tokenizer used
        # from two threads at once refuses: "Already borrowed")
        self.measuring = ThreadPoolExecutor(1, thread_name_prefix="defsent-measure")
        # the encoded queries are searched (the graph or every row, then the hits' ids and texts read from the
        # file) on a thread of their own, one search at a time: the encoding thread goes on to the next batch
        self.searching = ThreadPoolExecutor(1, thread_name_prefix="defsent-search")
        self.searches = 0  # handed to the search thread and not finished: at most limits.max_queue
        self.cutting = False  # the drain's time is up: a search not yet started is answered Stopping
        self.tokenizer = copy.deepcopy(self.loaded.tokenizer)
        self.token_limit = self.loaded.token_limit(encoder.max_length)
        self.batchers: dict[str, Batcher] = {}
        self.created = int(time.time())  # the served model's "created", as OpenAI lists models
        self.draining = False  # set when the server stops taking requests (serve/server.py)

    @property
    def dim(self) -> int:
        return int(self.loaded.dim)

    def measure(self, texts: list[str], truncate: bool = False) -> list[list[int]]:
        """Each text's token ids, as the model reads it (special tokens included): the request is tokenised here,
        once, and the ids go on to the encoder (:meth:`Encoder.encode_ids`) and to ``usage`` (their lengths). A
        text longer than the model's window is :class:`TooLong` unless ``truncate`` (then it is cut to the window
        as ``encode`` cuts it). Runs on the measuring thread."""
        limit, pooling = self.token_limit, self.encoder.pooling
        ids = tokenize(texts, self.tokenizer, pooling, limit + 1)  # limit + 1: over the window or not
        over = [number for number, one in enumerate(ids) if len(one) > limit]
        if over and not truncate:
            raise TooLong(over[0], len(ids[over[0]]), limit)
        if over:  # cut as encode cuts (truncation keeps the closing special token, a template's mask)
            for number, one in zip(
                over, tokenize([texts[n] for n in over], self.tokenizer, pooling, limit), strict=True
            ):
                ids[number] = one
        return ids

    async def measured(self, texts: list[str], truncate: bool = False) -> list[list[int]]:
        """:meth:`measure`, off the event loop."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(self.measuring, self.measure, texts, truncate)

    def _embed(self, id_lists: list[list[int]]) -> np.ndarray:
        vectors = self.encoder.encode_ids(id_lists)
        self.metrics.count_texts(len(id_lists), 0)
        return vectors

    def _queries(self, collection: Collection):
        def run(texts: list[str]) -> np.ndarray:
            vectors = collection.vectors(texts)
            self.metrics.count_texts(len(texts), 0)
            return vectors

        return run

    def start(self) -> None:
        """The batchers (inside the server's event loop)."""
        limits = self.limits
        functions = {"embeddings": self._embed}
        if self.bank is not None:
            functions["lookup"] = self._queries(self.bank)
        if self.index is not None:
            functions["search"] = self._queries(self.index)
        for name, fn in functions.items():
            batcher = Batcher(
                fn,
                self.executor,
                max_batch=limits.max_batch,
                max_wait=limits.max_wait,
                max_queue=limits.max_queue,
                on_batch=self.metrics.observe_batch,
            )
            batcher.start()
            self.batchers[name] = batcher
        self.metrics.gauge("defsent_queue_depth", "Requests waiting to be batched.", self.queue_depth)
        self.metrics.gauge("defsent_requests_in_flight", "Requests being answered.", lambda: self.metrics.in_flight)

    def queue_depth(self) -> int:
        return sum(b.depth for b in self.batchers.values())

    @property
    def in_flight(self) -> int:
        return self.metrics.in_flight

    def cut(self) -> int:
        """The drain's time is up: every request still waiting in a batcher, or for the search thread, is answered
        :class:`~.batcher.Stopping` (the batch being encoded and the search running finish). Returns how many were
        cut (a search waiting counted, the one running too)."""
        self.cutting = True
        return sum(batcher.cut() for batcher in self.batchers.values()) + self.searches

    def _room_to_search(self) -> None:
        """:class:`~.batcher.QueueFull` when ``max_queue`` searches are waiting for the search thread already
        (checked before a search's queries are encoded, and again when it is handed over)."""
        if self.searches >= self.limits.max_queue:
            raise QueueFull

    async def _searched(self, run, *args):
        """``run(*args)`` on the search thread, when there is room (:meth:`_room_to_search`); answered
        :class:`~.batcher.Stopping` when it would start after :meth:`cut`."""
        import asyncio

        self._room_to_search()

        def started():
            if self.cutting:
                raise Stopping
            return run(*args)

        self.searches += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.searching, started)
        finally:
            self.searches -= 1

    async def stop(self) -> None:
        for batcher in self.batchers.values():
            await batcher.stop()
        self.executor.shutdown(wait=True)
        self.measuring.shutdown(wait=True)
        self.searching.shutdown(wait=True)

    async def search(self, which: str, queries: list[str], k: int, wait):
        """Each query's hits in the served ``which`` (lookup: the bank; search: the index); ``wait(future)`` awaits
        the batcher's answer (the server's: it gives up when the client leaves)."""
        collection = self.bank if which == "lookup" else self.index
        self._room_to_search()
        vectors = await wait(self.batchers[which].submit(queries))
        return await self._searched(collection.search_vectors, np.stack(vectors), k)

    async def lookup(self, queries: list, k: int, wait):
        """Each parsed query's results (``search/reverse.py``: filters, patterns, synonyms grouped) over the served
        bank; the texts of those that have one are encoded through the lookup batcher."""
        from ..search.reverse import answer

        self._room_to_search()
        texts = [query.text for query in queries if query.text]
        vectors = iter(await wait(self.batchers["lookup"].submit(texts)) if texts else [])
        chosen = [next(vectors) if query.text else None for query in queries]

        def run() -> list[list[dict]]:
            return [answer(self.bank, query, vector, k) for query, vector in zip(queries, chosen, strict=True)]

        return await self._searched(run)
