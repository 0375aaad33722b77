"""Chapters 4 and 5: residual models of several layers and heads (:func:`multi_layer`)."""

from __future__ import annotations

from ..profiles import MULTI_LAYER, SHAPES
from ..task import TriggerTask
from .base import Context, ExperimentResult, experiment


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.head_kinds(result.heads())


@experiment("multi_layer", MULTI_LAYER, figure=_figure, figure_name="heads")
def multi_layer(ctx: Context) -> ExperimentResult:
    """The paper's multi-layer experiment: residual softmax and ReLU models of 2 layers x 2
    heads and 4 layers x 4 heads (:data:`~attnsink.profiles.SHAPES`), several seeds.

    ``results`` and ``figure_attn`` (per-layer (N_TEST, heads, query, key) weights) are keyed
    by (rule, n_layers, n_heads); every run has one entry per head under ``heads``. Used in
    chapters 4 and 5 and by ``python -m attnsink reproduce multi_layer``.
    """
    task = TriggerTask(residual=True)
    jobs = {
        (attention, n_layers, n_heads): ctx.job(task, attention, n_layers=n_layers, n_heads=n_heads)
        for n_layers, n_heads in SHAPES
        for attention in ("softmax", "relu")
    }
    results, runs, figure_attn = ctx.train_many(jobs), [], {}
    for key, trained in results.items():
        new_runs, figure_attn[key] = ctx.record(trained, task)
        runs += new_runs
    return ctx.result(runs, task=task, results=results, figure_attn=figure_attn)
