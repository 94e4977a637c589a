"""The frozen word-prediction layer of DefSent (Tsukagoshi et al. 2021): a sentence vector in, vocabulary logits out.

Two kinds (``--word-head``):

- ``mlm``: the model's own pretrained masked-LM head, frozen, as DefSent's ``experiments/src/model.py``
  uses it (BERT: ``cls.predictions`` = dense + activation + LayerNorm, then the decoder tied to the input
  embeddings plus its bias; RoBERTa: ``lm_head``, the same shape). It is taken from transformers'
  ``AutoModelForMaskedLM`` of the checkpoint, whatever the family, and split at its output embeddings:
  the *transform* is the head with its decoder replaced by the identity, and the decoder is the matrix
  ``[E | b]`` (input embeddings and output bias). Then ``logits = [transform(u), 1] . [E | b]^T``, which is
  exactly the head's output, and the word objective becomes a bank objective over the vocabulary (the
  streaming ``bank_cross_entropy`` and the reverse-dictionary ranking work unchanged).
- ``embeddings``: ``logits = u . E^T`` with the frozen input embedding matrix E (no transform, no bias): the
  documented fallback for checkpoints without a trained MLM head (most sentence-transformers models,
  all-MiniLM-L6-v2 included). Not in DefSent.

The head is a snapshot taken when training starts (the decoder weight is copied, not tied), so it stays
what it was even if the encoder's embeddings train (``--train-embeddings``, DefSent's untied variant).
A trained checkpoint stores it in ``word_head.safetensors`` (docs/formats.md) so that ``eval-dict`` and
``lookup`` rank the vocabulary without the base model.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..errors import DefsentError
from ..formats.tensors import read_tensors, write_tensors
from .choices import WORD_HEADS

WORD_HEAD_FILE = "word_head.safetensors"


class WordTransform(nn.Module):
    """``u -> [transform(u), 1]`` (mlm, with the output bias as the matrix's last column) or ``u`` (embeddings)."""

    def __init__(self, transform: nn.Module | None, with_bias: bool):
        super().__init__()
        self.transform = transform
        self.with_bias = with_bias

    @property
    def mode_description(self) -> str:
        return "word-head mlm" if self.transform is not None else "word-head embeddings"

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        x = self.transform(pooled) if self.transform is not None else pooled
        if self.with_bias:
            x = torch.cat([x, torch.ones_like(x[..., :1])], dim=-1)
        return x


@dataclass
class WordHead:
    """A frozen word-prediction layer: ``logits = transform(u) . matrix^T`` over the vocabulary."""

    kind: str  # mlm | embeddings
    transform: WordTransform
    matrix: torch.Tensor  # (vocab, dim [+ 1]) float32, frozen

    def logits(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.transform(pooled) @ self.matrix.T

    def to(self, device) -> WordHead:
        return WordHead(self.kind, self.transform.to(device), self.matrix.to(device))


def check_word_head(kind: str) -> str:
    if kind not in WORD_HEADS:
        raise DefsentError(f"--word-head must be one of {', '.join(WORD_HEADS)}, not {kind!r}")
    return kind


def _freeze(module: nn.Module) -> nn.Module:
    for param in module.parameters():
        param.requires_grad_(False)
    return module.eval()


def _split_mlm_head(mlm) -> tuple[nn.Module, nn.Linear]:
    """(a copy of the head with its decoder replaced by the identity, the decoder) of an ``AutoModelForMaskedLM``."""
    decoder = mlm.get_output_embeddings()
    heads = [child for name, child in mlm.named_children() if name != mlm.base_model_prefix]
    names = [name for name, module in heads[0].named_modules() if module is decoder] if len(heads) == 1 else []
    if not isinstance(decoder, nn.Linear) or len(names) != 1 or not names[0]:
        raise DefsentError(
            f"cannot find the masked-LM head of this {mlm.config.model_type} model; pass --word-head embeddings"
        )
    saved = decoder
    parent_name, _, attr = names[0].rpartition(".")
    parent = heads[0].get_submodule(parent_name) if parent_name else heads[0]
    setattr(parent, attr, nn.Identity())  # copy the head without its decoder (the decoder is read from ``saved``)
    try:
        transform = copy.deepcopy(heads[0])
    finally:
        setattr(parent, attr, saved)
    return transform, saved


def _mlm_word_head(transformer_dir: Path) -> WordHead:
    from .models import quiet_transformers

    quiet_transformers()
    from transformers import AutoModelForMaskedLM

    try:
        mlm, loading = AutoModelForMaskedLM.from_pretrained(
            transformer_dir, dtype=torch.float32, output_loading_info=True
        )
    except Exception as exc:  # noqa: BLE001 - any failure is one line
        raise DefsentError(
            f"cannot load a masked-LM model from this checkpoint ({type(exc).__name__}); pass --word-head embeddings",
            path=transformer_dir,
        ) from None
    prefix = mlm.base_model_prefix + "."
    # the decoder weight is tied to the input embeddings: a checkpoint never stores it, so it is never missing
    missing = [
        key
        for key in loading.get("missing_keys", ())
        if not key.startswith(prefix) and not key.endswith("decoder.weight")
    ]
    if missing:
        raise DefsentError(
            f"this checkpoint has no trained masked-LM head ({len(missing)} weights missing, e.g. {missing[0]}): "
            "DefSent's word prediction needs one; pass --word-head embeddings (logits = u . E^T with the frozen "
            "input embeddings) instead",
            path=transformer_dir,
        )
    transform, decoder = _split_mlm_head(mlm)
    weight = decoder.weight.detach().clone().float()
    bias = decoder.bias
    with_bias = bias is not None
    matrix = torch.cat([weight, bias.detach().float().unsqueeze(1)], dim=1) if with_bias else weight
    return WordHead("mlm", _freeze(WordTransform(transform.float(), with_bias)), matrix.contiguous())


def load_word_head(loaded, kind: str) -> WordHead:
    """The frozen word head of ``loaded`` (an :class:`~.models.LoadedModel`) of kind ``mlm`` or ``embeddings``."""
    check_word_head(kind)
    if kind == "embeddings":
        matrix = loaded.model.get_input_embeddings().weight.detach().clone().float()
        if matrix.shape[1] != loaded.dim:
            raise DefsentError(
                f"this model's input embeddings have {matrix.shape[1]} dims and its hidden states {loaded.dim}: "
                "u . E^T needs them equal; use --word-head mlm",
                path=loaded.path,
            )
        head = WordHead("embeddings", _freeze(WordTransform(None, False)), matrix.contiguous())
    else:
        head = _mlm_word_head(loaded.transformer_dir or loaded.path)
    return head.to(loaded.device)


def save_word_head(path: Path, head: WordHead) -> None:
    """Write the head to ``path`` (safetensors: ``matrix`` and ``transform.*``; the kind in the metadata)."""
    tensors = {"matrix": head.matrix.detach().cpu().contiguous()}
    if head.transform.transform is not None:
        for key, value in head.transform.transform.state_dict().items():
            tensors[f"transform.{key}"] = value.detach().cpu().contiguous()
    meta = {"kind": head.kind, "with_bias": head.transform.with_bias}
    write_tensors(path, tensors, meta)


def read_word_head(folder: Path, model) -> WordHead:
    """The head a trained checkpoint stored (``model``: its AutoModel, whose config rebuilds the transform)."""
    path = Path(folder) / WORD_HEAD_FILE
    tensors, meta = read_tensors(path, "the checkpoint's word head")
    if not isinstance(meta, dict) or meta.get("kind") not in WORD_HEADS or "matrix" not in tensors:
        raise DefsentError("not a defsent word head file", path=path)
    transform = None
    if meta["kind"] == "mlm":
        from transformers import AutoModelForMaskedLM

        with torch.device("meta"):  # the architecture only: no weights allocated, no draw on the global RNG
            shell = AutoModelForMaskedLM.from_config(model.config)
        transform, _ = _split_mlm_head(shell)
        state = {k.removeprefix("transform."): v for k, v in tensors.items() if k.startswith("transform.")}
        try:
            transform.load_state_dict(state, assign=True)  # the stored tensors replace the meta ones
        except RuntimeError:
            raise DefsentError("the word head does not fit this model's architecture", path=path) from None
        if any(t.is_meta for t in (*transform.parameters(), *transform.buffers())):
            raise DefsentError("the word head does not fit this model's architecture", path=path)
    head = WordHead(meta["kind"], _freeze(WordTransform(transform, bool(meta.get("with_bias")))), tensors["matrix"])
    return head
