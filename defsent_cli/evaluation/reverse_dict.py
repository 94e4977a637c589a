"""Reverse dictionary: definition in, ranked entries out (DefSent's def2word task).

A query is represented as in training, ``head(pool(encoder(query)))``, and scored
against every bank row by dot product (the training logits).  ``evaluate`` reports
MRR and top-1/3/10 accuracy over the definitions of one dictionary split, as
DefSent's word-prediction table does (mean over definitions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..console import make_progress
from ..encoder.encode import encode_ids
from ..encoder.head import PoolerHead, head_from_info
from ..encoder.models import LoadedModel, load_model
from ..encoder.pooling import Pooling, get_pooling
from ..encoder.tokenize import tokenize
from ..errors import DefsentError
from ..formats.bank import Bank, check_bank_matches, read_bank
from ..formats.dictionary import split_definitions

TOP_K = (1, 3, 10)


@dataclass
class QueryEncoder:
    """A model, its training pooling and head: turns definitions into bank-space vectors."""

    loaded: LoadedModel
    pooling: Pooling
    head: PoolerHead

    def encode(self, texts: Sequence[str], batch_size: int = 32, progress=None, task=None) -> np.ndarray:
        pool, head = self.pooling, self.head
        with_head = Pooling(f"{pool.name}+head", lambda batch: head(pool(batch)))
        ids = tokenize(texts, self.loaded.tokenizer, pool, self.loaded.max_length)
        return encode_ids(self.loaded, ids, with_head, batch_size, progress, task)


def query_encoder(loaded: LoadedModel, bank: Bank, pooling: str | None = None) -> QueryEncoder:
    """How a model reads definitions against a bank: a trained defsent checkpoint with its training pooling
    and head (the training logits); a merged checkpoint with its own pooling and no head; any other model
    with no head and the pooling of the bank's kind (AC -> cls, AMP -> mean). ``pooling`` overrides."""
    kind = loaded.info.get("kind", "train") if loaded.source == "defsent" else None
    if kind == "train":
        name = pooling or loaded.info.get("train_pooling", "cls")
        head = head_from_info(loaded.model, loaded.info)
    else:
        own = loaded.info.get("pooling") if kind else None
        name = pooling or own or str(bank.attrs.get("pooling", "mean"))
        head = PoolerHead(None, "identity")
    if bank.vectors.shape[1] != loaded.dim:
        raise DefsentError(
            f"the bank has {bank.vectors.shape[1]} dims but the model {loaded.path} has {loaded.dim}; "
            "embed the entries with this model (or one of its size)",
            path=bank.source,
        )
    return QueryEncoder(loaded, get_pooling(name), head.to(loaded.device))


def load_query_encoder(model: str | Path, bank: Bank, pooling: str | None = None, device: str = "auto") -> QueryEncoder:
    """:func:`query_encoder` of the model folder ``model``."""
    return query_encoder(load_model(model, device), bank, pooling)


def top_k(queries: np.ndarray, bank: Bank, k: int = 10, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(indices, scores) of the ``k`` best bank rows for each query, best first."""
    vectors = torch.from_numpy(bank.vectors)
    k = min(k, len(bank))
    all_idx, all_scores = [], []
    for start in range(0, len(queries), chunk):
        scores = torch.from_numpy(queries[start : start + chunk]) @ vectors.T
        best = scores.topk(k, dim=1)
        all_idx.append(best.indices.numpy())
        all_scores.append(best.values.numpy())
    if not all_idx:
        return np.zeros((0, k), dtype=np.int64), np.zeros((0, k), dtype=np.float32)
    return np.concatenate(all_idx), np.concatenate(all_scores)


def gold_ranks(queries: np.ndarray, bank: Bank, gold: np.ndarray, chunk: int = 256) -> np.ndarray:
    """1-based rank of each query's gold row among all bank rows (ties count against it)."""
    vectors = torch.from_numpy(bank.vectors)
    ranks = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), chunk):
        scores = torch.from_numpy(queries[start : start + chunk]) @ vectors.T
        rows = torch.from_numpy(gold[start : start + chunk])
        target = scores.gather(1, rows.unsqueeze(1))
        ranks[start : start + chunk] = 1 + (scores > target).sum(dim=1).numpy()
    return ranks


def rank_metrics(ranks: np.ndarray) -> dict:
    """MRR and top-k accuracy (fractions in [0, 1], as DefSent's table) of 1-based ranks."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if ranks.size == 0:
        raise DefsentError("no definitions to evaluate")
    out = {"n": int(ranks.size), "mrr": float(np.mean(1.0 / ranks))}
    for k in TOP_K:
        out[f"top{k}"] = float(np.mean(ranks <= k))
    out["median_rank"] = float(np.median(ranks))
    return out


def evaluate(
    dictionary: str | Path,
    encoder: QueryEncoder,
    bank: Bank,
    split: str = "test",
    batch_size: int = 32,
    limit: int | None = None,
    show_progress: bool | None = None,
    seed: int = 42,
) -> dict:
    """MRR and top-1/3/10 over the definitions of ``split`` (the bank must match the dictionary);
    ``limit``: a seeded random sample of that many definitions (as ``train --limit``)."""
    texts, rows, _ = split_definitions(Path(dictionary), bank.splits, split)
    gold = np.asarray(rows, dtype=np.int64)
    if limit and limit < len(texts):
        keep = np.sort(np.random.default_rng(seed).permutation(len(texts))[:limit])
        texts, gold = [texts[i] for i in keep], gold[keep]
    with make_progress("defs", show_progress) as progress:
        task = progress.add_task(f"reverse dictionary ({split})", total=len(texts))
        queries = encoder.encode(texts, batch_size, progress, task)
    metrics = rank_metrics(gold_ranks(queries, bank, gold))
    metrics.update({"split": split, "bank_entries": len(bank), "limit": limit, "seed": seed if limit else None})
    return metrics


def load_bank_for(dictionary: str | Path | None, bank_path: str | Path) -> Bank:
    """Read a bank and, when a dictionary is named, check the bank was built from it."""
    bank = read_bank(bank_path)
    if dictionary is not None:
        check_bank_matches(bank, dictionary)
    return bank
