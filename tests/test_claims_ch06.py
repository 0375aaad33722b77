"""Chapter 6's claims (attnsink.claims.ch06): each holds on good measures and fails when its
number moves; the measures read a made-up run of every rule right."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from attnsink import claims
from attnsink.claims import ch06
from attnsink.experiments import VARIANT_RULES
from attnsink.metrics import evaluate
from attnsink.model import AttentionModel
from attnsink.task import TriggerTask

GOOD = {
    "clip_threshold": "0.0291",  # 0.03/1.03 = 0.029126, to three figures
    "_clip_threshold": 0.03 / 1.03,
    "_clip_zeroes": True,
    "clip_keys": 35,
    "seq_len": 16,
    "simplex_min_bos": 0.998,
    "simplex_min_row_bos": 0.9976,
    "unused_min_row_bos": 0.9936,
    "_parks_min_bos": 0.83,
    "_gated_max_bos": 0.36,
    "nb_bound_at_solved": 0.0052,
    "nb_bound_exact": 0.32,
    "_clipped_stopped": 0,
    "clip_floor": 0.761,
    "clip_err_term": 0.0005,
    "_clip_slack": 0.0006,
    "_clip_a00": True,
    "_clipped_min_bos": 0.83,
    "clipped_min_share": 0.99999,
    "relu_trig_bos_lo": 0.20,
    "relu_trig_bos_hi": 0.27,
    "relu_vis_trig_bos_lo": 0.084,
    "relu_vis_trig_bos_hi": 0.099,
    "relu_map_bos": 0.23,
    "relu_vis_map_bos": 0.077,
    "relu_max_bos": 0.0,
    "unused_min_bos": 0.995,
    "phantom": 0.005,
    "_gated_min_share": 0.9998,
    "_gated_max_mass": 0.36,
    "_sigmoid_min_row_bos": 1.0,
    "sigmoid_bos_logit": "40.9",  # the floor the text states, three figures down from 40.947
    "_sigmoid_bos_logit": 40.947,
    "_sigmoid_logit_floor": 40.9,
    "sigmoid_exact_gap": math.exp(-40.9),  # the gap that floor gives: 1.73e-18, printed up as 1.8e-18
    "sigmoid_err": 0.0064,
    "_sigmoid_err_lo": 0.0063,
    "_sigmoid_err_hi": 0.0065,
    "relu_vis_pos_first": 0.205,
    "relu_vis_pos_last": 0.038,
    "_relu_pos_falls": True,
    "_relu_map_gap": 7e-9,
    "_relu_vis_pos_mean": 0.083,
    "_relu_vis_early_drop": 0.128,
    "_relu_vis_late_drop": 0.039,
    "bos_construct_max_err": 2.6e-9,
    "bos_construct_max_mass": 9.2e-5,
    "bos_construct_max_bos": 3.8e-11,
    "bos_construct_row0_bos": 6.1e-6,
    "_bos_construct_row0_out": 0.0,
    "construct_margin": 12,
    "construct_err_bound": 3.04e-7,
    "construct_max_err": 3.3e-9,
    "construct_max_mass": 9.83e-5,
    "construct_sigmoid_linf": 6.1e-6,
    "_form_cases": 112,
    "_form_grid": ((2, 4, 6, 12), (4, 8, 16, 32)),
    "_form_c_lo": 0.0147,
    "_form_c_hi": 0.999997,  # gated: sigma(-M) e^M = 1 / (1 + e^-M) at M = 12
    "_form_off_line": 6.9e-11,
    "_form_mass": 0.99998,
    "_form_err_trigger": 0.999993,
    "_form_err_other": 0.017,
    "_form_bos_rows": 0.999994,
    "_form_bos_row0": 0.999994,
    "_form_row0_out": 0.0,
    "_stop_linf": 0.005,
    "_sink_logit_content_score": 0.0,
    "_sink_logit_mass": 9.83e-5,
    "_relu_vis_exact_err": 5.4e-15,
    "_relu_vis_exact_mass": 0.0,
    "simplex_nb_min_err": 0.421,
    "nb_bound_min": 0.11,
    "_below_bound": 0,
    "_below_mse_floor": 0,
    "simplex_nb_nontrig": 0.0007,
    "_noise_gap": 0.0073,
    "noise_share": 0.429,
    "_closer_to_all": True,
    "simplex_out_noise": 0.0081,
    "simplex_out_var": 0.0032,
    "on_itself": 0.97,
    "_sigmoid_map_trigger": 0.0104,
    "_others_map_trigger": 0.124,
    "parks_value_ratio": 0.00074,
    "parks_nontrig": 2.8e-6,
    "ex3_nb_share": 0.9997,
    "ex3_nb_bound": 0.72,
    "_ex3_beyond": True,
    "_ex3_wb_within": True,
    "_ex3_signs": True,
    "_clipped_nb_min_err": 0.418,
    "_clipped_nb_nontrig": 0.00077,
    "_clipped_nb_min_mass": 0.78,
    "off_nb_max_err": 0.006,
    "_off_nb_max_nontrig": 3.2e-5,
    "off_nb_max_mass": 0.0049,
    "relu_stopped": True,
    "relu_vis_nb_stopped": True,
    "_scale_margin": 0.0032,
    "relu_vis_err": 0.0058,
    "relu_nb_err": 0.0059,
    "sigmoid_steps": 50_000,
    "relu_steps": 656,
    "sigmoid_stopped": 0,
    "n_seeds": 5,
    "never_runs": 10,
    "off_sink_count": 3,
    "_off_clear_count": 3,
    "n_off": 6,
    "_inexact_stop": True,
}

BREAKS = {
    "clip-threshold": {"clip_threshold": "0.0292"},  # printed above the threshold by more than half a unit
    "simplex-sinks": {"simplex_min_bos": 0.85},
    "simplex-sinks-every-row": {"simplex_min_row_bos": 0.85},
    "sinks-by-threshold": {"_gated_max_bos": 0.5},
    "off-still-sinks-every-row": {"unused_min_row_bos": 0.85},
    "floor-allows-solved": {"nb_bound_at_solved": 0.011},
    "clipped-never-stops": {"_clipped_stopped": 1},
    "partial-sink": {"_clip_slack": -0.01},
    "relu-no-sink": {"relu_max_bos": 0.02},
    "relu-bos-zero": {"relu_max_bos": 1e-4},
    "relu-trigger-bos": {"relu_trig_bos_lo": 0.0},
    "partial-on-bos": {"clipped_min_share": 0.99},
    "off-still-sinks": {"unused_min_bos": 0.8},
    "phantom-unused": {"phantom": 0.02},
    "gated-half": {"_gated_max_mass": 0.9},
    "sigmoid-on-bos": {"_sigmoid_min_row_bos": 0.99999994},  # one float32 step below 1
    "relu-trigger-bos-by-position": {"_relu_pos_falls": False},
    "off-constructions": {"construct_max_err": 2e-6},
    "off-constructions-bos": {"bos_construct_max_bos": 0.5},  # a head that parks half its row on BOS
    "off-constructions-form": {"_form_c_hi": 1.0000001},  # 1 - c_j just past e^-M
    "relu-visible-exact-head": {"_relu_vis_exact_err": 1e-9},
    "sink-logit-third-way": {"_sink_logit_content_score": 1e-3},
    "sigmoid-could-stop": {"construct_sigmoid_linf": 0.006},
    "sigmoid-close-with-bos": {"_sigmoid_err_hi": 0.011},
    "simplex-fail": {"_below_bound": 1},
    "simplex-right-elsewhere": {"simplex_nb_nontrig": 0.05},
    "simplex-lose-the-noise": {"_closer_to_all": False},
    "simplex-constant-output": {"simplex_out_var": 0.2},
    "trigger-on-itself": {"on_itself": 0.5},
    "sigmoid-map-faint": {"_sigmoid_map_trigger": 0.05},
    "parkers-silence-bos": {"parks_value_ratio": 0.01},
    "phantom-through-scores": {"ex3_nb_share": 0.998},
    "partial-fails": {"_clipped_nb_min_mass": 0.3},
    "off-solves": {"off_nb_max_mass": 0.05},
    "exact-rules-stop": {"relu_vis_nb_stopped": False},
    "scale-floors": {"_scale_margin": -0.001},
    "scale-errors-small": {"relu_nb_err": 0.0},
    "sigmoid-slower": {"sigmoid_steps": 600},
    "sigmoid-never-stops": {"sigmoid_stopped": 1},
    "off-half-sink": {"off_sink_count": 4, "_off_clear_count": 2},
    "inexact-rules-stop": {"_inexact_stop": False},
}

MORE_BREAKS = [  # the other branches of claims that check several numbers
    ("clip-threshold", {"_clip_zeroes": False}),  # the library's clip is not at the stated threshold
    ("clip-threshold", {"clip_keys": 34}),  # 34 keys cannot all be at most the threshold
    ("clip-threshold", {"seq_len": 40}),  # a sequence long enough to switch a row off
    ("clip-threshold", {"_clip_threshold": 0.3 / 1.3, "clip_threshold": "0.231"}),  # not the rule's gamma
    ("partial-sink", {"_clip_a00": False}),
    ("partial-sink", {"_clipped_min_bos": 0.7}),  # below the floor less its error term
    ("gated-half", {"_gated_min_share": 0.5}),
    ("sinks-by-threshold", {"_parks_min_bos": 0.49}),
    ("sinks-by-threshold", {"relu_max_bos": 0.5}),
    ("floor-allows-solved", {"nb_bound_exact": 0.009}),
    ("simplex-fail", {"simplex_nb_min_err": 0.05}),
    ("simplex-fail", {"_below_mse_floor": 1}),
    ("simplex-lose-the-noise", {"_noise_gap": 0.1}),
    ("simplex-constant-output", {"simplex_out_noise": 0.2}),
    ("partial-fails", {"_clipped_nb_min_err": 0.05}),
    ("partial-fails", {"_clipped_nb_nontrig": 0.05}),
    ("off-solves", {"off_nb_max_err": 0.05}),
    ("off-solves", {"_off_nb_max_nontrig": 0.05}),
    ("exact-rules-stop", {"relu_stopped": False}),
    ("off-half-sink", {"_off_clear_count": 2}),  # one rule sinks in some seeds only
    ("scale-errors-small", {"relu_vis_err": 0.08}),
    ("sigmoid-map-faint", {"_others_map_trigger": 0.05}),
    ("parkers-silence-bos", {"parks_nontrig": 0.001}),
    ("phantom-through-scores", {"_ex3_beyond": False}),
    ("phantom-through-scores", {"_ex3_wb_within": False}),
    ("phantom-through-scores", {"_ex3_signs": False}),
    ("relu-trigger-bos", {"relu_vis_trig_bos_lo": 0.01}),
    ("relu-trigger-bos", {"relu_map_bos": 0.0}),
    ("relu-trigger-bos", {"relu_vis_map_bos": 0.04}),
    ("sigmoid-on-bos", {"sigmoid_exact_gap": 3e-8}),  # the exact gap past 2^-25: float32 need not round to 1
    ("sigmoid-on-bos", {"sigmoid_bos_logit": "40"}),  # a floor stated with fewer figures than the gap needs
    ("sigmoid-on-bos", {"sigmoid_exact_gap": 1.6e-18}),  # a gap the stated floor does not give
    ("sigmoid-on-bos", {"_sigmoid_logit_floor": 41.0, "sigmoid_bos_logit": "41"}),  # a floor above the logit
    ("relu-trigger-bos-by-position", {"_relu_map_gap": 1e-3}),  # the map is not the position-7 mean
    ("relu-trigger-bos-by-position", {"_relu_vis_late_drop": 0.2}),  # a fall steeper late than early
    ("relu-trigger-bos-by-position", {"_relu_vis_pos_mean": 0.07}),  # the mean below the position-7 value
    ("off-constructions-bos", {"bos_construct_max_err": 2e-6}),
    ("off-constructions-bos", {"bos_construct_max_mass": 2e-4}),
    ("off-constructions-bos", {"bos_construct_row0_bos": 0.5}),  # gated's row 0 with its gate at 0
    ("off-constructions-bos", {"_bos_construct_row0_out": 1e-3}),  # BOS's value not zero
    ("relu-trigger-bos-by-position", {"relu_vis_map_bos": 0.09}),  # inside the range of the means
    ("off-constructions", {"construct_max_mass": 2e-4}),
    ("off-constructions-form", {"_form_c_lo": 0.0}),  # c_j = 1: the head would be exact
    ("off-constructions-form", {"_form_off_line": 1e-6}),  # the output off the line of y_j
    ("off-constructions-form", {"_form_mass": 1.01}),
    ("off-constructions-form", {"_form_err_trigger": 1.01}),
    ("off-constructions-form", {"_form_err_other": 1.01}),
    ("off-constructions-form", {"_form_bos_rows": 1.01}),
    ("off-constructions-form", {"_form_bos_row0": 1.01}),
    ("off-constructions-form", {"_form_row0_out": 1e-300}),
    ("off-constructions-form", {"_form_grid": ((12,), (16,))}),  # only the chapter's setting
    ("off-constructions-form", {"_form_cases": 56}),
    ("off-constructions", {"construct_err_bound": 2e-6}),  # the proof's bound too loose for the text's 1e-6
    ("off-constructions", {"construct_margin": 10}),  # not the M the text states
    ("relu-visible-exact-head", {"_relu_vis_exact_mass": 1e-8}),
    ("sink-logit-third-way", {"_sink_logit_mass": 2e-4}),
    ("sigmoid-close-with-bos", {"_sigmoid_err_lo": 0.0}),  # exact: prop-positive-weights would be false
]


def test_every_chapter_6_claim_holds_on_good_measures_and_fails_when_its_number_moves():
    ids = [c.id for c in ch06.CHAPTER.claims]
    assert sorted(ids) == sorted(BREAKS), "every claim has a test that breaks it"
    by_id = {c.id: c for c in ch06.CHAPTER.claims}
    for c in ch06.CHAPTER.claims:
        assert c.run(GOOD)[0], c.id
        assert not c.run({**GOOD, **BREAKS[c.id]})[0], c.id
    for id, change in MORE_BREAKS:
        assert not by_id[id].run({**GOOD, **change})[0], (id, change)


def test_the_rules_constants_are_the_ones_the_text_derives():
    c = ch06.rule_constants()
    assert c["clip_gamma"] == "\u22120.03" and c["clip_keys"] == 35 and c["seq_len"] == 16
    assert c["clip_threshold"] == "0.0291" and c["_clip_threshold"] == pytest.approx(0.03 / 1.03)
    assert c["_clip_zeroes"] and not ch06.clip_zeroes(0.029) and not ch06.clip_zeroes(0.0292)  # the exact one only
    assert c["clip_least_row"] == pytest.approx(0.55) and 0.55 < c["clip_floor"] < 1
    assert c["rows_ratio"] == 15 and c["solved_pct"] == "1%"
    assert c["noise_dims"] == 13 and c["last_row"] == 15
    assert 0 < c["others_share"] < c["noise_share"] < 1  # the trigger's own noise is part of it
    assert c["scale_floor_vis"] > 0.01 and c["scale_floor_relu_nb"] > 0.01 and c["nb_mse_floor"] > 0
    assert c["scale_floor_vis"] == pytest.approx(0.01692, abs=1e-5)  # Proposition 3.1's R(g), as recomputed
    assert c["scale_floor_relu_nb"] == pytest.approx(0.01091, abs=1e-5)
    assert c["nb_bound_at_solved"] < 0.01 < c["nb_bound_exact"] and c["sink_mass"] == "0.5"


# ---- a made-up run of every rule ----

L, N_MAP, J = 16, 4, 7
FLOAT32_STEP = 2.0**-24  # float32's step just below 1


def _row(rule, bos, seed):
    """One trained model's record, made up: simplex rules sink with BOS and lose the noise
    without it; off-state rules switch off without BOS; ReLU never touches BOS."""
    simplex, partial = VARIANT_RULES[rule] == "simplex", rule == "clipped_softmax"
    bos_mass = {"relu": 0.0, "relu_visible": 0.0, "clipped_softmax": 0.8 + 0.02 * seed, "gated": 0.35}.get(rule, 0.99)
    mass = {"softmax1": 0.996 - 0.002 * seed, "sink_logit": 0.995, "clipped_softmax": bos_mass}.get(rule, bos_mass)
    if not bos:
        mass = 1.0 if simplex else 0.78 if partial else 0.003
    fails = not bos and (simplex or partial)
    return {
        "attention": rule,
        "seed": seed,
        "no_bos": not bos,
        "prediction": VARIANT_RULES[rule],
        "bos_mass_nontrigger": bos_mass if bos else 0.0,
        "attn_mass_nontrigger": mass,
        "bos_share_nontrigger": 1.0 if bos and bos_mass else float("nan"),
        "bos_value_ratio": 0.5 if rule.startswith("relu") else 1e-4,
        "rel_err_trigger": 0.42 + 0.001 * seed if fails else 0.005,
        "rel_err_nontrigger": 0.0007 if fails else 1e-5,
        "mse": 0.01 if fails else 1e-6,
        "steps": 50_000 if rule == "sigmoid" else 600 + seed,
        "stopped_early": rule not in ("sigmoid", "clipped_softmax"),
    }


def fake_variants(seeds=2):
    """Every rule on both tasks, made up; its models are untrained (the measures run them)."""
    runs = [_row(r, bos, s) for bos in (True, False) for r in VARIANT_RULES for s in range(seeds)]
    results = {
        (r, bos): [SimpleNamespace(model=AttentionModel(L, attention=r, seed=s), seed=s) for s in range(seeds)]
        for bos in (True, False)
        for r in VARIANT_RULES
    }
    figure_attn = {}
    for r in VARIANT_RULES:
        for bos in (True, False):
            a = torch.zeros(N_MAP, L, L)
            a[:, J, J] = 0.95 if VARIANT_RULES[r] != "off state" else 0.01 if r == "sigmoid" else 0.1
            figure_attn[r, bos] = a
    settings = SimpleNamespace(steps=50_000, stop_linf=5e-3)
    return SimpleNamespace(runs=runs, results=results, figure_attn=figure_attn, settings=settings)


def _terms(model, task, n=200):
    """The sink inequality's terms for a made-up partial head: slack 0.05 on every row."""
    rows = torch.ones(n * 3)
    return {"err_row": 0.05 * rows, "err_bos": 0.0 * rows, "mass_off_bos": 0.2 * rows, "d_lower": 0.5 * rows}


def test_chapter_6_measures_read_the_runs(monkeypatch):
    monkeypatch.setattr(ch06, "memoized", lambda fn: _terms)  # the hull distances take a while
    result = fake_variants()
    m = ch06.measures(result)
    assert m["simplex_min_bos"] == pytest.approx(0.99) and m["clipped_bos"] == pytest.approx(0.81)
    assert m["_clipped_min_bos"] == pytest.approx(0.8) and m["_clip_slack"] == pytest.approx(0.05 - 0.2 * 0.5)
    assert m["clip_err_term"] == pytest.approx(0.1)  # float32 0.1000000015: check_claims rounds it for the text
    assert m["relu_max_bos"] == 0 and m["unused_min_bos"] == pytest.approx(0.99)
    assert m["phantom"] == pytest.approx(1 - 0.994)  # softmax1's second seed keeps the least
    assert m["gated_mass"] == pytest.approx(0.35) and m["_gated_min_share"] == 1.0
    assert m["gated_bos"] == pytest.approx(0.35) and m["_gated_max_bos"] == pytest.approx(0.35)
    assert m["_parks_min_bos"] == pytest.approx(0.8) and m["_clipped_stopped"] == 0 and m["nb_seeds"] == 2
    assert 0 <= m["simplex_min_row_bos"] <= 1 and 0 <= m["unused_min_row_bos"] <= 1  # untrained heads
    assert m["_sigmoid_min_row_bos"] < 1 and m["sigmoid_exact_gap"] > FLOAT32_STEP  # untrained: far from 1
    assert m["sigmoid_stopped"] == 0 and m["n_seeds"] == 2 and m["_stop_linf"] == 0.005
    assert m["_sigmoid_err_lo"] == m["_sigmoid_err_hi"] == m["sigmoid_err"] == pytest.approx(0.005)
    # the hand-built heads do not depend on the runs
    assert m["construct_margin"] == 12 and m["construct_max_err"] <= 1e-6 and m["construct_max_mass"] < 1e-4
    assert m["_relu_vis_exact_mass"] == 0 and m["_relu_vis_exact_err"] <= 1e-12 and m["_sink_logit_content_score"] == 0
    assert m["construct_sigmoid_linf"] < 0.005 and m["construct_err_bound"] == pytest.approx(8064 * math.exp(-24))
    assert m["_relu_map_gap"] > 0 and isinstance(m["_relu_pos_falls"], bool)  # the made-up maps leave BOS empty
    assert m["bos_construct_max_err"] <= 1e-6 and m["bos_construct_max_bos"] < 1e-10  # they do not read the runs
    assert m["bos_construct_row0_bos"] < 1e-5 and m["_bos_construct_row0_out"] == 0
    assert (m["sigmoid_steps"], m["relu_steps"], m["step_budget"]) == (50_000, 600, 50_000)
    assert m["never_runs"] == 4 and m["stop_linf"] == "0.005"  # 2 seeds on each task
    assert m["clipped_min_share"] == 1.0 and m["relu_map_bos"] == 0 and m["relu_vis_map_bos"] == 0
    assert 0 <= m["relu_trig_bos_lo"] <= m["relu_trig_bos_hi"] and 0 <= m["relu_vis_trig_bos_lo"]
    assert m["simplex_nb_min_err"] == pytest.approx(0.42) and m["simplex_nb_errs"] == "0.420 to 0.421"
    assert m["_clipped_nb_min_mass"] == pytest.approx(0.78) and 0 <= m["on_itself"] <= 1  # untrained heads
    assert m["off_nb_max_mass"] == pytest.approx(0.003) and m["off_nb_max_err"] == pytest.approx(0.005)
    assert m["_below_bound"] == 0 and m["_below_mse_floor"] == 0 and m["_closer_to_all"]
    assert m["relu_stopped"] and m["relu_vis_nb_stopped"] and m["_inexact_stop"]
    assert (m["off_sink_count"], m["_off_clear_count"], m["n_off"]) == (3, 3, 6)
    assert m["sigmoid_stopped"] == 0 and m["_clipped_stopped"] == 0  # counted on both tasks
    # the measures stay unrounded (check_claims prints a stated bound on its safe side), but for
    # the one bound the text qualifies ("at least about"), rounded down here
    assert m["scale_floor_vis"] == pytest.approx(0.01692, abs=1e-5)
    assert m["nb_mse_floor"] == pytest.approx(ch06.rule_constants()["nb_mse_floor"])
    assert m["clip_floor"] == 0.76  # 0.7610, down
    assert m["_sigmoid_map_trigger"] == pytest.approx(0.01) and m["_others_map_trigger"] == pytest.approx(0.1)
    assert m["parks_value_ratio"] == pytest.approx(1e-4) and m["parks_nontrig"] == pytest.approx(1e-5)
    assert m["ex3_seeds"] == 2 and m["ex3_nb_bh"] == "0.00" and m["ex3_nb_bound"] == 0.5  # b_h = 0: e^0/(e^0 + 1)
    assert not m["_ex3_signs"]  # an untrained logit is 0 on both tasks
    assert m["_scale_margin"] > 0  # untrained heads output about nothing: far above the floor
    report = claims.run_claims("ch6", "full", result)
    failed = {r["id"] for r in report.rows if not r["holds"]}
    # the made-up partial head breaks the inequality, its sigmoid heads leave 0.01 off BOS, its
    # ReLU maps leave BOS empty (so they are not the untrained heads' position-7 means), and the
    # untrained models (read row by row) do not sink, nor look at the trigger, nor learn a logit
    assert failed == {
        "partial-sink",
        "relu-trigger-bos",
        "relu-trigger-bos-by-position",
        "sigmoid-on-bos",
        "simplex-sinks-every-row",
        "off-still-sinks-every-row",
        "trigger-on-itself",
        "phantom-through-scores",
    }


def test_a_simplex_run_below_the_corollarys_floor_is_counted(monkeypatch):
    monkeypatch.setattr(ch06, "memoized", lambda fn: _terms)
    result = fake_variants(seeds=1)
    for run in result.runs:
        if run["attention"] == "softmax" and run["no_bos"]:
            run["rel_err_trigger"] = 0.0  # no simplex head can be this good without BOS
    m = ch06.measures(result)
    assert m["_below_bound"] == 1 and m["simplex_nb_min_err"] == 0.0
    assert not dict((c.id, c) for c in ch06.CHAPTER.claims)["simplex-fail"].run(m)[0]


def test_a_range_glued_as_one_string_holds_every_value():
    assert ch06.safe_span([0.798, 0.904]) == "0.79 to 0.91"  # '0.80 to 0.90' would leave both out
    assert ch06.safe_span([-0.217, -0.073]) == "\u22120.22 to \u22120.07"
    assert ch06.safe_span([0.42129, 0.42199], 3) == "0.421 to 0.422"
    assert ch06.safe_span([0.42, 0.421], 3) == "0.420 to 0.421"  # float noise does not widen it
    assert ch06.safe_span([0.5, 0.5]) == "0.50"


STATED = {  # the measures the text states as bounds: check_claims rounds them, so the text must say so
    **dict.fromkeys(
        ["simplex_min_row_bos", "unused_min_row_bos", "simplex_nb_min_err", "nb_bound_min", "nb_mse_floor"],
        "lower",
    ),
    **dict.fromkeys(["scale_floor_vis", "scale_floor_relu_nb", "ex3_nb_share"], "lower"),
    **dict.fromkeys(["on_itself_gap", "clipped_share_gap"], "upper"),  # "all but at most": 1 - share
    **dict.fromkeys(["relu_trig_bos_lo", "relu_vis_trig_bos_lo"], "lower"),
    **dict.fromkeys(
        ["clip_err_term", "simplex_nb_nontrig", "off_nb_max_err", "off_nb_max_mass", "phantom", "simplex_out_noise"],
        "upper",
    ),
    **dict.fromkeys(
        ["simplex_out_var", "parks_value_ratio", "parks_nontrig", "ex3_nb_bound", "ex3_wb_share"],
        "upper",
    ),
    **dict.fromkeys(["relu_trig_bos_hi", "relu_vis_trig_bos_hi"], "upper"),
    **dict.fromkeys(["construct_max_err", "construct_max_mass", "construct_sigmoid_linf"], "upper"),
    **dict.fromkeys(
        ["bos_construct_max_err", "bos_construct_max_mass", "bos_construct_max_bos", "bos_construct_row0_bos"],
        "upper",
    ),
    "sigmoid_exact_gap": "upper",  # "falls short of 1 by less than"
    "sigmoid_bos_logit": "lower",
}


def test_the_chapter_states_each_unrounded_bound_after_a_bound_word():
    from attnsink.claims.bounds import chapter_markdown, stated_bounds

    sides = stated_bounds(chapter_markdown("ch6"))
    assert {name: sides.get(name) for name in STATED} == STATED
    assert "clip_floor" not in sides and set(ch06.LOWER) == {"clip_floor"}  # "at least about": rounded in measures


# ---- the hand-built heads of prop-off-constructions ----


@pytest.mark.parametrize("margin", [2.0, 4.0, 6.0])
def test_each_hand_built_head_meets_the_propositions_bounds(margin):
    """At margins where float32 rounding is negligible beside them, every head meets the proof's
    bounds: relative error below e^-2M at the trigger and 8064 e^-2M elsewhere, each non-trigger
    row's weight below 16 e^-M; and a small margin leaves errors the text's 1e-6 would not hold."""
    task = TriggerTask(bos=False)
    for rule in ch06.CONSTRUCTED:
        ev = evaluate(ch06.off_construction(rule, margin), task, n=500)
        rows = ev.attn[0][:, 0].sum(-1)[ev.batch.is_nontrigger]
        assert ev.errors["rel_err_trigger"] < math.exp(-2 * margin), rule
        assert ev.errors["rel_err_nontrigger"] < 8064 * math.exp(-2 * margin), rule
        assert rows.max() < 16 * math.exp(-margin) and (rows >= 0).all(), rule
        if margin == 2.0:
            assert ev.errors["rel_err_trigger"] > ch06.CONSTRUCT_ERR, rule  # the bound is not idle


def test_the_hand_built_heads_have_the_weights_the_text_gives():
    task = TriggerTask(bos=False)
    batch = task.sample(50, generator=torch.Generator().manual_seed(0))
    trig = batch.is_trigger
    thetas = {"softmax1": (12, -12), "sink_logit": (24, 0), "sigmoid": (-12, -24), "gated": (0, 0)}
    for rule, (theta_t, theta_c) in thetas.items():
        model = ch06.off_construction(rule)
        s = ch06.scores(model, batch.x)  # every key of a row scores alike: theta_T at the trigger, theta_C elsewhere
        assert (s[trig] == theta_t).all() and (s[~trig] == theta_c).all(), rule
    assert ch06.off_construction("sink_logit").sink.item() == 12
    assert ch06.off_construction("sigmoid").W_V[0, 0, 0, 0].item() == pytest.approx(math.exp(12))
    _, (w,) = ch06.off_construction("gated")(batch.x)
    torch.testing.assert_close(w.sum(-1)[:, 0][trig], torch.full((50,), torch.sigmoid(torch.tensor(12.0)).item()))
    with pytest.raises(KeyError):
        ch06.off_construction("softmax")  # a simplex head has no such construction


def test_scores_are_the_ones_the_model_weighs():
    model = AttentionModel(L, attention="softmax", seed=3)
    x = TriggerTask().sample(8, generator=torch.Generator().manual_seed(1)).x
    _, (w,) = model(x)
    mask = torch.ones(L, L, dtype=torch.bool).tril()
    expected = ch06.scores(model, x).masked_fill(~mask, float("-inf")).softmax(-1).float()
    torch.testing.assert_close(w[:, 0], expected, atol=1e-6, rtol=0)


def test_a_saturated_sigmoid_head_weighs_bos_exactly_one_in_float32():
    """A sigmoid head whose content queries score BOS at 60: the float32 weight is 1, and the
    smallest logit, 60 - log 16, gives an exact gap far below float32's half step."""
    model = AttentionModel(L, attention="sigmoid")
    qk = torch.zeros(L, L)
    qk[L - 1, 0] = 60.0  # content query (bias channel) . BOS key
    with torch.no_grad():
        model.W_Q.copy_(qk[None, None])
        model.W_K.copy_(torch.eye(L)[None, None])
    result = SimpleNamespace(results={("sigmoid", True): [SimpleNamespace(model=model)]})
    m = ch06.sigmoid_saturation(result, n=100)
    assert m["_sigmoid_min_row_bos"] == 1.0
    assert m["_sigmoid_bos_logit"] == pytest.approx(60 - math.log(16))  # 57.227: stated as at least 57.2
    assert m["sigmoid_bos_logit"] == "57.2" and m["_sigmoid_logit_floor"] == 57.2
    assert m["sigmoid_exact_gap"] == math.exp(-57.2) < ch06.FLOAT32_HALF_STEP
    claim = {c.id: c for c in ch06.CHAPTER.claims}["sigmoid-on-bos"]
    assert claim.run(m)[0]
    with torch.no_grad():
        model.W_Q[0, 0, L - 1, 0] = 10.0  # a logit near 7: float32 no longer rounds the weight to 1
    m = ch06.sigmoid_saturation(result, n=100)
    assert m["_sigmoid_min_row_bos"] < 1 and not claim.run(m)[0]
    assert m["sigmoid_bos_logit"] == "7.22" and m["sigmoid_exact_gap"] == math.exp(-7.22)  # 10 - log 16 = 7.227


def test_the_stated_logit_floor_gives_the_stated_gap():
    """The text states the sigmoid heads' least BOS logit as a floor and the gap e^-floor beside
    it: at the full runs' 40.947 the floor is 40.9, whose e^-40.9 = 1.73e-18 prints up as 1.8e-18
    (two figures, '40', would need a gap of e^-40 = 4.2e-18)."""
    from attnsink.claims.bounds import glued_text
    from attnsink.prose import bound

    floor = bound(40.947274, "down", 3)
    assert floor == 40.9 and glued_text(math.exp(-floor), "upper") == "1.8 × 10⁻¹⁸"
    assert glued_text(40.947274, "lower") == "40"  # what a number glued after 'at least' prints


def test_the_relu_maps_are_read_at_one_trigger_position():
    """The per-position means of a made-up run: the map equals the position-7 mean only when it
    was read there."""
    result = fake_variants(seeds=1)
    for rule in ch06.RELU:
        ev = evaluate(result.results[rule, True][0].model, TriggerTask(), n=1000, trigger_pos=J)
        result.figure_attn[rule, True] = ev.attn[0][:, 0]
    m = ch06.trigger_bos_by_position(result)
    assert m["_relu_map_gap"] <= 1e-6 and 0 <= m["relu_vis_pos_last"]
    result.figure_attn["relu", True] = result.figure_attn["relu", True] + 0.01
    assert ch06.trigger_bos_by_position(result)["_relu_map_gap"] == pytest.approx(0.01, abs=1e-6)


@pytest.mark.parametrize("margin", [2.0, 4.0, 6.0])
def test_the_hand_built_heads_with_bos_meet_the_propositions_bounds(margin):
    """With BOS, the softmax1, sink_logit and gated heads meet the same bounds as without it, put
    below e^-2M on BOS at rows 1 on and below e^-M at row 0, and output exactly 0 at row 0."""
    task = TriggerTask()
    for rule in ch06.BOS_CONSTRUCTED:
        ev = evaluate(ch06.off_construction(rule, margin, bos=True), task, n=500)
        a = ev.attn[0][:, 0]
        assert ev.errors["rel_err_trigger"] < math.exp(-2 * margin), rule
        assert ev.errors["rel_err_nontrigger"] < 8064 * math.exp(-2 * margin), rule
        assert a.sum(-1)[ev.batch.is_nontrigger].max() < 16 * math.exp(-margin), rule
        assert a[:, 1:, 0].max() < math.exp(-2 * margin) and a[:, 0, 0].max() < math.exp(-margin), rule
        assert (ev.y_hat[:, 0] == 0).all(), rule


def test_without_the_bos_additions_the_heads_park_or_err_on_the_task_with_bos():
    """The additions are what make the construction work with BOS: the heads built for the task
    without BOS put about half of a non-trigger row on BOS (softmax1: BOS scores 0 against the
    phantom's 0), or miss the target at BOS's own row (gated: BOS's value e_bos, its gate at 1/2)."""
    task = TriggerTask()
    ev = evaluate(ch06.off_construction("softmax1"), task, n=200)
    assert ev.attn[0][:, 0, 1:, 0][ev.batch.is_nontrigger[:, 1:]].mean() > 0.45
    ev = evaluate(ch06.off_construction("gated"), task, n=200)
    assert ev.y_hat[:, 0].abs().max() > 0.1
    with pytest.raises(KeyError):
        ch06.off_construction("sigmoid", bos=True)  # no head with BOS for sigmoid


def test_the_bos_construction_measures_read_every_head(monkeypatch):
    """bos_constructions reports the worst of its three heads: one head made to park on BOS shows."""
    good = ch06.bos_constructions(n=200)
    assert good["bos_construct_max_bos"] < 1e-10 and good["_bos_construct_row0_out"] == 0
    build = ch06.off_construction

    def parking(rule, margin=ch06.MARGIN, bos=False, dtype=torch.float32):
        return build(rule, margin, bos=rule != "sink_logit" and bos, dtype=dtype)

    monkeypatch.setattr(ch06, "off_construction", parking)
    bad = ch06.bos_constructions(n=200)
    assert (
        bad["bos_construct_max_bos"] > 1e-6
        and not {c.id: c for c in ch06.CHAPTER.claims}["off-constructions-bos"].run({**GOOD, **bad})[0]
    )


# ---- prop-off-constructions's statement, in float64 ----


def _one_minus_c(rule: str, bos: bool, margin: float, j: torch.Tensor) -> torch.Tensor:
    """1 - c_j as the proof of prop-off-constructions computes it, in float64. The sigmoid rule
    rounds its offset log(i + 1) to float32 whatever the scores' dtype (attnsink.attention), so
    its c_j is the proof's e^M (j + 1) sigma(-M - log(j + 1)) at that rounded offset."""
    e, t = math.exp(margin), math.exp(-2 * margin)
    sig = 1 / (1 + e)  # sigma(-M)
    if rule == "sigmoid":
        offset = torch.log(j.float() + 1).double()
        return 1 - e * (j + 1) * torch.sigmoid(-margin - offset)
    if not bos:
        return torch.full_like(j, sig) if rule == "gated" else 1 / (1 + (j + 1) * e)
    return {
        "softmax1": (1 + t) / (1 + t + j * e),
        "sink_logit": (e + t) / (e + t + j * e**2),
        "gated": sig + (1 - sig) * t / (j + t),
    }[rule]


@pytest.mark.parametrize("margin", [2.0, 12.0])
@pytest.mark.parametrize("seq_len", [4, 16, 32])
def test_each_head_outputs_the_proofs_c_j_times_the_target(margin, seq_len):
    """In float64, every head's trigger output is c_j y_j with the proof's own c_j, to float64
    rounding (relative to 1 - c_j, which is at least about e^-M / 50 here)."""
    for bos, rules in ((False, ch06.CONSTRUCTED), (True, ch06.BOS_CONSTRUCTED)):
        task = TriggerTask(seq_len=seq_len, bos=bos)
        batch = task.sample(300, generator=torch.Generator().manual_seed(seq_len))
        for rule in rules:
            model = ch06.off_construction(rule, margin, bos=bos, dtype=torch.float64)
            y_hat, _, y = ch06.float64_run(model, task, batch)
            c, off = ch06.on_the_line(y_hat[batch.is_trigger], y)
            proof = _one_minus_c(rule, bos, margin, batch.trigger_pos.double())
            torch.testing.assert_close(1 - c, proof, rtol=1e-8, atol=0)
            assert (off < 1e-14).all() and ((0 < 1 - c) & (1 - c < math.exp(-margin))).all(), (rule, bos)


def test_the_float64_targets_are_the_tasks():
    for bos in (True, False):
        task = TriggerTask(seq_len=8, bos=bos)
        batch = task.sample(50, generator=torch.Generator().manual_seed(0))
        _, _, y = ch06.float64_run(ch06.off_construction("gated", 4.0, bos=bos), task, batch)
        assert y.dtype == torch.float64
        torch.testing.assert_close(y.float(), batch.y[batch.is_trigger], rtol=0, atol=1e-6)


def test_the_form_measures_hold_the_claim_and_show_a_broken_head(monkeypatch):
    """construction_form meets every bound of the statement on the library's heads (each share
    below 1), and shows a head that leaves it: values that scale one noise coordinate apart put
    the trigger's output off the line of y_j; the heads without BOS's additions park on BOS."""
    m = ch06.construction_form()
    claim = {c.id: c for c in ch06.CHAPTER.claims}["off-constructions-form"]
    assert claim.run(m)[0] and m["_form_cases"] == 112 and m["_form_row0_out"] == 0
    assert 0 < m["_form_c_lo"] and m["_form_c_hi"] < 1 and m["_form_off_line"] < ch06.OFF_LINE
    assert 0.99 < m["_form_c_hi"]  # gated's sigma(-M) lies just under e^-M: the check reads the bound itself
    build = ch06.off_construction

    def skewed(rule, margin=ch06.MARGIN, bos=False, dtype=torch.float32):
        model = build(rule, margin, bos=bos, dtype=dtype)
        with torch.no_grad():
            model.W_V[0, 0, 5, 5] *= 1.001  # one noise coordinate's value a little off
        return model

    monkeypatch.setattr(ch06, "off_construction", skewed)
    case = ch06.form_case("softmax1", False, 12.0, 16)
    assert case["off_line"] > ch06.OFF_LINE and case["c_hi"] < 1  # c_j still in range: only the line breaks
    monkeypatch.setattr(ch06, "off_construction", lambda rule, margin, bos, dtype: build(rule, margin, dtype=dtype))
    assert ch06.form_case("softmax1", True, 12.0, 16)["bos_rows"] > 1  # BOS at 0, against the phantom's 0
