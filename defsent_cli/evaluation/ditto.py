"""Ditto head search (Chen et al. 2023): every attention head's diagonal pooling scored on STS-B dev.

The paper treats the head "l-h" as a hyper-parameter chosen by grid search over all heads on the
STS-B dev set (1,500 pairs) by Spearman. One forward pass per batch gives every head's attention
matrix at once, so all heads are scored from a single pass over the sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..console import make_progress
from ..encoder.encode import prepare_pooling
from ..encoder.models import LoadedModel
from ..encoder.pooling import build_pooling
from ..encoder.tokenize import length_batches, pad_batch, tokenize
from ..encoder.tokenize import pad_id as padding_id
from .correlations import correlations, cosine_pairs
from .sts_data import STSTask, task_sentences


def all_head_vectors(
    loaded: LoadedModel,
    texts: Sequence[str],
    layers: str | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    show_progress: bool | None = None,
) -> np.ndarray:
    """Ditto vectors of ``texts`` for every head: an array (layers, heads, len(texts), dim).

    Entry [l, h] equals ``encode(texts, pooling=ditto with head l+1-h+1)`` (same layer set).
    """
    pool = prepare_pooling(build_pooling("ditto", layers=layers, ditto_head="1-1"), loaded)  # every head is read
    ids = tokenize(texts, loaded.tokenizer, pool, loaded.token_limit(max_length))
    config = loaded.model.config
    n_layers, n_heads = config.num_hidden_layers, config.num_attention_heads
    out = np.zeros((n_layers, n_heads, len(texts), loaded.dim), dtype=np.float32)
    pad_id = padding_id(loaded.tokenizer)
    with make_progress("sentences", show_progress) as progress, torch.inference_mode():
        task = progress.add_task("all heads", total=len(texts))
        for index in length_batches([len(x) for x in ids], batch_size):
            input_ids, mask = pad_batch([ids[i] for i in index], pad_id)
            input_ids, mask = input_ids.to(loaded.device), mask.to(loaded.device)
            res = loaded.model(
                input_ids=input_ids, attention_mask=mask, output_hidden_states=True, output_attentions=True
            )
            states = torch.stack([res.hidden_states[i] for i in pool.layers]).mean(dim=0)  # (B, T, D)
            diags = torch.stack([torch.diagonal(a, dim1=-2, dim2=-1) for a in res.attentions])  # (L, B, H, T)
            weights = diags * mask.to(diags.dtype)[None, :, None, :]
            pooled = torch.einsum("lbht,btd->lhbd", weights, states.to(weights.dtype))
            out[:, :, index] = pooled.float().cpu().numpy()
            progress.advance(task, len(index))
    return out


def search_heads(
    loaded: LoadedModel,
    task: STSTask,
    layers: str | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    show_progress: bool | None = None,
) -> list[dict]:
    """Spearman x100 on ``task`` (concatenated subsets) of every head, best first."""
    texts = task_sentences(task)
    unique = list(dict.fromkeys(texts))
    where = {t: i for i, t in enumerate(unique)}
    vectors = all_head_vectors(loaded, unique, layers, batch_size, max_length, show_progress)
    rows, offset = [], 0
    left, right, gold = [], [], []
    for sub in task.subsets:
        n = len(sub)
        left += [where[t] for t in texts[offset : offset + n]]
        right += [where[t] for t in texts[offset + n : offset + 2 * n]]
        gold.append(sub.gold)
        offset += 2 * n
    gold_all = np.concatenate(gold)
    for layer in range(vectors.shape[0]):
        for head in range(vectors.shape[1]):
            v = vectors[layer, head]
            spearman, pearson = correlations(cosine_pairs(v[left], v[right]), gold_all)
            rows.append({"head": f"{layer + 1}-{head + 1}", "spearman": spearman, "pearson": pearson})
    return sorted(rows, key=lambda r: -np.nan_to_num(r["spearman"], nan=-1e9))
