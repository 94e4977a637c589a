"""Evaluations on local data: unsupervised STS (:mod:`.sts`, data in :mod:`.sts_data`, scores in
:mod:`.correlations`), the SentEval transfer tasks (:mod:`.senteval`, :mod:`.senteval_data`,
:mod:`.linear_probe`), the reverse dictionary (:mod:`.reverse_dict`), Ditto's head search
(:mod:`.ditto`), mteb's evaluator (:mod:`.mteb`), and choosing between models (:mod:`.criteria`,
:mod:`.selection`); :mod:`.choices` names what the commands offer (numpy- and torch-free).

Library entry points (commands only parse options and call these)::

    from defsent_cli.encoder.models import load_model
    from defsent_cli.evaluation.sts import evaluate_sts
    loaded = load_model("ckpt/", "cpu")
    dev = evaluate_sts(loaded, data_root, tasks=["STS-B"], split="dev", pooling="mean")
    dev["tasks"]["STS-B"]["spearman"]        # STS-B dev Spearman x100
    evaluate_sts(loaded, data_root)["average"]["spearman"]   # 7-task average ("all" aggregation)
"""
