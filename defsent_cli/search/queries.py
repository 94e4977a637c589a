"""Query encoding: how a model reads queries against a bank, as training scored them.

A query is represented as in training, ``head(pool(encoder(query)))`` (:func:`query_encoder`: a trained defsent
checkpoint's pooling and head; else no head and the pooling of the bank's kind), and scored against a bank's rows
by dot product (the training logits), or cosine where a collection asks (``collections.py``). Over the vocabulary
(:func:`word_query_encoder`), the "bank" is a word head's matrix (``encoder/word_head.py``). ``lookup``,
``eval-dict``, ``search``, the server and ``train --eval-on dict-dev`` all encode their queries here; ``dims``
(``--dims``) cuts both sides to their leading dimensions (``space/dims.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .. import distributed
from ..encoder.encode import encode_ids, encode_ids_sharded
from ..encoder.head import PoolerHead, head_from_info
from ..encoder.models import LoadedModel, load_model
from ..encoder.pooling import Pooling, get_pooling
from ..encoder.tokenize import tokenize
from ..encoder.word_head import WordHead, WordTransform, load_word_head, read_word_head
from ..errors import DefsentError
from ..formats.bank import Bank, BankFile
from ..space.dims import another_width, collection_dims, cut_rows, leading


@dataclass
class QueryEncoder:
    """A model, its training pooling and head: turns definitions into bank-space vectors."""

    loaded: LoadedModel
    pooling: Pooling
    head: PoolerHead | WordTransform
    dim: int | None = None  # the head's output width when it is not the model's (a word head with its bias column)
    cut: int | None = None  # the leading dims kept (``--dims``), the bank's rows cut the same way (:meth:`rows`)

    def rows(self, bank):
        """The bank's rows as the queries are scored against them: cut to :attr:`cut` where it is set."""
        return cut_rows(bank, self.cut)

    def encode(
        self, texts: Sequence[str], batch_size: int = 32, progress=None, task=None, shard: bool = False
    ) -> np.ndarray:
        """The vectors of ``texts`` (their leading :attr:`cut` dims where it is set: dot products, so none is
        re-normalised); ``shard`` (under torchrun): the processes share the batches and every process gets all the
        vectors."""
        pool, head = self.pooling, self.head
        # the pooling's own settings (layers, Ditto head, token weights) decide what the forward pass returns
        with_head = replace(pool, name=f"{pool.name}+head", fn=lambda batch: head(pool(batch)))
        ids = tokenize(texts, self.loaded.tokenizer, pool, self.loaded.max_length)
        if shard and distributed.active():
            vectors = encode_ids_sharded(self.loaded, ids, with_head, batch_size, progress, task, dim=self.dim)
            vectors = distributed.broadcast_object(vectors)
        else:
            vectors = encode_ids(self.loaded, ids, with_head, batch_size, progress, task, dim=self.dim)
        return leading(vectors, self.cut, False)


def query_encoder(
    loaded: LoadedModel, bank: Bank | BankFile, pooling: str | None = None, dims: int | None = None
) -> QueryEncoder:
    """How a model reads definitions against a bank: a trained defsent checkpoint with its training pooling
    and head (the training logits); a merged checkpoint with its own pooling and no head; any other model
    with no head and the pooling of the bank's kind (AC -> cls, AMP -> mean). ``pooling`` overrides. The queries
    are cut to the width of a bank built with ``--dims``; ``dims`` (``--dims``): both sides cut to it
    (:meth:`QueryEncoder.rows`), the same scores as a bank built with ``--dims`` (its rows are raw means)."""
    kind = loaded.info.get("kind", "train") if loaded.source == "defsent" else None
    if kind == "train" and not trained_word_objective(loaded):
        name = pooling or loaded.info.get("train_pooling", "cls")
        head = head_from_info(loaded.model, loaded.info)
    else:
        own = loaded.info.get("pooling") if kind else None
        name = pooling or own or str(bank.attrs.get("pooling", "mean"))
        head = PoolerHead(None, "identity")
    if another_width(bank.dim, loaded.dim, bank.attrs.get("dims")):
        raise DefsentError(
            f"the bank has {bank.dim} dims but the model {loaded.path} has {loaded.dim}; "
            "embed the entries with this model (or one of its size)",
            path=bank.source,
        )
    cut = collection_dims(dims, bank.dim, loaded.dim, bank.source, "bank", loaded.path)
    return QueryEncoder(loaded, get_pooling(name), head.to(loaded.device), cut=cut)


def trained_word_objective(loaded: LoadedModel) -> bool:
    """True for a checkpoint trained with ``--objective defsent`` (it carries its word head)."""
    return loaded.source == "defsent" and loaded.info.get("objective") == "defsent"


def vocabulary_bank(loaded: LoadedModel, head: WordHead) -> Bank:
    """Every token of the vocabulary as a candidate; its row is the word head's (``[E | b]`` or ``E``)."""
    tokenizer = loaded.tokenizer
    tokens = tokenizer.convert_ids_to_tokens(list(range(head.matrix.shape[0])))
    entries = [tokenizer.convert_tokens_to_string([t]).strip() if t is not None else "" for t in tokens]
    vectors = head.matrix.detach().cpu().float().numpy()
    attrs = {"kind": "vocabulary", "word_head": head.kind, "splits": "train,dev,test"}
    return Bank(entries, vectors, np.ones(len(entries), dtype=np.int64), attrs, source=loaded.path)


def word_query_encoder(
    loaded: LoadedModel, word_head: str | None = None, pooling: str | None = None
) -> tuple[QueryEncoder, Bank]:
    """(query encoder, vocabulary bank) of a model ranking the vocabulary: a ``--objective defsent`` checkpoint
    with its stored word head and training pooling, or any model with ``word_head`` (mlm | embeddings; pooling
    default: a defsent checkpoint's own, else cls, DefSent's choice for BERT-base)."""
    if trained_word_objective(loaded) and word_head is None:
        head = read_word_head(loaded.path, loaded.model)
        name = pooling or loaded.info.get("train_pooling", "cls")
    else:
        head = load_word_head(loaded, word_head or "mlm")
        own = loaded.info.get("train_pooling") or loaded.info.get("pooling") if loaded.source == "defsent" else None
        name = pooling or own or "cls"
    head = head.to(loaded.device)
    encoder = QueryEncoder(loaded, get_pooling(name), head.transform, dim=int(head.matrix.shape[1]))
    return encoder, vocabulary_bank(loaded, head)


def load_query_encoder(
    model: str | Path, bank: Bank | BankFile, pooling: str | None = None, device: str = "auto"
) -> QueryEncoder:
    """:func:`query_encoder` of the model folder ``model``."""
    return query_encoder(load_model(model, device), bank, pooling)
