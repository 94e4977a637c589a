"""Load the weights of several model folders, check they can be merged, and combine them.

Models merge only when they share the architecture (model type and every size in the config), the
tokenizer (the same vocabulary) and every weight's name and shape; anything else is a one-line error
saying which two folders differ and how. Encoder weights only: the training head (the pooler dense
layer a defsent checkpoint trained) is not part of the merge; the merged model keeps the first
model's pooler weights and is used without a head, as every defsent model at inference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ..encoder.models import LoadedModel, load_model
from ..errors import DefsentError

#: Config entries that must agree (others, e.g. dropout or the transformers version, may differ).
ARCHITECTURE_KEYS = (
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "type_vocab_size",
    "hidden_act",
    "position_embedding_type",
)
HEAD_PREFIX = "pooler."


@dataclass
class Ingredient:
    """One model's weights (CPU, float32) and what the merge checks about it."""

    path: Path
    weights: dict[str, torch.Tensor]
    architecture: dict
    vocabulary: dict
    pooling: str
    info: dict


def load_ingredient(path: str | Path) -> Ingredient:
    loaded = load_model(path, "cpu")
    config = loaded.model.config.to_dict()
    weights = {k: v.detach().float().clone() for k, v in loaded.model.state_dict().items()}
    return Ingredient(
        Path(path),
        weights,
        {key: config.get(key) for key in ARCHITECTURE_KEYS},
        loaded.tokenizer.get_vocab(),
        loaded.default_pooling,
        loaded.info,
    )


def check_compatible(ingredients: Sequence[Ingredient]) -> None:
    """Refuse models that do not share architecture, tokenizer and weight shapes (naming the two folders)."""
    first = ingredients[0]
    for other in ingredients[1:]:
        pair = f"{first.path} and {other.path}"
        differ = [k for k in ARCHITECTURE_KEYS if first.architecture[k] != other.architecture[k]]
        if differ:
            key = differ[0]
            raise DefsentError(
                f"{pair} have different architectures ({key}: {first.architecture[key]} vs {other.architecture[key]}); "
                "only checkpoints of one base model merge"
            )
        if first.vocabulary != other.vocabulary:
            raise DefsentError(
                f"{pair} have different tokenizers (vocabularies differ); only checkpoints of one base model merge"
            )
        if first.weights.keys() != other.weights.keys():
            missing = sorted(first.weights.keys() ^ other.weights.keys())[:3]
            raise DefsentError(f"{pair} have different weights ({', '.join(missing)} ...)")
        for name, tensor in first.weights.items():
            if tensor.shape != other.weights[name].shape:
                raise DefsentError(
                    f"{pair} differ in the shape of {name}: {tuple(tensor.shape)} vs {tuple(other.weights[name].shape)}"
                )


def combine(ingredients: Sequence[Ingredient], coefficients: Sequence[float]) -> dict[str, torch.Tensor]:
    """sum_i c_i * theta_i over the encoder weights; the head (pooler) is the first model's, unchanged."""
    if len(ingredients) != len(coefficients):
        raise ValueError("one coefficient per model")
    out = {}
    for name, tensor in ingredients[0].weights.items():
        if name.startswith(HEAD_PREFIX) or not torch.is_floating_point(tensor):
            out[name] = tensor.clone()  # the head, and integer buffers such as position ids
            continue
        total = torch.zeros_like(tensor)
        for ingredient, c in zip(ingredients, coefficients, strict=True):
            total.add_(ingredient.weights[name], alpha=float(c))
        out[name] = total
    return out


def interpolate(base: Ingredient, model: Ingredient, alpha: float) -> dict[str, torch.Tensor]:
    """WiSE-FT: (1 - alpha) * theta_base + alpha * theta_model."""
    return combine([base, model], [1.0 - alpha, alpha])


def with_weights(loaded: LoadedModel, weights: dict[str, torch.Tensor]) -> LoadedModel:
    """The loaded model, its weights replaced (in place) by ``weights``."""
    loaded.model.load_state_dict(weights)
    return loaded
