"""Chapter 2's claims (attnsink.claims.ch02): each holds on good measures and fails when its
number moves; the measures read made-up frames right; the analyses run on small inputs."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from attnsink import TriggerTask, claims, evaluate
from attnsink.claims import bounds, ch02
from attnsink.claims.bounds import printed
from attnsink.construct import softmax_solution

GOOD = {  # the full runs' measures, as the chapter quotes them
    "family_monotone": True,
    "family_top_bos": 0.99995,
    "family_top_bos_min": 0.99991,
    "family_top_mse": 2.2e-10,
    "n_rows": 50_400,
    "n_violations": 0,
    "hand_ratio": 1.10,
    "trained_ratio": 1.98,
    "random_ratio": 4.17,
    "value_len_hand": 3.063,
    "value_len_trained": 3.067,
    "value_len_random": 23.14,
    "_max_gap": 2.9e-5,
    "hand_min_d": 0.779,
    "_trained_min_d": 0.778,
    "_a10_min": 0.99972,
    "_se_max": 0.0093,
    "_leak_violating_max": 0.0108,
    "_row1_share": 0.0035,
    "vacuous_mse": 1.41e-6,
    "_B_vac": (0.002, 0.0),
    "_trained_off_max": 0.0024,
    "_random_min_d": 0.83,
    "random_floor": 0.055,
    "_below_floor": 0,
    "_trained_whp_violations": 0,
    "_leak_teeth": [0.002, 0.011, 0.0],
    "_violations_heavy": True,
    "_heavy_max": 0.036,
    "_steps_worst": {"lemma": 0.0, "convex": 1.1e-7, "triangle": 1.9e-7, "markov": -0.05, "cauchy": -7.5e-5},
    "_B": {1e-8: 0.983, 1e-7: 0.928, 1e-6: 0.409},
    "_cert_min": 0.915,
    "cert_n": 10,
    "below_max": 0.0,
    "every_below_max": 0.0,
    "se_sigmas": 21,
    "_floor_min": 0.705,
    "_every_min": 0.949,
    "_markers_above": 0,
    "_trained_room_min": 447.0,
    "leak_share_min": 0.051,
    "leak_ratio_min": 3.5,
    "leak_ratio_max": 13.2,
    "short_ratio_min": 3.52,
    "short_ratio_max": 5.31,
    "_plain_ratio_min": 6.6,
    "_leak_grows": True,
    "_family_ratio": 345.0,
    "_late_share": 0.996,
    "_mu_vac_max": 0.047,
    "_capped_above": True,
    "_floor_positive": True,
    "_floor_cap0": 5.38e-4,
    "capped_budget": 20_000,
    "ch1_budget": 50_000,
    "_below_ran_budget": True,
    "uncapped_steps_max": 921,
    "_caps_span": (0.0, 1.0),
    "ratio": 92_440.0,
    "_uncapped_stopped": True,
    "_bound_falls": True,
    "_bound_stopped": 0,
    "bound_cap_max": "0.85",
    "n_free": 20,
    "n_free_stopped": 0,
    "free_caps": "0.9 to 0.99",
    "_all_fall": True,
    "above_min": 5.26,
    "above_max": 32.0,
    "_cap0_nontrig_max": 0.001,
    "cap0_trig": 0.48,
    "cap0_trig_min": 0.477,
    "bound_cap0_max": 0.1025,
    "d_cap0": 0.029,
    "d_cap1": 1.21,
    "_nb_above": True,
    "_nb_err_min": 0.42,
    "_nb_bound_max": 0.113,
    "_relu_below": True,
    "_relu_nb_mse": 7.6e-8,
    "nb_floor": 4.2e-4,
    "_nb_floor": 4.27e-4,
    "_markov_max": -0.05,
    "_tube_1": 0.0011754,
    "_tube_formula": 0.0011754,
    "_ex1_holds": True,
    "_ex1_ratio_min": 0.69,
    "_ex1_ratio_max": 1.0,
    "_ex1_d_max": 0.029,
    "_ex1_trig": 0.98,
    "_ex1_rest": 7.4e-5,
    "ex1_off_min": 0.5,
    "ex1_off_max": 0.9375,
    "_ex1_d_scale": 0.0100000001,
    "_ex3_moves": True,
    "_ex3_trig": 2.3e-12,
    "_ex3_over": 56.0,
    "_d_ordered": True,
    "_below_floor_all": 0,
    "_floor_rows_before": 26_964,
    "_floor_rows_after": 23_436,
    "_floor_slack_before": 0.0057,
    "_floor_slack_after": 0.071,
    "ceiling_min": 266.76,
    "ceiling_over_eta": 9.79e6,
    "ceiling_per_n": 489.4,
    "_leak_unit_spread": 2.4e-7,
    "_mu_vac": 0.02503,
    "_mu_vac_short": 0.04685,
    "_cert_delta": 0.05,
    "m_noise": 13,
    "_floor_m2": 0.0,
    "_floor_m3": 1.3e-4,
    "_cap_a00_min": 1.0,
    "_cap_excess": 0.0,
    "_cap_rowsum_gap": 1.2e-7,
    "twins_n": 5,
    "_twins_same_steps": True,
    "twin_weight_diff": 2.22e-4,
    "twin_weight_max": 0.747,
    "_twin_mse_diff": 0.020,
    "_draw_mse_diff": 0.0731,
    "_ex3_all_caps": True,
    "ex3_low_cap": "0.5",
    "ex3_fold_min": 1.804,
    "ex3_fold_max": 9.597,
    "ex3_low_d": 0.0671,
    "ex3_low_trig": 0.4449,
    "ex3_low_rest": 0.001339,
    "ex3_high_d": 1.120,
    "ex3_high_trig": 0.01303,
    "_random_n": 3,
    "_random_trig": (37.3, 60.6),
    "_random_rest": (32.1, 58.6),
    "_random_mse": (3.0, 5.4),
}

BREAKS = {  # claim -> a change of the measures that makes it false
    "family-sinks-as-error-falls": {"family_top_bos_min": 0.9998},
    "no-row-violates": {"n_violations": 1},
    "hand-built-bound-close": {"hand_ratio": 1.3},
    "distances-are-accurate": {"_max_gap": 2e-3},
    "hand-built-distance": {"hand_min_d": 0.70},
    "trained-distance": {"_trained_off_max": 0.02},
    "random-distance": {"_below_floor": 1},
    "corollary-safe-on-trained": {"_trained_whp_violations": 1},
    "corollary-fails-only-where-allowed": {"_leak_teeth": [0.002, 0.011, 0.001]},
    "bound-gap-by-kind": {"trained_ratio": 1.0},
    "proof-steps-hold": {"_steps_worst": {**GOOD["_steps_worst"], "triangle": 2e-6}},
    "value-lengths": {"value_len_random": 15.0},
    "certificate-weakens-but-bites": {"_B": {1e-8: 0.98, 1e-7: 0.93, 1e-6: 0.0}},
    "trained-heads-certified": {"_cert_min": 0.85},
    "certificate-holds-on-test": {"every_below_max": 0.001},
    "mse-factor-is-wide": {"se_sigmas": 4},
    "every-row-certified": {"_every_min": 0.8},
    "certificate-allows-every-head": {"_markers_above": 1},
    "leaks-come-close": {"leak_ratio_max": 25.0},
    "hand-built-far-inside": {"_late_share": 0.9},
    "small-leak-voids-it": {"_mu_vac_max": 0.2},
    "capped-above-floors": {"_capped_above": False},
    "capped-floor-positive": {"_floor_positive": False},
    "capped-floor-needs-three-noise": {"_floor_m2": 1e-6},
    "capped-rule-exempts-bos-row": {"_cap_a00_min": 0.99},
    "capped-budget-shorter": {"capped_budget": 50_000},
    "cap-zero-far-worse": {"ratio": 50.0},
    "error-falls-where-floor-binds": {"_bound_stopped": 1},
    "no-capped-head-stops": {"n_free_stopped": 1},
    "floors-not-reached": {"above_min": 0.9},
    "cap-zero-gives-up-the-trigger": {"d_cap0": 0.5},
    "no-bos-above-floors": {"_nb_above": False},
    "relu-beats-the-simplex-floor": {"_relu_below": False},
    "markov-not-exercised": {"_markov_max": -0.045},
    "tube-is-thin": {"_tube_1": 0.0013, "_tube_formula": 0.0013},
    "exercise-shrunk-values": {"_ex1_d_max": 0.06},
    "exercise-capped-hand-built": {"_ex3_over": 5.0},
    "quoted-distances": {"_trained_min_d": 0.76},
    "quoted-smallest-a10": {"_a10_min": 0.9996},
    "quoted-mse-factor-sigmas": {"_se_max": 0.0094},
    "quoted-leak-violations": {"_leak_violating_max": 0.0112},
    "quoted-row-one-share": {"_row1_share": 0.0037},
    "quoted-vacuous-mse": {"vacuous_mse": 1.5e-6},
    "quoted-bound-gaps": {"trained_ratio": 2.1},
    "quoted-trained-rows": {"_trained_off_max": 0.0025},
    "quoted-value-lengths": {"value_len_random": 24.5},
    "quoted-room": {"_trained_room_min": 440.0},
    "quoted-leak-ratios": {"leak_ratio_max": 14.5},
    "quoted-floor-ratios": {"above_max": 34.0},
    "hull-bounds-ordered": {"_d_ordered": False},
    "floor-from-weights-holds": {"_below_floor_all": 1},
    "ceiling-swamps-eta": {"ceiling_per_n": 90.0},
    "quoted-ceiling": {"ceiling_min": 250.0},
    "leak-mse-is-quadratic": {"_leak_unit_spread": 1e-4},
    "quoted-leak-voids": {"_mu_vac": 0.0261},
    "uncapped-twins": {"_twins_same_steps": False},
    "quoted-twins": {"_draw_mse_diff": 0.075},
    "exercise-capped-like-for-like": {"_ex3_all_caps": False},
    "quoted-exercise-capped": {"ex3_high_trig": 0.0141},
    "random-heads-solve-nothing": {"_random_trig": (0.9, 60.6)},
}

COUPLED = {  # a claim and the claims its break may move too: a structural check and the quoted number it reads
    "leaks-come-close": {"hand-built-far-inside", "quoted-leak-ratios"},
    "bound-gap-by-kind": {"quoted-bound-gaps"},
    "hand-built-bound-close": {"quoted-bound-gaps", "bound-gap-by-kind"},
    "trained-distance": {"quoted-trained-rows"},
    "distances-are-accurate": {"quoted-trained-rows"},
    "floors-not-reached": {"quoted-floor-ratios"},
    "cap-zero-far-worse": {"quoted-floor-ratios"},
    "ceiling-swamps-eta": {"quoted-ceiling"},
}


def test_every_chapter_2_claim_holds_on_good_measures_and_fails_when_its_number_moves():
    ids = [c.id for c in ch02.CHAPTER.claims]
    assert sorted(ids) == sorted(BREAKS), "every claim has a test that breaks it"
    for c in ch02.CHAPTER.claims:
        assert c.run(GOOD)[0], c.id
        broken = {**GOOD, **BREAKS[c.id]}
        assert not c.run(broken)[0], c.id
        others = [o.id for o in ch02.CHAPTER.claims if o.id != c.id and not o.run(broken)[0]]
        assert set(others) <= COUPLED.get(c.id, set()), (c.id, others)  # each break moves one claim


def test_more_branches_fail():
    run = {c.id: c for c in ch02.CHAPTER.claims}
    for cid, change in [
        ("corollary-fails-only-where-allowed", {"_violations_heavy": False}),
        ("corollary-fails-only-where-allowed", {"_leak_teeth": [0.0, 0.0, 0.0]}),
        ("corollary-fails-only-where-allowed", {"_heavy_max": 0.06}),
        ("leaks-come-close", {"_leak_grows": False}),
        ("leaks-come-close", {"short_ratio_max": 7.0}),
        ("leaks-come-close", {"leak_share_min": 0.04}),
        ("hand-built-far-inside", {"_family_ratio": 90.0}),
        ("floor-from-weights-holds", {"_floor_rows_before": 0}),  # the before-trigger floor never tested
        ("floor-from-weights-holds", {"_floor_rows_after": 0}),
        ("cap-zero-far-worse", {"_uncapped_stopped": False}),
        ("capped-budget-shorter", {"_below_ran_budget": False}),
        ("capped-budget-shorter", {"uncapped_steps_max": 12_000}),
        ("cap-zero-far-worse", {"_caps_span": (0.1, 1.0)}),
        ("no-capped-head-stops", {"_all_fall": False}),
        ("no-capped-head-stops", {"n_free": 0}),
        ("error-falls-where-floor-binds", {"_bound_falls": False}),
        ("cap-zero-gives-up-the-trigger", {"cap0_trig": 0.2}),
        ("cap-zero-gives-up-the-trigger", {"_cap0_nontrig_max": 0.02}),
        ("random-distance", {"random_floor": 0.9}),
        ("trained-distance", {"_trained_min_d": 0.4}),
        ("quoted-distances", {"_random_min_d": 0.82}),
        ("quoted-vacuous-mse", {"_B_vac": (0.0, 0.0)}),
        ("quoted-vacuous-mse", {"_B_vac": (0.01, 0.01)}),
        ("every-row-certified", {"_floor_min": 0.4}),
        ("certificate-allows-every-head", {"_trained_room_min": 90.0}),
        ("certificate-holds-on-test", {"below_max": 0.001}),
        ("proof-steps-hold", {"_steps_worst": {**GOOD["_steps_worst"], "lemma": 2e-6}}),
        ("proof-steps-hold", {"_steps_worst": {**GOOD["_steps_worst"], "markov": 0.001}}),
        ("proof-steps-hold", {"_steps_worst": {**GOOD["_steps_worst"], "cauchy": 2e-6}}),
        ("proof-steps-hold", {"_steps_worst": {**GOOD["_steps_worst"], "convex": 2e-6}}),
        ("bound-gap-by-kind", {"random_ratio": 1.5}),
        ("value-lengths", {"value_len_trained": 5.0}),
        ("capped-above-floors", {"cap0_trig_min": 0.09}),
        ("exercise-shrunk-values", {"ex1_off_min": 0.45}),
        ("exercise-shrunk-values", {"ex1_off_max": 0.9}),
        ("exercise-shrunk-values", {"_ex1_d_scale": 0.0102}),
        ("quoted-trained-rows", {"_max_gap": 3e-5}),
        ("quoted-value-lengths", {"value_len_trained": 3.2}),
        ("quoted-room", {"_family_ratio": 344.0}),
        ("quoted-leak-ratios", {"leak_ratio_min": 3.4}),
        ("quoted-leak-ratios", {"short_ratio_max": 5.5}),
        ("quoted-floor-ratios", {"above_min": 5.1}),
        ("quoted-floor-ratios", {"ratio": 93_000.0}),
        ("quoted-bound-gaps", {"hand_ratio": 1.16}),
        ("tube-is-thin", {"_tube_formula": 0.0011}),
        ("exercise-shrunk-values", {"_ex1_holds": False}),
        ("exercise-shrunk-values", {"_ex1_ratio_min": 0.4}),
        ("exercise-shrunk-values", {"_ex1_ratio_max": 1.01}),
        ("exercise-shrunk-values", {"_ex1_trig": 0.8}),
        ("exercise-shrunk-values", {"_ex1_rest": 2e-3}),
        ("exercise-capped-hand-built", {"_ex3_moves": False}),
        ("exercise-capped-hand-built", {"_ex3_trig": 1e-8}),
        ("ceiling-swamps-eta", {"ceiling_over_eta": 9e5}),
        ("quoted-ceiling", {"ceiling_over_eta": 9.6e6}),
        ("quoted-ceiling", {"ceiling_per_n": 470.0}),
        ("quoted-leak-voids", {"_mu_vac_short": 0.0471}),
        ("quoted-leak-voids", {"_mu_vac": 0.0249}),  # 0.026 would then be a loose bound
        ("quoted-leak-voids", {"_mu_vac_short": 0.0459}),
        ("trained-heads-certified", {"_cert_delta": 0.1}),  # the text says 95% of sequences
        ("every-row-certified", {"_cert_delta": 0.1}),
        ("capped-floor-positive", {"m_noise": 2}),
        ("capped-floor-needs-three-noise", {"_floor_m3": 0.0}),
        ("capped-rule-exempts-bos-row", {"_cap_excess": 1e-3}),  # a later row above the cap
        ("capped-rule-exempts-bos-row", {"_cap_rowsum_gap": 1e-3}),  # a row off the simplex
        ("uncapped-twins", {"twins_n": 0}),
        ("uncapped-twins", {"twin_weight_diff": 2e-3}),
        ("quoted-twins", {"twin_weight_diff": 2.4e-4}),
        ("quoted-twins", {"twin_weight_max": 0.76}),
        ("quoted-twins", {"_twin_mse_diff": 0.022}),
        ("exercise-capped-like-for-like", {"ex3_fold_min": 0.9}),
        ("exercise-capped-like-for-like", {"ex3_low_d": 0.8}),
        ("exercise-capped-like-for-like", {"ex3_low_trig": 1e-4}),
        ("exercise-capped-like-for-like", {"ex3_high_d": 0.7}),
        ("quoted-exercise-capped", {"ex3_fold_min": 1.79}),
        ("quoted-exercise-capped", {"ex3_fold_max": 9.61}),
        ("quoted-exercise-capped", {"ex3_low_d": 0.068}),
        ("quoted-exercise-capped", {"ex3_low_trig": 0.43}),
        ("quoted-exercise-capped", {"ex3_low_rest": 0.0014}),
        ("quoted-exercise-capped", {"ex3_high_d": 1.09}),
        ("random-heads-solve-nothing", {"_random_rest": (0.5, 58.6)}),
        ("random-heads-solve-nothing", {"_random_n": 0}),
    ]:
        assert not run[cid].run({**GOOD, **change})[0], (cid, change)


def test_a_bound_column_prints_as_the_table_prints_numbers_but_on_its_safe_side():
    down, up = bounds.bound_cell("down"), bounds.bound_cell("up")
    # Table 2.4's certificates and the proved floors on the MSE: never above their value
    assert [down(x) for x in (0.97355, 0.96756, 0.8329, 0.98698)] == ["0.973", "0.967", "0.832", "0.986"]
    assert [down(x) for x in (5.382e-4, 2.478e-4, 3.952e-5, 1.778e-7, 4.271e-4)] == [
        "5.3 × 10⁻⁴",
        "2.4 × 10⁻⁴",
        "3.9 × 10⁻⁵",
        "1.7 × 10⁻⁷",
        "4.2 × 10⁻⁴",
    ]
    assert up(0.97355) == "0.974" and up(5.382e-4) == "5.4 × 10⁻⁴" and up(0.00999) == "0.010"
    assert down(0.0) == "0" and down(float("nan")) == "–" and down(12.3456) == "12.345" and down(0.9) == "0.900"
    for x in (0.97355, 5.382e-4, 0.0501, 3.7, 1234.5678):
        assert printed(down(x)) <= x <= printed(up(x))
    with pytest.raises(ValueError, match="side"):
        bounds.bound_cell("nearest")


def test_a_range_of_measures_rounds_outward():
    assert ch02._range(5.2626, 32.037) == "5.2 to 33" and ch02._range(3.5157, 13.232, 3) == "3.51 to 13.3"


def test_the_random_heads_solve_nothing():
    randoms = ch02.random_errors(TriggerTask())
    assert len(randoms) == 3 and (randoms.rel_err_trigger > 1).all() and (randoms.rel_err_nontrigger > 1).all()
    m = ch02._random_measures(randoms)
    assert m["random_err_min"] == min(randoms.rel_err_trigger.min(), randoms.rel_err_nontrigger.min())
    assert m["_random_n"] == 3 and m["_random_mse"] == (randoms.mse.min(), randoms.mse.max())


def test_directed_rounding_keeps_at_least_and_at_most_true():
    assert ch02.at_least(0.94898, 3) == "0.948" and ch02.at_most(0.94898, 3) == "0.949"
    assert ch02.at_least(379.99, 3) == "379" and ch02.at_most(0.1127) == "0.12"
    assert ch02.at_most(0.00929, percent=True) == "0.93%" and ch02.at_least(0.9964, 3, percent=True) == "99.6%"
    assert ch02.at_most(7.63e-8) == "7.7 × 10⁻⁸" and ch02.at_least(0.7) == "0.70" and ch02.at_most(0.0) == "0"


# ---- the measures, on made-up frames ----


def _rows():
    rows = []
    for source, off, d, (before, after), factor in (
        ("hand-built", 0.1, 0.8, (0.75, 0.7), 1.1),
        ("trained (chapter 1)", 1e-4, 0.9, (0.8, 0.7), 2.0),
        ("random", 0.5, 1.0, (0.3, 0.2), 4.2),
    ):
        for k in range(2):  # a row before the trigger, then one after it
            rows.append(
                {
                    "source": source,
                    "head": f"{source}, seed 0",
                    "mass_off_bos": off * (k + 1),
                    "rhs": factor * off * (k + 1) * d,  # the bound: factor times the weight off BOS
                    "d_lower": d,
                    "d_upper": d + 1e-5,
                    "after_trigger": k == 1,
                    "floor_before": before,
                    "floor_after": after,
                    "floor": min(before, after),
                    "whp": 0.01,
                }
            )
    rows = pd.DataFrame(rows)
    rows["scaled_error"] = rows.rhs / rows.d_lower
    return rows


def _capped():
    """Two seeds per cap; the floors of caps 0 and 0.5 are above stop_linf² (2.5e-5), 0.9's below."""
    rows = []
    for cap, mse, floor, d in (
        (0.0, 3e-3, 5e-4, 0.03),
        (0.5, 2e-3, 2.5e-4, 0.2),
        (0.9, 5e-4, 1.8e-5, 1.1),
        (1.0, 3e-8, 0.0, 1.2),
    ):
        for seed in range(2):
            rows.append(
                {
                    "cap": cap,
                    "seed": seed,
                    "steps": 800 if cap == 1 else 20_000,
                    "stopped_early": cap == 1,
                    "mse": mse,
                    "MSE floor": floor,
                    "rel_err_trigger": 0.48 if cap == 0 else 0.01,
                    "bound on rel_err_trigger": 0.1 if cap == 0 else 0.0,
                    "rel_err_nontrigger": 1e-3,
                    "bos_mass_nontrigger": min(cap, 0.999),
                    "sq_err_nontrigger_row": 1e-4,
                    "sq_bound_nontrigger_row": 1e-5,
                    "mean_d": d,
                    "stop_linf": 0.005,
                    "budget": 20_000,
                    "chapter 1 budget": 50_000,
                }
            )
    return pd.DataFrame(rows)


def made_up():
    """What the chapter's sections compute, made up and small."""
    family = pd.DataFrame(
        {
            "margin": [0.0, 12.0],
            "mse": [0.06, 2e-10],
            "rel_err_trigger": [0.03, 2e-12],
            "rel_err_nontrigger": [0.7, 3e-9],
            "bos_mass_nontrigger": [0.16, 0.99995],
            "bos_mass_min": [0.06, 0.99991],
        }
    )
    checks = pd.DataFrame(
        {
            "mass off BOS": [0.01, 0.01],
            "intended share": [0.01, 0.04],
            "fraction leaking": [0.0108, 0.0395],
            "eta": [6e-6, 2.4e-5],
            "sequences violating": [0.01, 0.0],
            "sequences with E > eta/delta": [0.01, 0.035],
            "violating within heavy": [True, True],
        }
    )
    steps = pd.DataFrame(
        {
            "head": ["hand-built, margin 12", "trained (chapter 1), seed 0", "random, seed 0"],
            "lemma |y0 - u0|": [0.0, 0.0, 0.0],
            "min (|u_bar| - D_i) / ell": [0.0, -2e-7, 0.0],
            "min triangle slack / ell": [1e-5, -1e-7, 0.0],
            "Markov: P - delta": [-0.05, -0.05, -0.05],
            "Cauchy-Schwarz: max excess / ell": [-1e-3, -0.5, -1.0],
            "longest value": [3.06, 3.07, 23.1],
        }
    )
    cert = pd.DataFrame(
        {
            "seed": [0, 1],
            "test MSE": [3e-8, 1e-7],
            "its standard error": [1.5e-10, 1e-9],
            "certified BOS weight at position 1": [0.96, 0.915],
            "smallest measured": [0.9999, 0.9997],
            "sequences below the certificate": [0.0, 0.0],
            "mass off BOS, 95% quantile": [5e-5, 1.6e-4],
            "floor on D_i from the weights": [0.707, 0.705],
            "certified BOS weight, every row": [0.97, 0.949],
            "sequences with a row below it": [0.0, 0.0],
            "ceiling on E(x)": [267.0, 266.0],
            "sequences": [20_000, 20_000],
        }
    )
    tight = pd.DataFrame(
        [
            {"head": head, "test MSE": unit * mu**2, "fraction leaking": share, "mass off BOS": mu}
            for head, unit, share in (("row_one_leak", 2.3e-3, 0.1), ("row_one_leak (shortest x₁)", 6.5e-4, 0.051))
            for mu in (1e-4, 1e-3, 1e-2)
        ]
        + [
            {
                "head": "hand-built, margin 12",
                "test MSE": 2.2e-10,
                "mass off BOS": 6e-6,
                "late share": 0.996,
                "row 1 share": 0.004,
            }
        ]
    )
    tight["certified: at most"] = 4.0 * tight["mass off BOS"] * (1 + tight.index % 3)  # grows with the error
    tight.loc[tight["head"].str.startswith("row_one_leak (s"), "certified: at most"] /= 4
    tight.loc[tight["head"].str.startswith("hand"), "certified: at most"] = 2.4e-3
    tight["ratio"] = tight["certified: at most"] / tight["mass off BOS"]
    no_bos = pd.DataFrame(
        {
            "attention": ["softmax", "softmax", "relu_visible"],
            "mse": [2.3e-3, 2.3e-3, 7e-8],
            "rel_err_trigger": [0.42, 0.43, 1e-6],
            "bound on rel_err_trigger": [0.11, 0.113, float("nan")],
            "MSE floor": [4.27e-4] * 3,
        }
    )
    shrunk = {"rel_err_trigger": 0.98, "rel_err_nontrigger": 1e-4, "holds": True}
    shrunk |= {"ratio_min": 0.69, "ratio_max": 0.9999, "d_max": 0.0283, "d_max_unscaled": 2.83}
    shrunk |= {"rows": 700, "off_min": 0.5, "off_max": 0.9375}
    ex_capped = pd.DataFrame(
        {
            "cap": [0.5, 0.9, 0.99],
            "mse": [0.026, 1.0e-3, 1.0e-5],
            "MSE floor": [2.5e-4, 1.8e-5, 1.8e-7],
            "rel_err_trigger": [2e-12, 2.2e-12, 2.3e-12],
            "rel_err_nontrigger": [0.3, 0.01, 1e-4],
            "a00_min": [1.0, 1.0, 1.0],
            "cap_excess": [0.0, -1e-8, 0.0],
            "row_sum_gap": [0.0, 0.0, 0.0],
        }
    )
    exercises = {"shrunk": shrunk, "capped": ex_capped}
    capped = _capped()
    at_99 = capped[capped.cap == 0.9].assign(cap=0.99, mse=5e-6, **{"MSE floor": 1.8e-7})  # Exercise 2.3's last cap
    twins = pd.DataFrame(
        {
            "seed": [0, 1],
            "steps": [775, 883],
            "chapter 1 steps": [775, 883],
            "largest weight difference": [1e-4, 2e-4],
            "largest weight": [0.66, 0.71],
            "MSE": [3.1e-8, 1.0e-7],
            "chapter 1 MSE": [3.0e-8, 1.02e-7],
        }
    )
    return dict(
        family=family,
        rows=_rows(),
        checks=checks,
        steps=steps,
        cert=cert,
        tight=tight,
        capped=pd.concat([capped, at_99], ignore_index=True).sort_values("cap", kind="stable"),
        no_bos=no_bos,
        twins=twins,
        exercises=exercises,
    )


def test_chapter_2_measures_read_the_made_up_frames():
    m = ch02.measures(**made_up())
    assert m["family_monotone"] and m["family_top_margin"] == 12 and m["family_top_bos"] == pytest.approx(0.99995)
    assert (m["n_rows"], m["n_violations"], m["_below_floor"]) == (6, 0, 0)
    assert m["hand_ratio"] == pytest.approx(1.1) and m["_random_min_d"] == 1.0 and m["random_floor"] == 0.2
    assert (m["trained_ratio"], m["random_ratio"]) == (pytest.approx(2.0), pytest.approx(4.2))
    assert (m["value_len_hand"], m["value_len_trained"], m["value_len_random"]) == (3.06, 3.07, 23.1)
    assert m["rows_per_head"] == 2 and m["ex1_rows"] == 700 and m["_ex1_d_scale"] == pytest.approx(0.01)
    assert m["_leak_teeth"] == [0.01, 0.0] and m["leak_violating_max"] == "1.0%"
    assert m["leak_widest_share"] == "4.0%" and m["_markov_max"] == pytest.approx(-0.05)
    assert (m["ex1_d_max"], m["ex1_ratio_min"], m["ex3_trig"], m["ex3_over"]) == ("0.029", "0.69", "2.3 × 10⁻¹²", "55")
    assert m["tube_1"] == "0.0012" and m["_tube_1"] == pytest.approx(m["_tube_formula"])
    assert m["_steps_worst"]["convex"] == pytest.approx(2e-7) and m["_steps_worst"]["triangle"] == pytest.approx(1e-7)
    assert (m["cert_n"], m["cert_min"], m["every_min"], m["floor_min"]) == (2, "0.915", "0.949", "0.70")
    assert m["se_sigmas"] == 20 and m["se_max"] == "1.0%"  # 0.2 / 0.01: the second head's
    assert m["leak_ratio_min"] == pytest.approx(1) and m["leak_ratio_max"] == pytest.approx(12)
    assert m["_leak_grows"] and m["_family_ratio"] == pytest.approx(400) and m["late_share"] == "99.6%"
    # the unit MSEs are 2.3e-3 and 6.5e-4: the vacuous MSE over each, square-rooted
    assert m["_mu_vac_max"] == pytest.approx((m["vacuous_mse"] / 6.5e-4) ** 0.5)
    assert m["_markers_above"] == 0 and m["_trained_room_min"] > 100
    assert (m["bound_cap_max"], m["free_caps"], m["n_free"], m["n_free_stopped"]) == ("0.5", "0.9 to 0.99", 4, 0)
    assert m["_bound_falls"] and m["_all_fall"] and m["_capped_above"] and m["_uncapped_stopped"]
    assert m["ratio"] == pytest.approx(1e5) and m["above_min"] == pytest.approx(6)
    assert m["above_max"] == pytest.approx(5e-4 / 1.8e-5)
    assert m["cap0_trig"] == pytest.approx(0.48) and m["bound_cap0_max"] == 0.1 and m["capped_seeds"] == 2
    assert m["cap0_trig_min"] == pytest.approx(0.48)
    assert m["_nb_above"] and m["_relu_below"] and m["nb_n"] == 2 and m["nb_err_min"] == "0.42"
    assert m["nb_floor"] == 4.2e-4 and m["floor_cap0"] == 5e-4 and m["_floor_positive"]  # floors: rounded down
    assert (m["capped_budget"], m["ch1_budget"], m["uncapped_steps_max"], m["leak_mu"]) == (20_000, 50_000, 800, "0.01")
    assert m["family_top_bos_min"] == pytest.approx(0.99991) and m["_below_ran_budget"]
    # the ceiling against eta = L d MSE = 256 MSE, and over the 20,000 sequences
    assert m["ceiling_min"] == 266.0 and m["ceiling_over_eta"] == pytest.approx(266.0 / (256 * 1e-7))
    assert m["ceiling_per_n"] == pytest.approx(266.0 / (256 * 1e-7) / 20_000)
    assert m["_leak_unit_spread"] < 1e-9 and m["_mu_vac"] == pytest.approx((m["vacuous_mse"] / 2.3e-3) ** 0.5)
    assert m["_mu_vac_short"] == pytest.approx(m["_mu_vac_max"]) and m["_d_ordered"] and m["_below_floor_all"] == 0
    # "keeping mu_vac is enough": printed rounded up, as a string the bound words do not round again
    assert m["mu_vac"] == ch02.at_most(m["_mu_vac"]) and m["mu_vac_short"] == ch02.at_most(m["_mu_vac_short"])
    assert printed(m["mu_vac"]) >= m["_mu_vac"] and printed(m["mu_vac_short"]) >= m["_mu_vac_short"]
    assert m["_floor_m2"] == 0 < m["_floor_m3"] and m["sink_mass"] == "0.5" and m["_cert_delta"] == 0.05
    assert (m["_cap_a00_min"], m["_cap_excess"], m["_cap_rowsum_gap"]) == (1.0, 0.0, 0.0)
    assert (m["twins_n"], m["_twins_same_steps"], m["twin_weight_diff"], m["twin_weight_max"]) == (2, True, 2e-4, 0.71)
    assert m["_twin_mse_diff"] == pytest.approx(0.1 / 3) and m["twin_mse_diff"] == "3.4%"  # seed 0: 3.1 against 3.0
    assert m["_draw_mse_diff"] == pytest.approx(0.02) and m["draw_mse_diff"] == "2.0%"  # seed 1: 1.02e-7 against 1e-7
    # Exercise 2.3 like for like: the hand-built head's MSE over the trained heads' at 0.5, 0.9, 0.99
    assert (m["ex3_fold_min"], m["ex3_fold_max"]) == (pytest.approx(2), pytest.approx(13))
    assert (m["ex3_low_cap"], m["ex3_low_d"], m["ex3_low_trig"], m["ex3_low_rest"]) == ("0.5", 0.2, 0.01, 1e-3)
    assert (m["ex3_high_d"], m["ex3_high_trig"], m["_ex3_all_caps"]) == (1.1, 0.01, True)
    report = claims.run_claims("ch2", "full", **made_up())
    failed = {r["id"] for r in report.rows if not r["holds"]}
    assert {f for f in failed if not f.startswith("quoted-")} == set()  # quoted-*: the full runs' own numbers


def test_a_capped_head_that_stops_where_the_floor_binds_fails_its_claim():
    found = made_up()
    found["capped"].loc[found["capped"].cap == 0.5, "stopped_early"] = True
    failed = {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}
    assert {f for f in failed if not f.startswith("quoted-")} == {"error-falls-where-floor-binds"}


def test_a_row_above_the_bound_is_a_violation():
    found = made_up()
    found["rows"].loc[0, "rhs"] = 0.0
    m = ch02.measures(**found)
    assert m["n_violations"] == 1
    assert "no-row-violates" in {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}


# ---- the analyses, on small inputs ----


def test_the_analyses_run_on_small_inputs(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNSINK_CACHE_DIR", str(tmp_path))
    task = TriggerTask()
    family = ch02.family_table(task, margins=(0.0, 12.0))
    assert family.bos_mass_nontrigger.is_monotonic_increasing and family.mse.iloc[-1] < 1e-8
    trained = [SimpleNamespace(model=softmax_solution(task, 12.0), seed=0)]  # stands for a trained head
    heads = {"hand-built, margin 12": trained[0].model}
    rows, terms = ch02.row_terms(heads, task, n=4)
    assert len(rows) == 4 * 14 and (rows.mass_off_bos * rows.d_lower <= rows.rhs + 1e-6).all()
    assert rows.d_lower.min() >= 2**-0.5 - 1e-6 and (rows.floor > 0).all()
    # the rows after the trigger are the sequences' L - 1 - j; the head's floors are 1 and 1/sqrt 2
    j = evaluate(heads["hand-built, margin 12"], task, n=4).batch.trigger_pos
    assert rows.after_trigger.sum() == int((task.seq_len - 1 - j).sum()) and not rows.after_trigger.all()
    assert rows.floor_before.iloc[0] == pytest.approx(1.0) and rows.floor_after.iloc[0] == pytest.approx(2**-0.5)
    assert (rows[~rows.after_trigger].d_upper >= 1 - 1e-5).all()  # content tokens only: the bias channel is 1
    steps = ch02.proof_steps(heads, terms, task, n=4)
    assert steps["lemma |y0 - u0|"].max() <= 1e-6 and steps["min triangle slack / ell"].min() >= -1e-6
    assert steps["longest value"].iloc[0] <= 14**0.5  # a hand-built head's values are the tokens
    checks = ch02.corollary_checks(task, n=2000)
    assert checks["violating within heavy"].all()
    assert (checks["fraction leaking"] - checks["intended share"]).abs().max() < 0.01
    cert = ch02.certify(trained, task, n=500)
    assert (
        cert["certified BOS weight at position 1"].iloc[0] > 0.9
        and cert["sequences below the certificate"].iloc[0] == 0
    )
    tight = ch02.tightness(task, n_probe=4000, n=500)
    assert (tight.ratio >= 1).all() and len(tight) == 8
    points = ch02.certificate_points(cert, tight, task)
    assert (points.mass_off <= points.allowed).all() and len(ch02.certificate_curve(task)) == 80
    grid = ch02.certificate_grid(task, mses=(1e-8, 1e-6), deltas=(0.05,))
    assert grid["B, δ = 0.05"].is_monotonic_decreasing


def test_capped_and_no_bos_runs_get_their_floors():
    task = TriggerTask()
    raw = _capped().drop(columns=["MSE floor", "bound on rel_err_trigger", "stop_linf", "budget", "chapter 1 budget"])
    settings = SimpleNamespace(stop_linf=0.004, steps=20_000)
    cb = SimpleNamespace(frame=lambda: raw.copy(), settings=settings, profile="full")
    capped = ch02.capped_runs(cb, task)
    assert (capped.budget == 20_000).all() and (capped["chapter 1 budget"] == 50_000).all()
    assert (capped.stop_linf == 0.004).all() and (capped[capped.cap == 1.0]["MSE floor"] == 0).all()
    assert capped.groupby("cap")["MSE floor"].first().loc[[0.0, 0.5, 0.9]].is_monotonic_decreasing
    by_cap = ch02.capped_by_cap(capped)
    assert list(by_cap.cap) == [0.0, 0.5, 0.9, 1.0] and list(by_cap.stopped) == [0, 0, 0, 2]
    run = {"no_bos": True, "mse": 1e-3, "rel_err_trigger": 0.4, "rel_err_nontrigger": 1e-3}
    vr = SimpleNamespace(
        runs=[{**run, "attention": "softmax"}, {**run, "attention": "relu_visible"}, {**run, "attention": "relu"}]
        + [{**run, "attention": "softmax", "no_bos": False}]
    )
    nb = ch02.no_bos_runs(vr)
    assert list(nb.attention) == ["softmax", "relu_visible"] and nb["bound on rel_err_trigger"].iloc[0] > 0


def test_the_exercises_runs_match_what_their_solutions_find():
    ex = ch02.exercise_runs(TriggerTask())
    assert ex["shrunk"]["holds"] and ex["shrunk"]["d_max"] < 0.05 and ex["shrunk"]["rel_err_trigger"] > 0.9
    assert ex["shrunk"]["d_max"] / ex["shrunk"]["d_max_unscaled"] == pytest.approx(0.01, rel=1e-3)
    assert (ex["shrunk"]["off_min"], ex["shrunk"]["off_max"], ex["shrunk"]["rows"]) == (0.5, 0.9375, 700)
    c = ex["capped"]
    assert list(c.cap) == [0.5, 0.9, 0.99] and (c.mse > c["MSE floor"]).all()
    # row 0 is exempt from the cap (a_00 = 1); every later row is capped, and binds at the cap
    assert (c.a00_min == 1).all() and (c.cap_excess.abs() <= 1e-6).all() and (c.row_sum_gap <= 1e-5).all()


def test_the_capped_rows_measure_finds_a_capped_bos_row_and_a_row_above_the_cap():
    import torch

    a = torch.tensor([[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.25, 0.25]]])  # cap 0.5, row 0 exempt
    assert ch02._capped_rows(a, 0.5) == {"a00_min": 1.0, "cap_excess": 0.0, "row_sum_gap": 0.0}
    capped_bos = a.clone()
    capped_bos[0, 0] = torch.tensor([0.5, 0.0, 0.0])  # BOS's own row capped too: off the simplex
    r = ch02._capped_rows(capped_bos, 0.5)
    assert r["a00_min"] == 0.5 and r["row_sum_gap"] == 0.5
    over = a.clone()
    over[0, 2] = torch.tensor([0.75, 0.125, 0.125])
    assert ch02._capped_rows(over, 0.5)["cap_excess"] == 0.25


def test_the_ceiling_on_one_sequences_error_holds_and_is_exact_for_the_hand_built_head():
    from attnsink import evaluate
    from attnsink.model import AttentionModel

    task = TriggerTask()
    # the hand-built head's values are the tokens but BOS: the longest is sqrt(m + 1) = sqrt(14),
    # so the ceiling is 15 * 14 + (2 sqrt(14))^2 = 266
    assert ch02.error_ceiling(softmax_solution(task, 12.0), task) == pytest.approx(266.0)
    for t, std in ((task, 0.5), (TriggerTask(d_model=20, seq_len=6), 0.3)):  # m = 13: exact; m = 17: triangle
        head = AttentionModel(t.d_model, seed=1, init_std=std)
        ceiling = ch02.error_ceiling(head, t)
        ev = evaluate(head, t, n=300)
        assert (ev.y_hat - ev.batch.y).pow(2).sum(dim=(1, 2)).max().item() <= ceiling  # it is a ceiling
    with pytest.raises(ValueError, match="one-layer"):
        ch02.error_ceiling(AttentionModel(16, n_heads=2), task)
    with pytest.raises(ValueError, match="BOS"):
        ch02.error_ceiling(AttentionModel(16), TriggerTask(bos=False))


def test_the_uncapped_twins_are_paired_by_seed_and_an_empty_pairing_fails_its_claim():
    task = TriggerTask()
    head = lambda: softmax_solution(task, 12.0)  # noqa: E731
    trained = [SimpleNamespace(model=head(), seed=0, steps=10)]
    cb = SimpleNamespace(
        results={1.0: [SimpleNamespace(model=head(), seed=0, steps=10), SimpleNamespace(model=head(), seed=7, steps=3)]}
    )
    twins = ch02.uncapped_twins(trained, cb, task)
    assert list(twins.seed) == [0] and twins["largest weight difference"].iloc[0] == 0  # seed 7 has no twin
    assert twins.MSE.iloc[0] == twins["chapter 1 MSE"].iloc[0] and twins.steps.iloc[0] == 10
    assert len(ch02.uncapped_twins(trained, SimpleNamespace(results={}), task)) == 0
    found = made_up()
    found["twins"] = found["twins"].iloc[:0]
    m = ch02.measures(**found)
    assert m["twins_n"] == 0 and not m["_twins_same_steps"]
    assert "uncapped-twins" in {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}
    found = made_up()
    found["twins"].loc[0, "steps"] = 776  # a twin that stopped a step later
    assert "uncapped-twins" in {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}


def test_exercise_2_3_compares_like_for_like_and_fails_where_a_cap_was_not_trained():
    found = made_up()
    found["capped"] = found["capped"][found["capped"].cap != 0.99]  # the quick profile trains no 0.99
    m = ch02.measures(**found)
    assert not m["_ex3_all_caps"] and m["ex3_fold_min"] == pytest.approx(2) and m["ex3_high_d"] == 1.1
    assert "exercise-capped-like-for-like" in {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}
    found = made_up()
    found["rows"].loc[0, "d_upper"] = 0.5  # below the hand-built head's floor of 0.7, and below its D_i⁻
    failed = {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}
    assert {"hull-bounds-ordered", "floor-from-weights-holds"} <= failed
    found = made_up()
    found["tight"].loc[1, "test MSE"] *= 1.001  # a leak whose MSE is not its mass squared times one unit
    assert "leak-mse-is-quadratic" in {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}


def _floor_rows(d_upper, after_trigger, before=1.0, after=0.7):
    """A small frame of row_terms' floor columns: one head whose floors are ``before`` (rows
    before the trigger) and ``after`` (rows after it)."""
    n = len(d_upper)
    return pd.DataFrame(
        {"d_upper": d_upper, "after_trigger": after_trigger, "floor_before": [before] * n}
        | {"floor_after": [after] * n, "floor": [min(before, after)] * n}
    )


def test_each_row_meets_the_floor_for_its_side_of_the_trigger():
    # a row before the trigger between the two floors: above the smaller, below its own
    between = ch02._floor_measures(_floor_rows([0.85, 0.8], [False, True]))
    assert between["_below_floor_all"] == 1 and between["_floor_slack_before"] == pytest.approx(-0.15)
    assert (between["_floor_rows_before"], between["_floor_rows_after"]) == (1, 1)
    # the same D_i after the trigger clears that row's floor, the segment's
    after = ch02._floor_measures(_floor_rows([1.2, 0.85], [False, True]))
    assert after["_below_floor_all"] == 0 and after["_floor_slack_after"] == pytest.approx(0.15)
    assert after["_floor_slack_before"] == pytest.approx(0.2)
    # within the float allowance TOL of its own floor still counts as on it
    assert ch02._floor_measures(_floor_rows([1.0 - ch02.TOL / 2], [False]))["_below_floor_all"] == 0


def test_the_floor_claim_fails_on_a_before_trigger_row_between_the_floors_and_holds_when_all_clear():
    found = made_up()
    rows = found["rows"]
    hand_before = (rows.source == "hand-built") & ~rows.after_trigger
    rows.loc[rows.source == "hand-built", "floor_before"] = 0.9  # above the row's D_i⁺ (0.80001), 0.7 below it
    failed = {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}
    assert {f for f in failed if not f.startswith("quoted-")} == {"floor-from-weights-holds"}
    assert (rows[hand_before].d_upper > rows[hand_before].floor).all()  # the smaller floor alone misses it
    rows.loc[rows.source == "hand-built", "floor_before"] = 0.78  # above the other floor, below D_i: all clear
    failed = {r["id"] for r in claims.run_claims("ch2", "full", **found).failed}
    assert {f for f in failed if not f.startswith("quoted-")} == set()
