"""Matryoshka training (Kusupati et al. 2022; sentence-transformers' ``MatryoshkaLoss``), for every objective whose
batches go through ``forward.forward`` (DefSent+ and DefSent, SimCSE and NM, train-pairs) and for TSDAE
(``--matryoshka 384,256,128,64``, issue 79).

The step's loss is Σ_d w_d · L(the representations cut to their leading d dimensions): the objective's own loss
taken at each prefix, weighted (all weights 1 by default, as sentence-transformers'). Cutting is done by zeroing the
trailing dimensions, which for every loss here equals cutting both sides: a dot product against a frozen bank
(DefSent+: u[:d] . b[:d]), against the frozen word embeddings (DefSent), or a cosine between two representations
(SimCSE, NM, the pair losses: zeros add nothing to a dot product or a norm). The encoder runs ONCE per step: the
first prefix's pass records what ``forward.forward`` returns, call by call (:class:`PrefixCache`), and the other
prefixes replay it, cut to their width; a random draw made inside the forward pass (the MLM's mask, NM's noise) is
made once. The auxiliary terms (``--mlm-weight``, ``--nm-weight``) are added once per step, at full width, not at
each prefix. TSDAE's decoder reads the vector through a forward hook that zeroes its tail (its pass runs once per
prefix: the decoder must read each cut vector).

The model keeps its full width and loads as before; ``encode --dims N`` (and the server's ``dimensions``) take the
leading N of its vectors. Torch is imported by the loss alone: the command line parses ``--matryoshka`` here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DefsentError


def parse_dims(text: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """``"384,256,128,64"`` or ``"384:1,256:1,128:0.5"`` -> (dims, weights), each dim once, widest first; a
    one-line :class:`DefsentError` naming what is wrong."""
    dims, weights = [], []
    for part in (p.strip() for p in str(text).split(",")):
        dim, _, weight = part.partition(":")
        try:
            d, w = int(dim), float(weight) if weight else 1.0
        except ValueError:
            raise DefsentError(
                f"--matryoshka {text!r}: give widths as 384,256,128,64 (each optionally :WEIGHT, e.g. 128:0.5)"
            ) from None
        if d < 1 or not (w > 0 and w < float("inf")):
            raise DefsentError(f"--matryoshka {text!r}: widths must be at least 1 and weights positive and finite")
        dims.append(d)
        weights.append(w)
    if len(set(dims)) != len(dims):
        raise DefsentError(f"--matryoshka {text!r}: a width is given twice")
    order = sorted(range(len(dims)), key=lambda i: -dims[i])
    return tuple(dims[i] for i in order), tuple(weights[i] for i in order)


def option_text(settings: dict) -> str | None:
    """The ``--matryoshka`` value that records as ``settings`` (:meth:`Matryoshka.settings`: a run's, a saved
    state's), weights of 1 left out, the others exactly (``repr``: typed back, the same float); None where they
    record no Matryoshka term."""
    dims = settings.get("matryoshka_dims")
    if not dims:
        return None
    weights = settings.get("matryoshka_weights") or [1.0] * len(dims)
    return ",".join(str(d) if w == 1 else f"{d}:{float(w)!r}" for d, w in zip(dims, weights, strict=False))


@dataclass(frozen=True)
class Matryoshka:
    """The widths trained to stand alone (widest first) and their weights."""

    dims: tuple[int, ...]
    weights: tuple[float, ...]

    @classmethod
    def parse(cls, text: str | None) -> Matryoshka | None:
        """``--matryoshka``'s value (None: no Matryoshka term; an empty one is an error, not a silent plain run)."""
        if text is None:
            return None
        if not str(text).strip():
            raise DefsentError(f"--matryoshka {text!r}: give the widths to train, e.g. 384,256,128,64")
        return cls(*parse_dims(text))

    @property
    def option(self) -> str:
        """The ``--matryoshka`` value that gives these widths and weights (``384,256:0.5``)."""
        return option_text(self.settings())

    def settings(self) -> dict:
        """What ``defsent.json``, the card and the resumable state record (compared on ``--resume``), in
        sentence-transformers' names."""
        return {"matryoshka_dims": list(self.dims), "matryoshka_weights": list(self.weights)}

    def check(self, width: int, model=None) -> Matryoshka:
        """Refuse widths above the model's (one line naming the value and the ``model``); returns self."""
        wider = [d for d in self.dims if d > width]
        if wider:
            of = "the model's" if model is None else f"the model {model}'s"
            raise DefsentError(
                f"--matryoshka {self.option}: {of} vectors have {width} dimensions, not {wider[0]}: give widths up "
                f"to {width}"
            )
        return self

    def loss(self, run, index):
        """Σ_d w_d · the objective's loss at width d, + the auxiliary terms once (see the module's docstring); a
        ``loop.StepLoss`` (the sharded bank's: a named pair, whole and local) is summed part by part."""
        cache = run.prefix_cache = PrefixCache(self.dims[0])
        parts, pair = [None, None], None  # [whole, local]; the StepLoss class when the objective gives one
        try:
            for dim, weight in zip(self.dims, self.weights, strict=True):
                cache.start(dim)
                loss = run.objective.loss(run, index)
                if isinstance(loss, tuple):
                    pair = type(loss)
                for i, part in enumerate(loss if isinstance(loss, tuple) else (None, loss)):
                    if part is not None:
                        parts[i] = weight * part if parts[i] is None else parts[i] + weight * part
        finally:
            run.prefix_cache = None
        whole, local = parts
        if cache.aux is not None:
            local = cache.aux if local is None else local + cache.aux
        return local if pair is None else pair(whole, local)


class PrefixCache:
    """The step's forward passes, recorded by the first (widest) prefix and replayed, cut, by the others."""

    def __init__(self, first: int):
        self.first, self.dim = first, first
        self.recorded: list = []
        self.position = 0
        self.aux = None  # the auxiliary terms of the recorded passes, added once by Matryoshka.loss

    def start(self, dim: int) -> None:
        self.dim, self.position = dim, 0

    @property
    def replaying(self) -> bool:
        return self.dim != self.first

    def record(self, reps, aux):
        """A pass of the first prefix: kept, its auxiliary terms set aside; returns its cut representations."""
        self.recorded.append(reps)
        if aux is not None:
            self.aux = aux if self.aux is None else self.aux + aux
        return self.cut(reps)

    def replay(self):
        """The next recorded pass, cut to this prefix's width."""
        if self.position >= len(self.recorded):
            raise RuntimeError("a Matryoshka prefix made more forward passes than the first one recorded")
        reps = self.recorded[self.position]
        self.position += 1
        return self.cut(reps)

    def cut(self, reps):
        """``reps`` with every dimension from ``dim`` on zeroed (the leading ``dim`` kept, with their gradient)."""
        if self.dim >= reps.shape[-1]:
            return reps
        return zero_tail(reps, self.dim)


def zero_tail(reps, dim: int):
    """``reps`` with its dimensions from ``dim`` on set to 0, differentiably (a product with a 0/1 mask)."""
    import torch

    mask = torch.zeros(reps.shape[-1], dtype=reps.dtype, device=reps.device)
    mask[:dim] = 1
    return reps * mask
