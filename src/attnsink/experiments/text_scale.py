"""Does more text make a small GPT's softmax heads sink? The GPT of :func:`~attnsink.experiments.text_lm`
on Python source (:class:`attnsink.lm.PythonSource`, ten times chapter 8's text), with a
warmup and a cosine decay, on all of its training text and on a sample of about chapter 8's
size spread over it (:class:`attnsink.lm.PythonSample`; :func:`text_scale`). Used in chapter 8."""

from __future__ import annotations

from .. import lm
from ..cache import memoized
from ..profiles import SCALE_CHARS, SCALE_TASK, SCALE_WEIGHT_DECAY, TEXT_MODEL, TEXT_SCALE
from .base import Context, ExperimentResult, experiment
from .text import N_ANALYSIS, scale_recipe, text_heads, train_gpts


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.sink_over_tokens(result.runs)


@experiment("text_scale", TEXT_SCALE, figure=_figure, figure_name="sinks")
def text_scale(ctx: Context) -> ExperimentResult:
    """A softmax GPT of :data:`~attnsink.profiles.TEXT_MODEL` on Python source, trained on
    each amount of text of :data:`~attnsink.profiles.SCALE_CHARS` (``None``: all of it; a
    number: that many characters in stretches spread over all of it, :class:`attnsink.lm.PythonSample`) with
    AdamW (weight decay :data:`~attnsink.profiles.SCALE_WEIGHT_DECAY` on the matrices), a
    linear warmup over :data:`~attnsink.profiles.SCALE_WARMUP` of the steps and a cosine
    decay to a tenth of the rate.

    One record per (amount, seed): ``train_chars`` (the characters the training windows come
    from), the final validation loss and Sink_1^eps, each head's mean weight on the first
    token (``first_mean``), the rest of :func:`~attnsink.experiments.text.text_heads`'
    per-head record (what each head writes at its sink rows, by ablation, and which heads
    are trigger-conditional), and the ``history`` of these every :data:`~attnsink.experiments.text.TEXT_EVERY`
    steps with the tokens seen so far (``tokens``: steps x batch x predicted positions) and the
    passes over the text they make (``epochs``). ``results`` maps the amount to the models.
    """
    s = ctx.settings
    recipe = scale_recipe(s, SCALE_WEIGHT_DECAY)
    tasks = {
        chars: lm.PythonSource(**SCALE_TASK) if chars is None else lm.PythonSample(**SCALE_TASK, train_chars=chars)
        for chars in SCALE_CHARS
    }
    wanted = [(tasks[chars], "softmax", seed, recipe) for chars in SCALE_CHARS for seed in s.seed_ids]
    trained = iter(train_gpts(ctx, wanted, TEXT_MODEL))
    per_step = s.batch_size * (SCALE_TASK["seq_len"] - 1)  # BOS is never a target
    analysis = memoized(text_heads, cache_dir=ctx.cache_dir)  # the ablations take a while: kept
    runs, results = [], {}
    for chars in SCALE_CHARS:
        task = tasks[chars]
        size = chars if chars is not None else int(len(task.encoded()[0]) * (1 - task.val_fraction))
        results[chars] = []
        for seed in s.seed_ids:
            model, history = next(trained)
            results[chars].append(model)
            tokens = history["step"] * per_step
            heads = analysis(model, lm.val_batch(task, N_ANALYSIS))  # the windows the history measured
            runs.append(
                {
                    "attention": "softmax",
                    "train_chars": size,
                    "seed": seed,
                    "val_loss": float(history["val_loss"][-1]),
                    "sink": float(history["sink"][-1]),
                    "first_mean": history["first_mean"][-1].tolist(),
                    **{k: v for k, v in heads.items() if k not in ("sink", "first_mean")},
                    "history": {
                        "step": history["step"].tolist(),
                        "tokens": tokens.tolist(),
                        "epochs": (tokens / size).tolist(),
                        "val_loss": history["val_loss"].tolist(),
                        "sink": history["sink"].tolist(),
                        "first_mean": history["first_mean"].tolist(),
                    },
                }
            )
    pieces = sorted({t.pieces for t in tasks.values() if isinstance(t, lm.PythonSample)})
    meta = {
        "task": SCALE_TASK,
        "model": TEXT_MODEL,
        "recipe": recipe.given(),
        "chars": list(SCALE_CHARS),
        "pieces": pieces,
    }
    return ctx.result(runs, results=results, meta=meta)
