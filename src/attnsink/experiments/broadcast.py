"""A sink that could gather: softmax models without the causal mask on the trigger task whose
trigger asks the mean of the whole sequence (:class:`~attnsink.task.GlobalTriggerTask`), and
on its mirror, where every row but the trigger asks it. Without the mask BOS sees every token,
so it could gather the mean in the first layer and hand it on in the second (a *broadcast*
sink); :func:`broadcast_measures` measures whether it does."""

from __future__ import annotations

import torch

from ..metrics import WRITE_SHARE, ablate_trigger_heads, job_cost, what_it_writes
from ..profiles import BROADCAST, BROADCAST_MODEL, N_TEST
from ..task import GLOBAL_DEFAULTS, Batch, GlobalTriggerTask
from .base import Context, ExperimentResult, experiment

PROBE_SEED = 2**31 - 7  # the sequences the measures read: a seed no training batch uses


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.attention_maps(result.figure_attn, 7)


def _slope(change: torch.Tensor, step: torch.Tensor) -> float:
    """The pooled least-squares gain of ``change`` on ``step`` (both (n, d)):
    sum <change, step> / sum |step|^2 (1: ``change`` follows ``step`` one for one)."""
    return float((change * step).sum() / step.pow(2).sum())


def _fit(change: torch.Tensor, step: torch.Tensor) -> float:
    """How much of ``change`` (n, d) the best multiple of ``step`` explains, 1 - |residual|^2 /
    |change|^2 (the R^2 of :func:`_slope`'s fit; NaN when ``change`` is zero)."""
    total = change.pow(2).sum()
    if total == 0:
        return float("nan")
    resid = change - _slope(change, step) * step
    return float(1 - resid.pow(2).sum() / total)


def _linear_fit(change: torch.Tensor, source: torch.Tensor) -> float:
    """The share of ``change`` (n, d, centred) that the best linear map of ``source`` (n, d,
    centred) explains, 1 - |residual|^2 / |change|^2 (NaN when ``change`` is zero)."""
    total = change.pow(2).sum()
    if total == 0:
        return float("nan")
    a, b = source.double(), change.double()
    a = a[:, a.abs().amax(dim=0) > 1e-9]  # the coordinates in which the source varies (m's noise)
    resid = b - a @ torch.linalg.pinv(a) @ b
    return float(1 - resid.pow(2).sum() / total)


def _probes(model, x, bos_out, y_hat, m, asks_mean, asks_zero) -> dict:
    """:func:`broadcast_measures`' two probes of what the second layer takes from BOS's
    first-layer output ``bos_out`` (batch, d): ``m' - m`` added to it (``read_gain``,
    ``read_gain_zero``), and it swapped for the sequence before's (``handed_on``,
    ``zero_rows_moved``)."""
    donor = torch.roll(torch.arange(len(x)), 1)  # sequence b is paired with b - 1
    step = m[donor] - m  # (batch, d)

    def run_with(new_bos):
        def edit(at, heads_out):
            if at != 0:
                return heads_out
            heads_out = heads_out.clone()
            heads_out[:, :, 0] = 0.0
            heads_out[:, 0, 0] = new_bos  # BOS's first-layer output, all in head 0
            return heads_out

        return model(x, edit=edit)[0] - y_hat

    gap = step.norm(dim=-1).mean()
    steps = step[:, None, :].expand_as(x)
    out = {}
    for name, new_bos in (("read_gain", bos_out + step), ("handed_on", bos_out[donor])):
        change = run_with(new_bos)
        moved = change.norm(dim=-1)[asks_zero].mean() / gap
        out[name] = _slope(change[asks_mean], steps[asks_mean])
        out["read_gain_zero" if name == "read_gain" else "zero_rows_moved"] = float(moved)
    return out


@torch.no_grad()
def broadcast_measures(model, task: GlobalTriggerTask, batch: Batch) -> dict:
    """Does BOS gather the global mean :math:`m` and hand it on? On ``batch``, with the rows
    that ask :math:`m` (the trigger for ``default="zero"``, every content row but the trigger
    for ``"mean"``) and those that ask zero (BOS's own row left out), per layer:

    * ``bos_gathers``: the weight BOS's own row puts on the other tokens;
    * ``reads_bos`` and ``parks_bos``: the mean weight on BOS at the rows that ask :math:`m`
      and at those that ask zero;
    * ``writes_m``: the gain of the layer's output at the rows that ask :math:`m` on
      :math:`m` (centred over the batch; 1 when the layer writes all of :math:`m` there);

    and over the model, each a gain in :math:`m`'s own coordinates:

    * ``bos_norm``: the mean norm of BOS's first-layer output (a constant it carries counts);
    * ``bos_spread``: how much that output varies between sequences, the rms of its centred
      values over that of :math:`m`'s (0: the same in every sequence);
    * ``bos_carries``, ``bos_fit``: the gain of BOS's first-layer output on :math:`m`, and
      the share of that output's variation it explains (a BOS that copies one token has
      gain about 1 and a small share); ``bos_decodable``: the share a full linear map of
      :math:`m` explains (:math:`m` carried in any linear code, however small);
    * ``zero_rows_out``, ``zero_rows_sum``: at the rows that ask zero, the mean norm of each
      layer's output and of the two added up (they cancel when the sum is much the smaller);
    * ``read_gain``, ``read_gain_zero``: add :math:`m' - m` (:math:`m'` the mean of the
      sequence before it in ``batch``) to BOS's first-layer output and measure the gain of the
      output at the rows that ask :math:`m` on it, and how far the rows that ask zero move
      (the mean norm of their change over that of :math:`m' - m`): what the second layer would take from a BOS that
      carried :math:`m` as the tokens do;
    * ``handed_on``, ``zero_rows_moved``: the same two with BOS's own first-layer output
      swapped for that sequence's (what the model does take from what BOS carries);
    * ``ablate_zero``, ``ablate_mean``: :func:`~attnsink.metrics.ablate_trigger_heads` at the
      rows that ask zero, (layers, heads); ``ablate_tol``, :data:`~attnsink.metrics.WRITE_SHARE`
      of :func:`~attnsink.metrics.job_cost`; ``writes``, what
      :func:`~attnsink.metrics.what_it_writes` reads from them; ``mse``.
    """
    if not isinstance(task, GlobalTriggerTask) or not task.bos or not task.residual:
        raise ValueError(f"task must be a GlobalTriggerTask with BOS and residual=True, got {task!r}")
    x = batch.x
    layers = []

    def keep(at, heads_out):
        layers.append(heads_out.sum(dim=1))  # (batch, seq, d): the layer's output
        return heads_out

    y_hat, attn = model(x, edit=keep)
    m = task.global_mean(x)  # (batch, d)
    centred = m - m.mean(dim=0)
    asks_mean = batch.is_trigger if task.default == "zero" else batch.is_nontrigger
    asks_zero = (batch.is_nontrigger if task.default == "zero" else batch.is_trigger) & (torch.arange(x.shape[1]) > 0)
    at_mean = centred[:, None, :].expand_as(x)[asks_mean]  # each row's own sequence's m, centred
    bos = layers[0][:, 0] - layers[0][:, 0].mean(dim=0)
    out = {
        "bos_gathers": [float(1 - a[:, :, 0, 0].mean()) for a in attn],
        "reads_bos": [float(a[..., 0].mean(dim=1)[asks_mean].mean()) for a in attn],
        "parks_bos": [float(a[..., 0].mean(dim=1)[asks_zero].mean()) for a in attn],
        "writes_m": [_slope(o[asks_mean] - o[asks_mean].mean(dim=0), at_mean) for o in layers],
        "bos_norm": float(layers[0][:, 0].norm(dim=-1).mean()),
        "bos_spread": float(bos.pow(2).mean().sqrt() / centred.pow(2).mean().sqrt()),
        "bos_carries": _slope(bos, centred),
        "bos_fit": _fit(bos, centred),
        "bos_decodable": _linear_fit(bos, centred),
        "zero_rows_out": [float(o[asks_zero].norm(dim=-1).mean()) for o in layers],
        "zero_rows_sum": float(sum(layers)[asks_zero].norm(dim=-1).mean()),
    }
    out.update(_probes(model, x, layers[0][:, 0], y_hat, m, asks_mean, asks_zero))
    ablation = ablate_trigger_heads(model, batch, rows=asks_zero)
    out["ablate_zero"], out["ablate_mean"] = ablation["zero"].tolist(), ablation["mean"].tolist()
    out["ablate_tol"] = WRITE_SHARE * job_cost(batch, task)
    out["writes"] = what_it_writes(ablation["zero"].numpy(), ablation["mean"].numpy(), out["ablate_tol"]).tolist()
    out["mse"] = ablation["mse"]
    return out


@experiment("broadcast", BROADCAST, figure=_figure, figure_name="attention")
def broadcast(ctx: Context) -> ExperimentResult:
    """Softmax models of :data:`~attnsink.profiles.BROADCAST_MODEL` without the causal mask,
    trained on :class:`~attnsink.task.GlobalTriggerTask` with each default of
    :data:`~attnsink.task.GLOBAL_DEFAULTS` (residual, the multi-layer recipe). Each run's
    record adds :func:`broadcast_measures` on fresh sequences to the usual metrics;
    ``results`` and ``figure_attn`` are keyed by the default."""
    tasks = {d: GlobalTriggerTask(residual=True, default=d) for d in GLOBAL_DEFAULTS}
    jobs = {d: ctx.job(task, "softmax", causal=False, **BROADCAST_MODEL) for d, task in tasks.items()}
    results = ctx.train_many(jobs)
    runs, figure_attn = [], {}
    for default, trained in results.items():
        task = tasks[default]
        batch = task.sample(N_TEST, generator=torch.Generator().manual_seed(PROBE_SEED))
        new_runs, attn = ctx.record(trained, task)
        for record, result in zip(new_runs, trained):
            runs.append({**record, "default": default, **broadcast_measures(result.model, task, batch)})
        figure_attn[default] = attn[-1][:, 0]  # the last layer, head 0: (N_TEST, query, key)
    return ctx.result(runs, results=results, figure_attn=figure_attn, meta={"model": BROADCAST_MODEL})
