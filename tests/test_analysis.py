"""The analyses behind chapters 3 to 5's tables, on models whose answers are known."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from attnsink import AttentionModel, TriggerTask
from attnsink import analysis as an
from attnsink.construct import relu_solution, with_attention
from attnsink.theory import position_scale_error_bound


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    # head_terms keeps its results in the results cache: a fresh one per test
    monkeypatch.setenv("ATTNSINK_CACHE_DIR", str(tmp_path / "cache"))


def test_noise_free_rms_is_zero_for_the_exact_head_and_above_the_floor_for_a_position_scale():
    task = TriggerTask()
    exact = relu_solution(task)
    assert an.noise_free_trigger_rms(exact, task) < 1e-5
    visible = with_attention(exact, "relu_visible")
    floor = position_scale_error_bound(task, "relu_visible")
    assert floor > 0.01
    assert an.noise_free_trigger_rms(visible, task) >= floor - 1e-6


def test_relu_anatomy_of_the_construction_reads_its_weights():
    task = TriggerTask()
    batch = task.sample(600, generator=torch.Generator().manual_seed(0))
    table = an.relu_trigger_anatomy([SimpleNamespace(seed=0, model=relu_solution(task))], batch, positions=(3, 7))
    assert list(table["trigger j"]) == [3, 7]
    assert (table["j x weight on keys 1..j"] - 1).abs().max() < 1e-5  # 1/j on each of the keys 1..j
    assert table["spread over keys"].max() < 1e-6
    assert table["j x weight on BOS"].abs().max() < 1e-6
    assert (table["value map on noise (diagonal)"] - 1).abs().max() < 1e-6
    assert table["value map on noise (off-diagonal)"].max() < 1e-6
    assert an.bos_trigger_share(relu_solution(task), task, n=50) == pytest.approx(0.0, abs=1e-6)


def test_content_value_norm_measures_the_values():
    task = TriggerTask()
    batch = task.sample(50, generator=torch.Generator().manual_seed(1))
    model = relu_solution(task)
    with torch.no_grad():
        model.W_O.mul_(2.0)  # twice the value map: twice the lengths
    doubled = an.content_value_norm(model, batch)
    assert doubled == pytest.approx(2 * an.content_value_norm(relu_solution(task), batch), rel=1e-5)


def test_cancelling_table_shows_the_error_vanishing_with_the_margin():
    table = an.cancelling_table(TriggerTask(residual=True), margins=(0.0, 20.0))
    assert table["largest |error|"].iloc[0] > 1e-2 > 1e-5 > table["largest |error|"].iloc[1]
    assert table["largest gap to 1/(i+1), non-trigger rows"].max() < 1e-6
    assert table["head 2's BOS weight at the trigger (min)"].iloc[1] > 1 - 1e-6


def test_bound_check_counts_every_triple_and_finds_no_violation():
    task = TriggerTask(residual=True)
    model = AttentionModel(16, 2, 2, residual=True, seed=0, init_std=0.25)
    check = an.bound_check(model, task, n=4, iters=300)
    assert check["(sequence, row, head) triples"] == 4 * (task.seq_len - 2) * 2 * 2  # rows 1.., trigger's out
    assert check["violations"] == 0
    terms = an.head_terms(model, task, n=4, iters=300)
    assert set(terms["layer"]) == {0, 1} and set(terms["head"]) == {0, 1}
    assert ((terms["lhs"] - terms["mass_off_bos"] * terms["d_lower"]).abs() < 1e-12).all()


def test_trained_terms_per_head_and_cancellation_summary_follow_the_result():
    task = TriggerTask(residual=True)
    models = {0: AttentionModel(16, 2, 2, residual=True, seed=0), 1: AttentionModel(16, 2, 2, residual=True, seed=1)}
    result = SimpleNamespace(
        task=task,
        results={
            ("softmax", 2, 2): [SimpleNamespace(seed=s, model=m) for s, m in models.items()],
            ("relu", 2, 2): [SimpleNamespace(seed=0, model=AttentionModel(16, 2, 2, attention="relu", residual=True))],
        },
    )
    terms = an.trained_head_terms(result, n=3, iters=200)
    assert set(terms["model"]) == {"2 x 2"} and set(terms["seed"]) == {0, 1}  # the relu model left out
    heads = pd.DataFrame(
        [
            {
                "n_layers": 2,
                "n_heads": 2,
                "seed": s,
                "layer": layer,
                "head": h,
                "kind": "diffuse" if (s, layer, h) == (1, 1, 1) else "sink",
            }
            for s in (0, 1)
            for layer in (0, 1)
            for h in (0, 1)
        ]
    )
    per_head = an.per_head_terms(terms, heads)
    assert len(per_head) == 8 and (per_head["kind"] == "diffuse").sum() == 1
    assert ((per_head["bos_mass"] >= 0) & (per_head["bos_mass"] <= 1)).all()
    summary = an.cancellation_summary(result, per_head)
    assert list(summary["seed"]) == [0, 1]
    assert list(summary["diffuse"]) == [0, 1] and list(summary["sink"]) == [4, 3]
    assert summary["mean move, diffuse"].isna().iloc[0] and summary["mean move, diffuse"].notna().iloc[1]


def test_kinds_phrase_and_counts():
    assert an.kinds_phrase(pd.Series(["sink"] * 4), 2) == "all 4 heads of the 2 seeds are sinks"
    mixed = an.kinds_phrase(pd.Series(["sink", "sink", "diffuse"]), 1)
    assert mixed == "of the 3 heads of the one seed, 2 are sinks, 1 is diffuse"
    three = an.kinds_phrase(pd.Series(["off", "sink", "off"]), 3)
    assert three == "of the 3 heads of the 3 seeds, 2 are off, 1 is a sink"
    assert an.kinds_phrase(pd.Series(["dormant"] * 2), 2) == "all 2 heads of the 2 seeds are dormant"
    with pytest.raises(ValueError, match="seeds"):
        an.kinds_phrase(pd.Series(["sink"]), 0)
    assert an.kind_counts(["off", "sink", "off"]) == "2 off, 1 sink"
    assert an.spread(pd.Series([0.0, 1.0])) == "0.500 (0.000–1.000)"
    assert an.mean_range([-0.5, 0.25]) == "−0.125 (−0.500–0.250)"


def test_tables_of_records():
    heads = pd.DataFrame(
        {
            "model": ["m"] * 3,
            "layer": 0,
            "head": 0,
            "bos_mass_nontrigger": [0.9, 0.95, 1.0],
            "attn_mass_nontrigger": 1.0,
            "trigger_content_weight": 1.0,
            "trigger_bos_weight": 0.0,
            "kind": ["sink", "sink", "dormant"],
        }
    )
    spread = an.head_spread(heads)
    assert spread.loc[("m", 0, 0), "BOS mass"] == "0.950 (0.900–1.000)"
    assert spread.loc[("m", 0, 0), "kinds over seeds"] == "sink ×2, dormant ×1"
    runs = pd.DataFrame(
        {
            "swept": ["lr", "lr", "seq_len"],
            "attention": "softmax",
            "lr": [1e-3, 1e-3, 1e-3],
            "seq_len": [16, 16, 32],
            "steps": [100, 300, 50],
            "bos_mass_nontrigger": [0.99, 0.98, 1.0],
            "attn_mass_nontrigger": 1.0,
            "stopped_early": [True, False, True],
            "linf": [0.01, 0.02, 0.0],
        }
    )
    summary = an.sweep_summary(runs)
    assert summary.loc[("lr", "softmax"), "median_steps"] == 200
    assert summary.loc[("lr", "softmax"), "stopped"] == 0.5
    assert an.median_steps(runs, "seq_len")["softmax", 32] == 50
    with pytest.raises(ValueError, match="parameter"):
        an.median_steps(runs, "d_model")
    result = SimpleNamespace(
        runs=[
            {
                "attention": "softmax",
                "blocks": "mlp",
                "max_head_bos_mass_nontrigger": v,
                "linf": 0.1,
                "stopped_early": True,
                "heads": [{"kind": "sink"}],
            }
            for v in (0.95, 0.99)
        ],
        heads=lambda: pd.DataFrame({"attention": "softmax", "blocks": "mlp", "kind": ["sink", "sink", "off"]}),
    )
    blocks = an.blocks_summary(result)
    assert blocks.loc[("mlp", "softmax"), "largest head BOS mass (worst seed)"] == 0.95
    assert blocks.loc[("mlp", "softmax"), "kinds (all seeds)"] == "2 sink, 1 off"
    frame = an.runs_frame(result, label=lambda r: f"{r['attention']}+{r['blocks']}")
    assert list(frame["model"]) == ["softmax+mlp"] * 2 and list(frame["kinds"]) == ["1 sink"] * 2


def test_frames_behind_the_figures():
    import numpy as np

    history = {"step": np.array([0, 10]), "loss": np.array([1.0, 0.5]), "linf": np.array([2.0, 1.0])}
    history["bos_mass"] = np.array([[[0.2, 0.4]], [[0.8, 1.0]]])  # (steps, layers, heads)
    frame = an.history_frame({"softmax": [SimpleNamespace(seed=3, history=history)]})
    assert list(frame.columns) == ["attention", "seed", "step", "loss", "linf", "bos_mass"]
    assert list(frame["bos_mass"]) == pytest.approx([0.3, 0.9])  # averaged over heads
    assert set(frame["attention"]) == {"softmax"} and set(frame["seed"]) == {3}

    assert an.model_label({"attention": "softmax", "n_layers": 2, "n_heads": 4}) == "softmax 2x4"
    assert an.model_label({"attention": "relu", "n_layers": 2, "n_heads": 2, "blocks": "mlp"}) == "relu 2x2 + mlp"

    capped = pd.DataFrame({"cap": [0.5], "seed": [0], "sq_err_nontrigger_row": [0.2], "sq_bound_nontrigger_row": [0.1]})
    long = an.capped_error_frame(capped)
    assert dict(zip(long["quantity"], long["value"])) == {"measured": 0.2, "lower bound from the theorem": 0.1}

    runs = pd.DataFrame({"seq_len": [8, 16, 32, 16, 16], "d_model": [16, 16, 16, 8, 32]})
    at_defaults = an.grid_slice(runs, "seq_len", ["seq_len", "d_model"], {"seq_len": 16, "d_model": 16})
    assert list(at_defaults["seq_len"]) == [8, 16, 32]  # d_model held at 16
    assert len(an.grid_slice(runs, "seq_len", ["seq_len", "d_model"], {"d_model": 8})) == 5  # one value only: all


def test_block_standard_error_is_the_spread_of_block_means():
    from attnsink.analysis import block_standard_error

    rng = np.random.default_rng(0)
    v = rng.normal(size=1000)
    # independent values: about sigma / sqrt(n) for any block size
    for block in (1, 10):
        assert block_standard_error(v, block) == pytest.approx(1 / np.sqrt(1000), rel=0.25)
    assert block_standard_error(v, 1) == pytest.approx(v.std(ddof=1) / np.sqrt(1000))
    # a sequence whose neighbours are equal in runs of 10: blocks of 1 understate the error
    runs = np.repeat(rng.normal(size=100), 10)
    assert block_standard_error(runs, 10) > 2.5 * block_standard_error(runs, 1)
    assert block_standard_error(np.arange(25.0), 10) == pytest.approx(10 / np.sqrt(2) / np.sqrt(2))
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="block"):
            block_standard_error(v, bad)
    with pytest.raises(ValueError, match="two blocks"):
        block_standard_error(v[:15], 10)


def test_text_heads_frame_has_a_row_per_head_with_its_run():
    from attnsink.analysis import TEXT_HEAD_KEYS, text_heads_frame

    def run(rule, seed):
        base = np.arange(6.0).reshape(2, 3) + seed
        return {"attention": rule, "lr": 0.01, "weight_decay": 0.5, "seed": seed, **{k: base for k in TEXT_HEAD_KEYS}}

    df = text_heads_frame([run("softmax", 0), run("relu", 1)])
    assert len(df) == 12 and list(df.columns[:6]) == ["attention", "lr", "weight_decay", "seed", "layer", "head"]
    row = df[(df["attention"] == "relu") & (df["layer"] == 1) & (df["head"] == 2)].iloc[0]
    assert row["first_mean"] == 6.0 and row["ablate_first"] == 6.0 and row["weight_decay"] == 0.5


def test_seed_means_average_each_seed_then_give_the_spread_over_seeds():
    import pandas as pd

    from attnsink.analysis import seed_means

    frame = pd.DataFrame(
        {
            "model": ["a"] * 4 + ["b"] * 2,
            "seed": [0, 0, 1, 1, 0, 1],
            "x": [1.0, 3.0, 5.0, np.nan, 0.5, 0.25],
        }
    )
    out = seed_means(frame, ["model"], {"x": "mean x"}, digits=2)
    # model a: seed 0 averages 1 and 3 (2.0), seed 1 has only 5 (its NaN left out)
    assert out.loc["a", "mean x"] == "3.50 (2.00–5.00)"
    assert out.loc["b", "mean x"] == "0.38 (0.25–0.50)"
    assert list(out.index) == ["a", "b"]
    with pytest.raises(ValueError, match="'y'"):
        seed_means(frame, ["model"], {"y": "y"})


def test_health_frame_reads_one_row_per_run():
    from attnsink.analysis import health_frame

    run = {"attention": "softmax", "lr": 0.01, "weight_decay": 0.0, "seed": 0, "val_loss": 2.1}
    health = {"entropy": [[0.0, 0.01], [float("nan"), 2.0]], "query_norm": [80.0, 12.0], "collapsed_share": 2 / 3}
    frame = health_frame([{**run, "health": {**health, "collapsed": True}}])
    assert len(frame) == 1 and bool(frame.collapsed[0]) and frame.entropy[0] == 0.01 and frame.query_norm[0] == 80


def test_the_sign_test_is_exact_and_two_sided():
    from fractions import Fraction

    assert an.sign_test(5, 5) == Fraction(1, 16) == an.sign_test(0, 5)
    assert an.sign_test(4, 5) == Fraction(3, 8) == an.sign_test(1, 5)
    assert an.sign_test(3, 3) == Fraction(1, 4) and an.sign_test(9, 9) == Fraction(1, 256)
    assert an.sign_test(6, 6) == Fraction(1, 32)
    assert an.sign_test(3, 5) == 1 and an.sign_test(1, 2) == 1  # capped at 1
    assert an.sign_test(0, 0) == 1  # no untied pair, no evidence
    with pytest.raises(ValueError, match="between 0 and n"):
        an.sign_test(6, 5)
    with pytest.raises(ValueError, match="n"):
        an.sign_test(0, -1)
