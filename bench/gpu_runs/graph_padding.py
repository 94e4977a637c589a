"""How much more work ``--cuda-graphs``' fixed-shape batches do than the plain encode loop: token positions
(rows x length, padding included) over the texts ``bench/gpu.py`` encodes, per batch size. Runs on the CPU
(tokenisation only); it explains the GPU figures, it does not time anything.

    python bench/gpu_runs/graph_padding.py --dictionary wordnet.jsonl [--model MINILM] [--texts 20000]

Plain: ``tokenize.length_batches`` (a batch closes where the length changes; its length is its longest text).
Graphs: ``cuda_graphs.graph_batches``, each batch at its full ``batch_shape`` (rows x the rounded length: the
last batch of a length filled up).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.common import minilm_path  # noqa: E402
from bench.gpu import common_arguments, definitions  # noqa: E402


def positions(lengths: list[int], batch: int, limit: int) -> tuple[int, int]:
    """Token positions computed by the plain loop and by the graphs, at this batch size (no token budget)."""
    from defsent_cli.encoder.cuda_graphs import batch_shape, graph_batches
    from defsent_cli.encoder.tokenize import length_batches

    plain = sum(len(ix) * max(lengths[i] for i in ix) for ix in length_batches(lengths, batch, None))
    shapes = [
        batch_shape(max(lengths[i] for i in ix), batch, None, limit)
        for ix in graph_batches(lengths, batch, None, limit)
    ]
    return plain, sum(rows * length for rows, length in shapes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_arguments(parser)
    parser.add_argument("--batch-sizes", default="32,256")
    args = parser.parse_args()
    if args.dictionary is None:
        sys.exit("--dictionary (or DICT) is needed: a WordNet JSONL, e.g. ../shared/tools/gpu-bundle's")

    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.pooling import get_pooling
    from defsent_cli.encoder.tokenize import tokenize

    loaded = load_model(args.model or minilm_path(), "cpu")
    limit = loaded.token_limit(None)
    texts = definitions(args.dictionary, args.texts)
    lengths = [len(ids) for ids in tokenize(texts, loaded.tokenizer, get_pooling("mean"), limit)]
    print(
        f"{len(texts):,} texts, {sum(lengths):,} tokens, mean {np.mean(lengths):.1f}, median {np.median(lengths):.0f}"
    )
    for batch in map(int, args.batch_sizes.split(",")):
        plain, graphs = positions(lengths, batch, limit)
        print(f"batch {batch:5d}: plain loop {plain:,} positions, CUDA graphs {graphs:,} ({graphs / plain:.2f}x)")


if __name__ == "__main__":
    main()
