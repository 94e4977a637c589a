"""Training speed of defsent's Trainer on a GPU, per precision and batch size (no start-up, no data loading).

    python bench/gpu_runs/train_speed.py DICT BANK fp32:32 bf16:32 fp32:256 bf16:256 [bf16:256:compile]

Each item PRECISION:BATCH[:compile] trains 5 warm-up steps, then times 40 steps with the GPU synchronised and
prints definitions/s. With PROFILE=1 the 256 rows also print torch.profiler tables (how the cuDNN attention
set-up cost was found). The model is $MINILM.
"""

import os
import sys
import time
from pathlib import Path

import torch

from defsent_cli.training.definitions import pst_step
from defsent_cli.training.loop import ObjectiveRun
from defsent_cli.training.specs import DEFINITIONS  # DefSent+'s loop defaults

DICT, BANK, MODEL = sys.argv[1], sys.argv[2], os.environ["MINILM"]


def make(precision: str, batch: int, n: int) -> ObjectiveRun:
    config = DEFINITIONS.config(
        pooling="mean", lr=2e-5, batch_size=batch, limit=n, seed=1, save_every=0,
        log_every=1000, device="cuda", precision=precision,
    )  # fmt: skip
    return pst_step(DICT, BANK, Path(MODEL), config, pooler="none")


def rate(trainer: ObjectiveRun, steps: int, start: int) -> tuple[float, float]:
    torch.cuda.synchronize()
    began = time.perf_counter()
    for step in range(start, start + steps):
        trainer.step = step
        trainer.train_step(trainer.schedule.batch(step))
    torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    return steps * trainer.config.batch_size / seconds, seconds / steps * 1000


for item in sys.argv[3:]:
    precision, batch, *flag = item.split(":")
    trainer = make(precision, int(batch), int(batch) * 80)
    if flag == ["compile"]:
        began = time.perf_counter()
        trainer.net = torch.compile(trainer.net, dynamic=True)
    for step in range(5):
        trainer.train_step(trainer.schedule.batch(step))
    per_s, ms = rate(trainer, 40, 8)
    print(f"== {item}: {per_s:,.0f} defs/s, {ms:.1f} ms/step", flush=True)
    if os.environ.get("PROFILE") and not flag and int(batch) == 256:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            rate(trainer, 5, 50)
        table = prof.key_averages()
        print(table.table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=60))
        print(table.table(sort_by="self_cpu_time_total", row_limit=10, max_name_column_width=60))
    del trainer
    torch.cuda.empty_cache()
