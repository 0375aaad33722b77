"""Chapter 1: the paper's central experiment, one-layer one-head softmax and ReLU models."""

from __future__ import annotations

from ..profiles import FIGURE_TRIGGER_POS, SINGLE_LAYER
from ..task import TriggerTask
from .base import Context, ExperimentResult, experiment


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.attention_mean_std(result.figure_attn, FIGURE_TRIGGER_POS)


@experiment("single_layer", SINGLE_LAYER, figure=_figure, figure_name="figure3")
def single_layer(ctx: Context) -> ExperimentResult:
    """One-layer one-head softmax and ReLU models on the paper's task, several seeds.

    ``results`` maps "softmax" and "relu" to one trained model per seed; ``figure_attn``
    maps them to seed 0's (N_TEST, query, key) weights, the panels of the paper's Figure 3.
    Used in chapter 1 and by ``python -m attnsink reproduce single_layer``.
    """
    task = TriggerTask()
    results = ctx.train_many({attention: ctx.job(task, attention) for attention in ("softmax", "relu")})
    runs, figure_attn = [], {}
    for attention, trained in results.items():
        new_runs, attn = ctx.record(trained, task)
        runs += new_runs
        figure_attn[attention] = attn[0][:, 0]  # layer 0, head 0: (N_TEST, query, key)
    return ctx.result(runs, task=task, results=results, figure_attn=figure_attn)
