"""Stated bounds (attnsink.claims.bounds): a number glued after "at least" or "at most" prints
on the safe side of what was measured."""

import json

import numpy as np
import pytest

from attnsink import claims
from attnsink.claims import base, bounds


def test_the_side_of_a_bound_is_read_from_the_words_before_it():
    md = (
        "BOS holds at least {glue:text}`lo` of the mass. The error is at most {glue}`hi`.\n"
        "* No head puts less than {glue:text}`neg_lo` on BOS, and none exceeds {glue:text}`neg_hi`.\n"
        "* All heads add up to {glue:text}`total` to {glue:text}`total_hi` of the output.\n"
        "* A run stops below {glue:text}`tol`; its floor is above {glue:text}`tol`.\n"
        "* No ReLU head comes near it (at most {glue:text}`paren`). It is {glue:text}`plain`.\n"
        "Neither moves the loss by more than\n  {glue:text}`wrapped` nats.\n"
        "* It runs from {glue:text}`r_lo` to {glue:text}`r_hi`, between {glue}`b_lo` and {glue:text}`b_hi`.\n"
        "* A line may break inside the words: at\n  most {glue:text}`broken`.\n"
        "* A range may carry a unit: between {glue:text}`u_lo`$/j$ and {glue:text}`u_hi`$/j$.\n"
        "* A dash makes a range too: {glue:text}`d_lo`–{glue:text}`d_hi`, or {glue:text}`s_lo` – {glue:text}`s_hi`."
    )
    assert bounds.stated_bounds(md) == {
        "lo": "lower",
        "hi": "upper",
        "neg_lo": "lower",  # "no ... less than": turned over
        "neg_hi": "upper",  # "none exceeds": turned over
        "tol": "both",
        "paren": "upper",  # the negation before the parenthesis is another clause
        "wrapped": "upper",
        "r_lo": "lower",  # the ends of a range hold every value measured
        "r_hi": "upper",
        "b_lo": "lower",
        "b_hi": "upper",
        "total": "lower",  # "adds up to" is a sum, not a bound; but "x to y" is a range
        "total_hi": "upper",
        "broken": "upper",
        "u_lo": "lower",
        "u_hi": "upper",
        "d_lo": "lower",
        "d_hi": "upper",
        "s_lo": "lower",
        "s_hi": "upper",
    }  # a number after no bound word is not a bound


def test_printed_reads_back_what_readable_prints():
    assert bounds.printed("1,200") == 1200.0
    assert bounds.printed("\u22120.12") == -0.12
    assert bounds.printed("3.2 × 10⁻⁵") == 3.2e-5  # exactly: 1.7 * 10.0**-6 is not 1.7e-06
    assert bounds.printed("1.7 × 10⁻⁶") == 1.7e-06
    assert bounds.printed("4.7 × 10⁶") == pytest.approx(4.7e6)
    with pytest.raises(ValueError, match="text must be a number"):
        bounds.printed("under 0.005")


def test_a_bound_prints_on_its_safe_side():
    assert bounds.glued_text(0.01692, "lower") == "0.016"  # readable alone prints 0.017
    assert bounds.glued_text(0.01692, "upper") == "0.017"
    assert bounds.glued_text(0.01692, None) == bounds.glued_text(0.01692, "both") == "0.017"
    assert bounds.glued_text(0.99978, "lower") == "0.9997"  # as many figures as readable keeps
    assert bounds.glued_text(0.1034, "upper") == "0.11"
    assert bounds.glued_text(3.7254e-4, "upper") == "3.8 × 10⁻⁴"
    assert bounds.glued_text(7, "lower") == "7"  # an integer prints exactly
    sides = {"lo": "lower", "hi": "upper", "t": "both", "word": "lower"}
    good = {"lo": 0.01692, "hi": 4.27e-4, "t": 0.01, "word": "0.90 to 0.95", "other": 0.5}
    assert bounds.wrong_side(good, sides) == []
    found = bounds.wrong_side({**good, "t": 0.0123}, sides)
    assert found == [
        "t = 0.0123 prints as 0.012 after words of both bounds ('at least', 'at most'): "
        "a threshold so stated must print exactly"
    ]
    assert bounds.wrong_side({}, {"exercise": "upper"}) == []  # glued by an exercise's own cell


def test_every_stated_bound_of_random_numbers_prints_on_its_safe_side():
    rng = np.random.default_rng(0)
    values = np.concatenate([10.0 ** rng.uniform(-8, 8, 3000), 1 - 10.0 ** rng.uniform(-6, -1, 1000)])
    for x in [*values, *(-values[:500])]:
        for side in ("lower", "upper"):
            shown = bounds.printed(bounds.glued_text(float(x), side))
            assert (shown <= x) if side == "lower" else (shown >= x), (x, side)
            assert abs(shown - x) <= 0.1 * abs(x), (x, side)  # and still the same number, near enough


def notebook(path, markdown):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": markdown.splitlines(keepends=True)}]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_check_claims_prints_a_stated_bound_on_its_safe_side(tmp_path, monkeypatch):
    ch = base.Chapter("ch1")

    @ch.measures
    def _(x, t=0.005):
        return {"x": x, "y": x, "t": t}

    @ch.claim("below", "x is below 1.", profiles=("quick", "full"))
    def _(m):
        return m["x"] < 1, f"x = {m['x']}"

    glued = {}
    monkeypatch.setitem(claims.CHAPTERS, "ch1", ch)
    monkeypatch.setattr("attnsink.book.glue", lambda name, value, display=True: glued.__setitem__(name, value))
    text = "It is at least {glue:text}`x`, or {glue:text}`y`; below {glue:text}`t` and above {glue:text}`t`."
    notebook(tmp_path / "01_toy.ipynb", text)
    monkeypatch.chdir(tmp_path)
    assert bounds.chapter_markdown("ch1") == text
    claims.check_claims("ch1", "full", 0.896)
    assert glued == {"x": "0.89", "y": "0.90", "t": "0.0050"}  # x is stated as a bound, y is not
    claims.check_claims("ch1", "quick", 0.896, t=0.00512)  # quick's numbers are not the text's
    with pytest.raises(claims.ClaimError, match="t = 0.00512 prints as 0.0051 after words of both"):
        claims.check_claims("ch1", "full", 0.896, t=0.00512)


def test_chapter_markdown_is_found_only_for_a_chapter_of_the_book(tmp_path):
    assert bounds.chapter_markdown("toy") is None
    assert bounds.chapter_markdown("ch1", where=tmp_path) is None
    assert "{glue:text}" in bounds.chapter_markdown("ch1")  # the repository's book/, from anywhere
    notebook(tmp_path / "02_x.ipynb", "at most {glue:text}`y`")
    assert bounds.chapter_markdown("ch2", where=tmp_path) == "at most {glue:text}`y`"


def test_every_chapter_states_its_bounds_readably():
    for key in claims.CHAPTERS:  # parses, and every chapter of the book states some bound
        assert bounds.stated_bounds(bounds.chapter_markdown(key)), key


def test_readable_refuses_an_unknown_direction():
    from attnsink.prose import readable

    with pytest.raises(ValueError, match="toward must be None, 'down' or 'up'"):
        readable(0.5, toward="lower")


def test_measured_strings_round_bounds_to_their_safe_side():
    assert bounds.at_most(0.002724) == "0.0028" and bounds.at_least(0.22869) == "0.22"
    assert bounds.span(1.14296, 1.61339, 3) == "1.14 to 1.62"  # outward, at 3 figures
    assert bounds.span(5.21, 8.83, 1, "%") == "5% to 9%"
    assert bounds.printed(bounds.at_most(6.73e-4)) >= 6.73e-4
