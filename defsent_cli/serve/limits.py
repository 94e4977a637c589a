"""The server's limits, batching and drain, one settings struct (as infinity-emb and TEI keep theirs) with its
constraints as data: what ``defsent serve``'s options are named after and default to (``cli/serve.py`` declares
them from this table), what the engine, the app and the server enforce. Imports nothing heavy, so ``--help`` reads
its numbers."""

from __future__ import annotations

from dataclasses import dataclass

from ..constraints import Constraint, Interval, check_all


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one request may ask (bytes per body, texts per request, characters per text, hits per query), the
    dynamic batching, and the drain on SIGTERM. Checked as it is made (:data:`CONSTRAINTS`)."""

    max_body_bytes: int = 8 * 1024 * 1024
    max_inputs: int = 256
    max_chars: int = 8192
    max_k: int = 100
    max_batch: int = 256
    max_wait_ms: float = 2.0
    max_queue: int = 256
    drain_seconds: float = 30.0

    def __post_init__(self) -> None:
        check_all(self, CONSTRAINTS)

    @property
    def max_wait(self) -> float:
        """``max_wait_ms`` in seconds."""
        return self.max_wait_ms / 1000.0


#: every field's rule, for the library and the command line alike
CONSTRAINTS: dict[str, Constraint] = {
    "max_body_bytes": Interval(1, integer=True),
    "max_inputs": Interval(1, integer=True),
    "max_chars": Interval(1, integer=True),
    "max_k": Interval(1, integer=True),
    "max_batch": Interval(1, integer=True),
    "max_wait_ms": Interval(0.0),
    "max_queue": Interval(1, integer=True),
    "drain_seconds": Interval(0.0, closed="right"),
}

#: what each field means, as ``--help`` says it
HELP = {
    "max_body_bytes": "Bytes per request body at most: a larger one is refused (413) before it is read.",
    "max_inputs": "Texts per request at most (more: 413).",
    "max_chars": "Characters per text at most (more: 400).",
    "max_k": "Hits per query at most (search, lookup).",
    "max_batch": "Texts encoded together at most (dynamic batching).",
    "max_wait_ms": "How long a batch waits, at most, for as many requests as the last batch held.",
    "max_queue": "Requests waiting at most; more are answered 503 (Retry-After).",
    "drain_seconds": "On SIGTERM or Ctrl-C: how long requests in flight may finish.",
}
