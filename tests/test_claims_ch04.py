"""Chapter 4's claims (attnsink.claims.ch04): each holds on good measures and fails when its
number moves; the chapter's computations and measures read small made-up inputs right."""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from attnsink.claims import ch04
from attnsink.theory import cancellation_weight_floor

FLOORS = pd.DataFrame(
    {
        "cap θ": [0.5, 0.75, 0.9, 0.99],
        "F_L(θ)": [2.6e16, 2.6e10, 2.0e5, 0.045],
        "proved floor max(F_L, 2)": [2.6e16, 2.6e10, 2.0e5, 2.0],
        "fewest heads": [15, 15, 14, 14],
    }
)
GAPS = pd.DataFrame(
    {
        "L": [4, 4, 6, 6, 6, 6],
        "cap θ": [0.5, 0.99, 0.5, 0.75, 0.9, 0.99],
        "F_L(θ)": [20.0, 0.082, 1935.4, 66.75, 5.277, 0.1755],
        "least weight ≥": [21.95, 2.051, 2705.2, 126.76, 13.739, 2.509],
        "an exact layer's weight": [21.95, 2.0512, 2705.4, 126.77, 13.740, 2.65],
        "_positive": [11.0, 1.03, 1352.7, 63.4, 6.9, 1.3],
    }
)
GAPS["least ÷ F_L ≥"] = GAPS["least weight ≥"] / GAPS["F_L(θ)"]

GOOD = {
    "cancel_err": 2.384e-7,
    "cancel_bound20": 1.319e-7,
    "cancel_err64": 3.62e-8,
    "_cancel_err64_entry": 2.9e-8,
    "_cancel_last_margin": 20.0,
    "float32_step": 2.0**-23,
    "_cancel_falls": True,
    "_cancel_nontrig_bos": 0.5,
    "_cancel_uniform_gap": 0.0,
    "_cancel_trig_bos": 1.0,
    "_exact_error": 0.0,
    "_exact_bos": 0.5,
    "_exact_triggers": 14,
    "exact_float64_error": "10.2",
    "_exact_float64_error": 10.147,
    "exact_heads": 15,
    "exact_weights": 1.743e17,
    "exact_largest": 2.846e16,
    "exact_update_max": 0.93,
    "exact_float64_nontrigger": 7.48,
    "exact_float64_spacing": 4,
    "alpha_float_sum": -0.25,
    "float64_common": 7.48,
    "float64_common_n": 12,
    "float64_common_j_lo": 2,
    "float64_common_j_hi": 13,
    "_float64_common_where": "14, bias",
    "_float64_common_contiguous": True,
    "exact_over_floor": 6.7,
    "_floors": FLOORS,
    "floor_099": 0.045,
    "heavy_head": 0.78,
    "_heavy": 0.7858,
    "_ratios_grow": True,
    "_growth_bound": True,
    "_limits": True,
    "theta_two_4": 0.838,
    "theta_two_16": "0.977",
    "_f16_around": (2.357, 1.852),
    "_f16_falls": True,
    "_three": [4.04, 4.004, 4.0000004, 4.00000004],
    "_three_formula": True,
    "floor_three": 4,
    "floor_found_lo": 1.1,
    "floor_found_hi": 3.835,
    "_found_grows": True,
    "found_L_hi": 16,
    "_gaps": GAPS,
    "least4_099": "2.05",
    "_random_violations": 0,
    "random_pairs": 15120,
    "random_slack": 1.3e-6,
    "_random_slack": 1.24e-6,
    "cancel_move": 0.82,
    "_cancel_move": 0.8287,
    "cancel_n": 30,
    "_cancel_move_floor": 0.5,
    "cancel_layer_move": 0.0,
    "_cancel_violations": 0,
    "_trained_violations": 0,
    "trained_pairs": 42000,
    "anchor_shortfall": "0.05",
    "_anchor_shortfall": 4.47e-4,
    "_anchor_below": 1361,
    "_anchor_below_in_slack": True,
    "_anchor_row1_gap": 9.1e-4,
    "_full_recipe": (1e-4, 50_000),
    "small_sinks": 19,
    "small_dormant": 1,
    "_small_other": 0,
    "small_max_move": 0.0054,
    "small_max_layer_move": 9.5e-4,
    "_small_min_out": 0.069,
    "small_update": 5.1e-4,
    "big_seeds": 5,
    "big_diffuse_seeds": 5,
    "big_diffuse_move": 0.27,
    "_big_diffuse_move": 0.279,
    "big_head_move": 0.11,
    "_big_head_move": 0.118,
    "_big_head_D": 0.1814,
    "big_least_D": 0.18,
    "big_layer_move_lo": 0.6878,
    "big_layer_move_hi": 0.9737,
    "big_update": 0.0015,
    "big_within": 2.2,
    "_big_within": 2.137,
    "_big_layers": 20,
    "small_within": 11.11,
    "small_within_seed": 3,
    "small_within_layer": 1,
    "kind_margin": "0.01",
    "_kind_margin": 0.0105,
    "big_across": 590.0,
    "_least_largest_bos": 0.9945,
    "_sink_every_layer": True,
    "price_soft_nontrigger_row": 0.999,
    "price_soft_trigger_row": 0.7863,
    "price_soft_trigger_seeds": 1,
    "price_soft_seeds": 5,
    "price_soft_trigger_bos": 0.67,
    "_price_soft_trigger_bos": 0.6635,
    "big_trigger_bos": 0.95,
    "_big_trigger_bos": 0.9566,
    "cost_half": 1.83e6,
    "cost_34": 3174.0,
    "cost_09": 45.2,
    "cost_ratio": 14,
    "cost_ratio_half": 590_000,
    "path_bos_half": 0.5,
    "path_bos_34": 0.7495,
    "path_bos_09": 0.8998,
    "price_soft_weight": 3.1,
    "_price_soft_weight": 3.058,
    "price_soft_weight_lo": 2.6,
    "_paths_fall": True,
    "_two_weight": 2.0,
    "price_two_err": 6.845e-12,
    "price_two_margin": 15.0,
    "price_soft_err": 1.529e-5,
    "_price_soft_errs": [1.2e-5, 1.529e-5, 9e-6, 1.1e-5, 1.3e-5],
    "price_relu_off": 3.9e-4,
    "_price_relu_off": 3.85e-4,
    "price_relu_err": 2.06e-5,
    "price_relu_lo": 2.59,
    "price_relu_hi": 8.28,
    "price_relu_path_least": 40.9,
}


def _gaps(**where_what):
    """GAPS with one cell changed: ``where_what = {column: (row, value)}``."""
    g = GAPS.copy()
    for column, (row, value) in where_what.items():
        g.loc[row, column] = value
    g["least ÷ F_L ≥"] = g["least weight ≥"] / g["F_L(θ)"]
    return g


BREAKS = {  # claim -> a change of the measures that makes it false
    "cancel-error-falls": {"cancel_err": 3e-6},
    "cancel-no-sink": {"_cancel_nontrig_bos": 0.6},
    "cancel-sinks-at-trigger": {"_cancel_trig_bos": 0.999},
    "cancel-float32-floor": {"cancel_err64": 1.4e-7},  # float64 above the bound: not float32's floor
    "soft-err-worst": {"_price_soft_errs": [1.2e-5, 1.529e-5, 9e-6, 1.1e-5]},  # 4 seeds, not the text's 5
    "exact-is-exact": {"_exact_error": 1e-30},
    "exact-fails-in-float64": {"exact_update_max": 1.2},
    "exact-pays-the-floor": {"exact_over_floor": 0.9},
    "floor-table": {"floor_099": 2.5},
    "fewest-heads": {"_floors": FLOORS.assign(**{"fewest heads": [15, 14, 14, 14]})},
    "floor-superexponential": {"_ratios_grow": False},
    "floor-near-one": {"theta_two_4": 0.9},
    "floor-16-below-two": {"_f16_around": (2.1, 2.01)},  # still above 2 past the text's 0.977
    "three-is-tight": {"_three": [4.04, 4.004, 4.1]},
    "floor-close-at-half": {"floor_found_hi": 4.2},
    "exact-weights": {"exact_weights": 1.9e17},
    "float64-uniform-rows": {"exact_float64_nontrigger": 0.5},
    "float64-same-error": {"_float64_common_where": "14, noise"},
    "cancel-across-layers": {"big_within": 3.5},
    "small-within": {"small_within": 2.0},  # no more than a 4 x 4 layer
    "kinds-threshold": {"_kind_margin": 0.008},
    "caps-sink-at-trigger": {"path_bos_34": 0.5},  # no sink under the cap 3/4
    "trigger-seeds": {"price_soft_trigger_seeds": 2},
    "trigger-mean-under-cap": {"_price_soft_trigger_bos": 0.68},
    "relu-cheap": {"price_relu_path_least": 7.0},
    "gap-grows-with-theta": {"_gaps": _gaps(**{"least weight ≥": (4, 4.0)})},
    "price-above-two": {"_gaps": _gaps(**{"least weight ≥": (1, 1.9)})},
    "anchor-holds-random": {"_random_violations": 1},
    "random-slack": {"_random_slack": 1.31e-6},  # the text's bound rounded the wrong way
    "cancelling-heads-move": {"cancel_layer_move": 0.01},
    "anchor-holds-trained": {"_trained_violations": 3},
    "anchor-figure-rounding": {"_anchor_shortfall": 5e-4},  # 0.05%: not under the caption's 0.05%
    "paper-recipe": {"_full_recipe": (1e-3, 50_000)},
    "small-all-park": {"_small_other": 1},
    "small-quiet": {"small_max_layer_move": 0.02},
    "small-constants-cancel": {"small_update": 0.01},
    "big-diffuse": {"big_diffuse_seeds": 4},
    "diffuse-moves": {"_big_head_move": 0.105},  # a diffuse head below the text's 0.11
    "trigger-mean-4x4": {"_big_trigger_bos": 0.94, "big_trigger_bos": 0.94},  # not the text's 0.95
    "big-layers-cancel": {"big_update": 0.1},
    "every-model-sinks": {"_least_largest_bos": 0.8},
    "sink-every-layer": {"_sink_every_layer": False},
    "soft-breaks-caps": {"price_soft_trigger_row": 0.95},
    "caps-cost": {"cost_34": 2e6},
    "two-heads-cheap": {"_two_weight": 2.5},
    "soft-weight": {"_price_soft_weight": 3.12},
    "relu-off": {"price_relu_off": 0.02, "_price_relu_off": 0.015},
}


def test_every_chapter_4_claim_holds_on_good_measures_and_fails_when_its_number_moves():
    ids = [c.id for c in ch04.CHAPTER.claims]
    assert sorted(ids) == sorted(BREAKS), "every claim has a test that breaks it"
    for c in ch04.CHAPTER.claims:
        assert c.run(GOOD)[0], c.id
        assert not c.run({**GOOD, **BREAKS[c.id]})[0], c.id


def test_claims_catch_more_than_one_way_to_fail():
    by_id = {c.id: c for c in ch04.CHAPTER.claims}
    assert not by_id["caps-cost"].run({**GOOD, "cost_half": math.nan})[0]  # a path that never gets there
    assert not by_id["caps-cost"].run({**GOOD, "_paths_fall": False})[0]
    assert not by_id["price-above-two"].run({**GOOD, "least4_099": "2.10"})[0]  # the text's number
    assert not by_id["price-above-two"].run({**GOOD, "_gaps": _gaps(_positive=(1, 0.9))})[0]
    # the two bounds must agree at the text's precision where the text says "is"
    assert not by_id["gap-grows-with-theta"].run({**GOOD, "_gaps": _gaps(**{"an exact layer's weight": (2, 3000.0)})})[
        0
    ]
    assert not by_id["big-diffuse"].run({**GOOD, "big_seeds": 0, "big_diffuse_seeds": 0})[0]
    assert not by_id["exact-is-exact"].run({**GOOD, "_exact_bos": 0.51})[0]
    assert not by_id["exact-fails-in-float64"].run({**GOOD, "_exact_float64_error": 0.3})[0]
    assert not by_id["exact-fails-in-float64"].run({**GOOD, "_exact_float64_error": 10.21})[0]  # above the text's 10.2
    assert not by_id["cancelling-heads-move"].run({**GOOD, "_cancel_move": 0.81})[0]  # below the text's 0.82
    assert not by_id["cancelling-heads-move"].run({**GOOD, "_cancel_move_floor": 0.45})[0]  # not the proved 1/2
    assert not by_id["caps-cost"].run({**GOOD, "cost_09": 40.0})[0]  # under 14 times the heaviest model
    assert not by_id["caps-cost"].run({**GOOD, "cost_half": 1.7e6})[0]  # under 590,000 times
    assert not by_id["caps-cost"].run({**GOOD, "cost_ratio_half": 500_000})[0]  # not the text's number
    assert not by_id["caps-sink-at-trigger"].run({**GOOD, "path_bos_half": 0.51})[0]  # the cap-1/2 path sinks
    assert not by_id["caps-sink-at-trigger"].run({**GOOD, "path_bos_09": 0.91})[0]  # above the text's 0.9
    assert not by_id["small-within"].run({**GOOD, "small_within_seed": 2})[0]  # not the layer the text names
    assert not by_id["small-within"].run({**GOOD, "small_within": 12.0})[0]  # not the text's 11
    assert not by_id["floor-16-below-two"].run({**GOOD, "theta_two_16": "0.98"})[0]
    assert not by_id["floor-16-below-two"].run({**GOOD, "_f16_falls": False})[0]
    assert not by_id["kinds-threshold"].run({**GOOD, "kind_margin": "0.02"})[0]  # above what was measured
    assert not by_id["exact-weights"].run({**GOOD, "exact_largest": 3.1e16})[0]
    assert not by_id["exact-weights"].run({**GOOD, "exact_heads": 14})[0]
    assert not by_id["float64-uniform-rows"].run({**GOOD, "alpha_float_sum": 0.0})[0]
    assert not by_id["float64-same-error"].run({**GOOD, "float64_common_j_hi": 12, "float64_common_n": 11})[0]
    assert not by_id["float64-same-error"].run({**GOOD, "float64_common": 5.0})[0]  # not the non-trigger error
    assert not by_id["floor-close-at-half"].run({**GOOD, "_found_grows": False})[0]
    assert not by_id["cancel-across-layers"].run({**GOOD, "big_across": 100.0})[0]
    assert not by_id["cancel-across-layers"].run({**GOOD, "_big_layers": 0})[0]
    assert not by_id["trigger-seeds"].run({**GOOD, "price_soft_seeds": 4})[0]
    assert not by_id["trigger-mean-under-cap"].run({**GOOD, "price_soft_trigger_row": 0.74})[0]
    assert not by_id["relu-cheap"].run({**GOOD, "price_relu_path_least": math.nan})[0]
    assert not by_id["relu-cheap"].run({**GOOD, "price_relu_err": 3e-5})[0]
    assert not by_id["relu-cheap"].run({**GOOD, "price_relu_lo": 2.49})[0]  # the text's 2.5 rounds it outward to 2.4
    assert not by_id["relu-cheap"].run({**GOOD, "price_relu_hi": 8.31})[0]  # outward to 8.4, not the text's 8.3
    assert not by_id["floor-close-at-half"].run({**GOOD, "floor_found_hi": 3.91})[0]  # outward to 4.0
    assert not by_id["floor-close-at-half"].run({**GOOD, "floor_found_lo": 1.21})[0]  # outward to 1.2
    assert not by_id["diffuse-moves"].run({**GOOD, "_big_diffuse_move": 0.265})[0]  # the mean below 0.27
    assert not by_id["diffuse-moves"].run({**GOOD, "_big_head_D": 0.1912})[0]  # not the summary's least D
    assert not by_id["diffuse-moves"].run({**GOOD, "big_head_move": 0.12})[0]  # above what was measured
    assert not by_id["trigger-mean-4x4"].run({**GOOD, "_big_trigger_bos": 0.95})[0]  # not more than 0.95
    assert not by_id["trigger-mean-under-cap"].run({**GOOD, "price_soft_trigger_row": 0.8})[0]  # not the text's 0.79
    assert not by_id["relu-off"].run({**GOOD, "price_relu_off": 3.8e-4})[0]  # rounded the wrong way
    assert not by_id["random-slack"].run({**GOOD, "_random_slack": 2e-5, "random_slack": 2e-5})[0]
    assert not by_id["soft-weight"].run({**GOOD, "price_soft_weight_lo": 1.9})[0]
    assert not by_id["cancel-float32-floor"].run({**GOOD, "cancel_err": 1.1e-7})[0]  # under the bound after all
    assert not by_id["cancel-float32-floor"].run({**GOOD, "cancel_err": 3.6e-7})[0]  # more than two float32 steps
    assert not by_id["cancel-float32-floor"].run({**GOOD, "_cancel_last_margin": 10.0})[0]  # not margin 20
    assert not by_id["cancel-float32-floor"].run({**GOOD, "_cancel_err64_entry": 4e-8})[0]  # an entry above its row
    worse = [1.2e-5, 1.6e-5, 9e-6, 1.1e-5, 1.3e-5]  # a seed worse than the text's "at most"
    assert not by_id["soft-err-worst"].run({**GOOD, "_price_soft_errs": worse})[0]
    worst = [1.2e-5, 1.61e-5, 9e-6, 1.1e-5, 1.3e-5]  # prints as 1.7e-5 after "at most", not the text's 1.6e-5
    assert not by_id["soft-err-worst"].run({**GOOD, "_price_soft_errs": worst, "price_soft_err": 1.61e-5})[0]
    assert not by_id["two-heads-cheap"].run({**GOOD, "price_two_margin": 10.0})[0]  # not the text's margin
    assert not by_id["two-heads-cheap"].run({**GOOD, "price_two_err": 7.1e-12})[0]  # not the text's 6.8e-12
    assert not by_id["big-layers-cancel"].run({**GOOD, "big_layer_move_lo": 0.6})[0]  # prints 0.60, not 0.68
    assert not by_id["big-layers-cancel"].run({**GOOD, "big_layer_move_hi": 0.981})[0]  # outward to 0.99
    assert not by_id["anchor-figure-rounding"].run({**GOOD, "_anchor_below_in_slack": False})[0]
    assert not by_id["anchor-figure-rounding"].run({**GOOD, "_anchor_row1_gap": 2e-3})[0]  # row 1 off the line
    assert not by_id["anchor-figure-rounding"].run({**GOOD, "anchor_shortfall": "0.04"})[0]  # below what was measured
    assert not by_id["soft-err-worst"].run({**GOOD, "price_soft_seeds": 4})[0]
    assert not by_id["soft-weight"].run({**GOOD, "_price_soft_weight": 3.15, "price_soft_weight": 3.2})[0]


def test_at_most_rounds_up_and_sig_rounds():
    assert ch04._at_most(0.6635) == 0.67 and ch04._at_most(2.14) == 2.2 and ch04._at_most(0.66) == 0.66
    assert ch04._sig(1.7429e17) == 1.7e17 and ch04._sig(2.846e16) == 2.8e16 and ch04._sig(3.835) == 3.8


def test_at_least_rounds_down():
    assert ch04._at_least(0.8287) == 0.82 and ch04._at_least(0.0694) == pytest.approx(0.069)
    assert ch04._at_least(0.99931, 3) == 0.999 and ch04._at_least(14.29) == 14
    assert ch04._at_least(0.0) == 0.0 and math.isnan(ch04._at_least(math.nan))


REFEREE = pd.DataFrame(  # Table 4.4's cells the eleventh review found printed past their value
    {
        "L": [4, 4, 6, 6, 6],
        "cap θ": [0.75, 0.99, 0.5, 0.75, 0.9],
        "F_L(θ)": [4.0, 0.08203245, 1935.36, 66.74962963, 5.27685414],
        "proved floor": [4.0, 2.0, 1935.36, 66.74962963, 5.27685414],
        "least weight ≥": [4.79989428, 2.05099598, 2705.18835019, 126.76304257, 13.73920261],
        "an exact layer's weight": [4.80009154, 2.05124806, 2705.3536732, 126.77119783, 13.73984574],
        "least ÷ F_L ≥": [1.19997357, 25.00225324, 1.3977701, 1.89908234, 2.60367299],
    }
)


def test_every_bound_column_of_the_chapters_tables_prints_on_its_safe_side():
    from attnsink.claims.bounds import printed

    floors = ch04.floor_table(16, thetas=(0.5, 0.6, 0.75, 0.9, 0.99))
    price = pd.DataFrame({"L": [4, 12], "weight Σ|α_h|": [30.67, 2.2e11], "floor F_L(1/2)": [20.0, 4.795e10]})
    for frame in (floors, REFEREE, price):
        formats = ch04.bound_formats(frame)
        named = [c for c in frame.columns if "floor" in c or "≥" in c or "F_L" in c]
        assert set(named) <= set(formats), "every column that names a bound rounds to its safe side"
        for column, show in formats.items():
            for v in frame[column]:
                shown = printed(show(v))
                assert shown <= v if ch04.BOUND_SIDES[column] == "down" else shown >= v, (column, v, show(v))
    assert ch04.bound_formats(floors)["proved floor max(F_L, 2)"](1.35365556e14) == "1.3 × 10¹⁴"  # not 1.4
    assert [ch04.bound_formats(REFEREE)["least weight ≥"](v) for v in REFEREE["least weight ≥"]] == [
        "4.799",
        "2.050",
        "2705.188",
        "126.763",
        "13.739",
    ]
    assert ch04.bound_formats(REFEREE)["an exact layer's weight"](4.80009154) == "4.801"  # a ceiling: up
    assert ch04.bound_formats(price)["floor F_L(1/2)"](1.058e8) == "1.0 × 10⁸"
    assert ch04.bound_formats(pd.DataFrame({"proved bound": [1.2e-3]}))["proved bound"](1.23e-3) == "1.3 × 10⁻³"


def test_the_chapters_bound_tables_use_the_bound_formats():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "book" / "04_several_layers.ipynb"
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    for n in ("4.3", "4.4", "4.5", "4.9", "4.10", "4.12"):
        (cell,) = [c for c in cells if f'"Table {n}. ' in c]
        assert "bound_formats(" in cell, f"Table {n} prints bounds: its cells must round to their safe side"


def test_the_floor_is_at_least_two():
    assert ch04.price_floor(16, 0.5) == cancellation_weight_floor(16, 0.5)
    assert ch04.price_floor(4, 0.99) == 2.0 and cancellation_weight_floor(4, 0.99) < 2
    t = ch04.floor_table(4, (0.5, 0.99))
    assert list(t["proved floor max(F_L, 2)"]) == pytest.approx([20.0, 2.0]) and list(t["fewest heads"]) == [3, 2]


def test_chebyshev_logits_lie_in_the_cap():
    c = ch04.chebyshev_logits(6, 0.75)  # C = 6
    assert len(c) == 5 and len(set(c)) == 5 and all(isinstance(v, Fraction) and 0 < v <= 6 for v in c)


def test_the_exact_layer_on_short_sequences():
    c = ch04.chebyshev_logits(5, 0.5)
    alpha = ch04.cancelling_layer(5, c)
    t = ch04.run_exact_layer(c, alpha, d=6)
    assert list(t["trigger j"]) == [2, 3, 4]
    assert (t["largest |error|"] == 0).all() and (t["largest BOS weight, rows i ≥ 1"] <= 0.5).all()
    assert (t["largest |error| in float64"] < 1e-9).all()  # small weights: float64 is fine
    assert (t["largest |update| needed"] <= 1).all() and (
        t["_float64 non-trigger"] <= t["largest |error| in float64"]
    ).all()
    assert all(w.split(", ")[1] in ("BOS", "trigger", "noise", "bias") for w in t["float64: at row, channel"])


def test_least_weight_bounds_bracket_the_exact_answer_at_length_3():
    # at L = 3 the least weight is F_3(theta) = 2 / theta (approached, never reached)
    b = ch04.least_weight_bounds(3, 0.75)
    assert 2 / 0.75 * (1 - 1e-3) <= b["lower"] <= 2 / 0.75 <= b["upper"] < 2 / 0.75 * (1 + 1e-6)
    g = ch04.least_weight_bounds(4, 0.5, iters=500)
    assert cancellation_weight_floor(4, 0.5) < g["lower"] <= g["upper"] < g["lower"] * 1.01


def test_weight_for_interpolates_on_log_axes():
    path = pd.DataFrame({"weight": [1.0, 10.0, 100.0], "rel_err_trigger": [1e-1, 1e-3, 1e-5]})
    assert ch04.weight_for(path, 1e-2) == pytest.approx(10**0.5)
    assert ch04.weight_for(path, 1e-4) == pytest.approx(10**1.5)
    assert math.isnan(ch04.weight_for(path, 1e-6))


def fake_heads():
    """A made-up deep.heads(): two 2 x 2 softmax seeds (one layer per seed with a sink), one 4 x 4 softmax
    head (diffuse, 0.957 on BOS at the trigger row) and one ReLU seed."""
    rows = []
    for seed in (0, 1):
        for layer in (0, 1):
            for head in (0, 1):
                rows.append(
                    {
                        "attention": "softmax",
                        "n_layers": 2,
                        "seed": seed,
                        "layer": layer,
                        "head": head,
                        "bos_mass_nontrigger": 0.99 if head == 0 else 0.3,
                        "trigger_bos_weight": 0.2 + 0.1 * head,
                        "trigger_bos_share": 0.2 + 0.1 * head,
                        "attn_mass_nontrigger": 1.0,
                        "kind": "sink" if head == 0 else "diffuse",
                    }
                )
    rows.append(
        {
            "attention": "softmax",
            "n_layers": 4,
            "seed": 0,
            "layer": 0,
            "head": 0,
            "bos_mass_nontrigger": 0.1,
            "trigger_bos_weight": 0.957,
            "trigger_bos_share": 0.957,
            "attn_mass_nontrigger": 1.0,
            "kind": "diffuse",
        }
    )
    rows.append({"attention": "relu", "n_layers": 2, "seed": 0, "layer": 0, "head": 0, "attn_mass_nontrigger": 0.002})
    return pd.DataFrame(rows)


def test_the_head_measures_read_made_up_tables():
    # four 2 x 2 heads; three 4 x 4 heads, two of them diffuse (each head's moves averaged over its rows)
    per_head = pd.DataFrame(
        {
            "model": ["2 x 2"] * 4 + ["4 x 4"] * 3,
            "seed": [0, 0, 1, 1, 0, 0, 1],
            "kind": ["sink", "sink", "dormant", "sink", "diffuse", "sink", "diffuse"],
            "move": [0.001, 0.002, 0.003, 0.004, 0.118, 0.002, 0.5],
            "D": [math.nan] * 4 + [0.19, 0.05, 0.187],
            "layer_move": [0.001, 0.001, 0.002, 0.002, 0.6, 0.6, 0.8],
            "output": [0.2, 0.3, 0.1, 0.25, 0.4, 0.3, 0.5],
        }
    )
    summary = pd.DataFrame(
        {
            "model": ["2 x 2", "4 x 4", "4 x 4"],
            "diffuse": [0, 3, 0],
            "smallest mean D, diffuse": [math.nan, 0.187, math.nan],
            "mean move, diffuse": [math.nan, 0.31, math.nan],
            "largest layer move": [0.001, 0.8, 0.7],
            "mean |update|, non-trigger rows": [3e-4, 1e-3, 2e-3],
            "largest BOS mass": [0.999, 0.95, 0.97],
        }
    )
    checks = pd.DataFrame(
        {"(sequence, row, head) triples": [10, 20], "violations": [0, 0], "largest slack": [1e-7, 2e-7]}
    )
    cancel_terms = pd.DataFrame(
        {"seq": [0, 1], "moved": [0.9, 0.8287], "violated": [False, False], "layer_moved": [0.0, 0.0]}
    )
    # one 4 x 4 layer (seed 0, layer 0) of two heads, two rows: heads' moves 0.3 + 0.2 and 0.1 + 0.1;
    # one 2 x 2 layer (seed 1, layer 1), two rows: heads' moves 0.03 + 0.03 and 0.01 + 0.01, the layer's 0.004
    terms = pd.DataFrame(
        {
            "model": ["4 x 4"] * 4 + ["2 x 2"] * 4,
            "seed": [0] * 4 + [1] * 4,
            "layer": [0] * 4 + [1] * 4,
            "head": [0, 0, 1, 1, 0, 0, 1, 1],
            "moved": [0.3, 0.1, 0.2, 0.1, 0.03, 0.01, 0.03, 0.01],
            "layer_moved": [0.25, 0.1, 0.25, 0.1, 0.004, 0.004, 0.004, 0.004],
            "violated": [False] * 8,
        }
    )
    m = ch04._heads(checks, cancel_terms, terms, per_head, summary, fake_heads())
    assert (m["random_pairs"], m["random_slack"], m["trained_pairs"]) == (30, 2e-7, 8)
    assert m["cancel_move"] == 0.82 and m["cancel_layer_move"] == 0 and m["cancel_n"] == 2
    assert (m["small_heads"], m["n_seeds"], m["small_sinks"], m["small_dormant"], m["_small_other"]) == (4, 2, 3, 1, 0)
    assert m["small_max_move"] == 0.004 and m["_small_min_out"] == 0.1 and m["small_update"] == 3e-4
    assert (m["big_seeds"], m["big_diffuse_seeds"], m["big_least_D"], m["big_diffuse_move"]) == (2, 1, 0.18, 0.31)
    # per head, not per model: the least diffuse head moves 0.118 (a sink's 0.002 and its D 0.05 do not count)
    assert (m["big_head_move"], m["_big_head_move"], m["_big_head_D"]) == (0.11, 0.118, 0.187)
    assert m["_big_diffuse_move"] == 0.31
    assert (m["big_layer_move_lo"], m["big_layer_move_hi"], m["big_update"]) == (0.7, 0.8, 2e-3)
    assert m["big_within"] == pytest.approx(2.0) and m["_big_layers"] == 1  # (0.5 + 0.2) / 2 over (0.25 + 0.1) / 2
    assert m["_big_within"] == pytest.approx(2.0)
    assert m["small_within"] == pytest.approx(10.0)  # (0.06 + 0.02) / 2 over 0.004
    assert (m["small_within_seed"], m["small_within_layer"]) == (1, 1)
    # nearest to 1/2: head 1's mean BOS weight 0.3 (head 0's trigger share 0.2 is 0.3 away, its 0.99 is 0.49)
    assert m["_kind_margin"] == pytest.approx(0.2) and m["kind_margin"] == "0.2"
    assert m["big_across"] == 350  # the second 4 x 4 seed: 0.7 / 2e-3
    assert m["_least_largest_bos"] == 0.95 and m["_sink_every_layer"]
    assert m["quick_lr"] == "0.001" and m["_full_recipe"] == (1e-4, 50_000)


def test_the_budget_measures_read_made_up_tables():
    front = pd.concat(
        [
            pd.DataFrame({"theta": th, "weight": [w, 10 * w], "rel_err_trigger": [1e-3, 1e-7]})
            for th, w in ((0.5, 1e4), (0.75, 1e2), (0.9, 10.0))
        ]
    )
    models = pd.DataFrame(
        {
            "model": ["trained softmax 2 x 2"] * 2 + ["trained relu 2 x 2", "prop-cancel (margins 5, 10, 15)"],
            "value weight": [2.5, 3.0, 4.0, 2.0],
            "rel_err_trigger": [1e-5, 2e-5, 3e-5, 1e-9],
            "margin": [math.nan] * 3 + [15.0],
        }
    )
    rows = pd.DataFrame({"seed": [0, 1], "trigger": [0.4, 0.8], "non-trigger": [0.9995, 0.9991]})
    m = ch04._budget(front, models, rows, fake_heads())
    assert m["cost_ratio_half"] == ch04._at_least(m["cost_half"] / 3.0)
    assert m["path_bos_half"] == 0.5 and 0.74 < m["path_bos_34"] < 0.75 and 0.89 < m["path_bos_09"] < 0.9
    assert m["_price_soft_errs"] == [1e-5, 2e-5]
    assert m["price_soft_err"] == 2e-5 and (m["price_soft_weight_lo"], m["price_soft_weight"]) == (2.5, 3.0)
    # each path falls a decade of error per quarter decade of weight: 2e-5 lies 1.7 decades down
    assert m["cost_half"] == pytest.approx(1e4 * 10 ** (math.log10(1e-3 / 2e-5) / 4))
    assert m["cost_half"] > m["cost_34"] > m["cost_09"] and m["_paths_fall"]
    assert m["price_soft_nontrigger_row"] == 0.999 and m["price_soft_trigger_row"] == 0.8
    assert (m["price_soft_trigger_seeds"], m["price_soft_seeds"]) == (1, 2)
    assert m["price_soft_trigger_bos"] == pytest.approx(0.3) and m["price_relu_off"] == 0.002
    assert (m["big_trigger_bos"], m["_big_trigger_bos"]) == (0.95, 0.957)  # the 4 x 4 head, not the 2 x 2 ones
    assert (m["price_two_err"], m["_two_weight"], m["price_relu_err"]) == (1e-9, 2.0, 3e-5)
    assert m["price_two_margin"] == 15.0
    # the cheapest path at the ReLU error 3e-5 is the cap 0.9: 10 x 10^(log10(1e-3 / 3e-5) / 4)
    assert m["price_relu_path_least"] == pytest.approx(10 * 10 ** (math.log10(1e-3 / 3e-5) / 4))


def test_cap_rows_reads_the_largest_weight_row_by_row(monkeypatch):
    # one model of one layer and one head: BOS gets 0.3 at the trigger row, 0.9 and 0.7 elsewhere
    batch = SimpleNamespace(
        is_trigger=torch.tensor([[False, False, True, False]]),
        is_nontrigger=torch.tensor([[False, True, False, True]]),
    )
    attn = torch.zeros(1, 1, 4, 4)  # (sequences, heads, query, key)
    attn[0, 0, :, 0] = torch.tensor([1.0, 0.9, 0.3, 0.7])
    monkeypatch.setattr(ch04, "evaluate", lambda model, task, n: SimpleNamespace(attn=[attn], batch=batch))
    deep = SimpleNamespace(results={("softmax", 2, 2): [SimpleNamespace(seed=0, model=None)]})
    rows = ch04.cap_rows(deep, task=None)
    assert rows.to_dict("records") == [{"seed": 0, "trigger": pytest.approx(0.3), "non-trigger": pytest.approx(0.9)}]


def test_the_cancelling_heads_move_by_one_half_at_least_and_at_row_one():
    from attnsink.task import TriggerTask

    task = TriggerTask(d_model=8, seq_len=8, residual=True)
    assert ch04.cancelling_moves_floor(task) == pytest.approx(0.5, abs=1e-6)


def test_the_least_weight_bounds_meet_even_where_g_has_a_flat_top():
    from attnsink.claims.ch04 import least_weight_bounds

    # at L = 6, cap 1/2, |g| peaks on two equal grid values side by side; taken as two logits a
    # grid step apart they made an exact layer of weight 8e8 against a lower bound of 2,705
    b = least_weight_bounds(6, 0.5)
    assert b["lower"] <= b["upper"] <= 1.001 * b["lower"]


def test_the_paths_heads_look_at_bos_up_to_the_cap_and_f_crosses_two_where_bisection_says():
    assert ch04.path_bos_weight(16, 0.5) == 0.5  # row 1; at the trigger every head stays under 1/2
    assert 0.5 < ch04.path_bos_weight(6, 0.75) <= 0.75
    t = ch04.crossing_two(16)
    assert cancellation_weight_floor(16, t - 1e-6) > 2 > cancellation_weight_floor(16, t + 1e-6)
    assert math.isnan(ch04.crossing_two(3)) or ch04.crossing_two(3) > 0.5


def test_the_cancelling_heads_in_float64_stay_under_the_proofs_bound_and_the_floor_reads_the_table():
    from attnsink.task import TriggerTask

    task = TriggerTask(d_model=8, seq_len=8, residual=True)
    far, near = ch04.cancel_float64(task, 20.0, n=200), ch04.cancel_float64(task, 2.0, n=200)
    assert far["entry"] <= far["row"] <= far["bound"] == pytest.approx(math.sqrt(8) * 8 * math.exp(-20))
    assert 1e-3 < near["row"] <= near["bound"]  # a real error at a small margin, still under the bound
    m = ch04._float32_floor(pd.DataFrame({"margin": [0.0, 20.0]}), task)
    assert m["float32_step"] == 2.0**-23 and m["_cancel_last_margin"] == 20.0
    assert m["cancel_bound20"] == pytest.approx(far["bound"]) and m["cancel_err64"] <= m["cancel_bound20"]


def test_the_anchor_figure_measures_read_a_made_up_table():
    # one head, two sequences of rows 1 and 2; y = moved / d_lower against x = mass off BOS
    terms = pd.DataFrame(
        {
            "model": ["2 x 2"] * 4,
            "seed": [0] * 4,
            "layer": [0] * 4,
            "head": [0] * 4,
            "seq": [0, 0, 1, 1],
            "mass_off_bos": [0.5, 0.4, 0.5, 0.2],
            "d_lower": [1.0, 1.0, 1.0, 1.0],
            "moved": [0.4998, 0.8, 0.5004, 0.3],  # row 1 of sequence 0 lies 0.04% below the diagonal
            "slack": [1e-3, 0.0, 0.0, 0.0],
        }
    )
    terms["lhs"] = terms["mass_off_bos"] * terms["d_lower"]
    m = ch04.anchor_shortfall(terms)
    assert m["_anchor_below"] == 1 and m["_anchor_shortfall"] == pytest.approx(4e-4)
    assert m["anchor_shortfall"] == "0.04" and m["_anchor_below_in_slack"]
    assert m["_anchor_row1_gap"] == pytest.approx(8e-4)  # sequence 1's row 1: 0.5004 / 0.5
    m = ch04.anchor_shortfall(terms.assign(slack=0.0))
    assert not m["_anchor_below_in_slack"]  # 2e-4 below, with no slack to allow it
