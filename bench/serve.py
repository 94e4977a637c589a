"""Load on ``defsent serve`` over loopback: throughput and p50/p99 latency of POST /v1/embeddings at concurrency
1, 8 and 64, with one-sentence and 32-sentence requests. Every loop is bounded in requests and in seconds.

    python bench/serve.py [-m MODEL] [--runtime auto|torch|onnx] [--seconds 10] [--requests 2000]

It starts the server itself (a free port on 127.0.0.1), waits for /health, runs each cell, prints a Markdown table
on stdout and stops the server. Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

SENTENCES = [
    "A man is playing a guitar.",
    "A woman is slicing an onion in the kitchen.",
    "Two dogs run across a grassy field.",
    "The committee postponed its decision until next week.",
    "a pot for boiling water to make tea",
    "a baby pig",
    "Someone is riding a horse along the beach at sunset.",
    "The stock market fell sharply after the announcement.",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_cell(port: int, concurrency: int, per_request: int, seconds: float, max_requests: int) -> dict:
    latencies: list[float] = []
    lock, errors, sent = threading.Lock(), [0], [0]
    deadline = time.perf_counter() + seconds

    def worker(seed: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        n = seed
        while time.perf_counter() < deadline:
            with lock:
                if sent[0] >= max_requests:
                    break
                sent[0] += 1
            texts = [SENTENCES[(n + i) % len(SENTENCES)] + f" #{n}" for i in range(per_request)]
            n += concurrency
            body = json.dumps({"input": texts, "model": "bench"})
            start = time.perf_counter()
            try:
                conn.request("POST", "/v1/embeddings", body, {"Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except OSError:
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            with lock:
                if ok:
                    latencies.append(time.perf_counter() - start)
                else:
                    errors[0] += 1
        conn.close()

    began = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
    elapsed = time.perf_counter() - began
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")  # noqa: E731
    return {
        "concurrency": concurrency,
        "per_request": per_request,
        "requests": len(latencies),
        "errors": errors[0],
        "req_s": len(latencies) / elapsed,
        "sent_s": len(latencies) * per_request / elapsed,
        "p50_ms": 1000 * pick(0.5),
        "p99_ms": 1000 * pick(0.99),
        "mean_ms": 1000 * statistics.fmean(latencies) if latencies else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("--runtime", default="auto")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--sizes", default="1,32")
    args = parser.parse_args()
    port = free_port()
    command = [sys.executable, "-m", "defsent_cli", "serve", "--port", str(port), "--runtime", args.runtime]
    command += ["--precision", args.precision, "-q"] + (["-m", args.model] if args.model else [])
    log = open(Path("/tmp") / f"bench-serve-{port}.log", "wb")
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
    try:
        for _ in range(3000):  # up to 300 s: an ONNX export on first use
            if server.poll() is not None:
                sys.exit(f"the server exited with {server.returncode}; see {log.name}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/health")
                health = json.loads(conn.getresponse().read())
                break
            except OSError:
                time.sleep(0.1)
        else:
            sys.exit("the server did not start in 300 s")
        run_cell(port, 4, 1, 2.0, 200)  # warm-up
        print(f"model {health['model']}, runtime {args.runtime}/{args.precision}, {args.seconds:g} s per cell")
        print("| concurrency | sentences/request | requests | errors | requests/s | sentences/s | p50 ms | p99 ms |")
        print("|---|---|---|---|---|---|---|---|")
        for size in map(int, args.sizes.split(",")):
            for concurrency in map(int, args.concurrency.split(",")):
                r = run_cell(port, concurrency, size, args.seconds, args.requests)
                print(f"| {concurrency} | {size} | {r['requests']} | {r['errors']} | {r['req_s']:.1f} | "
                      f"{r['sent_s']:.1f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} |", flush=True)  # fmt: skip
    finally:
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
