"""Texts to token ids: templates for prompt poolings, truncation that never cuts the mask, padding,
and length batches (sorted by length, so padding stays small and mostly absent)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..errors import DefsentError
from .pooling import Pooling


def apply_template(template: str, text: str, mask_token: str) -> tuple[str, int, int]:
    """Fill ``[X]`` with ``text`` and ``[MASK]`` with the model's mask token.

    Returns the filled string and the character span of ``text`` inside it.
    """
    if "[X]" not in template:
        raise DefsentError(f"template {template!r} has no [X] placeholder for the sentence")
    prefix, suffix = template.split("[X]", 1)
    prefix = prefix.replace("[MASK]", mask_token)
    suffix = suffix.replace("[MASK]", mask_token)
    return prefix + text + suffix, len(prefix), len(prefix) + len(text)


def _tokenize_templated(texts: Sequence[str], tokenizer, template: str, max_length: int) -> list[list[int]]:
    """Tokenise texts inside a template; when too long, drop the sentence's last tokens, never the mask."""
    if tokenizer.mask_token is None:
        raise DefsentError("this tokenizer has no mask token, so prompt pooling cannot be used")
    if not getattr(tokenizer, "is_fast", False):
        raise DefsentError("prompt pooling needs a fast (Rust) tokenizer to truncate around the template")
    filled = [apply_template(template, t, tokenizer.mask_token) for t in texts]
    enc = tokenizer([f[0] for f in filled], add_special_tokens=True, return_offsets_mapping=True, truncation=False)
    out: list[list[int]] = []
    for ids, offsets, (_, start, end) in zip(enc["input_ids"], enc["offset_mapping"], filled, strict=True):
        excess = len(ids) - max_length
        if excess > 0:
            in_sentence = [i for i, (a, b) in enumerate(offsets) if b > a and a >= start and b <= end]
            if excess >= len(in_sentence):
                raise DefsentError(f"--max-length {max_length} is too short for the prompt template")
            drop = set(in_sentence[-excess:])
            ids = [tok for i, tok in enumerate(ids) if i not in drop]
        out.append(list(ids))
    return out


def tokenize(texts: Sequence[str], tokenizer, pooling: Pooling, max_length: int) -> list[list[int]]:
    """Token ids (with special tokens, unpadded) for each text, truncated to ``max_length``."""
    if pooling.template:
        return _tokenize_templated(texts, tokenizer, pooling.template, max_length)
    enc = tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=max_length)
    return [list(ids) for ids in enc["input_ids"]]


def pad_id(tokenizer) -> int:
    """The tokenizer's padding id (0 when it has none: padded positions are masked out anyway)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0


def pad_batch(id_lists: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest item: (input_ids, attention_mask)."""
    longest = max(len(ids) for ids in id_lists)
    input_ids = torch.full((len(id_lists), longest), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(id_lists), longest), dtype=torch.long)
    for row, ids in enumerate(id_lists):
        input_ids[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
        attention_mask[row, : len(ids)] = 1
    return input_ids, attention_mask


def length_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Index batches, longest first, cut where the length changes when that costs at most half a batch.

    Items are sorted by length (descending, stable); a batch closes when it is full, or when the next
    item is shorter and the batch already holds at least ``batch_size // 2`` items. Most batches then
    hold items of one length (no padding at all, so no attention mask is needed), and the rest pad
    only across neighbouring lengths.
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    sizes = np.asarray(lengths)[order]
    half = max(1, batch_size // 2)
    batches, start = [], 0
    for i in range(1, len(order) + 1):
        size = i - start
        if i == len(order) or size == batch_size or (sizes[i] != sizes[i - 1] and size >= half):
            batches.append(order[start:i])
            start = i
    return batches
