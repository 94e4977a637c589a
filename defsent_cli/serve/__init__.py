"""Putting a model to work: text indexes and their search (:mod:`.search`), and the HTTP server of ``defsent serve``
(:mod:`.app`: the OpenAI-compatible embeddings API, search, the reverse dictionary and its page), with its dynamic
batcher (:mod:`.batcher`) and Prometheus metrics (:mod:`.metrics`).

Library code: it never prints; notes and warnings go through the ``defsent`` logger. FastAPI and uvicorn (the
``serve`` extra) are imported only by :mod:`.app`.
"""
