"""Does weight decay make a small GPT's softmax heads sink on text? Chapter 8's GPT on its
English text at one learning rate and several weight decays, softmax and ReLU
(:func:`text_decay`): Gu et al. (2025) found the share of sink heads moved with weight decay,
not monotonically. Used in chapter 8."""

from __future__ import annotations

from .. import lm
from ..cache import memoized
from ..profiles import DECAY_RATES, TEXT_DECAY, TEXT_MODEL, TEXT_RULES, TEXT_TASK
from . import text
from .base import Context, ExperimentResult, experiment
from .text import N_ANALYSIS, text_heads, text_record, train_gpts


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.sink_over_training(result.runs)


@experiment("text_decay", TEXT_DECAY, figure=_figure, figure_name="sinks")
def text_decay(ctx: Context) -> ExperimentResult:
    """:func:`~attnsink.experiments.text_lm`'s GPT and text, with each rule of
    :data:`~attnsink.profiles.TEXT_RULES` at the profile's learning rate and each weight decay
    of :data:`~attnsink.profiles.DECAY_RATES` (AdamW's, on the matrices of the linear maps
    only, :func:`attnsink.lm.param_groups`). Everything else is :func:`text_lm`'s recipe, so
    the runs at its weight decay are its runs at that rate (the store and the cache share them).

    One record per (rule, weight decay, seed), with :func:`text_lm`'s fields: ``lr``,
    ``weight_decay``, the final validation loss, the per-head record of
    :func:`~attnsink.experiments.text.text_heads` and the ``history``. ``results`` maps
    (rule, weight decay) to the trained models.
    """
    task = lm.CharText(**TEXT_TASK)
    s = ctx.settings
    recipes = {
        wd: lm.LMRecipe(steps=s.steps, lr=s.lr, batch_size=s.batch_size, weight_decay=wd, every=text.TEXT_EVERY)
        for wd in DECAY_RATES
    }
    points = [(rule, wd) for wd in DECAY_RATES for rule in TEXT_RULES]
    wanted = [(task, rule, seed, recipes[wd]) for rule, wd in points for seed in s.seed_ids]
    trained = iter(train_gpts(ctx, wanted, TEXT_MODEL))
    windows = lm.val_batch(task, N_ANALYSIS)  # the windows the history measured
    analysis = memoized(text_heads, cache_dir=ctx.cache_dir)  # the ablations take a while: kept
    runs, results = [], {}
    for attention, wd in points:
        results[attention, wd] = []
        for seed in s.seed_ids:
            model, history = next(trained)
            results[attention, wd].append(model)
            fields = {"attention": attention, "lr": s.lr, "weight_decay": wd, "seed": seed}
            runs.append(text_record(fields, history, analysis(model, windows)))
    meta = {"task": TEXT_TASK, "model": TEXT_MODEL, "lr": s.lr, "weight_decays": list(DECAY_RATES)}
    return ctx.result(runs, results=results, meta=meta)
