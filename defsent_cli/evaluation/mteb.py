"""An mteb encoder for any defsent checkpoint and pooling, and mteb's own STS evaluator on local pairs.

``DefsentEncoder`` satisfies mteb 2.x's ``EncoderProtocol``: ``encode(DataLoader of {"text": [...]} batches,
*, task_metadata, hf_split, hf_subset, prompt_type, **kwargs) -> (n, d) array``, ``similarity``,
``similarity_pairwise`` (cosine) and ``mteb_model_meta``. All texts of one ``encode`` call go through
defsent's one encode loop together (length-sorted batches; each distinct text once)::

    import mteb
    from defsent_cli.mteb import DefsentEncoder

    model = DefsentEncoder("ckpt/", pooling="mean", device="cpu")
    mteb.evaluate(model, tasks=mteb.get_tasks(tasks=["STS12"]))  # needs the Hub datasets

``score_task_mteb`` runs mteb's ``AbsTaskSTS`` evaluator (its dataloaders, cosine and scipy correlations)
on pairs loaded by :mod:`defsent_cli.evaluation.sts`, so nothing is downloaded. mteb is an optional extra
(``pip install 'defsent-cli[mteb]'``) and is imported only here, lazily.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DefsentError
from ..space.linalg import l2_normalize

# mteb task names of the local STS tasks.
MTEB_TASKS = {
    "STS12": "STS12",
    "STS13": "STS13",
    "STS14": "STS14",
    "STS15": "STS15",
    "STS16": "STS16",
    "STS-B": "STSBenchmark",
    "SICK-R": "SICK-R",
}


def require_mteb():
    """Import mteb or fail with a one-line hint."""
    try:
        import mteb
    except ImportError:
        raise DefsentError(
            "the mteb backend needs the optional mteb package: pip install 'defsent-cli[mteb]' (or pip install mteb)"
        ) from None
    for name in ("mteb", "datasets"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        import datasets

        datasets.disable_progress_bars()
    except ImportError:  # pragma: no cover - mteb depends on datasets
        pass
    return mteb


class DefsentEncoder:
    """mteb ``EncoderProtocol`` over a defsent model folder, an Encoder, a loaded model or any texts->vectors function."""

    def __init__(
        self,
        model_name: str | Path | object,
        revision: str | None = None,
        *,
        device: str | None = None,
        pooling: str | None = None,
        batch_size: int = 32,
        max_length: int | None = None,
        show_progress: bool | None = False,
        cache: bool = False,
        **kwargs: Any,
    ) -> None:
        from ..encoder.models import load_model
        from .common import as_encoder

        model = load_model(model_name, device or "auto") if isinstance(model_name, str | Path) else model_name
        self.encoder = as_encoder(
            model, pooling, batch_size=batch_size, max_length=max_length, show_progress=show_progress
        )
        self.revision = revision
        self.pooling = self.encoder.label
        self.batch_size = batch_size
        self._cache: dict[str, np.ndarray] | None = {} if cache else None
        loaded = getattr(self.encoder, "loaded", None)
        if loaded is not None:
            self.name = f"defsent/{loaded.path.name}-{self.pooling}"
            self.embed_dim: int | None = loaded.dim
            self.max_tokens: int | None = getattr(self.encoder, "max_length", None) or loaded.max_length
        else:
            self.name = f"defsent/{self.encoder.name}"
            self.embed_dim = self.max_tokens = None

    def encode(
        self,
        inputs: Any,
        *,
        task_metadata: Any = None,
        hf_split: str = "",
        hf_subset: str = "",
        prompt_type: Any = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """Encode every text of the DataLoader (batches with a ``"text"`` list) in one defsent encode call."""
        texts: list[str] = []
        for batch in inputs:
            texts.extend(batch["text"] if isinstance(batch, dict) else batch)
        task = getattr(task_metadata, "name", "mteb")
        label = f"mteb {task}" + (f" {hf_subset}" if hf_subset and hf_subset != "default" else "")
        if self._cache is None:
            from .common import encode_unique

            return encode_unique(self.encoder, texts, label)
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            vectors = np.asarray(self.encoder(todo, label), dtype=np.float32)
            self._cache.update(zip(todo, vectors, strict=True))
        if not texts:
            return np.zeros((0, self.embed_dim or 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    @staticmethod
    def _unit(x: Any) -> np.ndarray:
        return l2_normalize(np.atleast_2d(np.asarray(x, dtype=np.float32)))

    def similarity(self, embeddings1: Any, embeddings2: Any) -> np.ndarray:
        """Cosine similarity matrix (n1, n2)."""
        return self._unit(embeddings1) @ self._unit(embeddings2).T

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> np.ndarray:
        """Cosine similarity of corresponding rows (n,)."""
        return np.einsum("ij,ij->i", self._unit(embeddings1), self._unit(embeddings2))

    @property
    def mteb_model_meta(self):
        """A minimal ``mteb.models.ModelMeta`` (name, dims, cosine similarity)."""
        from mteb.models import ModelMeta

        return ModelMeta.create_empty(
            overwrites={
                "name": self.name,
                "revision": self.revision or "local",
                "embed_dim": self.embed_dim,
                "max_tokens": self.max_tokens,
                "similarity_fn_name": "cosine",
                "framework": ["PyTorch"],
                "open_weights": True,
            }
        )


def _mteb_dataset(sent1: Sequence[str], sent2: Sequence[str], gold: np.ndarray):
    from datasets import Dataset

    return Dataset.from_dict({"sentence1": list(sent1), "sentence2": list(sent2), "score": [float(g) for g in gold]})


def score_task_mteb(task: Any, encoder: object) -> tuple[list[tuple[float, float, int]], dict[str, dict[str, float]]]:
    """mteb's STS evaluator on a loaded :class:`~defsent_cli.evaluation.sts.STSTask`, no Hub access.

    The concatenation of the subsets is one mteb subset (the ``all`` score); with several subsets each is
    also its own mteb subset (for ``mean`` / ``wmean``). Embeddings are cached inside the encoder, so
    each distinct sentence is still encoded once. Returns per-subset (Spearman, Pearson, n) x100 and the
    three aggregations, as the native backend does.
    """
    mteb = require_mteb()
    from .correlations import aggregate_correlations

    batch_size = getattr(encoder, "batch_size", 32)
    if not isinstance(encoder, DefsentEncoder):
        encoder = DefsentEncoder(encoder, batch_size=batch_size, cache=True)
    mteb_task = mteb.get_task(MTEB_TASKS[task.name])
    data: dict[str, dict[str, Any]] = {
        "all": {
            task.split: _mteb_dataset(
                [s for sub in task.subsets for s in sub.sent1],
                [s for sub in task.subsets for s in sub.sent2],
                np.concatenate([sub.gold for sub in task.subsets]),
            )
        }
    }
    if len(task.subsets) > 1:
        for sub in task.subsets:
            data[f"subset:{sub.name}"] = {task.split: _mteb_dataset(sub.sent1, sub.sent2, sub.gold)}
    mteb_task.dataset = data
    mteb_task.data_loaded = True
    mteb_task.hf_subsets = list(data)
    scores = mteb_task.evaluate(encoder, split=task.split, encode_kwargs={"batch_size": batch_size})

    def pick(key: str) -> tuple[float, float]:
        s = scores[key]
        return 100.0 * float(s["cosine_spearman"]), 100.0 * float(s["cosine_pearson"])

    concat = pick("all")
    if len(task.subsets) > 1:
        per = [(*pick(f"subset:{sub.name}"), len(sub)) for sub in task.subsets]
    else:
        per = [(*concat, len(task.subsets[0]))]
    return per, aggregate_correlations(per, concat)
