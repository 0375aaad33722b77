"""Chapter 5: one-layer softmax and ReLU models over sequence length, width and learning rate."""

from __future__ import annotations

from ..metrics import evaluate, sink_timing
from ..profiles import N_TEST, SWEEP, SWEEP_POINTS
from ..task import TriggerTask
from .base import Context, ExperimentResult, experiment, run_record


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.sweep_metrics(result.runs)


@experiment("sweep", SWEEP, figure=_figure, figure_name="sweep")
def sweep(ctx: Context) -> ExperimentResult:
    """Sweep one setting at a time (:data:`~attnsink.profiles.SWEEP_POINTS`), the others at the
    paper's values (L = 16, d = 16, lr = 1e-3), for one-layer softmax and ReLU heads.

    Every run records ``swept``, ``seq_len``, ``d_model``, ``lr`` and its
    :func:`~attnsink.metrics.sink_timing`. Used in chapter 5 and by
    ``python -m attnsink reproduce sweep``.
    """
    points = SWEEP_POINTS[ctx.profile]
    default = {"seq_len": 16, "d_model": 16, "lr": ctx.settings.lr}
    swept = [(name, {**default, name: value}) for name, values in points.items() for value in values]
    jobs, tasks = {}, {}  # keyed by (rule, seq_len, d_model, lr): the default point, in every sweep, is trained once
    for _, point in swept:
        task = TriggerTask(d_model=point["d_model"], seq_len=point["seq_len"])
        for attention in ("softmax", "relu"):
            key = (attention, *point.values())
            jobs[key], tasks[key] = ctx.job(task, attention, lr=point["lr"]), task
    done = {
        key: [
            {
                **dict(zip(default, key[1:])),
                **run_record(r, evaluate(r.model, tasks[key], n=N_TEST)),
                **sink_timing(r.history),
            }
            for r in trained
        ]
        for key, trained in ctx.train_many(jobs).items()
    }
    runs = [
        {"swept": name, **r}
        for name, point in swept
        for rule in ("softmax", "relu")
        for r in done[rule, *point.values()]
    ]
    return ctx.result(runs, meta={"points": {k: list(v) for k, v in points.items()}})
