"""What the GPTs' heads do, measured: where their weight goes, what they write, and which of
them are trigger-conditional. Used in chapters 7 and 8.

Every function reads a model on its *inputs*: windows without their last token (``x[:, :-1]``
of the task's sequences), the positions it was trained on (:func:`attnsink.lm.model.lm_loss`
never feeds the last one, so its position embedding never trains).
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import check_int
from ..metrics import SINK_EPS, first_mean, sink_rate
from .data import BigramBackcopy
from .model import GPT


def device_of(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def _read(model: GPT, x: torch.Tensor):
    """``model``'s logits, weights and output-space values on inputs ``x``, in eval mode;
    ``ValueError`` for windows as long as the model's ``seq_len`` (their last position never trained)."""
    if x.dim() != 2 or x.shape[1] > model.config["seq_len"] - 1:
        raise ValueError(
            f"x must be inputs of shape (batch, at most {model.config['seq_len'] - 1}): windows without their "
            f"last token (x[:, :-1]), the positions the model trained on; got {tuple(x.shape)}"
        )
    was = model.training
    model.eval()
    try:
        return model(x.to(device_of(model)), return_values=True)
    finally:
        model.train(was)


def head_metrics(model: GPT, x: torch.Tensor, *, eps: float = SINK_EPS) -> dict:
    """Per layer and head, on inputs ``x``: ``first_mass`` (layers, heads, query) the weight on
    token 0 at each query position; ``first_mean`` (layers, heads) its mean over queries
    1..L-2 (:func:`attnsink.metrics.first_mean`); ``sink`` = ``Sink_1^eps``
    (:func:`attnsink.metrics.sink_rate`); ``value_ratio`` (layers, heads), the norm of token
    0's value in output space (what the head adds per unit of weight on it) over the mean of
    the other tokens'."""
    _, attns, values = _read(model, x)
    first = torch.stack([a[..., 0].mean(dim=0) for a in attns]).cpu()  # (layers, heads, query)
    norms = torch.stack([v.norm(dim=-1).mean(dim=0) for v in values]).cpu()  # (layers, heads, key)
    return {
        "first_mass": first,
        "first_mean": first_mean(attns).cpu(),
        "sink": sink_rate(attns, eps),
        "value_ratio": norms[..., 0] / norms[..., 1:].mean(dim=-1),
    }


@torch.no_grad()
def backcopy_metrics(model: GPT, task: BigramBackcopy, *, n: int = 256, seed: int = 2**31 - 2) -> dict:
    """How a model trained on Bigram-Backcopy does it, on ``n`` fresh sequences: the loss and
    accuracy at the copy targets (the token after a trigger) and the loss elsewhere; per
    layer and head (lists of lists), the weight on token 0 and the whole row's weight, at
    queries that are triggers and at ordinary queries (the first real token on)."""
    x = task.sample(n, seed=seed).to(device_of(model))
    logits, attns, _ = _read(model, x[:, :-1])
    logp = torch.log_softmax(logits, dim=-1).gather(-1, x[:, 1:, None])[..., 0]
    copy = task.trigger_targets(x)  # (n, L - 1), aligned with the queries of x[:, :-1]
    ordinary = ~copy
    ordinary[:, 0] = False  # query 0 sees only itself (BOS, or the first token without BOS): weight 1 on token 0
    out = {
        "copy_loss": -logp[copy].mean().item(),
        "copy_acc": (logits.argmax(-1)[copy] == x[:, 1:][copy]).float().mean().item(),
        "other_loss": -logp[~copy].mean().item(),
    }
    for name, rows in (("trigger", copy), ("ordinary", ordinary)):
        w = rows[:, None].float()  # (n, 1, query)
        out[f"first_{name}"] = [((a[..., 0] * w).sum((0, 2)) / w.sum((0, 2))).tolist() for a in attns]
        out[f"row_{name}"] = [((a.sum(-1) * w).sum((0, 2)) / w.sum((0, 2))).tolist() for a in attns]
    return out


HEAD_KEYS = ("first_trigger", "first_ordinary", "row_trigger", "row_ordinary")


def head_rows(runs: list[dict]) -> list[dict]:
    """Records with :func:`backcopy_metrics`' per-head lists (``attention``, ``bos``, ``seed``
    and the metrics) as one row per (run, layer, head)."""
    rows = []
    for r in runs:
        for layer, heads in enumerate(r["first_ordinary"]):
            for head in range(len(heads)):
                base = {"attention": r["attention"], "bos": r["bos"], "seed": r["seed"], "layer": layer, "head": head}
                rows.append({**base, **{k: float(r[k][layer][head]) for k in HEAD_KEYS}})
    return rows


@torch.no_grad()
def head_outputs(model: GPT, x: torch.Tensor) -> dict:
    """What each head writes, on inputs ``x``, per layer (lists over layers): ``weights``
    (batch, heads, query, key); ``out_norm`` (batch, heads, query), the norm of the head's
    contribution to the residual stream (its output through its slice of the output
    projection) at each query; ``key_norm`` (batch, heads, key), the norm of each key's value
    through the same slice (what the head would write if it put all its weight there)."""
    _, attns, values = _read(model, x)
    out = {"weights": [], "out_norm": [], "key_norm": []}
    for w, projected in zip(attns, values):
        out["weights"].append(w.cpu())
        out["out_norm"].append((w @ projected).norm(dim=-1).cpu())
        out["key_norm"].append(projected.norm(dim=-1).cpu())
    return out


def conditional_heads(
    model: GPT,
    x: torch.Tensor,
    *,
    active: float = 0.5,
    coverage: float = 0.25,
    quiet: float = 0.25,
    null: float = 0.25,
    min_count: int = 20,
) -> list[dict]:
    """Which heads are trigger-conditional on inputs ``x``, and where their weight goes when
    they are silent: one dict per (layer, head).

    A query's *class* is its own token. A head's active classes are those whose mean output
    norm is at least ``active`` times the largest class mean (classes with at least
    ``min_count`` queries, from the second position on); its silent queries are the queries
    of the other counted classes. The head is ``conditional`` when its active classes cover
    at most ``coverage`` of the counted queries and its mean output norm at silent queries is
    at most ``quiet`` times that at active ones. At silent and at active queries, the
    record gives the mean weight on token 0 (``first_*``), the mean weight on *null* keys,
    those whose projected value norm is at most ``null`` times the median key's in that
    sequence (``null_*``), the mean row sum (``row_*``), and ``coherence_*``, the mean of
    what the head writes over what its weights would write if no two values cancelled
    (``|sum_j w_j v_j| / sum_j w_j |v_j|``, in [0, 1]; queries where the denominator is zero
    are left out).
    """
    for name, value in (("active", active), ("coverage", coverage), ("quiet", quiet), ("null", null)):
        if not 0 < value <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    check_int("min_count", min_count, 1)
    h = head_outputs(model, x)
    tokens = x[:, 1:].cpu()
    classes, counts = tokens.unique(return_counts=True)
    counted = classes[counts >= min_count]
    if len(counted) == 0:
        raise ValueError(f"no token occurs min_count={min_count} times in x; pass more sequences")
    in_count = torch.isin(tokens, counted)
    records = []
    for layer, (w, norm, key_norm) in enumerate(zip(h["weights"], h["out_norm"], h["key_norm"])):
        median = key_norm.median(dim=-1, keepdim=True).values
        is_null = (key_norm <= null * median).float()  # (batch, heads, key)
        for head in range(w.shape[1]):
            n = norm[:, head, 1:]
            means = torch.stack([n[tokens == c].mean() for c in counted])
            on = counted[means >= active * means.max()]
            act = torch.isin(tokens, on) & in_count
            sil = in_count & ~act
            rec = {"layer": layer, "head": head, "active_tokens": on.tolist()}
            rec["coverage"] = act.sum().item() / in_count.sum().item()
            rec["quiet_ratio"] = (n[sil].mean() / n[act].mean()).item() if sil.any() else float("nan")
            rec["conditional"] = bool(rec["coverage"] <= coverage and rec["quiet_ratio"] <= quiet)
            wq = w[:, head, 1:, :]  # (batch, query, key), queries from position 1
            null_mass = (wq * is_null[:, head, None, :]).sum(-1)
            weighted = (wq * key_norm[:, head, None, :]).sum(-1)  # what the row would write without cancellation
            coherence = torch.where(weighted > 0, n / weighted, torch.nan)
            for name, rows in (("silent", sil), ("active", act)):
                rec[f"first_{name}"] = wq[..., 0][rows].mean().item() if rows.any() else float("nan")
                rec[f"null_{name}"] = null_mass[rows].mean().item() if rows.any() else float("nan")
                rec[f"row_{name}"] = wq.sum(-1)[rows].mean().item() if rows.any() else float("nan")
                rec[f"coherence_{name}"] = coherence[rows].nanmean().item() if rows.any() else float("nan")
            records.append(rec)
    return records
