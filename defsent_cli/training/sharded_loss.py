"""DefSent+'s softmax over ALL entries with the bank sharded across torchrun's processes (``train --shard-bank``).

Each of the W processes holds a contiguous 1/W of the bank's rows (rows [a_r, b_r), read straight from the
HDF5 file), so the bank costs O(entries / W) memory per process. Each step:

1. the representations of the global batch (B rows, process r holding n_r of them) are all-gathered in the
   batch's order (``distributed.all_gather_batch``: an all-gather that carries gradients), so row i is the same
   item on every process;
2. every process runs the online softmax of all B rows over ITS rows only (``loss.softmax_stats``, one
   (B x chunk) block of logits at a time): per row the max m_r, Z_r = Σ_{j in r} exp(l_j - m_r) and
   S_r = Σ_{j in r} exp(l_j - m_r) b_j;
3. the distributed log-sum-exp, as Megatron-LM's vocab-parallel cross-entropy and Partial FC compute it:
   M = max_r m_r (all-reduce MAX), Z = Σ_r Z_r exp(m_r - M) (all-reduce SUM), and the target logit r . g,
   g = (1 - ε) b_label + ε mean(bank), summed from its parts in the same all-reduce (the label's row from the
   process holding it, ε Σ_{j in r} b_j / N from every process). loss = mean_i (M + log Z - r . g): the same
   value on every process, equal to ``F.cross_entropy(reps @ bank.T, labels, label_smoothing=ε)``.

Gradients: d loss / d r_i = (1/B) (Σ_j p_ij b_j - g_i) = Σ_r G_r,i, process r's part being
G_r,i = (1/B) (exp(m_r - M) S_r,i / Z - g_r,i) with g_r its parts of g. Each process's backward gives its G_r
for the WHOLE gathered batch, and the all-gather's backward (a reduce-scatter) sums the W parts on the process
each row came from: process q ends with d loss / d r_i of its own rows, so its parameter gradient is
Σ_{i in q} (d loss / d r_i)(d r_i / dθ), the share of the one-process gradient d loss / dθ that its rows carry.
DDP averages the W shares, so the loss is scaled by W (``Loop.train_step``), not by W n_r / B as a mean over
a process's own rows is; a process without a row in a batch still sends the others its part of the gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import distributed
from ..formats.bank import BankFile
from .config import SHARD_BANK_BYTES
from .loss import default_chunk, softmax_stats


def wants_sharding(asked: bool | None, rows: int, dim: int, dtype: str) -> bool:
    """Whether this run shards its bank: only under torchrun; ``asked`` (--shard-bank / --no-shard-bank), else
    when the bank takes :data:`SHARD_BANK_BYTES` or more per process."""
    if not distributed.active():
        return False
    if asked is not None:
        return asked
    return rows * dim * np.dtype(dtype).itemsize >= SHARD_BANK_BYTES


class _ShardedBankCrossEntropy(torch.autograd.Function):
    """The loss over the whole bank from this process's rows and two all-reduces; the backward gives this
    process's part of the gradient for every row of the gathered batch (see the module docstring)."""

    @staticmethod
    def forward(ctx, reps, rows, start: int, labels, chunk: int, smoothing: float, row_sum, total: int):
        import torch.distributed as dist

        m, z, s = softmax_stats(reps, rows, chunk)
        peak = m.clone()
        dist.all_reduce(peak, op=dist.ReduceOp.MAX)
        share = torch.exp(m - peak)  # 0 where this process holds no rows (m = -inf)
        # the gold rows this process holds, zero elsewhere: gathered for every label and masked, not indexed by
        # the mask (that would ask the GPU how many labels are here: a host sync per step)
        here = ((labels >= start) & (labels < start + rows.shape[0])).unsqueeze(1)
        if rows.shape[0]:
            local = (labels - start).clamp(0, rows.shape[0] - 1)
            gold = torch.where(here, rows[local].to(reps.dtype), torch.zeros((), dtype=reps.dtype, device=reps.device))
        else:
            gold = torch.zeros_like(reps)
        if smoothing:
            gold = (1 - smoothing) * gold + (smoothing / total) * row_sum.to(reps.dtype)
        sums = torch.stack([z * share, (reps * gold).sum(dim=1)])
        dist.all_reduce(sums)
        z_all, target = sums[0], sums[1]
        ctx.save_for_backward((s * (share / z_all).unsqueeze(1) - gold) / reps.shape[0])
        return (peak + torch.log(z_all) - target).mean()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (grad_reps,) = ctx.saved_tensors
        return grad_reps * grad_out, None, None, None, None, None, None, None


@dataclass
class BankShard:
    """This process's rows of the bank (rows ``start`` .. ``start + len(rows)`` of ``total``) and the loss over
    the whole bank computed from them (:meth:`loss`)."""

    rows: torch.Tensor  # in the storage dtype (--bank-dtype), on the device
    start: int
    total: int
    row_sum: torch.Tensor | None = None  # the sum of these rows (label smoothing's share of the mean row)

    @classmethod
    def read(cls, bank: BankFile, dtype: str, device, cosine: bool = False, smoothing: float = 0.0) -> BankShard:
        """This process's contiguous share of ``bank``'s rows (``distributed.shard_range``), read from the file
        as ``dtype`` (HDF5 converts while reading); ``cosine``: each row L2-normalised, as the whole bank is."""
        start, stop = distributed.shard_range(len(bank))
        rows = torch.from_numpy(bank.rows(start, stop, dtype))
        if cosine:
            rows = torch.nn.functional.normalize(rows, dim=1)
        row_sum = rows.double().sum(dim=0).float().to(device) if smoothing else None
        return cls(rows.to(device, getattr(torch, dtype)), start, len(bank), row_sum)

    def loss(
        self,
        reps: torch.Tensor,
        labels: torch.Tensor,
        sizes: list[int],
        smoothing: float = 0.0,
        chunk: int | None = None,
    ) -> torch.Tensor:
        """The mean cross-entropy over ALL bank entries of the whole global batch (the same on every process).

        ``reps``: this process's rows of the batch (a placeholder row when it has none, see
        ``Loop.train_step``); ``labels``: the bank rows of the whole global batch, in its order;
        ``sizes``: every process's share (``distributed.shard_sizes``). At least float32 (float64 stays
        float64); the bank is upcast ``chunk`` rows at a time (default ``loss.default_chunk``)."""
        reps = reps.float() if reps.element_size() < 4 else reps
        with torch.autocast(reps.device.type, enabled=False):
            gathered = distributed.all_gather_batch(reps, sizes, mine_first=False)
            chunk = chunk or default_chunk(gathered)
            return _ShardedBankCrossEntropy.apply(
                gathered, self.rows, self.start, labels, chunk, float(smoothing), self.row_sum, self.total
            )
