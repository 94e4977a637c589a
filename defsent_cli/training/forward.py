"""What trains in one forward pass, and the auxiliary losses that ride on it, +MLM and +NM (issue 57).

:class:`TrainForward` is the model, its pooling and a head as one module: what DDP wraps under torchrun, so that
one call runs everything the step's gradients flow through. :func:`forward` is the one place an objective's
batch goes through it, and the one place the auxiliary terms are computed, for any objective that takes them:

- +MLM (``--mlm-weight λ``, Reiml 2023 and SimCSE: a sentence objective + λ · MLM; ``mlm.py``): a masked copy of
  the sentences goes through the encoder in the same call;
- +NM (``--nm-weight λ``, Reiml 2023: Noise Matching; ``noise_matching.py``): a copy of the sentences with words
  deleted goes through the encoder, pooling and head in the same call, and is pulled onto the objective's own
  (detached) vectors of the originals.

DDP sees one forward with gradient per step; the weighted terms come back, summed, beside the representations.
DefSent+/DefSent (``definitions.py``), SimCSE/NM (``contrastive.py``) and the pair bi-encoder (``pairs.py``) take
them from here.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from ..encoder.encode import model_mask
from ..encoder.head import PoolerHead
from ..encoder.pooling import PoolingInput
from ..encoder.tokenize import has_padding, pad_batch, to_device, tokenize
from ..encoder.tokenize import pad_id as padding_id
from .noise_matching import Noised

#: a padded batch on the host: (input ids, attention mask, whether any row is padded)
Batch = tuple[torch.Tensor, torch.Tensor, bool]


class TrainForward(torch.nn.Module):
    """definition -> encoder -> pooling -> head: everything that trains, as one module (what DDP wraps).

    The head's dense layer is the model's own pooler dense, so its parameters
    appear once (``parameters()`` de-duplicates) and DDP averages their gradients too.
    """

    def __init__(self, model: torch.nn.Module, head: PoolerHead, pool):
        super().__init__()
        self.model, self.head, self.pool = model, head, pool

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        head_only: bool = False,
        masked_ids: torch.Tensor | None = None,
        padded: bool = True,
        masked_mask: torch.Tensor | None = None,
        noised: tuple[torch.Tensor, torch.Tensor, bool] | None = None,
    ):
        """The head's output; with ``masked_ids`` (--mlm-weight) or ``noised`` (--nm-weight) the tuple (the head's
        output, the token states of a pass on ``masked_ids`` or None, the head's output of a pass on ``noised``'s
        (input ids, attention mask, whether padded) or None).

        ``padded``: whether the batch has padding, known on the host (no mask at all when it has none);
        ``masked_mask``: the masked pass's attention mask when its sentences are not the batch's (simcse nm)."""
        mask = model_mask(self.model, attention_mask, padded)
        reps = self._represent(input_ids, attention_mask, mask, head_only)
        if masked_ids is None and noised is None:
            return reps
        states = None
        if masked_ids is not None:
            if masked_mask is not None:
                mask = model_mask(self.model, masked_mask, True)
            states = self.model(input_ids=masked_ids, attention_mask=mask).last_hidden_state
        if noised is not None:
            ids, noised_mask, noised_padded = noised
            noised = self._represent(ids, noised_mask, model_mask(self.model, noised_mask, noised_padded), False)
        return reps, states, noised

    def _represent(self, input_ids, attention_mask, mask, head_only: bool) -> torch.Tensor:
        """head(pool(model(input_ids))) (``mask``: the model's form of ``attention_mask``); ``head_only``: the
        encoder without gradient (a head warm-up)."""
        with torch.no_grad() if head_only else nullcontext():  # head warm-up: the encoder is a fixed feature map
            states = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
            pooled = self.pool(PoolingInput(states, attention_mask, input_ids))
        return self.head(pooled)


def batch(run, ids: list[list[int]]) -> Batch:
    """Token id lists padded on the host (:data:`Batch`)."""
    input_ids, attention_mask = pad_batch(ids, padding_id(run.loaded.tokenizer))
    return input_ids, attention_mask, has_padding(attention_mask)


def noised(run, index) -> Noised | None:
    """The sentences of the items ``index`` (``run.data.texts``) for +NM, each drawn by its item (None without
    ``--nm-weight``)."""
    if run.nm is None:
        return None
    return Noised([run.data.texts[i] for i in index], [(int(i),) for i in index])


def forward(run, on: Batch, mlm_on: Batch | None = None, head_only: bool = False, nm_on: Noised | None = None):
    """(the head's representations of ``on``, the auxiliary terms λ · MLM + λ · NM, or None) through ``run.net``.

    With the run's MLM (``run.mlm``, from ``--mlm-weight``) and ``mlm_on`` (a batch: ``on`` itself, or the
    sentences the MLM should see when ``on`` holds others), a masked copy of ``mlm_on`` goes through the encoder
    in the same call and its loss against the frozen word head is added. With the run's NM (``run.nm``, from
    ``--nm-weight``) and ``nm_on`` (the sentences of ``on``'s first rows), their damaged copies go through the
    model, pooling and head in the same call, and NM's InfoNCE pulls them onto those rows' representations,
    detached. ``head_only``: the encoder runs without gradient (a head warm-up), without the auxiliary terms.

    Under ``--matryoshka`` (``run.prefix_cache``, ``matryoshka.py``) the representations come back cut to the
    current prefix's width, the pass made once per step, and the auxiliary terms go to the cache (added once)."""
    cache = run.prefix_cache  # --matryoshka: the widest prefix records the step's passes, the others replay them
    if cache is not None and cache.replaying:
        return cache.replay(), None
    input_ids, attention_mask, padded = on
    device = run.device
    mlm = run.mlm if mlm_on is not None and not head_only else None
    nm = run.nm if nm_on is not None and not head_only else None
    masked_ids = targets = masked_mask = noised = None
    if mlm is not None:  # the mask is drawn (torch's RNG) before the pass, as it always was
        masked_ids, labels = mlm.mask(mlm_on[0], mlm_on[1])
        masked_ids, targets = to_device(masked_ids, device), mlm.targets(labels, device)
        masked_mask = None if mlm_on is on else to_device(mlm_on[1], device)
    if nm is not None:
        damaged = nm.damage(nm_on, run.config.seed, run.step)
        ids, mask, padded_noised = batch(run, tokenize(damaged, run.loaded.tokenizer, run.pool, run.max_length))
        noised = (to_device(ids, device), to_device(mask, device), padded_noised)
    out = run.net(
        to_device(input_ids, device),
        to_device(attention_mask, device),
        head_only=head_only,
        masked_ids=masked_ids,
        padded=padded,
        masked_mask=masked_mask,
        noised=noised,
    )
    if mlm is None and nm is None:
        return (out, None) if cache is None else (cache.record(out, None), None)
    reps, states, noised_reps = out
    terms = []
    if mlm is not None:
        terms.append(run.config.mlm_weight * mlm.loss(states, targets))
    if nm is not None:
        n = len(nm_on.texts)
        sizes = None if run.sizes is None else [size * nm_on.per_item for size in run.sizes]
        terms.append(nm.loss(reps[:n], noised_reps, sizes))
    aux = sum(terms[1:], terms[0])
    return (reps, aux) if cache is None else (cache.record(reps, aux), None)
