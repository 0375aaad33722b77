"""Numbers as the text writes them: :func:`readable` for a number glued into a sentence (the
claims put every measure through it), :func:`number` for a table's cells, :func:`span` for a
range, :func:`bound` to round a stated bound to its safe side. The chapters' sentences are
written by hand in their markdown (see :mod:`attnsink.claims`); only the numbers come from here.
"""

from __future__ import annotations

import numpy as np

SUPERSCRIPTS = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def number(x, precision: int = 3) -> str:
    """A number as a reader writes it: ``precision`` decimals from 10^(1 - precision) up to
    10^5 (``number(0.0123)`` is '0.012'), otherwise two significant digits times a power
    of ten in superscript ('3.2 × 10⁻⁵', '1.5 × 10⁶'); '0' for zero and '–' for a missing
    value (None or NaN). Used by :func:`attnsink.book.table` and for numbers glued into the text."""
    import math

    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "\u2013"
    x = float(x)
    if x == 0:
        return "0"
    if math.isinf(x):
        return "\u221e" if x > 0 else "\u2212\u221e"
    if 10 ** (1 - precision) <= abs(x) < 1e5:
        return f"{x:.{precision}f}".replace("-", "\u2212")
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa.replace('-', chr(0x2212))} \u00d7 10{str(int(exponent)).translate(SUPERSCRIPTS)}"


def readable(x, digits: int = 2, toward: str | None = None) -> str:
    """A measured number as the text quotes it: an integer with thousands separated
    ('12,000'); a float to ``digits`` significant figures, more where rounding would carry
    it up to the next power of ten ('0.998', not '1.0'; '0.12'; '4.7'; '1,200'); below 10⁻³ or
    from 10⁶ on, or below 10⁻² where it would need five decimals, as a mantissa times a power of ten
    ('3.2 × 10⁻⁵'; '2.57 × 10⁻³' for 0.00257 to three figures). A number that carries more
    precision than this is not a number a reader needs. Used by :func:`attnsink.claims.check_claims`.

    ``toward="down"`` rounds down instead of to the nearest, for a number the text states as a
    lower bound ("at least 0.016" for 0.01692), ``"up"`` up, for an upper bound (:func:`bound`,
    at the same significant figures)."""
    import math
    import numbers

    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"x must be a real number, got {x!r}")
    check_digits = isinstance(digits, int) and not isinstance(digits, bool) and digits >= 1
    if not check_digits:
        raise ValueError(f"digits must be an integer >= 1, got {digits!r}")
    if toward not in (None, "down", "up"):
        raise ValueError(f"toward must be None, 'down' or 'up', got {toward!r}")
    if isinstance(x, numbers.Integral):
        return f"{int(x):,}".replace("-", "\u2212")
    x = float(x)
    if math.isnan(x):
        return "\u2013"
    if math.isinf(x):
        return "\u221e" if x > 0 else "\u2212\u221e"
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    sig = digits
    while sig < 6 and round(abs(x), sig - 1 - exponent) >= 10 ** (exponent + 1) and abs(x) < 10 ** (exponent + 1):
        sig += 1  # 0.9987 -> '0.999', not '1.0': keep the digits that say it is below 1
    if toward is not None:
        x = bound(x, toward, sig)  # on the grid of sig figures, on the bound's safe side
        exponent = math.floor(math.log10(abs(x)))  # 0.0998 up is 0.10
    places = sig - 1 - exponent  # negative for large numbers: 1234.5 -> 1,200
    if abs(x) < 1e-3 or abs(x) >= 1e6 or (abs(x) < 1e-2 and places > 4):  # 0.00257 -> 2.57 × 10⁻³
        mantissa, power = f"{x:.{sig - 1}e}".split("e")
        return f"{mantissa.replace('-', chr(0x2212))} \u00d7 10{str(int(power)).translate(SUPERSCRIPTS)}"
    return f"{round(x, places):,.{max(0, places)}f}".replace("-", "\u2212")


def span(values, digits: int = 2) -> str:
    """The smallest and largest of ``values`` as a reader writes a range: '0.12 to 0.34'; one
    number when both round alike ('0.12'); a value that rounds to zero but is not zero as
    'under 0.005' (for two decimals), so that a range never reads '0.00 to 0.00'."""
    v = np.asarray(values, dtype=float)
    if not v.size:
        raise ValueError("span needs at least one value")
    floor = 0.5 * 10.0**-digits

    def fmt(x: float) -> str:
        if x != 0 and abs(x) < floor:
            return f"under {floor:g}" if x > 0 else f"between \u2212{floor:g} and 0"
        return f"{x:.{digits}f}".replace("-", "\u2212")

    lo, hi = fmt(float(v.min())), fmt(float(v.max()))
    return lo if lo == hi else f"{lo} to {hi}"


def bound(x: float, side: str, digits: int = 2) -> float:
    """``x`` rounded to ``digits`` significant figures on the safe side of a bound the text
    states: ``side="down"`` for "at least" (0.01692 -> 0.016), ``"up"`` for "at most" (4.27e-4
    -> 4.3e-4 stays an upper bound). Put a measure through it before :func:`readable` prints it,
    so that a rounded lower bound is never above what was measured."""
    import math

    if side not in ("down", "up"):
        raise ValueError(f"side must be 'down' or 'up', got {side!r}")
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 1:
        raise ValueError(f"digits must be an integer >= 1, got {digits!r}")
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(abs(x))))
    step = math.floor if side == "down" else math.ceil
    y = step(round(x * scale, 9)) / scale  # round(.., 9): 0.29 * 100 is 28.999999999999996
    return float(f"{y:.{digits}g}")
