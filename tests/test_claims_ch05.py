"""Chapter 5's claims (attnsink.claims.ch05): each holds on good measures and fails when its
number moves; the measures read made-up deeper models, blocks and sweeps right."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from attnsink import claims, plots
from attnsink.claims import ch05

GOOD = {
    "_deep_lr": 1e-4,
    "deep_steps": 50_000,
    "soft_min_max_bos": 0.99,
    "_soft_min_max_bos": 0.9945,
    "relu_max_bos": 3.846e-4,
    "relu_max_mass": 3.9e-4,
    "_relu_max_mass": 3.849e-4,
    "n_deep_runs": 20,
    "n_deep_stopped": 20,
    "deep_rel_err": 2.4e-5,
    "_deep_rel_err": 2.377e-5,
    "deep_linf_min": 0.0076,
    "deep_linf": 0.0155,
    "steps_soft_small": 9_610,
    "steps_relu_small": 12_084,
    "steps_soft_big": 25_314,
    "steps_relu_big": 6_667,
    "_fig_soft_bos": 0.99,
    "_fig_soft_trigger": 0.96,
    "_fig_relu_rows": 0.006,
    "small_heads": 20,
    "small_sinks": 19,
    "small_dormant": 1,
    "n_seeds": 5,
    "big_heads": 80,
    "big_diffuse": 43,
    "big_sinks": 37,
    "big_diffuse_seeds": 5,
    "big_diffuse_seed_lo": 8,
    "big_diffuse_seed_hi": 10,
    "big_seed_heads": 16,
    "_big_seed_heads_lo": 16,
    "big_first_layer": 20,
    "big_first_layer_diffuse": 19,
    "big_last_layer_diffuse": 14,
    "big_outer_diffuse": 33,
    "_big_middle_diffuse": [5, 5],
    "soft_heads": 100,
    "soft_sinks": 56,
    "soft_sink_bos_min": 0.53,
    "soft_sink_bos_next": 0.89,
    "_soft_sink_bos_next": 0.8912,
    "deep_linf_x_lo": 1.5,
    "deep_linf_x_hi": 3.2,
    "_deep_linf_x": (1.512, 3.102),
    "deep_relu_sink_runs": 0,
    "ex2_n": 10,
    "ex2_rest_before": 1.6e-6,
    "ex2_trig_before": 2.4e-5,
    "ex2_rest_lo": 0.2,
    "ex2_rest_hi": 0.35,
    "ex2_trig_lo": 0.0039,
    "ex2_trig_hi": 0.12,
    "small_linf": 0.0155,
    "deep_timing_n": 10,
    "deep_timing_before": 8,
    "deep_timing_before100": 10,
    "n_relu_heads": 100,
    "n_relu_off": 100,
    "blocks_soft_min": 0.9997,
    "_blocks_soft_min": 0.99978,
    "blocks_relu_heads": 60,
    "blocks_relu_off": 60,
    "blocks_relu_next": 8.6e-4,
    "blocks_seeds": 5,
    "blocks_steps": 50_000,
    "_blocks_lr": 1e-4,
    "_blocks_relu_top_ln": True,
    "_blocks_relu_top": 0.0995,
    "_blocks_relu_top_bos": 0.0995,
    "mlp_runs": 10,
    "mlp_stopped": 10,
    "mlp_linf": 0.019,
    "_mlp_linf": 0.01848,
    "mlp_steps_soft": 8_305,
    "mlp_steps_relu": 6_297,
    "ln_runs": 20,
    "ln_stopped": 0,
    "ln_soft_lo": 0.114,
    "ln_relu_hi": 0.094,
    "ln_rel_trig": 0.004009,
    "ln_rel_rest": 2.2e-5,
    "ln_rel_max": 0.0041,
    "sweep_soft_min_bos": 0.998,
    "_sweep_soft_min_bos": 0.99886,
    "sweep_soft_runs": 60,
    "sweep_runs": 120,
    "sweep_stopped": 106,
    "sweep_linf": 0.0353,
    "sweep_relu_max_mass": 5.8e-8,
    "_sweep_relu_max_mass": 5.747e-8,
    "_len_monotone": True,
    "growth_softmax": 2.97,
    "growth_relu": 1.49,
    "len_short": 8,
    "len_long": 128,
    "width_narrow": 8,
    "_sweep_lr_range": (1e-4, 1e-2),
    "sweep_settings": 12,
    "_lr_monotone": True,
    "_lr_settled": {"softmax": [1e-4, 3e-4, 1e-3, 3e-3], "relu": [1e-4, 3e-4, 1e-3, 3e-3]},
    "_lr_top": 1e-2,
    "lr_top_runs": 10,
    "lr_top_stopped": 1,
    "width_wide": 64,
    "steps_softmax_wide": 12_866,
    "steps_softmax_next": 678,
    "wide_relu_stopped": 0,
    "timing_n": 60,
    "timing_before": 60,
    "timing_median": 0.76,
    "timing_median_lo": 0.76,
    "timing_median_hi": 0.78,
    "timing_slack": 0.048,
    "_timing_slack": 0.04755,
    "timing_coarse": 4,
    "timing_coarse_top": 4,
    "timing_every_step": 36,
    "timing_coarse_lo": 0.34,
    "_timing_coarse_lo": 0.3467,
    "_timing_lo": 0.67,
    "_timing_hi": 0.96,
    "relu_sink_runs": 0,
    "_deep_top_sink": True,
    "_fig_big_parks": 6,
    "_fig_big_spread": 10,
    "_fig_big_peak": 0.175,
    "deep_stride_lo": 4,
    "deep_stride_hi": 13,
    "deep_every_step": 0,
    "deep_lead_min": 60,
    "deep_relu_hist_bos": 0.0102,
    "_blocks_relu_next_bos": 8.54e-4,
    "_blocks_relu_next_block": "mlp",
    "_blocks_soft_no_sink": 0,
    "sweep_missed_rel_lo": 4.8e-5,
    "_sweep_missed_rel_lo": 4.89e-5,
    "sweep_missed_rel": 1.4e-4,
    "_sweep_missed_rel": 1.341e-4,
    "sweep_stopped_rel": 2.7e-5,
    "_sweep_stopped_rel": 2.626e-5,
    "_ln_rel_x": 0.004009 / 2.377e-5,
    "ln_rel_x": 160.0,
    "_deep_residual": True,
    "_blocks_residual": True,
    "_sweep_residual": False,
    "_deep_layers": [2, 4],
    "_sweep_layers": [1],
    "noise_narrow": 5,
    "noise_wide": 61,
    "lr_top_missed": 9,
    "wide_relu_runs": 5,
    "wide_relu_missed": 5,
    "_missed_elsewhere": 0,
    "_missed_linf_min": 0.01279,
    "lr_top_linf_lo": 0.01279,
    "lr_top_linf_hi": 0.0226,
    "wide_relu_linf_lo": 0.01868,
    "wide_relu_linf_hi": 0.0353,
    "met_linf_over": 102,
    "met_linf_max": 0.0349,
    "_met_linf_max_len": 128,
    "deep_lead_true": 51,
    "_ln_trig_x": 7.75,
    "_ln_rest_x": 6.93,
    "ln_err_x": 6.93,
    "_ln_rules": 2,
    "ln_loss_fall_lo": 1.348,
    "ln_loss_fall_hi": 3.207,
    "_ln_loss_n": 20,
    "_ln_loss_late_lo": 1.00525,
    "ln_loss_late_lo": "1.005",
    "ln_loss_late_hi": 1.1986,
    "_ex2_parked_n": 57,
    "_ex2_parked_reached": 57,
    "ex2_diffuse_n": 43,
    "ex2_diffuse_reached": 25,
    "ex2_diffuse_untouched": 18,
    "ex2_diffuse_fixed": 13,
    "ex2_capped_reached": 0,
    "_ex2_capped_closest": 0.499616,
    "ex2_capped_closest": "0.4997",
    "_ex2_closest_head": "4 layers, seed 0, L3H0",
    "_ex2_first_moved": 1.19e-7,
    "blocks_relu_top_ratio": 7e-4,
    "_blocks_relu_top_ratio": 6.93e-4,
    "_blocks_relu_top_trig_bos": 0.0,
}

BREAKS = {
    "paper-recipe": {"_deep_lr": 1e-3},
    "deep-softmax-sinks": {"soft_min_max_bos": 0.995},
    "deep-relu-off": {"relu_max_mass": 3.8e-4},
    "deep-all-stop": {"deep_rel_err": 2.3e-5},
    "deep-test-error": {"_deep_linf_x": (1.512, 3.3)},
    "big-softmax-slowest": {"steps_soft_big": 20_000},
    "figures-show-it": {"_fig_relu_rows": 0.02},
    "small-heads-park": {"small_sinks": 18},
    "big-heads-mix": {"big_diffuse_seed_lo": 4},
    "sinks-near-one": {"_soft_sink_bos_next": 0.87, "soft_sink_bos_next": 0.87},
    "top-head-is-sink": {"_deep_top_sink": False},
    "figure-4x4-mix": {"_fig_big_peak": 0.25},
    "blocks-have-sinks": {"_blocks_soft_no_sink": 1},
    "next-relu-head": {"_blocks_relu_next_block": "layer_norm"},
    "missed-runs-fit": {"sweep_missed_rel": 1.3e-4},
    "deep-timing-strides": {"deep_every_step": 1},
    "relu-bos-stays-small": {"deep_relu_hist_bos": 0.03},
    "diffuse-outer-layers": {"big_last_layer_diffuse": 4},
    "relu-heads-off": {"n_relu_off": 99},
    "blocks-softmax-sinks": {"blocks_soft_min": 0.9998},
    "blocks-recipe": {"blocks_steps": 20_000},
    "relu-all-but-one": {"blocks_relu_next": 0.002},
    "sweep-stopped": {"sweep_linf": 0.0361},
    "timing-order-exact": {"timing_every_step": 20},
    "capped-needs-sink": {"ex2_rest_lo": 1e-4},
    "blocks-relu-off": {"blocks_relu_next": 0.002},
    "one-relu-head-near-threshold": {"_blocks_relu_top_ln": False},
    "mlp-no-slower": {"mlp_linf": 0.018},
    "ln-does-not-stop": {"ln_stopped": 1},
    "ln-relu-closer": {"ln_relu_hi": 0.12},
    "ln-fits-on-average": {"ln_rel_max": 0.0040},
    "sweep-grid": {"sweep_settings": 14},
    "sweep-sinks": {"_sweep_soft_min_bos": 0.9975},
    "length-slows-softmax": {"growth_relu": 3.1},
    "length-threefold": {"growth_softmax": 2.0},
    "lr-pace": {"_lr_monotone": False},
    "lr-too-large": {"lr_top_stopped": 2},
    "width-64-slow": {"steps_softmax_wide": 6_000},
    "sink-before-loss": {"timing_before": 59},
    "sink-at-three-quarters": {"timing_median_hi": 0.85},
    "timing-resolution": {"timing_coarse_lo": 0.35},
    "deep-sink-timing": {"deep_timing_before100": 9},
    "relu-never-parks": {"deep_relu_sink_runs": 1},
    "two-tasks": {"_sweep_residual": True},
    "width-adds-noise": {"noise_wide": 64},
    "missed-runs-above-criterion": {"_missed_linf_min": 0.004, "lr_top_linf_lo": 0.004},
    "met-runs-test-error": {"met_linf_over": 50},
    "relu-top-adds-little": {"_blocks_relu_top_ratio": 2e-3, "blocks_relu_top_ratio": 2e-3},
    "cap-reaches-diffuse": {"ex2_diffuse_reached": 43, "ex2_diffuse_untouched": 0},
    "cap-misses-diffuse-capped": {"ex2_capped_reached": 1},
    "ln-errors-larger": {"_ln_rest_x": 0.9, "ln_err_x": 0.9},
    "ln-loss-still-falling": {"ln_loss_fall_lo": 0.98},
}


def test_every_chapter_5_claim_holds_on_good_measures_and_fails_when_its_number_moves():
    ids = [c.id for c in ch05.CHAPTER.claims]
    assert sorted(ids) == sorted(BREAKS), "every claim has a test that breaks it"
    for c in ch05.CHAPTER.claims:
        assert c.run(GOOD)[0], c.id
        assert not c.run({**GOOD, **BREAKS[c.id]})[0], c.id


def test_every_stated_bound_holds_the_measured_number_on_its_safe_side():
    """Each claim that glues a bound fails when the printed number is the measure plainly rounded
    past it (the reviewer's seven cases), and also when its old looser break moves."""
    old = {
        "deep-relu-off": {"relu_max_mass": 0.02, "_relu_max_mass": 0.02},
        "deep-all-stop": {"n_deep_stopped": 19},
        "deep-softmax-sinks": {"soft_min_max_bos": 0.95, "_soft_min_max_bos": 0.95},
        "blocks-softmax-sinks": {"blocks_soft_min": 0.9, "_blocks_soft_min": 0.9},
        "mlp-no-slower": {"mlp_steps_relu": 13_000},
        "ln-fits-on-average": {"ln_rel_trig": 0.02, "ln_rel_max": 0.03},
        "lr-too-large": {"lr_top_stopped": 5},
        "width-64-slow": {"wide_relu_stopped": 1},
        "timing-resolution": {"timing_coarse_top": 3},
        "sweep-sinks": {"sweep_relu_max_mass": 5.7e-8},
        "big-heads-mix": {"big_diffuse_seeds": 4},
    }
    by_id = {c.id: c for c in ch05.CHAPTER.claims}
    for cid, change in old.items():
        assert not by_id[cid].run({**GOOD, **change})[0], cid


def test_every_further_branch_of_a_claim_breaks_when_its_number_moves():
    """Each condition a claim adds beyond its first break fails on its own."""
    branches = {
        "relu-all-but-one": [{"n_relu_off": 99}, {"blocks_relu_off": 59}],
        "ln-fits-on-average": [
            {"ln_rel_x": 170.0},  # the printed multiple above the measured one
            {"_ln_rel_x": 150.0},  # a ratio not of the largest errors
            {"_deep_rel_err": 5e-5, "_ln_rel_x": 0.004009 / 5e-5, "ln_rel_x": 80.0},  # under a hundred
        ],
        "two-tasks": [
            {"_deep_residual": False},
            {"_blocks_residual": False},
            {"_deep_layers": [2]},
            {"_sweep_layers": [1, 2]},
        ],
        "width-adds-noise": [{"noise_narrow": 8}, {"width_narrow": 4, "noise_narrow": 1}],
        "missed-runs-above-criterion": [
            {"_missed_elsewhere": 1},
            {"lr_top_missed": 8},
            {"wide_relu_missed": 4},
            {"wide_relu_runs": 6, "wide_relu_missed": 6},
            {"wide_relu_linf_lo": 0.012},
            {"_missed_linf_min": 0.005, "lr_top_linf_lo": 0.005},
        ],
        "met-runs-test-error": [
            {"met_linf_over": 53},
            {"met_linf_max": 0.02},  # below a missed run's at the top rate
            {"_met_linf_max_len": 64},
            {"met_linf_max": 0.036},  # above the wide ReLU runs' largest: the largest of all
        ],
        "ln-errors-larger": [
            {"_ln_trig_x": 0.5, "ln_err_x": 0.5},  # a LayerNorm model below a plain one at the trigger
            {"ln_err_x": 7.75},  # the stated multiple not the least ratio
            {"_ln_rest_x": 1.04, "ln_err_x": 1.04},  # over 1, but printed as 1.0
            {"_ln_rules": 1},
        ],
        "ln-loss-still-falling": [
            {"ln_loss_fall_lo": 1.04},  # printed as 1.0: no fall to state
            {"_ln_loss_n": 19},  # a model without its history
            {"ln_loss_fall_hi": 1.2},
            {"_ln_loss_late_lo": 0.999, "ln_loss_late_lo": "0.999"},  # the loss rose in the last fifth
            {"_ln_loss_late_lo": 1.0004, "ln_loss_late_lo": "1.000"},  # printed as 1.000: no fall to state
            {"ln_loss_late_lo": "1.006"},  # the printed least above the measured one
            {"_ln_loss_late_lo": 1.02, "ln_loss_late_lo": "1.02"},  # not barely a fall
            {"ln_loss_late_hi": 1.004},  # the stated range misses the measured least
        ],
        "sweep-stopped": [
            {"sweep_linf": 0.034, "wide_relu_linf_hi": 0.034},  # printed at most 0.034, not 0.036
            {"wide_relu_linf_hi": 0.03},  # the largest not a wide ReLU run's
            {"wide_relu_stopped": 1},
            {"sweep_stopped": 105},
        ],
        "cap-misses-diffuse-capped": [
            {"ex2_capped_closest": "0.4996"},  # the stated weight below the measured one
            {"_ex2_capped_closest": 0.5, "ex2_capped_closest": "0.5000"},  # at the cap
            {"_ex2_capped_closest": 0.45, "ex2_capped_closest": "0.4500"},  # not a thin margin
            {"_ex2_first_moved": 1e-3},  # a first-layer head moved
            {"ex2_diffuse_untouched": 0},
            {"ex2_diffuse_fixed": 0},
        ],
        "relu-top-adds-little": [{"blocks_relu_top_ratio": 6.9e-4}, {"_blocks_relu_top_trig_bos": 0.01}],
        "cap-reaches-diffuse": [
            {"_ex2_parked_reached": 56},
            {"ex2_diffuse_reached": 0, "ex2_diffuse_untouched": 43},
            {"ex2_diffuse_n": 42},
            {"ex2_diffuse_untouched": 17},
            {"ex2_diffuse_fixed": 0},
            {"ex2_diffuse_fixed": 19},
        ],
        "figure-4x4-mix": [{"_fig_big_parks": 0}, {"_fig_big_spread": 0}],
        "next-relu-head": [{"_blocks_relu_next_bos": 5e-4}, {"blocks_relu_next": 0.002}],
        "missed-runs-fit": [
            {"_sweep_missed_rel_lo": 2e-5},  # a missed run below the stated range
            {"_sweep_missed_rel_lo": 2e-5, "sweep_missed_rel_lo": 2e-5},  # the range not above the met runs
            {"sweep_stopped_rel": 2.6e-5},
            {"_sweep_stopped_rel": 2e-4, "sweep_stopped_rel": 2e-4},
            {"_sweep_missed_rel": 3e-4, "sweep_missed_rel": 3e-4},
        ],
        "deep-timing-strides": [
            {"deep_stride_hi": 12},
            {"deep_lead_min": 40},
            {"deep_lead_min": 55, "deep_lead_true": 49},  # under 50 true steps
            {"deep_lead_true": 60},  # the lead read, not less r - 1
            {"deep_lead_true": 40},  # more than the largest stride below the lead read
        ],
        "lr-too-large": [{"_lr_top": 3e-3}],
    }
    by_id = {c.id: c for c in ch05.CHAPTER.claims}
    for cid, changes in branches.items():
        assert by_id[cid].run(GOOD)[0], cid
        for change in changes:
            assert not by_id[cid].run({**GOOD, **change})[0], (cid, change)


def test_bounds_round_to_their_safe_side_with_the_printed_digits():
    from attnsink.prose import readable

    assert ch05._at_least(0.99978) == 0.9997 and readable(ch05._at_least(0.99978)) == "0.9997"
    assert ch05._at_least(0.9945293) == 0.99 and ch05._at_least(0.3466667) == 0.34
    assert ch05._at_most(3.849e-4) == 3.9e-4 and ch05._at_most(0.01848) == 0.019
    assert ch05._at_most(0.004009) == 0.0041 and ch05._at_most(5.747e-8) == 5.8e-8
    assert ch05._at_most(7.719e-7) == 7.8e-7 and ch05._at_most(3.410e-7) == 3.5e-7


def test_the_claims_quick_must_meet_are_those_its_small_runs_can_show():
    quick = {c.id for c in ch05.CHAPTER.claims if "quick" in c.profiles}
    assert "sweep-sinks" in quick and "sink-before-loss" in quick
    assert not quick & {"paper-recipe", "deep-all-stop", "width-64-slow", "lr-too-large", "mlp-no-slower"}


# ---- made-up results: two seeds, softmax parks, ReLU switches off ----

SETTINGS = SimpleNamespace(seeds=2, steps=1_000, lr=1e-4)


def _attn(rule: str, n_layers: int, n_heads: int, L: int = 10, t: int = 7) -> list[np.ndarray]:
    """Per layer, (sequences, heads, query, key) weights: softmax on BOS but at the trigger,
    where it averages tokens 1..t; ReLU zero but at the trigger."""
    a = np.zeros((1, n_heads, L, L))
    if rule == "softmax":
        a[..., 0] = 1.0
        a[..., t, :] = 0.0
    a[..., t, 1 : t + 1] = 1.0 / t
    return [a.copy() for _ in range(n_layers)]


def _deep():
    runs, heads = [], []
    for rule in ("softmax", "relu"):
        for n in (2, 4):
            for seed in range(2):
                runs.append(
                    {
                        "attention": rule,
                        "n_layers": n,
                        "seed": seed,
                        "steps": 900 if (rule, n) == ("softmax", 4) else 300,
                        "stopped_early": True,
                        "linf": 0.01,
                        "rel_err_trigger": 1e-5,
                        "rel_err_nontrigger": 1e-7,
                        "max_head_bos_mass_nontrigger": 0.99 if rule == "softmax" else 0.0,
                    }
                )
                for layer in range(n):
                    for head in range(n):
                        soft = rule == "softmax"
                        diffuse = soft and n == 4 and layer == 0
                        heads.append(
                            {
                                "attention": rule,
                                "n_layers": n,
                                "seed": seed,
                                "layer": layer,
                                "head": head,
                                "bos_mass_nontrigger": (0.2 if diffuse else 0.99) if soft else 0.0,
                                "attn_mass_nontrigger": 1.0 if soft else 1e-4,
                                "kind": ("diffuse" if diffuse else "sink") if soft else "off",
                            }
                        )
    attn = {(rule, n, n): _attn(rule, n, n) for rule in ("softmax", "relu") for n in (2, 4)}
    frame = pd.DataFrame(heads)
    results = {
        (rule, n, n): [_trained(rule, n, seed) for seed in range(2)] for rule in ("softmax", "relu") for n in (2, 4)
    }
    return SimpleNamespace(
        settings=SETTINGS,
        runs=runs,
        heads=lambda: frame,
        figure_attn=attn,
        task=SimpleNamespace(seq_len=10, residual=True),
        results=results,
    )


def _trained(rule: str, n: int, seed: int) -> SimpleNamespace:
    """A made-up training history: softmax's BOS mass reaches 0.9 at step 3 (step 6 for the
    4-layer seed 1), the loss falls tenfold at step 5 and a hundredfold at step 8."""
    steps = np.arange(10)
    sink_at = 6 if (n, seed) == (4, 1) else 3
    bos = np.where(steps >= sink_at, 0.95, 0.1) if rule == "softmax" else np.zeros(10)
    loss = np.where(steps >= 8, 0.005, np.where(steps >= 5, 0.05, 1.0))
    history = {"step": steps, "bos_mass": np.repeat(bos[:, None], n * n, axis=1), "loss": loss}
    return SimpleNamespace(seed=seed, history=history)


def _extra():
    runs, heads = [], []
    for name, ln in (("mlp", False), ("layer_norm", True)):
        for rule in ("softmax", "relu"):
            for seed in range(2):
                runs.append(
                    {
                        "blocks": name,
                        "layer_norm": ln,
                        "attention": rule,
                        "seed": seed,
                        "stopped_early": not ln,
                        "steps": 1_000 if ln else 200 + 10 * seed,
                        "linf": (0.15 if rule == "softmax" else 0.05) if ln else 0.01,
                        "rel_err_trigger": 0.003 if ln else 1e-5,
                        "rel_err_nontrigger": 1e-6,
                        "max_head_bos_mass_nontrigger": 0.999 if rule == "softmax" else 1e-4,
                    }
                )
                for head in range(2):
                    top = rule == "relu" and ln and seed == 1 and head == 0  # the one near the threshold
                    heads.append(
                        {
                            "blocks": name,
                            "seed": seed,
                            "attention": rule,
                            "attn_mass_nontrigger": 1.0 if rule == "softmax" else (0.0995 if top else 1e-4),
                            "bos_mass_nontrigger": 0.999 if rule == "softmax" else (0.099 if top else 0.0),
                            "bos_value_ratio": 5e-4 if top else 0.2,
                            "trigger_bos_weight": 0.0,
                            "kind": "sink" if rule == "softmax" else "off",
                        }
                    )
    frame = pd.DataFrame(heads)
    return SimpleNamespace(settings=SETTINGS, runs=runs, heads=lambda: frame, task=SimpleNamespace(residual=True))


def _sweep():
    points = {"seq_len": [8, 16, 32], "d_model": [16, 64], "lr": [1e-3, 3e-3, 1e-2]}
    default = {"seq_len": 16, "d_model": 16, "lr": 1e-3}
    cap, runs = 1_000, []
    for swept, values in points.items():
        for value in values:
            point = {**default, swept: value}
            for rule in ("softmax", "relu"):
                slow = (point["seq_len"] / 16) ** (1.0 if rule == "softmax" else 0.3)
                steps = 100 * slow * (1e-3 / point["lr"])
                stuck = point["lr"] == 1e-2 or (point["d_model"] == 64 and rule == "relu")
                for seed in range(2):
                    runs.append(
                        {
                            "swept": swept,
                            **point,
                            "attention": rule,
                            "seed": seed,
                            "steps": cap if stuck else int(steps),
                            "stopped_early": not stuck,
                            "linf": 0.02 if stuck else 0.004,
                            "mse": 1e-7,
                            "rel_err_trigger": 1e-4 if stuck else 1e-5,
                            "rel_err_nontrigger": 1e-7,
                            "bos_mass_nontrigger": 0.999 if rule == "softmax" else 0.0,
                            "attn_mass_nontrigger": 1.0 if rule == "softmax" else 0.0,
                            "step_sink": 3.0 + 0.5 * seed if rule == "softmax" else np.nan,
                            "step_loss": 4,
                        }
                    )
    return SimpleNamespace(settings=SimpleNamespace(seeds=2, steps=cap), runs=runs, to_json=lambda: {"points": points})


def test_chapter_5_measures_read_made_up_runs():
    m = ch05.measures(_deep(), _extra(), _sweep())
    assert (m["n_seeds"], m["n_deep_runs"], m["n_deep_stopped"]) == (2, 8, 8)
    assert m["soft_min_max_bos"] == pytest.approx(0.99) and m["relu_max_mass"] == pytest.approx(1e-4)
    assert (m["big_diffuse_seed_lo"], m["big_diffuse_seed_hi"], m["big_seed_heads"]) == (4, 4, 16)
    assert (m["small_heads"], m["small_sinks"], m["small_dormant"]) == (8, 8, 0)
    assert (m["big_heads"], m["big_diffuse"], m["big_diffuse_seeds"], m["big_first_layer_diffuse"]) == (32, 8, 2, 8)
    assert m["steps_soft_big"] == 900 and m["steps_relu_big"] == 300
    assert m["_fig_soft_bos"] == 1.0 and m["_fig_soft_trigger"] == pytest.approx(1.0) and m["_fig_relu_rows"] == 0
    # blocks: the ReLU head near the threshold found, with the next largest
    assert m["blocks_relu_top"] == "0.0995" and m["blocks_relu_next"] == pytest.approx(1e-4)
    assert (m["mlp_runs"], m["mlp_stopped"], m["ln_runs"], m["ln_stopped"]) == (4, 4, 4, 0)
    assert m["ln_relu_hi"] == 0.05 and m["ln_soft_lo"] == 0.15
    # sweeps: the paper's point counted once; steps along L; the largest rate and width stuck
    assert m["sweep_runs"] == 2 * 2 * (3 + 2 + 3 - 2)
    assert (m["len_short"], m["len_long"], m["steps_softmax_long"]) == (8, 32, 200)
    assert m["growth_softmax"] == pytest.approx(4.0) and m["growth_relu"] < 2
    assert m["_lr_settled"]["softmax"] == [1e-3, 3e-3] and m["_lr_monotone"]
    assert (m["lr_top_runs"], m["lr_top_stopped"], m["wide_relu_runs"], m["wide_relu_stopped"]) == (4, 0, 2, 0)
    assert (m["timing_n"], m["timing_before"]) == (12, 12) and m["timing_median"] == pytest.approx(0.8125)
    assert m["relu_sink_runs"] == 0
    assert m["deep_relu_sink_runs"] == 0 and m["_blocks_relu_top_ln"] and m["sweep_soft_runs"] == m["sweep_runs"] // 2
    assert m["timing_every_step"] == 12 and m["timing_coarse_top"] == 0 and m["ex2_n"] == 0  # no models to cap
    # the deeper models' timing: 3 of 4 softmax models sink before the tenfold drop, all before the hundredfold
    assert (m["deep_timing_n"], m["deep_timing_before"], m["deep_timing_before100"]) == (4, 3, 4)
    assert m["big_outer_diffuse"] == 8 and m["_big_middle_diffuse"] == [0, 0] and m["big_last_layer_diffuse"] == 0
    assert (m["soft_heads"], m["soft_sinks"]) == (40, 32) and m["mlp_steps_soft"] == 205
    # a stride of 1 (short runs): the timing bounds close on the ratio read
    assert m["timing_median_lo"] == m["timing_median"] == m["timing_median_hi"] and m["timing_coarse"] == 0
    # the histories keep every step: stride 1, and the sink leads the tenfold drop by 2 steps
    assert (m["deep_stride_lo"], m["deep_stride_hi"], m["deep_every_step"], m["deep_lead_min"]) == (1, 1, 4, 2)
    assert m["deep_relu_hist_bos"] == 0.0 and m["_deep_top_sink"]
    # the made-up 4 × 4 grid parks every head; every blocks model has a sink
    assert (m["_fig_big_parks"], m["_fig_big_spread"]) == (16, 0) and m["_blocks_soft_no_sink"] == 0
    assert m["_sweep_missed_rel"] == m["_sweep_missed_rel_lo"] == 1e-4 and m["_sweep_stopped_rel"] == 1e-5
    assert m["met_linf_max"] == 0.004 and m["_met_linf_max_len"] == 8 and m["deep_lead_true"] == 2
    # every LayerNorm model against the plain 2 × 2 models of its rule; no histories, so no loss trend
    assert m["_ln_trig_x"] == pytest.approx(300) and m["_ln_rest_x"] == pytest.approx(10) and m["_ln_rules"] == 2
    assert m["ln_err_x"] == pytest.approx(10) and m["_ln_loss_n"] == 0 and np.isnan(m["ln_loss_fall_lo"])
    assert m["_ln_rel_x"] == pytest.approx(0.003 / 1e-5) and m["ln_rel_x"] == 300.0
    # the tasks: residual for the deeper models and blocks, plain for the one-layer sweeps
    assert m["_deep_residual"] and m["_blocks_residual"] and not m["_sweep_residual"]
    assert m["_deep_layers"] == [2, 4] and m["_sweep_layers"] == [1]
    assert (m["noise_narrow"], m["noise_wide"]) == (13, 61)  # widths 16 and 64
    # the missed runs: both rules at the top rate, ReLU at the widest; every run that met it fits the test to 0.004
    assert (m["lr_top_missed"], m["wide_relu_missed"], m["_missed_elsewhere"]) == (4, 2, 0)
    assert m["_missed_linf_min"] == m["lr_top_linf_lo"] == m["wide_relu_linf_hi"] == 0.02 and m["met_linf_over"] == 0
    # the ReLU head near the threshold: its BOS value and its trigger row; no models to cap, so no head reached
    assert m["_blocks_relu_top_ratio"] == 5e-4 and m["_blocks_relu_top_trig_bos"] == 0.0
    assert (m["ex2_diffuse_n"], m["ex2_diffuse_reached"], m["_ex2_parked_n"]) == (0, 0, 0)
    assert m["ex2_capped_reached"] == 0 and m["ex2_capped_closest"] == "–" and m["ln_loss_late_lo"] == "–"
    report = claims.run_claims("ch5", "quick", _deep(), _extra(), _sweep())
    held = {r["id"] for r in report.rows if r["holds"]}
    assert {"deep-softmax-sinks", "relu-heads-off", "ln-does-not-stop", "sweep-sinks", "sink-before-loss"} <= held
    assert "paper-recipe" not in held  # the made-up runs keep a step cap of 1,000


def test_the_sink_timing_figure_draws_one_dot_per_softmax_run_below_the_line():
    runs = [r for r in _sweep().runs if r["attention"] == "softmax"]
    fig = plots.sink_step_share(runs)
    assert len(fig.axes) == 3
    dots = np.concatenate([np.asarray(c.get_offsets())[:, 1] for ax in fig.axes for c in ax.collections])
    assert len(dots) == len(runs) and (dots < 1).all()


def test_table_5_5_takes_each_rule_s_worst_seed_and_table_5_6_gives_each_point():
    blocks = ch05.blocks_table(_extra()).set_index(["blocks", "rule"])
    worst = blocks["top head's BOS mass, worst seed"]
    assert worst["mlp", "softmax"] == 0.999 and worst["layer_norm", "relu"] == 1e-4  # the most, for ReLU
    assert list(blocks["kinds (all seeds)"]) == ["4 sink", "4 off", "4 sink", "4 off"]
    points = ch05.sweep_table(_sweep().runs)
    assert len(points) == 3 + 2 + 3
    top = points[(points.swept == "lr") & (points.value == 1e-2)].iloc[0]
    assert top["softmax: stopped"] == "0 of 2" and top["softmax: median steps"] == 1_000
    assert top["ReLU: most row mass"] == 0.0 and top["softmax: least BOS mass"] == 0.999


def test_the_ratio_s_bounds_widen_with_the_stride():
    assert list(ch05._stride([2_000, 2_001, 50_000])) == [1, 2, 25]


def test_bos_over_half_marks_the_heads_whose_rows_the_cap_changes():
    """A head is reached when some row from 1 on, of some sequence, puts more than half on BOS;
    BOS's own row (which sees only BOS) and a weight of exactly one half do not count."""
    a = np.zeros((2, 3, 4, 4))
    a[:, :, 0, 0] = 1.0  # BOS's own row, every head
    a[1, 0, 2, 0] = 0.6  # head 0: one row of one sequence over half
    a[:, 1, 1:, 0] = 0.5  # head 1: exactly half everywhere
    b = np.zeros((2, 3, 4, 4))
    b[0, 2, 3, 0] = 0.51  # second layer, head 2
    over = ch05.bos_over_half([a, b])
    assert over.shape == (2, 3)
    assert over.tolist() == [[True, False, False], [False, False, True]]


def test_head_reach_reads_the_trained_and_the_capped_weights_of_each_head():
    """Reached: by the trained weights (over one half); under the cap: the largest BOS weight of a
    row from 1 on (BOS's own row left out), and how far the head's weights move."""
    trained = np.zeros((2, 2, 3, 3))
    trained[:, :, 0, 0] = 1.0
    trained[:, 0, 1:, 0] = 0.6  # head 0 reached
    trained[:, 1, 1:, 0] = 0.4
    capped = trained.copy()
    capped[:, 0, 1:, 0] = 0.5  # clipped
    capped[1, 1, 2, 0] = 0.45  # new inputs: head 1 closer, not clipped
    rows = ch05.head_reach([trained], [capped], 4, 3)
    assert [(r["layer"], r["head"], r["reached"]) for r in rows] == [(0, 0, True), (0, 1, False)]
    assert rows[1]["capped_bos"] == pytest.approx(0.45) and rows[1]["moved"] == pytest.approx(0.05)
    assert rows[0]["capped_bos"] == 0.5 and (rows[0]["n_layers"], rows[0]["seed"]) == (4, 3)


def test_cap_reach_counts_the_parking_and_diffuse_heads_reached():
    heads = pd.DataFrame(
        {
            "attention": ["softmax"] * 5 + ["relu"],
            "n_layers": [4] * 6,
            "seed": [0] * 6,
            "layer": [0, 0, 1, 2, 3, 0],
            "head": [0, 1, 0, 0, 0, 2],
            "kind": ["diffuse", "sink", "diffuse", "dormant", "diffuse", "off"],
        }
    )
    reach = heads[["n_layers", "seed", "layer", "head"]].assign(
        reached=[False, True, False, True, True, True],
        capped_bos=[0.45, 0.5, 0.4997, 0.5, 0.5, 0.0],
        moved=[1e-7, 0.3, 0.05, 0.2, 0.1, 0.0],
    )
    got = ch05.cap_reach(heads, reach)
    assert (got["_ex2_parked_n"], got["_ex2_parked_reached"]) == (2, 2)  # the ReLU head is not counted
    assert (got["ex2_diffuse_n"], got["ex2_diffuse_reached"], got["ex2_diffuse_untouched"]) == (3, 1, 2)
    assert got["ex2_diffuse_fixed"] == 1  # of the two unreached, one in the first layer
    # under the cap: neither unreached head reaches it; the closest is the second-layer one
    assert got["ex2_capped_reached"] == 0 and got["_ex2_capped_closest"] == 0.4997
    assert got["ex2_capped_closest"] == "0.4997" and got["_ex2_closest_head"] == "4 layers, seed 0, L1H0"
    assert got["_ex2_first_moved"] == 1e-7
    clipped = ch05.cap_reach(heads, reach.assign(capped_bos=[0.45, 0.5, 0.5, 0.5, 0.5, 0.0]))
    assert clipped["ex2_capped_reached"] == 1  # its new inputs take it to the cap
    empty = ch05.cap_reach(heads, pd.DataFrame(columns=["n_layers", "seed", "layer", "head", "reached"]))
    assert (empty["ex2_diffuse_n"], empty["ex2_diffuse_reached"], empty["_ex2_parked_n"]) == (0, 0, 0)
    assert empty["ex2_capped_reached"] == 0 and empty["ex2_capped_closest"] == "–"
    # the claim on them: it holds when some but not all diffuse heads are reached, every parking head is
    m = {**GOOD, **got, "soft_heads": 5, "big_diffuse": 3}
    by_id = {c.id: c for c in ch05.CHAPTER.claims}
    assert by_id["cap-reaches-diffuse"].run(m)[0]
    assert not by_id["cap-reaches-diffuse"].run({**m, "_ex2_parked_reached": 1})[0]


def test_the_missed_runs_are_found_where_they_miss():
    runs = pd.DataFrame(
        {
            "swept": ["lr", "lr", "d_model", "d_model", "seq_len", "seq_len"],
            "lr": [1e-2, 1e-2, 1e-3, 1e-3, 1e-3, 1e-3],
            "d_model": [16, 16, 64, 64, 16, 16],
            "attention": ["softmax", "relu", "relu", "softmax", "relu", "softmax"],
            "stopped_early": [False, True, False, True, False, True],
            "linf": [0.02, 0.004, 0.03, 0.006, 0.01, 0.007],
        }
    )
    got = ch05._missed(runs, 1e-2, 64)
    assert (got["lr_top_missed"], got["wide_relu_missed"], got["_missed_elsewhere"]) == (1, 1, 1)
    assert got["_missed_linf_min"] == 0.01 and (got["lr_top_linf_lo"], got["wide_relu_linf_hi"]) == (0.02, 0.03)
    assert got["met_linf_over"] == 2  # 0.006 and 0.007 above 0.005; 0.004 not
    none = ch05._missed(runs.assign(stopped_early=True), 1e-2, 64)
    assert none["lr_top_missed"] == 0 and np.isnan(none["_missed_linf_min"]) and none["met_linf_over"] == 5


def test_the_true_lead_takes_each_run_s_stride_less_one_from_the_lead_read():
    first = pd.DataFrame({"sink": [100, 200], "loss10": [160, 265], "stride": [10, 13]})
    assert ch05.true_lead(first) == 51  # 60 - 9, below 65 - 12 = 53
    assert ch05.true_lead(first.iloc[:0]) == 0


def test_ln_against_plain_compares_each_rule_with_its_own_plain_models():
    deep = SimpleNamespace(
        runs=[
            {"attention": r, "n_layers": n, "rel_err_trigger": t, "rel_err_nontrigger": e}
            for r, n, t, e in [("softmax", 2, 1e-5, 2e-7), ("relu", 2, 2e-5, 2e-10), ("softmax", 4, 9e-3, 9e-3)]
        ]
    )
    extra = SimpleNamespace(
        runs=[
            {"attention": r, "layer_norm": ln, "rel_err_trigger": t, "rel_err_nontrigger": e}
            for r, ln, t, e in [("softmax", True, 1e-3, 1e-6), ("relu", True, 1e-4, 1e-9), ("relu", False, 0, 0)]
        ]
    )
    got = ch05.ln_against_plain(deep, extra)  # the 4-layer and the plain blocks models left out
    assert got["_ln_trig_x"] == pytest.approx(5.0) and got["_ln_rest_x"] == pytest.approx(5.0)
    assert got["_ln_rules"] == 2
    extra.runs[1]["rel_err_nontrigger"] = 1e-10  # a ReLU LayerNorm model below a plain one elsewhere
    assert ch05.ln_against_plain(deep, extra)["_ln_rest_x"] < 1


def test_ln_loss_trend_reads_the_layer_norm_histories_only():
    steps = np.arange(0, 1001, 10)

    def run(late):
        loss = np.where(steps >= 900, late, np.where(steps >= 400, 1.0, 5.0))
        return SimpleNamespace(history={"step": steps, "loss": loss})

    extra = SimpleNamespace(
        results={
            ("softmax", "layer_norm"): [run(0.5), run(0.8)],
            ("relu", "mlp + layer_norm"): [run(0.25)],
            ("relu", "mlp"): [run(2.0)],  # no LayerNorm: not read
        }
    )
    got = ch05.ln_loss_trend(extra)
    assert (got["ln_loss_fall_lo"], got["ln_loss_fall_hi"], got["_ln_loss_n"]) == (1.25, 4.0, 3)
    # from 80-90% to the last tenth: 1.0 over each run's last loss
    assert (got["_ln_loss_late_lo"], got["ln_loss_late_hi"]) == (1.25, 4.0) and got["ln_loss_late_lo"] == "1.250"
    extra.results[("softmax", "layer_norm")].append(run(1.5))  # a loss that rose
    assert ch05.ln_loss_trend(extra)["ln_loss_fall_lo"] < 1
