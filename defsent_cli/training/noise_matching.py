"""+NM: Noise Matching (Reiml 2023, section 4.2.3) as an auxiliary loss that any sentence objective takes
(``--nm-weight λ``; issue 57), beside +MLM (``forward.py``, ``mlm.py``).

The term is NM's: each sentence x of the batch loses ``deletion`` of its words (``sentences.delete_words``,
TSDAE's noise), the damaged copy T(x) goes through the encoder with gradient, and InfoNCE at ``temperature``
(``loss.info_nce``) pulls it onto the original's vector, a stop-gradient target (the thesis's sg on h_i: the
model learns that T(x) is like x, not the reverse), the other damaged sentences of the (global) batch its
negatives. λ times it is added to the objective's loss.

What is generic here, and what the objective gives: ``forward.forward`` computes the term for any objective that
passes its batch's sentences (:class:`Noised`): the damaged copies go through the encoder in the SAME call as the
objective's own pass (under torchrun DDP sees one forward with gradient per step), and the target is the
objective's own representation of each original, detached: the vector the objective trains, with no extra pass
(SimCSE's first view; a definition's vector before the bank's logits; both sides of a scored pair). ``defsent
simcse --objective nm`` is NM as the main objective (with its stop-gradient variants), and ``defsent tsdae
--nm-weight`` TSDAE + NM, whose term reads the very vector TSDAE's decoder reads (Table 6.10); both compute
their InfoNCE with :meth:`NoiseMatching.loss`.

Each sentence's deletion is drawn from (seed, step, its item, its side), so the draw does not depend on how
torchrun shares the batch, and a resumed run damages the same sentences the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from ..constraints import Constraint, Interval, check_all
from .config import DELETION, POSITIVE, TEMPERATURE
from .loss import info_nce
from .sentences import delete_words


@dataclass(frozen=True)
class Noised:
    """The sentences of the first ``len(texts)`` rows of a batch that +NM damages, each with its draw's key (its
    item of the data, and its side: a scored pair has two sentences); ``per_item``: rows per item of the batch
    (the gather's sizes under torchrun)."""

    texts: list[str]
    keys: list[tuple[int, ...]]
    per_item: int = 1


@dataclass(frozen=True)
class NoiseMatching:
    """λ · NM's InfoNCE of damaged sentences onto their originals (stop-gradient), its settings and its draws."""

    weight: float
    temperature: float = TEMPERATURE
    deletion: float = DELETION
    constraints: ClassVar[dict[str, Constraint]] = {
        "nm_weight": POSITIVE,
        "nm_temperature": POSITIVE,
        "nm_deletion": Interval(0, 1, closed="left"),
    }

    def settings(self) -> dict:
        """Recorded in ``defsent.json`` and the resumable state (required equal on ``--resume``)."""
        return {"nm_weight": self.weight, "nm_temperature": self.temperature, "nm_deletion": self.deletion}

    def check(self) -> NoiseMatching:
        """Each setting against :attr:`constraints` (one-line error, before anything loads); returns self."""
        check_all(self.settings(), self.constraints)
        return self

    def damage(self, noised: Noised, seed: int, step: int) -> list[str]:
        """The damaged copy of each sentence, drawn from (seed, step, its key)."""
        return [
            delete_words(text, self.deletion, np.random.default_rng([seed, step, *key]))
            for text, key in zip(noised.texts, noised.keys, strict=True)
        ]

    def loss(self, originals: torch.Tensor, damaged: torch.Tensor, sizes: list[int] | None = None) -> torch.Tensor:
        """λ · InfoNCE: query i the original's vector (detached: the stop-gradient), key i its damaged copy's, the
        other keys of the global batch (``sizes``: every process's rows, under torchrun) the negatives."""
        return self.weight * info_nce(originals.detach(), damaged, scale=1.0 / self.temperature, sizes=sizes)
