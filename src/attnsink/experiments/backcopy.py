"""A small GPT trained by next-token prediction on the Bigram-Backcopy language, whose
triggers are known, with softmax and with rules that can switch a head off
(:func:`backcopy`). Used in chapters 7 and 9."""

from __future__ import annotations

from .. import lm
from ..cache import memoized
from ..profiles import BACKCOPY, BACKCOPY_MODEL, BACKCOPY_NO_BOS, BACKCOPY_RULES, BACKCOPY_TASK
from .base import Context, ExperimentResult, experiment
from .text import train_gpts


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.backcopy_heads(result.runs)


@experiment("backcopy", BACKCOPY, figure=_figure, figure_name="heads")
def backcopy(ctx: Context) -> ExperimentResult:
    """A 2-layer, 4-head GPT trained on Bigram-Backcopy with each rule of
    :data:`~attnsink.profiles.BACKCOPY_RULES`, and each rule of
    :data:`~attnsink.profiles.BACKCOPY_NO_BOS` on the task without BOS.

    One record per (rule, bos, seed): the validation loss, Sink_1^eps and
    :func:`attnsink.lm.backcopy_metrics` (per head: weight on token 0 and the row's weight,
    at trigger and at ordinary queries). ``results`` maps (rule, bos) to the trained models.
    """
    models = [(rule, True) for rule in BACKCOPY_RULES] + [(rule, False) for rule in BACKCOPY_NO_BOS]
    tasks = {bos: lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos) for bos in (True, False)}
    recipe = lm.LMRecipe(steps=ctx.settings.steps, lr=ctx.settings.lr, batch_size=ctx.settings.batch_size)
    wanted = [(tasks[bos], rule, seed, recipe) for rule, bos in models for seed in ctx.settings.seed_ids]
    trained = iter(train_gpts(ctx, wanted, BACKCOPY_MODEL))
    metrics = memoized(lm.backcopy_metrics, cache_dir=ctx.cache_dir)  # minutes for the full profile: kept
    runs, results = [], {}
    for attention, bos in models:
        results[attention, bos] = []
        for seed in ctx.settings.seed_ids:
            model, history = next(trained)
            results[attention, bos].append(model)
            runs.append(
                {
                    "attention": attention,
                    "bos": bos,
                    "seed": seed,
                    "val_loss": float(history["val_loss"][-1]),
                    "sink": float(history["sink"][-1]),
                    **metrics(model, tasks[bos]),
                }
            )
    return ctx.result(runs, results=results, meta={"task": BACKCOPY_TASK, "model": BACKCOPY_MODEL})
