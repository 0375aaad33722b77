"""What a sink writes: every attention rule on the trigger task with a constant default
(:class:`~attnsink.task.ConstantTriggerTask`), where a head must write the constant c at
every row but the trigger instead of nothing."""

from __future__ import annotations

import torch

from ..metrics import ablate_trigger_heads, evaluate
from ..profiles import CONSTANT, CONSTANT_DEFAULT, FIGURE_TRIGGER_POS, N_TEST
from ..task import ConstantTriggerTask
from .base import Context, ExperimentResult, experiment

# What the theory predicts, written before training: a rule whose weight either goes to a
# token or to nothing (the simplex; a null, a phantom key or a gate, writes 0; so does the
# weight a clipped_softmax or sigmoid row leaves unspent) can write c only from a token whose
# value is c: it parks on BOS, and BOS's value becomes c (a constant-writing sink). A rule
# whose weights are a position-only scale times a function of the two tokens (ReLU's) cannot
# write c at the default rows and average at the trigger, exactly.
CONSTANT_RULES = {
    "softmax": "constant sink",
    "sigmoid_norm": "constant sink",
    "clipped_softmax": "constant sink",
    "softmax1": "constant sink",
    "sink_logit": "constant sink",
    "gated": "constant sink",
    "sigmoid": "constant sink",
    "relu": "position scale",
    "relu_visible": "position scale",
}
"""Every rule of chapter 6 and what the theory predicts of it on the constant-default task:
a ``"constant sink"`` (BOS, with BOS's part of the output equal to c) or, for a position-only
scale, ``"position scale"`` (no exact solution by one head)."""


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.attention_maps(result.figure_attn, FIGURE_TRIGGER_POS)


def _what_it_writes(model, task: ConstantTriggerTask) -> dict:
    """The head's BOS value against c and the two ablations at its default rows."""
    ev = evaluate(model, task, n=N_TEST)
    c = task.constant
    bos_value = ev.values[0][:, 0, 0].mean(dim=0)  # head 0 of layer 0: BOS's value in output space
    ablation = ablate_trigger_heads(model, ev.batch)
    return {
        "bos_value_error": float((bos_value - c).norm() / c.norm()),
        "bos_value_norm": float(bos_value.norm() / c.norm()),
        "ablate_zero": float(ablation["zero"][0, 0]),
        "ablate_mean": float(ablation["mean"][0, 0]),
    }


@experiment("constant_default", CONSTANT, figure=_figure, figure_name="constant")
def constant_default(ctx: Context, *, rules: list[str] | None = None) -> ExperimentResult:
    """One head of every rule of :data:`CONSTANT_RULES` (or ``rules``) trained on the trigger
    task whose target at every row but the trigger is the constant c with every coordinate
    :data:`~attnsink.profiles.CONSTANT_DEFAULT`.

    Each run's record adds to the usual metrics (:func:`~attnsink.experiments.base.run_record`)
    BOS's value against c (``bos_value_error``: ||u_0 - c|| / ||c||; ``bos_value_norm``:
    ||u_0|| / ||c||) and what the head writes at its default rows, by
    :func:`~attnsink.metrics.ablate_trigger_heads` (``ablate_zero``, ``ablate_mean``: the
    change in MSE). ``results`` and ``figure_attn`` are keyed by rule."""
    rules = list(CONSTANT_RULES) if rules is None else rules
    for rule in rules:
        if rule not in CONSTANT_RULES:
            raise ValueError(f"rules must be drawn from {list(CONSTANT_RULES)}, got {rule!r}")
    task = ConstantTriggerTask(default=CONSTANT_DEFAULT)
    results = ctx.train_many({rule: ctx.job(task, rule) for rule in rules})
    runs, figure_attn = [], {}
    with torch.no_grad():
        for rule, trained in results.items():
            new_runs, attn = ctx.record(trained, task)
            for record, result in zip(new_runs, trained):
                runs.append({**record, **_what_it_writes(result.model, task), "prediction": CONSTANT_RULES[rule]})
            figure_attn[rule] = attn[0][:, 0]  # layer 0, head 0: (N_TEST, query, key)
    meta = {"predictions": CONSTANT_RULES, "default": CONSTANT_DEFAULT}
    return ctx.result(runs, results=results, figure_attn=figure_attn, task=task, meta=meta)
