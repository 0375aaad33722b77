"""The claims mechanism (attnsink.claims) and chapter 1's claims, on small synthetic inputs."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnsink import claims
from attnsink.claims import base, bounds, ch01
from attnsink.prose import readable


@pytest.fixture(autouse=True)
def _no_results_cache(monkeypatch):
    """Chapter 1's measures keep what they compute in the results cache: not the user's."""
    monkeypatch.setenv("ATTNSINK_CACHE_DIR", "")


def toy_chapter():
    ch = base.Chapter("toy")

    @ch.measures
    def _(x, scale=1.0):
        return {"x": x * scale, "count": 3, "label": "three", "flag": True, "_frame": object()}

    @ch.claim("small", "x is below 1.", profiles=("quick", "full"))
    def _(m):
        return m["x"] < 1, f"x = {m['x']}"

    @ch.claim("tiny", "x is below 0.1.")  # full only
    def _(m):
        return m["x"] < 0.1, f"x = {m['x']}"

    return ch


@pytest.fixture
def toy(monkeypatch):
    ch = toy_chapter()
    monkeypatch.setitem(claims.CHAPTERS, "toy", ch)
    return ch


def test_a_claim_is_checked_where_it_is_declared(toy):
    report = claims.run_claims("toy", "full", 0.05)
    assert [r["holds"] for r in report.rows] == [True, True] and not report.failed
    report = claims.run_claims("toy", "quick", 0.5)  # tiny fails, but quick does not require it
    assert [(r["holds"], r["required"]) for r in report.rows] == [(True, True), (False, False)]
    assert not report.failed
    report = claims.run_claims("toy", "full", 0.5)
    assert [r["id"] for r in report.failed] == ["tiny"]
    assert claims.run_claims("toy", "full", 5.0, scale=0.01).failed == []  # measures take keywords


def test_check_claims_raises_naming_the_claim_and_glues_only_numbers_and_strings(toy, monkeypatch):
    glued = {}
    monkeypatch.setattr("attnsink.book.glue", lambda name, value, display=True: glued.setdefault(name, value))
    report = claims.check_claims("toy", "quick", 0.5)
    assert glued == {"x": readable(0.5), "count": "3", "label": "three"}  # no flag, no _frame
    assert "1 of 2 claims hold" in report._repr_html_() and "–" in report._repr_html_()
    with pytest.raises(claims.ClaimError, match=r"tiny \(x is below 0.1. measured: x = 0.5\)"):
        claims.check_claims("toy", "full", 0.5)
    with pytest.raises(claims.ClaimError, match="small"):
        claims.check_claims("toy", "quick", 2.0, glue=False)


def test_bad_claims_and_bad_calls_are_refused():
    ch = toy_chapter()
    with pytest.raises(ValueError, match="already has a claim"):
        ch.claim("small", "again")(lambda m: (True, ""))
    with pytest.raises(ValueError, match="already has its measures"):
        ch.measures(lambda: {})
    with pytest.raises(ValueError, match="id must be"):
        base.Claim("no spaces please", "text", lambda m: (True, ""))
    with pytest.raises(ValueError, match="text must be"):
        base.Claim("ok", "  ", lambda m: (True, ""))
    with pytest.raises(ValueError, match="profiles must be"):
        base.Claim("ok", "text", lambda m: (True, ""), profiles=("fast",))
    with pytest.raises(ValueError, match="chapter must be one of"):
        claims.run_claims("ch99", "full")
    with pytest.raises(ValueError, match="profile must be one of"):
        claims.run_claims("ch1", "medium")


def test_readable_rounds_for_a_reader():
    assert [readable(v) for v in (0.99872, 0.1429, 1234.5, 92439.542, 3.2e-5, 12000, 0.0, -0.25)] == [
        "0.999",
        "0.14",
        "1,200",
        "92,000",
        "3.2 × 10⁻⁵",
        "12,000",
        "0",
        "−0.25",
    ]
    assert readable(0.9999) == "0.9999" and readable(0.1429, 3) == "0.143"
    for bad in (True, "0.5", None):
        with pytest.raises(ValueError, match="x must be"):
            readable(bad)
    with pytest.raises(ValueError, match="digits"):
        readable(0.5, 0)


# ---- chapter 1 ----

GOOD = {
    "n_seeds": 2,
    "park_mass": "0.5",
    "_park_mass": 0.5,
    "soft_min_bos": 0.999,
    "soft_min_bos_row": 0.997,
    "soft_max_value_ratio": 4e-4,
    "relu_max_mass": 0.0,
    "relu_max_bos": 0.0,
    "relu_max_row_mass": 0.0,
    "relu_row0_max": 0.0,
    "all_stopped": True,
    "soft_steps": "787.5",
    "relu_steps": "674.5",
    "_max_steps": 1500,
    "_step_budget": 20000,
    "plain_gap": 2e-7,
    "_plain_rules": ("relu", "softmax"),
    "max_rel_err": 2e-5,
    "max_test_linf": "0.0103",  # as printed, to three figures
    "_max_test_linf": 0.01028,
    "_stop_linf": 5e-3,
    "test_linf_ratio": 2.06,
    "trigger_keys": 7,
    "trigger_row_mean": 0.1428,
    "trigger_row_spread": 1e-4,
    "trigger_key_gap": 1.8e-4,
    "relu_trigger_mass": 3.3,
    "relu_trigger_bos_fig": 0.23,
    "relu_bos_c_min": 1.143,
    "relu_bos_c_max": 1.613,
    "_relu_bos_c": (1.143, 1.613),
    "_relu_bos_exact": 4.8e-7,
    "relu_bos_c_noise": "3.9%",
    "_relu_bos_c_noise": 0.0388,
    "relu_bos_at_2_min": 0.572,
    "relu_bos_at_2_max": 0.806,
    "_relu_bos_gap_2": 0.0012,
    "relu_bos_share_min": 0.25,
    "relu_bos_share_max": 0.36,
    "relu_value_ratio_min": 0.31,
    "relu_value_ratio_max": 0.35,
    "soft_sink_rate": 1.0,
    "relu_sink_rate": 0.0,
    "n_before_10": 2,
    "min_lead": 97,
    "sink_step": 386,
    "loss_step_10": 489,
    "relu_history_max_bos": 0.002,
    "relu_first_bos": 0.0009,
    "ex1_key_gap": 0.0011,
    "ex1_row_gap": 0.0026,
    "ex1_bos_trigger": 0.0017,
    "ex1_bos_rest": 0.9995,
    "_ex1_positions": tuple(range(2, 16)),
    "ex2_parked": 0.997,
    "ex2_soft_out": 0.0018,
    "ex2_relu_mass": 0.0,
    "ex2_relu_out": 0.0,
    "ex2_flagless_bos": 0.14,
    "ex2_flagless_relu": 0.051,
    "ex3_soft_rest": 1.3,
    "ex3_soft_trigger": 9.5e-6,
    "ex3_relu_rest": 0.0,
    "ex3_relu_trigger": 0.045,
    "ex3_relu_trigger_max": 0.049,
    "ex3_relu_rms_min": 0.212,
    "ex3_relu_rms_max": 0.221,
    "ex3_scale_only": 0.053,
    "ex3_rescaled": 0.0028,
    "ex3_both_fixed": 2.0e-5,
    "ex3_bos_back_min": 0.053,
    "ex3_bos_back_max": 0.0535,
    "ex3_soft_avg_norm": 1.318,
    "ex3_soft_avg_share": 0.573,
    "ex3_target_norm": 1.166,
    "ex3_bias_value_gap": 0.0021,
    "sink_share_min": 0.39,
    "sink_share_max": 0.56,
    "init_trigger_gap": 0.0027,
    "init_rel_err_rest": 5.0e-5,
    "zero_loss": 0.00574,
    "first_loss_mean": 0.00573,
    "soft_first_bos_gap": 8.4e-4,
    "uniform_bos": "0.1605",  # as printed, to four figures
    "_uniform_bos": 0.16046,
    "init_value_max": 0.0172,
    "trained_value_min": 2.3,
    "init_value_ratio_min": 0.229,
    "bos_shrink_max": 0.21,
}
BREAKS = {  # claim -> changes of the measures, each of which makes it false
    "softmax-parks": [{"soft_min_bos_row": 0.98}, {"soft_min_bos": 0.998}],
    "parks-by-threshold": [
        {"_park_mass": 0.3, "park_mass": "0.3"},  # not the book's mark
        {"park_mass": "0.50"},  # not the mark as printed
        {"soft_min_bos": 0.4},
        {"relu_max_bos": 0.5},
    ],
    "sink-is-a-no-op": [{"soft_max_value_ratio": 0.2}],
    "relu-switches-off": [{"relu_max_row_mass": 0.05}],
    "relu-exactly-off": [{"relu_max_row_mass": 1e-6}],
    "relu-off-at-bos-row": [{"relu_row0_max": 1e-7}, {"relu_row0_max": 0.3}],
    "plain-loop-matches": [
        {"plain_gap": 2e-4},
        {"plain_gap": None},
        {"_plain_rules": ("softmax",)},
        {"_plain_rules": ()},
    ],
    "both-solve-it": [{"all_stopped": False}, {"max_rel_err": 2e-3}, {"_max_steps": 20001}],
    "test-error-twice-threshold": [
        {"test_linf_ratio": 1.2},
        {"test_linf_ratio": 3.0},
        {"max_test_linf": "0.010"},  # two figures: 0.010 / 0.005 reads 2.0, not the 2.1 printed
        {"max_test_linf": "0.0109", "_max_test_linf": 0.0109},  # 0.0109 / 0.005 reads 2.2, not the 2.1 printed
        {"_stop_linf": 1e-3},
    ],
    "trigger-row-averages": [{"trigger_row_mean": 0.2}, {"trigger_row_spread": 0.1}, {"trigger_key_gap": 0.02}],
    "relu-on-at-trigger": [{"relu_trigger_mass": 0.1}, {"relu_trigger_bos_fig": 0.0}, {"relu_trigger_bos_fig": 2.0}],
    "relu-bos-at-trigger": [
        {"_relu_bos_c": (0.5, 1.613)},
        {"_relu_bos_c": (1.143, 2.5)},
        {"_relu_bos_exact": 1e-3},
        {"_relu_bos_c_noise": 0.2},
        {"_relu_bos_gap_2": 0.01},
    ],
    "relu-bos-carries-trigger": [
        {"relu_bos_share_min": 0.1},
        {"relu_bos_share_max": 0.6},
        {"relu_value_ratio_min": 0.1},
        {"relu_value_ratio_max": 0.6},
    ],
    "sinks-by-gu": [{"relu_sink_rate": 0.5}, {"soft_sink_rate": 0.9}],
    "sink-forms-early": [{"n_before_10": 1}, {"min_lead": -3}, {"min_lead": None}, {"loss_step_10": 300}],
    "untrained-outputs-nothing": [
        {"init_trigger_gap": 0.2},
        {"init_rel_err_rest": 0.01},
        {"first_loss_mean": 0.007},
        {"first_loss_mean": 0.005},
    ],
    "starts-uniform": [{"soft_first_bos_gap": 0.02}, {"uniform_bos": "0.16"}],  # the centre not as printed
    "values-grow-bos-shrinks": [
        {"trained_value_min": 1.0},
        {"bos_shrink_max": 1.2},
        {"init_value_ratio_min": 0.1},
        {"soft_max_value_ratio": 0.06},
    ],
    "sink-forms-midway": [{"sink_share_min": 0.1}, {"sink_share_max": 0.9}, {"sink_share_min": float("nan")}],
    "relu-never-parks": [{"relu_history_max_bos": 0.3}, {"relu_first_bos": 0.002}],
    "ex1-averages-anywhere": [
        {"ex1_key_gap": 0.02},
        {"ex1_row_gap": 0.02},
        {"ex1_bos_trigger": 0.1},
        {"ex1_bos_rest": 0.9},
        {"_ex1_positions": (2, 4, 11, 15)},  # four positions, not every one the task draws
        {"_ex1_positions": tuple(range(2, 15))},  # 15 left out
    ],
    "ex2-no-trigger": [{"ex2_parked": 0.9}, {"ex2_soft_out": 0.1}, {"ex2_relu_mass": 1e-6}, {"ex2_relu_out": 1e-6}],
    "ex2-flagless": [{"ex2_flagless_bos": 0.9}, {"ex2_flagless_relu": 0.3}],
    "ex3-no-bos": [
        {"ex3_soft_rest": 0.9},
        {"ex3_relu_rest": 1e-4},
        {"ex3_soft_trigger": 0.05},
        {"ex3_relu_trigger": 0.03},
        {"ex3_relu_trigger_max": 0.07},
        {"ex3_relu_rms_min": 0.17},
        {"ex3_relu_rms_max": 0.24},
    ],
    "ex3-scale": [
        {"ex3_rescaled": 0.006},
        {"ex3_both_fixed": 2e-4},
        {"ex3_bos_back_min": 0.051},
        {"ex3_bos_back_max": 0.055},
        {"ex3_relu_trigger_max": 0.0531},
    ],
    "ex3-long-average": [
        {"ex3_soft_avg_norm": 1.1},
        {"ex3_soft_avg_share": 0.45},
        {"ex3_bias_value_gap": 0.2},
    ],
}


def test_every_chapter_1_claim_holds_on_good_measures_and_fails_when_its_number_moves():
    ids = [c.id for c in ch01.CHAPTER.claims]
    assert sorted(ids) == sorted(BREAKS), "every claim has a test that breaks it"
    for c in ch01.CHAPTER.claims:
        assert c.run(GOOD)[0], c.id
        for change in BREAKS[c.id]:
            broken = {**GOOD, **change}
            assert not c.run(broken)[0], (c.id, change)
            others = [o.id for o in ch01.CHAPTER.claims if o.id != c.id and not o.run(broken)[0]]
            assert c.id != "trigger-row-averages" or others == []


def test_chapter_1_glues_the_bounds_it_states_on_their_safe_side():
    """Chapter 1's measures are as measured: its text states each bound after a bound word,
    so gluing rounds it toward its safe side (attnsink.claims.bounds)."""
    sides = bounds.stated_bounds(bounds.chapter_markdown("ch1"))
    lower = {"soft_min_bos", "soft_min_bos_row", "ex1_bos_rest", "ex2_parked", "ex3_soft_rest", "ex3_relu_trigger"}
    lower |= {"ex3_relu_rms_min"}
    upper = {"soft_max_value_ratio", "plain_gap", "max_rel_err", "trigger_key_gap", "relu_history_max_bos"}
    upper |= {"relu_first_bos", "ex1_key_gap", "ex1_row_gap", "ex1_bos_trigger", "ex2_soft_out", "ex2_flagless_bos"}
    upper |= {"ex2_flagless_relu", "ex3_soft_trigger", "ex3_relu_trigger_max", "ex3_relu_rms_max"}
    lower |= {"relu_bos_share_min", "relu_value_ratio_min", "init_value_ratio_min", "trained_value_min"}
    upper |= {"relu_bos_share_max", "relu_value_ratio_max", "init_value_max", "bos_shrink_max", "init_rel_err_rest"}
    assert {name: sides.get(name) for name in lower} == dict.fromkeys(lower, "lower")
    assert {name: sides.get(name) for name in upper} == dict.fromkeys(upper, "upper")
    assert bounds.glued_text(0.99744, "lower") == "0.997" and bounds.glued_text(0.99744, "upper") == "0.998"
    assert bounds.glued_text(0.0017656, "upper") == "0.0018" and bounds.glued_text(0.0017656, "lower") == "0.0017"
    assert bounds.glued_text(2.0571e-5, "upper") == "2.1 × 10⁻⁵" and bounds.glued_text(0.0018, "upper") == "0.0018"
    measured = dict.fromkeys(lower, 0.99744) | dict.fromkeys(upper, 0.0017656)
    assert bounds.wrong_side(measured, sides) == []
    # a bound glued as a string with its unit is not rounded when glued: the measures round it
    bos = {"c": [1.2, 1.5], "exact": [0.0], "noise": [0.0381, 0.0212], "at_2": [0.6], "gap_2": [0.0], "share": [0.3]}
    assert sides["park_mass"] == "lower"  # the mark: a string, glued as it is ("0.5")
    assert sides["relu_bos_c_noise"] == "upper" and ch01._relu_bos_measures(bos)["relu_bos_c_noise"] == "3.9%"


def test_chapter_1_keeps_what_it_measures_on_its_models_in_the_results_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNSINK_CACHE_DIR", str(tmp_path))
    result = fake_single_layer()
    first = ch01.measures(result)
    assert len(list(tmp_path.glob("*.pt"))) == 1  # head_measures, memoized

    def boom(*args):
        raise AssertionError("recomputed")

    monkeypatch.setattr(ch01, "_moved", boom)  # read from the cache: never called
    again = ch01.measures(result)
    for name in ("soft_min_bos_row", "ex1_key_gap", "ex2_parked", "ex3_scale_only", "init_value_max", "zero_loss"):
        assert again[name] == first[name]
    with pytest.raises(AssertionError, match="recomputed"):
        monkeypatch.setenv("ATTNSINK_CACHE_DIR", "")  # no cache: computed again
        ch01.measures(result)


def fake_single_layer(n=2, L=16):
    """single_layer's result, made up: softmax parks, ReLU is off, the sink forms at step 3
    (the models themselves are untrained)."""
    from attnsink.model import AttentionModel

    runs = []
    for rule in ("softmax", "relu"):
        for seed in range(n):
            runs.append(
                {
                    "attention": rule,
                    "seed": seed,
                    "bos_mass_nontrigger": 0.99 if rule == "softmax" else 0.0,
                    "attn_mass_nontrigger": 1.0 if rule == "softmax" else 0.0,
                    "bos_value_ratio": 0.001 if rule == "softmax" else 0.33,
                    "stopped_early": True,
                    "steps": 10 + seed,
                    "rel_err_trigger": 1e-5,
                    "rel_err_nontrigger": 1e-6,
                    "linf": 0.01,
                    "sink_rate": 1.0 if rule == "softmax" else 0.0,
                }
            )
    soft = torch.zeros(5, L, L)
    soft[:, :, 0] = 1.0
    soft[:, 7, 0] = 0.0
    soft[:, 7, 1:8] = 1 / 7
    relu = torch.zeros(5, L, L)
    relu[:, 7, 1:8] = 0.5
    relu[:, 7, 0] = 0.2
    steps = np.arange(10)

    def trained(bos, rule, seed):
        history = {"step": steps, "loss": 1.0 / (1 + steps) ** 3, "bos_mass": np.array(bos)[:, None, None]}
        model = AttentionModel(L, attention=rule, seed=seed)
        return SimpleNamespace(history=history, steps=10, seed=seed, model=model)

    sink = [0.16, 0.5, 0.8, 0.95] + [0.99] * 6  # starts at what uniform weights give
    return SimpleNamespace(
        runs=runs,
        settings=SimpleNamespace(stop_linf=5e-3, steps=20),
        figure_attn={"softmax": soft, "relu": relu},
        results={
            "softmax": [trained(sink, "softmax", s) for s in range(n)],
            "relu": [trained([0.0] * 10, "relu", s) for s in range(n)],
        },
    )


# the claims that read the trained models themselves (untrained in the fake)
READ_MODELS = {
    "softmax-parks",
    "relu-bos-at-trigger",
    "relu-bos-carries-trigger",
    "relu-switches-off",
    "relu-exactly-off",
    "relu-off-at-bos-row",
    "trigger-row-averages",
    "ex1-averages-anywhere",
    "ex2-no-trigger",
    "ex2-flagless",
    "ex3-no-bos",
    "ex3-scale",
    "ex3-long-average",
    "untrained-outputs-nothing",  # the fake's loss is not an untrained head's
    "values-grow-bos-shrinks",
}


def test_chapter_1_measures_read_the_runs():
    m = ch01.measures(fake_single_layer())
    assert m["n_seeds"] == 2 and m["soft_min_bos"] == pytest.approx(0.99) and m["relu_max_mass"] == 0
    assert m["_ex1_positions"] == tuple(range(2, 16)) and m["relu_row0_max"] >= 0  # every trigger position
    assert m["max_test_linf"] == "0.0100" and m["_max_test_linf"] == 0.01 and m["_stop_linf"] == 5e-3
    assert m["trigger_row_mean"] == pytest.approx(1 / 7) and m["trigger_row_spread"] == pytest.approx(0)
    assert m["relu_trigger_mass"] == pytest.approx(3.7)
    assert m["test_linf_ratio"] == pytest.approx(2.0) and m["relu_trigger_bos_fig"] == pytest.approx(0.2)
    # the loss is 1/(1+t)^3: down tenfold at t = 2 (1/27); the sink at t = 3, one step later
    assert (m["sink_step"], m["loss_step_10"], m["n_before_10"], m["min_lead"]) == (3, 2, 0, -1)
    assert list(m["_timing"].seed) == [0, 1]
    # what the models give: untrained heads, but every measure in its range
    assert 0 <= m["soft_min_bos_row"] <= m["soft_min_bos"] + 1e-6 and 0 <= m["ex2_parked"] <= 1
    assert m["_relu_bos_c_noise"] >= 0 and m["_relu_bos_exact"] < 1e-5  # j w is the clamped score, by construction
    assert 0 < m["ex3_scale_only"] < 1
    assert m["ex3_relu_rms_min"] == pytest.approx(m["ex3_relu_trigger"] ** 0.5)  # a root-mean-square ratio
    assert m["ex3_relu_rms_max"] == pytest.approx(m["ex3_relu_trigger_max"] ** 0.5) and m["park_mass"] == "0.5"
    assert m["ex3_scale_only"] == pytest.approx(0.053, abs=0.005)  # the 1/j scale alone, as in the text
    # untrained models: the fake's are their own initialisation, so nothing grew or shrank
    assert m["init_value_max"] >= m["trained_value_min"] and m["bos_shrink_max"] == pytest.approx(1)
    assert m["init_rel_err_rest"] < 1e-3 and m["init_trigger_gap"] < 0.05  # they output almost nothing
    assert m["zero_loss"] == pytest.approx(0.0057, abs=3e-4) and m["uniform_bos"] == "0.1605"
    assert m["ex3_both_fixed"] <= m["ex3_bos_back_max"] and m["sink_share_min"] == pytest.approx(0.3)
    assert m["plain_gap"] is None and m["_plain_rules"] == () and m["soft_steps"] == "10.5"  # a median of two
    both = ch01.measures(fake_single_layer(), plain_gap={"softmax": 1e-7, "relu": 3.2e-6})
    assert both["plain_gap"] == 3.2e-6 and both["_plain_rules"] == ("relu", "softmax")
    report = claims.run_claims("ch1", "full", fake_single_layer())
    assert {r["id"] for r in report.rows if not r["holds"]} <= READ_MODELS | {"sink-forms-early", "plain-loop-matches"}
    assert "sink-forms-early" in {r["id"] for r in report.failed}  # the fake's loss falls first


def test_a_sink_that_never_forms_counts_as_late():
    result = fake_single_layer()
    for r in result.results["softmax"]:
        r.history = {**r.history, "bos_mass": r.history["bos_mass"] * 0}
    m = ch01.measures(result)
    assert m["sink_step"] is None and m["n_before_10"] == 0 and m["min_lead"] is None
    assert "sink-forms-early" in {r["id"] for r in claims.run_claims("ch1", "full", result).failed}
