"""Load on ``defsent serve`` over loopback: throughput and p50/p99 latency of POST /v1/embeddings at concurrency
1, 8 and 64, with one-sentence and 32-sentence requests. Every loop is bounded in requests and in seconds.

    python bench/serve.py [-m MODEL] [--runtime auto|torch|onnx] [--seconds 10] [--requests 2000]
    python bench/serve.py --infinity .venv-infinity/bin/infinity_emb --infinity-engines torch,optimum
    python bench/serve.py --sigterm 20          # SIGTERM under load at concurrency 64: every request counted
    python bench/serve.py --memory 100000       # the server's memory over 100k requests
    python bench/serve.py --int8-per-batch --rounds 2   # today's int8 against the per-batch int8 of before issue 80

It starts the server itself (a free port on 127.0.0.1), waits for /health, runs each cell, prints a Markdown table
on stdout and stops the server. With ``--infinity BIN`` the same cells then run against infinity-emb (``BIN v2
--model-id FOLDER --engine E --device cpu``, its own virtual environment: it pins other torch and transformers
releases) serving the same model folder, one engine after another, in the same run. Nothing leaves the machine.

With ``--int8-per-batch`` (the bundled model, default runtime: int8 on a CPU) the server runs twice per round,
alternating: first on the int8 graph defsent made before issue 80 (ONNX Runtime's ``quantize_dynamic``, one
activation scale per batch: a text's vector moved with the other requests batched with it), put where the server
looks for its graph in a fresh cache of its own (``DEFSENT_CACHE``), then on today's graph (each token its own
scale), exported into another fresh cache; ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
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


def run_cell(
    port: int, concurrency: int, per_request: int, seconds: float, max_requests: int, route: str = "/v1/embeddings"
) -> dict:
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
                conn.request("POST", route, body, {"Content-Type": "application/json"})
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


def wait_healthy(server: subprocess.Popen, port: int, log: str, path: str = "/health") -> dict:
    for _ in range(3000):  # up to 300 s: an ONNX export on first use
        if server.poll() is not None:
            sys.exit(f"the server exited with {server.returncode}; see {log}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            response = conn.getresponse()
            if response.status == 200:
                return json.loads(response.read() or b"{}")
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit("the server did not start in 300 s")


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()


def table(port: int, args, route: str, label: str) -> None:
    run_cell(port, 4, 1, 2.0, 200, route)  # warm-up
    print(f"\n{label}, {args.seconds:g} s per cell")
    print("| concurrency | sentences/request | requests | errors | requests/s | sentences/s | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for size in map(int, args.sizes.split(",")):
        for concurrency in map(int, args.concurrency.split(",")):
            r = run_cell(port, concurrency, size, args.seconds, args.requests, route)
            print(f"| {concurrency} | {size} | {r['requests']} | {r['errors']} | {r['req_s']:.1f} | "
                  f"{r['sent_s']:.1f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} |", flush=True)  # fmt: skip


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def memory(port: int, pid: int, total: int) -> None:
    """``total`` one-sentence requests at concurrency 8, the server's resident memory every tenth of the way."""
    step = max(1, total // 10)
    print(f"\nmemory over {total:,} one-sentence requests at concurrency 8 (server RSS, MiB)")
    print("| requests | RSS MiB | errors |")
    print("|---|---|---|")
    print(f"| 0 | {rss_mib(pid):.1f} | 0 |", flush=True)
    done = 0
    while done < total:
        r = run_cell(port, 8, 1, 3600.0, min(step, total - done))
        done += r["requests"] + r["errors"]
        print(f"| {done:,} | {rss_mib(pid):.1f} | {r['errors']} |", flush=True)


def sigterm(server: subprocess.Popen, port: int, seconds: float) -> None:
    """Load at concurrency 64 (one-sentence requests, each with its own number); SIGTERM after ``seconds`` / 2;
    every request accounted for: answered (200, one vector), refused (never accepted: the listener was closed),
    lost (sent, no answer), and answers that do not match their request."""
    counts = {"sent": 0, "answered": 0, "refused": 0, "lost": 0, "wrong": 0, "other_status": 0}
    lock, stop_at = threading.Lock(), time.perf_counter() + seconds
    gone = threading.Event()

    def worker(seed: int) -> None:
        n = seed
        conn = None
        while time.perf_counter() < stop_at and not gone.is_set():
            body = json.dumps({"input": [f"request number {n}"], "model": "bench"})
            n += 64
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    conn.connect()
            except OSError:
                with lock:
                    counts["refused"] += 1
                gone.set()  # the listener is closed: nothing more is accepted
                return
            try:
                conn.request("POST", "/v1/embeddings", body, {"Content-Type": "application/json"})
                with lock:
                    counts["sent"] += 1
                response = conn.getresponse()
                data = response.read()
            except OSError:
                with lock:
                    counts["lost"] += 1  # written, or half-written, and no answer came
                conn.close()
                conn = None
                continue
            with lock:
                if response.status == 200:
                    rows = json.loads(data)["data"]
                    counts["answered" if len(rows) == 1 and rows[0]["index"] == 0 else "wrong"] += 1
                else:
                    counts["other_status"] += 1
            if response.getheader("connection", "").lower() == "close":
                conn.close()
                conn = None

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(64)]
    for t in threads:
        t.start()
    time.sleep(seconds / 2)
    signalled = time.perf_counter()
    server.send_signal(15)
    for t in threads:
        t.join(seconds + 120)
    code = server.wait(120)
    print(f"\nSIGTERM under load (concurrency 64, one-sentence requests; signal after {seconds / 2:g} s)")
    print(f"server exit code {code}, {time.perf_counter() - signalled:.1f} s from the signal to the last client")
    print("| sent | answered 200 | other status | lost (sent, no answer) | wrong answer | refused connections |")
    print("|---|---|---|---|---|---|")
    print(f"| {counts['sent']} | {counts['answered']} | {counts['other_status']} | {counts['lost']} | "
          f"{counts['wrong']} | {counts['refused']} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("--runtime", default="auto")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--sizes", default="1,32")
    parser.add_argument("--infinity", help="infinity_emb's executable (its own venv): the same cells against it")
    parser.add_argument("--infinity-engines", default="torch,optimum")
    parser.add_argument(
        "--infinity-model", help="the folder infinity serves (default -m; optimum needs onnx/model.onnx)"
    )
    parser.add_argument("--sigterm", type=float, help="SIGTERM under load after half these seconds, then stop")
    parser.add_argument("--memory", type=int, help="this many requests, the server's RSS every tenth of the way")
    parser.add_argument(
        "--int8-per-batch", action="store_true", help="also the int8 graph of before issue 80, alternating with today's"
    )
    parser.add_argument("--rounds", type=int, default=1, help="with --int8-per-batch: how many times each")
    args = parser.parse_args()
    if not args.int8_per_batch:
        serve_defsent(args, "", {})
    else:
        if args.model:
            sys.exit("--int8-per-batch serves the bundled model (its graphs live in the user's cache): leave out -m")
        caches = int8_caches()
        for _ in range(args.rounds):
            for label, cache in caches.items():
                serve_defsent(args, f", int8 {label}", {"DEFSENT_CACHE": str(cache)})
    if not args.infinity:
        return
    folder = args.infinity_model or args.model or minilm_folder()
    for engine in args.infinity_engines.split(","):
        port = free_port()
        log = Path("/tmp") / f"bench-infinity-{engine}-{port}.log"
        command = [args.infinity, "v2", "--model-id", str(folder), "--served-model-name", "bench", "--engine", engine,
                   "--device", "cpu", "--port", str(port), "--host", "127.0.0.1"]  # fmt: skip
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
        try:
            wait_healthy(server, port, str(log))
            table(port, args, "/embeddings", f"infinity-emb, engine {engine}, {folder}")
        finally:
            stop(server)


def serve_defsent(args, label: str, env: dict) -> None:
    """Start ``defsent serve`` (``env`` added to the environment), run the cells (or --sigterm, --memory), stop it."""
    port = free_port()
    command = [sys.executable, "-m", "defsent_cli", "serve", "--port", str(port), "--runtime", args.runtime]
    command += ["--precision", args.precision, "-q"] + (["-m", args.model] if args.model else [])
    log = Path("/tmp") / f"bench-serve-{port}.log"
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(log, "wb"), env={**os.environ, **env})
    try:
        health = wait_healthy(server, port, str(log))
        if args.sigterm:
            run_cell(port, 4, 1, 2.0, 200)  # warm-up
            sigterm(server, port, args.sigterm)
            return
        if args.memory:
            run_cell(port, 4, 1, 2.0, 200)
            memory(port, server.pid, args.memory)
            return
        title = f"defsent serve: model {health['model']}, runtime {args.runtime}/{args.precision}{label}"
        table(port, args, "/v1/embeddings", title)
    finally:
        stop(server)


def int8_caches() -> dict[str, Path]:
    """Two fresh graph caches for the bundled model (under bench/out/serve-int8/): ``per batch`` holds the int8
    graph of before issue 80 (``bench.common.int8_per_batch`` of the fp32 graph) under the name the server looks
    for, ``per token`` is empty (the server exports today's graph into it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.common import REPO, int8_per_batch, minilm_path
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.onnx_runtime import cache_candidates, graph_for, weights_key

    root = REPO / "bench" / "out" / "serve-int8"
    shutil.rmtree(root, ignore_errors=True)
    caches = {"per batch": root / "per-batch", "per token": root / "per-token"}
    before = os.environ.get("DEFSENT_CACHE")
    os.environ["DEFSENT_CACHE"] = str(caches["per batch"])
    try:
        loaded = load_model(minilm_path(), "cpu")
        folder = cache_candidates(loaded)[0]  # the user's cache: the bundled model's folder is pip's
        fp32, _ = graph_for(loaded, "fp32")
        int8_per_batch(fp32, folder / f"defsent-int8-{weights_key(loaded, 'int8')}.onnx")
    finally:
        if before is None:
            del os.environ["DEFSENT_CACHE"]
        else:
            os.environ["DEFSENT_CACHE"] = before
    return caches


def minilm_folder() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.common import minilm_path

    return minilm_path()


if __name__ == "__main__":
    main()
