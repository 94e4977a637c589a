"""Where ``defsent serve``'s time goes under load: the server runs under py-spy (``pip install py-spy``; samples of
every Python thread that is on a CPU, native frames of the model left to the Python frame that called them), the
load client of ``bench/serve.py`` sends one cell, and the samples are summed by what they were doing.

    python bench/profile_serve.py --precision int8 --cell 64x32 --seconds 10
    python bench/profile_serve.py --root ../before --precision int8 --cell 64x1   # another checkout's server

Prints, for the cell, requests/s and sentences/s, then the share of the samples in each part of the request's path
(the model, tokenising, writing the response, parsing HTTP, the framework, the batcher, ...), and the functions
that took most. ``--keep FILE`` keeps py-spy's raw stacks (one line per stack, its count last).
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.http_load import run_cell  # noqa: E402
from bench.serve import bench_texts, free_port, request_bodies, wait_healthy  # noqa: E402

#: (part, substrings of a frame that put a sample in it): the first part whose substring any frame of the
#: stack holds, searched from the innermost frame out
PARTS = [
    ("model: ONNX Runtime", ("onnxruntime",)),
    ("model: torch", ("torch/nn/modules", "transformers/models", "torch/_tensor")),
    ("pooling, normalising, cutting", ("pooling.py", "linalg.py", "dims.py", "postprocess")),
    ("tokenising", ("tokenizers", "tokenization_utils", "tokenize.py")),
    ("padding and batching the model's input", ("pad_batch", "length_batches")),
    (
        "writing the response (JSON, base64)",
        (
            "jsonable_encoder",
            "json/encoder",
            "orjson",
            "b64encode",
            "tolist",
            "render (starlette",
            "json_response",
            "serialize_response",
        ),
    ),  # fmt: skip
    ("reading the request (JSON, checks)", ("read_json", "json/decoder", "texts_of", "read_body")),
    ("HTTP parsing and sockets", ("h11", "httptools", "protocols/http", "asyncio/selector_events", "uvloop")),
    ("framework (routing, middleware)", ("starlette", "fastapi", "anyio")),
    ("batcher and event loop", ("batcher.py", "asyncio", "concurrent/futures", "threading.py")),
]


def part_of(stack: str) -> str:
    frames = stack.split(";")
    for frame in reversed(frames):
        for part, needles in PARTS:
            if any(needle in frame for needle in needles):
                return part
    return "other"


def leaf(stack: str) -> str:
    return stack.split(";")[-1].rsplit(" (", 1)[0] + " (" + stack.split(";")[-1].rsplit("(", 1)[-1]


def summarise(raw: Path, top: int) -> None:
    parts: collections.Counter = collections.Counter()
    leaves: collections.Counter = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        parts[part_of(stack)] += n
        leaves[leaf(stack)] += n
    print(f"\n{total:,} samples of threads on a CPU")
    print("| part | share of samples |")
    print("|---|---|")
    for part, n in parts.most_common():
        print(f"| {part} | {100 * n / total:.1f}% |")
    print(f"\ntop {top} functions (innermost Python frame)")
    for name, n in leaves.most_common(top):
        print(f"  {100 * n / total:5.1f}%  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent), help="the checkout to serve")
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--cell", default="64x32", help="CONCURRENCYxSENTENCES")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--keep", help="keep py-spy's raw stacks here")
    args = parser.parse_args()
    concurrency, size = (int(n) for n in args.cell.split("x"))
    raw = Path(args.keep or tempfile.mkstemp(suffix=".txt")[1])
    port = free_port()
    spy = str(Path(sys.executable).with_name("py-spy"))
    command = [spy, "record", "--format", "raw", "-r", str(args.rate), "-o", str(raw), "--",
               sys.executable, "-m", "defsent_cli", "serve", "--port", str(port), "--precision", args.precision, "-q"]  # fmt: skip
    log = Path(tempfile.gettempdir()) / f"profile-serve-{port}.log"
    profiler = subprocess.Popen(command, cwd=args.root, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    bodies = request_bodies(bench_texts(), size, "/v1/embeddings")
    try:
        wait_healthy(profiler, port, str(log))
        run_cell(port, bodies, 4, 2.0, 200)  # warm-up (in the profile too: short beside the cell)
        r = run_cell(port, bodies, concurrency, args.seconds, 100_000)
    finally:
        children = subprocess.run(["pgrep", "-P", str(profiler.pid)], capture_output=True, text=True).stdout.split()
        for pid in children:
            os.kill(int(pid), signal.SIGTERM)
        deadline = time.monotonic() + 60
        while profiler.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if profiler.poll() is None:
            profiler.kill()
    print(f"{args.root}: precision {args.precision}, c={concurrency} x{size}: {r['req_s']:.1f} requests/s, "
          f"{r['req_s'] * size:.0f} sentences/s, p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, "
          f"errors {r['errors']}, client CPU {r['client_cpu']:.2f} core (under py-spy: slower than unprofiled)")  # fmt: skip
    summarise(raw, args.top)


if __name__ == "__main__":
    main()
