"""Chapter 6: every attention rule, on the task with BOS and without it."""

from __future__ import annotations

import pandas as pd

from ..profiles import VARIANTS
from ..task import TriggerTask
from .base import Context, ExperimentResult, experiment

# What the theory predicts, written down before any training: rules whose rows must sum to
# 1 (the simplex) need a content-free token to park on, so they sink when BOS is there and
# cannot solve the task without it; clipped softmax ("partial") keeps a row sum between
# 1 + CLIP_GAMMA * i and 1 at row i (fewer than 35 keys), so the sink inequality still
# demands a sink of at least about 1 + CLIP_GAMMA * i; rules with an "off" state do not need BOS.
VARIANT_RULES = {
    "softmax": "simplex",
    "sigmoid_norm": "simplex",
    "clipped_softmax": "partial",
    "relu": "off state",
    "relu_visible": "off state",
    "softmax1": "off state",
    "sink_logit": "off state",
    "sigmoid": "off state",
    "gated": "off state",
}
"""Every rule of chapter 6 and the class the theory predicts for it (written down before any training)."""


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.variants_summary(result.runs)


@experiment("variants", VARIANTS, figure=_figure, figure_name="variants")
def variants(ctx: Context, *, rules: list[str] | None = None) -> ExperimentResult:
    """Train every rule of :data:`VARIANT_RULES` (or ``rules``) on the paper's task and on the
    task without BOS.

    ``results`` and ``figure_attn`` are keyed by (rule, bos). Used in chapters 2, 3 and 6
    and by ``python -m attnsink reproduce variants``.
    """
    rules = list(VARIANT_RULES) if rules is None else rules
    for rule in rules:
        if rule not in VARIANT_RULES:
            raise ValueError(f"rules must be drawn from {list(VARIANT_RULES)}, got {rule!r}")
    tasks = {bos: TriggerTask(bos=bos) for bos in (True, False)}
    results = ctx.train_many({(attention, bos): ctx.job(tasks[bos], attention) for bos in tasks for attention in rules})
    runs, figure_attn = [], {}
    for (attention, bos), trained in results.items():
        new_runs, attn = ctx.record(trained, tasks[bos])
        runs += [{**r, "no_bos": not bos, "prediction": VARIANT_RULES[attention]} for r in new_runs]
        figure_attn[attention, bos] = attn[0][:, 0]  # layer 0, head 0: (N_TEST, query, key)
    return ctx.result(runs, results=results, figure_attn=figure_attn, meta={"predictions": VARIANT_RULES})


def variants_table(result: ExperimentResult) -> pd.DataFrame:
    """One row per rule: its predicted class, then means over seeds on the task with BOS and
    on the task without it (columns suffixed "(no BOS)")."""

    def summary(df):
        g = df.groupby("attention", sort=False)
        return pd.DataFrame(
            {
                "BOS mass": g["bos_mass_nontrigger"].mean(),
                "attention mass": g["attn_mass_nontrigger"].mean(),
                "BOS share": g["bos_share_nontrigger"].mean(),
                "rel. err. trigger": g["rel_err_trigger"].mean(),
                "rel. err. non-trigger": g["rel_err_nontrigger"].mean(),
                "max error": g["linf"].max(),
                "steps (median)": g["steps"].median().astype(int),
                "stopped": g["stopped_early"].mean(),
            }
        )

    runs = result.frame()
    classes = runs.groupby("attention", sort=False)["prediction"].first().rename("class")
    with_bos = summary(runs[~runs["no_bos"]])
    no_bos = summary(runs[runs["no_bos"]]).add_suffix(" (no BOS)")
    return pd.concat([classes, with_bos, no_bos], axis=1)
