"""Chapter 3's claims (attnsink.claims.ch03): each holds on good measures and fails when its
number moves; the measures read made-up runs right (the construction standing in for every
trained ReLU head)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from attnsink import TriggerTask, claims
from attnsink.claims import ch03
from attnsink.construct import relu_solution, with_attention
from attnsink.model import AttentionModel

GOOD = {
    "n_test": 10_000,
    "exact_err": 1.8e-7,
    "exact_off_max": 0.0,
    "exact_row_gap": 0.0,
    "exact_row_bos": 0.0,
    "qk_entries": [(1, 1), (1, 15)],
    "vo_diagonal": [0.0] + [1.0] * 15,
    "vis_gap": 1.3e-7,
    "vis_off_max": 0.0,
    "vis_linf": 0.33,
    "vis_rel": 0.032,
    "relu_floor": 0.0,
    "pos_bound": 0.0169,
    "vis_construct": 0.122,
    "vis_construct_ratio": 7.2,
    "n_vis_trained": 5,
    "pos_trained_min": 0.0201,
    "pos_trained_max": 0.0224,
    "pos_trained_ratio": 1.33,
    "trained_off_max": 0.0,
    "_c_positions": list(range(2, 16)),
    "_all_positions": list(range(2, 16)),
    "c_range": 0.005,
    "key_spread": 0.0069,
    "key_spread_j": 0.0137,
    "key_spread_rel": 0.0048,
    "key_spread_share": "0.5%",
    "c_scale_gap": 0.0014,
    "diag_gap": 0.002,
    "bos_sd": 0.016,
    "bos_sd_share": "1.4%",
    "_bos_sd_share": 0.014,
    "content_gap": 0.0033,
    "c_min": 2.88,
    "c_max": 3.34,
    "off_diagonal": 6.7e-4,
    "bos_share_min": 0.26,
    "bos_share_max": 0.36,
    "bos_value_min": 0.24,
    "bos_w_min": 1.14,
    "bos_w_max": 1.61,
    "nb_soft_stopped": 0,
    "nb_soft_err": 0.42,
    "nb_bound_ok": True,
    "nb_floor0": 0.3246,
    "nb_bound_min": 0.11,
    "nb_soft_mse_min": 0.0023,
    "nb_mse_floor": 4.3e-4,
    "nb_soft_nontrig": 6.9e-4,
    "nb_soft_vnorm": 0.065,
    "nb_relu_vnorm": 0.66,
    "nb_soft_self": 1.0,
    "nb_soft_uneven": 0.13,
    "nb_soft_pos0_min": 0.2263,
    "nb_soft_pos0_max": 0.2264,
    "nb_even_pos0": "0.221",
    "_nb_even_pos0": 0.2212,
    "nb_pos0_gap": 0.0052,
    "nb_relu_stopped": True,
    "nb_relu_err": 1.4e-5,
    "nb_relu_mass": 0.0,
    "nb_relu_off_fig": 0.0,
    "nb_relu_row_spread": 9e-4,
    "nb_paper_floor": 0.0109,
    "nb_visible_floor": 0.0,
    "ex_exact_max": 0.0,
    "ex_floor_visible": 0.0169,
    "ex_floor_sqrt": 0.071,
    "ex_floor_square": 0.289,
    "ex_floor_none": 0.087,
    "ex2_visible_linf": 1.8e-7,
    "ex2_relu_linf": 0.44,
    "ex2_relu_rel": 0.0533,
    "ex2_relu_rel_pred": 0.0521,
    "ex2_off_max": 0.0,
    "ex3_off_min": -0.27,
    "ex3_off_max": -0.18,
    "ex3_share_min": "5%",
    "ex3_share_max": "9%",
    "_ex3_share_min": 0.052,
    "_ex3_share_max": 0.088,
    "ex3_bos_min": -0.022,
    "ex3_bos_max": -3.4e-4,
    "ex3_off_grad": 0.0,
    "own_value": 0.686,
    "own_value_min": 0.642,
    "own_value_max": 0.744,
    "own_bos_gap": 0.0068,
    "_trigger_bos_min": 0.257,
    "content_trigger": 0.012,
    "own_bos_gap_seq": 0.0155,
    "content_trigger_seq": 0.0281,
    "nb_mse_floor_rel": 0.0803,
    "nb_soft_sum_min": 0.4316,
    "nb_mse_units_gap": 0.013,
    "pw_nb_heads": 5,
    "pw_nb_shape": True,
    "pw_nb_simplex_gap": 1.2e-7,
    "ch6_solved_pct": "1%",
    "nb_n_test": 2000,
    "nb_soft_other_max": 1.4e-13,
    "_nb_self_positions": list(range(2, 16)),
    "_nb_all_positions": list(range(2, 16)),
    "nb_subst_gap": 1e-12,
    "pw_n_noise": 13,
    "pw_heads": 10,
    "pw_shape": True,
    "pw_a00_min": 1.0,
    "pw_a11_min": 1.1e-5,
}

BREAKS = {  # claim -> a change of the measures that makes it false
    "construction-exact": {"exact_err": 1e-3},
    "construction-off": {"exact_off_max": 1e-9},
    "construction-averages": {"exact_row_bos": 0.01},
    "construction-weights": {"qk_entries": [(1, 1), (1, 15), (15, 0)]},
    "visible-shrinks": {"vis_gap": 1e-3},
    "visible-still-off": {"vis_off_max": 1e-7},
    "visible-errs": {"vis_rel": 0.001},
    "floors": {"relu_floor": 0.01},
    "floor-holds": {"pos_trained_min": 0.01},
    "trained-near-floor": {"pos_trained_ratio": 1.6},  # no longer within 1.5 of the floor
    "trained-off": {"trained_off_max": 1e-6},
    "trained-same-c": {"c_range": 0.012},  # γ moves by more than 0.01 within a seed
    "trained-rescaled": {"c_scale_gap": 0.05},
    "bos-constant-term": {"bos_w_max": 3.5},
    "nobos-position-0": {"nb_pos0_gap": 0.015},  # position 0 weighed more than an even spread: a sink forming
    "ex-nobos-rel": {"ex2_relu_rel": 0.06},  # not what (j+1)/j times the target gives
    "bos-weight-steady": {"_bos_sd_share": 0.05},  # the BOS weight moves with the sequence
    "trained-content-values": {"content_gap": 0.05},  # a content token's value not 1/γ times the token
    "trained-gamma-range": {"c_min": 1.0},  # no rescaling
    "trained-find-construction": {"_bos_sd_share": 0.03},  # the BOS term moves with the content
    "nobos-softmax-fails": {"nb_soft_stopped": 1},
    "nobos-corollary": {"nb_bound_ok": False},
    "nobos-floor-values": {"nb_bound_min": 0.05},
    "nobos-softmax-short-values": {"nb_soft_vnorm": 0.5},
    "nobos-softmax-self": {"nb_soft_self": 0.6},
    "nobos-relu-solves": {"nb_relu_err": 0.01},
    "nobos-paper-scale": {"nb_paper_floor": 0.0},
    "nobos-relu-off": {"nb_relu_mass": 1e-4},
    "ex-floors": {"ex_floor_square": 0.1},
    "ex-nobos-scale": {"ex2_visible_linf": 0.1},
    "ex-margins": {"_ex3_share_min": 0.005},
    "ex-margins-bos": {"ex3_bos_min": -0.18},
    "ex-off-rows-no-gradient": {"ex3_off_grad": 1e-4},
    "positive-weights-hypotheses": {"pw_a11_min": 0.0},  # a weight a_11 that is zero: Proposition 6.1 is silent
    "trained-own-value": {"own_value_max": 0.95},  # the trigger's own value as long as the construction's
    "trained-bos-makes-up": {"own_bos_gap": 0.02},  # trigger token and BOS do not add up to the target
    "nobos-softmax-self-every-j": {"nb_soft_other_max": 1e-3},  # the trigger row averages a little
    "nobos-substitution": {"nb_subst_gap": 1e-6},  # the written floor is not the library's
    "trained-bos-makes-up-per-sequence": {"own_bos_gap_seq": 0.04},  # one sequence far from 1
    "nobos-corollary-hypotheses": {"pw_nb_shape": False},  # a residual stream: the corollary is silent
    "nobos-mse-units": {"nb_mse_units_gap": 0.05},  # the MSE is not the relative errors' sum
}


def test_every_chapter_3_claim_holds_on_good_measures_and_fails_when_its_number_moves():
    ids = [c.id for c in ch03.CHAPTER.claims]
    assert sorted(ids) == sorted(BREAKS), "every claim has a test that breaks it"
    for c in ch03.CHAPTER.claims:
        assert c.run(GOOD)[0], c.id
        assert not c.run({**GOOD, **BREAKS[c.id]})[0], c.id


@pytest.mark.parametrize(
    "change",
    [
        {"nb_soft_err": 0.05},  # the softmax heads solve the task after all
        {"nb_soft_mse_min": 1e-4},  # below the corollary's MSE floor
        {"nb_soft_uneven": 0.2},  # a row not spread evenly
        {"bos_sd": 0.0},  # the BOS weight exactly constant
        {"c_max": 4.0},  # γ above the stated range
        {"_ex3_share_max": 0.12},  # a non-trigger score further below zero than stated
        {"nb_relu_stopped": False},
        {"nb_relu_row_spread": 0.2},
        {"bos_w_min": 0.1},  # no weight on BOS at the trigger
        {"pos_trained_max": 0.07},  # trained heads not much closer than the construction
        {"ex2_off_max": 0.1},
        {"ex3_off_max": 0.01},  # a non-trigger score above zero
        {"_ex3_share_max": 0.2},  # a non-trigger score far below zero
        {"ex3_bos_max": 0.01},  # BOS's own score above zero
        {"_c_positions": [3, 7, 12]},  # the same c read at a few trigger positions only
        {"bos_share_max": 0.95},  # BOS carries nearly all the trigger channel
        {"c_scale_gap": 0.05},  # not a rescaling of the construction
        {"trained_off_max": 1e-6},
        {"nb_visible_floor": 0.01},  # the visible-key scale not exact without BOS
        {"ex2_relu_linf": 0.05},
        {"vo_diagonal": None},  # a value map that is not diagonal
        {"diag_gap": 0.05},  # one diagonal entry of the value map off 1/γ
        {"nb_floor0": 0.2},  # the floor at exact non-trigger rows not about 0.32
        {"key_spread_rel": 0.012},  # the weights on the keys 1..j not alike
        {"bos_share_min": 0.18},  # BOS supplies less of the trigger channel than stated
        {"bos_share_max": 0.42},  # or more
        {"bos_value_min": 0.0},  # BOS's value zero: no term from BOS
        {"ex2_relu_rel": 0.049},  # below the expected relative error by more than 5%
    ],
)
def test_the_other_branches_of_the_claims_break_them_too(change):
    assert any(not c.run({**GOOD, **change})[0] for c in ch03.CHAPTER.claims)


@pytest.mark.parametrize(
    ("claim", "change"),
    [
        ("positive-weights-hypotheses", {"pw_n_noise": 1}),  # one noise coordinate: the proposition needs two
        ("positive-weights-hypotheses", {"pw_heads": 0}),  # no softmax head read
        ("positive-weights-hypotheses", {"pw_shape": False}),  # a residual stream, or several heads or layers
        ("positive-weights-hypotheses", {"pw_a00_min": 0.0}),
        ("trained-own-value", {"own_value_min": 0.45}),  # far below the stated range
        ("trained-own-value", {"own_value_max": 1.0}),  # the construction's entry after all
        ("trained-bos-makes-up", {"_trigger_bos_min": 0.1}),  # BOS supplies less than stated
        ("trained-bos-makes-up", {"content_trigger": 0.03}),  # the content tokens carry the trigger channel
        ("nobos-softmax-self-every-j", {"_nb_self_positions": [7]}),  # read at one trigger position only
        ("nobos-softmax-self-every-j", {"nb_soft_other_max": 2e-6}),
        ("nobos-substitution", {"nb_subst_gap": float("nan")}),  # a floor that does not compute
        ("trained-bos-makes-up-per-sequence", {"content_trigger_seq": 0.06}),  # content carries the channel
        ("trained-bos-makes-up-per-sequence", {"own_bos_gap_seq": 0.005}),  # per sequence tighter than the mean
        ("trained-bos-makes-up-per-sequence", {"content_trigger_seq": 0.01}),  # ditto, for the content tokens
        ("nobos-corollary-hypotheses", {"pw_n_noise": 1}),  # one noise coordinate: the corollary needs two
        ("nobos-corollary-hypotheses", {"pw_nb_heads": 0}),  # no softmax head without BOS read
        ("nobos-corollary-hypotheses", {"pw_nb_simplex_gap": 1e-3}),  # rows off the simplex
        ("nobos-mse-units", {"nb_mse_floor_rel": 0.06}),  # the floor not about 0.08
        ("nobos-mse-units", {"nb_mse_floor_rel": 0.1}),
        ("nobos-mse-units", {"nb_soft_sum_min": 0.35}),  # a head whose errors sum below the stated 0.4
    ],
)
def test_each_new_check_fails_on_each_of_its_branches(claim, change):
    (c,) = [c for c in ch03.CHAPTER.claims if c.id == claim]
    assert c.run(GOOD)[0]
    assert not c.run({**GOOD, **change})[0]


@pytest.mark.parametrize(
    ("claim", "change"),
    [
        ("trained-own-value", {"own_value_min": 0.51, "own_value_max": 0.89}),  # inside the stated range
        ("trained-bos-makes-up", {"own_bos_gap": 0.0099, "content_trigger": 0.019, "_trigger_bos_min": 0.21}),
        ("nobos-softmax-self-every-j", {"nb_soft_other_max": 9e-7}),
        ("nobos-substitution", {"nb_subst_gap": 0.0}),
        ("positive-weights-hypotheses", {"pw_n_noise": 2, "pw_heads": 1, "pw_a11_min": 1e-30}),
        ("trained-bos-makes-up-per-sequence", {"own_bos_gap_seq": 0.0299, "content_trigger_seq": 0.0499}),
        ("nobos-corollary-hypotheses", {"pw_n_noise": 2, "pw_nb_heads": 1, "pw_nb_simplex_gap": 9e-6}),
        ("nobos-mse-units", {"nb_mse_units_gap": 0.029, "nb_mse_floor_rel": 0.071, "nb_soft_sum_min": 0.401}),
    ],
)
def test_each_new_check_holds_at_the_edge_of_what_it_states(claim, change):
    (c,) = [c for c in ch03.CHAPTER.claims if c.id == claim]
    assert c.run({**GOOD, **change})[0]


def test_the_floor_written_out_is_the_librarys():
    from attnsink.theory import trigger_error_lower_bound

    task = TriggerTask(bos=False)
    for eps in (0.0, 1e-4, 7e-4, 0.01):
        assert ch03._substituted_floor(task, eps) == pytest.approx(trigger_error_lower_bound(task, eps), abs=1e-11)
    assert ch03._substituted_floor(task, 0.0) == pytest.approx(0.3246, abs=1e-3)
    assert ch03._substituted_floor(task, 10.0) == 0  # every A'_j used up: the floor is 0


def test_the_signal_is_the_trigger_targets_mean_squared_length_without_bos():
    task = TriggerTask(bos=False)
    b = task.sample(200_000, generator=torch.Generator().manual_seed(1))
    measured = b.y[b.is_trigger].double().pow(2).sum(-1).mean().item()
    assert ch03._signal(task) == pytest.approx(measured, rel=5e-3)
    assert ch03._signal(task) == pytest.approx(1.3612, abs=1e-4)


def test_the_mse_in_relative_units_is_the_relative_errors_sum():
    import pandas as pd

    task = TriggerTask(bos=False)
    units = task.seq_len * task.d_model / ch03._signal(task)
    soft = pd.DataFrame({"rel_err_trigger": [0.4, 0.5], "rel_err_nontrigger": [1e-3, 0.0]})
    soft["mse"] = (soft.rel_err_trigger + 15 * soft.rel_err_nontrigger) / units * [1.0, 1.02]
    got = ch03._mse_units(task, soft)
    assert got["nb_soft_sum_min"] == pytest.approx(0.415)
    assert got["nb_mse_units_gap"] == pytest.approx(0.02)  # the second head's MSE 2% off its sum
    assert got["nb_mse_floor_rel"] == pytest.approx(0.0803, abs=1e-3)


def fake_runs(task):
    """Made-up runs: the construction stands in for every trained ReLU head (c = 1, no BOS
    weight), with the visible-key scale for the relu_visible heads; a freshly initialised
    softmax head for the softmax ones. The no-BOS maps are built by hand."""
    construction = relu_solution(task)
    visible = with_attention(construction, "relu_visible")
    L, j = task.seq_len, 7
    soft = torch.zeros(4, L, L)
    for i in range(L):
        keys = [k for k in range(i + 1) if k != j or i == j]
        soft[:, i, keys] = 1.0 / len(keys)
    soft[:, j] = 0.0
    soft[:, j, j] = 1.0  # the trigger row sits on the trigger
    relu = torch.zeros(4, L, L)
    relu[:, j, : j + 1] = 0.4
    # an MSE that matches the relative errors 0.4 and 5e-4: L d_model MSE / S = 0.4 + 15 × 5e-4
    mse = 0.4075 * ch03._signal(TriggerTask(bos=False)) / (task.seq_len * task.d_model)
    runs = [
        {"no_bos": True, "attention": "softmax", "seed": 0, "stopped_early": False, "rel_err_trigger": 0.4}
        | {"rel_err_nontrigger": 5e-4, "attn_mass_nontrigger": 1.0, "bos_mass_nontrigger": 0.22, "mse": mse},
        {"no_bos": True, "attention": "relu_visible", "seed": 0, "stopped_early": True, "rel_err_trigger": 1e-5}
        | {"rel_err_nontrigger": 0.0, "attn_mass_nontrigger": 0.0, "bos_mass_nontrigger": 0.0, "mse": 1e-9},
        {"no_bos": False, "attention": "softmax", "seed": 0},  # with BOS: not read
    ]
    nobos = SimpleNamespace(
        runs=runs,
        settings=SimpleNamespace(seeds=1, steps=100),
        results={
            ("softmax", False): [SimpleNamespace(seed=0, model=AttentionModel(task.d_model, attention="softmax"))],
            ("softmax", True): [SimpleNamespace(seed=0, model=AttentionModel(task.d_model, attention="softmax"))],
            ("relu_visible", False): [SimpleNamespace(seed=0, model=visible)],
        },
        figure_attn={("softmax", False): soft, ("relu_visible", False): relu},
    )
    return [SimpleNamespace(seed=0, model=visible)], [SimpleNamespace(seed=0, model=construction)], nobos


def test_chapter_3_measures_read_made_up_runs():
    task = TriggerTask()
    batch = task.sample(300, generator=torch.Generator().manual_seed(0))
    visible_runs, relu_runs, nobos = fake_runs(task)
    m = ch03.measures(task, batch, visible_runs, relu_runs, nobos)
    assert m["n_test"] == 300 and m["exact_err"] <= 1e-5 and m["exact_off_max"] == 0
    assert m["qk_entries"] == [(1, 1), (1, 15)] and m["vo_diagonal"] == [0.0] + [1.0] * 15
    assert m["vis_gap"] <= 1e-5 and m["vis_off_max"] == 0 and m["vis_rel"] > 0.01
    assert m["relu_floor"] == 0 and m["pos_bound"] == pytest.approx(0.0169, abs=1e-4)
    assert m["pos_trained_min"] == m["vis_construct"]  # the "trained" head is the construction
    assert m["_by_j"]["|output| / |target|"].to_numpy() == pytest.approx(m["_by_j"]["j / (j + 1)"].to_numpy(), abs=1e-5)
    # the construction as a trained head: weight 1/j per key, values the tokens, nothing from BOS
    assert m["c_min"] == pytest.approx(1) and m["c_max"] == pytest.approx(1) and m["c_range"] == pytest.approx(0)
    assert m["c_times_scale"] == pytest.approx(1) and m["bos_w"] == 0 and m["bos_value"] == 0
    assert m["bos_share_trigger"] == 0 and m["trained_off_max"] == 0
    assert (m["ex3_off_min"], m["ex3_off_max"], m["ex3_on_min"]) == (0.0, 0.0, 1.0)  # scores exactly 0 and 1
    assert m["ex3_bos_min"] == m["ex3_bos_max"] == 0  # BOS's own score: the query reads the trigger channel only
    assert m["_c_positions"] == m["_all_positions"] == list(range(2, 16)) and (m["j_first"], m["j_last"]) == (2, 15)
    assert m["nb_paper_floor"] > 0.01 and m["nb_visible_floor"] == 0
    # without BOS: the runs' numbers, the hand-built maps
    assert m["nb_seeds"] == 1 and m["nb_soft_err"] == 0.4 and m["nb_soft_stopped"] == 0 and m["nb_relu_stopped"]
    assert m["nb_soft_self"] == 1.0 and m["nb_soft_uneven"] == pytest.approx(0) and m["nb_relu_row_spread"] == 0
    assert m["nb_relu_off_fig"] == 0 and m["nb_relu_mass"] == 0
    assert m["nb_soft_vnorm"] < 0.2 * m["nb_relu_vnorm"]  # initial weights are small
    assert m["nb_floor0"] == pytest.approx(0.3246, abs=1e-3) and m["nb_bound_ok"]
    assert m["diag_gap"] < 1e-6 and m["bos_sd"] == 0  # the construction: value map the identity, no BOS weight
    assert m["content_gap"] < 1e-6 and m["_bos_sd_share"] == float("inf")  # no BOS weight to compare with
    assert m["ex3_off_grad"] == 0  # scores exactly 0 at the non-trigger rows: ReLU passes no gradient
    assert m["ex_exact_max"] < 1e-9 and m["ex_floor_square"] == pytest.approx(0.289, abs=1e-3)
    assert m["ex2_visible_linf"] < 1e-5 < m["ex2_relu_linf"] and m["ex2_off_max"] == 0
    # (j+1)/j times the target, exactly: on 1000 sequences the measured error is near its expectation
    assert m["ex2_relu_rel_pred"] == pytest.approx(0.0521, abs=1e-4)
    assert m["ex2_relu_rel"] == pytest.approx(m["ex2_relu_rel_pred"], rel=0.05)
    # an even spread over each row's content tokens puts 0.221 on position 0; the made-up runs' mass
    assert m["_nb_even_pos0"] == pytest.approx(0.2212, abs=1e-4) and m["nb_even_pos0"] == "0.221"
    assert m["nb_soft_pos0_min"] == m["nb_soft_pos0_max"] == 0.22
    assert m["nb_pos0_gap"] == pytest.approx(0.0012, abs=1e-4)
    assert m["key_spread_j"] < 1e-5 and m["key_spread_rel"] < 1e-5  # the construction: 1/j on every key
    assert m["key_spread_share"] == "0.1%"  # a float32 spread of 10⁻⁷, rounded up
    # the construction's trigger row: the trigger token supplies the whole trigger channel, BOS none
    assert m["own_value"] == pytest.approx(1) and m["own_value_min"] == pytest.approx(1)
    assert m["own_bos_gap"] < 1e-5 and m["content_trigger"] == 0 and m["_trigger_bos_min"] == 0
    assert list(m["_own_entry"]) == [1.0]
    values = ch03.table_value_maps(m).data
    assert list(values["W_VO (trigger, trigger)"]) == [1.0]
    # freshly initialised softmax heads spread the trigger row; both meet Proposition 6.1's hypotheses
    assert m["nb_n_test"] == 2000 and m["_nb_self_positions"] == m["_nb_all_positions"] == list(range(2, 16))
    assert m["nb_soft_other_max"] > 0.5 and m["nb_subst_gap"] < 1e-9
    assert (m["pw_n_noise"], m["pw_heads"], m["pw_shape"], m["pw_a00_min"]) == (13, 2, True, 1.0)
    assert 0 < m["pw_a11_min"] < 1
    assert (m["pw_nb_heads"], m["pw_nb_shape"]) == (1, True) and m["pw_nb_simplex_gap"] < 1e-5
    assert m["nb_soft_sum_min"] == pytest.approx(0.4075) and m["nb_mse_units_gap"] < 1e-9
    assert m["own_bos_gap_seq"] < 1e-5 and m["content_trigger_seq"] == 0  # the construction, sequence by sequence
    assert m["ch6_solved_pct"] == "1%"
    report = claims.run_claims("ch3", "full", task, batch, visible_runs, relu_runs, nobos)
    failed = {r["id"] for r in report.rows if not r["holds"]}
    # the stand-ins are not the trained heads: no BOS term, no rescaling to gain from, scores at
    # the non-trigger rows exactly 0
    assert failed == {
        "bos-constant-term",
        "bos-weight-steady",
        "trained-find-construction",
        "trained-near-floor",
        "trained-gamma-range",
        "trained-own-value",
        "trained-bos-makes-up",
        "trained-bos-makes-up-per-sequence",  # no spread to widen
        "nobos-softmax-self-every-j",
        "ex-margins",
    }
