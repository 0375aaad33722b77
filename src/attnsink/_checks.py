"""Argument checks shared by the library: each raises ``ValueError`` naming the parameter.

Python's ``bool`` is an ``int`` (``True + True == 2``), so every integer check refuses it
explicitly: ``n_heads=True`` is a bug, not one head.
"""

from __future__ import annotations

import math


def check_int(name: str, value, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` if it is an integer (not a bool) in ``minimum .. maximum``; else ``ValueError``."""
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        span = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise ValueError(f"{name} must be an integer {span}, got {value!r}")
    return value


def check_bool(name: str, value) -> bool:
    """``value`` if it is ``True`` or ``False``; else ``ValueError``."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_number(
    name: str,
    value,
    *,
    low: float = 0.0,
    high: float = math.inf,
    low_open: bool = True,
    high_open: bool = True,
) -> float:
    """``float(value)`` if it is a finite real number (not a bool) between ``low`` and ``high``
    (each bound excluded unless ``low_open`` / ``high_open`` is False); else ``ValueError``.
    The default is a positive finite number."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        span = (
            "a positive finite number"
            if (low, high, low_open) == (0.0, math.inf, True)
            else f"a number in {left}{low:g}, {high:g}{right}"
        )
        raise ValueError(f"{name} must be {span}, got {value!r}")
    return float(value)
