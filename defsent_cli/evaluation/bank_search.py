"""Queries scored against every row of a bank without holding the bank: each query's top-k rows (``lookup``) and
the rank of its gold row (``eval-dict``, ``train --eval-on dict-dev``).

The rows are streamed a chunk at a time (``iter_rows``) from a bank in memory (:class:`~defsent_cli.formats.bank.Bank`)
or on disk (:class:`~defsent_cli.formats.bank.BankFile`: one chunk of rows in memory at a time) and, with
``sharded`` under torchrun, each process scores only its contiguous share of the rows
(``distributed.shard_range``, the rows ``train --shard-bank`` holds) and the processes' results are merged:

- the top k of all rows is the top k of the per-chunk and per-process top k, merged on rank 0;
- the rank of the gold row is 1 + the number of rows that score higher, counted chunk by chunk and process by
  process and summed (ties do not count). The gold's own float32 score, the threshold, is known only once the
  chunk holding it is scored, so every chunk is first compared with a float64 estimate t0 = q . b_gold (from
  the gold rows, read at once): a score farther from t0 than the float32 rounding bound of the gold's dot
  product (2 d 2^-24 |q| |b_gold|) is certainly above or below the gold's score; the few scores within it
  (near-ties, and rows identical to the gold's, such as entries with the same definitions) are kept and
  compared with the gold's own score at the end. The ranks are those of one (queries x bank) score matrix,
  whatever the chunks and the number of processes.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import distributed

#: Bank rows and queries per scored block: a (512 x 8192) float32 block of scores, 16 MiB.
SCORE_ROWS = 8192
QUERY_ROWS = 512


def _row_range(bank, sharded: bool) -> tuple[int, int]:
    return distributed.shard_range(len(bank)) if sharded else (0, len(bank))


def _float32(array) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))


def top_k(queries: np.ndarray, bank, k: int = 10, sharded: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """(indices, scores) of the ``k`` best bank rows for each query, best first. ``sharded`` (under torchrun):
    this process scores its share of the rows and rank 0 gets the merged result, the other ranks None."""
    n, k = len(queries), min(k, len(bank))
    q = _float32(queries)
    best = torch.full((n, 0), float("-inf")), torch.zeros((n, 0), dtype=torch.int64)
    for first, rows in bank.iter_rows(SCORE_ROWS, *_row_range(bank, sharded)):
        rows = _float32(rows)
        top = min(k, len(rows))
        merged = []
        for start in range(0, n, QUERY_ROWS):
            part = slice(start, start + QUERY_ROWS)
            scores, index = (q[part] @ rows.T).topk(top, dim=1)
            merged.append(_merge(best[0][part], best[1][part], scores, index + first, k))
        if merged:
            best = torch.cat([m[0] for m in merged]), torch.cat([m[1] for m in merged])
    if sharded and distributed.active():
        parts = distributed.gather_object((best[0].numpy(), best[1].numpy()))
        if parts is None:
            return None
        scores, index = (torch.from_numpy(np.concatenate(p, axis=1)) for p in zip(*parts, strict=True))
        best = _merge(scores[:, :0], index[:, :0], scores, index, k)
    return best[1].numpy(), best[0].numpy()


def _merge(scores_a, index_a, scores_b, index_b, k: int):
    scores, where = torch.cat([scores_a, scores_b], dim=1).topk(min(k, scores_a.shape[1] + scores_b.shape[1]), dim=1)
    return scores, torch.cat([index_a, index_b], dim=1).gather(1, where)


def gold_ranks(queries: np.ndarray, bank, gold: np.ndarray, sharded: bool = False) -> np.ndarray:
    """1-based rank of each query's gold row among all bank rows (a row scoring the same does not count
    against it). ``sharded`` (under torchrun): this process scores its share of the rows, and every process
    gets the ranks over all of them."""
    n, dim = queries.shape
    q, gold = _float32(queries), torch.from_numpy(np.asarray(gold, dtype=np.int64))
    low, high = _row_range(bank, sharded)
    together = sharded and distributed.active()
    here = ((gold >= low) & (gold < high)).numpy()
    gold_rows = torch.zeros((n, dim), dtype=torch.float64)
    gold_rows[here] = torch.from_numpy(np.asarray(bank.rows_at(gold.numpy()[here]), dtype=np.float64))
    estimate = torch.stack([(q.double() * gold_rows).sum(dim=1), gold_rows.norm(dim=1)])
    if together:
        distributed.all_reduce_cpu(estimate)  # each gold row is on one process
    t0, gold_norm = estimate
    bound = 2 * (2 * dim * 2.0**-24) * q.double().norm(dim=1) * gold_norm + 1e-300  # twice float32's bound
    exact = torch.zeros(n, dtype=torch.float64)
    greater = torch.zeros(n, dtype=torch.int64)
    close_query, close_score = [], []
    for first, rows in bank.iter_rows(SCORE_ROWS, low, high):
        rows = _float32(rows)
        for start in range(0, n, QUERY_ROWS):
            stop = min(start + QUERY_ROWS, n)
            scores = q[start:stop] @ rows.T
            column = gold[start:stop] - first
            own = ((column >= 0) & (column < len(rows))).nonzero().squeeze(1)
            exact[start + own] = scores[own, column[own]].double()
            diff = scores.double() - t0[start:stop, None]
            margin = bound[start:stop, None]
            greater[start:stop] += (diff > margin).sum(dim=1)
            close = diff.abs() <= margin
            close[own, column[own]] = False  # the gold row itself
            i, j = close.nonzero(as_tuple=True)
            close_query.append(i + start)
            close_score.append(scores[i, j].double())
    if together:
        distributed.all_reduce_cpu(exact)
    if close_query:
        which, score = torch.cat(close_query), torch.cat(close_score)
        greater += torch.bincount(which[score > exact[which]], minlength=n)
    if together:
        distributed.all_reduce_cpu(greater)
    return (1 + greater).numpy()
