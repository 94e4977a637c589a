"""How the reverse dictionary's answer time grows with its bank (issue 78 item 5): ``POST /v1/lookup`` as the page
sends it, one request at a time, on banks of 20,000 WordNet entries, all 147,306 of WordNet and all of GCIDE.

    DEFSENT_DATA=../shared/data python bench/lookup.py [--requests 100] [--work /tmp/bench-lookup]

The dictionaries are built by ``defsent build-dict`` (WordNet from ``$DEFSENT_DATA/wordnet``, its first 20,000
entries for the small bank; GCIDE from ``/usr/share/dictd/gcide``, ``apt-get install dict-gcide``), with their
parts of speech. The banks hold those dictionaries' real entries, definition counts and parts of speech, and
*random* vectors (each distinct definition a seeded Gaussian vector, each entry the mean of its definitions', so
synonyms share a row as in a real bank): the time to score, filter, group and decorate the rows does not depend on
what the vectors mean, and encoding 200k definitions twice over is not what is measured. The server is the real
one (``defsent serve -m all-MiniLM-L6-v2 --bank BANK`` on a free loopback port, its default runtime); each query is
encoded by the model as a user's is. Per bank and per kind of query (a description; with ``pos:noun``; a pattern
alone; a description with a pattern): p50 and p99 over ``--requests`` requests, after a warm-up, and the
server's resident memory. Every loop is bounded; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import data_root, minilm_path  # noqa: E402
from bench.serve import free_port, rss_mib, stop, wait_healthy  # noqa: E402

QUERIES = {
    "description": ["a baby pig", "the day after today", "someone who takes over a plane by force", "a shooting star"],
    "description pos:noun": ["a baby pig pos:noun", "the day after today pos:noun", "a shooting star pos:noun"],
    "pattern alone": ["pig*", "????let", "*ness", "un*able"],
    "description:pattern": ["a baby pig:p*", "a shooting star:m*", "feeling very happy:?????"],
}


def defsent(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "defsent_cli", *args, "-q"], check=True)


def dictionaries(work: Path) -> dict[str, Path]:
    wordnet, gcide = work / "wordnet.jsonl", work / "gcide.jsonl"
    if not wordnet.exists():
        defsent("build-dict", "--wordnet", str(data_root() / "wordnet"), "-o", str(wordnet))
    small = work / "wordnet-20k.jsonl"
    if not small.exists():
        with wordnet.open(encoding="utf-8") as source:
            small.write_text("".join(itertools.islice(source, 20000)), encoding="utf-8")
    if not gcide.exists():
        defsent("build-dict", "/usr/share/dictd/gcide.index", "-o", str(gcide))
    return {"WordNet 20k": small, "WordNet": wordnet, "GCIDE": gcide}


def random_bank(dictionary: Path, output: Path, dim: int = 384) -> int:
    """A bank of ``dictionary``'s entries, counts and parts of speech with seeded random vectors (see above)."""
    import numpy as np

    from defsent_cli.banks.entry_bank import bank_parts
    from defsent_cli.formats.bank import BANK_FORMAT, bank_output
    from defsent_cli.formats.dictionary import SPLITS, bank_size
    from defsent_cli.io import sha256_file

    if output.exists():
        output.unlink()
    size = bank_size(dictionary, SPLITS)
    rng = np.random.default_rng(0)
    with bank_output(output, size.rows, dim, size.entry_bytes) as writer:
        for part in bank_parts(dictionary, SPLITS, 50000, unique=False):
            texts = rng.standard_normal((len(part.definitions.texts), dim)).astype(np.float32)
            sums = np.zeros((len(part.entries), dim), dtype=np.float64)
            counts = np.zeros(len(part.entries), dtype=np.int64)
            np.add.at(sums, part.definitions.rows, texts[part.definitions.text_of])
            np.add.at(counts, part.definitions.rows, 1)
            writer.write(part.first, part.entries, sums / np.maximum(counts, 1)[:, None], counts, part.pos)
        writer.attrs.update(
            {
                "format": BANK_FORMAT,
                "kind": "AC",
                "pooling": "cls",
                "encoder": str(Path(minilm_path()).resolve()),
                "dictionary": str(dictionary),
                "dictionary_sha256": sha256_file(dictionary),
                "splits": ",".join(SPLITS),
                "max_length": 256,
                "transform": "none",
                "created": "bench/lookup.py (random vectors)",
            }
        )
    return size.rows


def post(port: int, body: dict) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.perf_counter()
    conn.request("POST", "/v1/lookup", json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    payload = response.read()
    elapsed = time.perf_counter() - start
    conn.close()
    if response.status != 200:
        sys.exit(f"/v1/lookup answered {response.status}: {payload[:300]!r}")
    return elapsed


def measure(bank: Path, rows: int, label: str, requests: int) -> list[str]:
    port = free_port()
    log = Path("/tmp") / f"bench-lookup-{port}.log"
    command = [sys.executable, "-m", "defsent_cli", "serve", "-m", minilm_path(), "--bank", str(bank)]
    server = subprocess.Popen(
        command + ["--port", str(port), "-q"], stdout=subprocess.DEVNULL, stderr=open(log, "wb"), env=os.environ
    )
    lines = []
    try:
        started = time.perf_counter()
        wait_healthy(server, port, str(log))
        ready = time.perf_counter() - started
        for kind, queries in QUERIES.items():
            for query in queries:  # warm-up
                post(port, {"query": [query], "k": 10})
            times = [post(port, {"query": [queries[n % len(queries)]], "k": 10}) for n in range(requests)]
            ms = sorted(1000 * t for t in times)
            p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
            lines.append(
                f"| {label} | {rows:,} | {kind} | {statistics.median(ms):.1f} | {p99:.1f} | {ready:.1f} | "
                f"{rss_mib(server.pid):,.0f} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
    finally:
        stop(server)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100, help="requests per bank and kind of query")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-lookup"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print("| bank | entries | query | p50 ms | p99 ms | server ready s | server RSS MiB |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for label, dictionary in dictionaries(args.work).items():
        bank = args.work / f"{dictionary.stem}.h5"
        rows = random_bank(dictionary, bank)
        print("\n".join(measure(bank, rows, label, args.requests)), flush=True)


if __name__ == "__main__":
    main()
