"""Scoring the model on a dev criterion while it trains, and keeping the best checkpoint seen.

Every ``--eval-every`` steps (and at the last step) the model, switched to eval mode, is scored by a
criterion of :mod:`defsent_cli.evaluation.criteria` (default ``dev``: mean of STS-B dev and SICK-R
trial Spearman), with the pooling the checkpoint will be used with and, as ``eval-sts``, the model
folder's own normalisation (the cosine does not change with it). The untrained model is scored
too, as step 0 of the curve, for reference; it is never the kept checkpoint (to fall back to the
base model when nothing beats it, merge with it: ``defsent merge BASE CKPT --alpha 0:1:0.1``).
With ``--keep best`` the best-scoring weights are held on the CPU and written at the end.
"""

from __future__ import annotations

import time

import torch

from .. import distributed
from ..evaluation.criteria import Criterion


class DevTracker:
    """The curve of dev scores of one run and the best trained weights so far."""

    def __init__(self, criterion: Criterion, pooling: str, keep: str):
        self.criterion, self.pooling, self.keep = criterion, pooling, keep
        self.curve: list[dict] = []  # {"step", "score", "seconds"}
        self.best: dict | None = None  # the best row of the curve (step > 0)
        self.best_weights: dict[str, torch.Tensor] | None = None

    def evaluate(self, loaded, step: int) -> dict:
        """Score the model now (eval mode, no gradients) and remember its weights if they are the best."""
        model = loaded.model
        was_training = model.training
        model.eval()
        started = time.perf_counter()
        try:
            score = self.criterion.score(loaded, pooling=self.pooling)
        finally:
            model.train(was_training)
        row = {"step": step, "score": round(score, 4), "seconds": round(time.perf_counter() - started, 2)}
        self.curve.append(row)
        if step > 0 and (self.best is None or score > self.best["score"]):
            self.best = row
            if self.keep == "best" and distributed.is_main():  # rank 0 writes the checkpoint
                self.best_weights = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        return row

    def restore_best(self, model) -> None:
        """Load the best weights seen into ``model`` (with ``keep == "best"``)."""
        if self.keep == "best" and self.best_weights is not None:
            model.load_state_dict(self.best_weights)

    # the part of the resumable state this holds (training/state.py stores it)

    def state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        return {"curve": self.curve, "best": self.best}, dict(self.best_weights or {})

    def restore(self, doc: dict, tensors: dict[str, torch.Tensor]) -> None:
        self.curve, self.best = list(doc.get("curve", [])), doc.get("best")
        self.best_weights = tensors or None
