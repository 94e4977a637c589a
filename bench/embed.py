"""A full WordNet 3.0 entry bank (AMP: 147,306 entries, 206,906 definitions, 116,697 distinct) with each runtime.

    .venv/bin/python bench/embed.py [--runtimes torch:fp32,onnx:fp32,onnx:int8] [--kind AMP]

Builds the dictionary (``build-dict --wordnet``, all entries) once, then the bank with every runtime in
this one process (the model and its graph loaded before the clock starts), and prints the seconds of
each build and the max |difference| of each bank's rows from the torch fp32 one (after L2
normalisation). Each distinct definition is encoded once (embed-entries' dedup).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import data_root, minilm_path  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtimes", default="torch:fp32,onnx:fp32,onnx:int8")
    parser.add_argument("--kind", default="AMP")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    import torch

    from defsent_cli.banks.entry_bank import build_bank, distinct_definitions
    from defsent_cli.dictionary.build import BuildSettings, build_dictionary
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.onnx_runtime import use_runtime
    from defsent_cli.formats.dictionary import write_dictionary

    with tempfile.TemporaryDirectory() as work:
        dictionary = Path(work) / "wordnet.jsonl"
        write_dictionary(dictionary, build_dictionary([(data_root() / "wordnet", "wordnet")], BuildSettings()))
        entries, definitions = distinct_definitions(dictionary, ["train", "dev", "test"])
        print(
            f"WordNet 3.0: {len(entries):,} entries, {len(definitions.rows):,} definitions, "
            f"{len(definitions.texts):,} distinct; all-MiniLM-L6-v2, {args.kind}, batch {args.batch_size}, "
            f"torch {torch.__version__} ({torch.get_num_threads()} threads)"
        )
        banks = {}
        for spec in args.runtimes.split(","):
            runtime, precision = spec.split(":")
            loaded = use_runtime(load_model(minilm_path(), "cpu"), runtime, precision)
            start = time.perf_counter()
            bank = build_bank(dictionary, loaded, args.kind, batch_size=args.batch_size, show_progress=False)
            seconds = time.perf_counter() - start
            banks[spec] = bank.vectors / np.linalg.norm(bank.vectors, axis=1, keepdims=True)
            diff = float(np.abs(banks[spec] - banks[next(iter(banks))]).max())
            print(f"{spec:>11}: {seconds:7.1f} s ({seconds / 60:.2f} min), max |diff| vs first {diff:.2e}")


if __name__ == "__main__":
    main()
