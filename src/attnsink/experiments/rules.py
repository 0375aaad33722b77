"""Chapter 6: every attention rule, on the task with BOS and without it."""

from __future__ import annotations

import pandas as pd

from ..metrics import evaluate
from ..profiles import FIGURE_TRIGGER_POS, N_TEST, VARIANTS
from ..task import TriggerTask
from .base import Context, ExperimentResult, experiment, run_record

# What the theory predicts, written down before any training: rules whose rows must sum to
# 1 (the simplex) need a content-free token to park on, so they sink when BOS is there and
# cannot solve the task without it; clipped softmax ("partial") keeps a row sum between
# 1 + CLIP_GAMMA * i and 1 at row i (fewer than 34 keys), so the sink inequality still
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
    results, runs, figure_attn = {}, [], {}
    for bos in (True, False):
        task = TriggerTask(bos=bos)
        for attention in rules:
            trained = ctx.train(task, attention)
            results[attention, bos] = trained
            for r in trained:
                record = run_record(r, evaluate(r.model, task, n=N_TEST))
                runs.append({**record, "no_bos": not bos, "prediction": VARIANT_RULES[attention]})
            shown = evaluate(trained[0].model, task, n=N_TEST, trigger_pos=FIGURE_TRIGGER_POS)
            figure_attn[attention, bos] = shown.attn[0][:, 0]
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
