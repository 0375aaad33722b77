"""Chapter 4's claims: with several heads a softmax model can cancel instead of sinking, at a
price (the exact layers of :func:`attnsink.construct.cancelling_layer` and the floor
:func:`attnsink.theory.cancellation_weight_floor`); head by head, a head that does not move
must sink; trained multi-layer models (:func:`attnsink.experiments.multi_layer`) sink.

The first part holds what the chapter computes beyond the library's analyses (the exact layer
run on sequences, the floor with its bound of 2, certified bounds on the least weight, the
paths on a budget); the second the measures and the claims."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import torch

from ..analysis import cancelling_frontier, model_name, value_weight
from ..construct import (
    cancelling_heads,
    cancelling_layer,
    cancelling_layer_float,
    cancelling_layer_rows,
    extremal_logits,
)
from ..metrics import EVAL_SEED, evaluate
from ..profiles import MULTI_LAYER, N_TEST
from ..prose import bound, readable
from ..theory import cancellation_weight_floor, fewest_cancelling_heads
from .base import Chapter
from .bounds import bound_cell, printed

CHAPTER = Chapter("ch4")
BOTH = ("quick", "full")
CAPS = (0.5, 0.75, 0.9)
"""The caps on a head's weight on BOS whose paths on a budget the chapter computes."""
PAPER_MULTILAYER = (1e-4, 50_000)
"""The defaults ``--lr`` and ``--max_steps`` of ``figure_code/fig_multilayer.py`` in the paper's
code (github.com/YuvMilo/sinks-are-provably-necessary, read at commit fe8a438): the check
compares the full profile with them, as read there, since the book cannot fetch that file."""

# ---- what the chapter computes ----


def chebyshev_logits(seq_len: int, theta: float) -> list[Fraction]:
    """The ``seq_len - 1`` heads' factors ``c_h = e^(b_h)`` at the Chebyshev nodes of
    ``(0, C]``, ``C = 2 theta / (1 - theta)``, as rationals (so that the exact layer stays exact)."""
    cap, n = 2 * theta / (1 - theta), seq_len - 1
    nodes = [cap / 2 * (1 + math.cos(math.pi * (2 * k + 1) / (2 * n))) for k in range(n)]
    return [Fraction(v).limit_denominator(10**6) for v in nodes]


def path_bos_weight(seq_len: int, theta: float) -> float:
    """The largest weight a head of the path capped at ``theta`` (:func:`price_paths`) puts on
    BOS at a row ``i >= 1``: ``1/(i+1) <= 1/2`` at a non-trigger row (1/2 at row 1), and
    ``c_h/(c_h+j)`` at the trigger row ``j``, largest at ``j = 2``. The value weights do not
    change where a head looks, so this holds for every point of the path."""
    return max(0.5, max(float(c / (c + 2)) for c in chebyshev_logits(seq_len, theta)))


def crossing_two(seq_len: int) -> float:
    """The cap ``theta`` at which ``F_L(theta)`` falls to 2 (bisection on ``[1/2, 1)``, where
    ``F_L`` falls with ``theta``); NaN where ``F_L(1/2) <= 2``."""
    F = cancellation_weight_floor
    lo, hi = 0.5, 1 - 1e-12
    if F(seq_len, lo) <= 2:
        return math.nan
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if F(seq_len, mid) > 2 else (lo, mid)
    return (lo + hi) / 2


def price_floor(seq_len: int, theta: float) -> float:
    """The proved floor of the theorem "The price of cancelling": ``max(F_L(theta), 2)``."""
    return max(cancellation_weight_floor(seq_len, theta), 2.0)


def run_exact_layer(c, alpha, *, d: int = 16, seed: int = 0) -> pd.DataFrame:
    """The exact layer (logits ``c``, value weights ``alpha``) on one sequence per trigger
    position, its noise on a grid of 1/1000: per trigger ``j``, the largest entry of the update
    the trigger row must add (every other row must add 0), the largest absolute error in
    exact arithmetic, the largest weight a head puts on BOS at a row ``i >= 1``, the largest
    absolute error of the same layer run in float64 and where it sits (row, channel); hidden
    (``_``): the largest float64 error at the non-trigger rows."""
    L = len(c) + 1
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(2, L):
        x = [[Fraction(0)] * d for _ in range(L)]
        x[0][0] = Fraction(1)  # BOS
        for i in range(1, L):
            x[i][1 if i == j else d - 1] = Fraction(1)  # the trigger channel, or the bias
            for k in range(2, d - 1):
                x[i][k] = Fraction(int(rng.integers(-999, 1000)), 1000)
        update, bos = cancelling_layer_rows(x, j, c, alpha)
        # what the trigger row must add: the mean of tokens 1..j; every other row, nothing
        target = [sum(t[k] for t in x[1 : j + 1]) / j for k in range(d)]
        error = max(abs(u - (target[k] if i == j else 0)) for i, row in enumerate(update) for k, u in enumerate(row))
        in_float = cancelling_layer_float(x, j, c, alpha)
        exact = np.array([[float(u) for u in row] for row in update])
        off = np.abs(in_float - exact)  # (row, channel)
        at_row, at_channel = np.unravel_index(off.argmax(), off.shape)
        channel = {0: "BOS", 1: "trigger", d - 1: "bias"}.get(int(at_channel), "noise")
        rows.append(
            {
                "trigger j": j,
                "largest |update| needed": float(max(abs(v) for v in target)),
                "largest |error|": float(error),
                "largest BOS weight, rows i ≥ 1": float(max(w for head in bos for w in head[1:])),
                "largest |error| in float64": float(off.max()),
                "float64: at row, channel": f"{int(at_row)}, {channel}",
                "_float64 non-trigger": float(np.delete(off, j, axis=0).max()),
            }
        )
    return pd.DataFrame(rows)


def floor_table(seq_len: int, thetas) -> pd.DataFrame:
    """Per cap ``theta``: ``F_L(theta)``, the proved floor ``max(F_L(theta), 2)`` and the fewest
    heads an exact layer of the family can have."""
    return pd.DataFrame(
        [
            {
                "cap θ": th,
                "F_L(θ)": cancellation_weight_floor(seq_len, th),
                "proved floor max(F_L, 2)": price_floor(seq_len, th),
                "fewest heads": fewest_cancelling_heads(seq_len, th),
            }
            for th in thetas
        ]
    )


BOUND_SIDES = {
    "F_L(θ)": "down",
    "proved floor max(F_L, 2)": "down",
    "proved floor": "down",
    "least weight ≥": "down",
    "least ÷ F_L ≥": "down",
    "an exact layer's weight": "up",
    "floor F_L(1/2)": "down",
    "median D̃_i (lower bound)": "down",
    "least mean D̃_i, diffuse (lower bound)": "down",
    "proved bound": "up",
}
"""The chapter's table columns that hold a bound, each with the side its cells round to: down
for a proved floor, a certificate or a certified lower bound (Tables 4.3, 4.4, 4.5, 4.9, 4.12),
up for a ceiling (an exact layer's weight bounds the least weight from above; Table 4.10's
proved bound on the error)."""


def bound_formats(df: pd.DataFrame, precision: int = 3) -> dict:
    """The ``formats`` of :func:`attnsink.book.table` for the bound columns of ``df``
    (:data:`BOUND_SIDES`): each cell as the table prints numbers, rounded to its safe side
    (:func:`attnsink.claims.bounds.bound_cell`), so that no bound prints past its value."""
    return {c: bound_cell(side, precision) for c, side in BOUND_SIDES.items() if c in df.columns}


def _test_rows(c: np.ndarray, seq_len: int) -> np.ndarray:
    """(seq_len - 1, points): the functions ``1`` and ``1/(c + j)``, ``j = 2 .. seq_len - 1``."""
    return np.vstack([np.ones_like(c)] + [1 / (c + j) for j in range(2, seq_len)])


def least_weight_bounds(seq_len: int, theta: float, *, iters: int = 2000) -> dict:
    """Bounds on the least total value weight of an exact layer of the family under the cap
    ``theta``. The lower bound is a certificate: any coefficients ``nu`` give the function
    ``g(c) = nu_0 + sum_j nu_j / (c + j)`` and ``sum_h |alpha_h| >= (sum_j nu_j / j) / max |g|``
    over ``[0, C]`` (the theorem's pairing, with ``g`` free). ``nu`` comes from Lawson's
    reweighted least squares; ``max |g|`` is bounded above rigorously (the largest value on a
    grid of spacing ``Delta`` plus ``Delta^2 max|g''| / 8``). The upper bound is an exact layer
    (:func:`attnsink.construct.cancelling_layer`) whose logits sit where ``|g|`` peaks."""
    L, cap = seq_len, 2 * theta / (1 - theta)
    grid = np.unique(np.concatenate([np.geomspace(1e-9, cap, 4000), np.linspace(0, cap, 4000)]))
    A, b = _test_rows(grid, L), np.array([0.0] + [1 / j for j in range(2, L)])
    w = np.full(len(grid), 1 / len(grid))
    for _ in range(iters):  # Lawson: minimise max |g| on the grid subject to b . nu = 1
        z = np.linalg.solve((A * w) @ A.T, b)
        nu = z / (b @ z)
        w = w * np.abs(A.T @ nu)
        w /= w.sum()
    fine = np.linspace(0, cap, 10**6 + 1)
    g = _test_rows(fine, L).T @ nu
    curvature = sum(2 * abs(nu[k]) / j**3 for k, j in enumerate(range(2, L), start=1))  # >= |g''| on c >= 0
    top = np.abs(g).max() + curvature * (cap / 10**6) ** 2 / 8 + 1e-12 * np.abs(nu).sum()
    a = np.abs(g)
    peaks = np.flatnonzero(np.r_[True, a[1:-1] >= np.maximum(a[:-2], a[2:]), True])
    peaks = peaks[np.r_[True, np.diff(peaks) > 1]]  # a flat top of equal grid values is one peak, not
    # two logits a grid step apart (they made one layer's weight 8e8 where its bound was 2,700)
    best = sorted(fine[peaks[np.argsort(-a[peaks])][: L - 1]])
    logits = [max(Fraction(v).limit_denominator(10**9), Fraction(1, 10**9)) for v in best]
    alpha = cancelling_layer(L, logits)
    return {"lower": float(b @ nu / top), "upper": float(sum(abs(v) for v in alpha)), "alpha": alpha}


def price_gaps(lengths=(4, 6), thetas=(0.5, 0.75, 0.9, 0.99)) -> pd.DataFrame:
    """Per length and cap: ``F_L(theta)``, the proved floor, and the bounds of
    :func:`least_weight_bounds` on the least weight, with the lower bound over ``F_L``."""
    rows = []
    for L in lengths:
        for th in thetas:
            bounds = least_weight_bounds(L, th)
            f = cancellation_weight_floor(L, th)
            rows.append(
                {
                    "L": L,
                    "cap θ": th,
                    "F_L(θ)": f,
                    "proved floor": max(f, 2.0),
                    "least weight ≥": bounds["lower"],
                    "an exact layer's weight": bounds["upper"],
                    "least ÷ F_L ≥": bounds["lower"] / f,
                    "_positive": float(sum(v for v in bounds["alpha"] if v > 0)),
                }
            )
    return pd.DataFrame(rows)


def price_paths(task, thetas=CAPS) -> pd.DataFrame:
    """One path of (weight, error) per cap: the ``L - 1`` heads of the exact layer, logits at
    :func:`chebyshev_logits`, value weights from ridge fits (:func:`attnsink.analysis.cancelling_frontier`)."""
    paths = []
    for th in thetas:
        c = chebyshev_logits(task.seq_len, th)
        path = cancelling_frontier(task, c, [10.0**-k for k in range(0, 21)], n=N_TEST)
        paths.append(path.assign(path=f"cap {th:g} at every row i ≥ 1", theta=th))
    return pd.concat(paths, ignore_index=True)


def budget_models(deep, task) -> pd.DataFrame:
    """The models beside the paths: every trained model of ``deep`` (its relative error at the
    trigger as recorded) and the two cancelling heads at margins 5, 10 and 15 (``margin``, NaN
    for a trained model), each with its total value weight."""
    rows = []
    for run in deep.runs:
        key = (run["attention"], run["n_layers"], run["n_heads"])
        (model,) = [r.model for r in deep.results[key] if r.seed == run["seed"]]
        label = f"trained {run['attention']} {model_name(run['n_layers'], run['n_heads'])}"
        rows.append({"model": label, "value weight": value_weight(model), "rel_err_trigger": run["rel_err_trigger"]})
    for margin in (5.0, 10.0, 15.0):
        m = cancelling_heads(task, margin)
        err = evaluate(m, task, n=N_TEST).summary()["rel_err_trigger"]
        label = "prop-cancel (margins 5, 10, 15)"
        rows.append({"model": label, "value weight": value_weight(m), "rel_err_trigger": err, "margin": margin})
    return pd.DataFrame(rows)


def weight_for(path: pd.DataFrame, err: float) -> float:
    """The weight at which a path reaches the error ``err`` (log-log interpolation between
    its points); NaN where it does not reach it."""
    p = path.sort_values("weight")
    if p["rel_err_trigger"].min() > err:
        return math.nan
    return float(10 ** np.interp(np.log10(err), np.log10(p["rel_err_trigger"][::-1]), np.log10(p["weight"][::-1])))


def cap_rows(deep, task) -> pd.DataFrame:
    """Per softmax 2 x 2 model: the largest weight any head puts on BOS at a trigger row and at
    a non-trigger row ``i >= 1``, over the test sequences (a cap binds row by row)."""
    rows = []
    for r in deep.results.get(("softmax", 2, 2), []):
        ev = evaluate(r.model, task, n=N_TEST)
        bos = torch.stack([a[..., 0] for a in ev.attn], dim=1)  # (sequences, layers, heads, rows)
        rows.append(
            {
                "seed": r.seed,
                **{
                    kind: bos.masked_fill(~rows_[:, None, None, :], 0.0).amax().item()
                    for kind, rows_ in (("trigger", ev.batch.is_trigger), ("non-trigger", ev.batch.is_nontrigger))
                },
            }
        )
    return pd.DataFrame(rows)


def cancelling_moves_floor(task, margin: float = 20.0) -> float:
    """The least move ``|o_i - o_0|`` of either head of :func:`~attnsink.construct.cancelling_heads`
    over the non-trigger rows ``i >= 1`` of noise-free sequences, one per trigger position. A
    head's move at such a row is ``|S_i| / (i + 1)``, ``S_i = x_1 + ... + x_i``; the noise only
    adds to ``|S_i|``, so this is the least move over every input (1/2, at row 1)."""
    j = torch.arange(2, task.seq_len)
    batch = task.build(j, torch.full((len(j), task.n_noise_positions, task.n_noise), 0.5))
    with torch.no_grad():
        _, attn, values = cancelling_heads(task, margin)(batch.x, return_values=True)
    o = attn[0].double() @ values[0].double()  # (sequence, head, row, d): each head's output
    move = (o - o[:, :, :1]).norm(dim=-1)  # (sequence, head, row)
    return float(move.transpose(1, 2)[batch.is_nontrigger].min())


def cancel_float64(task, margin: float = 20.0, n: int = 1000) -> dict:
    """The two cancelling heads at ``margin`` on the ``n`` test sequences of
    :func:`attnsink.analysis.cancelling_table` (the same seed), run in float64 with the target
    computed in float64 too: the largest error of a row (its norm, what the proof of
    "Two heads need no sink" bounds) and of one entry, and that bound,
    ``sqrt(d) L e^(-margin)``."""
    batch = task.sample(n, generator=torch.Generator().manual_seed(EVAL_SEED))
    x = batch.x.double()
    with torch.no_grad():
        y_hat, _, _ = cancelling_heads(task, margin).double()(x, return_values=True)
    count = torch.arange(1, task.seq_len, dtype=torch.float64)[None, :, None]
    mean = x[:, 1:].cumsum(dim=1) / count  # row i >= 1: the mean of x_1..x_i
    y = x.clone()
    y[:, 1:] += torch.where(batch.is_trigger[:, 1:, None], mean, torch.zeros_like(mean))
    err = y_hat - y
    return {
        "row": float(err.norm(dim=-1).max()),
        "entry": float(err.abs().max()),
        "bound": math.sqrt(task.d_model) * task.seq_len * math.exp(-margin),
    }


# ---- the measures ----


def _at_least(x: float, digits: int = 2) -> float:
    """``x`` rounded down to ``digits`` significant figures: a lower bound stays one when the
    text rounds it (0.8287 -> 0.82, not 0.83)."""
    if x <= 0 or not math.isfinite(x):
        return x
    scale = 10 ** (digits - 1 - math.floor(math.log10(x)))
    return math.floor(round(x * scale, 9)) / scale  # round: 0.7 / 0.002 stays 350


def _at_most(x: float, digits: int = 2) -> float:
    """``x`` rounded up to ``digits`` significant figures: an upper bound stays one when the
    text rounds it (0.6635 -> 0.67, not 0.66)."""
    if x <= 0 or not math.isfinite(x):
        return x
    scale = 10 ** (digits - 1 - math.floor(math.log10(x)))
    return math.ceil(round(x * scale, 9)) / scale  # round: 0.1 + 0.2 stays 0.3


def _sig(x: float, digits: int = 2) -> float:
    """``x`` rounded to ``digits`` significant figures, as a sentence that states it exactly
    quotes it (1.743e17 -> 1.7e17)."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


def _construction(cancel, exact, alpha, floors, gaps) -> dict:
    """The cancelling constructions and the price of cancelling (sections 2 and 3)."""
    F = cancellation_weight_floor
    weights = float(sum(abs(a) for a in alpha))
    found = [
        float(sum(abs(a) for a in cancelling_layer(n, extremal_logits(n, 0.5)))) / F(n, 0.5) for n in FOUND_LENGTHS
    ]
    three = [float(sum(abs(a) for a in cancelling_layer(3, [Fraction(1, 10**k), Fraction(2)]))) for k in range(2, 9)]
    heavy = math.factorial(15) ** (1 / 14)
    gap = gaps.set_index(["L", "cap θ"])
    below_two = [th for th in np.linspace(0.5, 0.999, 500) if F(4, th) < 2]
    cross16 = crossing_two(16)
    printed16 = readable(cross16, 3)  # the text's "from theta = 0.977 on"
    near = 1 - 1e-9  # theta -> 1: 0 for even L, 2 (L-1)! / (L-1)^(L-2) for odd L
    where = exact["float64: at row, channel"]
    common = exact.groupby([where, exact["largest |error| in float64"]])["trigger j"].agg(list)
    (common_where, common_err), common_j = max(common.items(), key=lambda kv: len(kv[1]))
    return {
        "cancel_err": float(cancel["largest |error|"].iloc[-1]),
        "_cancel_falls": bool((cancel["largest |error|"].diff().dropna() < 0).all()),
        "_cancel_nontrig_bos": float(cancel["largest BOS weight, non-trigger rows"].max()),
        "_cancel_uniform_gap": float(cancel["largest gap to 1/(i+1), non-trigger rows"].max()),
        "_cancel_trig_bos": float(cancel["head 2's BOS weight at the trigger (min)"].iloc[-1]),
        "exact_heads": len(alpha),
        "exact_weights": weights,
        "exact_largest": float(max(abs(a) for a in alpha)),
        "_exact_error": float(exact["largest |error|"].max()),
        "_exact_bos": float(exact["largest BOS weight, rows i ≥ 1"].max()),
        "_exact_triggers": len(exact),
        "exact_float64_error": readable(bound(float(exact["largest |error| in float64"].max()), "up", 3), 3),
        "_exact_float64_error": float(exact["largest |error| in float64"].max()),
        "exact_update_max": float(exact["largest |update| needed"].max()),
        "exact_float64_nontrigger": float(exact["_float64 non-trigger"].max()),
        "float64_common": float(common_err),
        "float64_common_n": len(common_j),
        "float64_common_j_lo": int(min(common_j)),
        "float64_common_j_hi": int(max(common_j)),
        "_float64_common_where": common_where,
        "_float64_common_contiguous": sorted(common_j) == list(range(min(common_j), max(common_j) + 1)),
        "exact_float64_spacing": int(np.spacing(float(max(abs(a) for a in alpha)))),
        "alpha_float_sum": float(sum(Fraction(float(a)) for a in alpha)),
        "exact_over_floor": weights / F(16, 0.5),
        "floor_half": F(16, 0.5),
        "floor_09": _at_least(F(16, 0.9)),  # a floor, quoted as one: rounded down
        "floor_099": _at_least(F(16, 0.99)),
        "_floors": floors,
        "heavy_head": _at_least(heavy / (heavy + 2)),
        "_heavy": heavy / (heavy + 2),
        "floor_three": int(round(F(3, 0.5))),
        "_three": three,
        "floor_found_lo": min(found),
        "floor_found_hi": max(found),
        "_found": found,
        "_found_grows": all(b > a for a, b in zip(found, found[1:])),
        "found_L_hi": FOUND_LENGTHS[-1],
        "_gaps": gaps,
        **{f"gap6_{k}": float(gap.loc[(6, th), "least ÷ F_L ≥"]) for k, th in _GAP_KEYS.items() if th < 0.99},
        "gap6_099": _at_least(gap.loc[(6, 0.99), "least ÷ F_L ≥"]),
        "gap4_099": _at_least(gap.loc[(4, 0.99), "least ÷ F_L ≥"]),
        "least4_099": readable(float(gap.loc[(4, 0.99), "least weight ≥"]), 3),
        "least6_099": _at_least(gap.loc[(6, 0.99), "least weight ≥"]),
        "theta_two_4": min(below_two),
        "theta_two_16": printed16,
        "_f16_around": (F(16, float(printed16) - 5e-4), F(16, float(printed16) + 5e-4)),
        "_f16_falls": all(
            F(16, a) > F(16, b) for a, b in zip(np.linspace(0.5, 0.999, 200), np.linspace(0.5, 0.999, 200)[1:])
        ),
        "_ratios_grow": all(F(n + 1, 0.5) / F(n, 0.5) > F(n, 0.5) / F(n - 1, 0.5) for n in range(4, 20)),
        "_growth_bound": all(
            F(n, th) >= math.factorial(n - 1) * ((1 - th) / th) ** (n - 2) - 1 for n in range(3, 20) for th in CAPS
        ),
        "_limits": all(
            abs(F(n, near) - (n % 2) * 2 * math.factorial(n - 1) / (n - 1) ** (n - 2)) < 1e-6 for n in range(3, 20)
        ),
        "_three_formula": all(abs(F(3, th) - 2 / th) < 1e-12 for th in (0.5, 0.75, 0.9)),
    }


_GAP_KEYS = {"half": 0.5, "34": 0.75, "09": 0.9, "099": 0.99}
FOUND_LENGTHS = tuple(range(4, 17))
"""The lengths at which the chapter compares an exact layer's weight with ``F_L(1/2)``."""


def _within_layers(terms: pd.DataFrame, model: str) -> pd.DataFrame:
    """Per (seed, layer) of ``model``: the mean, over the non-trigger rows of the test
    sequences, of the sum of the heads' moves and of the layer's move (the length of the
    sum of the heads' moves), and their ratio (1: the heads do not cancel one another)."""
    t = terms[terms["model"] == model]
    if t.empty:
        return pd.DataFrame(columns=["seed", "layer", "heads' moves", "layer's move", "ratio"])
    # head_bound_terms lists the same rows, in the same order, for every head of a layer
    t = t.assign(_row=t.groupby(["seed", "layer", "head"]).cumcount())
    rows = t.groupby(["seed", "layer", "_row"]).agg(moves=("moved", "sum"), layer=("layer_moved", "first"))
    per = rows.groupby(level=["seed", "layer"]).mean()
    return pd.DataFrame(
        {"heads' moves": per["moves"], "layer's move": per["layer"], "ratio": per["moves"] / per["layer"]}
    ).reset_index()


def _heads(checks, cancel_terms, terms, per_head, summary, heads) -> dict:
    """Each head on its own, and the trained models (sections 4 and 5)."""
    small = per_head[per_head["model"] == model_name(2, 2)]
    big = summary[summary["model"] == model_name(4, 4)]
    two = summary[summary["model"] == model_name(2, 2)]
    diffuse = big[big["diffuse"] > 0]
    # each diffuse head of the 4 x 4 models, averaged over its own rows
    one = per_head[(per_head["model"] == model_name(4, 4)) & (per_head["kind"] == "diffuse")]
    within = _within_layers(terms, model_name(4, 4))
    within2 = _within_layers(terms, model_name(2, 2)).dropna(subset=["ratio"])
    top2 = within2.loc[within2["ratio"].idxmax()] if len(within2) else None
    soft = heads[heads.attention == "softmax"]
    parked = soft[soft.kind.isin(["sink", "dormant"])]
    gaps = pd.concat([soft.bos_mass_nontrigger - 0.5, parked.trigger_bos_share - 0.5]).abs()
    margin = float(gaps.min()) if len(gaps) else math.nan  # how near a head's average comes to 1/2
    across = big["largest layer move"] / big["mean |update|, non-trigger rows"]
    soft2 = heads[(heads.attention == "softmax") & (heads.n_layers == 2)]
    kinds = small["kind"].value_counts()
    return {
        "random_pairs": int(checks["(sequence, row, head) triples"].sum()),
        "_random_violations": int(checks["violations"].sum()),
        "random_slack": bound(float(checks["largest slack"].max()), "up"),
        "_random_slack": float(checks["largest slack"].max()),
        "cancel_move": _at_least(cancel_terms["moved"].min()),
        "_cancel_move": float(cancel_terms["moved"].min()),
        "cancel_n": int(cancel_terms["seq"].nunique()),
        "_cancel_violations": int(cancel_terms["violated"].sum()),
        "cancel_layer_move": float(cancel_terms["layer_moved"].max()),
        "trained_pairs": len(terms),
        "_trained_violations": int(terms["violated"].sum()),
        "small_heads": len(small),
        "n_seeds": int(small["seed"].nunique()),
        "small_sinks": int(kinds.get("sink", 0)),
        "small_dormant": int(kinds.get("dormant", 0)),
        "_small_other": int(len(small) - kinds.get("sink", 0) - kinds.get("dormant", 0)),
        "small_max_move": bound(float(small["move"].max()), "up"),
        "small_max_layer_move": bound(float(small["layer_move"].max()), "up"),
        "small_min_out": _at_least(small["output"].min()),
        "_small_min_out": float(small["output"].min()),
        "small_update": bound(float(two["mean |update|, non-trigger rows"].max()), "up"),
        "big_seeds": len(big),
        "big_diffuse_seeds": len(diffuse),
        "big_least_D": _at_least(diffuse["smallest mean D, diffuse"].min()) if len(diffuse) else math.nan,
        "big_diffuse_move": _at_least(diffuse["mean move, diffuse"].min()) if len(diffuse) else math.nan,
        "_big_diffuse_move": float(diffuse["mean move, diffuse"].min()) if len(diffuse) else math.nan,
        "big_head_move": _at_least(float(one["move"].min())),  # NaN where no head is diffuse
        "_big_head_move": float(one["move"].min()),
        "_big_head_D": float(one["D"].min()),
        "big_layer_move_lo": float(big["largest layer move"].min()),
        "big_layer_move_hi": float(big["largest layer move"].max()),
        "big_update": bound(float(big["mean |update|, non-trigger rows"].max()), "up"),
        "big_within": _at_most(float(within["ratio"].max())) if len(within) else math.nan,
        "_big_layers": len(within),
        "_big_within": float(within["ratio"].max()) if len(within) else math.nan,
        "small_within": float(top2["ratio"]) if top2 is not None else math.nan,
        "small_within_seed": int(top2["seed"]) if top2 is not None else -1,
        "small_within_layer": int(top2["layer"]) if top2 is not None else -1,
        "kind_margin": readable(bound(margin, "down", 1), 1),  # "no head within 0.01"
        "_kind_margin": float(margin),
        "big_across": _at_least(across.min()) if len(across) else math.nan,
        "_least_largest_bos": float(summary["largest BOS mass"].min()),
        "_sink_every_layer": bool((soft2.groupby(["seed", "layer"]).bos_mass_nontrigger.max() > 0.5).all()),
        "quick_lr": f"{MULTI_LAYER['quick'].lr:g}",
        "quick_steps": MULTI_LAYER["quick"].steps,
        "_full_recipe": (MULTI_LAYER["full"].lr, MULTI_LAYER["full"].steps),
    }


def _budget(front, models, rows, heads, seq_len: int = 16) -> dict:
    """The price of the cap on a budget (section 6); ``seq_len`` is the task's, for where the
    paths' heads look (:func:`path_bos_weight`)."""
    soft2 = models[models["model"] == f"trained softmax {model_name(2, 2)}"]
    relu = models[models["model"].str.startswith("trained relu")]
    two = models[models["model"].str.startswith("prop-cancel")]
    e_soft = float(soft2["rel_err_trigger"].max())
    costs = {th: weight_for(p, e_soft) for th, p in front.groupby("theta")}
    e_relu = float(relu["rel_err_trigger"].max()) if len(relu) else math.nan
    relu_costs = [weight_for(p, e_relu) for _, p in front.groupby("theta")]
    soft_heads = heads[(heads.attention == "softmax") & (heads.n_layers == 2)]
    relu_heads = heads[heads.attention == "relu"]
    soft4 = heads[(heads.attention == "softmax") & (heads.n_layers == 4)]
    return {
        "price_soft_err": e_soft,
        "_price_soft_errs": [float(e) for e in soft2["rel_err_trigger"]],
        "price_soft_weight": bound(float(soft2["value weight"].max()), "up"),
        "_price_soft_weight": float(soft2["value weight"].max()),
        "price_soft_weight_lo": float(soft2["value weight"].min()),
        "price_soft_nontrigger_row": _at_least(rows["non-trigger"].min(), 3),
        "price_soft_trigger_row": float(rows["trigger"].max()),
        "price_soft_trigger_seeds": int((rows["trigger"] > 0.5).sum()),
        "price_soft_seeds": len(rows),
        "price_soft_trigger_bos": _at_most(float(soft_heads.trigger_bos_weight.max())),
        "_price_soft_trigger_bos": float(soft_heads.trigger_bos_weight.max()),
        "big_trigger_bos": _at_least(float(soft4.trigger_bos_weight.max())),
        "_big_trigger_bos": float(soft4.trigger_bos_weight.max()),
        "cost_half": costs.get(0.5, math.nan),
        "cost_34": costs.get(0.75, math.nan),
        "cost_09": costs.get(0.9, math.nan),
        "cost_ratio": _at_least(min(costs.values(), default=math.nan) / float(soft2["value weight"].max())),
        "cost_ratio_half": _at_least(costs.get(0.5, math.nan) / float(soft2["value weight"].max())),
        **{f"path_bos_{k}": path_bos_weight(seq_len, th) for k, th in _GAP_KEYS.items() if th < 0.99},
        "_paths_fall": bool(
            all(
                (p.sort_values("weight")["rel_err_trigger"].diff().dropna() < 0).all()
                for _, p in front.groupby("theta")
            )
        ),
        "price_two_err": float(two["rel_err_trigger"].min()),
        "price_two_margin": float(two.loc[two["rel_err_trigger"].idxmin(), "margin"]) if len(two) else math.nan,
        "_two_weight": float(two["value weight"].max()),
        "price_relu_off": bound(float(relu_heads.attn_mass_nontrigger.max()), "up"),
        "_price_relu_off": float(relu_heads.attn_mass_nontrigger.max()),
        "price_relu_err": float(relu["rel_err_trigger"].max()),
        "price_relu_lo": float(relu["value weight"].min()),
        "price_relu_hi": float(relu["value weight"].max()),
        "price_relu_path_least": min(relu_costs) if relu_costs else math.nan,
    }


def _float32_floor(cancel, task) -> dict:
    """Why Table 4.1's error at margin 20 sits above the proof's bound: float32's step between
    1 and 2, and the same heads in float64 (:func:`cancel_float64`)."""
    f64 = cancel_float64(task, margin=float(cancel["margin"].iloc[-1]))
    return {
        "cancel_bound20": f64["bound"],
        "cancel_err64": f64["row"],
        "_cancel_err64_entry": f64["entry"],
        "_cancel_last_margin": float(cancel["margin"].iloc[-1]),
        "float32_step": float(np.spacing(np.float32(1.0))),
    }


def anchor_shortfall(terms: pd.DataFrame) -> dict:
    """What Fig. 4.2 shows of the anchor inequality: a dot per row of ``terms``
    (:func:`attnsink.analysis.trained_head_terms`) at ``x`` = mass off BOS, ``y`` = move over
    the certified lower bound on the distance. The dots below the diagonal (``y < x``), how far
    below at most as a share of ``x`` (``anchor_shortfall``: in per cent, rounded up to one
    figure, as the caption prints it), whether each such shortfall lies within the float32
    slack the check allows (``lhs - moved <= slack + 1e-12``), and how far the dots at row 1,
    where the inequality is an equality, lie from the diagonal (``|y / x - 1|``). Row 1 is the
    first row of each (model, seed, layer, head, sequence): it is never the trigger."""
    x, y = terms["mass_off_bos"], terms["moved"] / terms["d_lower"]
    below = y < x
    share = float((1 - y / x)[below].max()) if below.any() else 0.0
    within = terms["lhs"] - terms["moved"] <= terms["slack"] + 1e-12
    first = terms.groupby(["model", "seed", "layer", "head", "seq"]).cumcount() == 0
    return {
        "anchor_shortfall": readable(bound(100 * share, "up", 1), 1),
        "_anchor_shortfall": share,
        "_anchor_below": int(below.sum()),
        "_anchor_below_in_slack": bool(within[below].all()),
        "_anchor_row1_gap": float((y / x - 1)[first].abs().max()),
    }


@CHAPTER.measures
def measures(
    deep, *, cancel, exact, alpha, floors, gaps, checks, cancel_terms, terms, per_head, summary, front, models
) -> dict:
    """The numbers chapter 4 quotes: from the cancelling heads' table (``cancel``), the exact
    layer (``exact``, its weights ``alpha``), the floors (``floors``, ``gaps``), the anchor
    inequality's checks (``checks`` on random models, ``cancel_terms`` on the cancelling heads,
    ``terms`` and ``per_head`` on the trained ones, ``summary`` per model), the paths on a
    budget (``front``) and the models beside them (``models``), and ``deep`` itself
    (:func:`~attnsink.experiments.multi_layer`)."""
    heads = deep.heads()
    return {
        **_construction(cancel, exact, alpha, floors, gaps),
        **_float32_floor(cancel, deep.task),
        **_heads(checks, cancel_terms, terms, per_head, summary, heads),
        **anchor_shortfall(terms),
        "_cancel_move_floor": cancelling_moves_floor(deep.task),
        **_budget(front, models, cap_rows(deep, deep.task), heads, deep.task.seq_len),
    }


# ---- the claims: the constructions, computed (they hold under both profiles) ----


@CHAPTER.claim(
    "cancel-error-falls",
    "The two cancelling heads' largest error falls with the margin, below 10⁻⁶ at 20.",
    profiles=BOTH,
)
def _(m):
    return m["_cancel_falls"] and m["cancel_err"] < 1e-6, f"falls: {m['_cancel_falls']}; at 20: {m['cancel_err']:.2g}"


@CHAPTER.claim(
    "cancel-no-sink",
    "At every non-trigger row both heads put 1/(i+1) on every key, so at most 1/2 on BOS.",
    profiles=BOTH,
)
def _(m):
    gap, top = m["_cancel_uniform_gap"], m["_cancel_nontrig_bos"]
    return gap < 1e-6 and top <= 0.5 + 1e-6, f"gap to 1/(i+1) {gap:.2g}; largest on BOS {top:.9g}"


@CHAPTER.claim(
    "cancel-sinks-at-trigger", "At margin 20, head 2 puts within 10⁻⁶ of 1 on BOS at every trigger row.", profiles=BOTH
)
def _(m):
    return m["_cancel_trig_bos"] >= 1 - 1e-6, f"least {m['_cancel_trig_bos']:.9g}"  # 1 only if exactly 1


@CHAPTER.claim(
    "cancel-float32-floor",
    "At margin 20 Table 4.1's largest error is above the proof's bound sqrt(d) L e^-20 ≈ 1.3 × 10⁻⁷; "
    "float32 numbers between 1 and 2 are 1.2 × 10⁻⁷ apart, and that error is at most two such steps. "
    "In float64, the target too, the largest error of a row is at most 3.7 × 10⁻⁸, under the bound.",
    profiles=BOTH,
)
def _(m):
    err, bound20, step, err64 = m["cancel_err"], m["cancel_bound20"], m["float32_step"], m["cancel_err64"]
    ok = m["_cancel_last_margin"] == 20 and err > bound20 and step == 2.0**-23 and err <= 2 * step
    ok = ok and m["_cancel_err64_entry"] <= err64 <= bound20
    return ok, f"float32 {err:.3g}, bound {bound20:.3g}, step {step:.3g}; float64 row error {err64:.3g}"


@CHAPTER.claim(
    "exact-is-exact",
    "The exact layer's error is 0 at every row of every sequence; no head puts more than 1/2 on BOS at a row i ≥ 1.",
    profiles=BOTH,
)
def _(m):
    ok = m["_exact_error"] == 0 and m["_exact_bos"] <= 0.5 and m["_exact_triggers"] == 14
    return (
        ok,
        f"largest error {m['_exact_error']:g}; largest on BOS {m['_exact_bos']!r}; {m['_exact_triggers']} triggers",
    )


@CHAPTER.claim(
    "exact-weights", "The 15 value weights |α_h| add up to 1.7 × 10¹⁷; the largest is 2.8 × 10¹⁶.", profiles=BOTH
)
def _(m):
    w, top = m["exact_weights"], m["exact_largest"]
    ok = m["exact_heads"] == 15 and _sig(w) == 1.7e17 and _sig(top) == 2.8e16
    return ok, f"{m['exact_heads']} heads; sum {w:.4g}; largest {top:.4g}"


@CHAPTER.claim(
    "exact-fails-in-float64",
    "Run in float64 on one sequence per trigger position, the same layer errs by up to 10.2 in an entry "
    "of its output (more than 1), against updates whose entries are at most 1 in size.",
    profiles=BOTH,
)
def _(m):
    err, text, need = m["_exact_float64_error"], m["exact_float64_error"], m["exact_update_max"]
    ok = err <= float(text) == bound(err, "up", 3) == 10.2 and err > 1 >= need
    return ok, f"largest error {err:.5g} (the text: up to {text}); largest update entry {need:.3g}"


@CHAPTER.claim(
    "float64-uniform-rows",
    "In float64 the non-trigger rows, which add exactly 0, err by more than 1: float64 numbers near the "
    "largest weight are 4 apart, and the weights rounded to float64 no longer sum to 0.",
    profiles=BOTH,
)
def _(m):
    err, gap, total = m["exact_float64_nontrigger"], m["exact_float64_spacing"], m["alpha_float_sum"]
    ok = err > 1 and gap == 4 and total != 0
    return ok, f"largest non-trigger error {err:.4g}; spacing {gap:g}; rounded weights sum to {total:g}"


@CHAPTER.claim(
    "float64-same-error",
    "For every trigger from j = 2 to 13 the largest float64 error is the same, in the bias channel of row 14, "
    "a non-trigger row of each of these sequences.",
    profiles=BOTH,
)
def _(m):
    row, channel = m["_float64_common_where"].split(", ")
    lo, hi, n = m["float64_common_j_lo"], m["float64_common_j_hi"], m["float64_common_n"]
    ok = (
        (lo, hi, int(row), channel) == (2, 13, 14, "bias")
        and m["_float64_common_contiguous"]
        and n == hi - lo + 1
        and m["float64_common"] == m["exact_float64_nontrigger"]
    )
    return ok, f"j = {lo}..{hi} ({n} triggers): {m['float64_common']:.4g} at row {row}, {channel}"


@CHAPTER.claim("exact-pays-the-floor", "The exact layer's weight is above the floor, a few times it.", profiles=BOTH)
def _(m):
    r = m["exact_over_floor"]
    return 1 <= r < 10, f"weight / F_16(1/2) = {r:.3g}"


@CHAPTER.claim(
    "floor-table",
    "Table 4.3: the floor falls as the cap rises; F_16(0.99) is below 2, so the floor there is 2.",
    profiles=BOTH,
)
def _(m):
    f = m["_floors"]
    falls = bool(f["F_L(θ)"].is_monotonic_decreasing)
    two = bool((f["proved floor max(F_L, 2)"] >= 2).all()) and m["floor_099"] < 2
    return falls and two, f"falls: {falls}; F_16(0.99) = {m['floor_099']:.2g}"


@CHAPTER.claim(
    "fewest-heads",
    "At L = 16 a layer of L - 2 heads needs a head above 0.78 on BOS; below that cap it needs 15.",
    profiles=BOTH,
)
def _(m):
    f = m["_floors"]
    low = f[f["cap θ"] <= m["heavy_head"]]["fewest heads"]
    high = f[f["cap θ"] > m["_heavy"]]["fewest heads"]
    ok = m["heavy_head"] <= m["_heavy"] and (low == 15).all() and (high == 14).all() and len(low) and len(high)
    return bool(ok), f"threshold {m['_heavy']:.4f}; heads {list(f['fewest heads'])}"


@CHAPTER.claim("floor-16-below-two", "F_16 drops below 2 only from θ ≈ 0.977 on.", profiles=BOTH)
def _(m):
    above, below = m["_f16_around"]
    ok = m["theta_two_16"] == "0.977" and above > 2 > below and m["_f16_falls"]
    return ok, f"F_16 at 0.977 ∓ 0.0005: {above:.4f}, {below:.4f}; falls: {m['_f16_falls']}"


@CHAPTER.claim(
    "floor-superexponential",
    "F_L(θ) grows faster than exponentially in L and is at least (L-1)! ((1-θ)/θ)^(L-2) - 1.",
    profiles=BOTH,
)
def _(m):
    return m["_ratios_grow"] and m["_growth_bound"], (
        f"ratios grow: {m['_ratios_grow']}; lower bound holds: {m['_growth_bound']} (L = 3..19)"
    )


@CHAPTER.claim(
    "floor-near-one",
    "As θ → 1, F_L falls to 0 for even L and to 2 (L-1)!/(L-1)^(L-2) for odd L; F_4 < 2 from θ ≈ 0.84.",
    profiles=BOTH,
)
def _(m):
    t = m["theta_two_4"]
    return m["_limits"] and 0.83 < t < 0.845, f"limits: {m['_limits']}; F_4 < 2 from the grid point {t:.4g}"


@CHAPTER.claim(
    "three-is-tight",
    "At L = 3 the floor is 2/θ (4 at θ = 1/2), and two heads with c = (ε, 2) approach it.",
    profiles=BOTH,
)
def _(m):
    w = m["_three"]
    approach = all(v > 4 for v in w) and w[-1] - 4 < 1e-6
    return m["_three_formula"] and approach and m["floor_three"] == 4, f"weights {w[0]:.4f} … {w[-1]:.8f}"


@CHAPTER.claim(
    "floor-close-at-half",
    "With θ = 1/2 and L = 4 to 16, exact layers at the test function's peaks pay 1.1 to 3.9 times F_L, "
    "a factor that grows with L.",
    profiles=BOTH,
)
def _(m):
    lo, hi = m["floor_found_lo"], m["floor_found_hi"]
    printed = (bound(lo, "down"), bound(hi, "up"))  # as the text rounds the range: outward
    ok = 1 < lo and printed == (1.1, 3.9) and m["_found_grows"] and m["found_L_hi"] == 16
    return ok, f"{readable(lo, 4, 'down')} to {readable(hi, 4, 'up')}; grows: {m['_found_grows']}"


@CHAPTER.claim(
    "gap-grows-with-theta",
    "The least weight over F_L grows with θ: at L = 6, 1.4, 1.9, 2.6 and at least 14 times F_L.",
    profiles=BOTH,
)
def _(m):
    g = m["_gaps"]
    grows = all(part["least ÷ F_L ≥"].is_monotonic_increasing for _, part in g.groupby("L"))
    sound = bool((g["least weight ≥"] <= g["an exact layer's weight"] * (1 + 1e-9)).all())
    six = g[(g["L"] == 6) & (g["cap θ"] < 0.99)]
    tight = all(
        readable(lo / f) == readable(up / f)
        for lo, up, f in six[["least weight ≥", "an exact layer's weight", "F_L(θ)"]].values
    )
    return grows and sound and tight, f"grows: {grows}; lower ≤ upper: {sound}; bounds agree at L = 6: {tight}"


@CHAPTER.claim(
    "price-above-two",
    "Every exact layer pays more than 2: where F_L < 2 the least weight is still above 2.",
    profiles=BOTH,
)
def _(m):
    g = m["_gaps"]
    above = bool((g["least weight ≥"] > 2).all() and (g["_positive"] > 1).all())
    low = int((g["F_L(θ)"] < 2).sum())
    at_099 = g[(g["L"] == 4) & (g["cap θ"] == 0.99)]["an exact layer's weight"]
    agree = len(at_099) == 1 and readable(float(at_099.iloc[0]), 3) == m["least4_099"]
    ok = above and low >= 2 and agree
    least = readable(float(g["least weight ≥"].min()), 4, "down")
    return ok, f"every lower bound at least {least}; {low} cases with F_L < 2; L = 4 agrees: {agree}"


@CHAPTER.claim(
    "random-slack",
    "The float32 rows' slack added to the random models' right-hand side is at most 1.3 × 10⁻⁶.",
    profiles=BOTH,
)
def _(m):
    x, text = m["_random_slack"], m["random_slack"]
    return 0 <= x <= text <= 1e-5, f"largest slack {x:.3g}; the text says at most {text:g}"


@CHAPTER.claim(
    "anchor-holds-random",
    "No (sequence, row, head) triple of the random models violates the anchor inequality.",
    profiles=BOTH,
)
def _(m):
    return m["_random_violations"] == 0, f"{m['_random_violations']} of {m['random_pairs']}"


@CHAPTER.claim(
    "cancelling-heads-move",
    "On the 30 test sequences each cancelling head moves by at least 0.82 at every non-trigger row; "
    "on noise-free sequences, where the moves are least, by 1/2 at row 1; the layer does not move.",
    profiles=BOTH,
)
def _(m):
    least, text, floor = m["_cancel_move"], m["cancel_move"], m["_cancel_move_floor"]
    ok = m["cancel_n"] == 30 and least >= text == 0.82 and abs(floor - 0.5) < 1e-6
    ok = ok and m["cancel_layer_move"] < 1e-6 and m["_cancel_violations"] == 0
    return ok, f"least move {least:.4f} on {m['cancel_n']}; noise-free {floor:.6f}; layer {m['cancel_layer_move']:.2g}"


@CHAPTER.claim(
    "anchor-holds-trained",
    "No triple of the trained softmax models violates the anchor inequality beyond float32 rounding.",
    profiles=BOTH,
)
def _(m):
    return m["_trained_violations"] == 0, f"{m['_trained_violations']} of {m['trained_pairs']}"


@CHAPTER.claim(
    "anchor-figure-rounding",
    "Fig. 4.2: at row 1, where the inequality is an equality, the dots sit on the diagonal; no dot lies "
    "below it by more than float32 rounding (under 0.05% of its value).",
)
def _(m):
    x, text, row1 = m["_anchor_shortfall"], m["anchor_shortfall"], m["_anchor_row1_gap"]
    ok = 100 * x < float(text) == 0.05 and m["_anchor_below_in_slack"] and row1 < 1e-3
    return ok, (
        f"{m['_anchor_below']:,} dots below, by up to {readable(100 * x, 2, 'up')}% (the caption: under {text}%), "
        f"within the slack: {m['_anchor_below_in_slack']}; row 1 off by up to {readable(row1, 2, 'up')}"
    )


# ---- the trained models (the full runs) ----


@CHAPTER.claim(
    "paper-recipe",
    "The full profile trains at lr 10⁻⁴ for up to 50,000 steps, the defaults we read in the paper's "
    "fig_multilayer.py at commit fe8a438 (recorded in PAPER_MULTILAYER; the book cannot fetch that file).",
    profiles=BOTH,
)
def _(m):
    ok = m["_full_recipe"] == PAPER_MULTILAYER == (1e-4, 50_000)
    return ok, f"lr {m['_full_recipe'][0]:g}, {m['_full_recipe'][1]:,} steps; the paper's {PAPER_MULTILAYER}"


@CHAPTER.claim("small-all-park", "Every head of the 2 × 2 models is a sink or dormant; none is diffuse.")
def _(m):
    return m["_small_other"] == 0, f"{m['small_sinks']} sinks, {m['small_dormant']} dormant, {m['_small_other']} other"


@CHAPTER.claim("small-quiet", "In the 2 × 2 models no head and no layer moves by more than 0.01 on average.")
def _(m):
    top = max(m["small_max_move"], m["small_max_layer_move"])
    return top < 0.01, f"every mean move at most {readable(top, toward='up')}"


@CHAPTER.claim(
    "small-constants-cancel",
    "The 2 × 2 heads add vectors ten times longer than their moves, and these constants cancel.",
)
def _(m):
    out = m["_small_min_out"]
    return out > 10 * m["small_max_move"] and m["small_update"] < out / 10, (
        f"least |o_i| {out:.3g}; moves at most {readable(m['small_max_move'], toward='up')}; "
        f"update at most {readable(m['small_update'], toward='up')}"
    )


@CHAPTER.claim(
    "small-within",
    "Within one 2 × 2 layer the heads can still cancel: in seed 3, layer 1, their moves sum to 11 times "
    "the layer's move, more than in any 4 × 4 layer.",
)
def _(m):
    r, seed, layer = m["small_within"], m["small_within_seed"], m["small_within_layer"]
    ok = (seed, layer) == (3, 1) and readable(r) == "11" and r > m["_big_within"]
    return ok, f"seed {seed}, layer {layer}: {r:.3g}; the 4 × 4 layers at most {readable(m['_big_within'], 3, 'up')}"


@CHAPTER.claim(
    "kinds-threshold",
    "No softmax head's mean BOS weight at the non-trigger rows, nor a parked head's BOS share at the "
    "trigger row, lies within 0.01 of 1/2: 'at least half' and 'more than half' name the same heads.",
)
def _(m):
    x, text = m["_kind_margin"], m["kind_margin"]
    return x >= float(text) and text == "0.01", f"nearest to 1/2 by {x:.4f}; the text says no head within {text}"


@CHAPTER.claim("big-diffuse", "Every seed of the 4 × 4 model has diffuse heads, which move.")
def _(m):
    ok = m["big_diffuse_seeds"] == m["big_seeds"] > 0 and m["big_diffuse_move"] > 0.05 and m["big_least_D"] > 0.05
    least = readable(m["big_diffuse_move"], toward="down")
    return ok, f"{m['big_diffuse_seeds']} of {m['big_seeds']} seeds; mean moves at least {least}"


@CHAPTER.claim(
    "diffuse-moves",
    "Averaged over each 4 × 4 model's diffuse heads and non-trigger rows, the diffuse heads move by at "
    "least 0.27; every diffuse head moves by at least 0.11 on average over those rows, and its D̃_i is "
    "at least 0.18 on average.",
)
def _(m):
    mean, one, D = m["_big_diffuse_move"], m["_big_head_move"], m["_big_head_D"]
    ok = mean >= m["big_diffuse_move"] == 0.27 and one >= m["big_head_move"] == 0.11
    ok = ok and D >= m["big_least_D"] == 0.18 and _at_least(D) == m["big_least_D"]  # the same heads' least
    return ok, f"least model mean {mean:.3f}; least head {one:.3f}; least head D̃ {D:.3f}"


@CHAPTER.claim(
    "big-layers-cancel",
    "The 4 × 4 layers' largest moves run from 0.68 to 0.98, yet the model's update averages ten times less.",
)
def _(m):
    lo, hi = m["big_layer_move_lo"], m["big_layer_move_hi"]
    shown = (readable(lo, toward="down"), readable(hi, toward="up"), readable(m["big_update"], toward="up"))
    low, high, update = (printed(t) for t in shown)  # as the text prints them: the range outward
    ok = low <= lo <= hi <= high and (low, high) == (0.68, 0.98) and 10 * update < low
    return ok, f"layer moves {shown[0]} to {shown[1]}; update at most {shown[2]}"


@CHAPTER.claim(
    "cancel-across-layers",
    "Within a 4 × 4 layer the heads cancel by a factor of at most 2.2: the lengths of their moves sum "
    "to at most 2.2 times the length of the layer's move (their vector sum); across the layers, by a "
    "different measure, a factor of at least 590: each model's largest layer move is at least 590 times "
    "its mean update at the non-trigger rows.",
)
def _(m):
    within, across = m["big_within"], m["big_across"]
    ok = m["_big_layers"] > 0 and within <= 2.2 and across >= 590
    shown = readable(within, toward="up"), readable(across, toward="down")
    return ok, f"within a layer at most {shown[0]}; across at least {shown[1]} ({m['_big_layers']} layers)"


@CHAPTER.claim("every-model-sinks", "In every softmax model some head puts at least 0.9 on BOS, on average.")
def _(m):
    return m["_least_largest_bos"] >= 0.9, f"least largest BOS mass {m['_least_largest_bos']:.4f}"


@CHAPTER.claim("sink-every-layer", "Every layer of every 2 × 2 softmax seed has a head above 1/2 on BOS.")
def _(m):
    return m["_sink_every_layer"], f"{m['_sink_every_layer']}"


# ---- capped paths on a budget, beside the trained models ----


@CHAPTER.claim(
    "soft-breaks-caps",
    "Each 2 × 2 softmax model has a head above 0.99 on BOS at a non-trigger row; at a trigger row, "
    "the most is between 3/4 and 0.9.",
)
def _(m):
    t = m["price_soft_trigger_row"]
    ok = m["price_soft_nontrigger_row"] >= 0.99 and 0.75 < t <= 0.9 and m["price_soft_trigger_seeds"] >= 1
    shown = readable(m["price_soft_nontrigger_row"], 3, "down")
    return ok, f"non-trigger ≥ {shown}; largest at a trigger row {t:.4g}"


@CHAPTER.claim("trigger-seeds", "In 1 of the 5 seeds some head passes 1/2 on BOS at a trigger row.")
def _(m):
    n, of = m["price_soft_trigger_seeds"], m["price_soft_seeds"]
    return n == 1 and of == 5, f"{n} of {of}"


@CHAPTER.claim(
    "trigger-mean-under-cap",
    "In the 2 × 2 softmax models, on average over the test sequences, no head puts more than 0.67 on BOS "
    "at the trigger row, under the cap of 3/4 that their largest single weight, 0.79, breaks.",
)
def _(m):
    mean, top = m["_price_soft_trigger_bos"], m["price_soft_trigger_row"]
    ok = mean <= m["price_soft_trigger_bos"] == 0.67 and mean < 0.75 < top and readable(top) == "0.79"
    return ok, f"largest mean {mean:.4g}; largest single weight {top:.4g}"


@CHAPTER.claim(
    "trigger-mean-4x4",
    "In the 4 × 4 softmax models some head puts more than 0.95 on BOS at the trigger row on average "
    "over the test sequences, above all three caps.",
)
def _(m):
    x, text = m["_big_trigger_bos"], m["big_trigger_bos"]
    ok = x > text == 0.95 > 0.9  # above the cap of 0.9, so above all three
    return ok, f"largest mean {x:.4f}; the text says more than {text}"


@CHAPTER.claim(
    "caps-cost",
    "Our three capped paths need at least 14 times the heaviest trained 2 × 2 model's weight to reach the "
    "worst seed's error, a looser cap less; the path capped at 1/2, the one without a sink, at least "
    "590,000 times.",
)
def _(m):
    costs, w = [m["cost_half"], m["cost_34"], m["cost_09"]], m["_price_soft_weight"]
    reached = all(math.isfinite(c) for c in costs)
    ok = reached and costs[0] > costs[1] > costs[2] >= m["cost_ratio"] * w and m["cost_ratio"] == 14
    ok = ok and costs[0] >= m["cost_ratio_half"] * w and m["cost_ratio_half"] == 590_000
    return ok and m["_paths_fall"], (
        f"costs {', '.join(f'{c:.3g}' for c in costs)}; least ÷ {w:.3g} = {costs[2] / w:.3g}; "
        f"cap 1/2: {costs[0] / w:.3g}"
    )


@CHAPTER.claim(
    "soft-err-worst",
    "The trained 2 × 2 softmax models reach a relative error at the trigger of at most 1.6 × 10⁻⁵: the "
    "worst of their 5 seeds.",
)
def _(m):
    errs, worst = m["_price_soft_errs"], m["price_soft_err"]
    shown = readable(worst, toward="up")  # as the text prints it after "at most"
    ok = len(errs) == m["price_soft_seeds"] == 5 and worst == max(errs) <= printed(shown) == 1.6e-5
    return ok, f"{len(errs)} seeds, the worst {max(errs):.4g}; the text: at most {shown}"


@CHAPTER.claim(
    "caps-sink-at-trigger",
    "Under the caps 3/4 and 0.9 some heads of our paths put up to 0.75 and 0.9 on BOS at the trigger "
    "row j = 2, more than half; under the cap 1/2 no head puts more than 1/2 on BOS at any row i ≥ 1.",
)
def _(m):
    half, b34, b09 = m["path_bos_half"], m["path_bos_34"], m["path_bos_09"]
    ok = half <= 0.5 < b34 <= 0.75 and 0.5 < b09 <= 0.9 and bound(b34, "up") == 0.75 and bound(b09, "up") == 0.9
    return ok, f"largest BOS weight at rows i ≥ 1: {half:.4f} (cap 1/2), {b34:.4f} (3/4), {b09:.4f} (0.9)"


@CHAPTER.claim("soft-weight", "The trained 2 × 2 softmax models' total value weights are at most 3.1, above 2.")
def _(m):
    x, text = m["_price_soft_weight"], m["price_soft_weight"]
    ok = 2 < m["price_soft_weight_lo"] and x <= text == 3.1
    lo, hi = readable(m["price_soft_weight_lo"], 3, "down"), readable(x, 4, "up")
    return ok, f"weights {lo} to {hi}; the text: at most {text:g}"


@CHAPTER.claim(
    "two-heads-cheap",
    "At margin 15, the best of the margins 5, 10 and 15, the two cancelling heads reach a relative error at "
    "the trigger (a ratio of mean squares) of 6.8 × 10⁻¹² at a weight of 2, below the worst 2 × 2 seed's.",
)
def _(m):
    ok = m["_two_weight"] <= 2 + 1e-6 and m["price_two_err"] < m["price_soft_err"] and m["price_two_margin"] == 15
    ok = ok and readable(m["price_two_err"]) == "6.8 × 10⁻¹²"
    return ok, f"weight {m['_two_weight']:.4f}; error {m['price_two_err']:.2g} at margin {m['price_two_margin']:g}"


@CHAPTER.claim(
    "relu-off",
    "Averaged over the non-trigger rows, each trained ReLU head's total attention weight is under 0.01.",
)
def _(m):
    x = m["_price_relu_off"]
    return x <= m["price_relu_off"] < 0.01, f"largest {x:.3g}; the text says at most {m['price_relu_off']:g}"


@CHAPTER.claim(
    "relu-cheap",
    "The ReLU models reach an error of at most 2.1 × 10⁻⁵ at total value weights of 2.5 to 8.3, "
    "below the weight at which any of our capped paths reaches that error.",
)
def _(m):
    err, lo, hi, path = m["price_relu_err"], m["price_relu_lo"], m["price_relu_hi"], m["price_relu_path_least"]
    printed = (bound(err, "up"), bound(lo, "down"), bound(hi, "up"))  # as the text rounds them: outward
    ok = printed == (2.1e-5, 2.5, 8.3) and math.isfinite(path) and hi < path
    shown = readable(err, toward="up"), readable(lo, toward="down"), readable(hi, toward="up")
    return ok, f"error at most {shown[0]}; weights {shown[1]} to {shown[2]}; the lightest path reaches it at {path:.3g}"
