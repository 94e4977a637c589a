"""What the evaluation commands offer, by name: STS's splits, file layouts, aggregations and backends, the
clustering sets and runs, SentEval's classifier configurations and MRPC features.

Kept apart from the modules that use them (which compute in numpy and torch) so that the command line
lists the choices, and ``defsent COMMAND --help`` runs, without importing either.
"""

from __future__ import annotations

from dataclasses import dataclass

# ---------------------------------------------------------------- STS (sts_data.py, correlations.py, sts.py)

STS_SPLITS = ("test", "dev", "train")
#: STS12-16 files: SentEval's ``STS.input.*``, or the original SemEval ``STS20xx.input.*``
LAYOUTS = ("auto", "senteval", "semeval")
AGGREGATIONS = ("all", "mean", "wmean")
AGGREGATION_HELP = {
    "all": "subsets of a year concatenated, one correlation (SimCSE / DefSent / DefSent+)",
    "mean": "mean of the per-subset correlations (SentEval 'mean')",
    "wmean": "per-subset correlations weighted by their pair counts (SentEval 'wmean')",
}
BACKENDS = ("native", "mteb")

# ---------------------------------------------------------------- clustering (cluster_data.py, cluster.py)

#: name -> (file under clustering/, texts, clusters) as the data README lists them
CLUSTER_TASKS: dict[str, tuple[str, int, int]] = {
    "agnews": ("agnews/agnewsdataraw-8000", 8000, 4),
    "biomedical": ("biomedical/biomedical_true_text", 20000, 20),
    "googlenews": ("googlenews/TS", 11109, 152),
    "searchsnippets": ("searchsnippets/search_snippets_true_text", 12340, 8),
    "stackoverflow": ("stackoverflow/stackoverflow_true_text", 20000, 20),
    "tweet": ("tweet/tweet-original-order.txt", 2472, 89),
}
#: k-means runs per set, with seeds 0 .. runs-1
DEFAULT_RUNS = 10

# ---------------------------------------------------------------- SentEval (linear_probe.py, senteval.py)


@dataclass(frozen=True)
class ClassifierConfig:
    """SentEval's ``params.kfold`` + ``params.classifier`` (``nhid`` is always 0: logistic regression)."""

    name: str
    kfold: int
    optim: str
    batch_size: int
    tenacity: int
    epoch_size: int
    max_epoch: int = 200
    nhid: int = 0


#: ``--config``, as SentEval's README defines them
CONFIGS = {
    "default": ClassifierConfig("default", kfold=10, optim="adam", batch_size=64, tenacity=5, epoch_size=4),
    "prototyping": ClassifierConfig("prototyping", kfold=5, optim="rmsprop", batch_size=128, tenacity=3, epoch_size=2),
}

#: MRPC's features: SentEval's ``[|u-v|, u*v]``, or ``[u, v, |u-v|, u*v]``.
MRPC_FEATURES = ("senteval", "concat")
