"""Does a longer context make a small GPT's softmax heads sink? Barbero et al. (2025) found
first-token sinks grow with the training context. The GPT of :func:`~attnsink.experiments.text_scale`
on all of its Python source, with its recipe, at windows of
:data:`~attnsink.profiles.CONTEXT_LENGTHS` characters, each with about the same number of
characters per step, as whole windows allow (2,040 at 256, 2,016 at 64; :func:`text_context`).
Used in chapter 8."""

from __future__ import annotations

from dataclasses import replace

import torch

from .. import lm
from ..cache import memoized
from ..metrics import SINK_EPS
from ..profiles import CONTEXT_CHARS_PER_STEP, CONTEXT_LENGTHS, SCALE_WEIGHT_DECAY, TEXT_CONTEXT, TEXT_MODEL
from .base import Context, ExperimentResult, experiment
from .text import scale_recipe, text_record, train_gpts

N_CONTEXT = 64
"""Validation windows for :func:`context_heads` (fewer than chapter 8's 128: the windows are up to 4 times longer)."""


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.sink_over_training(result.runs)


def batch_for(seq_len: int) -> int:
    """The batch of windows of ``seq_len`` tokens that holds :data:`~attnsink.profiles.CONTEXT_CHARS_PER_STEP`
    characters (BOS is never a target: a window holds ``seq_len - 1`` of them)."""
    return max(1, round(CONTEXT_CHARS_PER_STEP / (seq_len - 1)))


@torch.no_grad()
def context_heads(model: lm.GPT, windows: torch.Tensor, near: int) -> dict:
    """Per head, on the validation ``windows`` (read on the positions the model trained on):
    the mean weight on the first token over queries 1 .. ``near`` - 1 (``first_near``: one
    query more than a model trained on windows of ``near`` tokens, BOS included, has after
    BOS; chapter 8 recomputes queries 1 .. ``near`` - 2 from the stored models in
    :mod:`attnsink.claims.ch08`) and over every query (``first_mean``);
    Sink_1^eps of both; and the first token's value norm over the median other token's
    (``value_ratio``); and what each head writes at its sink rows (:func:`attnsink.lm.sink_rows`),
    by :func:`attnsink.lm.ablate_heads` (``ablate_zero``, ``ablate_mean``, ``ablate_first``,
    nats per character, as chapter 8's other runs record it) and the share of queries that
    are sink rows (``sink_rows``)."""
    x = windows[:, :-1]
    m = lm.head_metrics(model, x)
    first = m["first_mass"]  # (layers, heads, query)
    near_mean = first[:, :, 1:near].mean(-1)
    rows = lm.sink_rows(lm.head_outputs(model, x)["weights"])
    ablation = lm.ablate_heads(model, windows, rows)
    return {
        "first_mean": m["first_mean"].tolist(),
        "first_near": near_mean.tolist(),
        "sink": m["sink"],
        "sink_near": float((near_mean > SINK_EPS).float().mean()),
        "value_ratio": m["value_ratio"].tolist(),
        "sink_rows": rows.float().mean((2, 3)).tolist(),
        "ablate_zero": ablation["zero"].tolist(),
        "ablate_mean": ablation["mean"].tolist(),
        "ablate_first": ablation["first"].tolist(),
    }


@experiment("text_context", TEXT_CONTEXT, figure=_figure, figure_name="sinks")
def text_context(ctx: Context) -> ExperimentResult:
    """A softmax GPT of :data:`~attnsink.profiles.TEXT_MODEL` on all of
    :class:`attnsink.lm.PythonSource`'s training text, trained by
    :func:`~attnsink.experiments.text.scale_recipe` at weight decay
    :data:`~attnsink.profiles.SCALE_WEIGHT_DECAY`, at each window length of
    :data:`~attnsink.profiles.CONTEXT_LENGTHS` with a batch of :func:`batch_for` windows.

    One record per (window, seed): the run's fields, :func:`~attnsink.experiments.text.text_record`'s
    history, and :func:`context_heads` on :data:`N_CONTEXT` validation windows. ``results``
    maps the window length to the models."""
    s = ctx.settings
    tasks = {n: lm.PythonSource(seq_len=n) for n in CONTEXT_LENGTHS}
    recipes = {n: replace(scale_recipe(s, SCALE_WEIGHT_DECAY), batch_size=batch_for(n)) for n in CONTEXT_LENGTHS}
    wanted = [(tasks[n], "softmax", seed, recipes[n]) for n in CONTEXT_LENGTHS for seed in s.seed_ids]
    trained = iter(train_gpts(ctx, wanted, TEXT_MODEL))
    analysis = memoized(context_heads, cache_dir=ctx.cache_dir)
    near = min(CONTEXT_LENGTHS)
    runs, results = [], {}
    for n in CONTEXT_LENGTHS:
        windows = lm.val_batch(tasks[n], N_CONTEXT)
        results[n] = []
        for seed in s.seed_ids:
            model, history = next(trained)
            results[n].append(model)
            fields = {
                "attention": "softmax",
                "seq_len": n,
                "batch_size": recipes[n].batch_size,
                "lr": s.lr,
                "weight_decay": SCALE_WEIGHT_DECAY,
                "seed": seed,
            }
            runs.append(text_record(fields, history, analysis(model, windows, near)))
    meta = {
        "model": TEXT_MODEL,
        "recipes": {str(n): r.given() for n, r in recipes.items()},
        "lengths": list(CONTEXT_LENGTHS),
    }
    return ctx.result(runs, results=results, meta=meta)
