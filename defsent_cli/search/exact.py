"""Exact search: queries scored against every row of a bank or an index without holding it, each query's top-k
rows (``lookup``, ``search``, the server) and the rank of its gold row (``eval-dict``, ``train --eval-on
dict-dev``).

The rows are streamed a chunk at a time (``iter_rows``) from a bank in memory (:class:`~defsent_cli.formats.bank.Bank`)
or on disk (:class:`~defsent_cli.formats.bank.BankFile`: one chunk of rows in memory at a time) and, with
``sharded`` under torchrun, each process scores only its contiguous share of the rows
(``distributed.shard_range``, the rows ``train --shard-bank`` holds) and the processes' results are merged:

- the top k of all rows is the top k of the per-chunk and per-process top k, merged on rank 0;
- the rank of the gold row is 1 + the number of rows that score higher, counted chunk by chunk and process by
  process and summed. A float32 matrix product rounds differently for blocks of different shapes (by ~1e-7),
  so ranks taken from float32 scores would depend on the chunks and the number of processes wherever two
  scores nearly tie, as entries with the same vector (the same definitions) do exactly. So each score is
  compared with the gold's score t = q . b_gold computed in float64 (from the gold rows, read at once; the
  products of float32 values are exact in float64): a float32 score farther from t than twice its rounding
  bound (2 d 2^-24 |q| |b|) is certainly above or below it, and the few within it are computed in float64 the
  way t is, so equal rows tie exactly. The ranks are the same whatever the chunks and the number of processes.
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


def _dot64(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise dot products in float64 (the products of float32 values are exact there): the same value for
    the same two rows, wherever they come from."""
    return (a.double() * b.double()).sum(dim=1)


def gold_ranks(queries: np.ndarray, bank, gold: np.ndarray, sharded: bool = False) -> np.ndarray:
    """1-based rank of each query's gold row among all bank rows: 1 + the rows scoring higher than the gold
    (a row scoring the same, such as an entry with the same vector, does not count against it). ``sharded``
    (under torchrun): this process scores its share of the rows, and every process gets the ranks over all."""
    n, dim = queries.shape
    q, gold = _float32(queries), torch.from_numpy(np.asarray(gold, dtype=np.int64))
    low, high = _row_range(bank, sharded)
    together = sharded and distributed.active()
    here = ((gold >= low) & (gold < high)).numpy()
    target = torch.zeros(n, dtype=torch.float64)
    target[here] = _dot64(q[here], torch.from_numpy(np.asarray(bank.rows_at(gold.numpy()[here]), dtype=np.float32)))
    if together:
        distributed.all_reduce_cpu(target)  # each gold row is on one process
    q_norm = q.double().norm(dim=1)
    greater = torch.zeros(n, dtype=torch.int64)
    for _, rows in bank.iter_rows(SCORE_ROWS, low, high):
        rows = _float32(rows)
        rounding = (2 * 2 * dim * 2.0**-24) * rows.double().norm(dim=1)  # twice float32's bound, over |q|
        for start in range(0, n, QUERY_ROWS):
            stop = min(start + QUERY_ROWS, n)
            diff = (q[start:stop] @ rows.T).double() - target[start:stop, None]
            margin = q_norm[start:stop, None] * rounding[None, :]
            greater[start:stop] += (diff > margin).sum(dim=1)
            i, j = (diff.abs() <= margin).nonzero(as_tuple=True)  # too close to call in float32
            higher = _dot64(q[start + i], rows[j]) > target[start + i]
            greater[start:stop] += torch.bincount(i[higher], minlength=stop - start)
    if together:
        distributed.all_reduce_cpu(greater)
    return (1 + greater).numpy()
