"""Training speed: defsent's train loop against two plain loops, same model, bank and definitions.

    .venv/bin/python bench/train.py --dictionary wordnet.jsonl --bank wordnet-minilm-amp.h5 [--definitions 960]
    .venv/bin/python bench/train.py --dictionary D --bank B --precision fp32 bf16 --rounds 2 --skip-reference

On the real MiniLM and a real WordNet bank (147k entries), one process, fp32 on CPU:
- defsent:   ``pst_step`` (``training/definitions.py``) (length-bucketed batches, one batch x entries matrix in the loss);
- plain:     random batches padded to their longest item, ``F.cross_entropy(reps @ bank.T)``;
- reference: every definition padded to 141 tokens, as DefSent+'s GenerateEncoderInput.py.
All three train a fresh copy from the same seed on the same random sample of definitions
(CLS pooling, the model's pooler head, lr 2e-5, batch 32) and report definitions/s and the
mean loss of the run (the same loss curve within noise: the data order differs). ``--precision fp32 bf16``
runs defsent's loop at each (bf16: autocast with fp32 weights, as ``train --precision bf16``), alternating,
``--rounds`` times each; the plain loops stay fp32.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import minilm_path  # noqa: E402


def plain_loop(trainer, pad_to: int | None, seed: int) -> tuple[float, list[float]]:
    """A straightforward loop over random batches; returns (seconds, losses)."""
    import torch
    import torch.nn.functional as F

    from defsent_cli.encoder.head import setup_pooler
    from defsent_cli.encoder.models import load_model

    torch.manual_seed(seed)
    loaded = load_model(trainer.base_model, "cpu")
    model = loaded.model
    head = setup_pooler(model, "keep", loaded.transformer_dir, loaded.missing_keys, warn=False)
    tokenizer = loaded.tokenizer
    texts, labels = trainer.data.texts, trainer.data.labels
    bank = trainer.objective.bank
    optimizer = torch.optim.AdamW(model.parameters(), lr=trainer.config.lr, eps=1e-6, weight_decay=0.0)
    order = np.random.default_rng(seed).permutation(len(texts))
    size = trainer.config.batch_size
    steps = len(range(0, len(order), size))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, (steps - s) / steps))
    losses = []
    model.train()
    start = time.perf_counter()
    for i in range(0, len(order), size):
        index = order[i : i + size]
        if pad_to:
            enc = tokenizer(
                [texts[j] for j in index], padding="max_length", max_length=pad_to, truncation=True, return_tensors="pt"
            )
        else:
            enc = tokenizer([texts[j] for j in index], padding=True, truncation=True, return_tensors="pt")
        states = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        reps = head(states[:, 0])
        loss = F.cross_entropy(reps @ bank.T, torch.from_numpy(labels[index]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    return time.perf_counter() - start, losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dictionary", type=Path, required=True)
    parser.add_argument("--bank", type=Path, required=True)
    parser.add_argument("--definitions", type=int, default=960, help="random sample trained on by each loop")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-reference", action="store_true", help="skip the slow pad-to-141 loop")
    parser.add_argument(
        "--precision", nargs="+", default=["fp32"], choices=["fp32", "bf16"], help="defsent's loop at each, alternating"
    )
    parser.add_argument("--rounds", type=int, default=1, help="runs of defsent's loop per precision (alternating)")
    args = parser.parse_args()

    import tempfile

    import torch

    from defsent_cli.training.definitions import pst_step
    from defsent_cli.training.specs import DEFINITIONS  # DefSent+'s loop defaults

    def make(precision: str):
        config = DEFINITIONS.config(
            pooling="cls", lr=2e-5, limit=args.definitions, seed=args.seed, save_every=0, precision=precision
        )
        config.device = "cpu"
        return pst_step(args.dictionary, args.bank, Path(minilm_path()), config, pooler="keep")

    trainer = make(args.precision[0])
    n = len(trainer.data.labels)
    print(f"model: all-MiniLM-L6-v2, torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(
        f"bank: {args.bank} ({trainer.objective.n_bank:,} entries x {trainer.objective.bank.shape[1]}), {n} definitions, batch 32"
    )
    lengths = np.asarray([len(t) for t in trainer.data.token_ids])
    print(f"definition tokens: mean {lengths.mean():.1f}, max {lengths.max()}")

    # Warm-up, untimed: the first steps of a process pay for thread-pool start-up, the allocator and
    # the bank's first pass from memory; without it the loop that runs first is penalised.
    warm_config = DEFINITIONS.config(pooling="cls", lr=2e-5, limit=64, seed=args.seed, save_every=0)
    warm_config.device = "cpu"
    warm = pst_step(args.dictionary, args.bank, Path(minilm_path()), warm_config, pooler="keep")
    with tempfile.TemporaryDirectory() as work:
        warm.run(Path(work), show_progress=False)
    plain_loop(warm, None, args.seed)
    del warm

    results: dict[str, tuple[float, list[float]]] = {}
    for round_ in range(args.rounds):
        for precision in args.precision:
            run = trainer if round_ == 0 and precision == args.precision[0] else make(precision)
            with tempfile.TemporaryDirectory() as work:
                start = time.perf_counter()
                run.run(Path(work), show_progress=False)
                seconds = time.perf_counter() - start
            name = f"defsent {precision}" if len(args.precision) > 1 else "defsent"
            best = results.get(name)
            if best is None or seconds < best[0]:  # the best of the rounds
                results[name] = (seconds, [row["loss"] for row in run.log])
    results["plain"] = plain_loop(trainer, None, args.seed)
    if not args.skip_reference:
        results["reference"] = plain_loop(trainer, 141, args.seed)

    base = n / next(iter(results.values()))[0]
    print(f"{'loop':<10} {'defs/s':>8} {'defsent x':>10} {'mean loss':>10}")
    for name, (seconds, losses) in results.items():
        rate = n / seconds
        print(f"{name:<10} {rate:8.1f} {base / rate:10.2f} {np.mean(losses):10.4f}")


if __name__ == "__main__":
    main()
