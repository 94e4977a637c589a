"""CUDA graphs for encoding (``--cuda-graphs``): each batch shape's forward pass and pooling recorded once,
then replayed in one launch.

Why: a forward pass of an encoder as small as MiniLM is a few hundred small kernels, and at small batches the
host's launching of them costs more than their arithmetic (docs/speed.md, "GPU"). A CUDA graph records the
kernels of one input shape and replays them all at once. Graphs need fixed shapes, so batches are cut here
from the length-sorted texts at a fixed row count per length (``--batch-size``, or fewer under
``--batch-tokens``), the last batch of a length filled up with copies of its first row, and lengths rounded
up to a multiple of :data:`BUCKET` tokens (the padding is masked, so the vectors are those of the plain loop
within float noise). One graph per rounded length, captured the first time a call needs it, after a
warm-up pass on a side stream (torch's CUDA-graph notes); the graphs of a call share one memory pool and are
released with it. Written by hand: torch gives the capture and the replay, nothing gives the fixed-shape
batching an encoder needs (``torch.compile(mode="reduce-overhead")`` would capture per shape too, behind a
compiler; compiling the training step did not finish inside a GPU session's measurement, docs/speed.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from ..errors import DefsentError
from .tokenize import pad_batch, rows_for

#: Lengths are rounded up to a multiple of this many tokens: at most max_length / BUCKET graphs per call.
BUCKET = 8

#: Warm-up passes on a side stream before a capture (cuBLAS handles, lazily built tables, kernel choice).
WARMUP = 2


def check_cuda_graphs(runtime: str, device) -> None:
    """``--cuda-graphs`` asks for the torch model on a CUDA GPU: anything else is a one-line error, before loading."""
    from .models import resolve_device

    if runtime != "torch":
        raise DefsentError(f"--cuda-graphs records the torch model's forward pass, not --runtime {runtime}")
    resolved = resolve_device(str(device))
    if resolved.type != "cuda":
        raise DefsentError(f"--cuda-graphs needs a CUDA GPU, and the device here is {resolved}: leave it out")


def round_up(length: int, bucket: int, limit: int) -> int:
    """``length`` rounded up to a multiple of ``bucket``, never past ``limit`` (the model's longest input)."""
    return min(-(-length // bucket) * bucket, max(limit, length))


def batch_shape(
    longest: int, batch_size: int, max_tokens: int | None, limit: int, bucket: int = BUCKET
) -> tuple[int, int]:
    """The fixed (rows, length) of the graph that runs a batch whose longest text is ``longest`` tokens."""
    length = round_up(longest, bucket, limit)
    return rows_for(length, batch_size, max_tokens), length


def graph_batches(
    lengths: Sequence[int], batch_size: int, max_tokens: int | None, limit: int, bucket: int = BUCKET
) -> list[np.ndarray]:
    """Index batches, longest first, each holding texts of one rounded length, at most :func:`rows_for` of them.

    Unlike ``tokenize.length_batches`` (which closes a batch early where the length changes, to spare padding),
    a batch here runs as full as its shape allows: its shape is fixed by its rounded length, padding or not.
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    rounded = [round_up(int(lengths[i]), bucket, limit) for i in order]
    batches, start = [], 0
    while start < len(order):
        length = rounded[start]
        end = start + 1
        cap = rows_for(length, batch_size, max_tokens)
        while end < len(order) and end - start < cap and rounded[end] == length:
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


class GraphedEncoder:
    """Pooled rows for one batch of token ids at a time, from one CUDA graph per batch shape.

    ``compute(input_ids, attention_mask)`` is the forward pass and pooling on device tensors of a padded batch,
    returning float32 rows; it must only queue GPU work (no host sync, no copy from the host), as a capture
    requires.
    ``capture=False`` runs the same fixed-shape batches without graphs (any device): it checks the
    batching, the filling up and the masks where there is no GPU.
    """

    def __init__(
        self,
        compute: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        pad_id: int,
        device,
        batch_size: int,
        max_tokens: int | None,
        limit: int,
        capture: bool = True,
        bucket: int = BUCKET,
    ) -> None:
        self.compute, self.pad_id, self.device = compute, pad_id, torch.device(device)
        self.batch_size, self.max_tokens, self.limit, self.bucket = batch_size, max_tokens, limit, bucket
        self.capture = capture  # on a CUDA device only (the commands ask check_cuda_graphs before loading)
        self.shapes: dict[tuple[int, int], tuple] = {}  # (rows, length) -> (graph, ids, mask, pooled)
        self.pool = torch.cuda.graph_pool_handle() if capture else None
        self.stream: torch.cuda.Stream | None = None  # made on the device at the first capture

    def batches(self, lengths: Sequence[int]) -> list[np.ndarray]:
        """:func:`graph_batches` for these lengths, with this encoder's batch size, budget and limit."""
        return graph_batches(lengths, self.batch_size, self.max_tokens, self.limit, self.bucket)

    def shape(self, id_lists: Sequence[Sequence[int]]) -> tuple[int, int]:
        """:func:`batch_shape` of this batch, with this encoder's batch size, budget, limit and bucket."""
        return batch_shape(max(map(len, id_lists)), self.batch_size, self.max_tokens, self.limit, self.bucket)

    def _shape(self, rows: int, length: int) -> tuple:
        key = (rows, length)
        if key in self.shapes:
            return self.shapes[key]
        ids = torch.full((rows, length), self.pad_id, dtype=torch.long, device=self.device)
        mask = torch.ones((rows, length), dtype=torch.long, device=self.device)
        graph = pooled = None
        if self.capture:
            with torch.cuda.device(self.device):  # cuda:N need not be the current device (no torchrun)
                graph, pooled = self._capture(ids, mask)
        self.shapes[key] = (graph, ids, mask, pooled)
        return self.shapes[key]

    def _capture(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple:
        """The graph of ``compute`` on these static buffers, and its output buffer."""
        current = torch.cuda.current_stream()
        warm = mask.clone()
        warm[:, -1] = 0  # a padded mask: the warm-up takes the path the capture takes (an all-ones mask may skip it)
        side = torch.cuda.Stream()
        side.wait_stream(current)
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                self.compute(ids, warm)
        current.wait_stream(side)
        if self.stream is None:
            self.stream = torch.cuda.Stream()  # the captures' own stream, on this device
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, pool=self.pool, stream=self.stream):
                # contiguous: a view (cls pooling's first-token rows) would keep the whole batch's states alive
                pooled = self.compute(ids, mask).contiguous()
        except RuntimeError as error:
            torch.cuda.set_stream(current)  # a failed capture leaves its stream current
            cause = error.__context__ if isinstance(error.__context__, Exception) else error
            text = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
            if isinstance(cause, torch.cuda.OutOfMemoryError):
                raise DefsentError(
                    f"--cuda-graphs: out of GPU memory while recording a batch shape ({text}); lower --batch-size "
                    "or --batch-tokens"
                ) from None
            raise DefsentError(
                f"--cuda-graphs: this model's forward pass cannot be recorded in a CUDA graph ({text}); run "
                "without --cuda-graphs"
            ) from None
        return graph, pooled

    def __call__(self, id_lists: Sequence[Sequence[int]]) -> torch.Tensor:
        """The pooled rows of one batch from :meth:`batches` (a new device tensor, float32, in its order)."""
        rows, length = self.shape(id_lists)
        if len(id_lists) > rows:
            raise ValueError(f"a batch of {len(id_lists)} rows does not fit the ({rows}, {length}) shape")
        filled = list(id_lists) + [id_lists[0]] * (rows - len(id_lists))
        ids, mask = pad_batch(filled, self.pad_id, length)
        graph, ids_buffer, mask_buffer, pooled = self._shape(rows, length)
        if graph is None:
            return self.compute(ids.to(self.device), mask.to(self.device))[: len(id_lists)]
        ids_buffer.copy_(ids.pin_memory(), non_blocking=True)
        mask_buffer.copy_(mask.pin_memory(), non_blocking=True)
        with torch.cuda.device(self.device):
            graph.replay()
        return pooled[: len(id_lists)].clone()  # the buffer is the next replay's
