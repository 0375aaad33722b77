"""Chapter 5: the paper's 2 x 2 residual models with the blocks it leaves out, an MLP and
pre-LayerNorm (:func:`blocks`)."""

from __future__ import annotations

from ..profiles import BLOCKS, BLOCKS_SETTINGS
from ..task import TriggerTask
from .base import Context, ExperimentResult, experiment


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.head_kinds(result.heads())


@experiment("blocks", BLOCKS_SETTINGS, figure=_figure, figure_name="heads")
def blocks(ctx: Context) -> ExperimentResult:
    """Beyond the paper's architecture: 2 x 2 residual models with an MLP block, pre-LayerNorm,
    or both (:data:`~attnsink.profiles.BLOCKS`), softmax and ReLU, with the multi-layer recipe.

    Keys are (rule, block name); every run records its block under ``blocks``. Used in
    chapter 5 and by ``python -m attnsink reproduce blocks``.
    """
    task = TriggerTask(residual=True)
    jobs = {
        (attention, name): ctx.job(task, attention, n_layers=2, n_heads=2, **arch)
        for name, arch in BLOCKS.items()
        for attention in ("softmax", "relu")
    }
    results, runs, figure_attn = ctx.train_many(jobs), [], {}
    for (attention, name), trained in results.items():
        new_runs, figure_attn[attention, name] = ctx.record(trained, task)
        runs += [{**r, "blocks": name} for r in new_runs]
    return ctx.result(runs, task=task, results=results, figure_attn=figure_attn)
