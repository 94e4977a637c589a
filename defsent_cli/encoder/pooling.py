"""Every pooling, one function each, in one registry.

A pooling turns the encoder's token states into one vector per text.  All of
them take the masked token states, so padding never changes a result:

- ``cls``:    the first token's last-layer state (no pooler), as DefSent+'s AC bank.
- ``mean``:   masked mean of the last layer, special tokens included (SimCSE "avg",
              DefSent+'s AMP bank, sentence-transformers' mean pooling).
- ``max``:    masked max over time of the last layer (DefSent, SBERT).
- ``prompt``: the last-layer state at the [MASK] token(s) of a PromptBERT template;
              several masks are averaged. The template is applied before tokenising.
- ``prompt-avg``: masked mean of every token of the templated input, template words and
              [MASK] included (Stankevičius & Lukoševičius 2024, T0 "avg." row).
- ``first-last``: ``mean`` over the embedding output and the last layer (``--layers first-last``).
- ``ditto``:  Σ_i A_ii · h_i, the token states weighted by the diagonal of one attention head's
              post-softmax matrix (Chen et al. 2023), padding masked, no division by N; over
              the first-last layers by default, as the paper's main rows.

A pooling can also read a layer set (``layers``: indices into ``hidden_states``, 0 = the
embedding output, L = the last layer; the states of the chosen layers are averaged before
pooling, so ``(0, L)`` with ``mean`` is SimCSE/Ditto's "first-last avg.") and token weights
(:mod:`defsent_cli.token_weights`: idf, dropped bias tokens) that multiply the attention mask.
:func:`build_pooling` makes one from the command-line options; :func:`get_pooling` gives the
plain registered ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..errors import DefsentError

if TYPE_CHECKING:  # torch only where a pooling runs: the command line lists POOLINGS without importing it
    import torch

# DefSent+ / PromptBERT template, with the model's own mask token put in for [MASK].
PROMPT_TEMPLATE = 'This sentence : "[X]" means [MASK] .'

# Named templates: T0 is PromptBERT's as printed in its paper, T1-T4 Stankevičius & Lukoševičius
# (2024, Table 1), with ASCII quotes. "defsent" is the reference code's spacing (the default).
TEMPLATES: dict[str, str] = {
    "defsent": PROMPT_TEMPLATE,
    "T0": 'This sentence: "[X]" means [MASK].',
    "T1": 'This sentence: "[X]" means [MASK][MASK].',
    "T2": 'This sentence: "[X]" means "[MASK][MASK]" and is about [MASK].',
    "T3": 'This sentence from the paraphrase dictionary: "[X]" means "[MASK]", which is about [MASK].',
    "T4": 'This sentence from the dictionary: "[X]" means "[MASK]" and is about [MASK], which is a synonym for [MASK].',
}

#: ``--layers`` aliases; "first-last" is Ditto's code and the SimCSE paper: hidden_states[0] (the
#: embedding output) + the last layer. ``--layers 1,L`` is the fixed-SimCSE / Stankevičius variant.
LAYER_ALIASES = {"last": (-1,), "first-last": (0, -1)}

#: Ditto's default head, 1-based "layer-head" as the paper writes it (its choice for bert-base-uncased).
DITTO_DEFAULT_HEAD = "1-10"


@dataclass(frozen=True)
class PoolingInput:
    """What a pooling may read from one batch."""

    last_hidden_state: torch.Tensor  # (B, T, H)
    attention_mask: torch.Tensor  # (B, T), 1 for real tokens
    input_ids: torch.Tensor  # (B, T)
    mask_token_id: int | None = None
    token_weights: torch.Tensor | None = None  # (B, T) float, multiplies the mask in weighted poolings
    attention_diag: torch.Tensor | None = None  # (B, T) the Ditto head's A_ii


def _weights(batch: PoolingInput) -> torch.Tensor:
    """The attention mask times the token weights (when there are any)."""
    mask = batch.attention_mask.to(batch.last_hidden_state.dtype)
    return mask if batch.token_weights is None else mask * batch.token_weights.to(mask.dtype)


def pool_cls(batch: PoolingInput) -> torch.Tensor:
    return batch.last_hidden_state[:, 0]


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``states`` over positions where ``mask`` is 1 (any float/int mask)."""
    weights = mask.to(states.dtype).unsqueeze(-1)
    return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)


def pool_mean(batch: PoolingInput) -> torch.Tensor:
    """Masked mean; with token weights, Σ w_n h_n with the weights rescaled to sum to 1 per text."""
    return masked_mean(batch.last_hidden_state, _weights(batch))


def pool_max(batch: PoolingInput) -> torch.Tensor:
    """Masked max over time (tokens with weight 0 are left out too)."""
    import torch

    states = batch.last_hidden_state
    fill = torch.finfo(states.dtype).min
    masked = states.masked_fill(_weights(batch).unsqueeze(-1) == 0, fill)
    return masked.max(dim=1).values


def pool_ditto(batch: PoolingInput) -> torch.Tensor:
    """Ditto: Σ_i A_ii · m_i · h_i (no division by N, no renormalisation; padding m_i = 0)."""
    if batch.attention_diag is None:
        raise DefsentError("ditto pooling needs the attention diagonal of its head")
    weights = batch.attention_diag.to(batch.last_hidden_state.dtype) * _weights(batch)
    return (batch.last_hidden_state * weights.unsqueeze(-1)).sum(dim=1)


def pool_prompt(batch: PoolingInput) -> torch.Tensor:
    if batch.mask_token_id is None:
        raise DefsentError("prompt pooling needs a tokenizer with a mask token")
    is_mask = (batch.input_ids == batch.mask_token_id) & (batch.attention_mask == 1)
    # a safety net on the CPU only: on a GPU it would wait for the GPU at every batch, and tokenize() never
    # drops the template's mask token (it truncates the sentence, or refuses a --max-length too short)
    if not is_mask.is_cuda and not bool(is_mask.any(dim=1).all()):
        raise DefsentError("prompt pooling: an input lost its mask token (template too long for --max-length?)")
    return masked_mean(batch.last_hidden_state, is_mask)


@dataclass(frozen=True)
class Pooling:
    """A named pooling and what it reads.

    ``template`` is applied to each text before tokenising; ``layers`` are indices into
    ``hidden_states`` (None: the last layer); ``ditto_head`` is the 0-based (layer, head) whose
    attention diagonal Ditto reads; ``weighting`` maps token ids to weights (idf, dropped tokens).
    """

    name: str
    fn: Callable[[PoolingInput], torch.Tensor]
    template: str | None = None
    help: str = ""
    layers: tuple[int, ...] | None = None
    ditto_head: tuple[int, int] | None = None
    weighting: object | None = field(default=None, compare=False)  # a token_weights.TokenWeighting

    def __call__(self, batch: PoolingInput) -> torch.Tensor:
        return self.fn(batch)

    @property
    def label(self) -> str:
        """A short name for tables and JSON: ``mean``, ``ditto[1-10 @0,6]``, ``prompt-avg[T4]+idf``."""
        parts = []
        if self.ditto_head is not None:
            parts.append(f"{self.ditto_head[0] + 1}-{self.ditto_head[1] + 1}")
        if self.layers is not None:
            parts.append("layers " + ",".join(map(str, self.layers)))
        if self.template is not None and self.template != POOLINGS.get(self.name, self).template:
            named = [k for k, v in TEMPLATES.items() if v == self.template]
            parts.append(named[0] if named else "custom template")
        text = self.name + (f"[{'; '.join(parts)}]" if parts else "")
        return text + (f"+{self.weighting.name}" if self.weighting is not None else "")

    def describe(self) -> dict:
        """Every setting that changes the vectors, for results JSON and output attributes."""
        info: dict = {"pooling": self.name, "label": self.label}
        if self.template is not None:
            info["template"] = self.template
        if self.layers is not None:
            info["layers"] = list(self.layers)
        if self.ditto_head is not None:
            info["ditto_head"] = f"{self.ditto_head[0] + 1}-{self.ditto_head[1] + 1}"
        if self.weighting is not None:
            info["weighting"] = self.weighting.describe()
        return info


POOLINGS: dict[str, Pooling] = {
    "cls": Pooling("cls", pool_cls, help="first token, last layer, no pooler"),
    "mean": Pooling("mean", pool_mean, help="masked mean of the last layer, special tokens included"),
    "max": Pooling("max", pool_max, help="masked max of the last layer"),
    "prompt": Pooling("prompt", pool_prompt, PROMPT_TEMPLATE, help=f"[MASK] state of the template {PROMPT_TEMPLATE}"),
    "prompt-avg": Pooling(
        "prompt-avg", pool_mean, PROMPT_TEMPLATE, help="mean of every token of the templated input (--template)"
    ),
    "first-last": Pooling(
        "first-last", pool_mean, layers=LAYER_ALIASES["first-last"], help="mean of hidden_states[0] and the last layer"
    ),
    "ditto": Pooling(
        "ditto",
        pool_ditto,
        layers=LAYER_ALIASES["first-last"],
        ditto_head=(0, 9),
        help=f"attention-diagonal weighted sum (--ditto-head, default {DITTO_DEFAULT_HEAD})",
    ),
}

#: Poolings whose token weights may be changed by --weighting / --drop-tokens.
WEIGHTABLE = ("mean", "max", "prompt-avg", "first-last")


def get_pooling(name: str) -> Pooling:
    """The registered pooling called ``name`` (a DefsentError lists the choices)."""
    try:
        return POOLINGS[name]
    except KeyError:
        raise DefsentError(f"unknown pooling {name!r}; choose one of {', '.join(POOLINGS)}") from None


def parse_layers(spec: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """``"0,12"``, ``"first-last"``, ``"last"`` or indices -> a tuple (negative counts from the end)."""
    if spec is None or spec == "":
        return None
    if isinstance(spec, str):
        if spec in LAYER_ALIASES:
            return LAYER_ALIASES[spec]
        try:
            values = tuple(int(v) for v in spec.split(","))
        except ValueError:
            raise DefsentError(
                f"--layers {spec!r}: give comma-separated layer indices (0 = embedding output) or one of "
                f"{', '.join(LAYER_ALIASES)}"
            ) from None
    else:
        values = tuple(int(v) for v in spec)
    if not values:
        raise DefsentError("--layers needs at least one layer")
    return values


def resolve_layers(layers: tuple[int, ...], num_layers: int) -> tuple[int, ...]:
    """Negative indices made absolute against a model with ``num_layers`` transformer layers; checked."""
    out = []
    for index in layers:
        absolute = index + num_layers + 1 if index < 0 else index
        if not 0 <= absolute <= num_layers:
            raise DefsentError(
                f"--layers: index {index} is out of range for a {num_layers}-layer model "
                f"(0 = embedding output ... {num_layers} = last layer)"
            )
        out.append(absolute)
    return tuple(out)


def parse_ditto_head(spec: str) -> tuple[int, int]:
    """``"L-H"`` (1-based, as the Ditto paper writes heads) -> 0-based (layer, head)."""
    try:
        layer, head = (int(v) for v in spec.split("-"))
    except ValueError:
        raise DefsentError(f"--ditto-head {spec!r}: write LAYER-HEAD, 1-based, e.g. 1-10") from None
    if layer < 1 or head < 1:
        raise DefsentError(f"--ditto-head {spec!r}: layer and head are 1-based")
    return layer - 1, head - 1


def resolve_template(template: str | None) -> str | None:
    """A template name (T0-T4, defsent) or a user template holding [X] and [MASK]."""
    if template is None:
        return None
    if template in TEMPLATES:
        return TEMPLATES[template]
    if "[X]" not in template or "[MASK]" not in template:
        raise DefsentError(
            f"--template {template!r}: name one of {', '.join(TEMPLATES)} or give a template with [X] and [MASK]"
        )
    return template


def build_pooling(
    name: str | None,
    layers: str | Sequence[int] | None = None,
    template: str | None = None,
    ditto_head: str | None = None,
    weighting: object | None = None,
) -> Pooling:
    """A pooling from the command-line options, every combination checked (a one-line DefsentError)."""
    base = get_pooling(name or "mean")
    changes: dict = {}
    if layers is not None:
        if base.name in ("prompt", "prompt-avg"):
            raise DefsentError("--layers does not apply to prompt poolings (they read the last layer)")
        changes["layers"] = parse_layers(layers)
    if template is not None:
        if base.template is None:
            raise DefsentError("--template applies to --pooling prompt or prompt-avg")
        changes["template"] = resolve_template(template)
    if ditto_head is not None:
        if base.name != "ditto":
            raise DefsentError("--ditto-head applies to --pooling ditto")
        changes["ditto_head"] = parse_ditto_head(ditto_head)
    if weighting is not None:
        if base.name not in WEIGHTABLE:
            raise DefsentError(f"token weighting applies to --pooling {', '.join(WEIGHTABLE)}, not {base.name}")
        if base.name == "max" and getattr(weighting, "kind", "") == "idf":
            raise DefsentError("idf weights a mean; with max pooling only --drop-tokens applies")
        changes["weighting"] = weighting
    return replace(base, **changes) if changes else base


def fit_to_model(pooling: Pooling, config) -> Pooling:
    """Check the pooling against a model config: layer indices made absolute, the Ditto head in range."""
    changes: dict = {}
    num_layers = int(getattr(config, "num_hidden_layers", 0) or 0)
    if pooling.layers is not None:
        changes["layers"] = resolve_layers(pooling.layers, num_layers)
    if pooling.ditto_head is not None:
        layer, head = pooling.ditto_head
        heads = int(getattr(config, "num_attention_heads", 0) or 0)
        if layer >= num_layers or head >= heads:
            raise DefsentError(
                f"--ditto-head {layer + 1}-{head + 1} is out of range: this model has {num_layers} layers "
                f"x {heads} heads (1-based)"
            )
    return replace(pooling, **changes) if changes else pooling
