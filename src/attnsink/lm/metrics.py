"""What the GPTs' heads do, measured: where their weight goes, what they write, and which of
them are trigger-conditional. Used in chapters 7 and 8.

Every function reads a model on its *inputs*: windows without their last token (``x[:, :-1]``
of the task's sequences), the positions it was trained on (:func:`attnsink.lm.model.lm_loss`
never feeds the last one, so its position embedding never trains).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_int
from ..metrics import SINK_EPS, first_mean, replace_head_rows, sink_rate
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


def first_value_ratio(values: torch.Tensor) -> torch.Tensor:
    """(heads,): the norm of token 0's value in output space (what a head adds per unit of weight
    on it) over the median of the other positions', each position's norm averaged over the
    sequences first. ``values``: (batch, heads, key, d_model), as :class:`GPT` returns them."""
    norms = values.norm(dim=-1).mean(dim=0)  # (heads, key)
    return norms[:, 0] / norms[:, 1:].median(dim=-1).values


def head_metrics(model: GPT, x: torch.Tensor, *, eps: float = SINK_EPS) -> dict:
    """Per layer and head, on inputs ``x``: ``first_mass`` (layers, heads, query) the weight on
    token 0 at each query position; ``first_mean`` (layers, heads) its mean over queries
    1..L-2 (:func:`attnsink.metrics.first_mean`); ``sink`` = ``Sink_1^eps``
    (:func:`attnsink.metrics.sink_rate`); ``value_ratio`` (layers, heads),
    :func:`first_value_ratio` (over the *median* other token's value)."""
    _, attns, values = _read(model, x)
    first = torch.stack([a[..., 0].mean(dim=0) for a in attns]).cpu()  # (layers, heads, query)
    return {
        "first_mass": first,
        "first_mean": first_mean(attns).cpu(),
        "sink": sink_rate(attns, eps),
        "value_ratio": torch.stack([first_value_ratio(v) for v in values]).cpu(),
    }


COLLAPSE_NATS = 0.1
"""Nats: a head whose rows, at queries from :data:`HEALTH_QUERY` on, average less entropy than
this puts (nearly) all of every row on one key (a uniform row there has at least ln 9 ≈ 2.2)."""
HEALTH_QUERY = 8
"""The first query :func:`training_health` reads: earlier rows see too few keys to spread."""
COLLAPSE_SHARE = 0.5
"""A run whose share of collapsed heads reaches this has collapsed (:func:`training_health`)."""


def training_health(model: GPT, x: torch.Tensor) -> dict:
    """Whether training went well, per head, on inputs ``x``: ``entropy`` (layers, heads), the
    mean entropy in nats of a head's rows at queries :data:`HEALTH_QUERY` and after (each row
    normalised to sum one first, for a rule whose rows need not; rows with no weight left out,
    NaN for a head with no weight anywhere);
    ``query_norm`` (layers,), the Frobenius norm of each layer's query map; ``collapsed_share``,
    the share of the heads with weight somewhere whose entropy is below :data:`COLLAPSE_NATS`;
    and ``collapsed``, whether
    that share reaches :data:`COLLAPSE_SHARE`. Attention-logit growth makes rows one-hot and
    stalls training (Wortsman et al., 2023; Zhai et al., 2023); a collapsed run is a failed
    optimisation, not a property of its attention rule. Used in chapter 8."""
    if x.dim() != 2 or x.shape[1] <= HEALTH_QUERY:
        raise ValueError(f"x must be inputs (batch, more than {HEALTH_QUERY} positions), got {tuple(x.shape)}")
    _, attns, _ = _read(model, x)
    entropy = []
    for w in attns:  # (batch, heads, query, key)
        rows = w[:, :, HEALTH_QUERY:].double()
        total = rows.sum(-1, keepdim=True)
        p = rows / total.clamp(min=1e-300)
        h = -(p * torch.log(p.clamp(min=1e-300))).sum(-1)  # (batch, heads, query)
        live = total[..., 0] > 0
        n = live.sum((0, 2))
        mean = torch.where(live, h, 0).sum((0, 2)) / n.clamp(min=1)
        entropy.append(torch.where(n > 0, mean, torch.nan))  # a head that is off everywhere: NaN
    entropy = torch.stack(entropy).float().cpu()  # (layers, heads)
    d = model.config["d_model"]
    query_norm = torch.stack([b.qkv.weight[:d].detach().norm() for b in model.blocks]).cpu()
    on = ~torch.isnan(entropy)
    share = float((entropy[on] < COLLAPSE_NATS).float().mean()) if on.any() else 0.0
    return {
        "entropy": entropy.tolist(),
        "query_norm": query_norm.tolist(),
        "collapsed_share": share,
        "collapsed": share >= COLLAPSE_SHARE,
    }


ABLATIONS = ("zero", "mean", "first")
"""The ablations :func:`ablate_heads` can make: by zero, by the mean, without token 0's part."""


def _check_ablation(inputs: torch.Tensor, rows: torch.Tensor, kinds, donor, shape: tuple[int, int]) -> None:
    """:func:`ablate_heads`' arguments, or ``ValueError`` naming the one that is wrong."""
    n_layers, n_heads = shape
    if rows.dtype != torch.bool or rows.shape[-2:] != inputs.shape or rows.dim() not in (2, 4):
        raise ValueError(
            f"rows must be bool of shape {tuple(inputs.shape)} or (layers, heads, *{tuple(inputs.shape)}), "
            f"aligned with x[:, :-1]; got {rows.dtype} {tuple(rows.shape)}"
        )
    if rows.dim() == 4 and rows.shape[:2] != (n_layers, n_heads):
        raise ValueError(f"rows has {tuple(rows.shape[:2])} (layers, heads); the model has {(n_layers, n_heads)}")
    if not kinds or not set(kinds) <= {*ABLATIONS, "transplant"}:
        raise ValueError(f"kinds must be some of {(*ABLATIONS, 'transplant')}, got {kinds!r}")
    if ("transplant" in kinds) != (donor is not None):
        raise ValueError('donor must be given exactly when kinds holds "transplant"')
    if donor is not None and (donor.dtype != torch.bool or donor.shape != rows.shape):
        raise ValueError(
            f"donor must be bool of the shape of rows {tuple(rows.shape)}, got {donor.dtype} {tuple(donor.shape)}"
        )


@torch.no_grad()
def ablate_heads(
    model: GPT,
    x: torch.Tensor,
    rows: torch.Tensor,
    kinds: tuple[str, ...] = ABLATIONS,
    *,
    donor: torch.Tensor | None = None,
) -> dict:
    """What each head's output is worth at the queries ``rows``, by ablation: the change in
    the mean next-token loss over every target of sequences ``x`` (n, L) when the head's
    output (what it adds before the output map) at those queries is replaced by zero
    (``zero``), by its mean over those queries (``mean``), and by itself less token 0's part
    (its weight on token 0 times token 0's value: ``first``, what the sink itself contributes),
    one head at a time; each (layers, heads), in nats per token, for each of ``kinds``.
    ``rows`` is bool, (n, L - 1) for every head or
    (layers, heads, n, L - 1) per head, aligned with the inputs ``x[:, :-1]``; ``loss`` is the
    unablated loss. ``"transplant"`` (with ``donor``, bool rows of the shape of ``rows``):
    replaced, query by query, by its output at a ``donor`` query drawn at random (a fixed
    draw): a positive control, which asks whether the loss would notice if the head wrote at
    ``rows`` what it writes at ``donor``.

    What the head writes there, read from the first two (:func:`attnsink.metrics.what_it_writes`):
    nothing if neither moves the loss, a constant if zero costs and the mean does not,
    something that depends on the input if the mean costs too, harmful if either lowers it."""
    inputs, targets = x[:, :-1], x[:, 1:].to(device_of(model))
    n_layers, n_heads = model.config["n_layers"], model.n_heads
    _check_ablation(inputs, rows, kinds, donor, (n_layers, n_heads))
    rows = rows.to(device_of(model))
    donor = None if donor is None else donor.to(device_of(model))
    outputs, firsts = [], []

    def keep(layer, o, w, v):
        outputs.append(o)
        firsts.append(w[..., :1] * v[:, :, None, 0])  # (batch, heads, query, d_head): token 0's part
        return o

    def loss(edit) -> float:
        return _edited_loss(model, inputs, targets, edit)

    base = loss(keep)
    out = {"loss": base, **{kind: torch.zeros(n_layers, n_heads) for kind in kinds}}
    for layer in range(n_layers):
        for head in range(n_heads):
            r = rows if rows.dim() == 2 else rows[layer, head]
            d = None if donor is None else donor if donor.dim() == 2 else donor[layer, head]
            if not r.any() or (d is not None and not d.any()):
                for kind in kinds:
                    out[kind][layer, head] = float("nan")
                continue
            clean = outputs[layer][:, head][r]
            new = {
                "zero": torch.zeros_like(clean),
                "mean": clean.mean(dim=0).expand_as(clean),
                "first": clean - firsts[layer][:, head][r],
            }
            if d is not None:  # the head's outputs at donor queries drawn at random, the same draw for every head
                pool = outputs[layer][:, head][d]
                pick = torch.randint(0, len(pool), (len(clean),), generator=torch.Generator().manual_seed(0))
                new["transplant"] = pool[pick.to(pool.device)]
            for kind in kinds:
                out[kind][layer, head] = loss(replace_head_rows(layer, head, r, new[kind])) - base
    return out


@torch.no_grad()
def ablate_layers(model: GPT, x: torch.Tensor, rows: torch.Tensor) -> list[float]:
    """Per layer, the change in the mean next-token loss over every target of ``x`` when the
    outputs of *all* its heads at the queries ``rows`` (bool, (n, L - 1), aligned with
    ``x[:, :-1]``) are replaced by zero at once: heads that share a job can each be spared
    alone (:func:`ablate_heads`) and not all together."""
    inputs, targets = x[:, :-1], x[:, 1:].to(device_of(model))
    if rows.dtype != torch.bool or rows.shape != inputs.shape:
        raise ValueError(
            f"rows must be bool of shape {tuple(inputs.shape)}, aligned with x[:, :-1]; "
            f"got {rows.dtype} {tuple(rows.shape)}"
        )
    rows = rows.to(device_of(model))

    def loss(edit) -> float:
        return _edited_loss(model, inputs, targets, edit)

    base = loss(None)
    out = []
    for layer in range(model.config["n_layers"]):

        def silence(at, o, w, v, layer=layer):
            if at != layer:
                return o
            return o.masked_fill(rows[:, None, :, None], 0.0)

        out.append(loss(silence) - base)
    return out


@torch.no_grad()
def transplant_layer(
    model: GPT, x: torch.Tensor, rows: torch.Tensor, donor: torch.Tensor, layer: int, *, scale: float = 1.0
) -> float:
    """The positive control of :func:`ablate_heads` for a whole layer: the change in the mean
    next-token loss over every target of ``x`` when, at each query of ``rows``, *all* heads of
    ``layer`` write what they wrote together at one ``donor`` query drawn at random (the same
    fixed draw as :func:`ablate_heads`' ``"transplant"``, so that with one head the two
    agree), times ``scale`` (to ask what a louder or quieter output would cost; 0 zeroes
    the layer there). ``rows`` and ``donor`` are bool (n, L - 1), aligned with ``x[:, :-1]``;
    nothing is changed at the other queries, nor in the other layers."""
    if not math.isfinite(scale) or scale < 0:
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
    inputs, targets = x[:, :-1], x[:, 1:].to(device_of(model))
    for name, mask in (("rows", rows), ("donor", donor)):
        if mask.dtype != torch.bool or mask.shape != inputs.shape:
            raise ValueError(
                f"{name} must be bool of shape {tuple(inputs.shape)}, aligned with x[:, :-1]; "
                f"got {mask.dtype} {tuple(mask.shape)}"
            )
    if not 0 <= layer < model.config["n_layers"]:
        raise ValueError(f"layer must be in [0, {model.config['n_layers']}), got {layer}")
    if not rows.any() or not donor.any():
        raise ValueError("rows and donor must each hold at least one query")
    rows, donor = rows.to(device_of(model)), donor.to(device_of(model))
    pick = torch.randint(0, int(donor.sum()), (int(rows.sum()),), generator=torch.Generator().manual_seed(0))

    def move(at, o, w, v):
        if at != layer:
            return o
        by_query = o.transpose(1, 2).clone()  # (batch, query, heads, d_head)
        by_query[rows] = scale * by_query[donor][pick.to(o.device)]
        return by_query.transpose(1, 2)

    return _edited_loss(model, inputs, targets, move) - _edited_loss(model, inputs, targets, None)


SINK_ROW = 0.5
"""A query at which a head puts more than this share of its weight on token 0, and more than
:data:`SINK_ROW_UNIFORM` times what an even spread over its keys would, is one of its *sink
rows* (:func:`sink_rows`)."""
SINK_ROW_UNIFORM = 2.0
"""How many times the even spread's weight on token 0 (``1 / (i + 1)`` at query ``i``) a
sink row must exceed: at queries 1 and 2 an even spread alone gives a half or a third, so
without it the earliest queries would count as sink rows for any head."""


def sink_rows(weights: list[torch.Tensor], at: float = SINK_ROW, uniform: float = SINK_ROW_UNIFORM) -> torch.Tensor:
    """(layers, heads, batch, query) bool: the queries from position 1 on at which each head
    puts more than ``at`` of its weight on token 0 and more than ``uniform / (i + 1)`` at query
    ``i`` (query 0 sees only token 0, so it is never one), for :func:`ablate_heads`.
    ``weights``: per layer, (batch, heads, query, key)."""
    if not 0 <= at < 1:
        raise ValueError(f"at must be in [0, 1), got {at!r}")
    if not (isinstance(uniform, (int, float)) and not isinstance(uniform, bool) and uniform >= 0):
        raise ValueError(f"uniform must be a number >= 0, got {uniform!r}")
    first = torch.stack([w[..., 0].transpose(0, 1) for w in weights])  # (layers, heads, batch, query)
    even = 1.0 / torch.arange(1, first.shape[-1] + 1, dtype=first.dtype, device=first.device)
    rows = (first > at) & (first > uniform * even)
    rows[..., 0] = False
    return rows


def _edited_loss(model: GPT, inputs: torch.Tensor, targets: torch.Tensor, edit) -> float:
    """The mean next-token loss of ``model`` (in eval mode) on ``inputs`` against ``targets``,
    its heads' outputs changed by ``edit`` (see :meth:`GPT.forward`)."""
    was = model.training
    model.eval()
    try:
        logits = model(inputs, edit=edit)
    finally:
        model.train(was)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)).item()


def window_losses(model: GPT, x: torch.Tensor, *, batch: int = 256) -> torch.Tensor:
    """Each window's mean next-token cross-entropy (nats per token) over the positions the
    model trained on (inputs ``x[:, :-1]``, targets ``x[:, 1:]``: what
    :func:`attnsink.lm.model.lm_loss` averages), float64 of shape (n,), ``batch`` windows at a
    time: with :meth:`attnsink.lm.data.CharText.tiles`, the loss of the whole held-out text
    window by window, so that its mean has a standard error."""
    check_int("batch", batch, 1)
    if x.dim() != 2 or x.shape[1] < 2:
        raise ValueError(f"x must be (n, seq_len) windows with seq_len >= 2, got {tuple(x.shape)}")
    out, was = [], model.training
    model.eval()
    try:
        with torch.no_grad():
            for chunk in x.split(batch):
                chunk = chunk.to(device_of(model))
                logits = model(chunk[:, :-1])
                loss = F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:], reduction="none")
                out.append(loss.double().mean(1).cpu())
    finally:
        model.train(was)
    return torch.cat(out)


def _entropy(weights: torch.Tensor) -> torch.Tensor:
    """(batch, heads, query): each row's entropy once normalised to sum one, over the entropy of
    the uniform row on the keys it sees (1: spread evenly; 0: on one key); NaN for query 0 (it
    sees one key) and for rows with no weight."""
    total = weights.sum(-1, keepdim=True)
    p = weights / total
    h = -(p * torch.log(p.clamp(min=1e-30))).sum(-1)
    seen = torch.arange(1, weights.shape[-1] + 1, dtype=weights.dtype, device=weights.device)
    h = h / torch.log(seen)
    return torch.where(total[..., 0] > 0, h, torch.nan)


@torch.no_grad()
def backcopy_metrics(model: GPT, task: BigramBackcopy, *, n: int = 256, seed: int = 2**31 - 2) -> dict:
    """How a model trained on Bigram-Backcopy does it, on ``n`` fresh sequences.

    The loss over every target (``loss``), at the copy targets (the token after a trigger:
    ``copy_loss``, with the accuracy ``copy_acc``) and at the ordinary targets from the second
    on (``other_loss``; the first follows BOS), each with the
    best predictor's loss on the same targets (``best_*``, from
    :meth:`BigramBackcopy.best_loss`). Per layer and head (lists of lists), at queries that are
    triggers (``*_trigger``) and at ordinary queries from the first real token on
    (``*_ordinary``): the weight on token 0 (``first_*``) and the whole row's weight
    (``row_*``); at ordinary queries the rows' normalised entropy (``entropy_ordinary``, 1 for
    weight spread evenly, see :func:`_entropy`), the head's mean output norm (through the
    output map, ``out_ordinary``) and that over its mean output norm at triggers
    (``out_ratio``); :func:`first_value_ratio` (``first_value``); and what the head's
    output at ordinary queries is worth (:func:`ablate_heads`: ``ablate_zero``,
    ``ablate_mean``), and at triggers, where a copying head's output is the answer
    (``ablate_trigger_zero``, ``ablate_trigger_mean``). Per layer, what all its heads' outputs
    are worth together (:func:`ablate_layers`), at ordinary queries (``layer_zero_ordinary``),
    at triggers (``layer_zero_trigger``) and everywhere (``layer_zero_all``).
    """
    x = task.sample(n, seed=seed).to(device_of(model))
    logits, attns, values = _read(model, x[:, :-1])
    logp = torch.log_softmax(logits, dim=-1).gather(-1, x[:, 1:, None])[..., 0]
    best = task.best_loss(x).to(logp.device)
    copy = task.trigger_targets(x)  # (n, L - 1), aligned with the queries of x[:, :-1]
    ordinary = ~copy
    # query 0 sees only itself (BOS, or the first token without BOS): weight 1 on token 0; its target
    # follows BOS uniformly (or the chain from the first token), not like the other ordinary targets
    ordinary[:, 0] = False
    out = {
        "loss": -logp.mean().item(),
        "best_loss": best.mean().item(),
        "copy_loss": -logp[copy].mean().item(),
        "best_copy_loss": best[copy].mean().item(),
        "copy_acc": (logits.argmax(-1)[copy] == x[:, 1:][copy]).float().mean().item(),
        "other_loss": -logp[ordinary].mean().item(),
        "best_other_loss": best[ordinary].mean().item(),
    }
    for name, rows in (("trigger", copy), ("ordinary", ordinary)):
        w = rows[:, None].float()  # (n, 1, query)
        out[f"first_{name}"] = [((a[..., 0] * w).sum((0, 2)) / w.sum((0, 2))).tolist() for a in attns]
        out[f"row_{name}"] = [((a.sum(-1) * w).sum((0, 2)) / w.sum((0, 2))).tolist() for a in attns]
    out["entropy_ordinary"] = [_entropy(a).transpose(0, 1)[:, ordinary].nanmean(-1).tolist() for a in attns]
    out["out_ordinary"], out["out_ratio"], out["first_value"] = [], [], []
    for a, v in zip(attns, values):
        norm = (a @ v).norm(dim=-1).transpose(0, 1)  # (heads, n, query)
        out["out_ordinary"].append(norm[:, ordinary].mean(-1).tolist())
        out["out_ratio"].append((norm[:, ordinary].mean(-1) / norm[:, copy].mean(-1)).tolist())
        out["first_value"].append(first_value_ratio(v).tolist())
    for name, rows in (("", ordinary), ("_trigger", copy)):
        ablation = ablate_heads(model, x, rows, kinds=("zero", "mean"))
        out[f"ablate{name}_zero"], out[f"ablate{name}_mean"] = ablation["zero"].tolist(), ablation["mean"].tolist()
    out["layer_zero_ordinary"] = ablate_layers(model, x, ordinary)
    out["layer_zero_trigger"] = ablate_layers(model, x, copy)
    out["layer_zero_all"] = ablate_layers(model, x, torch.ones_like(copy))
    return out


HEAD_KEYS = (
    "first_trigger",
    "first_ordinary",
    "row_trigger",
    "row_ordinary",
    "entropy_ordinary",
    "out_ordinary",
    "out_ratio",
    "first_value",
    "ablate_zero",
    "ablate_mean",
    "ablate_trigger_zero",
    "ablate_trigger_mean",
)


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
    are left out), and ``weighed_*``, the mean of that denominator ``sum_j w_j |v_j|``: what
    the head's weights would write if nothing cancelled.
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
                rec[f"weighed_{name}"] = weighted[rows].mean().item() if rows.any() else float("nan")
            records.append(rec)
    return records
