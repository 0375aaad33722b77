"""A sink that could gather: softmax models without the causal mask on the trigger task whose
trigger asks the mean of the whole sequence (:class:`~attnsink.task.GlobalTriggerTask`), and
on its mirror, where every row but the trigger asks it. Without the mask BOS sees every token,
so it could gather the mean in the first layer and hand it on in the second (a *broadcast*
sink); :func:`broadcast_measures` measures whether it does."""

from __future__ import annotations

import torch

from ..metrics import ablate_trigger_heads
from ..profiles import BROADCAST, BROADCAST_MODEL, N_TEST
from ..task import GLOBAL_DEFAULTS, Batch, GlobalTriggerTask
from .base import Context, ExperimentResult, experiment

PROBE_SEED = 2**31 - 7  # the sequences the measures read: a seed no training batch uses


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.attention_maps(result.figure_attn, 7)


def stream_after(model, x: torch.Tensor, layer: int) -> torch.Tensor:
    """The residual stream after the attention of ``layer`` (batch, seq_len, d_model), for a
    residual model with neither MLP nor LayerNorm: the input plus every layer's output so far."""
    if not model.residual or model.mlp or model.layer_norm:
        raise ValueError(f"model must be residual with neither MLP nor LayerNorm, got {model.config}")
    outs = []

    def grab(at, heads_out):
        outs.append(heads_out.sum(dim=1))
        return heads_out

    model(x, edit=grab)
    return x + sum(outs[: layer + 1])


@torch.no_grad()
def broadcast_measures(model, task: GlobalTriggerTask, batch: Batch) -> dict:
    """Does BOS gather the global mean :math:`m` and hand it on? On ``batch``, per layer:

    * ``bos_gathers``: the weight BOS's own row puts on the other tokens (0: BOS only looks at
      itself, as in a causal model);
    * ``reads_bos``: the mean weight on BOS at the rows that ask :math:`m` (the trigger for
      ``default="zero"``, every content row but the trigger for ``"mean"``), and
      ``parks_bos`` at the rows that ask zero (BOS's own row left out);

    and over the model:

    * ``bos_carries``: how much BOS's first-layer output differs between two sequences, over
      how much their means differ (mean |o_0 - o_0'| / mean |m - m'|, each sequence against
      the one before it in ``batch``; about 1 at a row that averages, 0 for a BOS that
      gathers nothing);
    * ``handed_on``: give each sequence BOS's first-layer output of the one before it, and
      measure how much of the step from this sequence's :math:`m` to that one's the rows
      that ask :math:`m` take: the mean of <change in output, m' - m> / |m' - m|^2 (1: they
      read the mean from BOS; 0: they gather it themselves); ``zero_rows_moved``: how far the
      rows that ask zero move then, mean |change| / mean |m' - m| (0: nothing reaches them);
    * ``ablate_zero``, ``ablate_mean``: :func:`~attnsink.metrics.ablate_trigger_heads` at the
      rows that ask zero, what each head writes there (layers, heads).
    """
    x = batch.x
    y_hat, attn = model(x)
    m = task.global_mean(x)  # (batch, d)
    asks_mean = batch.is_trigger if task.default == "zero" else batch.is_nontrigger
    asks_zero = batch.is_nontrigger if task.default == "zero" else batch.is_trigger
    out = {
        "bos_gathers": [float(1 - a[:, :, 0, 0].mean()) for a in attn],
        "reads_bos": [float(a[..., 0].mean(dim=1)[asks_mean].mean()) for a in attn],
        "parks_bos": [float(a[..., 0].mean(dim=1)[asks_zero].mean()) for a in attn],
    }
    donor = torch.roll(torch.arange(len(x)), 1)  # sequence b gets BOS's first-layer output of b - 1
    first = {}

    def move(at, heads_out):
        if at != 0:
            return heads_out
        first["bos"] = heads_out[:, :, 0].sum(dim=1)  # (batch, d): BOS's first-layer output
        heads_out = heads_out.clone()
        heads_out[:, :, 0] = heads_out[donor, :, 0]
        return heads_out

    moved, _ = model(x, edit=move)
    gap = (m[donor] - m).norm(dim=-1).mean()
    out["bos_carries"] = float((first["bos"][donor] - first["bos"]).norm(dim=-1).mean() / gap)
    step = (m[donor] - m)[:, None, :].expand_as(x)  # (batch, seq, d)
    took = ((moved - y_hat) * step).sum(-1)[asks_mean].sum() / step.pow(2).sum(-1)[asks_mean].sum()
    zero_rows = asks_zero & (torch.arange(x.shape[1]) > 0)  # BOS's own row left out
    out["zero_rows_moved"] = float((moved - y_hat).norm(dim=-1)[zero_rows].mean() / gap)
    out["handed_on"] = float(took)
    ablation = ablate_trigger_heads(model, batch, rows=zero_rows)
    out["ablate_zero"], out["ablate_mean"] = ablation["zero"].tolist(), ablation["mean"].tolist()
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
