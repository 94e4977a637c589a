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

    def loss(self, states: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy over the masked positions (0 when the batch has none)."""
        chosen = labels != -100
        if not bool(chosen.any()):
            return states.sum() * 0.0
        return bank_cross_entropy(self.head.transform(states[chosen]), self.head.matrix, labels[chosen])
