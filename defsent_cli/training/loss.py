"""Softmax cross-entropies of sentence vectors: against a frozen entry bank (:func:`bank_cross_entropy`,
DefSent+), and against the other sentences of the batch (:func:`info_nce`, SimCSE and Noise Matching).

DefSent+ (``TrainEncoder.py``): logits = representation . bank^T over ALL entries,
no bias, no temperature, the bank frozen; cross-entropy on the entry's row.

:func:`bank_cross_entropy` computes ``F.cross_entropy(reps @ bank.T, labels)`` (same
value and gradient up to float rounding) in one streaming pass over the bank, never
holding the (batch x entries) logits: with 147k entries autograd through
``F.cross_entropy`` keeps the logits, the log-softmax and its gradient (three 18 MB
matrices per batch of 32) and reads the bank twice.

A bank stored narrower than the representations (``--bank-dtype float16``) is
upcast one chunk at a time, so the math stays float32 and the only extra memory is
one float32 chunk.

Label smoothing (``--label-smoothing``) is ``F.cross_entropy``'s: the target puts 1 - eps on the entry
and eps spread evenly over all entries, so loss = (1 - eps) * CE + eps * mean_j(-log p_j)
= logsumexp - (1 - eps) * l_label - eps * r . mean(bank): the bank's mean row is all it needs.
"""

from __future__ import annotations

import torch


def _chunks(bank: torch.Tensor, dtype: torch.dtype, chunk: int):
    """(start, rows as ``dtype``), ``chunk`` rows at a time."""
    for start in range(0, bank.shape[0], chunk):
        yield start, bank[start : start + chunk].to(dtype)


def softmax_stats(reps: torch.Tensor, bank: torch.Tensor, chunk: int):
    """One streaming pass over the bank's rows (an online softmax): for each representation r, the largest
    logit m = max_j r . b_j, Z = Σ_j exp(r . b_j - m) and S = Σ_j exp(r . b_j - m) b_j.

    For each chunk of rows B_c, while it is in cache: l = r B_c^T, then the running max, Z and S are rescaled
    to the new max and accumulated (the flash-attention recurrence); only one (batch x chunk) block of logits
    exists at a time. An empty bank gives m = -inf, Z = 0, S = 0.
    """
    n = reps.shape[0]
    m = torch.full((n,), float("-inf"), dtype=reps.dtype, device=reps.device)
    z = torch.zeros((n,), dtype=reps.dtype, device=reps.device)
    s = torch.zeros_like(reps)
    for _, rows in _chunks(bank, reps.dtype, chunk):
        logits = reps @ rows.T
        m_new = torch.maximum(m, logits.amax(dim=1))
        scale = torch.exp(m - m_new)
        weights = logits.sub_(m_new.unsqueeze(1)).exp_()
        z = z * scale + weights.sum(dim=1)
        s = s * scale.unsqueeze(1) + weights @ rows
        m = m_new
    return m, z, s


class _BankCrossEntropy(torch.autograd.Function):
    """One pass over the bank computes the loss and its gradient (:func:`softmax_stats`).

    At the end logsumexp = m + log Z and d loss / d r = (S / Z - b_label) / batch.  The bank (226 MB for
    147k x 384 float32) is read from memory once per step instead of twice.
    """

    @staticmethod
    def forward(
        ctx, reps: torch.Tensor, bank: torch.Tensor, labels: torch.Tensor, chunk: int, smoothing: float, mean_row
    ) -> torch.Tensor:
        n = reps.shape[0]
        m, z, s = softmax_stats(reps, bank, chunk)
        gold = bank[labels].to(reps.dtype)
        if smoothing:
            gold = (1 - smoothing) * gold + smoothing * mean_row.to(reps.dtype)
        target = (reps * gold).sum(dim=1)
        lse = m + torch.log(z)
        ctx.save_for_backward((s / z.unsqueeze(1) - gold) / n)
        return (lse - target).mean()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (grad_reps,) = ctx.saved_tensors
        return grad_reps * grad_out, None, None, None, None, None


#: On a GPU the bank goes through in chunks whose (batch x chunk) float32 logits block stays under this many
#: bytes: for a batch of 32 or 256 against 147k entries that is the whole bank in one pass (two matrix
#: products instead of 72 chunks of small kernels, whose launches would dominate the step).
GPU_LOGITS_BYTES = 512 << 20


def default_chunk(reps: torch.Tensor) -> int:
    """Bank rows per chunk: 2048 on the CPU (both products of a chunk in cache), as many as
    :data:`GPU_LOGITS_BYTES` allows on a GPU."""
    if reps.device.type != "cuda":
        return 2048
    return max(2048, GPU_LOGITS_BYTES // (4 * max(1, reps.shape[0])))


def bank_cross_entropy(
    reps: torch.Tensor,
    bank: torch.Tensor,
    labels: torch.Tensor,
    chunk: int | None = None,
    label_smoothing: float = 0.0,
    mean_row: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean cross-entropy of ``reps @ bank.T`` against ``labels``; the bank gets no gradient.

    The bank is processed ``chunk`` rows at a time (default :func:`default_chunk`); a bank of another dtype
    (float16 storage) is upcast chunk by chunk. ``label_smoothing`` as ``F.cross_entropy``'s; ``mean_row``
    (the bank's mean row, computed once by the caller) saves a pass over the bank. Always float32: under
    mixed precision (autocast) the representations are upcast and the logits and log-sum-exp leave autocast.
    """
    if reps.dim() != 2 or bank.dim() != 2 or reps.shape[1] != bank.shape[1]:
        raise ValueError(f"shapes do not match: reps {tuple(reps.shape)}, bank {tuple(bank.shape)}")
    if label_smoothing and mean_row is None:
        mean_row = bank.float().mean(dim=0)
    chunk = chunk or default_chunk(reps)
    with torch.autocast(reps.device.type, enabled=False):
        return _BankCrossEntropy.apply(reps.float(), bank.detach(), labels, chunk, float(label_smoothing), mean_row)


def info_nce(
    queries: torch.Tensor, keys: torch.Tensor, scale: float = 20.0, sizes: list[int] | None = None
) -> torch.Tensor:
    """InfoNCE with in-batch negatives (SimCSE's loss): the mean over the queries of
    ``-log softmax_j(scale · cos(q_i, k_j))[i]``, key i being query i's positive and every other key of the
    global batch a negative.

    The loss is sentence-transformers' ``MultipleNegativesRankingLoss`` (scale 20 = 1 / SimCSE's temperature
    0.05; ``compute_loss_from_embeddings``, used as is). Under torchrun the keys of every process are gathered
    first (``distributed.all_gather_batch``: this process's own first, so key i is still query i's positive;
    with their gradients when they carry any), as SimCSE's code does on several GPUs, so each query sees the
    negatives of the whole global batch; ``sizes``: every process's share of it (``distributed.shard_sizes``),
    None in one process. A stop-gradient is the caller's: pass detached queries or keys.
    At least float32: under mixed precision the cosines and the log-sum-exp leave autocast.
    """
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from .. import distributed

    if queries.dim() != 2 or queries.shape != keys.shape:
        raise ValueError(f"shapes do not match: queries {tuple(queries.shape)}, keys {tuple(keys.shape)}")
    # bf16 / fp16 under autocast: the cosines in float32 (float64 stays float64)
    queries, keys = (t.float() if t.element_size() < 4 else t for t in (queries, keys))
    with torch.autocast(queries.device.type, enabled=False):
        gathered = keys if sizes is None else distributed.all_gather_batch(keys, sizes)
        loss = MultipleNegativesRankingLoss(None, scale=scale)
        return loss.compute_loss_from_embeddings([queries, gathered], None)
