"""What the server computes, without HTTP: the embeddings of ``defsent encode`` (same pooling, same normalisation,
same vectors) with each text's token count, and the search of a served index and bank (:mod:`.search`), each
behind its own dynamic batcher (:mod:`.batcher`) on one encoding thread."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..encoder.tokenize import tokenize
from .batcher import Batcher
from .metrics import Metrics
from .search import Collection


@dataclass
class Limits:
    """What one request may ask: texts per request, characters per text, hits per query; and the batching."""

    max_inputs: int = 256
    max_chars: int = 8192
    max_k: int = 100
    max_batch: int = 64
    max_wait: float = 0.002
    max_queue: int = 256


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
        self.token_limit = self.loaded.token_limit(encoder.max_length)
        self.batchers: dict[str, Batcher] = {}
        self.in_flight = 0

    @property
    def dim(self) -> int:
        return int(self.loaded.dim)

    def tokens(self, texts: list[str]) -> list[int]:
        """Tokens the model reads for each text (special tokens included, after truncation)."""
        return [len(ids) for ids in tokenize(texts, self.loaded.tokenizer, self.encoder.pooling, self.token_limit)]

    def _embed(self, texts: list[str]) -> list[tuple[np.ndarray, int]]:
        vectors = self.encoder(texts)
        counts = self.tokens(texts)
        self.metrics.count_texts(len(texts), sum(counts))
        return list(zip(vectors, counts, strict=True))

    def _queries(self, collection: Collection):
        def run(texts: list[str]) -> list[np.ndarray]:
            vectors = collection.vectors(texts)
            self.metrics.count_texts(len(texts), 0)
            return list(vectors)

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
                fn, self.executor, limits.max_batch, limits.max_wait, limits.max_queue, self.metrics.observe_batch
            )
            batcher.start()
            self.batchers[name] = batcher
        self.metrics.gauge("defsent_queue_depth", "Requests waiting to be batched.", self.queue_depth)
        self.metrics.gauge("defsent_requests_in_flight", "Requests being answered.", lambda: self.in_flight)

    def queue_depth(self) -> int:
        return sum(b.depth for b in self.batchers.values())

    async def stop(self) -> None:
        for batcher in self.batchers.values():
            await batcher.stop()
        self.executor.shutdown(wait=True)

    async def search(self, which: str, queries: list[str], k: int, wait):
        """Each query's hits in the served ``which`` (lookup: the bank; search: the index); ``wait(future)`` awaits
        the batcher's answer (the server's: it gives up when the client leaves)."""
        import asyncio

        collection = self.bank if which == "lookup" else self.index
        vectors = await wait(self.batchers[which].submit(queries))
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, collection.search_vectors, np.stack(vectors), k)
