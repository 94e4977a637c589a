"""Reverse dictionary: definition in, ranked entries out (DefSent's def2word task).

A query is represented as in training, ``head(pool(encoder(query)))`` (``search/queries.py``), and scored
against every bank row by dot product (the training logits).  ``evaluate`` reports
MRR and top-1/3/10 accuracy over the definitions of one dictionary split, as
DefSent's word-prediction table does (mean over definitions).

Over the vocabulary (a checkpoint trained with ``--objective defsent``, or any model with
``--word-head``): the candidates are every token of the model's vocabulary, the "bank" is the
word head's matrix (``encoder/word_head.py``: its logits are exactly the head's), and a
definition's gold is its entry's token; entries of several tokens are skipped, as DefSent does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import distributed
from ..console import make_progress
from ..dictionary.build import word_targets
from ..errors import DefsentError
from ..formats.bank import Bank, BankFile, check_bank_matches, open_bank
from ..formats.dictionary import seeded_sample, split_definitions
from ..search.exact import gold_ranks
from ..search.queries import QueryEncoder

TOP_K = (1, 3, 10)


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
    A vocabulary bank (``search/queries.vocabulary_bank``): the single-token entries' definitions, gold = their token.
    The bank's rows are scored a chunk at a time (``search/exact.gold_ranks``): a :class:`BankFile` is never
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
