"""A character-level GPT on English text, with softmax and with rules that can switch a head
off (:func:`text_lm`). Used in chapters 8 and 9."""

from __future__ import annotations

from .. import lm
from ..cache import memoized
from ..profiles import TEXT, TEXT_LRS, TEXT_MODEL, TEXT_RULES, TEXT_TASK, TEXT_WEIGHT_DECAY
from . import text
from .base import Context, ExperimentResult, experiment
from .text import N_ANALYSIS, text_heads, text_record, train_gpts


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.sink_over_training(result.runs)


@experiment("text_lm", TEXT, figure=_figure, figure_name="sinks")
def text_lm(ctx: Context) -> ExperimentResult:
    """A character-level GPT of :data:`~attnsink.profiles.TEXT_MODEL` on English text
    (:class:`attnsink.lm.CharText`), with each rule of :data:`~attnsink.profiles.TEXT_RULES`
    at each learning rate of :data:`~attnsink.profiles.TEXT_LRS`.

    One record per (rule, lr, seed): the final validation loss and Sink_1^eps; the history
    of both and of every head's mean weight on the first token (``history``, measured every
    :data:`~attnsink.experiments.text.TEXT_EVERY` steps on fixed validation windows); per head, on the same windows at
    the end, the first-token weight and the first token's value-norm ratio (``first_mean``,
    ``value_ratio``), and its share of the rows that carry weight (``first_share``, see
    :func:`attnsink.metrics.first_share`; a ReLU row need not sum to one); the share of its
    queries that are sink rows (``sink_rows``, :func:`attnsink.lm.sink_rows`) and what its
    output there is worth (``ablate_zero``, ``ablate_mean``, ``ablate_first``: :func:`attnsink.lm.ablate_heads`,
    NaN for a head with no sink row);
    :func:`attnsink.lm.conditional_heads` on :data:`~attnsink.experiments.text.N_ANALYSIS` validation windows
    (``heads``); and whether training collapsed (``health``, :func:`attnsink.lm.training_health`).
    ``results`` maps (rule, lr) to the trained models.
    """
    task = lm.CharText(**TEXT_TASK)
    s = ctx.settings
    recipes = {
        lr: lm.LMRecipe(
            steps=s.steps, lr=lr, batch_size=s.batch_size, weight_decay=TEXT_WEIGHT_DECAY, every=text.TEXT_EVERY
        )
        for lr in TEXT_LRS
    }
    points = [(rule, lr) for lr in TEXT_LRS for rule in TEXT_RULES]
    wanted = [(task, rule, seed, recipes[lr]) for rule, lr in points for seed in s.seed_ids]
    trained = iter(train_gpts(ctx, wanted, TEXT_MODEL))
    # train_lm's validation windows (the history ends here), read on the positions the models trained on
    windows = lm.val_batch(task, N_ANALYSIS)
    analysis = memoized(text_heads, cache_dir=ctx.cache_dir)  # the ablations take a while: kept
    runs, results = [], {}
    for attention, lr in points:
        results[attention, lr] = []
        for seed in s.seed_ids:
            model, history = next(trained)
            results[attention, lr].append(model)
            fields = {"attention": attention, "lr": lr, "weight_decay": TEXT_WEIGHT_DECAY, "seed": seed}
            runs.append(text_record(fields, history, analysis(model, windows)))
    meta = {"task": TEXT_TASK, "model": TEXT_MODEL, "weight_decay": TEXT_WEIGHT_DECAY, "lrs": list(TEXT_LRS)}
    return ctx.result(runs, results=results, meta=meta)
