"""A text run built to make softmax sink: the GPT of :func:`~attnsink.experiments.text_scale`
on all of its Python source, with its warmup and cosine decay, at the weight decay
:data:`~attnsink.profiles.CONTROL_WEIGHT_DECAY` (where Gu et al. (2025) found the most sink
heads, and where :func:`~attnsink.experiments.text_decay` found dormant heads on English),
softmax and ReLU (:func:`text_control`). Used in chapter 8."""

from __future__ import annotations

from .. import lm
from ..cache import memoized
from ..profiles import CONTROL_WEIGHT_DECAY, SCALE_TASK, TEXT_CONTROL, TEXT_MODEL, TEXT_RULES
from .base import Context, ExperimentResult, experiment
from .text import N_ANALYSIS, scale_recipe, text_heads, text_record, train_gpts


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.sink_over_training(result.runs)


@experiment("text_control", TEXT_CONTROL, figure=_figure, figure_name="sinks")
def text_control(ctx: Context) -> ExperimentResult:
    """A GPT of :data:`~attnsink.profiles.TEXT_MODEL` on all of
    :class:`attnsink.lm.PythonSource`'s training text with each rule of
    :data:`~attnsink.profiles.TEXT_RULES` (softmax first), trained by
    :func:`~attnsink.experiments.text.scale_recipe` at weight decay
    :data:`~attnsink.profiles.CONTROL_WEIGHT_DECAY`.

    One record per (rule, seed), as :func:`~attnsink.experiments.text_lm` keeps it
    (:func:`~attnsink.experiments.text.text_record`). ``results`` maps the rule to the
    trained models.
    """
    s = ctx.settings
    task = lm.PythonSource(**SCALE_TASK)
    recipe = scale_recipe(s, CONTROL_WEIGHT_DECAY)
    wanted = [(task, rule, seed, recipe) for rule in TEXT_RULES for seed in s.seed_ids]
    trained = iter(train_gpts(ctx, wanted, TEXT_MODEL))
    windows = lm.val_batch(task, N_ANALYSIS)  # the windows the history measured
    analysis = memoized(text_heads, cache_dir=ctx.cache_dir)  # the ablations take a while: kept
    runs, results = [], {}
    for attention in TEXT_RULES:
        results[attention] = []
        for seed in s.seed_ids:
            model, history = next(trained)
            results[attention].append(model)
            fields = {"attention": attention, "lr": s.lr, "weight_decay": CONTROL_WEIGHT_DECAY, "seed": seed}
            runs.append(text_record(fields, history, analysis(model, windows)))
    meta = {"task": SCALE_TASK, "model": TEXT_MODEL, "recipe": recipe.given()}
    return ctx.result(runs, results=results, meta=meta)
