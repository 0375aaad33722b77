"""Bounds the text states: a number glued after "at least", "at most", "below", "more than" and
the like is rounded to the safe side of what was measured.

:func:`attnsink.prose.readable` rounds to the nearest: 0.01692 prints as 0.017, and after "at
least" that is a false sentence, one that a referee finds and no claim catches, since the claim
checks the measured value. So :func:`stated_bounds` reads which glued names a chapter's
markdown puts after a bound word, and :func:`attnsink.claims.check_claims` prints each of them
toward its safe side (:func:`glued_text`: "at least 0.016"). A name the text puts after words of
both kinds is a threshold ("below 0.005 ... above 0.005"): it must print exactly, and
:func:`wrong_side` names every stated bound that does not.
"""

from __future__ import annotations

import re

LOWER = ("at least", "no less than", "more than", "greater than", "above", "over", "exceeds", "exceed", "≥", ">")
"""Words after which a number is a lower bound of what was measured: it must print no higher."""

UPPER = ("at most", "no more than", "up to", "less than", "below", "under", "within", "≤", "<")
"""Words after which a number is an upper bound: it must print no lower."""

_WORD = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(LOWER + UPPER, key=len, reverse=True))
_BOUND = re.compile(rf"(?<![\w-])({_WORD})\s+\{{glue(?::text)?\}}`([A-Za-z_][\w]*)`", re.IGNORECASE)

_GLUED = r"\{glue(?::text)?\}`([A-Za-z_]\w*)`"
_UNIT = r"[^\s{]{0,8}"  # a unit after a number: "$/j$", "%"
_RANGE = re.compile(
    rf"(?:(?<![\w-])between\s+{_GLUED}{_UNIT}\s+and\s+|{_GLUED}{_UNIT}(?:\s*to\s+|\s*–\s*)){_GLUED}", re.IGNORECASE
)
_CLAUSE = re.compile(r"[.:;]\s|\(|\n\s*[*-]\s|\n\s*\n")
_NEGATION = re.compile(r"\b(no|not|none|never|nor|neither|nothing)\b", re.IGNORECASE)


def stated_bounds(markdown: str) -> dict[str, str]:
    """Each glued name that ``markdown`` puts right after a bound word, with its side:
    ``"lower"`` ("at least {glue:text}`x`"), ``"upper"`` ("at most ...", "below ...") or
    ``"both"`` (a threshold the text puts after words of either kind). A negation earlier in the
    clause turns the side over ("no head puts less than x" states a lower bound, "none exceeds
    x" an upper one); "adds up to" is a sum, not a bound. The ends of a range ("x to y",
    "between x and y") are bounds too: the range must hold every value measured."""
    sides: dict[str, str] = {}
    for match in _BOUND.finditer(markdown):
        word, name = " ".join(match.group(1).lower().split()), match.group(2)  # "at\n  most" is "at most"
        before = markdown[: match.start()]
        if word == "up to" and re.search(r"\b(adds?|sums?|comes?)\s+$", before):
            continue
        stops = list(_CLAUSE.finditer(before))
        clause = before[stops[-1].end() :] if stops else before
        side = "lower" if word in LOWER else "upper"
        if _NEGATION.search(clause):
            side = "upper" if side == "lower" else "lower"
        sides[name] = side if sides.get(name, side) == side else "both"
    for match in _RANGE.finditer(markdown):  # a range holds every value measured: its ends are bounds
        low, high = match.group(1) or match.group(2), match.group(3)
        for name, side in ((low, "lower"), (high, "upper")):
            sides[name] = side if sides.get(name, side) == side else "both"
    return sides


def printed(text: str) -> float:
    """The number a string of :func:`attnsink.prose.readable` stands for ('1,200' -> 1200.0,
    '3.2 × 10⁻⁵' -> 3.2e-05, '−0.12' -> -0.12)."""
    digits = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
    s = text.replace(",", "").replace("\u2212", "-").strip()
    if " × 10" in s:
        mantissa, power = s.split(" × 10")
        return float(f"{mantissa}e{int(power.translate(digits))}")  # 1.7e-06 exactly, not 1.7 * 10.0**-6
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"text must be a number as readable() prints it, got {text!r}") from None


def glued_text(value, side: str | None) -> str:
    """``value`` as the text prints it after a bound word of ``side`` (:func:`stated_bounds`):
    rounded down for ``"lower"``, up for ``"upper"``, to the nearest otherwise."""
    from ..prose import readable

    return readable(value, toward={"lower": "down", "upper": "up"}.get(side))


def at_most(x, digits: int = 2) -> str:
    """``x`` as a claim's measured string states it after "at most", "within" or "≤": rounded
    up to ``digits`` significant figures (:func:`attnsink.prose.readable`), never below it."""
    from ..prose import readable

    return readable(float(x), digits, toward="up")


def at_least(x, digits: int = 2) -> str:
    """``x`` after "at least" or "≥": rounded down, never above it."""
    from ..prose import readable

    return readable(float(x), digits, toward="down")


def span(lo, hi, digits: int = 2, unit: str = "") -> str:
    """A measured range that holds every value, as a claim prints it: ``lo`` rounded down,
    ``hi`` up ('1.14 to 1.62' for 1.1430 to 1.6134), each followed by ``unit``."""
    return f"{at_least(lo, digits)}{unit} to {at_most(hi, digits)}{unit}"


def bound_cell(side: str, precision: int = 3):
    """A formatter for a table column of bounds (``formats`` of :func:`attnsink.book.table`): each
    number as the table prints the others (:func:`attnsink.prose.number`: ``precision`` decimals,
    or two significant figures times a power of ten), rounded toward ``side``: ``"down"`` for a
    proved floor or a certificate (0.97355 prints 0.973, 5.382e-4 prints 5.3 × 10⁻⁴), ``"up"`` for
    a ceiling, so that no bound prints past its value."""
    import math

    from ..prose import bound as safe_round
    from ..prose import number

    if side not in ("down", "up"):
        raise ValueError(f"side must be 'down' or 'up', got {side!r}")

    def show(v) -> str:
        if v is None or not math.isfinite(float(v)) or float(v) == 0:
            return number(v, precision)
        x = float(v)
        exponent = math.floor(math.log10(abs(x)))
        fixed = 10 ** (1 - precision) <= abs(x) < 1e5  # where number() prints `precision` decimals
        digits = precision + exponent + 1 if fixed else 2
        return number(safe_round(x, side, max(1, digits)), precision)

    return show


def wrong_side(measures: dict, sides: dict[str, str]) -> list[str]:
    """The stated bounds whose printed number (:func:`glued_text`) lies on the wrong side of
    the measured one, each as a sentence naming the measure; a threshold stated from both
    sides must print exactly. A name the measures lack (glued by an exercise's own cell) and
    a measure that is a string (a word, a range) are not rounded here, so not looked at."""
    wrong = []
    for name, side in sorted(sides.items()):
        value = measures.get(name)
        if value is None or isinstance(value, str):
            continue
        text = glued_text(value, side)
        shown = printed(text)
        if side == "both" and shown != value:
            wrong.append(
                f"{name} = {value!r} prints as {text} after words of both bounds "
                "('at least', 'at most'): a threshold so stated must print exactly"
            )
        elif (side == "lower" and shown > value) or (side == "upper" and shown < value):
            wrong.append(f"{name} = {value!r} prints as {text}, on the wrong side of a {side} bound")
    return wrong


def chapter_markdown(key: str, where=None) -> str | None:
    """The markdown of chapter ``key``'s notebook (``"ch1"`` -> ``01_*.ipynb``), looked for in
    ``where`` (default: the working directory, where the book and nbmake run a chapter, then
    the repository's ``book/``); ``None`` when it is not found (a notebook opened alone)."""
    import json
    from pathlib import Path

    if not re.fullmatch(r"ch\d+", key):
        return None  # not a chapter of the book (a test's toy chapter)
    number = int(key[2:])
    places = [Path(where)] if where is not None else [Path.cwd(), Path(__file__).resolve().parents[3] / "book"]
    for place in places:
        found = sorted(place.glob(f"{number:02d}_*.ipynb"))
        if found:
            cells = json.loads(found[0].read_text(encoding="utf-8"))["cells"]
            return "\n".join(
                "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                for c in cells
                if c["cell_type"] == "markdown"
            )
    return None
