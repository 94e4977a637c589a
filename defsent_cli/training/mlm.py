"""The auxiliary masked-LM loss of ``train --mlm-weight λ`` (Reiml 2023: MLM + a sentence objective, λ = 0.1).

A second forward pass of the same definitions, 15% of their tokens masked (BERT's scheme: of the chosen
tokens 80% become the mask token, 10% a random token, 10% stay; transformers'
``DataCollatorForLanguageModeling.torch_mask_tokens``, never special tokens or padding), predicts the
original tokens through the frozen word head (``encoder/word_head.py``: the model's own pretrained MLM
head, or ``--word-head embeddings``, ``h . E^T`` with the frozen input embeddings). The head is frozen, as
in DefSent's word prediction, so the MLM loss moves only the encoder, which is all a checkpoint keeps.
The total loss is ``objective + λ · MLM``.
"""

from __future__ import annotations

import torch

from ..encoder.tokenize import to_device
from ..encoder.word_head import WordHead
from ..errors import DefsentError
from .loss import bank_cross_entropy


class MaskedLM:
    """Masks a batch and scores the masked pass's token states against the word head."""

    def __init__(self, tokenizer, head: WordHead, probability: float = 0.15):
        from transformers import DataCollatorForLanguageModeling

        if tokenizer.mask_token_id is None:
            raise DefsentError("--mlm-weight needs a tokenizer with a mask token, and this model's has none")
        self.collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=probability)
        self.special = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        self.head = head

    def mask(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(masked input ids, labels: the original id where masked, -100 elsewhere); draws on torch's RNG."""
        protected = torch.isin(input_ids, self.special) | (attention_mask == 0)
        masked, labels = self.collator.torch_mask_tokens(input_ids.clone(), special_tokens_mask=protected)
        return masked, labels

    def targets(self, labels: torch.Tensor, device) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(flat positions, original ids) of the masked tokens on ``device``, found in the host's labels (on a
        GPU, a boolean mask there would make the host wait for it); None when nothing was masked."""
        flat = labels.flatten()
        positions = (flat != -100).nonzero().squeeze(1)
        if len(positions) == 0:
            return None
        return to_device(positions, device), to_device(flat[positions], device)

    def loss(self, states: torch.Tensor, targets: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        """Mean cross-entropy over the masked positions (:meth:`targets`; 0 when the batch has none)."""
        if targets is None:
            return states.sum() * 0.0
        positions, ids = targets
        chosen = states.flatten(0, 1).index_select(0, positions)
        return bank_cross_entropy(self.head.transform(chosen), self.head.matrix, ids)
