"""Scale (issue 29): building a bank and training against it for dictionaries of 0.1, 1 and 2 million entries,
in 1, 2 and 4 gloo processes.

    python bench/scale.py --out runs/scale                # the tables of docs/speed.md ("Scale")
    python bench/scale.py --quick --out /tmp/scale-smoke  # smoke run: 2,000 entries, 32 dims, 1 and 2 processes

For each size: a synthetic dictionary (random entry strings, each with one definition of 3-8 words of a small
vocabulary, all in the train split), its bank built by ``defsent embed-entries`` in one process with a random
1-layer BERT of 384 dims (tests/conftest.py's ``build_tiny_bert``; a tiny model keeps the encoding short, so the
figures are the bank's and the pipeline's, not a real encoder's), then ``defsent train`` against it for a few
steps of batch 32 in 1, 2 and 4 torchrun processes (gloo, ``--device cpu``, one thread each) with the bank
sharded (``--shard-bank``; one process holds it whole), and once in 2 processes replicated
(``--no-shard-bank``) at the largest size for comparison.

Each command runs as ``bench/scale.py --worker DIR -- ARGS``: the defsent command line in-process, writing the
process's peak RSS (``getrusage``) to DIR when it exits, so every torchrun rank reports its own. Times are wall
times of the whole command (start-up and model loading included) and, for training, the median time of the
logged steps after the first (``train_log.jsonl``). Raw figures: OUT/results.json; the tables: OUT/table.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SIZES, PROCESSES, STEPS, BATCH = (100_000, 1_000_000, 2_000_000), (1, 2, 4), 6, 32
QUICK_SIZES, QUICK_PROCESSES, QUICK_STEPS = (2_000,), (1, 2), 3


def worker(folder: Path, argv: list[str]) -> None:
    """Run ``defsent ARGV`` in this process and record its peak RSS in ``folder`` at exit (rank by rank)."""
    import atexit
    import resource

    rank = os.environ.get("RANK", "0")

    def record() -> None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        (folder / f"peak-{rank}.json").write_text(json.dumps({"rank": int(rank), "peak_mib": peak / 1024}))

    atexit.register(record)
    sys.path.insert(0, str(REPO))
    from defsent_cli.cli import run

    sys.argv = ["defsent", *argv]
    run()


def dictionary(path: Path, entries: int, seed: int = 0) -> None:
    """``entries`` random entry strings, each with one definition of 3-8 words of the tiny model's vocabulary."""
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import WORDS

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = np.array(WORDS)
    with open(path, "w", encoding="utf-8") as fh:
        for start in range(0, entries, 100_000):
            n = min(100_000, entries - start)
            names = rng.choice(letters, size=(n, 8))
            lengths = rng.integers(3, 9, size=n)
            picks = rng.choice(words, size=(n, 8))
            for i in range(n):
                entry = f"{''.join(names[i])} {start + i:x}"  # random letters, made unique by the row
                definition = " ".join(picks[i, : lengths[i]])
                fh.write(json.dumps({"entry": entry, "definitions": [definition]}) + "\n")


def run(cmd: list, folder: Path, processes: int = 1) -> dict:
    """Run ``defsent CMD`` through a worker (under torchrun with several processes); wall time and peaks."""
    folder.mkdir(parents=True, exist_ok=True)
    inner = [str(Path(__file__).resolve()), "--worker", str(folder), "--", *map(str, cmd)]
    if processes > 1:
        launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]
        full = [*launch, *inner]
    else:
        full = [sys.executable, *inner]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DEFSENT_NO_PROGRESS": "1", "PYTHONPATH": str(REPO)}
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(name, None)
    start = time.perf_counter()
    done = subprocess.run(full, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(full)}\n{done.stderr[-3000:]}")
    peaks = [json.loads(p.read_text())["peak_mib"] for p in sorted(folder.glob("peak-*.json"))]
    return {"seconds": round(seconds, 1), "peak_mib": [round(p) for p in peaks]}


def step_seconds(checkpoint: Path) -> float:
    """The median time of the logged training steps after the first (which pays for warming up)."""
    elapsed = [json.loads(line)["elapsed"] for line in (checkpoint / "train_log.jsonl").read_text().splitlines()]
    elapsed = [e for e in elapsed if isinstance(e, float | int)]
    return statistics.median(np.diff(elapsed[1:]).tolist()) if len(elapsed) > 2 else float(elapsed[-1])


def measure(args) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import build_tiny_bert

    sizes, processes, steps = (QUICK_SIZES, QUICK_PROCESSES, QUICK_STEPS) if args.quick else (SIZES, PROCESSES, STEPS)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    model = out / "model"
    if not (model / "config.json").exists():
        build_tiny_bert(model, hidden=args.dim, layers=1 if args.dim > 32 else 2, heads=max(1, args.dim // 64))
    results = {"dim": args.dim, "steps": steps, "batch": BATCH, "cores": os.cpu_count(), "note": args.note}
    results.update(banks=[], training=[])
    for entries in sizes:
        name = f"{entries // 1000}k"
        source = out / f"dict-{name}.jsonl"
        if not source.exists():
            dictionary(source, entries)
        bank = out / f"bank-{name}.h5"
        if bank.exists():
            bank.unlink()
        built = run(
            ["embed-entries", source, "-m", model, "-o", bank, "--device", "cpu", "-b", "64"], out / f"e-{name}"
        )
        results["banks"].append({"entries": entries, "bank_mib": round(bank.stat().st_size / 2**20), **built})
        print(f"bank {name}: {built}", file=sys.stderr, flush=True)
        runs = [(n, n > 1) for n in processes] + ([(2, False)] if entries == sizes[-1] and not args.quick else [])
        for n, sharded in runs:
            tag = f"t-{name}-{n}{'' if sharded or n == 1 else '-replicated'}"
            checkpoint = out / tag / "ckpt"
            cmd = ["train", source, "--bank", bank, "-m", model, "-o", checkpoint, "--device", "cpu", "--force"]
            cmd += ["--batch-size", BATCH, "--max-steps", steps, "--limit", steps * BATCH, "--log-every", "1"]
            cmd += ["--save-every", "0"]
            if n > 1:
                cmd.append("--shard-bank" if sharded else "--no-shard-bank")
            trained = run(cmd, out / tag, n)
            row = {"entries": entries, "processes": n, "sharded": sharded and n > 1, **trained}
            row["step_seconds"] = round(step_seconds(checkpoint), 3)
            results["training"].append(row)
            print(f"train {tag}: {row}", file=sys.stderr, flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def table(results: dict) -> str:
    dim = results["dim"]
    lines = [
        f"Bank rows of {dim} float32 dims; {results['cores']} cores{results.get('note', '')}; one thread per process.",
        "",
        "| entries | bank file (MiB) | `embed-entries` wall s | `embed-entries` peak RSS (MiB) |",
        "|---|---|---|---|",
    ]
    for bank in results["banks"]:
        lines.append(f"| {bank['entries']:,} | {bank['bank_mib']:,} | {bank['seconds']:,} | {bank['peak_mib'][0]:,} |")
    lines += [
        "",
        f"| entries | processes | bank | step s (batch {results['batch']}, median) | peak RSS per rank (MiB) | "
        "`train` wall s |",
        "|---|---|---|---|---|---|",
    ]
    for row in results["training"]:
        held = "whole" if row["processes"] == 1 else ("sharded" if row["sharded"] else "replicated")
        peaks = ", ".join(f"{p:,}" for p in row["peak_mib"])
        lines.append(
            f"| {row['entries']:,} | {row['processes']} | {held} | {row['step_seconds']} | {peaks} | {row['seconds']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        folder, rest = Path(sys.argv[2]), sys.argv[3:]
        worker(folder, rest[1:] if rest[:1] == ["--"] else rest)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for the dictionaries, banks, runs, tables")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2,000 entries, 32 dims, 1 and 2 processes")
    parser.add_argument("--dim", type=int, default=None, help="model and bank width (default 384; --quick: 32)")
    parser.add_argument("--note", default="", help="said of the machine in the table, e.g. ' shared with a job'")
    args = parser.parse_args()
    args.dim = args.dim or (32 if args.quick else 384)
    text = table(measure(args))
    (args.out / "table.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
