"""Every claim the book's text makes, as a named check on the runs.

The chapters' prose is written by hand for the published book (the ``full`` profile, read
from the store). Each sentence that states a result is backed by a :class:`Claim`: an id, the
sentence it backs, the profiles where it must hold, and a check that computes from the
chapter's runs. A chapter declares its claims in one module (:mod:`attnsink.claims.ch01`, ...)
and calls them with one visible line::

    check_claims("ch1", PROFILE, result)

which measures the numbers the text quotes (:meth:`Chapter.measures`), puts each into the
text (:func:`attnsink.book.glue`, rounded for a reader; flags and tables, and names
that start with ``_``, are not glued), runs every claim and shows a verdict
table. Under ``full`` every claim must hold; under ``quick`` only those declared for it, the
others are shown for information. A claim that does not hold where it must stops the chapter
(:class:`ClaimError`), so the book cannot build with a false sentence in it.
"""

from __future__ import annotations

import inspect

from ..profiles import PROFILES
from . import ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09
from .base import Chapter, Claim, ClaimError, Report

__all__ = ["CHAPTERS", "Chapter", "Claim", "ClaimError", "Report", "chapter", "check_claims", "run_claims"]

CHAPTERS = {c.CHAPTER.key: c.CHAPTER for c in (ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09)}
"""The chapters that declare their claims (one module each, :mod:`attnsink.claims.ch01`, ...)."""


def chapter(key: str) -> Chapter:
    """The claims of chapter ``key`` (``"ch1"``, ...)."""
    if key not in CHAPTERS:
        raise ValueError(f"chapter must be one of {sorted(CHAPTERS)}, got {key!r}")
    return CHAPTERS[key]


def run_claims(key: str, profile: str, *runs, **more) -> Report:
    """Measure chapter ``key``'s runs and check every claim (without raising or gluing)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    ch = chapter(key)
    if ch.measure is None:
        raise ValueError(f"{key} declares no measures")
    m = ch.measure(*runs, **more)
    rows = []
    for c in ch.claims:
        holds, shown = c.run(m)
        rows.append({"id": c.id, "claim": c.text, "measured": shown, "holds": holds, "required": profile in c.profiles})
    return Report(key, profile, m, rows)


def check_claims(key: str, profile: str, *runs, glue: bool = True, **more) -> Report:
    """Measure chapter ``key``'s runs, put every measure into the text (rounded by
    :func:`attnsink.prose.readable`, toward the safe side where the text states it as a bound,
    :mod:`attnsink.claims.bounds`; a string as it is), check every claim, and return the
    :class:`Report` (it shows as a verdict table). Raises :class:`ClaimError` naming each
    claim that does not hold where it must, and, under ``full``, each threshold the text
    states from both sides that does not print exactly."""
    report = run_claims(key, profile, *runs, **more)
    wrong = []
    if glue:
        from ..book import glue as put
        from .bounds import chapter_markdown, glued_text, stated_bounds, wrong_side

        markdown = chapter_markdown(key)
        sides = stated_bounds(markdown) if markdown else {}
        for name, value in report.measures.items():
            if not name.startswith("_") and (isinstance(value, str) or _is_number(value)):
                put(name, value if isinstance(value, str) else glued_text(value, sides.get(name)), display=False)
        wrong = wrong_side(report.measures, sides) if profile == "full" else []
    if wrong:
        raise ClaimError(f"{key}, profile {profile}: a bound the text states prints wrong: " + "; ".join(wrong))
    if report.failed:
        listed = "; ".join(f"{r['id']} ({r['claim']} measured: {r['measured']})" for r in report.failed)
        raise ClaimError(f"{key}, profile {profile}: {len(report.failed)} claim(s) do not hold: {listed}")
    return report


def _is_number(value) -> bool:
    import numbers

    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def measure_names(key: str) -> list[str]:
    """The arguments chapter ``key``'s measures take (what its call passes)."""
    ch = chapter(key)
    return list(inspect.signature(ch.measure).parameters)
