"""What a server can reach on 32-sentence requests, in process: the STS-B test sentences encoded as one sorted
stream (``bench/serve.py``'s in-process figure) against the same sentences as the server gets them, 32 at a time in
order, each request its own batch (issue 81's c=1 x32 cell, below 80% of the first figure at every precision).

    .venv/bin/python bench/request_batches.py [--precisions int8 bf16 fp32]

For each precision (runtime ``auto``: int8 on ONNX Runtime, bf16 and fp32 on torch), best of 2 after a warm-up,
sentences/s of:

- ``one stream``: ``encode`` of all 2,758 sentences, batch 32: sorted by length first, so a batch pads little;
- ``each request, split``: each 32-sentence request tokenised, then ``encode_ids`` with ``spread`` (the server's
  path: a batch smaller than the workers' batches is split, one part per worker);
- ``each request, whole``: the same, one batch of 32 on torch's own threads (``spread`` off);

and the tokenising of one 32-sentence request (the server does it on its measuring thread, beside the model).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import minilm_path, stsb_test_sentences  # noqa: E402


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--precisions", nargs="+", default=["int8", "bf16", "fp32"])
    parser.add_argument("--request", type=int, default=32, help="sentences a request")
    args = parser.parse_args()
    texts = stsb_test_sentences()
    requests = [texts[i : i + args.request] for i in range(0, len(texts), args.request)]
    print(f"{len(texts):,} STS-B test sentences; requests of {args.request}; sentences/s, best of 2\n")
    print("| precision | one stream | each request, split | each request, whole | tokenising a request |")
    print("|---|---|---|---|---|")
    for precision in args.precisions:
        row(precision, texts, requests)


def row(precision: str, texts: list[str], requests: list[list[str]]) -> None:
    """One precision's line of the table."""
    from defsent_cli.encoder.encode import encode, encode_ids
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.onnx_runtime import use_runtime
    from defsent_cli.encoder.pooling import get_pooling
    from defsent_cli.encoder.precision import choose_runtime
    from defsent_cli.encoder.tokenize import tokenize

    pool = get_pooling("mean")
    runtime, chosen = choose_runtime("auto", precision, "cpu")
    loaded = use_runtime(load_model(minilm_path(), "cpu"), runtime, chosen)
    limit = loaded.token_limit(None)
    ids = [tokenize(r, loaded.tokenizer, pool, limit) for r in requests]
    encode(texts[:256], loaded, "mean", batch_size=32, show_progress_bar=False)  # warm-up
    stream = best_of(2, lambda: encode(texts, loaded, "mean", batch_size=32, show_progress_bar=False))
    split = best_of(2, lambda: [encode_ids(loaded, one, pool, 32, spread=True) for one in ids])
    whole = best_of(2, lambda: [encode_ids(loaded, one, pool, 32) for one in ids])
    tokens = best_of(2, lambda: [tokenize(r, loaded.tokenizer, pool, limit) for r in requests])
    n = len(texts)
    print(f"| {precision} ({runtime}) | {n / stream:,.0f} | {n / split:,.0f} | {n / whole:,.0f} | "
          f"{tokens / len(requests) * 1000:.2f} ms |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
