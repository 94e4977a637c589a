"""The heads a model can carry, by name: what ``--pooler`` and ``--word-head`` offer.

Kept apart from :mod:`.head` and :mod:`.word_head` (which build the heads, in torch) so that the command
line lists the choices without importing torch. (The poolings and precisions are listed by
:mod:`.pooling` and :mod:`.precision`, which import torch only inside the functions that run it.)
"""

from __future__ import annotations

#: The training head between pooled states and the bank (:mod:`.head`).
POOLER_MODES = ("auto", "keep", "mlm-dense", "none", "linear")
#: DefSent's frozen word-prediction layer (:mod:`.word_head`).
WORD_HEADS = ("mlm", "embeddings")
