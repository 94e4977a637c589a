"""The learning-rate schedule of every training run: a linear warm-up, then a linear decay to 0 or a constant rate
(transformers' linear schedule; DefSent's ``LRPolycy``), the encoder's group optionally held at 0 for a head warm-up;
and the warning for a schedule that never lets the encoder learn."""

from __future__ import annotations

import torch

from ..errors import count


def linear_factor(warmup: int, total: int, start: int = 0, decay: bool = True):
    """Linear warm-up to the peak rate, then linear decay to 0 at ``total`` (transformers' linear schedule)
    or, without ``decay``, the peak rate to the end (DefSent's ``LRPolycy``); 0 before ``start`` (the
    encoder during a head warm-up), the schedule counted from there."""

    def factor(step: int) -> float:
        if step < start:
            return 0.0
        step, span = step - start, total - start
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (span - step) / max(1, span - warmup)) if decay else 1.0

    return factor


def linear_schedule(
    optimizer: torch.optim.Optimizer, warmup: int, total: int, encoder_start: int = 0, decay: bool = True
) -> torch.optim.lr_scheduler.LambdaLR:
    """The schedule for every parameter group; the first group (the encoder) starts at ``encoder_start``."""
    factors = [linear_factor(warmup, total, decay=decay)] * len(optimizer.param_groups)
    if encoder_start:
        factors[0] = linear_factor(
            round(warmup * (total - encoder_start) / max(1, total)), total, encoder_start, decay=decay
        )
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factors)


def idle_schedule_warning(
    factor, total: int, encoder_start: int, encoder_start_option: str, warmup_ratio: float
) -> str | None:
    """What to say when the encoder's schedule ``factor`` gives it learning rate 0 at every one of ``total`` steps
    (None: it learns at some step): the linear warm-up starts at 0 (transformers' schedule), so a run of one step
    with a warm-up of one (``--max-steps 1 --warmup-ratio 0.6``), or a head warm-up as long as the run (from
    ``encoder_start``, set by ``encoder_start_option``), trains the encoder not at all."""
    start = min(encoder_start, total)
    if total > start + 1 or any(factor(step) > 0 for step in range(total)):
        return None  # from step start + 1 on the rate is above 0: something trains
    if start >= total:
        why = f"{encoder_start_option} {encoder_start} covers all {count(total, 'step')}"
    else:
        why = (
            f"the warm-up ({count(round(warmup_ratio * total), 'step')} of {count(total, 'step')}, "
            "--warmup-ratio) starts at learning rate 0"
        )
    return (
        f"the encoder trains at learning rate 0 at every step: {why}, so it comes out as it went in; raise "
        "--max-steps (or --epochs), or lower the warm-up"
    )
