"""The environment switches defsent reads (``DEFSENT_DEBUG``, ``DEFSENT_NO_PROGRESS``, ``DEFSENT_CPU_AMX``, ...),
each read the one way: :func:`switch` for on/off, :func:`seconds` for a positive number. A value a switch does not
understand is a warning naming the variable and what it takes (once per process), and the switch keeps its
default: a typo never turns a switch on or off unseen (docs/conventions.md, "options checked up front")."""

from __future__ import annotations

import math
import os

from .log import warn

ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")
_warned: set[tuple[str, str]] = set()


def _warn_once(name: str, value: str, takes: str, default: str) -> None:
    if (name, value) not in _warned:
        _warned.add((name, value))
        warn(f"{name}={value!r} is not understood ({takes}); it is ignored: {default}")


def switch(name: str, default: bool | None = False) -> bool | None:
    """``name`` as on/off: 1, true, yes, on / 0, false, no, off (any case); unset or empty: ``default``. Any other
    value: a warning, and ``default`` (None: the switch's automatic choice, e.g. ``DEFSENT_CPU_AMX``'s detection;
    the value ``auto`` means that too)."""
    value = os.environ.get(name, "").strip()
    lowered = value.lower()
    if not value or (default is None and lowered == "auto"):
        return default
    if lowered in ON:
        return True
    if lowered in OFF:
        return False
    takes = "1 or 0, true or false, yes or no, on or off" + (", or auto" if default is None else "")
    _warn_once(name, value, takes, "automatic" if default is None else f"{'on' if default else 'off'}, the default")
    return default


def seconds(name: str, default: float) -> float:
    """``name`` as a finite number of seconds, 0 or more; unset or empty: ``default``; anything else a warning,
    and ``default``."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if math.isfinite(number) and number >= 0:
        return number
    _warn_once(name, value, "a number of seconds, 0 or more", f"{default:g} seconds, the default")
    return default
