"""The server's limits and batching, one settings struct (as infinity-emb and TEI keep theirs): what
``defsent serve``'s options default to, what the engine and the app enforce. Imports nothing heavy, so ``--help``
reads its numbers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one request may ask: bytes per body, texts per request, characters per text, hits per query; and the
    batching. ``defsent serve``'s options of the same names (``--max-wait-ms`` in milliseconds) default to these."""

    max_body_bytes: int = 8 * 1024 * 1024
    max_inputs: int = 256
    max_chars: int = 8192
    max_k: int = 100
    max_batch: int = 64
    max_wait: float = 0.002
    max_queue: int = 256


DEFAULTS = Limits()
