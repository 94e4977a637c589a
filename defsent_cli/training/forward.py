"""What trains in one forward pass, and the auxiliary masked-LM loss that rides on it (issue 57).

:class:`TrainForward` is the model, its pooling and a head as one module: what DDP wraps under torchrun, so that
one call runs everything the step's gradients flow through. :func:`forward` is the one place an objective's
batch goes through it: with the run's auxiliary MLM (``--mlm-weight λ``, Reiml 2023: a sentence objective + λ ·
MLM; ``mlm.py``) a masked copy of the sentences goes through the encoder in the same call (DDP sees one forward),
and the weighted MLM term comes back beside the representations. DefSent+/DefSent (``definitions.py``) and
SimCSE/NM (``contrastive.py``) both take it from here.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from ..encoder.encode import model_mask
from ..encoder.head import PoolerHead
from ..encoder.pooling import PoolingInput
from ..encoder.tokenize import has_padding, pad_batch, to_device
from ..encoder.tokenize import pad_id as padding_id

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
    ):
        """The head's output; with ``masked_ids`` also the token states of a second pass on them (--mlm-weight).

        ``padded``: whether the batch has padding, known on the host (no mask at all when it has none);
        ``masked_mask``: the masked pass's attention mask when its sentences are not the batch's (simcse nm)."""
        mask = model_mask(self.model, attention_mask, padded)
        with torch.no_grad() if head_only else nullcontext():  # head warm-up: the encoder is a fixed feature map
            states = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
            pooled = self.pool(PoolingInput(states, attention_mask, input_ids))
        reps = self.head(pooled)
        if masked_ids is None:
            return reps
        if masked_mask is not None:
            mask = model_mask(self.model, masked_mask, True)
        return reps, self.model(input_ids=masked_ids, attention_mask=mask).last_hidden_state


def batch(run, ids: list[list[int]]) -> Batch:
    """Token id lists padded on the host (:data:`Batch`)."""
    input_ids, attention_mask = pad_batch(ids, padding_id(run.loaded.tokenizer))
    return input_ids, attention_mask, has_padding(attention_mask)


def forward(run, on: Batch, mlm_on: Batch | None = None, head_only: bool = False):
    """(the head's representations of ``on``, λ · the MLM loss or None) through ``run.net``.

    With the run's MLM (``run.mlm``, from ``--mlm-weight``) and ``mlm_on`` (a batch: ``on`` itself, or the
    sentences the MLM should see when ``on`` holds others), a masked copy of ``mlm_on`` goes through the encoder
    in the same call and its loss against the frozen word head is added here, the one place every objective's
    MLM term is computed. ``head_only``: the encoder runs without gradient (a head warm-up)."""
    input_ids, attention_mask, padded = on
    device, mlm = run.device, run.mlm if mlm_on is not None else None
    masked_ids = targets = masked_mask = None
    if mlm is not None:  # the mask is drawn (torch's RNG) before the pass, as it always was
        masked_ids, labels = mlm.mask(mlm_on[0], mlm_on[1])
        masked_ids, targets = to_device(masked_ids, device), mlm.targets(labels, device)
        masked_mask = None if mlm_on is on else to_device(mlm_on[1], device)
    out = run.net(
        to_device(input_ids, device),
        to_device(attention_mask, device),
        head_only=head_only,
        masked_ids=masked_ids,
        padded=padded,
        masked_mask=masked_mask,
    )
    if mlm is None:
        return out, None
    reps, states = out
    return reps, run.config.mlm_weight * mlm.loss(states, targets)
