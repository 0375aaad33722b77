"""Chapter 3's claims: a ReLU head solves the trigger task exactly with no sink, its scale must
count the averaged tokens for the head to be exact, the ReLU heads of chapter 1 find the
construction up to a rescaling, a smaller trigger channel in the trigger token's value (γ times
the value map's trigger entry, not 1) and a term from BOS that makes up the difference (fixed at
each trigger position, barely moved by the content), and without BOS a ReLU head with the
visible-key scale still solves the task exactly while a softmax head (one layer, values of the
key token only, no residual stream) or a ReLU head with the paper's scale cannot be exact.

:func:`measures` builds the construction (:func:`attnsink.construct.relu_solution`), runs it on
the chapter's test batch, and reads the trained heads of :func:`attnsink.experiments.single_layer`
(ReLU) and :func:`attnsink.experiments.variants` (``relu_visible`` with BOS; softmax and
``relu_visible`` without it); a few seconds on a CPU. The ``table_*`` functions draw the
chapter's tables from the measures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..analysis import bos_trigger_share, content_value_norm, noise_free_trigger_rms, relu_trigger_anatomy
from ..book import table
from ..construct import relu_solution, with_attention
from ..metrics import SOLVED, evaluate
from ..profiles import FIGURE_TRIGGER_POS
from ..prose import bound, readable
from ..task import TriggerTask
from ..theory import mse_lower_bound, position_scale_error_bound, trigger_error_lower_bound
from .base import Chapter
from .bounds import at_least as _down
from .bounds import at_most as _up
from .bounds import span as _span

CHAPTER = Chapter("ch3")
BOTH = ("quick", "full")

TOL = 1e-5
"""float32 rounding: an output within this of its target is exact."""

SCALES = {
    "1/max(i,1) (relu)": lambda i: 1 / i.clamp(min=1),
    "2/max(i,1)": lambda i: 2 / i.clamp(min=1),
    "1/(i+1) (relu_visible)": lambda i: 1 / (i + 1),
    "1/sqrt(max(i,1))": lambda i: 1 / i.clamp(min=1).sqrt(),
    "1/max(i,1)^2": lambda i: 1 / i.clamp(min=1) ** 2,
    "1 (no scale)": lambda i: torch.ones_like(i),
}
"""The position-only scales of exercise 1: the first two are proportional to 1/j."""


@CHAPTER.measures
def measures(task, batch, visible_runs, relu_runs, nobos) -> dict:
    """The numbers chapter 3 quotes. ``task`` is the paper's task and ``batch`` the chapter's
    test sequences; ``visible_runs`` the ``relu_visible`` heads trained with BOS, ``relu_runs``
    chapter 1's ReLU heads, ``nobos`` the :func:`~attnsink.experiments.variants` result with
    softmax and ``relu_visible`` trained without BOS."""
    with torch.no_grad():
        return {
            **_construction(task, batch),
            **_scale(task, batch, visible_runs),
            **_trained(task, batch[:2000], relu_runs),
            **_no_bos(nobos),
            **_exercises(task, batch[:2000], relu_runs),
        }


def _construction(task, batch) -> dict:
    """The construction on the test batch, and its attention with the trigger at position 7."""
    head = relu_solution(task)
    qk = head.W_Q[0, 0] @ head.W_K[0, 0].T  # (query channel, key channel)
    vo = head.W_V[0, 0] @ head.W_O[0, 0]
    y_hat, (a,) = head(batch.x)
    off = a[:, 0][~batch.is_trigger]  # every non-trigger row, BOS's own included: (rows, keys)
    j = FIGURE_TRIGGER_POS
    row = evaluate(head, task, trigger_pos=j).attn[0][:, 0, j]  # (sequences, keys)
    return {
        "n_test": len(batch.x),
        "qk_entries": sorted(map(tuple, qk.nonzero().tolist())),
        "vo_diagonal": vo.diag().tolist() if bool((vo == torch.diag(vo.diag())).all()) else None,
        "exact_err": (y_hat - batch.y).abs().max().item(),
        "exact_off_max": off.abs().max().item(),
        "exact_row_gap": (row[:, 1 : j + 1] - 1 / j).abs().max().item(),
        "exact_row_bos": row[:, 0].abs().max().item(),
    }


def _scale(task, batch, visible_runs) -> dict:
    """The construction under the visible-key scale, and the proposition's floor against it."""
    visible = with_attention(relu_solution(task), "relu_visible")
    y_vis, (a_vis,) = visible(batch.x)
    j = batch.trigger_pos.double()
    ratio = (y_vis[batch.is_trigger].norm(dim=-1) / batch.y[batch.is_trigger].norm(dim=-1)).double()
    expected = (j / (j + 1))[:, None] * batch.y[batch.is_trigger]
    summary = evaluate(visible, task).summary()
    pos_bound = position_scale_error_bound(task, "relu_visible")
    heads = {"construction, relu_visible": visible} | {
        f"trained relu_visible, seed {r.seed}": r.model for r in visible_runs
    }
    rms = pd.Series({name: noise_free_trigger_rms(m, task) for name, m in heads.items()})
    trained = rms.iloc[1:]
    by_j = pd.DataFrame({"trigger j": batch.trigger_pos.numpy(), "|output| / |target|": ratio.numpy()})
    by_j = by_j.groupby("trigger j").mean()
    by_j["j / (j + 1)"] = by_j.index / (by_j.index + 1)
    return {
        "vis_gap": (y_vis[batch.is_trigger] - expected).abs().max().item(),
        "vis_off_max": a_vis[:, 0][~batch.is_trigger].abs().max().item(),
        "vis_linf": float(summary["linf"]),
        "vis_rel": float(summary["rel_err_trigger"]),
        "relu_floor": position_scale_error_bound(task, "relu"),
        "pos_bound": pos_bound,
        "vis_construct": float(rms.iloc[0]),
        "vis_construct_ratio": float(rms.iloc[0] / pos_bound),
        "n_vis_trained": len(trained),
        "pos_trained_min": float(trained.min()) if len(trained) else float("nan"),
        "pos_trained_max": float(trained.max()) if len(trained) else float("nan"),
        "pos_trained_ratio": float(trained.max() / pos_bound) if len(trained) else float("nan"),
        "_by_j": by_j,
        "_scale_check": pd.DataFrame(
            {"head": rms.index, "noise-free RMS error": rms.values, "proved floor": pos_bound}
        ),
    }


def _trained(task, batch, relu_runs) -> dict:
    """How chapter 1's ReLU heads solve the trigger row (:func:`~attnsink.analysis.relu_trigger_anatomy`),
    at every trigger position 2..L-1."""
    positions = tuple(range(2, task.seq_len))
    compare = relu_trigger_anatomy(relu_runs, batch, positions=positions)
    measured = sorted(set(batch.trigger_pos.tolist()) & set(positions))  # those with test sequences
    c = compare["j x weight on keys 1..j"]
    scale = compare["value map on noise (diagonal)"]
    shares = [bos_trigger_share(r.model, task, trigger_pos=FIGURE_TRIGGER_POS) for r in relu_runs]
    off = [r.model(batch.x)[1][0][:, 0][~batch.is_trigger].abs().max().item() for r in relu_runs]
    return {
        "n_relu": len(relu_runs),
        "j_first": positions[0],
        "j_last": positions[-1],
        "_c_positions": measured,  # the trigger positions where c was read
        "_all_positions": list(positions),
        "c_min": float(c.min()),
        "c_max": float(c.max()),
        "c_range": float(compare.groupby("seed")["j x weight on keys 1..j"].agg(np.ptp).max()),
        "c_times_scale": float((c * scale).mean()),
        "c_scale_gap": float((c * scale - 1).abs().max()),
        "key_spread": float(compare["spread over keys"].max()),
        "key_spread_j": float((compare["trigger j"] * compare["spread over keys"]).max()),
        "key_spread_rel": float((compare["trigger j"] * compare["spread over keys"] / c).max()),
        "key_spread_share": _percent((compare["trigger j"] * compare["spread over keys"] / c).max(), "up"),
        "off_diagonal": float(compare["value map on noise (off-diagonal)"].max()),
        "bos_w": float(compare["j x weight on BOS"].mean()),
        "bos_w_min": float(compare["j x weight on BOS"].min()),
        "bos_w_max": float(compare["j x weight on BOS"].max()),
        "bos_value": float(compare["BOS value norm"].mean()),
        "bos_value_min": float(compare["BOS value norm"].min()),
        "bos_value_max": float(compare["BOS value norm"].max()),
        "bos_share_trigger": float(np.mean(shares)),
        "bos_share_min": float(min(shares)),
        "bos_share_max": float(max(shares)),
        "trained_off_max": max(off),
        **_bos_and_diagonal(relu_runs, batch, compare, positions),
        **_trigger_channel(relu_runs, batch, compare, positions),
        "_anatomy": compare,
    }


def _bos_and_diagonal(relu_runs, batch, compare, positions) -> dict:
    """What :func:`~attnsink.analysis.relu_trigger_anatomy` leaves out: how much j times the BOS
    weight at the trigger varies across the sequences with the trigger at j (its standard
    deviation, the largest over seeds and j), and how far γ times each diagonal entry of the
    value map on the noise channels lies from 1 (the largest over seeds, j and channels), and how far
    γ times the rows of the value map that a content token reads (its noise and bias channels; every
    column) lie from those of the identity."""
    bos_sd, bos_sd_share, diag_gap, content_gap = 0.0, 0.0, 0.0, 0.0
    gamma = compare.set_index(["seed", "trigger j"])["j x weight on keys 1..j"]
    for r in relu_runs:
        attn = r.model(batch.x)[1][0][:, 0]  # (sequences, query, key)
        vo = r.model.W_V[0, 0] @ r.model.W_O[0, 0]
        diagonal = vo[2 : vo.shape[0] - 1, 2 : vo.shape[0] - 1].diag()  # the noise channels
        content_rows = vo[2:]  # noise and bias channels: all a content token's value reads
        identity = torch.eye(vo.shape[0], dtype=vo.dtype)[2:]
        for j in positions:
            w = j * attn[batch.trigger_pos == j][:, j, 0]
            bos_sd = max(bos_sd, w.std().item())
            bos_sd_share = max(bos_sd_share, w.std().item() / w.mean().item() if w.mean() > 0 else np.inf)
            diag_gap = max(diag_gap, (gamma[r.seed, j] * diagonal - 1).abs().max().item())
            content_gap = max(content_gap, (gamma[r.seed, j] * content_rows - identity).abs().max().item())
    share = bound(bos_sd_share, "up") if np.isfinite(bos_sd_share) else bos_sd_share  # inf: no BOS weight
    return {
        "bos_sd": bound(bos_sd, "up"),
        "bos_sd_share": _percent(share, "up"),
        "_bos_sd_share": share,
        "diag_gap": bound(diag_gap, "up"),
        "content_gap": bound(content_gap, "up"),
    }


def _trigger_channel(relu_runs, batch, compare, positions) -> dict:
    """Where the output's trigger channel at the trigger row comes from, per seed and trigger
    position j, in units of the target's 1/j: γ times the value map's trigger entry (W_VO)_{1,1}
    (the construction: 1), and j times the mean, over the sequences with the trigger at j, of what
    the trigger token's own value, BOS's value and the content tokens' values add there (the
    construction: 1, 0 and 0). The ``_seq`` measures take the same gaps sequence by sequence."""
    gamma = compare.set_index(["seed", "trigger j"])["j x weight on keys 1..j"]
    rows = []
    for r in relu_runs:
        _, (attn,), (values,) = r.model(batch.x, return_values=True)
        entry = (r.model.W_V[0, 0] @ r.model.W_O[0, 0])[1, 1].item()  # channel 1 is the trigger's
        for j in positions:
            at = batch.trigger_pos == j
            w, v = attn[at][:, 0, j, : j + 1], values[at][:, 0, : j + 1, 1]  # weights and values' trigger channel
            part = j * w * v  # (sequences, keys 0..j): what each key adds, times j
            rows.append(
                {
                    "seed": r.seed,
                    "entry": entry,
                    "own value": gamma[r.seed, j] * entry,
                    "own": part[:, j].mean().item(),
                    "bos": part[:, 0].mean().item(),
                    "content": part[:, 1:j].sum(1).mean().item(),
                    "gap_seq": (part[:, j] + part[:, 0] - 1).abs().max().item(),
                    "content_seq": part[:, 1:j].sum(1).abs().max().item(),
                }
            )
    d = pd.DataFrame(rows)
    return {
        "own_value": float(d["own value"].mean()),
        "own_value_min": float(d["own value"].min()),
        "own_value_max": float(d["own value"].max()),
        "own_bos_gap": float((d.own + d.bos - 1).abs().max()),
        "content_trigger": float(d.content.abs().max()),
        "own_bos_gap_seq": float(d.gap_seq.max()),
        "content_trigger_seq": float(d.content_seq.max()),
        "_trigger_bos_min": float(d.bos.min()),
        "_own_entry": d.groupby("seed")["entry"].first(),
    }


def _percent(share: float, toward: str, places: int = 1) -> str:
    """``share`` as a percentage with ``places`` decimals, rounded ``toward`` "up" (the text states
    it as an upper bound) or "down" (a lower bound, or a range's lower end)."""
    step = np.ceil if toward == "up" else np.floor
    return f"{step(round(share * 100 * 10**places, 9)) / 10**places:.{places}f}%"


def _no_bos(nobos) -> dict:
    """Softmax and relu_visible trained without BOS: errors, values, the corollary's floors."""
    runs = pd.DataFrame([r for r in nobos.runs if r["no_bos"]])
    soft, relu = runs[runs.attention == "softmax"], runs[runs.attention == "relu_visible"]
    task = TriggerTask(bos=False)
    test = task.sample(2000, generator=torch.Generator().manual_seed(3))
    norms = {
        rule: float(np.mean([content_value_norm(r.model, test) for r in nobos.results[rule, False]]))
        for rule in ("softmax", "relu_visible")
    }
    bounds = [trigger_error_lower_bound(task, v) for v in soft.rel_err_nontrigger]
    errors = [0.0, *soft.rel_err_nontrigger]  # exact non-trigger rows, and each head's measured error
    subst = max(abs(_substituted_floor(task, v) - trigger_error_lower_bound(task, v)) for v in errors)
    other = [_off_trigger_weight(r.model, test) for r in nobos.results["softmax", False]]
    j = FIGURE_TRIGGER_POS
    soft_map, relu_map = (nobos.figure_attn[rule, False] for rule in ("softmax", "relu_visible"))
    relu_row = relu_map[:, j, : j + 1]  # positions 0..7: the tokens the trigger averages
    relu_off = torch.cat([relu_map[:, :j], relu_map[:, j + 1 :]], dim=1)  # every other row
    soft_mean = soft_map.mean(0)  # (query, key)
    L = task.seq_len
    even_pos0 = np.mean(  # each non-trigger row i spread evenly over its content keys (all but the trigger)
        [np.mean([1 / (i + 1 - (i > t)) for i in range(L) if i != t]) for t in range(2, L)]
    )
    even = [  # how unevenly each softmax row i >= 1 weighs its content keys (all but the trigger)
        float(np.ptp(w) / w.max())
        for i in range(1, soft_mean.shape[0])
        if i != j
        for w in [soft_mean[i, [k for k in range(i + 1) if k != j]].numpy()]
    ]
    return {
        "nb_seeds": int(nobos.settings.seeds),
        "nb_steps": int(nobos.settings.steps),
        "nb_paper_floor": position_scale_error_bound(task, "relu"),  # the paper's scale, no BOS
        "nb_visible_floor": position_scale_error_bound(task, "relu_visible"),
        "nb_floor0": trigger_error_lower_bound(task, 0.0),
        "nb_soft_err": float(soft.rel_err_trigger.min()),
        "nb_soft_stopped": int(soft.stopped_early.sum()),
        "nb_soft_nontrig": float(soft.rel_err_nontrigger.max()),
        "nb_bound_min": bound(min(bounds), "down"),
        "nb_subst_gap": subst,
        "nb_bound_ok": bool((soft.rel_err_trigger.to_numpy() >= np.array(bounds)).all()),
        "nb_mse_floor": mse_lower_bound(task),
        "nb_soft_mse_min": float(soft.mse.min()),
        **_mse_units(task, soft),
        "nb_soft_vnorm": norms["softmax"],
        "nb_relu_vnorm": norms["relu_visible"],
        "nb_soft_self": float(soft_map[:, j, j].mean()),
        "nb_n_test": len(test.x),
        "nb_soft_other_max": max(other),
        "_nb_self_positions": sorted(set(test.trigger_pos.tolist())),
        "_nb_all_positions": list(range(2, L)),
        "nb_soft_uneven": max(even),
        "nb_soft_pos0_min": float(soft.bos_mass_nontrigger.min()),
        "nb_soft_pos0_max": float(soft.bos_mass_nontrigger.max()),
        "nb_even_pos0": f"{even_pos0:.3f}",  # glued as it is: the table prints three decimals
        "_nb_even_pos0": float(even_pos0),
        "nb_pos0_gap": float((soft.bos_mass_nontrigger - even_pos0).abs().max()),
        "nb_relu_err": float(relu.rel_err_trigger.max()),
        "nb_relu_stopped": bool(relu.stopped_early.all()),
        "nb_relu_mass": float(relu.attn_mass_nontrigger.max()),
        "nb_relu_row_spread": float(np.ptp(relu_row.mean(0).numpy()) / relu_row.mean().item()),
        "nb_relu_off_fig": float(relu_off.abs().max()),
        "_runs": runs,
        **_positive_weights(nobos, task),
    }


def _signal(task) -> float:
    """S = E|y_j|^2, the trigger target's mean squared length, on the task without BOS: given j,
    (1 + j^2)/(j+1)^2 + m/(3(j+1)), averaged over the trigger positions j = 2..L-1."""
    j = np.arange(2, task.seq_len, dtype=float)
    return float(np.mean((1 + j**2) / (j + 1) ** 2 + task.n_noise / (3 * (j + 1))))


def _mse_units(task, soft) -> dict:
    """The test MSE in the units of the relative errors, for the softmax runs ``soft`` without BOS
    (one row each). The MSE averages the squared error over L rows and d_model channels, and the
    relative errors divide by S (:func:`_signal`), so L d_model MSE / S is, in expectation, the
    relative error at the trigger plus L - 1 times the relative error elsewhere (a sequence has one
    trigger row and L - 1 others). The corollary's MSE floor in those units, the heads' sums, and
    how far each head's MSE in those units lies from its sum, relatively (S is the expected one, the
    errors measured)."""
    units = task.seq_len * task.d_model / _signal(task)
    total = soft.rel_err_trigger + (task.seq_len - 1) * soft.rel_err_nontrigger
    return {
        "nb_mse_floor_rel": mse_lower_bound(task) * units,
        "nb_soft_sum_min": float(total.min()),
        "nb_mse_units_gap": float((soft.mse * units / total - 1).abs().max()),
    }


def _substituted_floor(task, eps: float) -> float:
    """Corollary 2.2's floor on the relative error at the trigger as the text writes it: with
    E_0 = (L-1) S r_nt (``eps`` is r_nt, the measured relative error at the non-trigger rows),
    mean_j (A'_j - sqrt(j E_0))_+^2 / S, S the trigger target's mean squared length
    (without BOS, E|y_j|^2 = (1 + j^2)/(j+1)^2 + m/(3(j+1)) given j)."""
    L, m = task.seq_len, task.n_noise
    j = np.arange(2, L, dtype=float)
    a = np.sqrt((m - 1) * j / 3) / (j + 1)
    s = _signal(task)
    return float(np.mean(np.clip(a - np.sqrt(j * (L - 1) * s * eps), 0, None) ** 2) / s)


def _off_trigger_weight(model, test) -> float:
    """The largest total weight a head's trigger row puts off the trigger token, over ``test``."""
    _, (attn,) = model(test.x)
    rows = attn[:, 0][test.is_trigger]  # (sequences, keys): each sequence's trigger row
    return rows.scatter(1, test.trigger_pos[:, None], 0.0).sum(1).max().item()


def _positive_weights(nobos, task) -> dict:
    """What Proposition 6.1 needs, on the chapter's softmax heads (with BOS and without): one causal
    head, no residual stream (so values read the key token only, and the output is the weighted sum
    of the values), at least two noise coordinates, and a_00 and a_11 positive on every one of 2000
    test sequences. And what Corollary 2.2 needs of the heads without BOS: the same shape, and rows
    on the simplex (``pw_nb_simplex_gap``: how far a row's weights on its visible keys are from
    summing to 1, or below 0, at most)."""
    heads, nb_heads, shape, nb_shape, a00, a11, simplex_gap = 0, 0, True, True, np.inf, np.inf, 0.0
    for bos in (True, False):
        test = TriggerTask(bos=bos).sample(2000, generator=torch.Generator().manual_seed(3))
        for r in nobos.results.get(("softmax", bos), []):
            model, heads = r.model, heads + 1
            one_head = model.n_layers == model.n_heads == 1 and model.causal and not model.residual
            shape &= one_head
            _, (attn,) = model(test.x)
            a00, a11 = min(a00, attn[:, 0, 0, 0].min().item()), min(a11, attn[:, 0, 1, 1].min().item())
            if not bos:
                nb_heads, nb_shape = nb_heads + 1, nb_shape and one_head
                rows = attn[:, 0].double()  # (sequences, query, key); the causal mask zeroes the keys after the query
                gap = max((rows.sum(-1) - 1).abs().max().item(), -rows.min().item())
                simplex_gap = max(simplex_gap, gap)
    return {
        "pw_n_noise": task.n_noise,
        "pw_heads": heads,
        "pw_shape": bool(shape),
        "pw_a00_min": float(a00),
        "pw_a11_min": float(a11),
        "pw_nb_heads": nb_heads,
        "pw_nb_shape": bool(nb_shape),
        "pw_nb_simplex_gap": float(simplex_gap),
    }


def _exercises(task, batch, relu_runs) -> dict:
    """The answers of the exercises: the scales' floors, the construction without BOS, the
    trained heads' margin below zero (BOS's own row 0, whose one score is the same in every
    sequence, apart from the other non-trigger rows)."""
    i = torch.arange(task.seq_len, dtype=torch.float64)
    floors = pd.Series({name: position_scale_error_bound(task, g(i)) for name, g in SCALES.items()})
    no_bos = TriggerTask(bos=False)
    swap = {
        rule: evaluate(with_attention(relu_solution(task), rule), no_bos).summary() for rule in ("relu", "relu_visible")
    }
    j = np.arange(2, task.seq_len)
    signal = (1 + j**2) / (j + 1) ** 2 + task.n_noise / (3 * (j + 1))  # E|y_j|^2 without BOS, given j
    visible = torch.ones(task.seq_len, task.seq_len, dtype=torch.bool).tril()
    rows = []
    for r in relu_runs:
        q, k = batch.x @ r.model.W_Q[0, 0], batch.x @ r.model.W_K[0, 0]
        scores = (q @ k.transpose(-1, -2)).masked_fill(~visible, -torch.inf)  # (sequences, query, key)
        rest = ~batch.is_trigger & (torch.arange(task.seq_len) >= 1)  # non-trigger rows but BOS's own
        rows.append(
            {
                "seed": r.seed,
                "bos": scores[:, 0, 0].max().item(),
                "off": scores[rest].max().item(),
                "on": scores[batch.is_trigger].max().item(),
            }
        )
    margins = pd.DataFrame(rows)
    share = margins.off.abs() / margins.on
    return {
        "ex_exact_max": float(floors.iloc[:2].max()),
        "ex_floor_visible": float(floors.iloc[2]),
        "ex_floor_sqrt": float(floors.iloc[3]),
        "ex_floor_square": float(floors.iloc[4]),
        "ex_floor_none": float(floors.iloc[5]),
        "ex2_relu_linf": float(swap["relu"]["linf"]),
        "ex2_relu_rel": float(swap["relu"]["rel_err_trigger"]),
        "ex2_relu_rel_pred": float(np.mean(signal / j**2) / np.mean(signal)),  # output (j+1)/j times the target
        "ex2_visible_linf": float(swap["relu_visible"]["linf"]),
        "ex2_off_max": float(max(s["attn_mass_nontrigger"] for s in swap.values())),
        "ch6_solved_pct": f"{SOLVED:.0%}",  # chapter 6's "solved": a relative error within this
        "ex3_off_min": float(margins.off.min()),
        "ex3_off_max": float(margins.off.max()),
        "ex3_on_min": float(margins.on.min()),
        "ex3_bos_min": float(margins.bos.min()),
        "ex3_bos_max": float(margins.bos.max()),
        "ex3_share_min": _percent(share.min(), "down", 0),  # the ends of a range: outward
        "ex3_share_max": _percent(share.max(), "up", 0),
        "_ex3_share_min": float(share.min()),
        "_ex3_share_max": float(share.max()),
        "ex3_off_grad": _off_row_gradient(batch, relu_runs),
        "_margins": margins,
        "_floors": floors,
    }


def _off_row_gradient(batch, relu_runs) -> float:
    """The largest gradient, over the trained heads, that the squared error at the non-trigger
    rows alone (BOS's own included) sends to the score weights W_Q and W_K: 0 where every score
    at those rows is at most 0."""
    largest = 0.0
    with torch.enable_grad():
        for r in relu_runs:
            y_hat = r.model(batch.x)[0]
            loss = (y_hat - batch.y)[~batch.is_trigger].pow(2).sum()
            grads = torch.autograd.grad(loss, [r.model.W_Q, r.model.W_K], allow_unused=True)
            largest = max([largest] + [g.abs().max().item() for g in grads if g is not None])
    return largest


# ---- the construction ----


@CHAPTER.claim(
    "construction-exact",
    "The construction's largest error on the test batch is float32 rounding (at most 10⁻⁵).",
    profiles=BOTH,
)
def _(m):
    return m["exact_err"] <= TOL, f"largest error {m['exact_err']:.2g} over {m['n_test']:,} sequences"


@CHAPTER.claim("construction-off", "Its weights at every non-trigger position are exactly zero.", profiles=BOTH)
def _(m):
    return m["exact_off_max"] == 0, f"largest weight {m['exact_off_max']:.2g}"


@CHAPTER.claim(
    "construction-averages",
    "At the trigger (position 7) it puts exactly 1/7 on each of keys 1 to 7 and nothing on BOS.",
    profiles=BOTH,
)
def _(m):
    return m["exact_row_gap"] <= 1e-6 and m["exact_row_bos"] == 0, (
        f"largest gap to 1/7 {m['exact_row_gap']:.2g}; on BOS {m['exact_row_bos']:.2g}"
    )


@CHAPTER.claim(
    "construction-weights",
    "Table 3.1 lists every non-zero weight: two score entries, and the identity less BOS as value map.",
    profiles=BOTH,
)
def _(m):
    n = len(m["vo_diagonal"] or [])
    holds = m["qk_entries"] == [(1, 1), (1, n - 1)] and m["vo_diagonal"] == [0.0] + [1.0] * (n - 1)
    return holds, f"W_QK non-zero at {m['qk_entries']}; W_VO diagonal {m['vo_diagonal'] is not None}"


@CHAPTER.claim(
    "positive-weights-hypotheses",
    "Every softmax head this chapter reads meets the hypotheses of Proposition 6.1: the task has at least two "
    "noise coordinates, and each head is one causal head with no residual stream whose a_00 and a_11 are "
    "positive on every test sequence.",
    profiles=BOTH,
)
def _(m):
    holds = m["pw_n_noise"] >= 2 and m["pw_heads"] >= 1 and m["pw_shape"]
    return holds and m["pw_a00_min"] > 0 and m["pw_a11_min"] > 0, (
        f"m = {m['pw_n_noise']}; {m['pw_heads']} heads, one causal layer without residual: {m['pw_shape']}; "
        f"smallest a_00 {m['pw_a00_min']:.2g}, a_11 {m['pw_a11_min']:.2g}"
    )


# ---- the scale ----


@CHAPTER.claim(
    "visible-shrinks",
    "Under the visible-key scale the same weights output j/(j+1) times the target at the trigger.",
    profiles=BOTH,
)
def _(m):
    return m["vis_gap"] <= TOL, f"largest gap to j/(j+1) times the target {m['vis_gap']:.2g}"


@CHAPTER.claim(
    "visible-still-off", "Under the visible-key scale every non-trigger weight is still exactly zero.", profiles=BOTH
)
def _(m):
    return m["vis_off_max"] == 0, f"largest weight {m['vis_off_max']:.2g}"


@CHAPTER.claim(
    "visible-errs", "Under the visible-key scale the error at the trigger is large: over 1% relative.", profiles=BOTH
)
def _(m):
    return m["vis_rel"] > 0.01 and m["vis_linf"] > 0.1, f"relative {m['vis_rel']:.3f}; largest {m['vis_linf']:.2f}"


@CHAPTER.claim(
    "floors",
    "The proposition's floor is 0 for the paper's scale and positive for the visible-key scale.",
    profiles=BOTH,
)
def _(m):
    return m["relu_floor"] < 1e-12 and m["pos_bound"] > 0.01, (
        f"relu {m['relu_floor']:.2g}; relu_visible {m['pos_bound']:.4f}"
    )


@CHAPTER.claim(
    "floor-holds",
    "Every relu_visible head, built or trained, stays above the floor on noise-free sequences.",
    profiles=BOTH,
)
def _(m):
    lowest = min(m["vis_construct"], m["pos_trained_min"])
    return m["n_vis_trained"] >= 1 and lowest >= m["pos_bound"] - 1e-6, (
        f"lowest {_down(lowest, 3)} ≥ floor {_down(m['pos_bound'], 3)} ({m['n_vis_trained']} trained)"
    )


@CHAPTER.claim(
    "trained-near-floor",
    "The trained relu_visible heads come within a factor 1.5 of the floor, much closer than the construction.",
    profiles=BOTH,
)
def _(m):
    return m["pos_trained_ratio"] < 1.5 and m["pos_trained_max"] < 0.5 * m["vis_construct"], (
        f"trained at most {_up(m['pos_trained_ratio'], 3)} × floor; construction {m['vis_construct_ratio']:.1f} ×"
    )


# ---- the trained ReLU heads ----


@CHAPTER.claim(
    "trained-off", "The ReLU heads of chapter 1 put exactly zero weight at every non-trigger position.", profiles=BOTH
)
def _(m):
    return m["trained_off_max"] == 0, f"largest weight {m['trained_off_max']:.2g}"


@CHAPTER.claim(
    "trained-same-c",
    "Each trained head puts γ/j on each key 1..j, with the same γ at every trigger position j = 2..L-1: "
    "within a seed γ moves by less than 0.01, and j times the weights on the keys has a standard deviation "
    "under 1% of γ.",
    profiles=BOTH,
)
def _(m):
    every_j = m["_c_positions"] == m["_all_positions"]
    return every_j and m["c_range"] < 0.01 and m["key_spread_rel"] < 0.01, (
        f"read at j = {m['_c_positions'][0]}..{m['_c_positions'][-1]} ({len(m['_c_positions'])} positions); "
        f"γ varies by at most {_up(m['c_range'])} within a seed; std of j × weight over keys at most "
        f"{_up(m['key_spread_j'])}, {_percent(m['key_spread_rel'], 'up', 2)} of γ"
    )


@CHAPTER.claim(
    "trained-rescaled",
    "On the noise channels the value map is 1/γ times the identity: γ times each diagonal entry is within "
    "0.02 of 1 (so weight times value is about 1/j, as in the construction), off-diagonal entries under 0.01.",
    profiles=BOTH,
)
def _(m):
    return m["c_scale_gap"] < 0.02 and m["diag_gap"] < 0.02 and m["off_diagonal"] < 0.01, (
        f"γ × mean diagonal within {_up(m['c_scale_gap'])} of 1, every entry within {_up(m['diag_gap'])}; "
        f"off-diagonal at most {_up(m['off_diagonal'])}"
    )


@CHAPTER.claim(
    "bos-weight-steady",
    "At each trigger position j and seed the BOS weight is nearly, not exactly, the same in every sequence: "
    "its standard deviation is positive and at most 2% of its mean.",
)
def _(m):
    return 0 < m["bos_sd"] and m["_bos_sd_share"] <= 0.02, (
        f"std at most {_up(m['bos_sd'])}/j, {m['bos_sd_share']} of the mean; mean at least {_down(m['bos_w_min'], 3)}/j"
    )


@CHAPTER.claim(
    "trained-content-values",
    "On the content tokens only the split differs: γ times every row of the value map that a content token "
    "reads (noise and bias channels, every column) lies within 0.01 of the identity's.",
)
def _(m):
    return m["content_gap"] < 0.01, f"largest gap at most {_up(m['content_gap'])}"


@CHAPTER.claim(
    "trained-gamma-range",
    "Every trained ReLU head scales its weights up: γ lies between 2.5 and 3.5 at every seed and trigger "
    "position, against the construction's 1.",
)
def _(m):
    return 2.5 < m["c_min"] and m["c_max"] < 3.5, f"γ from {_span(m['c_min'], m['c_max'], 3)}"


@CHAPTER.claim(
    "bos-constant-term",
    "At the trigger the trained heads put between 0.5/j and 3/j on BOS, whose value is not zero; with the "
    "trigger at 7, BOS supplies between 0.2 and 0.4 of the output's trigger channel in every seed.",
    profiles=BOTH,
)
def _(m):
    holds = 0.2 < m["bos_share_min"] and m["bos_share_max"] < 0.4
    return holds and m["bos_value_min"] > 0.1 and 0.5 < m["bos_w_min"] and m["bos_w_max"] < 3, (
        f"weight {_span(m['bos_w_min'], m['bos_w_max'], 3, '/j')}; "
        f"share {_span(m['bos_share_min'], m['bos_share_max'])}; |BOS value| ≥ {_down(m['bos_value_min'])}"
    )


@CHAPTER.claim(
    "trained-find-construction",
    "The trained ReLU heads average the same tokens as the construction up to a rescaling and a term from "
    "BOS, fixed at each trigger position j, that barely depends on the content: at each j and seed the BOS "
    "weight's standard deviation over sequences is at most 2% of its mean.",
    profiles=BOTH,
)
def _(m):
    same_tokens = m["trained_off_max"] == 0 and m["key_spread_rel"] < 0.01 and m["c_range"] < 0.01
    rescaled = m["c_scale_gap"] < 0.02 and m["off_diagonal"] < 0.01
    bos_term = m["bos_w_min"] > 0.5 and m["bos_value_min"] > 0.1 and m["_bos_sd_share"] <= 0.02
    return same_tokens and rescaled and bos_term, (
        f"off elsewhere: {m['trained_off_max'] == 0}; γ × value scale within {_up(m['c_scale_gap'])} of 1; "
        f"BOS weight ≥ {_down(m['bos_w_min'], 3)}/j, its std ≤ {m['bos_sd_share']} of its mean; "
        f"|BOS value| ≥ {_down(m['bos_value_min'])}"
    )


@CHAPTER.claim(
    "trained-own-value",
    "The trigger token's value carries a smaller trigger channel than the construction's: times γ, the value "
    "map's trigger entry (W_VO)_{1,1} (on average over its noise, the trigger channel of the trigger token's "
    "value) lies between 0.5 and 0.9 at every seed and trigger position, against the construction's 1.",
)
def _(m):
    return 0.5 < m["own_value_min"] and m["own_value_max"] < 0.9, (
        f"γ × (W_VO)_11 from {_span(m['own_value_min'], m['own_value_max'], 3)}, mean {m['own_value']:.3f}"
    )


@CHAPTER.claim(
    "trained-bos-makes-up",
    "BOS makes up what the trigger's own value leaves out: at every seed and trigger position j, on average "
    "over the sequences with the trigger at j, j times the trigger channel that the trigger token and BOS add "
    "at the trigger row lies within 0.01 of 1, BOS adding over 0.2 of it; the content tokens add at most "
    "0.02/j in size.",
)
def _(m):
    holds = m["own_bos_gap"] < 0.01 and m["_trigger_bos_min"] > 0.2
    return holds and m["content_trigger"] < 0.02, (
        f"trigger token + BOS within {_up(m['own_bos_gap'])} of 1; BOS at least {_down(m['_trigger_bos_min'], 3)}; "
        f"content at most {_up(m['content_trigger'])}"
    )


@CHAPTER.claim(
    "trained-bos-makes-up-per-sequence",
    "Sequence by sequence the spread is wider, but still small: in every test sequence, j times the trigger "
    "channel that the trigger token and BOS add lies within 0.03 of 1, and the content tokens add at most "
    "0.05/j in size.",
)
def _(m):
    wider = m["own_bos_gap_seq"] > m["own_bos_gap"] and m["content_trigger_seq"] > m["content_trigger"]
    return wider and m["own_bos_gap_seq"] < 0.03 and m["content_trigger_seq"] < 0.05, (
        f"trigger token + BOS within {_up(m['own_bos_gap_seq'], 3)} of 1 (on average {_up(m['own_bos_gap'])}); "
        f"content at most {_up(m['content_trigger_seq'])} (on average {_up(m['content_trigger'])})"
    )


# ---- without BOS ----


@CHAPTER.claim(
    "nobos-softmax-fails",
    "Without BOS no softmax head meets the stopping rule; each errs over 0.1 at the trigger.",
    profiles=BOTH,
)
def _(m):
    return m["nb_soft_stopped"] == 0 and m["nb_soft_err"] > 0.1, (
        f"{m['nb_soft_stopped']} stopped; smallest relative error {m['nb_soft_err']:.2f}"
    )


@CHAPTER.claim(
    "nobos-corollary",
    "Each softmax head's errors respect the corollary's floors: the estimated floor on the trigger error "
    "(at its measured non-trigger error) and the proved floor on the MSE.",
    profiles=BOTH,
)
def _(m):
    return m["nb_bound_ok"] and m["nb_soft_mse_min"] >= m["nb_mse_floor"], (
        f"trigger floors hold: {m['nb_bound_ok']}; MSE {_down(m['nb_soft_mse_min'], 3)} ≥ {_down(m['nb_mse_floor'], 3)}"
    )


@CHAPTER.claim(
    "nobos-corollary-hypotheses",
    "The softmax heads trained without BOS meet the hypotheses of Corollary 2.2: the task has at least two noise "
    "coordinates, and each is one causal head with no residual stream (values of the key token only, output "
    "their weighted sum) whose rows lie on the simplex on every test sequence.",
    profiles=BOTH,
)
def _(m):
    holds = m["pw_n_noise"] >= 2 and m["pw_nb_heads"] >= 1 and m["pw_nb_shape"]
    return holds and m["pw_nb_simplex_gap"] < 1e-5, (
        f"m = {m['pw_n_noise']}; {m['pw_nb_heads']} heads, one causal layer without residual: {m['pw_nb_shape']}; "
        f"rows off the simplex by at most {_up(m['pw_nb_simplex_gap'])}"
    )


@CHAPTER.claim(
    "nobos-mse-units",
    "In the units of the relative errors (times L·d_model/S), each softmax head's test MSE is within 3% of its "
    "relative error at the trigger plus L-1 times its relative error elsewhere. The corollary's MSE floor is "
    "then about 0.08, and each head's sum is above 0.4.",
    profiles=BOTH,
)
def _(m):
    holds = m["nb_mse_units_gap"] < 0.03 and 0.07 < m["nb_mse_floor_rel"] < 0.09
    return holds and m["nb_soft_sum_min"] > 0.4, (
        f"MSE in those units within {_percent(m['nb_mse_units_gap'], 'up')} of the sum; "
        f"floor {m['nb_mse_floor_rel']:.4f}; sums at least {_down(m['nb_soft_sum_min'], 3)}"
    )


@CHAPTER.claim(
    "nobos-floor-values",
    "The corollary's floor on the relative error at the trigger is about 0.32 with exact non-trigger rows; "
    "estimated at every softmax head's measured non-trigger error, it is above 0.1.",
    profiles=BOTH,
)
def _(m):
    return 0.3 < m["nb_floor0"] < 0.35 and m["nb_bound_min"] > 0.1, (
        f"floor {m['nb_floor0']:.4f} at exact rows; at least {_down(m['nb_bound_min'])} at the heads' errors"
    )


@CHAPTER.claim(
    "nobos-softmax-short-values",
    "The softmax heads keep the non-trigger rows nearly right by shrinking their content values.",
    profiles=BOTH,
)
def _(m):
    return m["nb_soft_nontrig"] < 1e-3 and m["nb_soft_vnorm"] < 0.2 * m["nb_relu_vnorm"], (
        f"non-trigger error ≤ {_up(m['nb_soft_nontrig'])}; values {m['nb_soft_vnorm']:.3f} vs {m['nb_relu_vnorm']:.2f}"
    )


@CHAPTER.claim(
    "nobos-position-0",
    "Without BOS the softmax heads' mean weight on position 0 at the non-trigger rows lies within 0.01 of "
    "what spreading each row evenly over its content tokens gives: position 0 is no sink.",
    profiles=BOTH,
)
def _(m):
    return m["nb_pos0_gap"] < 0.01, (
        f"on position 0 {_span(m['nb_soft_pos0_min'], m['nb_soft_pos0_max'], 3)}; even spread {m['_nb_even_pos0']:.3f}"
    )


@CHAPTER.claim(
    "nobos-softmax-self",
    "The first softmax head spreads its other rows nearly evenly over the content tokens (each row's weights "
    "within 15% of its largest); at the trigger row it puts all its weight on the trigger token.",
)
def _(m):
    return m["nb_soft_self"] > 0.99 and m["nb_soft_uneven"] < 0.15, (
        f"weight on the trigger token {m['nb_soft_self']:.3f}; "
        f"rows within {_percent(m['nb_soft_uneven'], 'up')} of even"
    )


@CHAPTER.claim(
    "nobos-softmax-self-every-j",
    "At every trigger position j = 2..L-1, every softmax head trained without BOS puts its whole trigger row on "
    "the trigger token: in every test sequence the other keys get less than 10⁻⁶ together.",
)
def _(m):
    every_j = m["_nb_self_positions"] == m["_nb_all_positions"]
    return every_j and m["nb_soft_other_max"] < 1e-6, (
        f"read at j = {m['_nb_self_positions'][0]}..{m['_nb_self_positions'][-1]}; "
        f"other keys at most {_up(m['nb_soft_other_max'])} together"
    )


@CHAPTER.claim(
    "nobos-substitution",
    "Corollary 2.2's floor written out with E_0 = (L-1) S r_nt, mean_j (A'_j - sqrt(j (L-1) S r_nt))_+^2 / S, "
    "is the floor the library computes: within 10⁻⁹ at r_nt = 0 and at each softmax head's measured error.",
    profiles=BOTH,
)
def _(m):
    return m["nb_subst_gap"] < 1e-9, f"largest gap {m['nb_subst_gap']:.2g}"


@CHAPTER.claim(
    "nobos-relu-solves",
    "Without BOS every relu_visible head meets the stopping rule, with relative error under 10⁻³.",
    profiles=BOTH,
)
def _(m):
    return m["nb_relu_stopped"] and m["nb_relu_err"] < 1e-3, f"largest relative error {m['nb_relu_err']:.2g}"


@CHAPTER.claim(
    "nobos-paper-scale",
    "Without BOS no ReLU head with the paper's scale is exact: its proved floor is positive, the visible-key "
    "scale's is 0, and the construction's weights err by over 0.1.",
    profiles=BOTH,
)
def _(m):
    return m["nb_paper_floor"] > 1e-3 and m["nb_visible_floor"] < 1e-12 and m["ex2_relu_linf"] > 0.1, (
        f"floors: relu {m['nb_paper_floor']:.4f}, relu_visible {m['nb_visible_floor']:.2g}; "
        f"construction under relu errs by {m['ex2_relu_linf']:.2f}"
    )


@CHAPTER.claim(
    "nobos-relu-off",
    "The relu_visible heads are off at every non-trigger row; the first weighs positions 0..7 alike at the trigger.",
    profiles=BOTH,
)
def _(m):
    return m["nb_relu_mass"] == 0 and m["nb_relu_off_fig"] == 0 and m["nb_relu_row_spread"] < 0.05, (
        f"non-trigger mass {m['nb_relu_mass']:.2g}; "
        f"trigger row's weights within {_percent(m['nb_relu_row_spread'], 'up')}"
    )


# ---- the exercises ----


@CHAPTER.claim(
    "ex-floors",
    "Only the scales proportional to 1/j have floor 0; 1/max(i,1)² does worse than no scale.",
    profiles=BOTH,
)
def _(m):
    others = min(m["ex_floor_visible"], m["ex_floor_sqrt"], m["ex_floor_square"], m["ex_floor_none"])
    return m["ex_exact_max"] < 1e-9 and others > 1e-3 and m["ex_floor_square"] > 2 * m["ex_floor_none"], (
        f"1/j scales {m['ex_exact_max']:.1g}; others ≥ {_down(others, 3)}; "
        f"1/max(i,1)² {m['ex_floor_square']:.4f} vs none {m['ex_floor_none']:.4f}"
    )


@CHAPTER.claim(
    "ex-nobos-scale",
    "Without BOS the construction is exact under relu_visible, not under relu; both stay off.",
    profiles=BOTH,
)
def _(m):
    return m["ex2_visible_linf"] < TOL < m["ex2_relu_linf"] and m["ex2_off_max"] == 0, (
        f"relu_visible {m['ex2_visible_linf']:.2g}; relu {m['ex2_relu_linf']:.2f}"
    )


@CHAPTER.claim(
    "ex-nobos-rel",
    "Without BOS the construction under the paper's scale has a relative error at the trigger within 5% of "
    "what an output (j+1)/j times the target gives in expectation.",
    profiles=BOTH,
)
def _(m):
    return abs(m["ex2_relu_rel"] / m["ex2_relu_rel_pred"] - 1) < 0.05, (
        f"measured {m['ex2_relu_rel']:.4f}; expected {m['ex2_relu_rel_pred']:.4f}"
    )


@CHAPTER.claim(
    "ex-margins",
    "Away from BOS's own row, the trained heads' largest non-trigger score is below zero by 4% to 10% of "
    "the trigger rows' largest score.",
)
def _(m):
    return m["ex3_off_max"] < 0 and 0.04 < m["_ex3_share_min"] and m["_ex3_share_max"] < 0.10, (
        f"largest {_span(m['ex3_off_min'], m['ex3_off_max'])}; "
        f"{m['ex3_share_min']} to {m['ex3_share_max']} of the trigger's"
    )


@CHAPTER.claim(
    "ex-margins-bos",
    "BOS's own row (row 0) has one score, the same in every sequence, just below zero: within 0.05 of it.",
    profiles=BOTH,
)
def _(m):
    return m["ex3_bos_max"] <= 0 and m["ex3_bos_min"] > -0.05, (
        f"BOS's score {_span(m['ex3_bos_min'], m['ex3_bos_max'])} across heads"
    )


@CHAPTER.claim(
    "ex-off-rows-no-gradient",
    "The squared error at the non-trigger rows sends no gradient to the trained heads' W_Q and W_K.",
    profiles=BOTH,
)
def _(m):
    return m["ex3_off_grad"] == 0, f"largest gradient {m['ex3_off_grad']:.2g}"


# ---- the chapter's tables ----


def table_weights(qk: torch.Tensor, vo: torch.Tensor, task: TriggerTask):
    """Table 3.1: the non-zero entries of the construction's score matrix ``qk`` and its value map ``vo``."""
    channel = {0: "BOS", 1: "trigger", task.d_model - 1: "bias"}
    rows = [
        {
            "matrix": "W_QK",
            "row channel": f"{channel.get(r, 'noise')} (query)",
            "column channel": f"{channel.get(c, 'noise')} (key)",
            "value": qk[r, c].item(),
        }
        for r, c in zip(*np.nonzero(qk.detach().numpy()))
    ]
    rows.append(
        {"matrix": "W_VO", "row channel": "each channel but BOS", "column channel": "the same channel", "value": 1.0}
    )
    return table(
        pd.DataFrame(rows),
        "Table 3.1. The construction's non-zero weights, by channel. W_QK: query channel (row), key channel "
        "(column). W_VO: key channel (row) to output channel (column), its diagonal without BOS's entry.",
        index=False,
    )


def table_by_j(m: dict):
    """Table 3.2: the construction under the visible-key scale, output over target at the trigger, by j."""
    return table(
        m["_by_j"],
        "Table 3.2. The construction under the relu_visible scale: the length of the output at the trigger "
        "over the target's, by trigger position j (mean over the test batch).",
    )


def table_scale_check(m: dict):
    """Table 3.3: noise-free RMS error at the trigger of the relu_visible heads, against the floor."""
    return table(
        m["_scale_check"],
        "Table 3.3. RMS error at the trigger on noise-free sequences: relu_visible heads, built and trained, "
        "against the proved floor √R(g), rounded down to three significant figures.",
        index=False,
        formats={"proved floor": lambda v: readable(v, 3, toward="down")},
    )


def table_trigger_rows(m: dict):
    """Table 3.4: the trigger row of chapter 1's ReLU heads, one row per seed, over every trigger position."""
    a = m["_anatomy"].assign(**{"j x spread": lambda d: d["trigger j"] * d["spread over keys"]})
    by_seed = a.groupby("seed").agg(
        **{
            "γ, least over j": ("j x weight on keys 1..j", "min"),
            "γ, largest over j": ("j x weight on keys 1..j", "max"),
            "spread, largest over j": ("j x spread", "max"),
            "j × weight on BOS, least": ("j x weight on BOS", "min"),
            "j × weight on BOS, largest": ("j x weight on BOS", "max"),
        }
    )
    positions = m["_c_positions"]
    return table(
        by_seed.reset_index(),
        f"Table 3.4. Chapter 1's ReLU heads at the trigger row, per seed, over trigger positions "
        f"j = {positions[0]}..{positions[-1]} (2000 test sequences). γ: j times the mean weight on keys 1..j (the "
        "construction: 1). Spread: the standard deviation of j × weight, pooled over those keys and the "
        "sequences with trigger j.",
        index=False,
    )


def table_value_maps(m: dict):
    """Table 3.5: the value maps of chapter 1's ReLU heads on the noise and trigger channels, and BOS's value."""
    columns = {
        "value map on noise (diagonal)": "W_VO on noise: mean diagonal",
        "value map on noise (off-diagonal)": "largest |off-diagonal|",
        "trigger entry": "W_VO (trigger, trigger)",
        "BOS value norm": "|BOS value|",
    }
    maps = m["_anatomy"].drop_duplicates("seed").assign(**{"trigger entry": lambda d: d.seed.map(m["_own_entry"])})
    return table(
        maps[["seed", *columns]].rename(columns=columns),
        "Table 3.5. The same heads' value maps: on the noise channels (the construction: diagonal 1, "
        "off-diagonal 0), on the trigger channel (the construction: 1), and the length of BOS's value.",
        index=False,
    )


def table_no_bos(m: dict):
    """Table 3.6: softmax and relu_visible heads trained without BOS."""
    columns = {
        "attention": "rule",
        "seed": "seed",
        "stopped_early": "met the stopping rule",
        "rel_err_trigger": "rel. error, trigger",
        "rel_err_nontrigger": "rel. error, elsewhere",
        "attn_mass_nontrigger": "row mass",
        "bos_mass_nontrigger": "mass on position 0",
    }
    return table(
        m["_runs"][list(columns)].rename(columns=columns),
        "Table 3.6. Heads trained without BOS. A relative error divides a mean squared error (at the "
        "trigger, or elsewhere, where the target is 0) by the trigger target's mean squared length. "
        "Masses average the non-trigger rows; position 0 is a content token.",
        index=False,
        formats={"met the stopping rule": lambda v: "yes" if v else "no"},
    )
