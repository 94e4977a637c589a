"""Every pooling, one function each, in one registry.

A pooling turns the encoder's token states into one vector per text.  All of
them take the masked token states, so padding never changes a result:

- ``cls``:    the first token's last-layer state (no pooler), as DefSent+'s AC bank.
- ``mean``:   masked mean of the last layer, special tokens included (SimCSE "avg",
              DefSent+'s AMP bank, sentence-transformers' mean pooling).
- ``max``:    masked max over time of the last layer (DefSent, SBERT).
- ``prompt``: the last-layer state at the [MASK] token(s) of a PromptBERT template;
              several masks are averaged. The template is applied before tokenising.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .errors import DefsentError

# DefSent+ / PromptBERT template, with the model's own mask token put in for [MASK].
PROMPT_TEMPLATE = 'This sentence : "[X]" means [MASK] .'


@dataclass(frozen=True)
class PoolingInput:
    """What a pooling may read from one batch."""

    last_hidden_state: torch.Tensor  # (B, T, H)
    attention_mask: torch.Tensor  # (B, T), 1 for real tokens
    input_ids: torch.Tensor  # (B, T)
    mask_token_id: int | None = None


def pool_cls(batch: PoolingInput) -> torch.Tensor:
    return batch.last_hidden_state[:, 0]


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``states`` over positions where ``mask`` is 1 (any float/int mask)."""
    weights = mask.to(states.dtype).unsqueeze(-1)
    return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)


def pool_mean(batch: PoolingInput) -> torch.Tensor:
    return masked_mean(batch.last_hidden_state, batch.attention_mask)


def pool_max(batch: PoolingInput) -> torch.Tensor:
    states = batch.last_hidden_state
    fill = torch.finfo(states.dtype).min
    masked = states.masked_fill(batch.attention_mask.unsqueeze(-1) == 0, fill)
    return masked.max(dim=1).values


def pool_prompt(batch: PoolingInput) -> torch.Tensor:
    if batch.mask_token_id is None:
        raise DefsentError("prompt pooling needs a tokenizer with a mask token")
    is_mask = (batch.input_ids == batch.mask_token_id) & (batch.attention_mask == 1)
    if not bool(is_mask.any(dim=1).all()):
        raise DefsentError("prompt pooling: an input lost its mask token (template too long for --max-length?)")
    return masked_mean(batch.last_hidden_state, is_mask)


@dataclass(frozen=True)
class Pooling:
    """A named pooling; ``template`` is applied to each text before tokenising."""

    name: str
    fn: Callable[[PoolingInput], torch.Tensor]
    template: str | None = None
    help: str = ""

    def __call__(self, batch: PoolingInput) -> torch.Tensor:
        return self.fn(batch)


POOLINGS: dict[str, Pooling] = {
    "cls": Pooling("cls", pool_cls, help="first token, last layer, no pooler"),
    "mean": Pooling("mean", pool_mean, help="masked mean of the last layer, special tokens included"),
    "max": Pooling("max", pool_max, help="masked max of the last layer"),
    "prompt": Pooling("prompt", pool_prompt, PROMPT_TEMPLATE, help=f"[MASK] state of the template {PROMPT_TEMPLATE}"),
}


def get_pooling(name: str) -> Pooling:
    """The registered pooling called ``name`` (a DefsentError lists the choices)."""
    try:
        return POOLINGS[name]
    except KeyError:
        raise DefsentError(f"unknown pooling {name!r}; choose one of {', '.join(POOLINGS)}") from None
