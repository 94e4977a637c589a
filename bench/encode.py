"""defsent's encode loop against sentence-transformers' encode, same model, same sentences.

    .venv/bin/python bench/encode.py [--repeats 3] [--batch-size 32]

Both run fp32 on CPU in this one process, alternating, after one warm-up each;
the best of ``--repeats`` timings is reported. Prints sentences/s for each, the
ratio, and the max |difference| of the L2-normalised vectors.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import minilm_path, stsb_test_sentences  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model

    sentences = stsb_test_sentences()
    path = minilm_path()
    ours_model = load_model(path, "cpu")
    st_model = SentenceTransformer(path, device="cpu")

    def ours() -> np.ndarray:
        return encode(
            sentences,
            ours_model,
            "mean",
            batch_size=args.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
        )

    def theirs() -> np.ndarray:
        return st_model.encode(sentences, batch_size=args.batch_size, convert_to_numpy=True, normalize_embeddings=True)

    timings: dict[str, list[float]] = {"defsent": [], "sentence-transformers": []}
    outputs = {"defsent": ours(), "sentence-transformers": theirs()}  # warm-up
    for _ in range(args.repeats):
        for name, fn in (("defsent", ours), ("sentence-transformers", theirs)):
            start = time.perf_counter()
            outputs[name] = fn()
            timings[name].append(time.perf_counter() - start)

    rate = {name: len(sentences) / min(times) for name, times in timings.items()}
    diff = float(np.abs(outputs["defsent"] - outputs["sentence-transformers"]).max())
    print(f"model: all-MiniLM-L6-v2 ({path}), torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(f"sentences: {len(sentences)} (STS-B test, both sides), batch size {args.batch_size}, best of {args.repeats}")
    for name in timings:
        print(f"{name:>22}: {rate[name]:8.1f} sentences/s  (runs: {', '.join(f'{t:.2f}s' for t in timings[name])})")
    print(f"{'ratio':>22}: {rate['defsent'] / rate['sentence-transformers']:.2f}x")
    print(f"{'max |diff|':>22}: {diff:.2e} (normalised vectors)")


if __name__ == "__main__":
    main()
