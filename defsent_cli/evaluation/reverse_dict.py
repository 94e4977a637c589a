"""Reverse dictionary: definition in, ranked entries out (DefSent's def2word task).

A query is represented as in training, ``head(pool(encoder(query)))``, and scored
against every bank row by dot product (the training logits).  ``evaluate`` reports
MRR and top-1/3/10 accuracy over the definitions of one dictionary split, as
DefSent's word-prediction table does (mean over definitions).

Over the vocabulary (a checkpoint trained with ``--objective defsent``, or any model with
``--word-head``): the candidates are every token of the model's vocabulary, the "bank" is the
word head's matrix (``encoder/word_head.py``: its logits are exactly the head's), and a
definition's gold is its entry's token; entries of several tokens are skipped, as DefSent does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .. import distributed
from ..console import make_progress
from ..dictionary.build import word_targets
from ..encoder.encode import encode_ids, encode_ids_sharded
from ..encoder.head import PoolerHead, head_from_info
from ..encoder.models import LoadedModel, load_model
from ..encoder.pooling import Pooling, get_pooling
from ..encoder.tokenize import tokenize
from ..encoder.word_head import WordHead, WordTransform, load_word_head, read_word_head
from ..errors import DefsentError
from ..formats.bank import Bank, BankFile, check_bank_matches, open_bank
from ..formats.dictionary import seeded_sample, split_definitions
from .bank_search import gold_ranks

TOP_K = (1, 3, 10)


@dataclass
class QueryEncoder:
    """A model, its training pooling and head: turns definitions into bank-space vectors."""

    loaded: LoadedModel
    pooling: Pooling
    head: PoolerHead | WordTransform
    dim: int | None = None  # the head's output width when it is not the model's (a word head with its bias column)

    def encode(
        self, texts: Sequence[str], batch_size: int = 32, progress=None, task=None, shard: bool = False
    ) -> np.ndarray:
        """The vectors of ``texts``; ``shard`` (under torchrun): the processes share the batches and every
        process gets all the vectors."""
        pool, head = self.pooling, self.head
        # the pooling's own settings (layers, Ditto head, token weights) decide what the forward pass returns
        with_head = replace(pool, name=f"{pool.name}+head", fn=lambda batch: head(pool(batch)))
        ids = tokenize(texts, self.loaded.tokenizer, pool, self.loaded.max_length)
        if shard and distributed.active():
            vectors = encode_ids_sharded(self.loaded, ids, with_head, batch_size, progress, task, dim=self.dim)
            return distributed.broadcast_object(vectors)
        return encode_ids(self.loaded, ids, with_head, batch_size, progress, task, dim=self.dim)


def query_encoder(loaded: LoadedModel, bank: Bank | BankFile, pooling: str | None = None) -> QueryEncoder:
    """How a model reads definitions against a bank: a trained defsent checkpoint with its training pooling
    and head (the training logits); a merged checkpoint with its own pooling and no head; any other model
    with no head and the pooling of the bank's kind (AC -> cls, AMP -> mean). ``pooling`` overrides."""
    kind = loaded.info.get("kind", "train") if loaded.source == "defsent" else None
    if kind == "train" and not trained_word_objective(loaded):
        name = pooling or loaded.info.get("train_pooling", "cls")
        head = head_from_info(loaded.model, loaded.info)
    else:
        own = loaded.info.get("pooling") if kind else None
        name = pooling or own or str(bank.attrs.get("pooling", "mean"))
        head = PoolerHead(None, "identity")
    if bank.dim != loaded.dim:
        raise DefsentError(
            f"the bank has {bank.dim} dims but the model {loaded.path} has {loaded.dim}; "
            "embed the entries with this model (or one of its size)",
            path=bank.source,
        )
    return QueryEncoder(loaded, get_pooling(name), head.to(loaded.device))


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


def rank_metrics(ranks: np.ndarray) -> dict:
    """MRR and top-k accuracy (fractions in [0, 1], as DefSent's table) of 1-based ranks."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if ranks.size == 0:
        raise DefsentError("no definitions to evaluate")
    out = {"n": int(ranks.size), "mrr": float(np.mean(1.0 / ranks))}
    # DefSent's get_mrr (experiments/src/evaluation/def2word.py) counts only hits in the top 10: MRR@10
    out["mrr10"] = float(np.mean(np.where(ranks <= 10, 1.0 / ranks, 0.0)))
    for k in TOP_K:
        out[f"top{k}"] = float(np.mean(ranks <= k))
    out["median_rank"] = float(np.median(ranks))
    return out


def evaluate(
    dictionary: str | Path,
    encoder: QueryEncoder,
    bank: Bank | BankFile,
    split: str = "test",
    batch_size: int = 32,
    limit: int | None = None,
    show_progress: bool | None = None,
    seed: int = 42,
    sharded: bool = False,
) -> dict:
    """MRR and top-1/3/10 over the definitions of ``split`` (the bank must match the dictionary);
    ``limit``: a seeded random sample of that many definitions (as ``train --limit``).
    A vocabulary bank (:func:`vocabulary_bank`): the single-token entries' definitions, gold = their token.
    The bank's rows are scored a chunk at a time (``bank_search.gold_ranks``): a :class:`BankFile` is never
    held whole. ``sharded`` (under torchrun, every process calling this): the processes share the encoding and
    each scores its share of the bank's rows; every process gets the metrics."""
    skipped = None
    if bank.kind == "vocabulary":
        found = word_targets(Path(dictionary), split, encoder.loaded.tokenizer)
        texts, rows, skipped = found.texts, found.token_ids, found.skipped
    else:
        texts, rows, _ = split_definitions(Path(dictionary), bank.splits, split)
    gold = np.asarray(rows, dtype=np.int64)
    keep = seeded_sample(len(texts), limit, seed)
    if keep is not None:
        texts, gold = [texts[i] for i in keep], gold[keep]
    with make_progress("defs", show_progress if distributed.is_main() else False) as progress:
        task = progress.add_task(f"reverse dictionary ({split})", total=len(texts))
        queries = encoder.encode(texts, batch_size, progress, task, shard=sharded)
    metrics = rank_metrics(gold_ranks(queries, bank, gold, sharded))
    metrics.update({"split": split, "bank_entries": len(bank), "limit": limit, "seed": seed if limit else None})
    if skipped is not None:
        metrics["candidates"] = "vocabulary"
        metrics["multi_token_entries_skipped"] = skipped
    return metrics


def load_bank_for(dictionary: str | Path | None, bank_path: str | Path) -> BankFile:
    """Open a bank (its rows stay on disk until scored) and, when a dictionary is named, check the bank was
    built from it."""
    bank = open_bank(bank_path)
    if dictionary is not None:
        check_bank_matches(bank, dictionary)
    return bank


def check_recorded_bank(bank: str | Path, sha256: str | None, model: str | Path) -> bool:
    """Whether the bank a checkpoint records (``defsent.json``'s ``bank``, found at ``bank``) is still the one it
    was trained against: its SHA-256 against the recorded ``bank_sha256``. A warning says when it changed (its rows
    may no longer be the entries the model learned to reach); a checkpoint recording no hash is taken as it is."""
    from ..formats.results import file_sha256
    from ..log import warn

    if not sha256 or file_sha256(bank) == sha256:
        return True
    warn(
        f"{bank} changed since {model} was trained against it (its SHA-256 differs from the one defsent.json "
        "records): the scores may not be those of the training's bank; --bank chooses one"
    )
    return False
