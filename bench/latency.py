"""One sentence at a time, in process: where a one-sentence request's time goes before HTTP (issue 81's fp32 c=1 x1
cell, where infinity-emb answered faster than defsent serve).

    .venv/bin/python bench/latency.py [--texts 300] [--threads 1 2]

The same STS-B test sentences, one per call, each path in turn on each sentence (so the machine's noise falls on
all of them alike), after an untimed warm-up; p50 and p99 in ms and the share of the HF forward's p50. Paths, all
all-MiniLM-L6-v2 in torch fp32 with mean pooling and L2 normalisation:

- ``HF forward``: the tokenizer's tensors into ``AutoModel``, masked mean, normalise: the floor any torch server
  stands on (infinity-emb's torch engine is this, batched);
- ``sentence-transformers``: ``SentenceTransformer.encode([text])``;
- ``defsent encode``: ``encode([text], ...)`` (the library call behind ``defsent encode``);
- ``defsent serve's path``: what the server's two threads do for one request, without HTTP: ``Engine.measure``
  (tokenise, check the window) then ``Encoder.encode_ids``.

``--threads``: torch's intra-op threads for a round of every path (default 1 and 2: these cores' choices).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import minilm_path, stsb_test_sentences  # noqa: E402


def paths(folder: str) -> dict:
    """Each path's one-sentence function (text -> unit vector)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.spec import EncodeSpec
    from defsent_cli.serve.engine import Engine
    from defsent_cli.serve.limits import Limits

    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()

    def hf(text: str) -> np.ndarray:
        with torch.inference_mode():
            batch = tokenizer([text], return_tensors="pt", truncation=True, max_length=256)
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1)
            return torch.nn.functional.normalize(pooled, dim=-1)[0].numpy()

    st = SentenceTransformer(folder, device="cpu")
    loaded = load_model(folder, "cpu")
    encoder = EncodeSpec(pooling="mean").resolve(loaded, batch_size=32, show_progress=False)
    engine = Engine(encoder, "bench", Limits())
    return {
        "HF forward": hf,
        "sentence-transformers": lambda text: st.encode([text], normalize_embeddings=True)[0],
        "defsent encode": lambda text: encode(
            [text], loaded, "mean", batch_size=32, normalize_embeddings=True, show_progress_bar=False
        )[0],
        "defsent serve's path": lambda text: encoder.encode_ids(engine.measure([text]))[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    import torch

    texts = stsb_test_sentences()[: args.texts]
    functions = paths(minilm_path())
    reference = {name: fn(texts[0]) for name, fn in functions.items()}
    worst = max(float(np.abs(v - reference["HF forward"]).max()) for v in reference.values())
    print(f"{len(texts)} STS-B test sentences, one per call; torch {torch.__version__}; max |difference| of the "
          f"paths' vectors for the first sentence: {worst:.2e}")  # fmt: skip
    for threads in args.threads:
        torch.set_num_threads(threads)
        for text in texts[: args.warmup]:
            for fn in functions.values():
                fn(text)
        times: dict[str, list[float]] = {name: [] for name in functions}
        for text in texts:
            for name, fn in functions.items():
                start = time.perf_counter()
                fn(text)
                times[name].append(time.perf_counter() - start)
        floor = np.median(times["HF forward"])
        print(f"\n{threads} torch thread(s)\n\n| path | p50 ms | p99 ms | of the HF forward's p50 |\n|---|---|---|---|")
        for name, seconds in times.items():
            p50, p99 = np.percentile(seconds, [50, 99]) * 1000
            print(f"| {name} | {p50:.2f} | {p99:.2f} | {np.median(seconds) / floor:.2f}x |")


if __name__ == "__main__":
    main()
