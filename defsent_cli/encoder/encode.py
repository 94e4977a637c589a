"""The one encode loop: tokenise, sort by length, batch, pool, restore order.

Serves ``encode``, ``embed-entries``, the evaluations and model selection.
Sorting by token length keeps padding small; every pooling is masked, so the
output does not depend on the batch size beyond float noise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import torch

from .. import distributed
from ..console import make_progress
from ..errors import DefsentError
from ..log import note
from ..space.linalg import l2_normalize
from .cuda_graphs import GraphedEncoder
from .models import LoadedModel
from .pooling import Pooling, PoolingInput, fit_to_model, get_pooling
from .precision import no_cudnn_attention, tf32
from .tokenize import has_padding, length_batches, pad_batch, to_device, tokenize
from .tokenize import pad_id as padding_id


def model_mask(model, attention_mask: torch.Tensor, padded: bool):
    """The mask to give the model: none for a batch without padding (attention's fast path, same numbers);
    else a ready 4D mask, which transformers uses as it is: given the 2D mask it would first ask the device
    whether any position is padded (a host sync per forward pass), and for eager attention build its additive
    mask from a host scalar (a copy from the host, which a CUDA graph cannot record). For SDPA attention a
    (B, 1, 1, T) boolean mask; for eager attention (Ditto's) the (B, 1, 1, T) additive mask transformers
    builds, 0 at tokens and the dtype's minimum at padding, in the model's dtype, for a model whose mask
    comes from transformers' ``masking_utils`` (its own code may read a 4D mask otherwise: it gets the 2D one)."""
    if not padded:
        return None
    attention = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if attention == "sdpa":
        return attention_mask[:, None, None, :].bool()
    if attention == "eager" and uses_masking_utils(model):
        dtype = model.dtype
        pad = attention_mask[:, None, None, :] == 0
        return torch.zeros(pad.shape, dtype=dtype, device=pad.device).masked_fill(pad, torch.finfo(dtype).min)
    return attention_mask


def uses_masking_utils(model) -> bool:
    """Whether the model's module builds its attention mask with transformers' ``create_bidirectional_mask``
    (which returns a 4D mask as it is given)."""
    return hasattr(sys.modules.get(type(model).__module__), "create_bidirectional_mask")


def model_outputs(
    model, input_ids: torch.Tensor, attention_mask: torch.Tensor, pooling: Pooling, padded: bool
) -> PoolingInput:
    """One forward pass, returning what ``pooling`` reads: its layers' mean states, its Ditto diagonal.

    ``padded``: whether any position is padding, read on the host copy of the mask (``tokenize.has_padding``;
    asking the GPU copy would wait for the GPU). Half-precision states are upcast: pooling runs in float32.
    """
    want_layers, head = pooling.layers is not None, pooling.ditto_head
    out = model(
        input_ids=input_ids,
        attention_mask=model_mask(model, attention_mask, padded),
        output_hidden_states=want_layers,
        output_attentions=head is not None,
    )
    if want_layers:
        states = torch.stack([out.hidden_states[i].float() for i in pooling.layers]).mean(dim=0)
    else:
        states = out.last_hidden_state.float()
    diag = None
    if head is not None:
        diag = torch.diagonal(out.attentions[head[0]][:, head[1]], dim1=-2, dim2=-1).float()
    weights = None if pooling.weighting is None else pooling.weighting.weights(input_ids, attention_mask)
    return PoolingInput(states, attention_mask, input_ids, None, weights, diag)


def prepare_pooling(
    pooling: str | Pooling | None,
    loaded: LoadedModel,
    idf_corpus: Sequence[str] | None = None,
    max_length: int | None = None,
) -> Pooling:
    """The pooling checked against the model; Ditto switches the model to eager attention (the only one
    that returns attention probabilities); an idf weighting is fitted on ``idf_corpus`` (tokenised as
    the inputs are) when given."""
    pool = pooling if isinstance(pooling, Pooling) else get_pooling(pooling or loaded.default_pooling)
    pool = fit_to_model(pool, loaded.model.config)
    if pool.ditto_head is not None and getattr(loaded.model.config, "_attn_implementation", "eager") != "eager":
        # From here on this loaded model runs eager attention (slower than SDPA, same numbers).
        if hasattr(loaded.model, "set_attn_implementation"):
            loaded.model.set_attn_implementation("eager")
        else:  # older transformers
            loaded.model.config._attn_implementation = "eager"
    weighting = pool.weighting
    if idf_corpus is not None and getattr(weighting, "kind", None) == "idf":
        ids = tokenize(list(idf_corpus), loaded.tokenizer, pool, loaded.token_limit(max_length))
        pool = replace(pool, weighting=weighting.fit(ids, len(loaded.tokenizer)))
    return pool


def forward_pass(loaded: LoadedModel, pooling: Pooling):
    """The ONNX graph when one is attached and the pooling reads only the last layer, else the torch model
    (with a one-line notice the first time a pooling needs what the graph does not return)."""
    runtime = loaded.runtime
    if runtime is None:
        return loaded.model
    if runtime.supports(pooling):
        return runtime
    if not loaded.fallback_noted:
        note(f"{pooling.label} pooling reads other layers or attention probabilities, which the ONNX graph does not "
             "return: running torch for it")  # fmt: skip
        loaded.fallback_noted = True
    return loaded.model


def encode_workers(device) -> int:
    """How many batches run at once: on CPU one per torch thread, each op single-threaded; else 1.

    Small encoders spend much of a batch in ops too small to split well across cores (and OpenMP
    synchronisation suffers badly when other work shares the machine), so on CPU whole batches go
    to worker threads instead (torch releases the GIL inside its ops). Every batch is computed
    exactly as in one thread. ``DEFSENT_ENCODE_WORKERS`` overrides the count (1 = the plain loop).
    """
    if torch.device(device).type != "cpu":
        return 1
    override = os.environ.get("DEFSENT_ENCODE_WORKERS", "").strip()
    if override:
        try:
            return max(1, int(override))
        except ValueError:
            raise DefsentError(f"DEFSENT_ENCODE_WORKERS must be a whole number, not {override!r}") from None
    return max(1, torch.get_num_threads())


@contextmanager
def single_threaded_ops(active: bool) -> Iterator[None]:
    """torch ops on one thread inside the block (the worker threads supply the parallelism)."""
    if not active:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


#: On a GPU, pooled rows stay on the device until this many are waiting, then come back in one copy
#: (one host sync per 64k rows instead of one per batch).
GPU_FLUSH_ROWS = 1 << 16


def encode_ids(
    loaded: LoadedModel,
    id_lists: Sequence[Sequence[int]],
    pooling: Pooling,
    batch_size: int = 32,
    progress=None,
    task=None,
    dim: int | None = None,
    spread: bool = False,
) -> np.ndarray:
    """Run the encoder over pre-tokenised inputs; rows come back in input order (``dim``: the pooling's
    output width when it is not the model's, e.g. a word head's).

    Batches are length-sorted (:func:`length_batches`, with ``loaded.batch_tokens`` as a token budget).
    On CPU they run on worker threads (:func:`encode_workers`); with ``spread`` (the server's batches), fewer texts
    than the workers' batches hold (32 on 2 workers) are split into one batch per worker (not in bf16: one batch on
    torch's threads); on a GPU in one stream with no host sync
    per batch: padding is decided on the host, inputs go through pinned memory with non-blocking copies,
    and the pooled rows stay on the device until :data:`GPU_FLUSH_ROWS` are waiting, so the host
    prepares the next batches while the GPU works. With ``loaded.cuda_graphs`` the batches have fixed
    shapes and each is replayed from a CUDA graph (:mod:`.cuda_graphs`; on the CPU, which only the
    library and the tests reach, the same batches run without graphs, in one thread).
    """
    if batch_size < 1:
        raise DefsentError("--batch-size must be at least 1")
    tokenizer, model = loaded.tokenizer, forward_pass(loaded, pooling)
    pad_id, device = padding_id(tokenizer), torch.device(loaded.device)
    out = np.empty((len(id_lists), dim or loaded.dim), dtype=np.float32)

    def compute(input_ids: torch.Tensor, attention_mask: torch.Tensor, padded: bool = True) -> torch.Tensor:
        batch = model_outputs(model, input_ids, attention_mask, pooling, padded)
        return pooling(replace(batch, mask_token_id=tokenizer.mask_token_id)).float()

    lengths = [len(ids) for ids in id_lists]
    # fewer texts than the workers' batches: split so every worker is busy; not in bf16, whose matrix units want
    # the whole batch (a 32-text server batch on AMX: 927 sentences/s split, 1,084 whole; docs/speed.md)
    if spread and device.type == "cpu" and not loaded.cuda_graphs and loaded.precision != "bf16":
        batch_size = max(1, min(batch_size, -(-len(id_lists) // encode_workers(device))))
    batches, graphed = length_batches(lengths, batch_size, loaded.batch_tokens), None
    if loaded.cuda_graphs and model is loaded.model:  # fixed-shape batches, each replayed from its CUDA graph
        graphed = GraphedEncoder(
            compute, pad_id, device, batch_size, loaded.batch_tokens, loaded.max_length, capture=device.type == "cuda"
        )
        batches = graphed.batches(lengths)

    def pooled(index: np.ndarray) -> torch.Tensor:
        if graphed is not None:
            return graphed([id_lists[i] for i in index])
        input_ids, attention_mask = pad_batch([id_lists[i] for i in index], pad_id)
        padded = has_padding(attention_mask)
        return compute(to_device(input_ids, device), to_device(attention_mask, device), padded)

    if device.type == "cuda" or loaded.cuda_graphs:
        pending: list[tuple[np.ndarray, torch.Tensor]] = []

        def flush() -> None:
            if pending:
                rows = torch.cat([part for _, part in pending]).cpu().numpy()  # the one wait for the GPU
                out[np.concatenate([where for where, _ in pending])] = rows
                pending.clear()

        with torch.inference_mode(), tf32(loaded.precision == "tf32"), no_cudnn_attention():
            waiting = 0
            for index in batches:
                pending.append((index, pooled(index)))
                waiting += len(index)
                if waiting >= GPU_FLUSH_ROWS:
                    flush()
                    waiting = 0
                if progress is not None:
                    progress.advance(task, len(index))
            flush()
        return out

    def run(index: np.ndarray) -> None:
        with torch.inference_mode():  # thread-local: entered in each worker
            out[index] = pooled(index).cpu().numpy()
        if progress is not None:
            progress.advance(task, len(index))

    workers = min(encode_workers(loaded.device), len(batches))
    if workers <= 1:
        for index in batches:
            run(index)
        return out
    with single_threaded_ops(True), ThreadPoolExecutor(workers, thread_name_prefix="defsent-encode") as pool:
        for _ in pool.map(run, batches):  # re-raises a worker's exception here
            pass
    return out


def encode_ids_sharded(
    loaded: LoadedModel,
    id_lists: Sequence[Sequence[int]],
    pooling: Pooling,
    batch_size: int = 32,
    progress=None,
    task=None,
    dim: int | None = None,
) -> np.ndarray | None:
    """:func:`encode_ids` split across the processes of a ``torchrun`` launch (``dim``: as there).

    Every rank forms the same length-sorted batches; batch i is encoded by rank
    i mod world (neighbouring batches have similar lengths, so the ranks get
    similar work), and rank 0 gathers the rows back into input order.  Each
    batch holds the same items as in one process, so the rows match the
    one-process result up to float noise (bit-equal in practice on CPU; with
    ``--cuda-graphs`` each rank regroups its share into fixed shapes: float noise).
    Returns the (n, dim) matrix on rank 0 and ``None`` on the other ranks;
    in one process it is :func:`encode_ids`.
    """
    if not distributed.active():
        return encode_ids(loaded, id_lists, pooling, batch_size, progress, task, dim)
    if batch_size < 1:
        raise DefsentError("--batch-size must be at least 1")
    distributed.init(loaded.device)
    batches = distributed.my_batches(length_batches([len(ids) for ids in id_lists], batch_size, loaded.batch_tokens))
    mine = np.concatenate(batches) if batches else np.zeros(0, dtype=np.int64)
    rows = encode_ids(loaded, [id_lists[i] for i in mine], pooling, batch_size, progress, task, dim)
    out = distributed.gather_rows(rows, mine, len(id_lists))
    if out is not None and progress is not None:
        progress.advance(task, len(id_lists) - len(mine))  # the other ranks' share
    return out


def idf_fitted(pool: Pooling, id_lists: Sequence[Sequence[int]], loaded: LoadedModel) -> Pooling:
    """The pooling with an idf weighting that is not fitted yet fitted on the texts being encoded (idf^T)."""
    if getattr(pool.weighting, "kind", None) == "idf" and not pool.weighting.fitted:
        return replace(pool, weighting=pool.weighting.fit(id_lists, len(loaded.tokenizer)))
    return pool


def encode(
    texts: Sequence[str],
    loaded: LoadedModel,
    pooling: str | Pooling | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    normalize_embeddings: bool = False,
    show_progress_bar: bool | None = None,
    description: str = "encoding",
    shard: bool = False,
) -> np.ndarray | None:
    """Encode texts to a float32 (n, dim) matrix, like sentence-transformers' ``encode``.

    ``pooling`` defaults to the model folder's own (sentence-transformers or
    defsent config), ``max_length`` to the model's limit.  ``shard``: under
    ``torchrun``, split the work across the processes (:func:`encode_ids_sharded`);
    rank 0 gets the matrix, the other ranks ``None``.
    """
    pool = prepare_pooling(pooling, loaded)
    limit = loaded.token_limit(max_length)
    if not texts:
        return np.zeros((0, loaded.dim), dtype=np.float32)
    id_lists = tokenize(texts, loaded.tokenizer, pool, limit)
    pool = idf_fitted(pool, id_lists, loaded)
    run = encode_ids_sharded if shard else encode_ids
    with make_progress("sentences", show_progress_bar if distributed.is_main() else False) as progress:
        task = progress.add_task(description, total=len(id_lists))
        vectors = run(loaded, id_lists, pool, batch_size, progress, task)
    if vectors is None:  # a rank other than 0 of a sharded run
        return None
    return l2_normalize(vectors) if normalize_embeddings else vectors
