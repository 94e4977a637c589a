"""Constraints on settings, declared as data (as scikit-learn declares its parameter constraints), with one
validator and one wording for every message: ``--lr must be a finite number > 0, got 0.0``.

The library checks its settings with :func:`check_all` (``TrainConfig.validate``, an objective's own settings);
the command line derives its checks from the same declarations (``cli/options.py``: an integer's ``min``/``max``,
shown in ``--help`` as ``[x>=1]``, a float's callback), so a value is refused in the same words wherever it comes
from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import DefsentError


@dataclass(frozen=True)
class Interval:
    """A number between ``low`` and ``high`` (None: unbounded), the ends included as ``closed`` says (both,
    left, right, neither); an ``integer``, or a finite float; None passes when ``optional``."""

    low: float | None = None
    high: float | None = None
    closed: str = "both"
    integer: bool = False
    optional: bool = False

    def _bound(self, value: float) -> str:
        return f"{int(value)}" if self.integer else f"{value:g}"

    def describe(self) -> str:
        """The rule in words: ``a finite number in [0, 1)``, ``an integer >= 1``."""
        kind = "an integer" if self.integer else "a finite number"
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        if self.low is not None and self.high is not None:
            return f"{kind} in {'[' if left else '('}{self._bound(self.low)}, {self._bound(self.high)}{']' if right else ')'}"
        if self.low is not None:
            return f"{kind} {'>=' if left else '>'} {self._bound(self.low)}"
        if self.high is not None:
            return f"{kind} {'<=' if right else '<'} {self._bound(self.high)}"
        return kind

    def allows(self, value: Any) -> bool:
        if value is None:
            return self.optional
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not float(value).is_integer():
            return False
        if not math.isfinite(value):
            return False
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        if self.low is not None and not (value >= self.low if left else value > self.low):
            return False
        return self.high is None or (value <= self.high if right else value < self.high)


@dataclass(frozen=True)
class OneOf:
    """One of ``values`` (or of what ``values()`` returns, for a list known only at run time); None passes when
    ``optional``."""

    values: tuple[str, ...] | Callable[[], Iterable[str]]
    optional: bool = False

    def choices(self) -> tuple[str, ...]:
        return tuple(self.values() if callable(self.values) else self.values)

    def describe(self) -> str:
        return f"one of {', '.join(self.choices())}"

    def allows(self, value: Any) -> bool:
        return self.optional if value is None else value in self.choices()


Constraint = Interval | OneOf


def option_name(name: str) -> str:
    """The command-line option of a setting (``max_steps`` -> ``--max-steps``)."""
    return "--" + name.replace("_", "-")


def problem(rule: Constraint, value: Any) -> str | None:
    """What is wrong with ``value`` under ``rule``, in the one wording (``must be ..., got ...``), or None."""
    if rule.allows(value):
        return None
    shown = repr(value) if isinstance(value, str) else f"{value}"
    return f"must be {rule.describe()}, got {shown}"


def check(option: str, rule: Constraint, value: Any) -> None:
    """Refuse ``value`` of ``option`` (a one-line :class:`DefsentError`) unless ``rule`` allows it."""
    wrong = problem(rule, value)
    if wrong is not None:
        raise DefsentError(f"{option} {wrong}")


def check_all(settings: Any, rules: dict[str, Constraint]) -> None:
    """Check every setting named in ``rules`` (an attribute of ``settings``, or its key where it is a mapping), in
    their order, each under its option's name."""
    for name, rule in rules.items():
        if isinstance(settings, Mapping):
            if name in settings:  # a mapping leaves out what this run does not have (tsdae's NM terms without NM)
                check(option_name(name), rule, settings[name])
        else:
            check(option_name(name), rule, getattr(settings, name))
