"""Texts to token ids: templates for prompt poolings, truncation that never cuts the mask, padding,
and length batches (sorted by length, so padding stays small and mostly absent)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import chain

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


#: Texts per tokenizer call when a long list is split across threads.
TOKENIZE_CHUNK = 2048


def _tokenize_plain(texts: Sequence[str], tokenizer, max_length: int) -> list[list[int]]:
    enc = tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=max_length)
    return [list(ids) for ids in enc["input_ids"]]


def tokenize(texts: Sequence[str], tokenizer, pooling: Pooling, max_length: int) -> list[list[int]]:
    """Token ids (with special tokens, unpadded) for each text, truncated to ``max_length``.

    A long list is tokenised in chunks of :data:`TOKENIZE_CHUNK` on threads, one per core (at most 16):
    a fast tokenizer releases the GIL while it works, so the chunks run in parallel without the
    tokenizers library's own thread pool (off here: ``TOKENIZERS_PARALLELISM=false``, which keeps a later
    fork quiet and safe). The ids are the ones one call gives, in order.
    """
    if pooling.template:
        run = partial(_tokenize_templated, tokenizer=tokenizer, template=pooling.template, max_length=max_length)
    else:
        run = partial(_tokenize_plain, tokenizer=tokenizer, max_length=max_length)
    texts = list(texts)
    threads = min(16, os.cpu_count() or 1, -(-len(texts) // TOKENIZE_CHUNK))
    if threads <= 1 or not getattr(tokenizer, "is_fast", False):
        return run(texts)
    chunks = [texts[i : i + TOKENIZE_CHUNK] for i in range(0, len(texts), TOKENIZE_CHUNK)]
    # The first chunk alone: it sets the tokenizer's truncation once, so the threads never change it while
    # another one encodes (the Rust tokenizer refuses that: "Already borrowed").
    first = run(chunks[0])
    with ThreadPoolExecutor(threads, thread_name_prefix="defsent-tokenize") as pool:
        return first + [ids for part in pool.map(run, chunks[1:]) for ids in part]


def pad_id(tokenizer) -> int:
    """The tokenizer's padding id (0 when it has none: padded positions are masked out anyway)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0


def pad_batch(
    id_lists: Sequence[Sequence[int]], pad_id: int, length: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest item (or to ``length`` when longer): (input_ids, attention_mask), int64, built in
    numpy in one pass."""
    lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
    longest = max(int(lengths.max()), length or 0)
    mask = np.arange(longest) < lengths[:, None]
    input_ids = np.full((len(id_lists), longest), pad_id, dtype=np.int64)
    input_ids[mask] = np.fromiter(chain.from_iterable(id_lists), dtype=np.int64, count=int(lengths.sum()))
    return torch.from_numpy(input_ids), torch.from_numpy(mask.astype(np.int64))


def has_padding(attention_mask: torch.Tensor) -> bool:
    """Whether any row of a host mask (:func:`pad_batch`'s) is padded: read before the copy to a GPU (asked of
    the GPU's copy, the host would wait for the GPU), and handed to ``encode.model_mask``."""
    return bool(attention_mask.min() == 0)


def to_device(tensor: torch.Tensor, device) -> torch.Tensor:
    """A host tensor on ``device``; to a GPU through pinned memory and a non-blocking copy, so the host
    goes on preparing the next batch while the copy and the work queued before it run."""
    device = torch.device(device)
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def on_device(table: torch.Tensor, device) -> torch.Tensor:
    """A constant tensor (a lookup table, a set of ids) on ``device``, for the caller to keep there: used at
    every batch, a copy from the host's pageable memory each time would also wait for the GPU's queue."""
    return table if table.device == torch.device(device) else table.to(device)


def rows_for(length: int, batch_size: int, max_tokens: int | None) -> int:
    """Rows a batch of items this long may hold: ``batch_size``, or fewer when the token budget ``max_tokens``
    caps rows x length (at least 1: an item longer than the budget goes alone)."""
    if max_tokens is None:
        return batch_size
    return max(1, min(batch_size, max_tokens // max(1, length)))


def length_batches(lengths: Sequence[int], batch_size: int, max_tokens: int | None = None) -> list[np.ndarray]:
    """Index batches, longest first, cut where the length changes when that costs at most half a batch.

    Items are sorted by length (descending, stable); a batch closes when it is full, or when the next
    item is shorter and the batch already holds at least half of what it may hold. Most batches then
    hold items of one length (no padding at all, so no attention mask is needed), and the rest pad
    only across neighbouring lengths. ``max_tokens``: a batch also holds at most this many tokens
    padded (items x its longest item), so long inputs come in fewer per batch and short ones in up to
    ``batch_size`` (a token budget, as fairseq's ``--max-tokens``); an item longer than the budget
    goes alone.
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    sizes = np.asarray(lengths)[order]
    batches, start = [], 0
    while start < len(order):
        cap = rows_for(int(sizes[start]), batch_size, max_tokens)
        half = max(1, cap // 2)
        end = start + 1
        while end < len(order) and end - start < cap and not (sizes[end] != sizes[end - 1] and end - start >= half):
            end += 1
        batches.append(order[start:end])
        start = end
    return batches
