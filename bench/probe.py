"""The SentEval probe: defsent's batched classifier against SentEval's own (one fit after another), on one
task's real features, in one run.

    flock /tmp/defsent-heavy.lock .venv/bin/python bench/probe.py [--task MR] [--peer-fits 8] [--features F.npy]

In this order:
  1. the task's sentences encoded once by the model (default: the bundled all-MiniLM-L6-v2, mean pooling),
     or read back from ``--features`` (written there the first time); not timed against anything;
  2. the task's protocol, SentEval's ``InnerKFoldClassifier`` (MR, CR, SUBJ, MPQA): k outer folds x the 4 L2
     values x k inner folds, then k refits (410 fits with the default config);
  3. peer: SentEval's ``PyTorchClassifier`` + ``MLP(nhid=0)`` (the line-by-line port in
     tests/senteval_reference.py: nn.Linear, autograd, torch.optim) on the first ``--peer-fits`` fits of the
     protocol, one after another, as SentEval runs them;
  4. ours: ``fit_linear`` on the same fits, then ``inner_kfold`` on the whole protocol.
Both run on one thread (``fit_linear`` sets it; SentEval's tiny steps gain nothing from more). Prints seconds per
fit for each, the speed-up, how far our fits are from the peer's (dev accuracy, weights), and the task's
accuracy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench.common import data_root, minilm_path  # noqa: E402
from defsent_cli.evaluation.linear_probe import fit_linear, get_config  # noqa: E402
from defsent_cli.evaluation.senteval import inner_kfold, inner_kfold_jobs  # noqa: E402
from defsent_cli.evaluation.senteval_data import load_transfer_task  # noqa: E402


def features(task: str, model: str, cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
    loaded = load_transfer_task(data_root(), task)
    texts, labels = loaded.parts["all"]
    if cache is not None and cache.is_file():
        X = np.load(cache)
    else:
        from defsent_cli.encoder.models import load_model
        from defsent_cli.evaluation.common import as_encoder, encode_unique

        start = time.perf_counter()
        X = encode_unique(as_encoder(load_model(model, "cpu"), "mean"), texts, task)
        print(f"encoded {len(texts):,} sentences in {time.perf_counter() - start:.1f} s", flush=True)
        if cache is not None:
            np.save(cache, X)
    if len(X) != len(labels):
        sys.exit(f"{cache} holds {len(X)} rows for {len(labels)} sentences: delete it")
    return X, np.asarray(labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="MR", choices=("MR", "CR", "SUBJ", "MPQA"))
    parser.add_argument("--model", default=None, help="default: the bundled all-MiniLM-L6-v2")
    parser.add_argument("--config", default="default", choices=("default", "prototyping"))
    parser.add_argument("--peer-fits", type=int, default=8)
    parser.add_argument("--features", type=Path, default=None, help="cache of the encoded task (.npy)")
    args = parser.parse_args()
    from senteval_reference import SentEvalMLP

    X, y = features(args.task, args.model or minilm_path(), args.features)
    config = get_config(args.config)
    seed = 1111
    jobs = inner_kfold_jobs(X, y, config, seed)[1][: args.peer_fits]  # the protocol's first fits, SentEval's order

    torch.set_num_threads(1)
    start = time.perf_counter()
    peer = []
    for job in jobs:
        mlp = SentEvalMLP(config, X.shape[1], 2, job.l2reg, seed=seed)
        peer.append((mlp.fit(X[job.train], y[job.train], validation_data=(X[job.dev], y[job.dev])), mlp))
    peer_s = (time.perf_counter() - start) / len(jobs)
    start = time.perf_counter()
    ours = fit_linear(X, y, jobs, 2, config, seed)
    ours_s = (time.perf_counter() - start) / len(jobs)
    dacc = max(abs(fit.dev_accuracy - acc) for fit, (acc, _) in zip(ours, peer, strict=True))
    dw = max(
        float(np.abs(fit.weight - mlp.model[0].weight.detach().numpy().T).max())
        for fit, (_, mlp) in zip(ours, peer, strict=True)
    )
    print(f"{args.task}, {len(X):,} x {X.shape[1]}, {args.config} config, first {len(jobs)} fits of the protocol:")
    print(f"  peer (SentEval's classifier, one fit after another): {peer_s:.2f} s a fit")
    print(f"  ours (fit_linear, the fits side by side):             {ours_s:.2f} s a fit  ({peer_s / ours_s:.1f}x)")
    print(f"  largest difference: dev accuracy {dacc:.4f}, weight {dw:.2e}")
    start = time.perf_counter()
    whole = inner_kfold(X, y, 2, config, seed)
    seconds = time.perf_counter() - start
    print(
        f"  ours, the whole protocol: {whole['fits']} fits in {seconds:.1f} s ({seconds / whole['fits']:.2f} s a fit), "
        f"accuracy {whole['acc']:.2f} (dev {whole['devacc']:.2f})"
    )


if __name__ == "__main__":
    main()
