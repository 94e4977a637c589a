"""The training head between pooled states and the bank: ``activation(dense(pool(h)))``.

DefSent+ (``TrainEncoder.py``) always trains through the model's pooler dense layer:
- BERT family: the model's own pooler (dense + tanh), trained with next-sentence
  prediction (mode ``keep``);
- RoBERTa family: the pooler dense gets the weight and bias of the model's own MLM
  head dense layer (``lm_head.dense``) and the activation becomes GELU (mode
  ``mlm-dense``; the reference copies from the original roberta-base/large head,
  we copy from the model being trained, which is the same for plain RoBERTa);
- ``none``: no head, logits come from the pooled states directly.  Not in the
  paper: offered for checkpoints whose pooler was never trained (most
  sentence-transformers models, e.g. all-MiniLM-L6-v2, whose pooler bias is all
  zeros), where bending the encoder towards a random projection hurts.
- ``linear``: not in the paper either: the pooler dense re-initialised to the
  identity (zero bias), no activation, trained with the encoder (``--head-lr``
  gives it its own rate).  It starts where ``none`` starts but can learn a
  linear map into the bank's basis, which an ICA-transformed bank asks for; in
  DefSent+ the pre-trained pooler dense plays that part.
``auto`` (the default) is the paper's head where the model has it trained, else ``none``.
Inference never uses the head; ``lookup`` and ``eval-dict`` do, as in training.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from torch import nn

from .. import log
from ..errors import DefsentError
from .choices import POOLER_MODES

_MLM_DENSE_FAMILIES = {"roberta", "xlm-roberta", "camembert", "data2vec-text"}


class PoolerHead(nn.Module):
    """``activation(dense(x))``, or the identity when there is no dense layer."""

    def __init__(self, dense: nn.Linear | None, activation: str = "tanh"):
        super().__init__()
        self.dense = dense
        self.activation_name = activation
        self.activation = {"tanh": nn.Tanh(), "gelu": nn.GELU(), "identity": nn.Identity()}[activation]

    @property
    def mode_description(self) -> str:
        return "none" if self.dense is None else f"dense+{self.activation_name}"

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        if self.dense is None:
            return pooled
        return self.activation(self.dense(pooled.to(self.dense.weight.dtype)))  # fp16/bf16 weights at inference


def fresh_mlp(dim: int, std: float = 0.02) -> PoolerHead:
    """A new dense layer + tanh, weights N(0, ``std``) and zero bias as BERT initialises them: unsupervised
    SimCSE's training-only MLP over CLS (its ``MLPLayer``, absent from the checkpoint it starts from)."""
    dense = nn.Linear(dim, dim)
    with torch.no_grad():
        dense.weight.normal_(0.0, std)
        dense.bias.zero_()
    return PoolerHead(dense, "tanh")


def resolve_pooler_mode(mode: str, model_type: str) -> str:
    """``auto`` -> ``mlm-dense`` for the RoBERTa family, ``keep`` otherwise."""
    if mode not in POOLER_MODES:
        raise DefsentError(f"unknown --pooler {mode!r}; choose one of {', '.join(POOLER_MODES)}")
    if mode == "auto":
        return "mlm-dense" if model_type in _MLM_DENSE_FAMILIES else "keep"
    return mode


@functools.lru_cache(maxsize=2)  # --pooler auto looks for it before setup_pooler copies it: one load
def _mlm_dense(transformer_dir: Path) -> nn.Linear:
    """The dense layer of the checkpoint's own MLM head (``lm_head.dense`` / ``cls.predictions.transform.dense``)."""
    from transformers import AutoModelForMaskedLM

    try:
        mlm, loading = AutoModelForMaskedLM.from_pretrained(
            transformer_dir, dtype=torch.float32, output_loading_info=True
        )
    except Exception as exc:  # noqa: BLE001
        raise DefsentError(f"cannot load an MLM head for --pooler mlm-dense ({type(exc).__name__})") from None
    names = [n for n in loading.get("missing_keys", ()) if "dense" in n and ("lm_head" in n or "predictions" in n)]
    if names:
        raise DefsentError(
            "the checkpoint has no trained MLM head dense layer, so --pooler mlm-dense is impossible; "
            "use --pooler keep or --pooler none",
            path=transformer_dir,
        )
    head = getattr(mlm, "lm_head", None)
    dense = getattr(head, "dense", None)
    if dense is None:
        cls = getattr(mlm, "cls", None)
        dense = getattr(getattr(getattr(cls, "predictions", None), "transform", None), "dense", None)
    if not isinstance(dense, nn.Linear):
        raise DefsentError("cannot find the MLM head dense layer of this model; use --pooler keep or none")
    return dense


def setup_pooler(model, mode: str, transformer_dir: Path, missing_keys: set[str], warn: bool = True) -> PoolerHead:
    """Build the training head for ``model`` (an AutoModel) and the given ``--pooler`` mode.

    ``auto`` follows the model: the paper's head (``mlm-dense`` for the RoBERTa family, the pooler ``keep`` for
    the others) when the folder has it trained, else no head (``none``): a pooler that is absent, missing from
    the checkpoint or never trained (bias all zero, as in most sentence-transformers folders) would bend the
    encoder towards a random projection. What was chosen is said as a note."""
    auto = mode == "auto"
    mode = resolve_pooler_mode(mode, getattr(model.config, "model_type", ""))
    if auto:
        why = _no_head_reason(model, mode, transformer_dir, missing_keys)
        if why:
            if warn:
                log.note(f"--pooler auto: {why}, so training uses no head (--pooler keep or linear to choose one)")
            mode = "none"
    if mode == "none":
        return PoolerHead(None, "identity")
    pooler = getattr(model, "pooler", None)
    dense = getattr(pooler, "dense", None)
    if not isinstance(dense, nn.Linear):
        raise DefsentError(f"this {model.config.model_type} model has no pooler dense layer; use --pooler none")
    if mode == "linear":
        with torch.no_grad():
            dense.weight.copy_(torch.eye(*dense.weight.shape, dtype=dense.weight.dtype))
            if dense.bias is not None:
                dense.bias.zero_()
        return PoolerHead(dense, "identity")
    if mode == "mlm-dense":
        source = _mlm_dense(transformer_dir)
        with torch.no_grad():
            dense.weight.copy_(source.weight)
            dense.bias.copy_(source.bias)
        pooler.activation = nn.GELU()  # as the reference; not persisted by save_pretrained (defsent.json records it)
        return PoolerHead(dense, "gelu")
    if any(key.startswith("pooler.") for key in missing_keys):
        raise DefsentError(
            "the checkpoint has no pooler weights (it would be trained from a random init); "
            "use --pooler none, or --pooler mlm-dense for a RoBERTa-family model",
            path=transformer_dir,
        )
    if warn and pooler_looks_untrained(dense):
        log.warn(
            "the pooler looks untrained (bias all zero): training bends the encoder towards a random "
            "projection; consider --pooler none"
        )
    return PoolerHead(dense, "tanh")


def _no_head_reason(model, mode: str, transformer_dir: Path, missing_keys: set[str]) -> str | None:
    """Why ``--pooler auto`` trains no head for this model (None: it has the paper's head, trained)."""
    dense = getattr(getattr(model, "pooler", None), "dense", None)
    if not isinstance(dense, nn.Linear):
        return "the model has no pooler"
    if mode == "mlm-dense":
        try:
            _mlm_dense(transformer_dir)
        except DefsentError:
            return "the checkpoint has no trained MLM head dense layer to copy into the pooler"
        return None
    if any(key.startswith("pooler.") for key in missing_keys):
        return "the checkpoint has no pooler weights"
    if pooler_looks_untrained(dense):
        return "the model's pooler looks untrained (bias all zero)"
    return None


def pooler_looks_untrained(dense: nn.Linear) -> bool:
    """True when the pooler bias is exactly zero, the mark of a never-trained init."""
    return dense.bias is not None and bool(torch.all(dense.bias == 0))


def head_from_info(model, info: dict) -> PoolerHead:
    """Rebuild the training head of a defsent checkpoint from its ``defsent.json``."""
    head = info.get("head", "none")
    if head == "none":
        return PoolerHead(None, "identity")
    activation = {"dense+gelu": "gelu", "dense+identity": "identity"}.get(head, "tanh")
    dense = getattr(getattr(model, "pooler", None), "dense", None)
    if not isinstance(dense, nn.Linear):
        raise DefsentError("the checkpoint's head needs a pooler dense layer, and the model has none")
    return PoolerHead(dense, activation)
