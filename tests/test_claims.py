"""The claims mechanism (attnsink.claims) and chapter 1's claims, on small synthetic inputs."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnsink import claims
from attnsink.claims import base, ch01
from attnsink.prose import readable


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
    "soft_min_bos": 0.999,
    "soft_max_value_ratio": 4e-4,
    "relu_max_mass": 0.0,
    "relu_max_bos": 0.0,
    "all_stopped": True,
    "max_rel_err": 2e-5,
    "trigger_keys": 7,
    "trigger_row_mean": 0.1428,
    "trigger_row_spread": 1e-4,
    "relu_trigger_mass": 3.3,
    "soft_sink_rate": 1.0,
    "relu_sink_rate": 0.0,
    "n_before_100": 2,
    "relu_history_max_bos": 0.002,
}
BREAKS = {  # claim -> a change of the measures that makes it false
    "softmax-parks": {"soft_min_bos": 0.9},
    "sink-is-a-no-op": {"soft_max_value_ratio": 0.2},
    "relu-switches-off": {"relu_max_mass": 0.05},
    "relu-exactly-off": {"relu_max_mass": 1e-6},
    "both-solve-it": {"all_stopped": False},
    "trigger-row-averages": {"trigger_row_mean": 0.2},
    "relu-on-at-trigger": {"relu_trigger_mass": 0.1},
    "sinks-by-gu": {"relu_sink_rate": 0.5},
    "sink-forms-early": {"n_before_100": 1},
    "relu-never-parks": {"relu_history_max_bos": 0.3},
}


def test_every_chapter_1_claim_holds_on_good_measures_and_fails_when_its_number_moves():
    ids = [c.id for c in ch01.CHAPTER.claims]
    assert sorted(ids) == sorted(BREAKS), "every claim has a test that breaks it"
    for c in ch01.CHAPTER.claims:
        assert c.run(GOOD)[0], c.id
        broken = {**GOOD, **BREAKS[c.id]}
        assert not c.run(broken)[0], c.id
        others = [o.id for o in ch01.CHAPTER.claims if o.id != c.id and not o.run(broken)[0]]
        assert c.id != "trigger-row-averages" or others == []


def fake_single_layer(n=2, L=16):
    """single_layer's result, made up: softmax parks, ReLU is off, the sink forms at step 3."""
    runs = []
    for rule in ("softmax", "relu"):
        for seed in range(n):
            runs.append(
                {
                    "attention": rule,
                    "seed": seed,
                    "bos_mass_nontrigger": 0.99 if rule == "softmax" else 0.0,
                    "attn_mass_nontrigger": 1.0 if rule == "softmax" else 0.0,
                    "bos_value_ratio": 0.001,
                    "stopped_early": True,
                    "steps": 10 + seed,
                    "rel_err_trigger": 1e-5,
                    "rel_err_nontrigger": 1e-6,
                    "linf": 0.006,
                    "sink_rate": 1.0 if rule == "softmax" else 0.0,
                }
            )
    soft = torch.zeros(5, L, L)
    soft[:, :, 0] = 1.0
    soft[:, 7, 0] = 0.0
    soft[:, 7, 1:8] = 1 / 7
    relu = torch.zeros(5, L, L)
    relu[:, 7, 1:8] = 0.5
    steps = np.arange(10)

    def trained(bos):
        history = {"step": steps, "loss": 1.0 / (1 + steps) ** 3, "bos_mass": np.array(bos)[:, None, None]}
        return SimpleNamespace(history=history, steps=10)

    sink = [0.1, 0.5, 0.8, 0.95] + [0.99] * 6
    return SimpleNamespace(
        runs=runs,
        figure_attn={"softmax": soft, "relu": relu},
        results={"softmax": [trained(sink)] * n, "relu": [trained([0.0] * 10)] * n},
    )


def test_chapter_1_measures_read_the_runs():
    m = ch01.measures(fake_single_layer())
    assert m["n_seeds"] == 2 and m["soft_min_bos"] == pytest.approx(0.99) and m["relu_max_mass"] == 0
    assert m["trigger_row_mean"] == pytest.approx(1 / 7) and m["trigger_row_spread"] == pytest.approx(0)
    assert m["relu_trigger_mass"] == pytest.approx(3.5) and m["soft_steps"] == 10
    # the loss is 1/(1+t)^3: down tenfold at t = 2 (1/27), a hundredfold at t = 4 (1/125); sink at t = 3
    assert (m["sink_step"], m["loss_step_10"], m["loss_step_100"]) == (3, 2, 4)
    assert (m["n_before_10"], m["n_before_100"]) == (0, 2)
    report = claims.run_claims("ch1", "full", fake_single_layer())
    assert {r["id"] for r in report.rows if not r["holds"]} == set()


def test_a_sink_that_never_forms_counts_as_late():
    result = fake_single_layer()
    result.results["softmax"] = [
        SimpleNamespace(history={**r.history, "bos_mass": r.history["bos_mass"] * 0}, steps=10)
        for r in result.results["softmax"]
    ]
    m = ch01.measures(result)
    assert m["sink_step"] is None and m["n_before_100"] == 0
    assert "sink-forms-early" in {r["id"] for r in claims.run_claims("ch1", "full", result).failed}
