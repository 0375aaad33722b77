"""Chapter 7's claims (attnsink.claims.ch07): each holds on good measures and fails when its
number moves; the measures read a small made-up result (tiny untrained GPTs, training
records written by hand) as they should; the chapter's tables draw from it."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnsink import lm
from attnsink.claims import ch07
from attnsink.profiles import BACKCOPY_NO_BOS, BACKCOPY_RULES, BACKCOPY_TASK, Settings

GOOD = {  # the full runs' measures, rounded
    "excess_min": 0.012,
    "excess_max": 0.013,
    "excess_seed_max": 0.018,
    "below_best": 0.01,
    "copy_min": 0.992,
    "gap_abs": 7.7e-4,
    "gap_abs_min": 1.5e-4,
    "relu_n_above": 5,
    "sink_logit_n_above": 5,
    "sigmoid_n_above": 4,
    "softmax1_n_above": 4,
    "sign_p": 0.0625,
    "sign_p_text": "1/16",
    "sign_p_high": 0.375,
    "sign_p_high_text": "3/8",
    "paired_mean_min": 1.5e-4,
    "paired_mean_max": 7.7e-4,
    "paired_min": -5.2e-5,
    "paired_max": 0.0014,
    "n_soft_per_model": 4,
    "nb_rest_look_n": 8,
    "nb_rest_look_previous_min": 0.047,
    "nb_rest_look_previous_max": 0.068,
    "nb_even_trigger": 0.073,
    "nobos_every_first_max": 0.21,
    "relu_l1_row": 6.4e-4,
    "sigmoid_l1_row": 0.37,
    "relu_l1_row_seed_max": 0.002,
    "sigmoid_l1_row_seed_min": 0.0,
    "sigmoid_l1_n_off": 3,
    "n_seeds": 5,
    "sigmoid_l1_row_seed_max": 0.93,
    "softmax1_l1_row_seed_min": 0.93,
    "sink_logit_l1_row_seed_min": 0.30,
    "softmax1_l1_row": 0.93,
    "sink_logit_l1_row": 0.33,
    "soft_first_min": 0.993,
    "leave_every_seed": True,
    "n_leave": 11,
    "n_stay": 9,
    "n_soft": 20,
    "stay_trigger_min": 0.997,
    "soft_value_min": 0.022,
    "soft_value_max": 0.11,
    "l1_first_mean": 0.076,
    "even": 0.075,
    "l1_entropy_min": 0.9998,
    "l1_first_max": 0.076,
    "relu_row_max": 0.0016,
    "sigmoid_row_max": 0.0011,
    "relu_trig_min": 0.29,
    "sigmoid_trig_min": 0.30,
    "softmax1_row_max": 3.7e-4,
    "sink_logit_row_max": 0.0014,
    "nobos_first_max": 0.20,
    "nobos_entropy": 0.82,
    "bos_entropy": 0.0013,
    "nobos_soft_copy": 1.0,
    "bos_soft_copy": 0.9998,
    "nobos_soft_excess": 0.0122,
    "bos_soft_excess": 0.0116,
    "where_largest_max": 0.50,
    "where_row_top": 0.999,
    "where_over_half_max": 0.46,
    "look_n": 11,
    "look_previous_min": 0.947,
    "look_previous_max": 0.993,
    "nb_look_n": 12,
    "nb_look_previous_min": 0.862,
    "nb_look_previous_max": 0.955,
    "pos_token_min": 0.647,
    "pos_token_max": 0.929,
    "pos_n_tokens": 29,
    "nb_rest_entropy_min": 0.93,
    "course_flat": 350,
    "course_settled": 4650,
    "course_rise": 0.64,
    "course_rise_seed": 2,
    "course_rise_head": 2,
    "course_rise_from": 0.36,
    "course_rise_to": 0.99949,
    "course_rise_end": "0.9995",
    "course_mid_step": 2500,
    "off_peak": 0.89,
    "off_n_heads": 40,
    "off_n_parked": 39,
    "off_head_peak_min": 0.44,
    "off_left": 2950,
    "steps": 5000,
    "nobos_course_max": 0.255,
    "pos_first": 0.82,
    "pos_first_min": 0.74,
    "pos_bos": 0.95,
    "pos_excess": 0.094,
    "pos_excess_own": 0.011,
    "pos_excess_plain": 0.011,
    "n_nothing": 400,
    "n_heads": 400,
    "zero_max": 0.0017,
    "layer0_ord_abs": 6.6e-4,
    "layer0_trig_min": 0.32,
    "single_trig_max": 0.21,
    "n_shared": 36,
    "n_single": 50,
    "soft_l1_abs": 1.1e-5,
    "soft_l1_both_abs": 1.5e-5,
    "busy": "relu",
    "idle_cost": 5.5e-5,
    "tol_over_noise": 52,
    "n_noticed": 9,
    "n_ctl_leave": 11,
    "nb_n_above": 0,
    "nb_n_copy_above": 0,
    "nb_n_leave": 12,
    "nb_n_heads": 20,
    "nb_ctl_max": 0.0032,
    "n_noticed_quiet": 9,
    "noticed_ratio_min": 0.032,
    "noticed_ratio_max": 0.068,
    "copy_ratio_max": 0.068,
    "nb_copy_ratio_min": 0.30,
    "nb_copy_ratio_max": 0.43,
    "single_trig_min": 0.0016,
    "noticed_value_max": 0.081,
    "where_self_max": 0.062,
    "where_previous_max": 0.19,
    "where_first_max": 0.204,
    "where_largest_min": 0.103,
    "nb_n_rest": 8,
    "nb_rest_trig_min": 0.077,
    "nb_rest_trig_max": 0.137,
    "loud": 2.7,
    "layer_bos_min": 1.7,
    "layer_bos_max": 2.5,
    "layer_nobos_min": 0.0039,
    "layer_nobos_max": 0.049,
    "scaled_min": 0.53,
    "scaled_max": 2.8,
    "shrunk_min": 0.017,
    "shrunk_max": 0.043,
    "raw_gap": 141,
    "matched_gap": 2.2,
    "nb_first_over_even": 2.74,
    "nb_copy_first_min": 0.098,
    "nb_copy_first_max": 0.204,
    "nb_first_min": 0.080,
    "top_first_max": 0.633,
    "top_first_copies": False,
    "top_self_max": 0.040,
    "top_previous_min": 0.054,
    "top_previous_max": 0.42,
    "off_parked_peak_min": 0.586,
    "off_low_peak": 0.437,
    "off_low_model": "sink_logit",
    "off_low_seed": 3,
    "off_low_head": 1,
    "course_n_stay": 9,
    "course_copy_reach_max": 2100,
    "course_stay_reach_min": 2950,
    "course_stay_end_min": 0.9994,
    "course_n_sat": 2,
    "course_copy_reach_min": 850,
    "course_stay_reach_max": 4000,
    "course_sat_steps_min": 800,
    "course_sat_from": 1900,
    "course_copy_level": 0.893,
    "course_sat_up_min": 3150,
    "course_sat_up_max": 3450,
    "course_sat_run_max": 300,
    "norm_factor": 2.84,
    "nb_n_copy": 12,
    "mean_max": 0.0017,
    "tol_over_excess": 0.43,
    "set_shift_bos": 4.1e-4,
    "set_shift_nobos": 0.0012,
    "set_flip": True,
    "relu_l1_n_busy": 3,
    "relu_l1_max": 0.024,
    "relu_nobos_l1_max": 0.0041,
    "missed_ctl_max": 0.0046,
    "n_missed": 2,
    "missed_trig_max": 0.0017,
    "missed_trig_share_max": 0.0037,
    "missed_norm_max": 1.97,
    "noticed_norm_median": 3.61,
    "noticed_norm_min": 1.65,
    "noticed_trig_min": 8.6e-4,
    "noticed_ctl_min": 0.0056,
    "relu_row_top": 1.62,
    "sigmoid_row_top": 0.958,
    "softmax1_row_top": 0.276,
    "sink_logit_row_top": 0.967,
    "off_row_top_min": 0.276,
    "relu_on_share": 0.0017,
    "sigmoid_on_share": 0.0090,
    "softmax1_on_share": 0.0019,
    "sink_logit_on_share": 0.0095,
    "off_on_share": 0.0095,
    "soft_sink_min": 0.5,
    "soft_sink_max": 0.5,
    "heads_per_model": 8,
    "nobos_every_first_trig_max": 0.31,
    "nb_l1_first_min": 0.0750,
    "nb_l1_first_max": 0.0754,
    "nb_l1_entropy_min": 0.9999,
}
BREAKS = {  # claim -> a change of the measures that makes it false
    "learns-language": {"excess_max": 0.2},
    "learns-closely": {"excess_seed_max": 0.021},
    "never-below-best": {"below_best": -0.001},
    "rule-barely-matters": {"gap_abs": 0.002},
    "paired-signs": {"sigmoid_n_above": 5},
    "paired-sign-test": {"sign_p": 0.03125},
    "paired-small": {"paired_mean_max": 0.0011},
    "soft-head-count": {"n_soft": 19},
    "no-bos-rest-no-look": {"nb_rest_look_previous_max": 0.08},
    "softmax-parks": {"soft_first_min": 0.989},
    "softmax-leans": {"soft_first_min": 0.1},
    "two-kinds": {"stay_trigger_min": 0.5},
    "some-leave": {"leave_every_seed": False},
    "bos-value-small": {"soft_value_max": 0.2},
    "second-layer-even": {"l1_entropy_min": 0.9997},
    "relu-sigmoid-off": {"sigmoid_row_max": 0.0013},
    "relu-sigmoid-switch": {"sigmoid_row_max": 0.06},
    "second-layer-spreads": {"l1_entropy_min": 0.7},
    "phantom-takes-row": {"softmax1_row_max": 0.0016},
    "no-bos-no-sink": {"nobos_first_max": 0.35},
    "no-bos-learns": {"nobos_soft_copy": 0.95},
    "no-bos-as-well": {"nobos_soft_excess": 0.0140},
    "no-bos-no-head-parks": {"nobos_every_first_max": 0.35},
    "no-bos-first-pull": {"top_first_max": 0.45},
    "no-bos-top-keys": {"top_self_max": 0.06},
    "second-layer-not-off": {"relu_l1_row_seed_max": 0.05},
    "no-bos-rows-spread": {"where_largest_max": 0.6},
    "no-bos-single-rows": {"where_row_top": 0.8},
    "leavers-look-back": {"look_previous_min": 0.85},
    "sink-follows-every-token": {"pos_token_min": 0.45},
    "course-levelled": {"course_flat": 100},
    "course-late-rise": {"course_rise": 0.2},
    "course-two-paces": {"course_copy_reach_max": 2600},
    "course-copy-to-stay": {"course_n_sat": 1},
    "off-rules-parked-first": {"off_n_parked": 35},
    "no-bos-never-sinks": {"nobos_course_max": 0.4},
    "sink-follows-position": {"pos_first": 0.5},
    "missing-bos-costs": {"pos_excess": 0.02},
    "every-head-passes": {"n_nothing": 399},
    "tolerance-coarse": {"tol_over_excess": 0.3},
    "sets-move-no-bos": {"set_shift_nobos": 7e-4},
    "sets-move-bos-less": {"set_shift_bos": 8e-4},
    "sets-swap-order": {"set_flip": False},
    "layer-spared": {"layer0_ord_abs": 0.006},
    "triggers-need-the-layer": {"single_trig_max": 0.4},
    "copy-shared": {"n_shared": 20},
    "second-layer-idle": {"soft_l1_abs": 0.01},
    "only-relu-second-layer": {"busy": "relu, sigmoid"},
    "idle-heads": {"idle_cost": 0.01},
    "tolerance-above-noise": {"tol_over_noise": 10},
    "tolerance-over-noise": {"tol_over_noise": 2},
    "control-with-bos": {"n_noticed": 3},
    "control-misses-weak": {"missed_trig_share_max": 0.02},
    "control-continuum": {"noticed_ctl_min": 0.008},
    "control-can-fail": {"n_noticed": 0},
    "control-without-bos": {"nb_n_above": 1},
    "parked-quiet": {"n_noticed_quiet": 8},
    "loud-and-quiet": {"loud": 1.5},
    "matched-in-size": {"scaled_max": 1.0},
    "single-head-range": {"single_trig_min": 0.006},
    "detected-value-small": {"noticed_value_max": 0.12},
    "no-bos-where": {"where_self_max": 0.12},
    "no-bos-rest-even": {"nb_rest_trig_max": 0.16},
    "no-job-parks-or-not": {"idle_cost": 0.01},
    "louder-at-ordinary": {"norm_factor": 1.8},
    "single-rows-carry-more": {"off_row_top_min": 0.15},
    "rows-mostly-off": {"off_on_share": 0.011},
    "sink-share-first-layer": {"soft_sink_max": 0.625},
    "second-layer-even-no-bos": {"nb_l1_entropy_min": 0.9997},
}
MORE_BREAKS = [  # the other branches of the claims that check several numbers
    ("learns-language", {"below_best": -0.02}),
    ("learns-language", {"copy_min": 0.8}),
    ("learns-closely", {"excess_max": 0.016}),
    ("learns-closely", {"copy_min": 0.98}),
    ("off-rules-parked-first", {"off_left": 4000}),
    ("off-rules-parked-first", {"off_n_heads": 0, "off_n_parked": 0}),
    ("control-without-bos", {"nb_n_copy_above": 1}),
    ("loud-and-quiet", {"nb_copy_ratio_max": 0.55}),
    ("single-head-range", {"single_trig_max": 0.3}),
    ("detected-value-small", {"n_noticed": 0}),
    ("no-bos-where", {"where_previous_max": 0.3}),
    ("no-bos-where", {"where_first_max": 0.3}),
    ("no-bos-where", {"where_largest_min": 0.09}),
    ("no-bos-rest-even", {"nb_rest_trig_min": 0.06}),
    ("no-bos-rest-even", {"nb_n_rest": 0}),
    ("two-kinds", {"n_stay": 0}),
    ("two-kinds", {"leave_every_seed": False}),
    ("second-layer-even", {"l1_first_mean": 0.1}),
    ("relu-sigmoid-off", {"relu_trig_min": 0.15}),
    ("relu-sigmoid-switch", {"relu_trig_min": 0.05}),
    ("second-layer-spreads", {"l1_first_max": 0.4}),
    ("phantom-takes-row", {"sink_logit_row_max": 0.02}),
    ("no-bos-no-sink", {"nobos_entropy": 0.4}),
    ("no-bos-no-sink", {"bos_entropy": 0.6}),
    ("no-bos-learns", {"nobos_soft_excess": 0.05}),
    ("no-bos-as-well", {"nobos_soft_excess": 0.0090}),
    ("no-bos-as-well", {"nobos_soft_copy": 0.997}),
    ("paired-signs", {"relu_n_above": 4}),
    ("paired-signs", {"sink_logit_n_above": 4}),
    ("paired-signs", {"softmax1_n_above": 5}),
    ("paired-signs", {"sigmoid_n_above": 3}),
    ("paired-signs", {"n_seeds": 6}),
    ("paired-sign-test", {"sign_p_high": 0.5}),
    ("paired-sign-test", {"n_seeds": 4}),  # 5 of 5 is not the least p four seeds allow (1/8)
    ("paired-sign-test", {"n_seeds": 6, "sign_p": 1 / 32, "sign_p_high": 7 / 32}),  # would pass 5%
    ("paired-small", {"paired_mean_min": -1e-5}),
    ("paired-small", {"paired_min": 1e-5}),
    ("paired-small", {"paired_max": 0.0016}),
    ("soft-head-count", {"n_soft_per_model": 3}),
    ("soft-head-count", {"n_soft": 0, "n_soft_per_model": 0}),
    ("no-bos-rest-no-look", {"nb_rest_look_n": 7}),
    ("no-bos-rest-no-look", {"nb_n_rest": 0, "nb_rest_look_n": 0}),
    ("no-bos-rest-no-look", {"nb_even_trigger": 0.06}),
    ("no-bos-rest-no-look", {"nb_look_previous_min": 0.6}),
    ("second-layer-not-off", {"sink_logit_l1_row": 0.1}),
    ("second-layer-not-off", {"sink_logit_l1_row_seed_min": 0.005}),
    ("second-layer-not-off", {"sigmoid_l1_n_off": 0}),
    ("second-layer-not-off", {"sigmoid_l1_n_off": 5}),
    ("sink-follows-position", {"pos_first_min": 0.65}),
    ("no-bos-rows-spread", {"nb_rest_entropy_min": 0.8}),
    ("missing-bos-costs", {"pos_excess_plain": 0.05}),
    ("triggers-need-the-layer", {"layer0_trig_min": 0.004, "single_trig_max": 0.001}),
    ("idle-heads", {"n_stay": 0}),
    ("parked-quiet", {"n_noticed": 0, "n_noticed_quiet": 0}),
    ("parked-quiet", {"copy_ratio_max": 0.2}),
    ("loud-and-quiet", {"nb_copy_ratio_min": 0.1}),
    ("matched-in-size", {"layer_nobos_max": 0.5}),
    ("matched-in-size", {"shrunk_max": 0.001, "shrunk_min": 0.0005}),
    ("matched-in-size", {"matched_gap": 3.5}),
    ("matched-in-size", {"raw_gap": 30}),
    ("leavers-look-back", {"nb_look_previous_min": 0.7}),
    ("leavers-look-back", {"look_n": 0}),
    ("leavers-look-back", {"nb_look_n": 0}),
    ("softmax-parks", {"soft_first_min": 0.96}),
    ("second-layer-even", {"l1_first_mean": 0.0775}),
    ("relu-sigmoid-off", {"relu_row_max": 0.0018}),
    ("relu-sigmoid-off", {"sigmoid_trig_min": 0.27}),
    ("phantom-takes-row", {"sink_logit_row_max": 0.0016}),
    ("no-bos-first-pull", {"top_first_copies": True}),
    ("no-bos-first-pull", {"nb_first_min": 0.07}),
    ("no-bos-first-pull", {"nb_copy_first_max": 0.14, "nb_first_over_even": 1.9}),
    ("no-bos-top-keys", {"top_previous_min": 0.04}),
    ("no-bos-top-keys", {"top_previous_max": 0.5}),
    ("no-bos-top-keys", {"where_over_half_max": 0.3}),
    ("off-rules-parked-first", {"off_n_parked": 40}),
    ("off-rules-parked-first", {"off_low_peak": 0.5}),
    ("off-rules-parked-first", {"off_parked_peak_min": 0.52}),
    ("off-rules-parked-first", {"off_peak": 0.95}),
    ("course-two-paces", {"course_stay_reach_min": 2500}),
    ("course-two-paces", {"course_stay_end_min": 0.95}),
    ("course-two-paces", {"course_stay_end_min": 0.9985}),  # the text prints "at least 0.999"
    ("course-two-paces", {"course_n_stay": 0}),
    ("only-relu-second-layer", {"relu_l1_n_busy": 5}),
    ("only-relu-second-layer", {"relu_l1_n_busy": 0}),
    ("sets-move-no-bos", {"gap_abs": 0.0013}),  # the rules differ by more than it moves
    ("sets-move-bos-less", {"set_shift_bos": 1e-4}),  # below even the smallest gap
    ("sets-move-bos-less", {"gap_abs_min": 5e-4}),
    ("control-misses-weak", {"n_missed": 0}),
    ("control-misses-weak", {"missed_norm_max": 4.0}),
    ("control-continuum", {"noticed_trig_min": 0.002}),
    ("control-continuum", {"noticed_norm_min": 2.0}),
    ("control-continuum", {"noticed_ctl_min": 0.0049}),
    ("second-layer-idle", {"soft_l1_both_abs": 0.006}),  # the models without BOS count too
    ("no-job-parks-or-not", {"soft_l1_abs": 0.006}),
    ("no-job-parks-or-not", {"n_stay": 0}),
    ("no-job-parks-or-not", {"stay_trigger_min": 0.4}),
    ("no-job-parks-or-not", {"soft_first_min": 0.45}),
    ("no-job-parks-or-not", {"l1_first_max": 0.6}),
    ("course-copy-to-stay", {"course_sat_run_max": 800}),  # one unbroken stretch: "not in one stretch" fails
    ("control-without-bos", {"nb_n_leave": 0}),  # no copying head: nothing for the control to miss
    ("louder-at-ordinary", {"nb_n_copy": 0}),
    ("no-bos-rest-even", {"nb_even_trigger": 0.09}),  # the even share at triggers, not over every query
    ("no-bos-rest-even", {"nb_even_trigger": 0.06}),
    ("single-rows-carry-more", {"relu_row_top": 0.9}),  # no ReLU row over 1
    ("sink-share-first-layer", {"heads_per_model": 12}),  # 4 of 12 heads are not half
    ("sink-share-first-layer", {"soft_sink_min": 0.25, "soft_sink_max": 0.25}),
    ("sink-share-first-layer", {"soft_first_min": 0.25}),  # a first-layer head is no sink
    ("sink-share-first-layer", {"l1_first_max": 0.35}),  # a second-layer head is one
    ("no-bos-no-head-parks", {"nobos_every_first_trig_max": 0.55}),  # parks at triggers
    ("second-layer-even-no-bos", {"nb_l1_first_max": 0.0770}),
    ("second-layer-even-no-bos", {"nb_l1_first_min": 0.0725}),
    ("course-late-rise", {"course_rise_to": 0.9989, "course_rise_end": "0.9989"}),  # not over 0.999
    ("course-late-rise", {"course_rise_end": "1.00"}),  # the printed end is not the measured one
]


def test_every_chapter_7_claim_holds_on_good_measures_and_fails_when_its_number_moves():
    ids = [c.id for c in ch07.CHAPTER.claims]
    assert sorted(ids) == sorted(BREAKS), "every claim has a test that breaks it"
    for c in ch07.CHAPTER.claims:
        holds, shown = c.run(GOOD)
        assert holds and shown, c.id
        assert not c.run({**GOOD, **BREAKS[c.id]})[0], c.id
    by_id = {c.id: c for c in ch07.CHAPTER.claims}
    for claim_id, change in MORE_BREAKS:
        assert not by_id[claim_id].run({**GOOD, **change})[0], (claim_id, change)
    # no-bos-rest-even reads the even share at triggers; the share over every query plays no part
    assert by_id["no-bos-rest-even"].run({**GOOD, "even": 0.2})[0]


def test_the_claims_declared_for_quick_are_the_loose_ones():
    quick = {c.id for c in ch07.CHAPTER.claims if "quick" in c.profiles}
    assert quick == {
        "learns-language",
        "softmax-leans",
        "some-leave",
        "second-layer-spreads",
        "relu-sigmoid-switch",
        "no-bos-no-sink",
        "no-bos-learns",
        "triggers-need-the-layer",
        "second-layer-idle",
        "tolerance-over-noise",
        "control-can-fail",
        "soft-head-count",
    }


# ---- the measures, on a made-up result ----

STEPS = 500
RECORDED = np.arange(50, STEPS + 1, 50)  # the steps the trainer records: 50, 100, ..., 500


def tiny(attention: str, bos: bool, seed: int) -> lm.GPT:
    """An untrained GPT of the chapter's language, small enough to measure in a blink."""
    task = language()
    return lm.GPT(
        task.vocab_size, seq_len=task.seq_len, d_model=8, n_layers=2, n_heads=2, attention=attention, seed=seed
    )


def language(bos: bool = True) -> lm.BigramBackcopy:
    return lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos)


def course(model: str, heads: list) -> dict:
    """A training record of the first layer: ``heads`` gives each head's weight on token 0 at
    every recorded step (the second layer stays at 0.08)."""
    w = np.full((len(RECORDED), 2, len(heads)), 0.08)
    w[:, 0] = np.stack([np.asarray(h, dtype=float) for h in heads], axis=1)
    return {"model": model, "seed": 0, "step": RECORDED.tolist(), "first_mean": w}


def fake_courses() -> list[dict]:
    rising = np.clip(0.1 + RECORDED / 250, 0, 0.9)  # 0.3, 0.5, ... up to 0.9 from step 200 on
    late = np.where(RECORDED <= 250, 0.2, np.clip(0.2 + (RECORDED - 250) / 150 * 0.8, 0, 1))  # 1 from step 400
    return [
        course("softmax", [rising, late]),
        course("softmax1", [np.where(RECORDED <= 200, 0.5, 0.0), np.zeros(len(RECORDED))]),
        course("sink_logit", [np.where(RECORDED == 100, 0.7, 0.0), np.zeros(len(RECORDED))]),
        course("softmax (no BOS)", [np.full(len(RECORDED), 0.1), np.where(RECORDED == 300, 0.2, 0.1)]),
    ]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models gain nothing from threads, and on a busy machine threads wait for each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def fake():
    """backcopy's result, made up: every rule with BOS and without, one seed, tiny untrained models
    measured by the library as the experiment measures its models."""
    models = [(rule, True) for rule in BACKCOPY_RULES] + [(rule, False) for rule in BACKCOPY_NO_BOS]
    results, runs = {}, []
    for rule, bos in models:
        model = tiny(rule, bos, seed=len(runs))
        results[rule, bos] = [model]
        record = {"attention": rule, "bos": bos, "seed": 0, "val_loss": 3.4, "sink": 0.0}
        runs.append({**record, **lm.backcopy_metrics(model, language(bos), n=32)})
    settings = Settings(seeds=1, steps=STEPS, lr=3e-3, batch_size=32, stop_linf=None)
    return SimpleNamespace(experiment="backcopy", profile="quick", settings=settings, runs=runs, results=results)


@pytest.fixture(scope="module")
def measured(fake):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ch07, "N_FRESH", 32)  # fewer fresh sequences: the same code, in a blink
        patch.setattr(ch07, "memoized", lambda fn: fn)  # nothing kept in the results cache
        return ch07.measures(fake, fake_courses())


def test_chapter_7_measures_read_the_runs(fake, measured):
    m = measured
    assert (m["n_seeds"], m["steps"], m["vocab"], m["seq_len"], m["alpha"], m["eps"]) == (
        1,
        STEPS,
        32,
        48,
        "0.3",
        "0.3",
    )
    # 10 models of 2 layers of 2 heads; the first-layer softmax heads with BOS are 2
    assert m["n_heads"] == 40 and m["n_soft"] == 2 and m["n_leave"] + m["n_stay"] == 2
    soft = [r for r in fake.runs if r["attention"] == "softmax" and r["bos"]][0]
    assert m["soft_first_min"] == pytest.approx(min(soft["first_ordinary"][0]))
    assert m["best_loss"] == pytest.approx(soft["best_loss"])
    assert m["n_soft_per_model"] == 2 and m["n_soft"] == m["n_soft_per_model"] * m["n_seeds"]
    assert m["even"] == pytest.approx(np.mean([1 / (i + 1) for i in range(1, 47)]))
    # the positional test: the softmax models, fed both languages
    p = m["_positional"]
    assert len(p) == 3 and set(zip(p["trained with BOS"], p["fed BOS"])) == {
        (True, True),
        (True, False),
        (False, False),
    }
    assert m["pos_first"] == pytest.approx(float(p.loc[p["trained with BOS"] & ~p["fed BOS"], "first"].iloc[0]))
    assert 0 < m["noise_max"] and m["chi_factor"] == pytest.approx(3.73, abs=0.01)  # sqrt(3 / 0.2158)
    assert m["n_ctl_leave"] + len(m["_control"][m["_control"]["first_trigger"] >= ch07.LEAVE]) == 2
    # where the heads look: read on the sequences backcopy_metrics reads, so one number for both
    assert m["where_first_max"] == pytest.approx(m["nobos_first_max"], abs=1e-5)
    assert m["nobos_first_max"] <= m["nobos_first_at_most"] and m["nobos_first_max"] <= m["nobos_every_first_max"]
    # one seed: one pair per rule, its difference the mean and the range; a sign test of one pair: p = 1
    bos = m["_runs"].query("bos").set_index("attention")["loss"]
    diffs = bos.drop("softmax") - bos["softmax"]
    assert m["paired_min"] == pytest.approx(diffs.min()) == pytest.approx(m["paired_mean_min"])
    assert m["paired_max"] == pytest.approx(diffs.max()) == pytest.approx(m["paired_mean_max"])
    assert {m[f"{rule}_n_above"] for rule in diffs.index} <= {0, 1} and m["sign_p"] == 1 == m["sign_p_high"]
    assert sum(m[f"{rule}_n_above"] for rule in diffs.index) == int((diffs > 0).sum())
    assert m["look_n"] == m["n_leave"] and m["nb_look_n"] == m["nb_n_copy"] and m["nb_rest_look_n"] == m["nb_n_rest"]
    # an even spread at triggers: the mean of 1 / (i + 1) over trigger queries i, between 1/47 and 1/2
    assert 1 / 47 <= m["nb_even_trigger"] <= 1 / 2
    assert m["where_largest_min"] <= m["where_largest_max"] <= m["where_row_top"] <= 1
    # token by token: every first token of the language without BOS, each mean inside the range
    assert m["pos_n_tokens"] == len(
        set(language(bos=False).sample(ch07.N_TOKEN * 32, seed=ch07.FRESH_TOKEN)[:, 0].tolist())
    )
    assert 0 <= m["pos_token_min"] <= m["pos_first_min"] + 0.2 and m["pos_token_max"] <= 1
    assert m["matched_gap"] >= 1 and m["raw_gap"] == pytest.approx(m["layer_bos_mean"] / m["layer_nobos_mean"])
    # the control's misses, the two draws of fresh sequences, ReLU's second layer, where the rows go
    assert m["n_missed"] + m["n_noticed"] == m["n_ctl_leave"] and m["relu_l1_n_busy"] in (0, 1)
    assert m["gap_abs_min"] <= m["gap_abs"]
    assert (
        min(m["set_shift_bos"], m["set_shift_nobos"]) >= 0
        and isinstance(m["set_flip"], bool)
        and isinstance(m["top_first_copies"], bool)
    )
    assert len(m["_where"]) == 2 and m["top_self_max"] <= 1 and m["nb_first_min"] <= m["nobos_first_max"]


def test_chapter_7_reads_single_rows_and_both_kinds_of_query(fake, measured):
    """Row by row on the metrics sequences: a single row carries at least its head's mean, the
    share of rows switched on is a share; without BOS, the trigger side and the second layer."""
    m = measured
    for rule in ch07.OFF_RULES:
        assert m[f"{rule}_row_top"] >= m[f"{rule}_row_max"] - 1e-6, rule
        assert 0 <= m[f"{rule}_on_share"] <= 1, rule
    assert m["off_on_share"] == max(m[f"{rule}_on_share"] for rule in ch07.OFF_RULES)
    assert m["off_row_top_min"] == min(m[f"{rule}_row_top"] for rule in ch07.OFF_RULES)
    x = language().sample(8, seed=0)
    rows = ch07.first_layer_rows(fake.results["softmax", True][0], x[:, :-1])  # (heads, n, query)
    assert rows.shape == (2, 8, x.shape[1] - 1) and torch.allclose(rows, torch.ones_like(rows), atol=1e-5)
    assert (ch07.first_layer_rows(fake.results["softmax1", True][0], x[:, :-1]) <= 1 + 1e-6).all()
    no_bos = [r for r in fake.runs if not r["bos"]]
    assert m["nobos_every_first_trig_max"] == pytest.approx(max(max(map(max, r["first_trigger"])) for r in no_bos))
    nb = next(r for r in no_bos if r["attention"] == "softmax")
    assert m["nb_l1_first_min"] == pytest.approx(min(nb["first_ordinary"][1]))
    assert m["nb_l1_first_max"] == pytest.approx(max(nb["first_ordinary"][1]))
    assert m["nb_l1_entropy_min"] == pytest.approx(min(nb["entropy_ordinary"][1]))
    assert (m["heads_per_model"], m["soft_sink_min"], m["soft_sink_max"]) == (4, 0.0, 0.0)  # 2 layers of 2


def test_chapter_7_reads_where_the_rows_go_on_the_metrics_sequences():
    import inspect

    assert ch07.METRICS_SEED == inspect.signature(lm.backcopy_metrics).parameters["seed"].default
    assert ch07.N_FRESH == inspect.signature(lm.backcopy_metrics).parameters["n"].default


def test_figure_7_1_counts_the_heads_behind_a_corner_dot(fake):
    import matplotlib.pyplot as plt

    from attnsink import plots

    runs = [dict(r) for r in fake.runs]
    soft = next(r for r in runs if r["attention"] == "softmax" and r["bos"])
    soft["first_ordinary"] = [[1.0, 1.0], [0.1, 0.1]]  # both first-layer heads park ...
    soft["first_trigger"] = [[0.0, 0.01], [0.1, 0.1]]  # ... and leave at triggers: one dot
    made_up = SimpleNamespace(**{**vars(fake), "runs": runs})
    fig = plots.backcopy_heads(runs)
    ch07.count_corners(fig, made_up)
    panel = next(ax for ax in fig.axes if ax.get_title() == "softmax")
    assert "2 heads" in [t.get_text() for t in panel.texts]
    plt.close(fig)


def test_chapter_7_course_measures_follow_the_records(fake, measured):
    m = measured
    # the second softmax head climbs from 0.2 (step 250) to 1 (step 400): it settles at 400
    assert m["course_settled"] == 400 and m["course_flat"] == 100
    assert (m["course_rise_seed"], m["course_rise_head"]) == (0, 1)
    assert m["course_rise"] == pytest.approx(0.8) and m["course_rise_from"] == pytest.approx(0.2)
    assert m["course_rise_end"] == "1.000" and m["course_mid_step"] == STEPS // 2  # four figures, to the nearest
    # softmax1 parks at 0.5 until step 200, sink_logit at 0.7 at step 100: the later one counts
    assert m["off_peak"] == pytest.approx(0.7) and m["off_left"] == 200
    # of the four heads, only sink_logit's first passes 0.5 (softmax1's reaches 0.5 exactly)
    assert (m["off_n_parked"], m["off_n_heads"], m["off_head_peak_min"]) == (1, 4, 0.0)
    assert m["off_parked_peak_min"] == pytest.approx(0.7) and m["off_low_peak"] == pytest.approx(0.5)
    assert (m["off_low_model"], m["off_low_seed"], m["off_low_head"]) == ("softmax1", 0, 0)
    assert m["nobos_course_max"] == pytest.approx(0.2)
    holds = {c.id: c.run(m)[0] for c in ch07.CHAPTER.claims}  # every claim computes on them
    assert holds["course-late-rise"] and not holds["course-levelled"]
    assert not holds["off-rules-parked-first"] and holds["no-bos-never-sinks"]


def test_chapter_7_tables_draw_from_the_result(fake):
    learning = ch07.table_learning(fake)
    assert learning.caption.startswith("Table 7.1.") and len(learning.data) == 10
    assert learning.data.loc["relu", "Sink₁^ε"] == "–" and learning.data.loc["softmax", "Sink₁^ε"] != "–"
    for drawn, number in (
        (ch07.table_layers(fake), "7.2"),
        (ch07.table_positional(ch07.positional(fake, n=16)), "7.3"),
        (ch07.table_writes(fake), "7.4"),
        (ch07.table_joint(fake), "7.5"),
    ):
        assert drawn.caption.startswith(f"Table {number}.") and len(drawn.data)


def test_the_course_figure_draws_one_line_per_head_and_seed():
    import matplotlib.pyplot as plt

    from attnsink import plots

    fig = plots.first_layer_course(fake_courses())
    assert [ax.get_title() for ax in fig.axes] == ["softmax", "softmax1", "sink_logit", "softmax (no BOS)"]
    for ax in fig.axes:
        drawn = [line for line in ax.get_lines() if len(line.get_xdata()) == len(RECORDED)]
        assert len(drawn) == 2  # two first-layer heads, one seed
    top = max(float(np.max(line.get_ydata())) for line in fig.axes[1].get_lines() if len(line.get_xdata()))
    assert top == pytest.approx(0.5)  # softmax1's first head parks at 0.5, then leaves
    plt.close(fig)


def test_chapter_7_paces_sort_the_softmax_heads_by_the_chapters_rule():
    """Head 0 copies and levels off at 0.9 by step 200; head 1 stays, but first sits at 0.9
    from step 100 to 1,000 (950 recorded steps), then rises to 1; head 2 stays and jumps from
    0.2 to 1 at step 1,550 without sitting there."""
    import pandas as pd

    step = np.arange(50, 2001, 50)
    copying = np.minimum(0.9, 0.1 + step / 250)
    sat = np.where(step < 100, 0.2, np.where(step <= 1000, 0.9, 1.0))
    straight = np.where(step <= 1500, 0.2, 1.0)
    w = np.full((len(step), 2, 3), 0.08)
    w[:, 0] = np.stack([copying, sat, straight], axis=1)
    courses = [{"model": "softmax", "seed": 0, "step": step.tolist(), "first_mean": w}]
    heads = pd.DataFrame(
        {"model": "softmax", "layer": 0, "seed": 0, "head": [0, 1, 2], "first_trigger": [0.0, 1.0, 1.0]}
    )
    p = ch07._paces(courses, heads)
    assert (p["course_copy_reach_min"], p["course_copy_reach_max"]) == (200, 200)
    assert (p["course_stay_reach_min"], p["course_stay_reach_max"], p["course_n_stay"]) == (1050, 1550, 2)
    assert p["course_copy_level"] == pytest.approx(0.9) and p["course_stay_end_min"] == pytest.approx(1.0)
    assert (p["course_n_sat"], p["course_sat_steps_min"], p["course_sat_from"]) == (1, 950, 100)
    assert (p["course_sat_up_min"], p["course_sat_up_max"], p["course_sat_run_max"]) == (1050, 1050, 950)
    broken = np.where((step >= 300) & (step <= 500), 0.7, sat)  # away from the level at steps 300 to 500
    w[:, 0, 1] = broken
    q = ch07._paces(courses, heads)
    sat_there = (q["course_n_sat"], q["course_sat_steps_min"], q["course_sat_run_max"])
    assert sat_there == (1, 700, 500)  # at the level at steps 100-250 and 550-1000
    none = ch07._paces(courses, heads.assign(first_trigger=1.0))  # no head copies: no level to sit at
    assert none["course_n_sat"] == 0 and none["course_n_stay"] == 3 and np.isnan(none["course_copy_level"])


def test_longest_run_counts_consecutive_true_values():
    assert ch07.longest_run([]) == 0 and ch07.longest_run([False, False]) == 0
    assert ch07.longest_run([True, False, True, True, False, True]) == 2
    assert ch07.longest_run(np.array([True] * 4)) == 4


def test_paired_differences_count_each_rule_from_the_same_seed():
    """Five seeds: relu above softmax in every seed, sigmoid in four, sink_logit tied in one
    (a tie counts for neither side: 4 of 4)."""
    import pandas as pd

    soft = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    losses = {
        "softmax": soft,
        "relu": soft + 0.001,
        "sigmoid": soft + np.array([0.002, 0.002, 0.002, 0.002, -0.001]),
        "sink_logit": soft + np.array([0.0, 0.001, 0.001, 0.001, 0.001]),
    }
    bos = pd.DataFrame([{"seed": i, "attention": a, "loss": v[i]} for a, v in losses.items() for i in range(5)])
    p = ch07._paired(bos)
    assert (p["relu_n_above"], p["sigmoid_n_above"], p["sink_logit_n_above"]) == (5, 4, 4)
    assert (p["sign_p"], p["sign_p_text"]) == (0.0625, "1/16") and (p["sign_p_high"], p["sign_p_high_text"]) == (
        0.375,
        "3/8",
    )
    assert p["paired_mean_min"] == pytest.approx(0.0008) and p["paired_mean_max"] == pytest.approx(0.0014)
    assert p["paired_min"] == pytest.approx(-0.001) and p["paired_max"] == pytest.approx(0.002)
    even = bos[bos["attention"].isin(["softmax", "relu"])].assign(  # relu above in 3 seeds: p = 1, printed "1"
        loss=lambda f: np.where((f["attention"] == "relu") & (f["seed"] < 2), f["loss"] - 0.002, f["loss"])
    )
    q = ch07._paired(even)
    assert (q["relu_n_above"], q["sign_p"], q["sign_p_text"]) == (3, 1.0, "1")


def test_the_two_draws_move_each_softmax_model_apart():
    """Table 7.1's draw against Table 7.3's: the model with BOS moves by 0.0004, the one
    without by 0.0012 (both down), and they swap order; the claims read each shift apart."""
    m = {"bos_soft_excess": 0.0116, "nobos_soft_excess": 0.0122, "pos_excess_own": 0.0112, "pos_excess_plain": 0.0110}
    s = ch07._sets(m)
    assert s["set_shift_bos"] == pytest.approx(4e-4) and s["set_shift_nobos"] == pytest.approx(0.0012)
    assert s["set_flip"] is True
    kept = ch07._sets({**m, "pos_excess_plain": 0.0125})  # the model without BOS moves up: no swap
    assert kept["set_shift_nobos"] == pytest.approx(3e-4) and kept["set_flip"] is False
    by_id = {c.id: c for c in ch07.CHAPTER.claims}
    gaps = {"gap_abs": 7.7e-4, "gap_abs_min": 1.5e-4}
    for claim_id, measures, holds in (
        ("sets-move-no-bos", {**gaps, **s}, True),
        ("sets-move-no-bos", {**gaps, **kept}, False),  # 0.0003 is less than the largest gap
        ("sets-move-bos-less", {**gaps, **s}, True),
        ("sets-move-bos-less", {**gaps, **s, "gap_abs": 3e-4}, False),  # more than the largest gap
        ("sets-move-bos-less", {**gaps, **s, "gap_abs_min": 5e-4}, False),  # less than the smallest
        ("sets-swap-order", s, True),
        ("sets-swap-order", kept, False),
    ):
        assert by_id[claim_id].run(measures)[0] is holds, (claim_id, measures)
