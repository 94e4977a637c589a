"""Unlabelled sentence pairs drawn from a pool of sentences, for a teacher to label (Augmented SBERT's
sampling strategies, Thakur et al. 2021; Reiml 2023, section 5.5):

- ``random``: ``k`` random partners per sentence (seeded);
- ``bm25``: each sentence's ``k`` best BM25 matches in the pool (the ``bm25s`` library, lexical overlap);
- ``semantic``: each sentence's ``k`` nearest neighbours by the cosine of a bi-encoder's vectors;
- several at once (``random,semantic``): their union, the thesis's choice ("enough negative and positive
  samples to draw from").

A pair is never a sentence with itself, and appears once (in either order; the first order found is kept).
Random pairs are mostly unrelated, BM25 and semantic ones mostly related: the silver score histogram of
each differs from the gold one, which ``kde.py`` then matches.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import DefsentError

STRATEGIES = ("random", "bm25", "semantic")


def check_sampling(sentences: Sequence[str], strategies: Sequence[str], has_model: bool = True) -> None:
    """The strategies known, a bi-encoder for ``semantic``, two sentences at least: checked before any model loads."""
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown or not strategies:
        raise DefsentError(f"--strategy takes a comma list of {', '.join(STRATEGIES)}, not {','.join(strategies)!r}")
    if "semantic" in strategies and not has_model:
        raise DefsentError("--strategy semantic needs a bi-encoder: pass --model")
    if len(sentences) < 2:
        raise DefsentError(f"the pool needs at least two distinct sentences, it has {len(sentences)}")


def read_pool(path) -> tuple[list[str], str]:
    """The distinct sentences of a pool, and what they were read as: both sides of every pair of a pairs file
    (``.tsv``, ``.csv``, a SICK file, or lines that look like scored pairs), the definitions of every split of a
    dictionary (``.jsonl``), else one sentence per line. A sentence may not hold a TAB: the pairs written are
    ``sentence1<TAB>sentence2`` lines, which it would break (an error naming the line, not a broken file)."""
    from pathlib import Path

    from ..formats.pairs import SCORED_PAIRS_FILES, looks_like, read_pairs
    from ..io import check_input, iter_lines

    path = check_input(Path(path))
    if path.suffix.lower() == ".jsonl":
        from ..training.sentences import read_sentences

        return list(dict.fromkeys(read_sentences(path, "all"))), "the definitions of a dictionary (every split)"
    first = next((line for _, line in iter_lines(path) if line.strip()), "")
    if (
        path.suffix.lower() in (".tsv", ".csv")
        or path.name.startswith("SICK")
        or looks_like(first) in SCORED_PAIRS_FILES
    ):
        found = read_pairs(path)
        return list(dict.fromkeys([*found.sent1, *found.sent2])), "both sides of every pair"
    pool = []
    for number, line in iter_lines(path):
        if "\t" in line:
            raise DefsentError(
                "holds a TAB, which separates the two sentences of the pairs file written: a pool is one sentence "
                "per line (a pairs file: name it .tsv to pool both sides of its pairs)",
                path=path,
                line=number,
            )
        if line.strip():
            pool.append(line)
    if first.lstrip().startswith("{"):
        from ..formats.plain import check_plain

        check_plain(first, path, "; a pool is one sentence per line, or a dictionary named .jsonl, or a pairs file")
    return list(dict.fromkeys(pool)), "one sentence per line"


def random_pairs(n: int, k: int, seed: int) -> list[tuple[int, int]]:
    """``k`` distinct random partners for each of ``n`` sentences (fewer when the pool is smaller)."""
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(n):
        partners = rng.choice(n - 1, size=min(k, n - 1), replace=False)
        pairs.extend((i, int(j + (j >= i))) for j in partners)  # skip i itself
    return pairs


def bm25_pairs(sentences: Sequence[str], k: int) -> list[tuple[int, int]]:
    """Each sentence's ``k`` best BM25 matches among the others.

    Where JAX is installed, importing bm25s starts JAX (its top-k), and JAX on a CUDA machine takes 75% of the
    GPU's memory at once: the encoder in the same process, or a second process, then runs out of memory (seen on
    an H100, 2026-11-27). Its BM25 runs on numpy arrays, so JAX is kept on the CPU (``JAX_PLATFORMS=cpu``)
    unless the user set ``JAX_PLATFORMS`` themselves.
    """
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import bm25s
    except ImportError:
        raise DefsentError("--strategy bm25 uses the bm25s library: pip install 'defsent-cli[augment]'") from None
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(sentences), show_progress=False), show_progress=False)
    found, _ = retriever.retrieve(
        bm25s.tokenize(list(sentences), show_progress=False), k=min(k + 1, len(sentences)), show_progress=False
    )
    # k per sentence: its own row may lack it (a duplicate of it can rank first), so cut each row, not the list
    return [pair for i, row in enumerate(found) for pair in [(i, int(j)) for j in row if j != i][:k]]


def semantic_pairs(vectors: np.ndarray, k: int, chunk: int = 1024) -> list[tuple[int, int]]:
    """Each sentence's ``k`` nearest others by cosine, exact, ``chunk`` rows of the similarity matrix at a time."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    k = min(k, len(unit) - 1)
    pairs = []
    for start in range(0, len(unit), chunk):
        sims = unit[start : start + chunk] @ unit.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf  # never the sentence itself
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k > 0 else np.zeros((len(sims), 0), dtype=int)
        for r, cols in enumerate(top):
            order = cols[np.argsort(-sims[r, cols], kind="stable")]
            pairs.extend((start + r, int(j)) for j in order)
    return pairs


def sample_pairs(
    sentences: Sequence[str],
    strategies: Sequence[str],
    k: int,
    seed: int = 42,
    encode: Callable[[Sequence[str]], np.ndarray] | None = None,
) -> list[tuple[int, int]]:
    """The union of the strategies' pairs, each unordered pair once, in the order found."""
    check_sampling(sentences, strategies, "semantic" not in strategies or encode is not None)
    found: list[tuple[int, int]] = []
    for strategy in strategies:
        if strategy == "random":
            found += random_pairs(len(sentences), k, seed)
        elif strategy == "bm25":
            found += bm25_pairs(sentences, k)
        else:
            if encode is None:
                raise DefsentError("--strategy semantic needs a bi-encoder: pass --model")
            found += semantic_pairs(np.asarray(encode(sentences), dtype=np.float32), k)
    seen, pairs = set(), []
    for i, j in found:
        key = (min(i, j), max(i, j))
        if i != j and key not in seen:
            seen.add(key)
            pairs.append((i, j))
    return pairs
