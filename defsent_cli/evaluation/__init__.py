"""Evaluations on local SentEval-layout data: unsupervised STS and the SentEval transfer tasks.

Library entry points (commands only parse options and call these)::

    from defsent_cli.evaluation import evaluate_sts, evaluate_senteval
    loaded = load_model("ckpt/", "cpu")
    dev = evaluate_sts(loaded, data_root, tasks=["STS-B"], split="dev", pooling="mean")
    dev["tasks"]["STS-B"]["spearman"]        # STS-B dev Spearman x100
    evaluate_sts(loaded, data_root)["average"]["spearman"]   # 7-task average ("all" aggregation)
"""

from .results import resolve_data_root
from .senteval import CONFIGS, TRANSFER_TASKS, evaluate_senteval, senteval_table
from .sts import AGGREGATIONS, STS_TASKS, STSTask, evaluate_sts, load_sts_tasks, sts_table

__all__ = [
    "AGGREGATIONS",
    "CONFIGS",
    "STS_TASKS",
    "STSTask",
    "TRANSFER_TASKS",
    "evaluate_senteval",
    "evaluate_sts",
    "load_sts_tasks",
    "resolve_data_root",
    "senteval_table",
    "sts_table",
]
