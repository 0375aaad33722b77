"""Sink metrics and task errors, defined once. Used in every chapter.

Attention tensors have shape ``(*, batch, heads, query, key)`` with any leading dimensions
(for example a stack of seeds); position masks have shape ``(*, batch, query)``. Per-head
metrics return ``(*, heads)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ._checks import check_int, check_number
from .attention import bos_mass, masked_mean
from .model import AttentionModel
from .task import Batch, TriggerTask

SINK_EPS = 0.3  # Gu et al. (2025)'s epsilon: a head is a sink when its mean weight on the first token exceeds it
OFF_MASS = 0.1  # a head whose rows hold less total weight than this at non-trigger positions is "off"
SINK_MASS = 0.5  # ... and one that puts at least this much weight on BOS there parks on it
SOLVED = 1e-2
""""Solved" (Chapter 6): relative errors at most this at the trigger and at the other rows;
"off" there: an attention mass at most this at the non-trigger rows."""
HEAD_KINDS = {
    "sink": "parks on BOS at non-trigger rows and reads the content at the trigger row",
    "dormant": "parks on BOS at non-trigger rows and at the trigger row: does nothing anywhere",
    "diffuse": "keeps most of its weight on content tokens at non-trigger rows",
    "off": "holds (almost) no weight at all at non-trigger rows (only rules with an off state can)",
}


def classify_head(bos_mass_nontrigger: float, attn_mass_nontrigger: float, trigger_bos_share: float) -> str:
    """Name what a head does, from its measurements (never by eye): one of :data:`HEAD_KINDS`.

    ``off`` when its total weight at non-trigger rows is below :data:`OFF_MASS`; otherwise
    ``sink`` or ``dormant`` when its weight on BOS there is at least :data:`SINK_MASS`
    (``dormant`` when, at the trigger row too, at least half of its weight is on BOS), and
    ``diffuse`` when it is not.
    """
    if attn_mass_nontrigger < OFF_MASS:
        return "off"
    if bos_mass_nontrigger >= SINK_MASS:
        return "dormant" if trigger_bos_share >= 0.5 else "sink"
    return "diffuse"


def attn_mass(attn: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Mean total weight of a row (sum over keys) -> ``(*, heads)``.

    Exactly 1 for softmax; near 0 for a ReLU head that has switched off.
    """
    return masked_mean(attn.sum(dim=-1), query_mask)


def bos_share(attn: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Weight on BOS divided by total weight, both summed over the masked rows -> ``(*, heads)``.

    Equal to :func:`bos_mass` for softmax. For unnormalised rules it says where the
    little weight a head has goes; NaN for a head whose weight is exactly 0 on every row.
    """
    total = attn_mass(attn, query_mask)
    return torch.where(total > 0, bos_mass(attn, query_mask) / total, torch.nan)


def first_mean(attn: list[torch.Tensor]) -> torch.Tensor:
    """Per layer and head, the weight on the first token averaged over the sequences and over
    query positions 1..L-1 (BOS's own row is 1 for softmax by necessity) -> (layers, heads).
    ``attn`` is a list of (batch, heads, query, key) tensors, one per layer."""
    if any(a.dim() != 4 for a in attn):
        raise ValueError("attn must be a list of (batch, heads, query, key) tensors")
    return torch.stack([a[..., 1:, 0].mean(dim=(0, 2)) for a in attn])


def sink_rate(attn: list[torch.Tensor], eps: float = SINK_EPS) -> float:
    """``Sink_1^eps`` of Gu et al. (2025): the fraction of heads (over all layers) whose
    :func:`first_mean` exceeds ``eps``. ``attn`` is a list of (batch, heads, query, key)
    tensors, one per layer. The one definition of a sink the trigger task and the language
    models share."""
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not 0 < eps < 1:
        raise ValueError(f"eps must be a number in (0, 1), got {eps!r}")
    return (first_mean(attn) > eps).float().mean().item()


WRITE_TOL = 0.005
"""Nats per token: an ablation that moves the loss by less than this costs nothing
(:func:`what_it_writes`)."""


def what_it_writes(zero, mean, tol: float = WRITE_TOL):
    """What a head writes at some queries, read from two ablations there (the change in loss
    when its output is replaced by zero, ``zero``, and by its mean over those queries,
    ``mean``; see :func:`attnsink.lm.ablate_heads`): ``"nothing"`` when neither moves the loss
    by more than ``tol`` either way; ``"informative"`` when replacing it by its mean costs
    more than ``tol`` (its dependence on the input is used, whatever zeroing does);
    ``"harmful"`` when it is not informative and either ablation lowers the loss by more than
    ``tol`` (the model does better without what the head writes, or with a constant in its
    place); ``"constant"`` when only zero costs (a constant would do). ``"unmeasured"`` for
    NaN (no such query). Scalars or arrays of the same shape (then an array of labels)."""
    if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    z, m = np.asarray(zero, dtype=float), np.asarray(mean, dtype=float)
    if z.shape != m.shape:
        raise ValueError(f"zero and mean must have the same shape, got {z.shape} and {m.shape}")
    label = np.select(
        [np.isnan(z) | np.isnan(m), (np.abs(z) <= tol) & (np.abs(m) <= tol), m > tol, (z < -tol) | (m < -tol)],
        ["unmeasured", "nothing", "informative", "harmful"],
        "constant",
    )
    return str(label) if label.ndim == 0 else label


ROW_MIN = 0.01
"""A row carrying less weight than this in all says nothing about where its head looks
(:func:`first_share`)."""


def first_share(weights: torch.Tensor, row_min: float = ROW_MIN) -> list[float]:
    """Per head, the first token's share of the row, averaged over the rows (queries 1 on) of
    ``weights`` (batch, heads, query, key) that carry at least ``row_min`` of weight in all; NaN
    for a head with no such row (off at every query). A ReLU row need not sum to one, and the
    share of a nearly empty row is noise: a head that is off almost everywhere could otherwise
    show any share at all from the few rows with a trace of weight."""
    if not (isinstance(row_min, (int, float)) and not isinstance(row_min, bool) and row_min > 0):
        raise ValueError(f"row_min must be a number > 0, got {row_min!r}")
    rows = weights[..., 1:, :].sum(-1)
    keep = rows >= row_min
    share = torch.where(keep, weights[..., 1:, 0] / rows.clamp_min(row_min), torch.nan)
    return share.nanmean(dim=(0, 2)).tolist()


def bos_value_ratio(values: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Norm of BOS's output-space value over the mean norm of the content tokens' -> (heads,).

    ``values`` (batch, heads, seq, d) are ``v_t W_O`` per head (``model(x, return_values=True)``).
    A sink is a no-op only when this ratio is small: parking weight on BOS then adds nothing.
    """
    norms = values.norm(dim=-1)  # (batch, heads, seq)
    content = (~batch.is_trigger).clone()
    content[:, 0] = False
    bos = norms[..., 0].mean(dim=0)
    return bos / masked_mean(norms, content)


def replace_head_rows(layer: int, head: int, rows: torch.Tensor, value: torch.Tensor):
    """A forward pass's ``edit`` hook that puts ``value`` in place of head ``head``'s output
    of layer ``layer`` at the queries ``rows`` (bool, (batch, seq_len)); for the ablations of
    both models (:func:`ablate_trigger_heads`, :func:`attnsink.lm.ablate_heads`), whose hooks
    take the layer and the per-head outputs first."""

    def edit(at, out, *rest):
        if at != layer:
            return out
        out = out.clone()
        out[:, head][rows] = value
        return out

    return edit


@torch.no_grad()
def ablate_trigger_heads(
    model: AttentionModel, batch: Batch, rows: torch.Tensor | None = None, kinds: tuple[str, ...] = ("zero", "mean")
) -> dict:
    """What each head of a trigger-task model writes at the queries ``rows`` (bool, (batch,
    seq_len); default ``batch.is_nontrigger``, every content row but the trigger: where a
    sink parks), by ablation: the change in the mean squared error over every row of
    ``batch`` (the trainer's MSE) when the head's output there is replaced by zero
    (``zero``) and by its mean over those queries (``mean``), one head at a time; each
    (layers, heads), with ``mse`` the unablated error. Read with :func:`what_it_writes`
    (a no-op writes nothing there, a constant-writing head costs when zeroed but not when
    replaced by its mean). The same test as :func:`attnsink.lm.ablate_heads` for the GPT."""
    if rows is None:
        rows = batch.is_nontrigger
    if rows.dtype != torch.bool or rows.shape != batch.is_trigger.shape:
        raise ValueError(
            f"rows must be bool of shape {tuple(batch.is_trigger.shape)} (batch, seq_len), "
            f"got {rows.dtype} {tuple(rows.shape)}"
        )
    if not kinds or not set(kinds) <= {"zero", "mean"}:
        raise ValueError(f"kinds must be some of ('zero', 'mean'), got {kinds!r}")
    was = model.training
    model.eval()
    try:
        outputs = []

        def keep(layer, out):
            outputs.append(out)
            return out

        def mse(edit) -> float:
            y_hat, _ = model(batch.x, edit=edit)
            return (y_hat - batch.y).pow(2).mean().item()

        base = mse(keep)
        res = {"mse": base, **{k: torch.full((model.n_layers, model.n_heads), float("nan")) for k in kinds}}
        if not rows.any():
            return res
        for layer in range(model.n_layers):
            for head in range(model.n_heads):
                clean = outputs[layer][:, head][rows]  # (n rows, d)
                new = {"zero": torch.zeros_like(clean), "mean": clean.mean(dim=0).expand_as(clean)}
                for kind in kinds:
                    res[kind][layer, head] = mse(replace_head_rows(layer, head, rows, new[kind])) - base
    finally:
        model.train(was)
    return res


@torch.no_grad()
def zero_every_head(model: AttentionModel, batch: Batch, rows: torch.Tensor | None = None) -> float:
    """The growth of the MSE on ``batch`` when the output of every head of every layer at the
    queries ``rows`` (default ``batch.is_nontrigger``) is replaced by zero at once: heads whose
    constants cancel each other can each cost something alone (:func:`ablate_trigger_heads`)
    and nothing together. In a residual model this leaves the input itself at those rows,
    which on the residual trigger task is their target: the cost there comes only from what
    later layers read of those rows elsewhere, and :func:`heads_add_up` shows the cancelling."""
    rows = batch.is_nontrigger if rows is None else rows
    if rows.dtype != torch.bool or rows.shape != batch.is_trigger.shape:
        raise ValueError(
            f"rows must be bool of shape {tuple(batch.is_trigger.shape)}, got {rows.dtype} {tuple(rows.shape)}"
        )
    was = model.training
    model.eval()
    try:

        def edit(layer, out):
            out = out.clone()
            out[rows[:, None, :].expand(out.shape[:3])] = 0.0
            return out

        base = (model(batch.x)[0] - batch.y).pow(2).mean().item()
        return (model(batch.x, edit=edit)[0] - batch.y).pow(2).mean().item() - base
    finally:
        model.train(was)


@torch.no_grad()
def heads_add_up(model: AttentionModel, batch: Batch, rows: torch.Tensor | None = None) -> float:
    """At the queries ``rows`` (default ``batch.is_nontrigger``): the mean norm of what every
    head of every layer writes there, added up, over the largest mean norm of what one head
    writes there. Near 0 when the heads' writes cancel; 1 for a single head that writes
    something there; NaN when no head writes anything there, or ``rows`` is empty. In a
    residual model with neither MLP nor LayerNorm the sum is the model's output less its input."""
    rows = batch.is_nontrigger if rows is None else rows
    if rows.dtype != torch.bool or rows.shape != batch.is_trigger.shape:
        raise ValueError(
            f"rows must be bool of shape {tuple(batch.is_trigger.shape)}, got {rows.dtype} {tuple(rows.shape)}"
        )
    outs = []

    def keep(layer, out):
        outs.append(out)
        return out

    model(batch.x, edit=keep)
    heads = torch.cat(outs, dim=1)  # (batch, layers * heads, query, d)
    single = heads.norm(dim=-1).transpose(0, 1)[:, rows].mean(dim=-1)  # (layers * heads,)
    added = heads.sum(dim=1).norm(dim=-1)[rows].mean()
    if not rows.any() or single.max() == 0:
        return float("nan")
    return float(added / single.max())


@torch.no_grad()
def blocks_add_up(model: AttentionModel, batch: Batch, rows: torch.Tensor | None = None) -> dict[str, float]:
    """:func:`heads_add_up` with the MLP blocks counted, for a residual model: at the queries
    ``rows`` (default ``batch.is_nontrigger``), the mean norm of what every head of every layer
    writes there, added up (``"heads"``), of what every MLP block writes there, added up
    (``"mlps"``), and of the two together (``"all"``: the model's output less its input), each
    over the largest mean norm of what one head writes there; and ``"spread"``, the root mean
    square of the heads' summed write about its mean over those rows, over its root mean
    square (0 when the heads add up to the same vector at every row of every sequence).
    NaN where :func:`heads_add_up` is NaN."""
    if not model.residual:
        raise ValueError("blocks_add_up needs a residual model: its output is its input plus every block's write")
    rows = batch.is_nontrigger if rows is None else rows
    if rows.dtype != torch.bool or rows.shape != batch.is_trigger.shape:
        raise ValueError(
            f"rows must be bool of shape {tuple(batch.is_trigger.shape)}, got {rows.dtype} {tuple(rows.shape)}"
        )
    outs = []

    def keep(layer, out):
        outs.append(out)
        return out

    was = model.training
    model.eval()
    try:
        y_hat = model(batch.x, edit=keep)[0]
    finally:
        model.train(was)
    heads = torch.cat(outs, dim=1)  # (batch, layers * heads, query, d)
    single = heads.norm(dim=-1).transpose(0, 1)[:, rows].mean(dim=-1)  # (layers * heads,)
    if not rows.any() or single.max() == 0:
        return dict.fromkeys(("heads", "mlps", "all", "spread"), float("nan"))
    added = heads.sum(dim=1)[rows]  # (n rows, d)
    blocks = {"heads": added, "all": (y_hat - batch.x)[rows]}
    blocks["mlps"] = blocks["all"] - added  # the MLP blocks' writes, biases included
    res = {k: float(v.norm(dim=-1).mean() / single.max()) for k, v in blocks.items()}
    centred = (added - added.mean(dim=0)).pow(2).sum(dim=-1).mean()
    res["spread"] = float((centred / added.pow(2).sum(dim=-1).mean()).sqrt())
    return res


WRITE_SHARE = 0.01
"""On the trigger task, an ablation costs something when it moves the MSE by more than this
share of :func:`job_cost` (the tolerance of :func:`what_it_writes` there)."""


def job_cost(batch: Batch, task: TriggerTask) -> float:
    """What writing nothing at the rows that do the task's job (``task.job_rows``: the
    trigger, for every task but :class:`~attnsink.task.GlobalTriggerTask`'s mirror) would add
    to the MSE on ``batch``: the mean, over every row and coordinate, of the squared update
    those rows need (the target there, less the token itself with a residual stream). The
    scale against which the trigger task's ablations are read (:data:`WRITE_SHARE`)."""
    update = batch.y - batch.x if task.residual else batch.y
    return (update * task.job_rows(batch)[..., None].to(update.dtype)).pow(2).mean().item()


def task_errors(y_hat: torch.Tensor, batch: Batch, task: TriggerTask) -> dict[str, float]:
    """Overall MSE, largest absolute error, and relative errors at trigger and non-trigger rows.

    A relative error is the mean squared error over the rows of one kind divided by the
    mean squared norm of what the model must add at the rows that do the task's job
    (``task.job_rows``: the trigger, where the update is the running mean; for the mirror of
    :class:`~attnsink.task.GlobalTriggerTask`, the rows that ask the global mean). So 0 is
    perfect and 1 is as bad as adding nothing at those rows, at both kinds of rows.
    Non-trigger rows here are all rows but the trigger, BOS's own row included.
    """
    err = (y_hat - batch.y).pow(2).sum(dim=-1)  # (batch, seq)
    update = batch.y - batch.x if task.residual else batch.y
    signal = update.pow(2).sum(dim=-1)[task.job_rows(batch)].mean()
    return {
        "mse": (y_hat - batch.y).pow(2).mean().item(),
        "linf": (y_hat - batch.y).abs().max().item(),
        "rel_err_trigger": (err[batch.is_trigger].mean() / signal).item(),
        "rel_err_nontrigger": (err[~batch.is_trigger].mean() / signal).item(),  # BOS's own row included
    }


@dataclass
class Evaluation:
    """A model run on a fixed test batch: outputs, attention, and the metrics read off them."""

    batch: Batch
    y_hat: torch.Tensor  # (batch, seq, d)
    attn: list[torch.Tensor]  # per layer (batch, heads, query, key)
    values: list[torch.Tensor]  # per layer (batch, heads, seq, d)
    errors: dict[str, float]

    def per_head(self) -> list[dict]:
        """One record per (layer, head): what the head does at non-trigger rows (BOS mass,
        attention mass, BOS share), its BOS value ratio, what it does at the trigger row
        (weight on BOS, total weight on the tokens 1..j, BOS share of the row's weight), and
        its ``kind`` (:func:`classify_head`)."""
        mask, trig = self.batch.is_nontrigger, self.batch.is_trigger
        rows = []
        for layer, (a, v) in enumerate(zip(self.attn, self.values)):
            trigger_row = (a * trig[:, None, :, None].to(a.dtype)).sum(dim=-2)  # (batch, heads, key)
            t_bos = trigger_row[..., 0].mean(dim=0)
            t_total = trigger_row.sum(dim=-1).mean(dim=0)
            stats = zip(
                bos_mass(a, mask).tolist(),
                attn_mass(a, mask).tolist(),
                bos_share(a, mask).tolist(),
                bos_value_ratio(v, self.batch).tolist(),
                t_bos.tolist(),
                (t_total - t_bos).tolist(),
                torch.where(t_total > 0, t_bos / t_total, torch.nan).tolist(),
            )
            for head, (bm, am, share, ratio, tb, tc, ts) in enumerate(stats):
                rows.append(
                    {
                        "layer": layer,
                        "head": head,
                        "bos_mass_nontrigger": bm,
                        "attn_mass_nontrigger": am,
                        "bos_share_nontrigger": share,
                        "bos_value_ratio": ratio,
                        "trigger_bos_weight": tb,
                        "trigger_content_weight": tc,  # keys 1..j: the tokens the target averages
                        "trigger_bos_share": ts,
                        "kind": classify_head(bm, am, ts),
                    }
                )
        return rows

    def summary(self) -> dict:
        """Scalar metrics: task errors, then sink metrics averaged over all heads."""
        heads = self.per_head()
        mean = lambda key: sum(h[key] for h in heads) / len(heads)  # noqa: E731
        return {
            **self.errors,
            "bos_mass_nontrigger": mean("bos_mass_nontrigger"),
            "max_head_bos_mass_nontrigger": max(h["bos_mass_nontrigger"] for h in heads),
            "attn_mass_nontrigger": mean("attn_mass_nontrigger"),
            "bos_share_nontrigger": mean("bos_share_nontrigger"),
            "bos_value_ratio": mean("bos_value_ratio"),
            "sink_rate": sink_rate(self.attn),
        }


EVAL_SEED = 20260311  # test sequences come from their own stream, never the training one


@torch.no_grad()
def evaluate(
    model: AttentionModel,
    task: TriggerTask,
    *,
    n: int = 1000,
    seed: int = EVAL_SEED,
    trigger_pos: int | None = None,
) -> Evaluation:
    """Run ``model`` on ``n`` fresh test sequences (drawn on the CPU, so the same everywhere)."""
    if model.d_model != task.d_model:
        raise ValueError(f"model.d_model ({model.d_model}) must equal task.d_model ({task.d_model})")
    if model.residual != task.residual:
        raise ValueError(f"model.residual ({model.residual}) must equal task.residual ({task.residual})")
    check_int("n", n, 1)
    check_int("seed", seed, 0)
    device = next(model.parameters()).device
    batch = task.sample(n, generator=torch.Generator().manual_seed(seed), trigger_pos=trigger_pos)
    y_hat, attn, values = model(batch.x.to(device), return_values=True)
    y_hat, attn, values = y_hat.cpu(), [a.cpu() for a in attn], [v.cpu() for v in values]
    return Evaluation(batch=batch, y_hat=y_hat, attn=attn, values=values, errors=task_errors(y_hat, batch, task))


def _project_simplex(v: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of each row of v (..., m) onto the probability simplex."""
    u, _ = torch.sort(v, dim=-1, descending=True)
    css = u.cumsum(dim=-1) - 1.0
    k = torch.arange(1, v.shape[-1] + 1, device=v.device, dtype=v.dtype)
    rho = ((u - css / k) > 0).sum(dim=-1, keepdim=True)  # number of positive entries, >= 1
    theta = css.gather(-1, rho - 1) / rho.to(v.dtype)
    return (v - theta).clamp(min=0.0)


@torch.no_grad()
def hull_distance(points: torch.Tensor, mask: torch.Tensor | None = None, *, iters: int = 2000, tol: float = 1e-7):
    """Distance from the origin to the convex hull of ``points`` (..., m, n), with bounds.

    ``mask`` (..., m) selects the points that count (at least one per row). Solved by
    accelerated projected gradient descent on the weights, for at most ``iters`` steps and
    until every row's gap ``upper - lower`` is at most ``tol`` (checked every 25 steps);
    returns ``(lower, upper)``:
    ``upper`` is the norm of the best convex combination p found and ``lower`` =
    max(0, min_k <u_k, p>/``|p|``) is a certified lower bound (for any unit w, every point v of
    the hull has ``|v|`` >= <v, w> >= min_k <u_k, w>; rounded down when cast back to the input's
    dtype). They meet at the optimum. Used in the theory chapter, where the distance bounds
    how much mass a softmax head can keep off BOS.
    """
    check_int("iters", iters, 1)
    check_number("tol", tol, low_open=False)
    if mask is None:
        mask = torch.ones(points.shape[:-1], dtype=torch.bool, device=points.device)
    if not mask.any(dim=-1).all():
        raise ValueError("mask must select at least one point in every row")
    pts = torch.where(mask[..., None], points, 0.0).double()  # unselected points play no part
    gram = pts @ pts.transpose(-1, -2)  # (..., m, m)
    # the gradient 2 G lam is Lipschitz with constant 2 lambda_max(G): power iteration for the step
    v = torch.ones_like(gram[..., 0])
    for _ in range(50):
        v = (gram @ v.unsqueeze(-1)).squeeze(-1)
        v = v / v.norm(dim=-1, keepdim=True).clamp(min=1e-300)
    lam_max = (v * (gram @ v.unsqueeze(-1)).squeeze(-1)).sum(-1, keepdim=True)
    step = 1.0 / (2.0 * 1.05 * lam_max.clamp(min=1e-12))
    big = 1e9  # pushes unselected weights far below the rest: the projection gives them 0
    lam = mask.double() / mask.sum(dim=-1, keepdim=True)
    ahead, t = lam, 1.0

    def bounds(lam):
        p = (lam.unsqueeze(-1) * pts).sum(dim=-2)  # (..., n): the convex combination
        upper = p.norm(dim=-1)
        support = (pts @ p.unsqueeze(-1)).squeeze(-1)  # <u_k, p>
        lower = torch.where(mask, support, big).min(dim=-1).values / upper.clamp(min=1e-300)
        return torch.where(upper > 0, lower.clamp(min=0.0), torch.zeros_like(upper)), upper

    for it in range(iters):  # accelerated projected gradient (FISTA)
        grad = 2.0 * (gram @ ahead.unsqueeze(-1)).squeeze(-1)
        new = _project_simplex(torch.where(mask, ahead - step * grad, -big))
        t_next = (1.0 + math.sqrt(1.0 + 4.0 * t * t)) / 2.0
        ahead = new + ((t - 1.0) / t_next) * (new - lam)
        lam, t = new, t_next
        if (it + 1) % 25 == 0:
            lower, upper = bounds(lam)
            if (upper - lower).max() <= tol:
                break
    lower, upper = bounds(lam)
    lower_cast = lower.to(points.dtype)
    too_high = lower_cast.double() > lower  # keep the bound certified: round down, not to nearest
    lower_cast = torch.where(too_high, torch.nextafter(lower_cast, torch.zeros_like(lower_cast)), lower_cast)
    return lower_cast, upper.to(points.dtype)


@torch.no_grad()
def sink_bound_terms(model: AttentionModel, task: TriggerTask, *, n: int = 200, seed: int = EVAL_SEED) -> dict:
    """The terms of the sink inequality of the theory chapter, for every non-trigger row.

    For each of ``n`` test sequences and each non-trigger position i >= 1 of a one-layer,
    one-head model: ``mass_off_bos`` = 1 - a_i0, ``err_row`` = ``|y_hat_i - y_i|``, ``err_bos`` =
    ``|y_hat_0 - y_0|`` and lower and upper bounds on D_i, the distance from the origin to the
    convex hull of the values u_k = x_k W_V W_O of the non-BOS tokens k = 1..i. Each entry
    is a flat tensor over all (sequence, row) pairs; ``seq`` says which sequence.
    """
    if model.n_layers != 1 or model.n_heads != 1 or model.residual:
        raise ValueError("sink_bound_terms is for one-layer, one-head models without residual stream")
    if not task.bos:
        raise ValueError("sink_bound_terms needs a task with BOS (task.bos=True): it measures the weight off BOS")
    ev = evaluate(model, task, n=n, seed=seed)
    b, a, u = ev.batch, ev.attn[0][:, 0], ev.values[0][:, 0]  # (n, L, L), (n, L, d)
    L = task.seq_len
    keys = torch.ones(L, L, dtype=torch.bool).tril()
    keys[:, 0] = False  # non-BOS keys visible from each query: (query, key)
    rows = b.is_nontrigger  # (n, L): non-trigger positions i >= 1
    pts = u[:, None, :, :].expand(n, L, L, u.shape[-1])[rows]  # (rows, key, d)
    mask = keys[None].expand(n, L, L)[rows]
    lower, upper = hull_distance(pts, mask)
    err = (ev.y_hat - b.y).norm(dim=-1)  # (n, L)
    seq = torch.arange(n)[:, None].expand(n, L)[rows]
    return {
        "seq": seq,
        "mass_off_bos": a[..., 1:].sum(dim=-1)[rows],  # = 1 - a_i0, summed directly (no cancellation)
        "err_row": err[rows],
        "err_bos": err[:, 0][seq],
        "d_lower": lower,
        "d_upper": upper,
        "sq_error_seq": (ev.y_hat - b.y).pow(2).sum(dim=(1, 2)),  # (n,): the squared error of each sequence
    }


@torch.no_grad()
def head_bound_terms(
    model: AttentionModel, task: TriggerTask, *, n: int = 50, seed: int = EVAL_SEED, iters: int = 2000
) -> dict:
    """The terms of the per-head anchor inequality (chapter "Several layers") for every head.

    For each of ``n`` test sequences, each non-trigger position i >= 1 and each (layer,
    head) of a softmax model: ``mass_off_bos`` = 1 - a_i0; ``moved`` = ``|o_i - o_0|``, how far
    the head's own output at row i (before it is summed with the other heads) is from its
    output at BOS's row, which is BOS's value u_0; ``out`` = ``|o_i|``; ``d_lower``, a
    certified lower bound on the distance from u_0 to the convex hull of the head's values
    u_1..u_i; ``slack`` = ``|sum_k a_ik - 1|`` ``|u_0|``, by which float32 rows that do not sum to
    exactly 1 can move the output (about 1e-8); and ``layer_moved``, the length of the sum
    over the layer's heads of ``o_i - o_0``. Flat
    tensors over (sequence, row, layer, head), with ``seq``, ``layer`` and ``head`` saying which.
    """
    if not task.bos:
        raise ValueError("head_bound_terms needs a task with BOS (task.bos=True): it measures the weight off BOS")
    if model.attention != "softmax":
        raise ValueError(f"head_bound_terms is for softmax models, got attention={model.attention!r}")
    if not model.causal:
        raise ValueError("head_bound_terms is for causal models (BOS's row sees only BOS), got causal=False")
    ev = evaluate(model, task, n=n, seed=seed)
    L = task.seq_len
    keys = torch.ones(L, L, dtype=torch.bool).tril()
    keys[:, 0] = False  # non-BOS keys visible from each query: (query, key)
    rows = ev.batch.is_nontrigger  # (n, L)
    seq = torch.arange(n)[:, None].expand(n, L)[rows]
    names = ("seq", "layer", "head", "mass_off_bos", "moved", "out", "d_lower", "slack", "layer_moved")
    out = {k: [] for k in names}
    for layer, (a, u) in enumerate(zip(ev.attn, ev.values)):  # (n, H, L, L), (n, H, L, d)
        a, u = a.double(), u.double()  # the model's weights and values, combined without float32 rounding
        o = a @ u  # (n, H, L, d): each head's output; o[..., 0, :] = u[..., 0, :] (causal softmax)
        shift = o - o[:, :, :1]  # o_i - o_0
        layer_moved = shift.sum(dim=1).norm(dim=-1)[rows]
        for head in range(a.shape[1]):
            rel = u[:, head] - u[:, head, :1]  # u_k - u_0
            pts = rel[:, None].expand(n, L, L, rel.shape[-1])[rows]  # (rows, key, d)
            lower, _ = hull_distance(pts, keys[None].expand(n, L, L)[rows], iters=iters)
            out["seq"].append(seq)
            out["layer"].append(torch.full_like(seq, layer))
            out["head"].append(torch.full_like(seq, head))
            out["mass_off_bos"].append(a[:, head, :, 1:].sum(dim=-1)[rows])
            out["moved"].append(shift[:, head].norm(dim=-1)[rows])
            out["out"].append(o[:, head].norm(dim=-1)[rows])
            out["d_lower"].append(lower)
            out["slack"].append(((a[:, head].sum(dim=-1) - 1).abs() * u[:, head, :1].norm(dim=-1))[rows])
            out["layer_moved"].append(layer_moved)
    return {k: torch.cat(v) for k, v in out.items()}


def sink_timing(history: dict, *, sink: float = 0.9, loss_drop: float = 0.1) -> dict:
    """When the sink forms, against when the loss drops, read off a training history
    (:attr:`attnsink.training.TrainResult.history`).

    ``step_sink``: the first recorded step at which some head's BOS mass at non-trigger rows
    reaches ``sink``; ``step_loss``: the first recorded step at which the batch loss has
    fallen to ``loss_drop`` times its value at the first record. Either is None when it never
    happens. Steps are read from ``history["step"]``, so a history that keeps every k-th step
    gives training steps, at that resolution.
    """
    steps = np.asarray(history["step"])
    bos = np.asarray(history["bos_mass"]).reshape(len(steps), -1).max(axis=1)
    loss = np.asarray(history["loss"])

    def first(flags):
        idx = np.flatnonzero(flags)
        return int(steps[idx[0]]) if len(idx) else None

    return {"step_sink": first(bos >= sink), "step_loss": first(loss <= loss_drop * loss[0])}
