"""Load on ``defsent serve`` over loopback, against infinity-emb at the same precision: throughput and p50/p99
latency of POST /v1/embeddings, one-sentence and 32-sentence requests at several concurrencies, every loop bounded
in requests and in seconds; beside each precision, what the same cores encode in-process and the quality (STS-B
test Spearman x100) of each server's vectors at that precision.

    python bench/serve.py                                            # int8, bf16 and fp32: defsent alone
    python bench/serve.py --infinity .venv-infinity/bin/infinity_emb # the same cells against infinity, same dtype
    python bench/serve.py --precisions int8 --cells 1x1,64x32 --seconds 8
    python bench/serve.py --sigterm 20          # SIGTERM under load at concurrency 64: every request counted
    python bench/serve.py --memory 100000       # the server's memory over 100k requests
    python bench/serve.py --int8-per-batch --rounds 2   # today's int8 against the per-batch int8 of before issue 80
    python bench/serve.py --search INDEX.h5 --ef-search 64 128 256   # POST /v1/search on an index, c=1 and c=8

For each precision (``--precisions``, default int8,bf16,fp32) it starts ``defsent serve --precision P`` (runtime
``auto``: int8 on ONNX Runtime, bf16 and fp32 on torch) on a free port of 127.0.0.1, waits for /health, runs the
cells (``--cells``: CONCURRENCYxSENTENCES, default the issue's 1x1,64x1,1x32,8x32,64x32), sends the STS-B test
sentences through it for their Spearman, and stops it; then the same against ``BIN v2 --model-id FOLDER --engine
torch --dtype D --device cpu`` (infinity-emb in its own virtual environment: it pins other torch and transformers
releases; D int8, bfloat16 or float32) serving the same model folder; then, with no server running, the in-process
figure: ``encode`` of the 2,758 STS-B test sentences in batches of 32 at that precision, best of 2, as
``bench/encode.py`` measures it (``--no-in-process`` skips it). The requests carry the STS-B test sentences, in
order, 1 or 32 per request (the bench's 8 short sentences when the data is not here).

The client (``bench/http_load.py``) is one thread with one event loop for every server alike; each cell says the
share of a core it used. Nothing leaves the machine.

With ``--int8-per-batch`` (the bundled model, default runtime: int8 on a CPU) the server runs twice per round,
alternating: first on the int8 graph defsent made before issue 80 (ONNX Runtime's ``quantize_dynamic``, one
activation scale per batch: a text's vector moved with the other requests batched with it), put where the server
looks for its graph in a fresh cache of its own (``DEFSENT_CACHE``), then on today's graph (each token its own
scale), exported into another fresh cache; ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.http_load import post_request, run_cell  # noqa: E402

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


#: infinity-emb's --dtype for each of defsent's precisions
INFINITY_DTYPE = {"int8": "int8", "bf16": "bfloat16", "fp32": "float32"}


def request_bodies(texts: list[str], size: int, route: str) -> list[bytes]:
    """Requests of ``size`` consecutive texts each, cycling through ``texts`` (as many as there are texts)."""
    out = []
    for start in range(0, len(texts), size):
        chunk = [texts[(start + i) % len(texts)] for i in range(size)]
        out.append(post_request(route, json.dumps({"input": chunk, "model": "bench"}).encode()))
    return out


def cells_of(spec: str) -> list[tuple[int, int]]:
    """``1x1,64x32`` -> [(1, 1), (64, 32)] (concurrency, sentences per request)."""
    return [tuple(int(n) for n in cell.split("x")) for cell in spec.split(",")]


def measure(port: int, args, route: str, texts: list[str]) -> dict[tuple[int, int], dict]:
    """Every cell against the server on ``port`` (after a warm-up), as dicts of run_cell plus sentences/s."""
    bodies = {size: request_bodies(texts, size, route) for size in {size for _, size in cells_of(args.cells)}}
    run_cell(port, bodies[min(bodies)], 4, 2.0, 200)  # warm-up
    results = {}
    for concurrency, size in cells_of(args.cells):
        r = run_cell(port, bodies[size], concurrency, args.seconds, args.requests)
        r["sent_s"] = r["req_s"] * size
        results[concurrency, size] = r
        print(f"  c={concurrency} x{size}: {r['req_s']:.1f} requests/s ({r['sent_s']:.0f} sentences/s), p50 "
              f"{r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, errors {r['errors']}, client CPU "
              f"{r['client_cpu']:.2f} core", file=sys.stderr, flush=True)  # fmt: skip
    return results


def server_vectors(port: int, route: str, texts: list[str]):
    """Every text's vector from the server, 32 per request, one request at a time (base64 where the server takes
    it, floats otherwise)."""
    import numpy as np

    rows = []
    for start in range(0, len(texts), 32):
        chunk = texts[start : start + 32]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request(
            "POST", route, json.dumps({"input": chunk, "model": "bench"}), {"Content-Type": "application/json"}
        )
        data = sorted(json.loads(conn.getresponse().read())["data"], key=lambda row: row["index"])
        conn.close()
        for row in data:
            value = row["embedding"]
            rows.append(np.frombuffer(base64.b64decode(value), "<f4") if isinstance(value, str) else np.asarray(value))
    return np.stack(rows).astype(np.float32)


def stsb_spearman(vectors) -> float:
    """STS-B test Spearman x100 of the cosine of each pair (the first half of the sentences against the second)."""
    import numpy as np
    from scipy.stats import spearmanr

    from bench.encode import stsb_gold

    gold = stsb_gold()
    n = len(gold)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return 100 * float(spearmanr(np.sum(unit[:n] * unit[n:], axis=1), gold).statistic)


def in_process(precision: str, texts: list[str]) -> float:
    """Sentences/s of ``encode`` on ``texts`` at ``precision``, batch 32, best of 2 after a warm-up, in a process of
    its own started now (no server running)."""
    script = (
        "import json, sys, time\n"
        "from bench.common import minilm_path\n"
        "from defsent_cli.encoder.encode import encode\n"
        "from defsent_cli.encoder.models import load_model\n"
        "from defsent_cli.encoder.onnx_runtime import use_runtime\n"
        "from defsent_cli.encoder.precision import choose_runtime\n"
        "texts = json.load(sys.stdin)\n"
        f"runtime, precision = choose_runtime('auto', {precision!r}, 'cpu')\n"
        "loaded = use_runtime(load_model(minilm_path(), 'cpu'), runtime, precision)\n"
        "run = lambda t: encode(t, loaded, 'mean', batch_size=32, normalize_embeddings=True, show_progress_bar=False)\n"
        "run(texts[:256])\n"
        "best = 1e9\n"
        "for _ in range(2):\n"
        "    start = time.perf_counter(); run(texts); best = min(best, time.perf_counter() - start)\n"
        "print(len(texts) / best)\n"
    )
    repo = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(texts), capture_output=True, text=True, cwd=repo, check=True
    )
    return float(done.stdout.strip().splitlines()[-1])


def report(precision: str, cells, ours: dict, theirs: dict | None, alone: float | None, quality: dict) -> None:
    """One precision's Markdown table on stdout."""
    print(f"\n### {precision}\n")
    head = "| cell | defsent | p50 / p99 ms | client CPU |"
    rule = "|---|---|---|---|"
    if theirs:
        head += " infinity | p50 / p99 ms | client CPU | ratio |"
        rule += "---|---|---|---|"
    if alone:
        head += " of in-process |"
        rule += "---|"
    print(head)
    print(rule)
    for concurrency, size in cells:
        d = ours[concurrency, size]
        unit = "requests/s" if size == 1 else "sentences/s"
        figure = (lambda r: f"{r['req_s']:.1f}") if size == 1 else (lambda r: f"{r['sent_s']:.0f}")
        line = f"| c={concurrency} x{size} ({unit}) | {figure(d)} | {d['p50_ms']:.1f} / {d['p99_ms']:.1f} | "
        line += f"{d['client_cpu']:.2f} |"
        if theirs:
            t = theirs[concurrency, size]
            ratio = d["req_s"] / t["req_s"] if t["req_s"] else float("nan")
            line += f" {figure(t)} | {t['p50_ms']:.1f} / {t['p99_ms']:.1f} | {t['client_cpu']:.2f} | {ratio:.2f}x |"
        if alone:
            line += f" {100 * d['sent_s'] / alone:.0f}% |" if size > 1 else " |"
        errors = d["errors"] + (theirs[concurrency, size]["errors"] if theirs else 0)
        print(line + (f" ({errors} errors)" if errors else ""))
    if alone:
        print(f"\nin-process encode at {precision} (STS-B test, batch 32, best of 2): {alone:.0f} sentences/s")
    for who, score in quality.items():
        print(f"STS-B test Spearman x100 of {who}'s {precision} vectors: {score:.2f}")


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
    bodies = request_bodies(SENTENCES, 1, "/v1/embeddings")
    done = 0
    while done < total:
        r = run_cell(port, bodies, 8, 3600.0, min(step, total - done))
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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("--precisions", default="int8,bf16,fp32", help="each served by both servers in turn")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--requests", type=int, default=3000, help="at most this many requests per cell")
    parser.add_argument("--cells", default="1x1,64x1,1x32,8x32,64x32", help="CONCURRENCYxSENTENCES, comma-separated")
    parser.add_argument("--infinity", help="infinity_emb's executable (its own venv): the same cells against it")
    parser.add_argument("--infinity-model", help="the folder infinity serves (default -m, else the bundled model)")
    parser.add_argument("--serve-args", default="", help="more options for defsent serve (e.g. '--max-batch 256')")
    parser.add_argument("--no-in-process", action="store_true", help="skip the in-process figure")
    parser.add_argument("--no-quality", action="store_true", help="skip the STS-B Spearman of each server's output")
    parser.add_argument("--sigterm", type=float, help="SIGTERM under load after half these seconds, then stop")
    parser.add_argument("--memory", type=int, help="this many requests, the server's RSS every tenth of the way")
    parser.add_argument(
        "--int8-per-batch", action="store_true", help="also the int8 graph of before issue 80, alternating with today's"
    )
    parser.add_argument("--rounds", type=int, default=1, help="with --int8-per-batch: how many times each")
    parser.add_argument("--search", type=Path, help="an index: POST /v1/search on it instead of /v1/embeddings")
    parser.add_argument("--ef-search", type=int, nargs="+", default=[128], help="with --search: the graph's efSearch")
    parser.add_argument("--search-cells", default="1,8", help="with --search: concurrencies, comma-separated")
    args = parser.parse_args()
    texts = bench_texts()
    if args.search:
        search_cells(args, texts)
        return
    if args.sigterm or args.memory:
        serve_defsent(args, args.precisions.split(",")[0], texts, {})
        return
    if args.int8_per_batch:
        if args.model:
            sys.exit("--int8-per-batch serves the bundled model (its graphs live in the user's cache): leave out -m")
        caches = int8_caches()
        for _ in range(args.rounds):
            for label, cache in caches.items():
                print(f"\nint8 {label}")
                report("int8", cells_of(args.cells), serve_defsent(args, "int8", texts, {}, {"DEFSENT_CACHE": str(cache)}),
                       None, None, {})  # fmt: skip
        return
    print(f"{len(texts):,} request texts; {args.seconds:g} s or {args.requests} requests per cell; client: one "
          f"thread, one event loop, keep-alive connections (bench/http_load.py)")  # fmt: skip
    for precision in args.precisions.split(","):
        quality: dict[str, float] = {}
        print(f"{precision}: defsent serve", file=sys.stderr, flush=True)
        ours = serve_defsent(args, precision, texts, quality)
        theirs = None
        if args.infinity:
            print(f"{precision}: infinity-emb", file=sys.stderr, flush=True)
            theirs = serve_infinity(args, precision, texts, quality)
        alone = None if args.no_in_process else in_process(precision, texts)
        report(precision, cells_of(args.cells), ours, theirs, alone, quality)


def bench_texts() -> list[str]:
    """The STS-B test sentences when the data is here (the quality figure needs them), else :data:`SENTENCES`."""
    from bench.common import stsb_test_sentences

    try:
        return stsb_test_sentences()
    except (SystemExit, OSError):
        return list(SENTENCES)


def cells_and_quality(port: int, args, route: str, texts: list[str], quality: dict, who: str) -> dict:
    """The cells against the server on ``port``; then, unless --no-quality (or the STS-B sentences are not here),
    ``quality[who]``: the STS-B test Spearman of its vectors."""
    results = measure(port, args, route, texts)
    if not args.no_quality and len(texts) > len(SENTENCES):
        quality[who] = stsb_spearman(server_vectors(port, route, texts))
    return results


def serve_infinity(args, precision: str, texts: list[str], quality: dict) -> dict:
    folder = args.infinity_model or args.model or minilm_folder()
    port = free_port()
    log = Path("/tmp") / f"bench-infinity-{precision}-{port}.log"
    command = [args.infinity, "v2", "--model-id", str(folder), "--served-model-name", "bench", "--engine", "torch",
               "--dtype", INFINITY_DTYPE[precision], "--device", "cpu", "--port", str(port), "--host", "127.0.0.1"]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    try:
        wait_healthy(server, port, str(log))
        return cells_and_quality(port, args, "/embeddings", texts, quality, "infinity-emb")
    finally:
        stop(server)


def defsent_serve(args, port: int, precision: str, *options: str) -> list[str]:
    """The command line of ``defsent serve`` on ``port`` at ``precision`` with ``options``, ``-m`` and
    ``--serve-args``."""
    command = [sys.executable, "-m", "defsent_cli", "serve", "--port", str(port), "--precision", precision, "-q"]
    return command + list(options) + (["-m", args.model] if args.model else []) + args.serve_args.split()


def serve_defsent(args, precision: str, texts: list[str], quality: dict, env: dict | None = None) -> dict:
    """Start ``defsent serve --precision PRECISION`` (``env`` added to the environment), run the cells (or --sigterm,
    --memory), stop it."""
    port = free_port()
    command = defsent_serve(args, port, precision)
    log = Path("/tmp") / f"bench-serve-{port}.log"
    server = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=open(log, "wb"), env={**os.environ, **(env or {})}
    )
    try:
        wait_healthy(server, port, str(log))
        if args.sigterm:
            run_cell(port, request_bodies(SENTENCES, 1, "/v1/embeddings"), 4, 2.0, 200)  # warm-up
            sigterm(server, port, args.sigterm)
            return {}
        if args.memory:
            run_cell(port, request_bodies(SENTENCES, 1, "/v1/embeddings"), 4, 2.0, 200)
            memory(port, server.pid, args.memory)
            return {}
        return cells_and_quality(port, args, "/v1/embeddings", texts, quality, "defsent")
    finally:
        stop(server)


def search_cells(args, texts: list[str]) -> None:
    """POST /v1/search on ``--search`` at each ``--search-cells`` concurrency: with the index's graph at each
    ``--ef-search``, then ``--exact``; a Markdown table on stdout."""
    bodies = [post_request("/v1/search", json.dumps({"query": text, "k": 10}).encode()) for text in texts]
    concurrencies = [int(c) for c in args.search_cells.split(",")]
    print(f"POST /v1/search on {args.search} ({args.search.stat().st_size / 2**30:.2f} GiB): one STS-B test sentence "
          f"a request, k 10; {args.seconds:g} s or {args.requests} requests per cell; the server in int8; client: one "
          "thread, one event loop (bench/http_load.py)\n")  # fmt: skip
    print("| search | concurrency | requests/s | p50 / p99 ms | server RSS MiB | server ready in | client CPU |")
    print("|---|---|---|---|---|---|---|")
    runs = [(f"HNSW, efSearch {ef}", ["--ef-search", str(ef)]) for ef in args.ef_search] + [("exact", ["--exact"])]
    for label, options in runs:
        port = free_port()
        command = defsent_serve(args, port, "int8", "--index", str(args.search), *options)
        log = Path("/tmp") / f"bench-serve-search-{port}.log"
        start = time.perf_counter()
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
        try:
            wait_healthy(server, port, str(log))
            ready = time.perf_counter() - start
            run_cell(port, bodies, 4, 2.0, 100)  # warm-up
            for concurrency in concurrencies:
                r = run_cell(port, bodies, concurrency, args.seconds, args.requests)
                errors = f" ({r['errors']} errors)" if r["errors"] else ""
                print(f"| {label} | {concurrency} | {r['req_s']:.1f} | {r['p50_ms']:.1f} / {r['p99_ms']:.1f} | "
                      f"{rss_mib(server.pid):,.0f} | {ready:.1f} s | {r['client_cpu']:.2f} |{errors}", flush=True)  # fmt: skip
        finally:
            stop(server)


def int8_caches() -> dict[str, Path]:
    """Two fresh graph caches for the bundled model (under bench/out/serve-int8/): ``per batch`` holds the int8
    graph of before issue 80 (``bench.common.int8_per_batch`` of the fp32 graph) under the name the server looks
    for, ``per token`` is empty (the server exports today's graph into it)."""
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
    from bench.common import minilm_path

    return minilm_path()


if __name__ == "__main__":
    main()
