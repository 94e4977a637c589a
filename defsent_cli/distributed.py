"""Running under ``torchrun``: PyTorch's own process groups, nothing home-made.

``torchrun --nproc_per_node N`` starts N copies of ``defsent`` with ``WORLD_SIZE``,
``RANK`` and ``LOCAL_RANK`` in their environment.  This module reads them, opens
the process group (gloo on CPU, NCCL on GPUs, each process on ``cuda:LOCAL_RANK``)
and offers the few collectives the commands need.

In one process (no ``WORLD_SIZE``, or ``WORLD_SIZE=1``) every helper is a no-op:
no process group is created and the normal code path runs unchanged.

Numpy payloads (encoded rows, RNG states) travel over a gloo group even when
training uses NCCL, so they never round-trip through GPU memory.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .errors import DefsentError

if TYPE_CHECKING:  # numpy (like torch) only where work is split: the command line's error boundary imports this
    import numpy as np

_state: dict[str, Any] = {"initialized": False, "backend": None, "cpu_group": None, "releases": [], "atexit": False}


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise DefsentError(f"environment variable {name}={value!r} is not an integer") from None


def world() -> int:
    """Number of processes (``WORLD_SIZE``; 1 outside torchrun)."""
    return max(1, _env_int("WORLD_SIZE", 1))


def rank() -> int:
    """This process's global rank (``RANK``; 0 outside torchrun)."""
    return _env_int("RANK", 0) if world() > 1 else 0


def local_rank() -> int:
    """This process's rank on its node (``LOCAL_RANK``), which picks its GPU."""
    return _env_int("LOCAL_RANK", 0) if world() > 1 else 0


def active() -> bool:
    """True under torchrun with more than one process."""
    return world() > 1


def is_main() -> bool:
    """Rank 0: the one process that logs, shows progress and writes outputs."""
    return rank() == 0


def local_world() -> int:
    """Processes on this node (``LOCAL_WORLD_SIZE``, which torchrun sets; else the world)."""
    return max(1, _env_int("LOCAL_WORLD_SIZE", world()))


def local_device(device: str = "auto") -> str:
    """The ``--device`` this process should use: under torchrun, ``cuda`` means ``cuda:LOCAL_RANK``.

    ``auto`` is CUDA when there is a GPU, as in one process. More processes on a node than it has GPUs
    is a one-line error naming both counts (for ``auto`` and ``cuda`` alike): sharing GPUs, or some
    ranks quietly on the CPU, would make every step wait for the slowest; ``--device cpu`` runs them all
    on the CPU (gloo).
    """
    if not active():
        return device
    import torch

    if device.startswith("cuda:"):
        raise DefsentError(
            f"--device {device} under torchrun would put every process on one GPU; "
            "pass --device cuda (each process takes cuda:LOCAL_RANK)"
        )
    if device == "auto" and not torch.cuda.is_available():
        return "cpu"
    if device in ("auto", "cuda"):
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if gpus == 0:
            raise DefsentError("--device cuda: CUDA is not available here; use --device cpu")
        if local_world() > gpus or local_rank() >= gpus:
            raise DefsentError(
                f"torchrun started {local_world()} processes on this node but it has {gpus} GPU"
                f"{'s' if gpus != 1 else ''}: use --nproc_per_node {gpus} (one process per GPU), or --device cpu"
            )
        return f"cuda:{local_rank()}"
    return device


def initialized() -> bool:
    return bool(_state["initialized"])


def init(device: Any = "cpu") -> None:
    """Open the process group (idempotent); a no-op in one process.

    ``device`` is the torch device this process computes on: NCCL for CUDA,
    gloo otherwise.  Call it after validating inputs, so a bad argument fails
    every rank alike instead of leaving the others waiting.  Prefer
    :func:`session`, which closes the groups in the one safe order.
    """
    if not active() or _state["initialized"]:
        return
    import torch
    import torch.distributed as dist
    import torch.distributed.nn.functional  # noqa: F401  (before the group: see below)

    # torch.distributed.nn.functional takes ``group.WORLD`` as the default argument of its functions, so
    # imported while a group exists (DistributedDataParallel imports it) it would hold that group for the
    # life of the process: destroy() could not free it, and the interpreter would at exit.
    device = torch.device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(device)
        dist.init_process_group(backend, device_id=device)
        _state["cpu_group"] = dist.new_group(backend="gloo")
    else:
        dist.init_process_group(backend)
        _state["cpu_group"] = None  # the default (gloo) group
    _state.update(initialized=True, backend=backend, releases=[])
    if not _state["atexit"]:  # a group opened outside session() still closes in the safe order
        atexit.register(destroy, wait=False)
        _state["atexit"] = True


def backend() -> str | None:
    return _state["backend"]


def on_teardown(release: Callable[[], object]) -> None:
    """Have :func:`destroy` call ``release`` before it closes the groups: ``release`` drops what holds a
    group from C++, a DistributedDataParallel wrapper above all (see :func:`unwrap`)."""
    if _state["initialized"]:
        _state["releases"].append(release)


def unwrap(module: Any) -> Any:
    """The plain module inside a DistributedDataParallel wrapper (``module`` itself if it is not one).

    The wrapper is also cut from its C++ Reducer (and the Reducer's logger), which holds the process group
    and the gradient buckets: whatever still refers to the wrapper (a traceback's frame, say), the Reducer
    goes now, while the group is alive, never later as the group's last owner.
    """
    import torch

    if not isinstance(module, torch.nn.parallel.DistributedDataParallel):
        return module
    for name in ("logger", "reducer"):
        module.__dict__.pop(name, None)
    return module.module


def destroy(wait: bool = True) -> None:
    """Close the process groups (idempotent), in the one order that cannot deadlock.

    gloo runs collectives on worker threads, and a worker that frees a finished collective's tensors may
    need the GIL; the group's C++ destructor joins those workers.  Freed from a DistributedDataParallel
    wrapper (its Reducer, a C++ object that owns the group and is freed with the GIL held), that join
    waits for a thread that waits for the GIL: a hang at exit (pytorch/pytorch#56297).  So:

    1. ``wait`` (a normal end): CUDA synchronised and a barrier, so that no collective is pending and no
       rank still sends to one that is closing;
    2. what :func:`on_teardown` registered (the DDP wrappers) released and garbage-collected while the
       groups are alive, so their Reducers never own the last reference;
    3. the groups destroyed explicitly (the extra gloo group first, then the default one) while this
       function still holds them; dropping them last frees each through its Python object, which torch
       frees with the GIL released, so the workers can finish and the join returns.

    After a failure (``wait=False``) the ranks may stand at different collectives, so no barrier: steps 2
    and 3 only.
    """
    if not _state["initialized"]:
        return
    import gc

    import torch
    import torch.distributed as dist

    groups: list = []
    try:
        if wait:
            if _state["backend"] == "nccl":
                torch.cuda.synchronize()  # this rank's NCCL work done
            dist.barrier(group=_state["cpu_group"])  # every rank's: the gloo group (the default one on CPU)
    finally:
        releases, _state["releases"] = _state["releases"], []
        for release in reversed(releases):
            with contextlib.suppress(Exception):
                release()
        releases.clear()
        gc.collect()
        with contextlib.suppress(Exception):
            groups = [g for g in (_state["cpu_group"], dist.distributed_c10d._get_default_group()) if g is not None]
        if _state["cpu_group"] is not None:
            with contextlib.suppress(Exception):
                dist.destroy_process_group(_state["cpu_group"])
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
        _state.update(initialized=False, backend=None, cpu_group=None)
        groups.clear()  # the last references: freed with the GIL released (see step 3)


@contextlib.contextmanager
def session(device: Any = "cpu") -> Iterator[None]:
    """``init`` on entry, :func:`destroy` on exit (after a barrier when the block ended normally); a no-op in
    one process.  Every command that runs under torchrun opens its groups here."""
    init(device)
    ended = False
    try:
        yield
        ended = True
    finally:
        destroy(wait=ended)


def _require() -> None:
    if active() and not _state["initialized"]:
        raise RuntimeError("distributed helper called before defsent_cli.distributed.init()")


def barrier() -> None:
    if active():
        _require()
        import torch.distributed as dist

        dist.barrier(group=_state["cpu_group"])


# --- splitting work --------------------------------------------------------------------------------


def shard(indices: Sequence | np.ndarray) -> np.ndarray:
    """This rank's contiguous slice of ``indices`` (sizes differ by at most one; may be empty)."""
    import numpy as np

    indices = np.asarray(indices)
    if not active():
        return indices
    return np.array_split(indices, world())[rank()]


def my_batches(batches: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every ``world()``-th batch, starting at this rank's: batch i goes to rank i mod world."""
    return list(batches) if not active() else list(batches)[rank() :: world()]


# --- collectives on Python / numpy objects ------------------------------------------------------


def all_gather_object(obj: Any) -> list:
    """``[obj of rank 0, obj of rank 1, ...]`` on every rank; ``[obj]`` in one process."""
    if not active():
        return [obj]
    _require()
    import torch.distributed as dist

    out: list = [None] * world()
    dist.all_gather_object(out, obj, group=_state["cpu_group"])
    return out


def gather_object(obj: Any) -> list | None:
    """``[obj of rank 0, ...]`` on rank 0, ``None`` elsewhere; ``[obj]`` in one process."""
    if not active():
        return [obj]
    _require()
    import torch.distributed as dist

    out: list | None = [None] * world() if is_main() else None
    dist.gather_object(obj, out, dst=0, group=_state["cpu_group"])
    return out


def broadcast_object(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if not active():
        return obj
    _require()
    import torch.distributed as dist

    box = [obj if is_main() else None]
    dist.broadcast_object_list(box, src=0, group=_state["cpu_group"])
    return box[0]


def all_reduce_sum(value: float) -> float:
    """The sum of a float over all ranks (float64)."""
    if not active():
        return float(value)
    _require()
    import torch
    import torch.distributed as dist

    tensor = torch.tensor([float(value)], dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=_state["cpu_group"])
    return float(tensor.item())


def all_reduce_cpu(tensor: Any) -> Any:
    """Sum a CPU tensor over all ranks, in place (over the gloo group, so on a GPU run too); returns it."""
    if active():
        _require()
        import torch.distributed as dist

        dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=_state["cpu_group"])
    return tensor


def gather_rows(rows: np.ndarray, index: np.ndarray, n: int) -> np.ndarray | None:
    """Assemble every rank's ``rows`` (for input positions ``index``) into one (n, d) matrix on rank 0.

    Returns the matrix on rank 0 and ``None`` on the other ranks; in one process,
    ``rows`` placed at ``index``.
    """
    import numpy as np

    parts = gather_object((np.asarray(index, dtype=np.int64), rows))
    if parts is None:
        return None
    out = np.empty((n, rows.shape[1]), dtype=rows.dtype)
    seen = np.zeros(n, dtype=bool)
    for part_index, part_rows in parts:
        out[part_index] = part_rows
        seen[part_index] = True
    if not seen.all():
        raise RuntimeError(f"gather_rows: {int((~seen).sum())} of {n} rows missing from every rank")
    return out


def shard_sizes(n: int) -> list[int]:
    """How many of a global batch of ``n`` items each rank's :func:`shard` holds, in rank order."""
    base, extra = divmod(n, world())
    return [base + (r < extra) for r in range(world())]


def shard_range(n: int) -> tuple[int, int]:
    """``(start, stop)``: this rank's contiguous share of ``n`` rows (:func:`shard`'s split; all of them in one
    process). ``train --shard-bank`` holds these rows of the bank."""
    sizes = shard_sizes(n)
    start = sum(sizes[: rank()])
    return start, start + sizes[rank()]


def all_gather_batch(local: Any, sizes: Sequence[int], mine_first: bool = True) -> Any:
    """The rows of the global batch from every rank, THIS rank's first, then the others in rank order
    (``mine_first=False``: all in rank order, i.e. the global batch's own order, the same on every rank).

    ``local`` holds this rank's ``sizes[rank]`` rows (one placeholder row on a rank that holds none, see
    ``Loop.train_step``); ``sizes`` every rank's count (:func:`shard_sizes`). The ranks pad to the same
    number of rows (a collective needs equal shapes) and the padding is cut off again. The gather carries
    gradients (:func:`_gather_rows`): each row's gradients from every rank are summed on the rank the row came
    from. In one process, ``local`` itself.
    """
    if not active():
        return local
    _require()
    import torch

    me = rank()
    rows = max(max(sizes), 1)
    padded = torch.nn.functional.pad(local, (0, 0, 0, rows - local.shape[0]))
    parts = _gather_rows().apply(padded.contiguous())
    order = [me, *(r for r in range(len(sizes)) if r != me)] if mine_first else range(len(sizes))
    return torch.cat([parts[r, : sizes[r]] for r in order])


@functools.cache
def _gather_rows() -> Any:
    """An autograd function: every rank's equally shaped tensor stacked in rank order (``dist.all_gather``);
    backward sums the gradient of the stack over the ranks (``dist.all_reduce``) and keeps this rank's part.

    Written here because torch's autograd-aware gathers are private or deprecated and not the same from one
    release to the next: ``torch.distributed._functional_collectives.all_gather_single`` carries gradients in
    torch 2.13 but does not exist in 2.11 (training under torchrun failed there with an ImportError), and
    ``torch.distributed.nn.functional.all_gather`` warns that it will go. These two public collectives are in
    every torch this package supports, on gloo and NCCL alike. The all-reduce moves the whole stack where a
    reduce-scatter would move one part: a batch of embeddings, a few hundred kilobytes.
    """
    import torch
    import torch.distributed as dist

    class GatherRows(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, tensor: Any) -> Any:
            parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
            dist.all_gather(parts, tensor)
            return torch.stack(parts)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            total = grad.clone(memory_format=torch.contiguous_format)  # autograd's tensor is not ours to change
            dist.all_reduce(total)
            return total[dist.get_rank()]

    return GatherRows
