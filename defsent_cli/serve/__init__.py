"""Putting a model to work over HTTP: the server of ``defsent serve`` (:mod:`.app`: the OpenAI-compatible embeddings
API, search, the reverse dictionary and its page), with its dynamic batcher (:mod:`.batcher`), its limits
(:mod:`.limits`), Prometheus metrics (:mod:`.metrics`) and the draining uvicorn server (:mod:`.server`). What it
searches, and how, is ``defsent_cli.search``'s.

Library code: it never prints; notes and warnings go through the ``defsent`` logger. FastAPI (the ``serve`` extra)
is imported only by :mod:`.app`, uvicorn only by :mod:`.server`.
"""
