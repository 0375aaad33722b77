"""Chapter 1: the paper's central experiment, one-layer one-head softmax and ReLU models."""

from __future__ import annotations

from ..metrics import evaluate
from ..profiles import FIGURE_TRIGGER_POS, N_TEST, SINGLE_LAYER
from ..task import TriggerTask
from .base import Context, ExperimentResult, experiment, run_record


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
    results, runs, figure_attn = {}, [], {}
    for attention in ("softmax", "relu"):
        results[attention] = ctx.train(task, attention)
        runs += [run_record(r, evaluate(r.model, task, n=N_TEST)) for r in results[attention]]
        shown = evaluate(results[attention][0].model, task, n=N_TEST, trigger_pos=FIGURE_TRIGGER_POS)
        figure_attn[attention] = shown.attn[0][:, 0]  # layer 0, head 0: (N_TEST, query, key)
    return ctx.result(runs, task=task, results=results, figure_attn=figure_attn)
