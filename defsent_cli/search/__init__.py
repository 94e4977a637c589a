"""Search: text indexes and their search, and the reverse dictionary's queries, below the server and the commands.

Building an index (:mod:`.index_build`, ``defsent index``), its HNSW graph (:mod:`.ann`: FAISS, ``index --ann``),
what is searched, an index or an entry bank with the encoder of its queries (:mod:`.collections`: ``defsent
search``, the server's ``/v1/search`` and ``/v1/lookup``), how a model encodes queries against a bank
(:mod:`.queries`: ``lookup``, ``eval-dict``, dev evaluation), and exact search, every row scored a chunk at a time
(:mod:`.exact`: top k, the gold's rank).

Library code: it never prints, and imports neither the server (``serve/``) nor the command line (``cli/``).
"""
