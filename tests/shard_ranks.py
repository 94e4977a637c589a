"""Run under torchrun (gloo, CPU): the sharded-bank loss of N processes against one, in float64.

Every process holds the same linear "encoder" and global batch but only its contiguous share of the bank's rows
(``distributed.shard_range``); it takes its share of the batch (``distributed.shard``), computes the loss over
ALL entries from its rows (``BankShard.loss``: representations all-gathered, a distributed log-sum-exp),
scales it by the world size as ``Trainer.train_step`` does, and the gradients are averaged as DDP averages
them. Loss and gradient must be the one-process ``F.cross_entropy(reps @ bank.T, labels, label_smoothing)``'s,
to float64 precision: batches that split evenly, unevenly and leave processes without a row, label smoothing
on and off, several chunks per shard, and a bank with fewer rows than processes. Prints
``max difference <d>`` on rank 0.

Then the reverse dictionary over the same shards (``search/exact.py``, a few rows per chunk): each query's gold rank
must be that of the one (queries x bank) score matrix in float64, an entry with the gold's own vector tying with
it, and the top k must be the k best rows (their float32 scores within rounding of the matrix's). Prints
``rank mismatches <n>`` and ``top-k mismatches <n>`` on rank 0.
"""

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from defsent_cli import distributed
from defsent_cli.formats.bank import Bank
from defsent_cli.search import exact
from defsent_cli.training.sharded_loss import BankShard


def shard_of(bank: torch.Tensor, smoothing: float) -> BankShard:
    start, stop = distributed.shard_range(len(bank))
    rows = bank[start:stop]
    return BankShard(rows, start, len(bank), rows.sum(dim=0) if smoothing else None)


def main() -> None:
    with distributed.session("cpu"):
        world = distributed.world()
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(7, 5, generator=generator, dtype=torch.float64)
        w = torch.randn(5, 4, generator=generator, dtype=torch.float64)
        banks = [torch.randn(11, 4, generator=generator, dtype=torch.float64)]
        banks.append(banks[0][:2])  # fewer rows than 3 processes: one holds none
        worst = 0.0
        for bank in banks:
            labels = torch.randint(0, len(bank), (7,), generator=generator)
            for n in (7, 6, 2, 1):
                batch = np.arange(n)
                for smoothing in (0.0, 0.1):
                    for chunk in (2, None):
                        local = distributed.shard(batch)
                        if len(local) == 0:  # as Trainer.train_step: a placeholder row
                            local = batch[:1]
                        w_p = w.clone().requires_grad_(True)
                        shard = shard_of(bank, smoothing)
                        loss = shard.loss(x[local] @ w_p, labels[:n], distributed.shard_sizes(n), smoothing, chunk)
                        (loss * world).backward()
                        grad = w_p.grad.clone()
                        dist.all_reduce(grad)  # DDP: the mean over processes
                        w_1 = w.clone().requires_grad_(True)
                        ref = F.cross_entropy((x[batch] @ w_1) @ bank.T, labels[:n], label_smoothing=smoothing)
                        ref.backward()
                        worst = max(
                            worst,
                            abs(float(loss.detach() - ref.detach())),
                            float((grad / world - w_1.grad).abs().max()),
                        )
        if distributed.is_main():
            print(f"max difference {worst:.3e}")
        ranks_and_top_k()


def ranks_and_top_k() -> None:
    exact.SCORE_ROWS, exact.QUERY_ROWS = 3, 4  # several chunks of rows and of queries per process
    generator = torch.Generator().manual_seed(1)
    vectors = torch.randn(11, 6, generator=generator)
    vectors[7] = vectors[2]  # two entries with one vector: their scores tie exactly
    queries = torch.randn(9, 6, generator=generator)
    gold = torch.tensor([2, 7, 0, 10, 5, 2, 7, 3, 9])
    bank = Bank([f"e{i}" for i in range(11)], vectors.numpy(), np.ones(11, dtype=np.int32))
    scores = (queries.double()[:, None, :] * vectors.double()[None]).sum(dim=2)  # the one-process matrix, float64
    expected = 1 + (scores > scores.gather(1, gold[:, None])).sum(dim=1)  # rows 2 and 7 tie: neither counts
    ranks = exact.gold_ranks(queries.numpy(), bank, gold.numpy(), sharded=True)
    found = exact.top_k(queries.numpy(), bank, 4, sharded=True)
    if distributed.is_main():
        index, values = found
        best = scores.topk(4, dim=1).values
        close = lambda a: (a - best).abs() > 1e-6 * (1 + best.abs())  # noqa: E731  float32 rounding
        wrong = int(close(torch.from_numpy(values).double()).sum())  # the k best scores, best first
        wrong += int(close(scores.gather(1, torch.from_numpy(index))).sum())  # and rows that score them
        print(f"rank mismatches {int((torch.from_numpy(ranks) != expected).sum())}")
        print(f"top-k mismatches {wrong}")


if __name__ == "__main__":
    main()
