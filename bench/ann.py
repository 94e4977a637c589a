"""Approximate against exact search on a large index (issue 71): recall@10 and per-query latency, one run.

    .venv/bin/python bench/ann.py --source real [--queries 1000] [--ef 32 64 128 256]
    .venv/bin/python bench/ann.py --source gaussian --rows 1000000 [--fit 20000]
    .venv/bin/python bench/ann.py --source real --dims 384 256 128 64 --ef 128
    .venv/bin/python bench/ann.py --source real --rows 1000000 --build /data/ann-1m [--graphs flat sq8]

``--build DIR``: the product's files at scale. The index is written as ``index --ann`` writes it, one chunk of
``--chunk`` rows at a time (encoded, written, added to the graph; never all the rows in memory beside the graph):
real texts first, shuffled (``--real-texts`` caps them): every definition and every other real sentence of the data root
(WordNet's examples, the STS and SentEval sets, the clustering sets, WikiText-2; ``offline_texts``), then, where they run out before ``--rows``, Gaussian rows
drawn like the first ``--fit`` real rows' vectors (said in the output, with how many of each). One file per kind of
``--graphs``: DIR/ann-flat.h5 (``--ann``) and DIR/ann-sq8.h5 (``--ann-compress sq8``), the second's rows read back
from the first (encoded once). Printed: build time, peak RSS, file size, open time (the index opened and its graph
loaded and checked, as ``search`` does); exact search (``search --exact``'s, from the file) and each graph at each
``--ef`` (default 64 128 256): p50/p99 one query at a time and recall@10 against exact search; and each graph's
memory at ``--rows`` and at 10M rows (``search/ann.py``'s ``graph_bytes``). A file already in DIR is reused (its
rows count checked) unless ``--rebuild``.

``--dims``: each width in turn (the rows and the queries cut to their leading N dimensions and re-normalised, as
``index --dims N`` and ``search --dims N`` cut them): the vectors' and the graph's size, exact and HNSW latency, and
how many of the full width's exact top 10 the cut's exact top 10 keeps (what the cut costs this model's neighbours;
a model trained with ``--matryoshka`` is the one to cut, the speed and size are any 384-dim model's).

The rows (``--source``): ``real``, every distinct definition of GCIDE (``/usr/share/dictd/gcide``) and WordNet
(``$DEFSENT_DATA/wordnet``), ~300k texts, encoded by all-MiniLM-L6-v2 (ONNX int8); or ``gaussian``, ``--rows``
unit vectors drawn from a Gaussian fitted to the vectors of ``--fit`` real WordNet definitions (their mean and full
covariance, then L2-normalised): the encoder's anisotropy without the low-dimensional structure of real text,
which makes the graph's job much harder (a pessimistic bound: encoding a million real texts was out of reach of
the session that wrote this). The queries: ``--queries`` real STS-B test sentences, encoded by the same model. The graph is the product's (``search/ann.py``'s ``HnswBuilder``: FAISS IndexHNSWFlat, M 32,
efConstruction 200, built chunk by chunk as ``index --ann`` builds it); exact search is ``search --exact``'s
(``search/exact.top_k``, chunked). Latency is one query at a time (as a server answers one request),
after a warm-up; recall@10 is against the exact top 10. Threads: torch's and FAISS's defaults (all cores).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ann_files import GRAPHS, gaussian, percentiles, sweep  # noqa: E402
from bench.common import data_root, minilm_path, stsb_test_sentences  # noqa: E402


class Rows:
    """An in-memory matrix with the reading side of an index file (what ``top_k`` scans)."""

    def __init__(self, vectors: np.ndarray):
        self.vectors = vectors

    def __len__(self) -> int:
        return len(self.vectors)

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def iter_rows(self, chunk: int, start: int = 0, stop: int | None = None):
        stop = len(self.vectors) if stop is None else stop
        for first in range(start, stop, chunk):
            yield first, self.vectors[first : min(first + chunk, stop)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=["real", "gaussian"], default="real")
    parser.add_argument("--gcide", default="/usr/share/dictd/gcide.index")
    parser.add_argument("--rows", type=int, help="gaussian: how many rows (1,000,000); --build: real rows topped up")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--fit", type=int, default=20000, help="real definitions whose vectors the rows are drawn like")
    parser.add_argument("--ef", type=int, nargs="+", help="efSearch values (32 64 128 256; --build: 64 128 256)")
    parser.add_argument("--exact-latency-queries", type=int, default=50)
    parser.add_argument("--dims", type=int, nargs="+", help="widths to measure at (default: the model's own)")
    parser.add_argument("--build", type=Path, help="write the index files here, chunk by chunk, and measure them")
    parser.add_argument("--graphs", nargs="+", choices=list(GRAPHS), default=list(GRAPHS), help="--build: kinds")
    parser.add_argument("--real-texts", type=int, help="--build: at most this many real texts (default: all)")
    parser.add_argument("--chunk", type=int, default=16384, help="--build: rows encoded and written at a time")
    parser.add_argument("--rebuild", action="store_true", help="--build: write the files even where they are")
    args = parser.parse_args()
    if args.build is not None and (args.source != "real" or args.dims):
        parser.error("--build takes --source real and no --dims")
    args.ef = args.ef or ([64, 128, 256] if args.build else [32, 64, 128, 256])

    import faiss
    import torch

    from defsent_cli.dictionary.sources import read_wordnet
    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.onnx_runtime import use_runtime
    from defsent_cli.space.dims import leading

    loaded = use_runtime(load_model(Path(minilm_path()), "cpu"), "onnx", "int8")

    def unit(texts: list[str]) -> np.ndarray:
        vectors = encode(texts, loaded, "mean", batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    glosses = sorted({gloss for _, gloss, _ in read_wordnet(data_root() / "wordnet")})
    queries = unit(random.Random(1).sample(stsb_test_sentences(), args.queries))
    if args.build is not None:
        from bench.ann_files import build_and_measure

        texts, named = real_texts(glosses, args.gcide, everything=True)
        held_out = set(stsb_test_sentences())  # the queries are not in the index: held out, as ANN benchmarks hold
        texts = [t for t in texts if t not in held_out]
        named += f"; the {len(held_out):,} STS-B test sentences held out as queries"
        build_and_measure(args, unit, texts, named, queries)
        return
    if args.source == "real":
        texts, named = real_texts(glosses, args.gcide)
        start = time.perf_counter()
        rows = unit(texts)
        what = f"every distinct {named} definition, encoded in {time.perf_counter() - start:.0f} s"
    else:
        rows = gaussian(unit(random.Random(0).sample(glosses, args.fit)), args.rows or 1_000_000)
        what = f"drawn like {args.fit:,} WordNet definitions' vectors"
    print(
        f"{len(rows):,} rows x {rows.shape[1]} ({what}), {args.queries:,} STS-B test queries; all-MiniLM-L6-v2; torch "
        f"{torch.__version__} ({torch.get_num_threads()} threads), faiss {faiss.__version__} "
        f"({faiss.omp_get_max_threads()} threads)"
    )

    full_truth = None
    for dims in args.dims or [rows.shape[1]]:
        cut_rows, cut_queries = leading(rows, dims, True), leading(queries, dims, True)
        print(f"--- {dims} dims: vectors {cut_rows.nbytes / 2**20:,.0f} MiB (float32, as an index stores them)")
        truth = measure_at(cut_rows, cut_queries, args)
        if full_truth is None:
            full_truth = truth
        else:
            kept = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth, full_truth, strict=True)])
            print(f"exact top 10 at {dims} dims holds {kept:.4f} of the first width's exact top 10")


def real_texts(glosses: list[str], gcide: str, everything: bool = False) -> tuple[list[str], str]:
    """Every distinct definition of WordNet and, where its dictd index is there, GCIDE (sorted), and their name;
    with ``everything``, every other real text on this machine too (:func:`offline_texts`)."""
    texts = set(glosses)
    named = "WordNet"
    if Path(gcide).is_file():
        from defsent_cli.dictionary.dictd import read_dictd

        for entry in read_dictd(gcide):
            texts.update(entry.definitions)
        named = "GCIDE and WordNet"
    else:
        print(f"no GCIDE at {gcide}: WordNet's definitions alone")
    if everything:
        more = offline_texts()
        print("real texts: " + ", ".join(f"{name} {len(found):,}" for name, found in more.items()))
        for found in more.values():
            texts.update(found)
        named += " definitions and every other real text here (" + ", ".join(more) + ")"
    else:
        named += " definitions"
    return sorted(t for t in texts if t.strip()), named


def offline_texts() -> dict[str, list[str]]:
    """The real sentences of the data root beside the dictionaries: WordNet's usage examples, every STS set (all
    splits), every SentEval transfer task, the six clustering sets and WikiText-2's sentences (split at ' . ')."""
    from defsent_cli.dictionary.sources import WORDNET_FILES, parse_wordnet_line
    from defsent_cli.errors import DefsentError
    from defsent_cli.evaluation.cluster_data import load_cluster_tasks
    from defsent_cli.evaluation.senteval_data import ALL_TRANSFER_TASKS, load_transfer_task
    from defsent_cli.evaluation.sts_data import STS_SPLITS, load_sts_tasks, task_sentences

    root = data_root()
    found: dict[str, list[str]] = {"WordNet examples": []}
    for name in WORDNET_FILES:
        path = root / "wordnet" / name
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip() and not line.startswith("  "):
                    gloss = parse_wordnet_line(line, include_examples=True)[1]
                    found["WordNet examples"].extend(re.findall(r'"([^"]+)"', gloss))
    senteval = root / "senteval"
    found["STS"] = [
        s for split in STS_SPLITS for task in load_sts_tasks(senteval, None, split) for s in task_sentences(task)
    ]
    found["SentEval transfer"] = []
    for name in ALL_TRANSFER_TASKS:
        try:
            found["SentEval transfer"].extend(load_transfer_task(senteval, name).texts())
        except DefsentError as exc:
            print(f"{name} left out: {exc}")
    found["clustering"] = [t for task in load_cluster_tasks(root) for t in task.texts]
    wiki = root / "wikitext-2" / "wiki.test.raw"
    found["WikiText-2"] = (
        [
            s.strip() + " ."
            for line in wiki.read_text(encoding="utf-8").splitlines()
            if not line.strip().startswith("=")
            for s in line.split(" . ")
            if len(s.split()) > 2
        ]
        if wiki.is_file()
        else []
    )
    return found


def measure_at(rows: np.ndarray, queries: np.ndarray, args) -> np.ndarray:
    """Exact and HNSW search of ``queries`` in ``rows``, printed; returns the exact top 10 of each query."""
    from defsent_cli.search.ann import Hnsw, HnswBuilder
    from defsent_cli.search.exact import top_k

    start = time.perf_counter()
    truth, _ = top_k(queries, Rows(rows), 10)
    print(f"exact top-10 of all queries (batched): {time.perf_counter() - start:.1f} s")
    exact_times = []
    for q in queries[: args.exact_latency_queries]:
        start = time.perf_counter()
        top_k(q[None, :], Rows(rows), 10)
        exact_times.append(time.perf_counter() - start)
    print(f"exact search, one query at a time ({args.exact_latency_queries} queries): {percentiles(exact_times)}")

    builder = HnswBuilder(rows.shape[1])
    start = time.perf_counter()
    for first in range(0, len(rows), 65536):
        builder.add(rows[first : first + 65536])
    build = time.perf_counter() - start
    stored = builder.serialized()
    print(f"HNSW build (M 32, efConstruction 200): {build:.0f} s; stored graph {stored.nbytes / 2**20:,.0f} MiB")
    graph = Hnsw(builder.index, builder.settings)
    sweep(graph, queries, truth, exact_times, args.ef, "HNSW")

    return truth


if __name__ == "__main__":
    main()
