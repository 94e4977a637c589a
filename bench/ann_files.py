"""``bench/ann.py --build DIR``: the index files of ``index --ann`` and ``index --ann-compress sq8`` written at scale,
chunk by chunk, from real text topped up with Gaussian rows, then measured as ``search`` uses them (see the
docstring of bench/ann.py). Only ``bench/ann.py`` runs it."""

from __future__ import annotations

import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

#: The bench's name of each kind of graph -> ``index --ann-compress``.
GRAPHS = {"flat": "none", "sq8": "sq8"}
TEN_MILLION = 10_000_000


def gaussian(fit: np.ndarray, n: int, seed: int = 0, rng: np.random.Generator | None = None) -> np.ndarray:
    """``n`` unit vectors drawn from the Gaussian of ``fit``'s rows (their mean and full covariance)."""
    rng = rng if rng is not None else np.random.default_rng(seed)
    rows = rng.multivariate_normal(fit.mean(axis=0), np.cov(fit, rowvar=False), size=n, method="cholesky")
    rows = rows.astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def peak_rss() -> str:
    return f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:,.2f} GiB"


def rss_now() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def percentiles(seconds: list[float]) -> str:
    ms = np.asarray(seconds) * 1000
    return f"p50 {np.percentile(ms, 50):8.2f} ms  p99 {np.percentile(ms, 99):8.2f} ms"


def sweep(graph, queries: np.ndarray, truth, exact_times: list[float], efs, label: str) -> None:
    """One line per efSearch: the graph's recall@10 against ``truth`` (exact search's top 10 of each query), its
    p50/p99 one query at a time after a warm-up, and its speed-up over exact search's p50."""
    for ef in efs:
        graph.ef_search = ef
        graph.search(queries[:20], 10)  # warm-up
        times, found = [], []
        for q in queries:
            start = time.perf_counter()
            rows, _ = graph.search(q[None, :], 10)
            times.append(time.perf_counter() - start)
            found.append(rows[0])
        recall = np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)])
        speedup = np.median(exact_times) / np.median(times)
        print(f"{label} efSearch {ef:>4}: recall@10 {recall:.4f}  {percentiles(times)}  ({speedup:,.0f}x exact's p50)")


def build_and_measure(args, unit, texts: list[str], named: str, queries: np.ndarray) -> None:
    import faiss

    print(
        f"{len(queries):,} STS-B test queries; faiss {faiss.__version__} ({faiss.omp_get_max_threads()} threads); "
        f"chunks of {args.chunk:,} rows"
    )
    texts = list(texts)
    random.Random(0).shuffle(texts)
    available = len(texts)
    texts = texts[: args.real_texts] if args.real_texts else texts
    n = args.rows or len(texts)
    real = min(n, len(texts))
    print(
        f"{n:,} rows: {real:,} real texts ({named}, shuffled; {available:,} there"
        f"{f', --real-texts {args.real_texts:,}' if args.real_texts else ''}) encoded by all-MiniLM-L6-v2 (ONNX int8)"
        + (
            f", then {n - real:,} Gaussian rows: the real text ran out, so the rest are unit vectors drawn from a "
            f"Gaussian fitted to the first {min(args.fit, real):,} real rows' vectors (mean, full covariance): "
            "harder for a graph than real text, and no text of theirs is real"
            if n > real
            else ""
        )
    )
    args.build.mkdir(parents=True, exist_ok=True)
    paths = {kind: args.build / f"ann-{kind}.h5" for kind in args.graphs}
    source = None
    for kind, path in paths.items():
        if path.is_file() and not args.rebuild and _rows_of(path) == n:
            print(f"{kind}: reusing {path} ({n:,} rows)")
        else:
            start = time.perf_counter()
            if source is None:
                _write_encoded(path, kind, texts[:real], n, unit, args)
            else:
                _write_copied(path, kind, source)
            what = "encoded, written and its graph built" if source is None else "rows read back, graph built"
            print(f"{kind}: {what} in {time.perf_counter() - start:,.1f} s; peak RSS so far {peak_rss()}")
        print(f"{kind}: file {path.stat().st_size / 2**30:,.2f} GiB")
        source = source or path
    _measure(paths, queries, args, n)


def _rows_of(path: Path) -> int | None:
    import h5py

    try:
        with h5py.File(path, "r") as h5:
            return int(h5.attrs.get("rows", -1))
    except OSError:
        return None


def _attrs(kind: str, settings: dict, source: str) -> dict:
    from defsent_cli.formats.index import INDEX_FORMAT

    return {
        "format": INDEX_FORMAT,
        "encoder": "all-MiniLM-L6-v2 (bench)",
        "pooling": "mean",
        "normalized": True,
        "similarity": "cosine",
        "runtime": "onnx int8",
        "source": source,
        "ann": settings["kind"],
    }


def _writer(path: Path, kind: str, n: int, dim: int, text_bytes: int):
    from defsent_cli.formats.index import index_output
    from defsent_cli.search.ann import COMPRESSIONS, HnswBuilder, graph_bytes

    graph = HnswBuilder(dim, compress=GRAPHS[kind])
    graph.reserve(n)  # as index --ann does
    return index_output(path, n, dim, text_bytes, graph_bytes(n, dim, kind=COMPRESSIONS[GRAPHS[kind]])), graph


def _write_encoded(path: Path, kind: str, texts: list[str], n: int, unit, args) -> None:
    """Real texts encoded a chunk at a time, then Gaussian rows drawn a chunk at a time, each chunk written and
    added to the graph as it comes (``index --ann``'s loop)."""
    from defsent_cli.search.ann import ANN_DATASET

    real, dim = len(texts), unit(["a"]).shape[1]
    text_bytes = sum(len(t.encode()) for t in texts) + 24 * (n - real)
    output, graph = _writer(path, kind, n, dim, text_bytes)
    fit: list[np.ndarray] = []  # the first --fit real rows (the texts are shuffled: a uniform sample)
    fitted, rng, start = None, np.random.default_rng(0), time.perf_counter()
    with output as writer:
        for first in range(0, n, args.chunk):
            stop = min(first + args.chunk, n)
            parts, names = [], texts[first : min(stop, real)]
            if names:
                parts.append(unit(names))
                fit.append(parts[-1][: max(0, args.fit - sum(len(f) for f in fit))])
            if stop > real:
                fitted = np.concatenate(fit) if fitted is None else fitted
                low = max(first, real)
                parts.append(gaussian(fitted, stop - low, rng=rng))
                names = [*names, *(f"(gaussian row {i + 1})" for i in range(low, stop))]
            vectors = np.concatenate(parts)
            writer.write(first, list(range(first + 1, stop + 1)), list(names), vectors)
            graph.add(vectors)
            elapsed = time.perf_counter() - start
            print(f"  {kind}: {stop:,} of {n:,} rows, {elapsed:,.0f} s", file=sys.stderr, flush=True)
        writer.attach_written(ANN_DATASET, graph.stored_bytes(), graph.write, graph.settings)
        writer.attrs.update(_attrs(kind, graph.settings, "bench/ann.py --build"))


def _write_copied(path: Path, kind: str, source: Path) -> None:
    """The rows of the index ``source`` (checked as they are read) into a new index with a graph of ``kind``."""
    import h5py

    from defsent_cli.formats.index import open_index
    from defsent_cli.search.ann import ANN_DATASET

    index = open_index(source)
    with h5py.File(source, "r") as h5:
        text_bytes = source.stat().st_size - 4 * index.n * index.dim - h5[ANN_DATASET].shape[0]
    output, graph = _writer(path, kind, index.n, index.dim, max(0, text_bytes))
    with output as writer:
        records = index.iter_records(index.block_rows)  # a block at a time, as iter_rows checks them
        for first, rows in index.iter_rows(index.block_rows):
            at, ids, texts = next(records)
            assert at == first
            writer.write(first, ids, texts, rows, stored_ids=True)
            graph.add(rows)
        writer.attach_written(ANN_DATASET, graph.stored_bytes(), graph.write, graph.settings)
        writer.attrs.update(_attrs(kind, graph.settings, str(source)))


def _measure(paths: dict[str, Path], queries: np.ndarray, args, n: int) -> None:
    """Exact search from the file, then each graph loaded as search loads it, at each --ef."""
    from defsent_cli.formats.index import open_index
    from defsent_cli.io import hdf5_input
    from defsent_cli.search.ann import COMPRESSIONS, graph_bytes, load_hnsw
    from defsent_cli.search.exact import top_k

    first = open_index(next(iter(paths.values())))
    start = time.perf_counter()
    truth, _ = top_k(queries, first, 10)
    print(
        f"exact top-10 of all {len(queries):,} queries (batched, every block checked): {time.perf_counter() - start:.1f} s"
    )
    exact_times = []
    for q in queries[: args.exact_latency_queries]:
        start = time.perf_counter()
        top_k(q[None, :], first, 10)
        exact_times.append(time.perf_counter() - start)
    print(f"exact search, one query at a time ({len(exact_times)} queries): {percentiles(exact_times)}")
    for kind, path in paths.items():
        before, start = rss_now(), time.perf_counter()
        index = open_index(path)
        with hdf5_input(path, "the index") as h5:
            graph = load_hnsw(h5, index)
        opened = time.perf_counter() - start
        kind_name = COMPRESSIONS[GRAPHS[kind]]
        print(
            f"{kind}: opened and its graph loaded and checked in {opened:.2f} s; resident +{(rss_now() - before) / 2**20:,.0f}"
            f" MiB, at least (memory an earlier graph freed is reused; graph_bytes: {graph_bytes(n, index.dim, kind=kind_name) / 2**20:,.0f} MiB at {n:,} rows, "
            f"{graph_bytes(TEN_MILLION, index.dim, kind=kind_name) / 2**30:,.2f} GiB at 10M)"
        )
        sweep(graph, queries, truth, exact_times, args.ef, kind)
        del graph
    print(f"peak RSS of the whole run: {peak_rss()}")
