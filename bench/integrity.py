"""What an index's integrity checks cost (issue 76): a large index of random unit vectors, written as ``defsent
index`` writes one, then opened and searched with and without the checks.

    .venv/bin/python bench/integrity.py --rows 1000000 --dim 384 [--ann] [--ef-construction 40] [--folder /tmp]

The rows are seeded Gaussian vectors scaled to unit length (no model: encoding a million texts is not what is
measured), written through ``formats.index.index_output`` (the writer ``index`` uses: it takes each block's SHA-256
as the rows come). Measured, each after a read of the whole file so that every run reads from the page cache:

- ``open_index``: the header checks (rows and dims against the datasets, one digest per block);
- one exact search (``search --exact``'s ``top_k``, one query): on a fresh ``IndexFile``, whose first read of each
  block checks it (SHA-256 and unit length), against the same search with the blocks already checked (what a
  second search in the same process, e.g. ``serve``, costs; and what the search cost before the checks);
- with ``--ann``: the graph (``search/ann.py``'s HnswBuilder, efConstruction ``--ef-construction``: the stored
  graph's size does not depend on it) loaded as ``search`` loads it (``load_hnsw``: its SHA-256, its size and a
  sample of its vectors against the index) against the bare read and deserialisation.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def seconds(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write(path: Path, rows: int, dim: int, ann: bool, ef_construction: int) -> float:
    """The index, written chunk by chunk as ``index`` writes it (the digests taken as the rows come); its seconds."""
    from defsent_cli.formats import index as index_format
    from defsent_cli.search import ann as ann_module

    rng = np.random.default_rng(0)
    graph = ann_module.HnswBuilder(dim, ef_construction=ef_construction) if ann else None
    extra = ann_module.graph_bytes(rows, dim) if ann else 0
    start = time.perf_counter()
    with index_format.index_output(path, rows, dim, rows * 12, extra) as writer:
        for first in range(0, rows, 65536):
            part = rng.standard_normal((min(65536, rows - first), dim), dtype=np.float32)
            part /= np.linalg.norm(part, axis=1, keepdims=True)
            ids = list(range(first + 1, first + len(part) + 1))
            writer.write(first, ids, [f"row {i}" for i in ids], part)
            if graph is not None:
                graph.add(part)
            print(f"  wrote {first + len(part):,} rows, {time.perf_counter() - start:.0f} s", file=sys.stderr)
        if graph is not None:
            writer.attach(ann_module.ANN_DATASET, graph.serialized(), graph.settings)
            writer.attrs["ann"] = graph.settings["kind"]
        writer.attrs["format"] = index_format.INDEX_FORMAT
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--ann", action="store_true", help="also store an HNSW graph and time its checked load")
    parser.add_argument("--ef-construction", type=int, default=40)
    parser.add_argument("--folder", default=None, help="where the index is written (default: a temporary folder)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import hashlib

    import torch

    from defsent_cli.formats.index import open_index
    from defsent_cli.io import hdf5_input
    from defsent_cli.search import ann as ann_module
    from defsent_cli.search.exact import top_k

    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        path = Path(folder) / "big.h5"
        took = write(path, args.rows, args.dim, args.ann, args.ef_construction)
        size = path.stat().st_size
        print(
            f"{args.rows:,} rows x {args.dim} float32 ({args.rows * args.dim * 4 / 2**30:.2f} GiB of vectors; file "
            f"{size / 2**30:.2f} GiB), torch {torch.__version__} ({torch.get_num_threads()} threads); written in "
            f"{took:.1f} s (the blocks' SHA-256 taken as the rows come)"
        )
        with open(path, "rb") as fh:  # into the page cache: every run below reads from memory
            while fh.read(1 << 24):
                pass
        opened = open_index(path)
        print(
            f"open_index (header, {len(opened.digests)} digests): {seconds(lambda: open_index(path), 5) * 1000:.1f} ms"
        )
        query = np.random.default_rng(1).standard_normal((1, args.dim), dtype=np.float32)
        query /= np.linalg.norm(query)

        def first_search():
            fresh = open_index(path)
            top_k(query, fresh, 10)

        checked = open_index(path)
        top_k(query, checked, 10)  # every block checked once
        unchecked = seconds(lambda: top_k(query, checked, 10), args.repeat)
        first = seconds(first_search, args.repeat)
        print(
            f"exact search, 1 query: {first:.2f} s checking every block (SHA-256 and unit length), {unchecked:.2f} s "
            f"with the blocks checked (a later search in the same process, as before the checks): the check costs "
            f"{first - unchecked:.2f} s, once per process"
        )
        vectors = np.ascontiguousarray(np.zeros((65536, args.dim), dtype=np.float32))
        rate = seconds(lambda: hashlib.sha256(vectors).digest(), 5)
        vector_bytes = args.rows * args.dim * 4
        print(
            f"SHA-256 alone: {vectors.nbytes / rate / 2**30:.2f} GiB/s on this CPU, {vector_bytes / vectors.nbytes * rate:.2f} "
            "s over the vectors (what the write adds)"
        )
        if not args.ann:
            return
        faiss = ann_module.faiss()

        def bare():
            with hdf5_input(path, "the index") as h5:
                faiss.deserialize_index(np.asarray(h5[ann_module.ANN_DATASET][()], dtype=np.uint8))

        def loaded():
            with hdf5_input(path, "the index") as h5:
                ann_module.load_hnsw(h5, opened)

        with hdf5_input(path, "the index") as h5:
            graph_size = h5[ann_module.ANN_DATASET].shape[0]
        plain, full = seconds(bare, args.repeat), seconds(loaded, args.repeat)
        print(
            f"HNSW graph ({graph_size / 2**30:.2f} GiB stored): read and deserialised in {plain:.2f} s; loaded with its "
            f"checks (SHA-256, size, {ann_module.SAMPLE_ROWS} rows against the index) in {full:.2f} s: "
            f"+{full - plain:.2f} s"
        )


if __name__ == "__main__":
    main()
