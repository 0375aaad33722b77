"""Chapter 1's claims: a softmax head parks on BOS, a ReLU head switches off, on the paper's
one-layer task (:func:`attnsink.experiments.single_layer`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics import sink_timing
from ..profiles import FIGURE_TRIGGER_POS
from .base import Chapter

CHAPTER = Chapter("ch1")
BOTH = ("quick", "full")


@CHAPTER.measures
def measures(result) -> dict:
    """The numbers chapter 1 quotes, from :func:`~attnsink.experiments.single_layer`'s ``result``."""
    runs = pd.DataFrame(result.runs)
    soft, relu = runs[runs.attention == "softmax"], runs[runs.attention == "relu"]
    j = FIGURE_TRIGGER_POS
    row = result.figure_attn["softmax"][:, j, 1 : j + 1].mean(dim=0)  # (keys 1..j,): the trigger row, mean
    relu_row = result.figure_attn["relu"][:, j].sum(dim=-1)  # (sequences,): the ReLU trigger row's mass
    timing = pd.DataFrame(
        [
            {
                "sink": sink_timing(r.history)["step_sink"],
                "tenfold": sink_timing(r.history)["step_loss"],
                "hundredfold": sink_timing(r.history, loss_drop=0.01)["step_loss"],
                "stopped": r.steps,
            }
            for r in result.results["softmax"]
        ],
        dtype=float,
    )  # a step that never came is NaN: it comes before nothing

    def median(column) -> int | None:
        value = timing[column].median()
        return None if np.isnan(value) else int(value)

    return {
        "n_seeds": int(len(soft)),
        "soft_min_bos": float(soft.bos_mass_nontrigger.min()),
        "soft_max_value_ratio": float(soft.bos_value_ratio.max()),
        "relu_max_mass": float(relu.attn_mass_nontrigger.max()),
        "relu_max_bos": float(relu.bos_mass_nontrigger.max()),
        "all_stopped": bool(runs.stopped_early.all()),
        "soft_steps": int(soft.steps.median()),
        "relu_steps": int(relu.steps.median()),
        "max_rel_err": float(runs[["rel_err_trigger", "rel_err_nontrigger"]].max().max()),
        "max_test_linf": float(runs.linf.max()),
        "trigger_keys": j,
        "trigger_row_mean": float(row.mean()),
        "trigger_row_spread": float(row.max() - row.min()),
        "relu_trigger_mass": float(relu_row.mean()),
        "soft_sink_rate": float(soft.sink_rate.min()),
        "relu_sink_rate": float(relu.sink_rate.max()),
        "sink_step": median("sink"),
        "loss_step_10": median("tenfold"),
        "loss_step_100": median("hundredfold"),
        "n_before_10": int((timing.sink < timing.tenfold).sum()),
        "n_before_100": int((timing.sink < timing.hundredfold).sum()),
        "relu_history_max_bos": float(max(np.max(r.history["bos_mass"]) for r in result.results["relu"])),
        "_timing": timing,
    }


@CHAPTER.claim("softmax-parks", "Every softmax head puts at least 0.95 of each non-trigger row on BOS.", profiles=BOTH)
def _(m):
    return m["soft_min_bos"] >= 0.95, f"smallest BOS mass {m['soft_min_bos']:.4f}"


@CHAPTER.claim(
    "sink-is-a-no-op", "BOS's value is tiny: under 5% of a content token's, in every softmax head.", profiles=BOTH
)
def _(m):
    return m["soft_max_value_ratio"] < 0.05, f"largest ratio {m['soft_max_value_ratio']:.2g}"


@CHAPTER.claim("relu-switches-off", "Every ReLU head keeps at most 0.01 of weight in a non-trigger row.", profiles=BOTH)
def _(m):
    return m["relu_max_mass"] <= 0.01 and m["relu_max_bos"] <= 0.01, f"largest row mass {m['relu_max_mass']:.2g}"


@CHAPTER.claim("relu-exactly-off", "At the non-trigger positions the ReLU heads' weights are exactly zero.")
def _(m):
    return m["relu_max_mass"] == 0, f"largest row mass {m['relu_max_mass']:.2g}"


@CHAPTER.claim("both-solve-it", "Every model meets the stopping rule; relative errors stay below 10⁻³.", profiles=BOTH)
def _(m):
    return m["all_stopped"] and m[
        "max_rel_err"
    ] < 1e-3, f"all stopped: {m['all_stopped']}; largest {m['max_rel_err']:.2g}"


@CHAPTER.claim(
    "trigger-row-averages",
    "At the trigger, the softmax head spreads its weight evenly over keys 1 to 7.",
    profiles=BOTH,
)
def _(m):
    gap = abs(m["trigger_row_mean"] - 1 / m["trigger_keys"])
    return gap < 0.01 and m[
        "trigger_row_spread"
    ] < 0.05, f"mean {m['trigger_row_mean']:.4f} (1/7 = 0.1429), spread {m['trigger_row_spread']:.3f}"


@CHAPTER.claim("relu-on-at-trigger", "The ReLU head switches on at the trigger row.", profiles=BOTH)
def _(m):
    return m["relu_trigger_mass"] > 0.5, f"trigger row mass {m['relu_trigger_mass']:.2f}"


@CHAPTER.claim(
    "sinks-by-gu", "By Gu et al.'s threshold every softmax head is a sink and no ReLU head is.", profiles=BOTH
)
def _(m):
    return m["soft_sink_rate"] == 1 and m[
        "relu_sink_rate"
    ] == 0, f"softmax {m['soft_sink_rate']:.0%}, ReLU {m['relu_sink_rate']:.0%}"


@CHAPTER.claim("sink-forms-early", "The sink forms before the loss has fallen a hundredfold, in every seed.")
def _(m):
    return m["n_before_100"] == m["n_seeds"], f"{m['n_before_100']} of {m['n_seeds']} seeds"


@CHAPTER.claim("relu-never-parks", "No ReLU head ever puts more than 0.01 on BOS during training.", profiles=BOTH)
def _(m):
    return m["relu_history_max_bos"] <= 0.01, f"largest {m['relu_history_max_bos']:.2g}"
