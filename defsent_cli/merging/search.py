"""What to merge and with which weights: WiSE-FT over a grid of alphas, uniform and greedy soups,
each choice made on a dev criterion (never on test data).

- ``interpolate``: theta = (1 - alpha) theta_base + alpha theta_model (WiSE-FT). alpha = 0 is the base
  itself, so with the grid chosen on dev the merged model is never worse than the base on dev.
- ``uniform``: the mean of all models' weights (a uniform soup); with a base, interpolated toward it.
- ``greedy``: Wortsman et al.'s greedy soup: models sorted by their own dev score, each added to the
  soup only if the soup's dev score does not fall; with a base, interpolated toward it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from ..errors import DefsentError
from ..log import note
from . import METHODS
from .weights import Ingredient, combine


def parse_alphas(spec: str) -> list[float]:
    """``0.5``, ``0,0.3,0.5`` or ``START:STOP:STEP`` (both ends included), each in [0, 1]."""
    text = spec.strip()
    try:
        if ":" in text:
            start, stop, step = (float(v) for v in text.split(":"))
            if not step > 0 or stop < start:
                raise ValueError
            count = int(math.floor((stop - start) / step + 1e-9)) + 1
            values = [round(start + i * step, 10) for i in range(count)]
        else:
            values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise DefsentError(f"--alpha {spec!r}: give a number, a comma list or START:STOP:STEP, e.g. 0:1:0.1") from None
    if not values or any(not (math.isfinite(v) and 0 <= v <= 1) for v in values):
        raise DefsentError(f"--alpha {spec!r}: every alpha must be between 0 (the base) and 1 (the model)")
    return list(dict.fromkeys(values))


@dataclass
class MergeResult:
    weights: dict[str, torch.Tensor]
    coefficients: list[float]  # one per model of ``members`` (the base first when there is one)
    members: list[Ingredient]
    report: dict = field(default_factory=dict)


Scorer = Callable[[dict[str, torch.Tensor]], float]


def _choose_alpha(
    base: Ingredient, parts: list[Ingredient], part_weights: list[float], alphas: Sequence[float], score: Scorer | None
) -> MergeResult:
    """(1 - alpha) base + alpha sum_i w_i part_i for the best alpha on dev (or the one alpha given)."""
    members = [base, *parts]

    def coefficients(alpha: float) -> list[float]:
        return [1.0 - alpha, *(alpha * w for w in part_weights)]

    curve = []
    if len(alphas) > 1:
        if score is None:
            raise DefsentError("several --alpha values need --select CRITERION to choose between them")
        for alpha in alphas:
            value = score(combine(members, coefficients(alpha)))
            curve.append([alpha, round(value, 4)])
            note(f"alpha {alpha:g}: {value:.2f}")
        best = max(range(len(curve)), key=lambda i: (curve[i][1], -i))  # ties: the smaller alpha
        alpha = curve[best][0]
    else:
        alpha = alphas[0]
        if score is not None:
            curve.append([alpha, round(score(combine(members, coefficients(alpha))), 4)])
    report = {"alpha": alpha, "alpha_curve": curve}
    if curve:
        report["selected_score"] = dict(map(tuple, curve))[alpha]
    return MergeResult(combine(members, coefficients(alpha)), coefficients(alpha), members, report)


def greedy_soup(models: list[Ingredient], score: Scorer) -> tuple[list[Ingredient], list[dict]]:
    """Wortsman et al.'s greedy soup: by descending own score, keep a model if the soup does not get worse."""
    own = [score(combine([m], [1.0])) for m in models]
    order = sorted(range(len(models)), key=lambda i: -own[i])
    soup, best, log = [models[order[0]]], own[order[0]], []
    log.append(
        {
            "model": str(models[order[0]].path.resolve()),
            "own": round(own[order[0]], 4),
            "soup": round(best, 4),
            "added": True,
        }
    )
    for i in order[1:]:
        trial = [*soup, models[i]]
        value = score(combine(trial, [1.0 / len(trial)] * len(trial)))
        added = value >= best
        log.append(
            {"model": str(models[i].path.resolve()), "own": round(own[i], 4), "soup": round(value, 4), "added": added}
        )
        note(f"greedy soup: {models[i].path} -> {value:.2f} ({'kept' if added else 'left out'})")
        if added:
            soup, best = trial, value
    return soup, log


def merge(
    models: list[Ingredient],
    method: str,
    alphas: Sequence[float] | None,
    base: Ingredient | None = None,
    score: Scorer | None = None,
) -> MergeResult:
    """Merge ``models`` (and ``base``) by ``method``; ``score`` (weights -> dev score) makes the choices."""
    if method not in METHODS:
        raise DefsentError(f"unknown merge method {method!r}; use {', '.join(METHODS)}")
    if method == "interpolate":
        if base is None:
            if len(models) != 2:
                raise DefsentError("interpolate merges two models: BASE CKPT (or --base BASE CKPT)")
            base, models = models[0], models[1:]
        if len(models) != 1:
            raise DefsentError("interpolate merges one model with the base; use --method uniform or greedy for more")
        return _choose_alpha(base, models, [1.0], alphas or [0.5], score)
    if len(models) < 2:
        raise DefsentError(f"a {method} soup needs at least two models")
    log: list[dict] = []
    if method == "greedy":
        if score is None:
            raise DefsentError("the greedy soup needs --select CRITERION")
        models, log = greedy_soup(models, score)
    weights = [1.0 / len(models)] * len(models)
    if base is None:
        if alphas is not None:
            raise DefsentError("--alpha interpolates toward --base BASE; give --base or leave --alpha out")
        result = MergeResult(combine(models, weights), weights, models, {})
        if score is not None:
            result.report["selected_score"] = round(score(result.weights), 4)
    else:
        result = _choose_alpha(base, models, weights, alphas or [1.0], score)
    if log:
        result.report["greedy"] = log
    result.report["soup"] = [str(m.path.resolve()) for m in models]  # absolute: the checkpoint records them portably
    return result
