"""Run under torchrun (gloo, CPU): the in-batch-negatives loss of N processes against one, in float64.

Every process holds the same linear "encoder" and the same global batch; each takes its contiguous share
(``distributed.shard``), scores its queries against the keys gathered from every process
(``loss.info_nce`` with ``sizes``), weights its loss as ``Trainer.train_step`` does, and the gradients are
averaged as DDP averages them. The result must be the one-process gradient of the whole batch, to float64
precision, for batches that split evenly, unevenly and leave a process without a row, with and without a
stop-gradient on the queries. Prints ``max difference <d>`` on rank 0.
"""

import numpy as np
import torch
import torch.distributed as dist

from defsent_cli import distributed
from defsent_cli.training.loss import info_nce


def gradient(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, index: np.ndarray, stop: bool, sizes):
    w_q, w_k = w_q.clone().requires_grad_(True), w_k.clone().requires_grad_(True)
    queries, keys = x[index] @ w_q, x[index] @ w_k
    loss = info_nce(queries.detach() if stop else queries, keys, scale=20.0, sizes=sizes)
    loss.backward()
    return w_q.grad, w_k.grad


def main() -> None:
    with distributed.session("cpu"):
        world = distributed.world()
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(7, 5, generator=generator, dtype=torch.float64)
        w_q = torch.randn(5, 4, generator=generator, dtype=torch.float64)
        w_k = torch.randn(5, 4, generator=generator, dtype=torch.float64)
        worst = 0.0
        for n in (7, 6, 1):
            batch = np.arange(n)
            for stop in (False, True):
                local = distributed.shard(batch)
                weight = len(local) / n
                if len(local) == 0:  # as Trainer.train_step: a placeholder row, weight 0
                    local = batch[:1]
                sizes = distributed.shard_sizes(n)
                w_q_p, w_k_p = w_q.clone().requires_grad_(True), w_k.clone().requires_grad_(True)
                queries, keys = x[local] @ w_q_p, x[local] @ w_k_p
                loss = info_nce(queries.detach() if stop else queries, keys, scale=20.0, sizes=sizes)
                (loss * weight * world).backward()
                grads = []
                for param in (w_q_p, w_k_p):
                    grad = param.grad if param.grad is not None else torch.zeros_like(param)
                    dist.all_reduce(grad)  # DDP: the mean over processes
                    grads.append(grad / world)
                expected = gradient(x, w_q, w_k, batch, stop, None)
                for got, want in zip(grads, expected, strict=True):
                    want = want if want is not None else torch.zeros_like(got)
                    worst = max(worst, float((got - want).abs().max()))
        if distributed.is_main():
            print(f"max difference {worst:.3e}")


if __name__ == "__main__":
    main()
