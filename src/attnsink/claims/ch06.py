"""Chapter 6's claims: every attention rule on the one-layer task, with BOS and without it
(:func:`attnsink.experiments.variants`). Rules on the simplex park on BOS, and fail without BOS; every
rule with an off state solves the task without BOS; half of them still park on BOS when it is there.

The measures come in four parts, one per section of the chapter: the task and the rules
(:func:`rule_constants`, no training, and the hand-built heads of prop-off-constructions,
:func:`off_construction` and :func:`constructions`, with the statement itself checked in float64
by :func:`construction_form`), the task with BOS (:func:`with_bos`,
:func:`sigmoid_saturation`, :func:`trigger_bos_by_position`), the task without it
(:func:`without_bos`), and the scales that do not count the averaged tokens (:func:`scales`).
:func:`training` reads who met the stopping rule. The measures stay unrounded: a number the text
states after a bound word ("at least", "at most") or as a range's end is printed on its safe
side by :func:`attnsink.claims.check_claims`; :data:`LOWER` rounds the one bound the text
qualifies ("at least about"), and :func:`safe_span` the ranges glued as one string."""

from __future__ import annotations

import math

import pandas as pd
import torch

from ..analysis import noise_free_trigger_rms
from ..attention import CLIP_GAMMA, clipped_softmax
from ..cache import memoized
from ..experiments import VARIANT_RULES
from ..metrics import OFF_MASS, SINK_MASS, SOLVED, evaluate, sink_bound_terms
from ..model import AttentionModel
from ..profiles import FIGURE_TRIGGER_POS
from ..prose import bound, readable
from ..task import BOS as BOS_DIM
from ..task import TRIGGER, TriggerTask
from ..theory import mse_lower_bound, position_scale_error_bound, trigger_error_lower_bound
from .base import Chapter

CHAPTER = Chapter("ch6")
BOTH = ("quick", "full")

SINK = 0.9  # the bar these heads clear: at least this much of each non-trigger row on BOS
# (the book's threshold for a head that parks on BOS is metrics.SINK_MASS, 0.5)
FAILS = 0.1  # a head "fails" at the trigger when its relative error there is at least this
SIMPLEX = [r for r, c in VARIANT_RULES.items() if c == "simplex"]
OFF = [r for r, c in VARIANT_RULES.items() if c == "off state"]
RELU = ["relu", "relu_visible"]
UNUSED = ["softmax1", "sink_logit", "sigmoid"]  # off-state rules that sink all the same
PHANTOM = ["softmax1", "sink_logit"]  # the rules with a phantom key
INEXACT_STOP = ["softmax1", "sink_logit", "gated"]  # off-state rules that cannot be exact (prop-positive-weights)
LOWER = {  # a lower bound the text states as "at least about", which check_claims does not
    # read as a bound word: rounded down here (digits). Every other bound is left to check_claims.
    "clip_floor": 2,
}
SIGMOID_FAINT = 0.02  # the no-BOS map's sigmoid trigger row: no mean weight above this (the caption)
RELU_TRIGGER_BOS = 0.05  # with BOS, the ReLU heads' trigger rows put at least this mean weight on BOS
MARGIN = 12  # M of prop-off-constructions: its bounds, 8064 e^{-2M} and e^{-2M}, are then below 1e-6
CONSTRUCTED = ["softmax1", "sink_logit", "sigmoid", "gated"]  # the rules prop-off-constructions builds
BOS_CONSTRUCTED = ["softmax1", "sink_logit", "gated"]  # those it builds with BOS too (not sigmoid)
BOS_ROWS = 1e-10  # with BOS, those heads keep below this on BOS at rows 1 on: the proof's e^-2M at M = 12
BOS_ROW0 = 1e-5  # and below this at BOS's own row 0: the proof's e^-M
CONSTRUCT_ERR = 1e-6  # the relative error the text states for those heads at M = 12
CONSTRUCT_MASS = 1e-4  # the weight the text states they keep at a non-trigger row: the proof's 16 e^-M is below it
EXACT_ERR = 1e-12  # relu_visible's exact head: float32 rounding alone, far below this
SPAN = (("lo", "down"), ("hi", "up"))  # a measured range's ends, printed outward: it holds every value
FLOAT32_HALF_STEP = 2.0**-25  # float32 rounds every number within this of 1 to 1 (half its step below 1)


def safe_span(values, decimals: int = 2) -> str:
    """The smallest and largest of ``values`` as a range that holds every one of them: the
    smallest rounded down, the largest up, to ``decimals`` places ('0.79 to 0.91'); one number
    when both print alike."""
    lo, hi = (
        step(round(float(f(values)) * 10**decimals, 9)) / 10**decimals
        for step, f in ((math.floor, min), (math.ceil, max))
    )
    text = [f"{x:.{decimals}f}".replace("-", "\u2212") for x in (lo, hi)]
    return text[0] if text[0] == text[1] else f"{text[0]} to {text[1]}"


def off_construction(
    rule: str, margin: float = MARGIN, bos: bool = False, dtype: torch.dtype = torch.float32
) -> AttentionModel:
    """The head of prop-off-constructions for ``rule`` at margin M = ``margin`` (and
    ``relu_visible``'s exact head, which needs no margin). Without BOS every token has x . v = 1
    for v = e_trig + e_bias, so the score map (theta_T e_trig + theta_C e_bias) v^T scores theta_T
    at the trigger query and theta_C at every other, on every key; values are a scale times the
    identity.
    ``sink_logit`` takes its learned logit b_h = M, ``gated`` the gate w_h = M (e_trig - e_bias).
    With ``bos`` (``softmax1``, ``sink_logit`` and ``gated`` only), two additions that act on BOS
    alone: the score map gains -2M (e_bias + e_trig + e_bos) e_bos^T, so every query scores BOS
    at -2M, the values drop BOS's coordinate, so BOS's value is 0, and the gate gains -M e_bos.
    ``dtype`` is the weights' (float64: sigmoid's value scale e^M is not rounded to float32)."""
    if bos and rule not in BOS_CONSTRUCTED:
        raise KeyError(f"no construction with BOS for {rule!r}")
    task = TriggerTask(bos=bos)
    n, bias = task.d_model, task.d_model - 1
    theta_t, theta_c, scale = {
        "softmax1": (margin, -margin, 1.0),
        "sink_logit": (2 * margin, 0.0, 1.0),
        "sigmoid": (-margin, -2 * margin, math.exp(margin)),
        "gated": (0.0, 0.0, 1.0),
        "relu_visible": (1.0, 0.0, 1.0),
    }[rule]
    v, query, gate, indicators = (torch.zeros(n, dtype=dtype) for _ in range(4))
    v[TRIGGER] = v[bias] = 1.0
    query[TRIGGER], query[bias] = theta_t, theta_c
    gate[TRIGGER], gate[bias] = margin, -margin
    indicators[[BOS_DIM, TRIGGER, bias]] = 1.0  # every token has exactly one of the three
    eye = torch.eye(n, dtype=dtype)
    score_map, values = torch.outer(query, v), scale * eye
    if bos:
        score_map -= 2 * margin * torch.outer(indicators, eye[BOS_DIM])
        values[BOS_DIM] = 0.0  # x W_V drops x's BOS coordinate
        gate[BOS_DIM] = -margin
    model = AttentionModel(n, attention=rule).to(dtype)
    with torch.no_grad():
        model.W_Q.copy_(score_map[None, None])  # W_Q W_K^T is the score map
        model.W_K.copy_(eye[None, None])
        model.W_V.copy_(values[None, None])
        model.W_O.copy_(eye[None, None])
        if rule == "sink_logit":
            model.sink.fill_(margin)
        if rule == "gated":
            model.W_G.copy_(gate[None, None])
    return model


def bos_constructions(n: int = 2000) -> dict:
    """prop-off-constructions's heads with BOS (softmax1, sink_logit, gated) at M = :data:`MARGIN`,
    run in float32 on ``n`` test sequences with BOS: their relative errors, their row sums at the
    non-trigger rows, their weight on BOS at rows 1 on and at row 0, and row 0's output."""
    task, err, mass, on_bos, row0, out0 = TriggerTask(), 0.0, 0.0, 0.0, 0.0, 0.0
    for rule in BOS_CONSTRUCTED:
        ev = evaluate(off_construction(rule, bos=True), task, n=n)
        a = ev.attn[0][:, 0]  # (batch, query, key)
        err = max(err, ev.errors["rel_err_trigger"], ev.errors["rel_err_nontrigger"])
        mass = max(mass, a.sum(-1)[ev.batch.is_nontrigger].max().item())
        on_bos, row0 = max(on_bos, a[:, 1:, 0].max().item()), max(row0, a[:, 0, 0].max().item())
        out0 = max(out0, ev.y_hat[:, 0].abs().max().item())
    return {
        "bos_construct_max_err": err,
        "bos_construct_max_mass": mass,
        "bos_construct_max_bos": on_bos,
        "bos_construct_row0_bos": row0,
        "_bos_construct_row0_out": out0,
    }


def scores(model: AttentionModel, x: torch.Tensor) -> torch.Tensor:
    """A one-layer, one-head model's scores (x_i W_Q) . (x_k W_K) on ``x``, in float64: (batch, query, key)."""
    q, k = (x.double() @ w[0, 0].detach().double() for w in (model.W_Q, model.W_K))
    return q @ k.transpose(-1, -2)


def constructions(n: int = 2000) -> dict:
    """prop-off-constructions's heads at M = :data:`MARGIN`, and relu_visible's exact head, run in
    float32 on ``n`` test sequences without BOS: their errors, and their weight at the non-trigger
    rows (each row's sum, the largest); how the sink_logit head goes silent."""
    task, errs, mass = TriggerTask(bos=False), {}, {}
    for rule in [*CONSTRUCTED, "relu_visible"]:
        ev = evaluate(off_construction(rule), task, n=n)
        errs[rule] = ev.errors
        mass[rule] = ev.attn[0][:, 0].sum(-1)[ev.batch.is_nontrigger].max().item()
    worst = lambda rules: max(errs[r][k] for r in rules for k in ("rel_err_trigger", "rel_err_nontrigger"))  # noqa: E731
    batch = task.sample(n, generator=torch.Generator().manual_seed(2))
    content = scores(off_construction("sink_logit"), batch.x)[batch.is_nontrigger]  # (rows, key)
    return {
        "construct_margin": MARGIN,
        "construct_err_bound": 8064 * math.exp(-2 * MARGIN),  # the proof's bound at the other rows (the larger)
        "construct_max_err": worst(CONSTRUCTED),
        "construct_max_mass": max(mass[r] for r in CONSTRUCTED),
        "construct_sigmoid_linf": errs["sigmoid"]["linf"],
        "_sink_logit_content_score": content.abs().max().item(),  # its content queries score 0 on every key
        "_sink_logit_mass": mass["sink_logit"],
        "_relu_vis_exact_err": worst(["relu_visible"]),
        "_relu_vis_exact_mass": mass["relu_visible"],
    }


FORM_MARGINS = (2, 4, 6, 12)  # the margins M at which the proposition's statement is checked, in float64
FORM_LENGTHS = (4, 8, 16, 32)  # and the sequence lengths L: the statement's L = 16, and three more
OFF_LINE = 1e-8  # the trigger error's part off the line of y_j may be at most this share of the bound e^-M |y_j|


def float64_run(model: AttentionModel, task: TriggerTask, batch) -> tuple:
    """A one-head model on ``batch``, in float64: ``(y_hat, w, y)``, its outputs (batch, L, d),
    its weights (batch, query, key) and the targets at the trigger rows (batch, d). ``model`` is
    turned to float64 in place (build it in float64, so that no weight is first rounded to
    float32). The target, the mean of the tokens first .. j, is computed in float64 from the
    float32 tokens (exactly representable), not read from the batch's float32 targets."""
    x = batch.x.double()
    y_hat, (w,) = model.double()(x)
    keys = torch.arange(task.seq_len)
    averaged = ((keys >= task.first_content) & (keys <= batch.trigger_pos[:, None])).double()  # (batch, key)
    y = (averaged[..., None] * x).sum(1) / averaged.sum(1, keepdim=True)
    return y_hat, w[:, 0], y


def on_the_line(out: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs ``out`` (rows, d) against the form c y of prop-off-constructions: per row,
    c = <out, y> / |y|^2 and the part of ``out`` off the line of y, over |y| (0 when out = c y)."""
    c = (out * y).sum(-1) / y.pow(2).sum(-1)
    return c, (out - c[:, None] * y).norm(dim=-1) / y.norm(dim=-1)


def form_case(rule: str, bos: bool, margin: float, seq_len: int, per_position: int = 5) -> dict:
    """prop-off-constructions's head for ``rule`` at margin M = ``margin``, in float64 on
    ``per_position`` sequences of length L = ``seq_len`` for each trigger position 2 .. L - 1:
    each part of the statement as a share of its bound, which holds below 1 (``c_lo``, the least
    (1 - c_j) e^M, above 0; ``off_line`` below :data:`OFF_LINE`; ``row0_out``, row 0's largest
    output with BOS, exactly 0). The bounds are the statement's with 16 replaced by L, as the proof
    allows (a row has at most L keys): L e^-M on the weights times the value scale at every
    other row, e^-2M and (63/2) L^2 e^-2M on the relative errors (8064 e^-2M at L = 16); with
    BOS, e^-2M on BOS's weight at rows 1 on and e^-M at row 0."""
    task, e = TriggerTask(seq_len=seq_len, bos=bos), math.exp(-margin)
    j = torch.arange(2, seq_len).repeat(per_position)
    noise = torch.rand(len(j), task.n_noise_positions, task.n_noise, generator=torch.Generator().manual_seed(seq_len))
    batch = task.build(j, noise)
    model = off_construction(rule, margin, bos=bos, dtype=torch.float64)
    y_hat, w, y = float64_run(model, task, batch)
    out, other = y_hat[batch.is_trigger], ~batch.is_trigger  # every other row, BOS's own included
    c, off = on_the_line(out, y)
    signal = y.pow(2).sum(-1).mean().item()  # the relative errors' denominator
    scale = model.W_V[0, 0, -1, -1].item()  # the value scale: the identity's, on the bias coordinate
    found = {
        "c_lo": (1 - c).min().item() / e,
        "c_hi": (1 - c).max().item() / e,
        "off_line": off.max().item() / e,
        "mass": scale * w.sum(-1)[other].max().item() / (seq_len * e),
        "err_trigger": (out - y).pow(2).sum(-1).mean().item() / signal / e**2,
        "err_other": y_hat[other].pow(2).sum(-1).mean().item() / signal / (31.5 * seq_len**2 * e**2),
    }
    if bos:
        found.update(bos_rows=w[:, 1:, 0].max().item() / e**2, bos_row0=w[:, 0, 0].max().item() / e)
        found["row0_out"] = y_hat[:, 0].abs().max().item()
    return found


def construction_form() -> dict:
    """prop-off-constructions's statement itself, in float64, on every head it builds (the four
    without BOS, the three with it) at every margin of :data:`FORM_MARGINS` and every length of
    :data:`FORM_LENGTHS` (:func:`form_case`): each share of its bound at its worst case."""
    cases = [
        form_case(rule, bos, float(margin), seq_len)
        for bos, rules in ((False, CONSTRUCTED), (True, BOS_CONSTRUCTED))
        for rule in rules
        for margin in FORM_MARGINS
        for seq_len in FORM_LENGTHS
    ]
    worst = {k: max(case[k] for case in cases if k in case) for k in cases[-1]}
    return {
        "_form_cases": len(cases),
        "_form_grid": (FORM_MARGINS, FORM_LENGTHS),
        "_form_c_lo": min(case["c_lo"] for case in cases),
        **{f"_form_{k}": v for k, v in worst.items() if k != "c_lo"},
    }


def sigmoid_saturation(result, n: int = 1000) -> dict:
    """With BOS, the sigmoid heads' weight on BOS at every non-trigger row of ``n`` test sequences,
    every seed: the smallest, as float32 computes it, and the smallest BOS logit z = s_i0 - log(i + 1),
    in float64, whose exact weight falls short of 1 by sigma(-z) < e^-z. The text states the
    logit as a floor, rounded down to three figures (40.9 for 40.947) and glued as that string,
    and the gap as e^-floor, which check_claims rounds up: so the gap follows from the floor
    stated beside it (two figures, "40", would give e^-40, not the 1.7e-18 that e^-40.947 gives)."""
    task, least_w, least_z = TriggerTask(), math.inf, math.inf
    offset = torch.log(torch.arange(task.seq_len, dtype=torch.float64) + 1)
    for r in result.results["sigmoid", True]:
        ev = evaluate(r.model, task, n=n)
        rows = ev.batch.is_nontrigger
        least_w = min(least_w, ev.attn[0][:, 0, :, 0][rows].min().item())
        least_z = min(least_z, (scores(r.model, ev.batch.x)[..., 0] - offset)[rows].min().item())
    floor = bound(least_z, "down", 3)  # the floor the text states, at or below every logit
    return {
        "sigmoid_bos_logit": f"{floor:g}".replace("-", "\u2212"),
        "_sigmoid_bos_logit": least_z,
        "_sigmoid_logit_floor": floor,
        "sigmoid_exact_gap": math.exp(-floor),  # e^-z <= e^-floor at every row
        "_sigmoid_min_row_bos": least_w,
    }


def trigger_bos_by_position(result, n: int = 1000) -> dict:
    """With BOS, the first seed of each ReLU rule: its mean weight on BOS at the trigger row with
    the trigger at each position 2 .. L - 1 (``n`` test sequences each), against the maps."""
    task, j, per = TriggerTask(), FIGURE_TRIGGER_POS, {}
    for rule in RELU:
        model = result.results[rule, True][0].model
        evs = {t: evaluate(model, task, n=n, trigger_pos=t) for t in range(2, task.seq_len)}
        per[rule] = [ev.attn[0][:, 0, t, 0].mean().item() for t, ev in evs.items()]
    vis = per["relu_visible"]
    return {
        "relu_vis_pos_first": vis[0],
        "relu_vis_pos_last": vis[-1],
        "_relu_vis_pos_mean": sum(vis) / len(vis),  # the mean over trigger positions 2 .. L - 1
        "_relu_vis_early_drop": vis[0] - vis[j - 2],  # positions 2 to 7
        "_relu_vis_late_drop": vis[j - 2] - vis[-1],  # positions 7 to 15
        "_relu_pos_falls": all(b < a for v in per.values() for a, b in zip(v, v[1:])),
        "_relu_map_gap": max(abs(per[r][j - 2] - result.figure_attn[r, True].mean(0)[j, 0].item()) for r in RELU),
    }


def rule_constants(task: TriggerTask | None = None) -> dict:
    """What the rules and the task fix before any training: the clip's threshold and floors,
    the floors the theory proves without BOS, and where the target's energy lies."""
    task = TriggerTask() if task is None else task
    threshold = -CLIP_GAMMA / (1 - CLIP_GAMMA)  # clipped softmax zeroes probabilities up to this
    b = task.sample(20_000, generator=torch.Generator().manual_seed(1))
    rows_i = torch.arange(task.seq_len).expand_as(b.is_nontrigger)[b.is_nontrigger]
    nb_task = TriggerTask(bos=False)
    nb = nb_task.sample(20_000, generator=torch.Generator().manual_seed(0))
    target = nb.y[nb.is_trigger]  # (sequences, d_model)
    energy = target.pow(2).sum(-1).mean()
    own = nb.x[nb.is_trigger][:, 2:-1] / (nb.trigger_pos + 1.0)[:, None]  # the trigger's share of the mean
    return {
        "clip_gamma": f"{CLIP_GAMMA:g}".replace("-", "\u2212"),
        "clip_threshold": readable(threshold, 3),  # the text's "approximately": three figures
        "_clip_threshold": threshold,
        "_clip_zeroes": clip_zeroes(threshold),
        "clip_keys": math.ceil(1 / threshold),  # fewest keys whose probabilities can all be at most it
        "seq_len": task.seq_len,
        "last_row": task.seq_len - 1,
        "noise_dims": int(target[:, 2:-1].shape[1]),  # m, the noise coordinates (prop-positive-weights: m >= 2)
        "solved_pct": f"{SOLVED:.0%}",
        "clip_floor": float((1 + CLIP_GAMMA * rows_i).mean()),  # 1 + gamma i, mean over non-trigger rows
        "clip_least_row": 1 + CLIP_GAMMA * (task.seq_len - 1),  # the last row's least row sum
        "noise_share": (target[:, 2:-1].pow(2).sum(-1).mean() / energy).item(),  # every noise coordinate
        "others_share": ((target[:, 2:-1] - own).pow(2).sum(-1).mean() / energy).item(),  # the others' noise
        "rows_ratio": int(nb.is_nontrigger[0].sum()),  # non-trigger rows per trigger row
        "nb_mse_floor": mse_lower_bound(nb_task),
        "scale_floor_vis": position_scale_error_bound(task, "relu_visible"),
        "scale_floor_relu_nb": position_scale_error_bound(nb_task, "relu"),
        "sink_mass": f"{SINK_MASS:g}",  # the book's threshold: a head parks on BOS from this mass on
        "ch5_off_mass": f"{OFF_MASS:g}",  # Chapter 5's looser "off": a mean row mass below this
        # Chapter 2's corollary: its floor on the trigger error, at a non-trigger error of 0 and of 1%
        "nb_bound_exact": trigger_error_lower_bound(nb_task, 0.0),
        "nb_bound_at_solved": trigger_error_lower_bound(nb_task, SOLVED),
    }


def clip_zeroes(threshold: float, rel: float = 1e-6) -> bool:
    """Whether :func:`attnsink.attention.clipped_softmax` (at :data:`CLIP_GAMMA`, in float64) gives 0
    to a key whose softmax weight is just below ``threshold`` and a positive weight to one just
    above it (``rel`` of it either side): the threshold the chapter states."""
    p = torch.tensor([threshold * (1 - rel), threshold * (1 + rel)], dtype=torch.float64)
    s = torch.stack([torch.zeros_like(p), torch.log(p / (1 - p))], dim=-1)  # key 1's softmax weight is p
    w = clipped_softmax(s, torch.ones(2, 2, dtype=torch.bool))[:, 1]
    return bool(w[0] == 0 and w[1] > 0)


def split(result) -> tuple[dict, dict]:
    """The runs of every rule, on the task with BOS and on the task without it."""
    runs = pd.DataFrame(result.runs)
    on = {r: df for r, df in runs[~runs.no_bos].groupby("attention")}
    off = {r: df for r, df in runs[runs.no_bos].groupby("attention")}
    return on, off


def smallest_row_bos(result, rules: list[str], n: int = 1000) -> float:
    """The smallest weight on BOS of any single non-trigger row, over ``n`` test sequences and
    every seed of ``rules`` on the task with BOS (the runs' records hold means over rows)."""
    task = TriggerTask()
    least = math.inf
    for rule in rules:
        for r in result.results[rule, True]:
            ev = evaluate(r.model, task, n=n)
            bos = ev.attn[0][:, 0, :, 0]  # (batch, query): the first head's weight on BOS
            least = min(least, bos[ev.batch.is_nontrigger].min().item())
    return least


def trigger_row_bos(result, rule: str, n: int = 1000) -> list[float]:
    """Per seed of ``rule`` on the task with BOS, the mean weight its trigger rows put on BOS
    (``n`` test sequences, every trigger position)."""
    task, means = TriggerTask(), []
    for r in result.results[rule, True]:
        ev = evaluate(r.model, task, n=n)
        means.append(ev.attn[0][:, 0, :, 0][ev.batch.is_trigger].mean().item())
    return means


def with_bos(result, constants: dict) -> dict:
    """The task with BOS: who parks on BOS, the partial rule's floor checked row by row, and how long
    the rules that cannot be exact took."""
    on, _ = split(result)
    task = TriggerTask()
    parks = [r for r in VARIANT_RULES if r not in [*RELU, "gated"]]  # every rule that parks on BOS
    slack, err_term, a00 = [], [], True
    for r in result.results["clipped_softmax", True]:
        a = evaluate(r.model, task, n=200).attn[0][:, 0]
        a00 = a00 and bool((a[:, 0, 0] == 1).all() and (a[..., 0] <= 1).all())  # the theorem's form
        t = memoized(sink_bound_terms)(r.model, task, n=200)  # kept in the results cache
        slack.append(((t["err_row"] + t["err_bos"]) - t["mass_off_bos"] * t["d_lower"]).min().item())
        err_term.append(((t["err_row"] + t["err_bos"]) / t["d_lower"]).mean().item())
    sig, clipped = on["sigmoid"], on["clipped_softmax"]
    j = FIGURE_TRIGGER_POS  # the maps' trigger row
    trig = {r: trigger_row_bos(result, r) for r in RELU}
    parkers = [r for r in VARIANT_RULES if r not in RELU]  # every rule whose head puts weight on BOS
    return {
        "simplex_min_bos": float(min(on[r].bos_mass_nontrigger.min() for r in SIMPLEX)),
        "simplex_min_row_bos": smallest_row_bos(result, SIMPLEX),
        "unused_min_row_bos": smallest_row_bos(result, UNUSED),
        "_parks_min_bos": float(min(on[r].bos_mass_nontrigger.min() for r in parks)),
        "parks_value_ratio": float(max(on[r].bos_value_ratio.max() for r in parkers)),  # |BOS value| / content's
        "parks_nontrig": float(max(on[r].rel_err_nontrigger.max() for r in parkers)),
        "gated_bos": float(on["gated"].bos_mass_nontrigger.mean()),
        "_gated_max_bos": float(on["gated"].bos_mass_nontrigger.max()),
        "clipped_bos": float(clipped.bos_mass_nontrigger.mean()),
        "_clipped_min_bos": float(clipped.bos_mass_nontrigger.min()),
        "clipped_min_share": float(clipped.bos_share_nontrigger.min()),  # of the weight it keeps
        "clipped_share_gap": 1 - float(clipped.bos_share_nontrigger.min()),  # how far below 1, as the text says it
        "clip_err_term": max(err_term),
        "_clip_slack": min(slack),
        "_clip_a00": a00,
        "relu_max_bos": float(max(on[r].bos_mass_nontrigger.max() for r in RELU)),
        "relu_trig_bos_lo": min(trig["relu"]),  # at the trigger row, mean over sequences, per seed
        "relu_trig_bos_hi": max(trig["relu"]),
        "relu_vis_trig_bos_lo": min(trig["relu_visible"]),
        "relu_vis_trig_bos_hi": max(trig["relu_visible"]),
        "relu_map_bos": result.figure_attn["relu", True].mean(0)[j, 0].item(),  # the map's trigger row
        "relu_vis_map_bos": result.figure_attn["relu_visible", True].mean(0)[j, 0].item(),
        "unused_min_bos": float(min(on[r].bos_mass_nontrigger.min() for r in UNUSED)),
        "n_off": len(OFF),
        "off_sink_count": sum(bool(on[r].bos_mass_nontrigger.min() >= SINK_MASS) for r in OFF),
        "_off_clear_count": sum(bool(on[r].bos_mass_nontrigger.max() < SINK_MASS) for r in OFF),
        "phantom": float(1 - min(on[r].attn_mass_nontrigger.min() for r in PHANTOM)),
        "gated_share": float(on["gated"].bos_share_nontrigger.mean()),
        "_gated_min_share": float(on["gated"].bos_share_nontrigger.min()),
        "gated_mass": float(on["gated"].attn_mass_nontrigger.mean()),
        "_gated_max_mass": float(on["gated"].attn_mass_nontrigger.max()),
        "relu_vis_err": float(on["relu_visible"].rel_err_trigger.mean()),
        "sigmoid_err": float(sig.rel_err_trigger.mean()),
        "_sigmoid_err_lo": float(sig.rel_err_trigger.min()),
        "_sigmoid_err_hi": float(sig.rel_err_trigger.max()),
        "n_seeds": int(len(sig)),
    }


def training(result) -> dict:
    """Who met the stopping rule, on both tasks: the ReLU heads that can be exact, the sigmoid and
    clipped heads (on both tasks), and the off-state rules that cannot be exact."""
    on, nb = split(result)
    both = {r: pd.concat([on[r], nb[r]]) for r in VARIANT_RULES}
    return {
        "relu_stopped": bool(on["relu"].stopped_early.all()),
        "relu_steps": int(on["relu"].steps.median()),
        "sigmoid_steps": int(on["sigmoid"].steps.median()),
        "sigmoid_stopped": int(both["sigmoid"].stopped_early.sum()),  # both tasks
        "_clipped_stopped": int(both["clipped_softmax"].stopped_early.sum()),  # both tasks
        "never_runs": int(min(len(both[r]) for r in ("sigmoid", "clipped_softmax"))),  # runs of each, both tasks
        "_inexact_stop": bool(all(both[r].stopped_early.all() for r in INEXACT_STOP)),
        "step_budget": int(result.settings.steps),
        "stop_linf": f"{result.settings.stop_linf:g}",  # a batch's largest absolute error below this: stop
        "_stop_linf": float(result.settings.stop_linf),
    }


def weight_on_itself(result, rules: list[str], n: int = 1000) -> float:
    """The smallest mean weight a trigger row puts on the trigger token itself, over every seed of
    ``rules`` on the task without BOS (``n`` test sequences, every trigger position)."""
    nb_task, least = TriggerTask(bos=False), math.inf
    for rule in rules:
        for run in result.results[rule, False]:
            ev = evaluate(run.model, nb_task, n=n)
            own = ev.attn[0][:, 0].diagonal(dim1=-2, dim2=-1)  # (batch, query): row i's weight on key i
            least = min(least, own[ev.batch.is_trigger].mean().item())
    return least


def phantom_key(result) -> dict:
    """Exercise 6.3: the sink_logit heads' learned logit b_h and the phantom key's share of the
    non-trigger rows, every seed on both tasks, against e^b/(e^b + 1), the most it can take at any
    row (row i, with i + 1 keys, gives it at most e^b/(e^b + i + 1)) while the keys' scores are
    not negative. Without BOS the non-trigger rows include row 0, whose one key allows that most."""
    rows = []
    for bos in (True, False):
        for r in result.results["sink_logit", bos]:
            b_h = r.model.sink.item()
            share = 1 - evaluate(r.model, TriggerTask(bos=bos)).summary()["attn_mass_nontrigger"]
            rows.append({"bos": bos, "b_h": b_h, "share": share, "most": math.exp(b_h) / (math.exp(b_h) + 1)})
    df = pd.DataFrame(rows)
    nb, wb = df[~df.bos], df[df.bos]
    return {
        "ex3_seeds": len(nb),
        "ex3_nb_share": float(nb.share.min()),
        "ex3_nb_bound": float(nb.most.max()),
        "ex3_nb_bh": safe_span(nb.b_h),
        "ex3_wb_bh": safe_span(wb.b_h),
        "ex3_wb_share": float(wb.share.max()),
        "_ex3_beyond": bool((nb.share > nb.most).all()),
        "_ex3_wb_within": bool((wb.share <= wb.most).all()),
        "_ex3_signs": bool((nb.b_h > 0).all() and (wb.b_h < 0).all()),
    }


def without_bos(result, constants: dict) -> dict:
    """The task without BOS: the simplex and partial rules fail at the trigger, against the
    corollary's floors; what their trigger row outputs; every off-state rule switches off."""
    _, nb = split(result)
    nb_task = TriggerTask(bos=False)
    simplex = pd.concat([nb[r] for r in SIMPLEX])
    bound = simplex.rel_err_nontrigger.map(lambda v: trigger_error_lower_bound(nb_task, v))
    noise, others = constants["noise_share"], constants["others_share"]
    out_noise, out_var = [], []
    for r in SIMPLEX:
        for run in result.results[r, False]:
            ev = evaluate(run.model, nb_task, n=2000)
            y, t = ev.y_hat[ev.batch.is_trigger], ev.batch.y[ev.batch.is_trigger]
            out_noise.append((y[:, 2:-1].pow(2).sum(-1).mean() / t[:, 2:-1].pow(2).sum(-1).mean()).item())
            out_var.append(((y - y.mean(0)).pow(2).sum(-1).mean() / t.pow(2).sum(-1).mean()).item())
    off = pd.concat([nb[r] for r in OFF])
    clipped = nb["clipped_softmax"]
    j = FIGURE_TRIGGER_POS  # the maps' trigger row
    faint = result.figure_attn["sigmoid", False].mean(0)[j].max().item()
    others = min(result.figure_attn[r, False].mean(0)[j].max().item() for r in OFF if r != "sigmoid")
    itself = weight_on_itself(result, [*SIMPLEX, "clipped_softmax"])
    return {
        "simplex_nb_min_err": float(simplex.rel_err_trigger.min()),
        "nb_seeds": int(min(len(nb[r]) for r in [*SIMPLEX, "clipped_softmax"])),  # seeds per rule
        "simplex_nb_errs": safe_span(simplex.rel_err_trigger, 3),
        "nb_bound_min": float(bound.min()),
        "_below_bound": int((simplex.rel_err_trigger < bound).sum()),
        "_below_mse_floor": int((simplex.mse < constants["nb_mse_floor"]).sum()),
        "simplex_nb_nontrig": float(simplex.rel_err_nontrigger.max()),
        "_noise_gap": float((simplex.rel_err_trigger - noise).abs().max()),
        "_closer_to_all": bool(
            ((simplex.rel_err_trigger - noise).abs() < (simplex.rel_err_trigger - others).abs()).all()
        ),
        "simplex_out_noise": max(out_noise),
        "simplex_out_var": max(out_var),
        "on_itself": itself,
        "on_itself_gap": 1 - itself,  # how far below 1, as the text says it
        "_sigmoid_map_trigger": faint,
        "_others_map_trigger": others,
        "clipped_nb_err": float(clipped.rel_err_trigger.mean()),
        "_clipped_nb_min_err": float(clipped.rel_err_trigger.min()),
        "_clipped_nb_nontrig": float(clipped.rel_err_nontrigger.max()),
        "_clipped_nb_min_mass": float(clipped.attn_mass_nontrigger.min()),
        "off_nb_max_err": float(off.rel_err_trigger.max()),
        "_off_nb_max_nontrig": float(off.rel_err_nontrigger.max()),
        "off_nb_max_mass": float(off.attn_mass_nontrigger.max()),
        "relu_nb_err": float(nb["relu"].rel_err_trigger.mean()),
        "relu_vis_nb_stopped": bool(nb["relu_visible"].stopped_early.all()),
    }


def scales(result, constants: dict) -> dict:
    """The two heads whose scale does not count the averaged tokens: how far every trained head
    stays above the floor Chapter 3 proves ("only one over the count will do"), on noise-free
    sequences."""
    cases = {
        ("relu_visible", True): ("scale_floor_vis", TriggerTask()),
        ("relu", False): ("scale_floor_relu_nb", TriggerTask(bos=False)),
    }
    above = [
        noise_free_trigger_rms(r.model, task) - constants[floor]
        for (rule, bos), (floor, task) in cases.items()
        for r in result.results[rule, bos]
    ]
    return {"_scale_margin": min(above)}


@CHAPTER.measures
def measures(result) -> dict:
    """The numbers chapter 6 quotes, from :func:`~attnsink.experiments.variants`'s ``result``."""
    m = rule_constants()
    m = {**m, **with_bos(result, m), **without_bos(result, m), **scales(result, m), **training(result)}
    m.update(phantom_key(result))
    m.update({**constructions(), **bos_constructions(), **construction_form(), **sigmoid_saturation(result)})
    m.update(trigger_bos_by_position(result))
    for name, digits in LOWER.items():
        m[name] = bound(m[name], "down", digits)  # a stated bound is never on the wrong side
    return m


# ---- the rules ----


@CHAPTER.claim(
    "clip-threshold",
    "A clipped_softmax weight is 0 exactly when its softmax weight p_ik is at most -gamma/(1 - gamma) = "
    "0.03/1.03: the library zeroes a key just below it and keeps one just above. The text prints it to within "
    "half a unit of its last figure (0.0291). A row can be all zeros only from 35 keys on (35 times the "
    "threshold reaches 1, 34 times does not), more than the 16 of a sequence.",
    profiles=BOTH,
)
def _(m):
    thr, keys, shown = m["_clip_threshold"], m["clip_keys"], m["clip_threshold"]
    half_unit = 0.5 * 10.0 ** -len(shown.split(".")[1])
    printed = abs(float(shown) - thr) <= half_unit and math.isclose(thr, 0.03 / 1.03)
    holds = m["_clip_zeroes"] and printed and (keys - 1) * thr < 1 <= keys * thr and m["seq_len"] < keys
    return holds, (
        f"threshold {thr:.6f}, printed {shown}; zeroed just below, kept just above: {m['_clip_zeroes']}; "
        f"fewest keys {keys}, a sequence {m['seq_len']}"
    )


# ---- the task with BOS ----


@CHAPTER.claim(
    "simplex-sinks",
    "With BOS, softmax and sigmoid_norm park on BOS: at least 0.9 of the non-trigger rows on BOS, on average, in every "
    "seed.",
    profiles=BOTH,
)
def _(m):
    return m["simplex_min_bos"] >= SINK, f"smallest mean BOS mass {m['simplex_min_bos']:.3f}"


@CHAPTER.claim(
    "simplex-sinks-every-row",
    "With BOS, softmax and sigmoid_norm put at least 0.9 of every single non-trigger row on BOS "
    "(1000 test sequences, every seed).",
)
def _(m):
    return m["simplex_min_row_bos"] >= SINK, f"smallest row's BOS weight {m['simplex_min_row_bos']:.4f}"


@CHAPTER.claim(
    "sinks-by-threshold",
    "By the book's threshold for parking (a BOS mass of at least 0.5 at the non-trigger rows), every rule but "
    "gated and the ReLU rules parks on BOS in every seed; gated, whose softmax sits on BOS, stays below it in "
    "every seed, so it does not park.",
)
def _(m):
    holds = m["_parks_min_bos"] >= SINK_MASS > m["_gated_max_bos"] and m["relu_max_bos"] < SINK_MASS
    return holds, (
        f"smallest of the rest {m['_parks_min_bos']:.3f}, largest gated {m['_gated_max_bos']:.3f}, "
        f"threshold {SINK_MASS:g}"
    )


@CHAPTER.claim(
    "partial-sink",
    "clipped_softmax keeps over half of its weight on BOS, above the floor of Chapter 2's sink inequality "
    "for non-negative weights, less its error term; the inequality holds on every row checked.",
    profiles=BOTH,
)
def _(m):
    floor = m["clip_floor"] - m["clip_err_term"] - 1e-6
    holds = m["_clip_a00"] and m["_clip_slack"] >= -1e-5 and m["_clipped_min_bos"] >= max(floor, 0.5)
    return holds, (
        f"smallest BOS mass {m['_clipped_min_bos']:.3f}; floor {m['clip_floor']:g}, error term "
        f"{m['clip_err_term']:.2g}; least slack {m['_clip_slack']:.2g}"
    )


@CHAPTER.claim(
    "partial-on-bos",
    "With BOS, the weight clipped_softmax keeps at the non-trigger rows sits on BOS: a BOS share of at least "
    "0.999 in every seed.",
)
def _(m):
    return m["clipped_min_share"] >= 0.999, f"smallest BOS share {m['clipped_min_share']:.7g}"


@CHAPTER.claim("relu-no-sink", "With BOS, the ReLU heads put at most 0.01 of a non-trigger row on BOS.", profiles=BOTH)
def _(m):
    return m["relu_max_bos"] <= 0.01, f"largest BOS mass {m['relu_max_bos']:.2g}"


@CHAPTER.claim("relu-bos-zero", "The ReLU heads' BOS mass at the non-trigger rows is exactly 0 in every seed.")
def _(m):
    return m["relu_max_bos"] == 0, f"largest BOS mass {m['relu_max_bos']:.2g}"


@CHAPTER.claim(
    "relu-trigger-bos",
    "With BOS, the ReLU heads do put weight on BOS at the trigger row: a mean weight of at least 0.05 in every "
    "seed (1000 test sequences, every trigger position), and in Fig 6.3's first-seed panels (trigger at 7).",
)
def _(m):
    keys = ("relu_trig_bos_lo", "relu_vis_trig_bos_lo", "relu_map_bos", "relu_vis_map_bos")
    lo, hi = ({r: readable(m[f"{r}_trig_bos_{end}"], 3, side) for r in ("relu", "relu_vis")} for end, side in SPAN)
    return min(m[k] for k in keys) >= RELU_TRIGGER_BOS, (
        f"relu {lo['relu']} to {hi['relu']} (map {m['relu_map_bos']:.3f}), "
        f"relu_visible {lo['relu_vis']} to {hi['relu_vis']} (map {m['relu_vis_map_bos']:.3f})"
    )


@CHAPTER.claim(
    "off-still-sinks",
    "softmax1, sink_logit and sigmoid park on BOS all the same: at least 0.9 on BOS, on average over the "
    "non-trigger rows, in every seed.",
    profiles=BOTH,
)
def _(m):
    return m["unused_min_bos"] >= SINK, f"smallest mean BOS mass {m['unused_min_bos']:.3f}"


@CHAPTER.claim(
    "off-still-sinks-every-row",
    "softmax1, sink_logit and sigmoid put at least 0.9 of every single non-trigger row on BOS "
    "(1000 test sequences, every seed).",
)
def _(m):
    return m["unused_min_row_bos"] >= SINK, f"smallest row's BOS weight {m['unused_min_row_bos']:.4f}"


@CHAPTER.claim(
    "off-half-sink",
    "Half of the off-state rules (3 of 6) park on BOS by the book's threshold in every seed; the other half "
    "stay below it in every seed.",
    profiles=BOTH,
)
def _(m):
    holds = 2 * m["off_sink_count"] == m["n_off"] and m["off_sink_count"] + m["_off_clear_count"] == m["n_off"]
    return holds, f"{m['off_sink_count']} of {m['n_off']} park, {m['_off_clear_count']} stay below"


@CHAPTER.claim(
    "phantom-unused",
    "With BOS, the phantom key of softmax1 and sink_logit receives under 1% of the mass.",
    profiles=BOTH,
)
def _(m):
    return m["phantom"] < SOLVED, f"largest phantom share {m['phantom']:.2g}"


@CHAPTER.claim(
    "gated-half",
    "The gated head's softmax sits on BOS (share ≥ 0.9) while its gate stays partly open (mass ≤ 0.7).",
    profiles=BOTH,
)
def _(m):
    return m["_gated_min_share"] >= SINK and m["_gated_max_mass"] <= 0.7, (
        f"smallest BOS share {m['_gated_min_share']:.4f}, largest mass {m['_gated_max_mass']:.2f}"
    )


@CHAPTER.claim(
    "parkers-silence-bos",
    "With BOS, every rule but the ReLU ones gives BOS a value whose norm is at most 0.001 of the content tokens' "
    "mean value norm, and errs by at most 1e-4 (relative) at the non-trigger rows, in every seed.",
)
def _(m):
    holds = m["parks_value_ratio"] <= 1e-3 and m["parks_nontrig"] <= 1e-4
    return holds, f"largest BOS value ratio {m['parks_value_ratio']:.2g}, non-trigger error {m['parks_nontrig']:.2g}"


@CHAPTER.claim(
    "sigmoid-on-bos",
    "With BOS, the sigmoid heads give BOS a weight of exactly 1 in float32 at every non-trigger row (1000 test "
    "sequences, every seed). Their logit z = s_i0 - log(i + 1) there is at least the floor the text states "
    "(three figures, rounded down), so the exact weight falls short of 1 by sigma(-z) < e^-z, at most "
    "e^-floor, the gap the text states; that is below 2^-25, the tolerance of 'to float32 precision': float32 "
    "rounds any number that close to 1 to 1.",
)
def _(m):
    floor, least = m["_sigmoid_logit_floor"], m["_sigmoid_bos_logit"]
    stated = floor <= least and float(m["sigmoid_bos_logit"].replace("\u2212", "-")) == floor
    gap = m["sigmoid_exact_gap"] == math.exp(-floor) and math.exp(-least) <= m["sigmoid_exact_gap"]
    holds = m["_sigmoid_min_row_bos"] == 1.0 and stated and gap and m["sigmoid_exact_gap"] < FLOAT32_HALF_STEP
    return holds, (
        f"smallest float32 weight {m['_sigmoid_min_row_bos']:.9g}; least BOS logit {least:.5g} (stated floor "
        f"{m['sigmoid_bos_logit']}), exact gap below e^-floor = {readable(m['sigmoid_exact_gap'], 3, 'up')} "
        "(tolerance 2^-25)"
    )


@CHAPTER.claim(
    "relu-trigger-bos-by-position",
    "For the first seed of each ReLU rule, the mean weight on BOS at the trigger row falls at every step of the "
    "trigger position, from 2 to 15; Fig 6.3 shows the position-7 mean (within 1e-6). For relu_visible it falls "
    "more from position 2 to 7 than from 7 to 15, so the mean over positions lies above the position-7 value; "
    "that value lies below every seed's mean over all positions.",
)
def _(m):
    steep = m["_relu_vis_early_drop"] > m["_relu_vis_late_drop"] and m["_relu_vis_pos_mean"] > m["relu_vis_map_bos"]
    holds = m["_relu_pos_falls"] and m["_relu_map_gap"] <= 1e-6 and m["relu_vis_map_bos"] < m["relu_vis_trig_bos_lo"]
    return holds and steep, (
        f"falls: {m['_relu_pos_falls']}; relu_visible {m['relu_vis_pos_first']:.3f} at 2, "
        f"{m['relu_vis_map_bos']:.3f} at 7 (the map; gap {m['_relu_map_gap']:.2g}), "
        f"{m['relu_vis_pos_last']:.3f} at 15; "
        f"mean over positions {m['_relu_vis_pos_mean']:.3f}; least per-seed mean {m['relu_vis_trig_bos_lo']:.3f}"
    )


# ---- the task without BOS ----


@CHAPTER.claim(
    "simplex-fail",
    "Without BOS, the simplex heads' relative error at the trigger is at least 0.1 in every seed, above the "
    "floor of Chapter 2's corollary at their own non-trigger error, and their MSE above its floor.",
    profiles=BOTH,
)
def _(m):
    holds = m["simplex_nb_min_err"] >= FAILS and m["_below_bound"] == 0 and m["_below_mse_floor"] == 0
    return holds, (
        f"smallest error {m['simplex_nb_min_err']:.4f} (least floor {m['nb_bound_min']:.4g}); "
        f"{m['_below_bound']} below the floor, {m['_below_mse_floor']} below the MSE floor"
    )


@CHAPTER.claim(
    "simplex-right-elsewhere",
    "Without BOS, the simplex heads err by at most 1% at the non-trigger rows.",
    profiles=BOTH,
)
def _(m):
    return m["simplex_nb_nontrig"] <= SOLVED, f"largest {m['simplex_nb_nontrig']:.2g}"


@CHAPTER.claim(
    "simplex-lose-the-noise",
    "Their trigger error matches losing all of the target's noise (within 0.05), closer to that than to "
    "losing only the other tokens' noise.",
    profiles=BOTH,
)
def _(m):
    return m["_noise_gap"] < 0.05 and m["_closer_to_all"], (
        f"largest gap {m['_noise_gap']:.2g} from {m['noise_share']:.3f}; closer to it: {m['_closer_to_all']}"
    )


@CHAPTER.claim(
    "simplex-constant-output",
    "Their trigger output carries under 5% of the target's noise energy and varies by under 5% of its energy.",
    profiles=BOTH,
)
def _(m):
    return max(m["simplex_out_noise"], m["simplex_out_var"]) < 0.05, (
        f"largest noise share {m['simplex_out_noise']:.2%}, variation {m['simplex_out_var']:.2%}"
    )


@CHAPTER.claim(
    "trigger-on-itself",
    "Without BOS, the simplex and partial heads put at least 0.9 of the trigger row on the trigger token itself, "
    "on average over 1000 test sequences (every trigger position), in every seed.",
    profiles=BOTH,
)
def _(m):
    return m["on_itself"] >= SINK, f"least mean weight on itself {m['on_itself']:.7g}"


@CHAPTER.claim(
    "sigmoid-map-faint",
    "On the map without BOS (first seed, trigger at 7), sigmoid's trigger row has no mean weight above 0.02, "
    "while every other off-state rule's trigger row reaches at least 0.1.",
)
def _(m):
    holds = m["_sigmoid_map_trigger"] <= SIGMOID_FAINT and m["_others_map_trigger"] >= 0.1
    return holds, f"sigmoid's largest {m['_sigmoid_map_trigger']:.3g}, the others' least {m['_others_map_trigger']:.3g}"


@CHAPTER.claim(
    "phantom-through-scores",
    "Without BOS, the sink_logit phantom key takes at least 0.999 of the non-trigger rows in every seed, more than "
    "e^b/(e^b + 1), the most any row allows with the keys' scores all ≥ 0, and b_h > 0; with BOS, b_h < 0 and "
    "the share stays within that bound.",
)
def _(m):
    holds = m["ex3_nb_share"] >= 0.999 and m["_ex3_beyond"] and m["_ex3_wb_within"] and m["_ex3_signs"]
    return holds, (
        f"least share {m['ex3_nb_share']:.5f} (largest bound {m['ex3_nb_bound']:.3f}); beyond: {m['_ex3_beyond']}; "
        f"signs: {m['_ex3_signs']}"
    )


@CHAPTER.claim(
    "partial-fails",
    "Without BOS, clipped_softmax fails at the trigger too (error ≥ 0.1), errs by at most 1% elsewhere, "
    "and keeps over half of each non-trigger row.",
    profiles=BOTH,
)
def _(m):
    holds = (
        m["_clipped_nb_min_err"] >= FAILS and m["_clipped_nb_nontrig"] <= SOLVED and m["_clipped_nb_min_mass"] >= 0.5
    )
    return holds, (
        f"smallest trigger error {m['_clipped_nb_min_err']:.3f}, largest elsewhere {m['_clipped_nb_nontrig']:.2g}, "
        f"least mass {m['_clipped_nb_min_mass']:.2f}"
    )


@CHAPTER.claim(
    "off-solves",
    "Without BOS, every off-state head solves the task to within 1% and keeps at most 1% of mass at the "
    "non-trigger rows.",
    profiles=BOTH,
)
def _(m):
    worst = max(m["off_nb_max_err"], m["_off_nb_max_nontrig"], m["off_nb_max_mass"])
    return worst <= SOLVED, (
        f"largest trigger error {m['off_nb_max_err']:.2g}, elsewhere {m['_off_nb_max_nontrig']:.2g}, "
        f"mass {m['off_nb_max_mass']:.2g}"
    )


@CHAPTER.claim(
    "off-constructions",
    "Without BOS, the heads of prop-off-constructions at M = 12 (softmax1, sink_logit, sigmoid, gated), run in "
    "float32 on 2000 test sequences, have relative errors of at most 1e-6 at the trigger and at the other rows, "
    "and keep below 1e-4 of every non-trigger row; the proof's bounds there, 8064 e^-24 and 16 e^-12, are below "
    "1e-6 and 1e-4.",
    profiles=BOTH,
)
def _(m):
    proved = m["construct_err_bound"] < CONSTRUCT_ERR and 16 * math.exp(-m["construct_margin"]) < CONSTRUCT_MASS
    holds = (
        m["construct_margin"] == 12
        and proved
        and m["construct_max_err"] <= CONSTRUCT_ERR
        and m["construct_max_mass"] < CONSTRUCT_MASS
    )
    return holds, (
        f"M = {m['construct_margin']}; largest relative error {m['construct_max_err']:.2g} (proved below "
        f"{readable(m['construct_err_bound'], 2, 'up')}); largest row mass {m['construct_max_mass']:.2g}"
    )


@CHAPTER.claim(
    "relu-visible-exact-head",
    "Without BOS, relu_visible's exact head (the trigger query scoring 1 on every key, every other query 0) has "
    "relative errors of at most 1e-12 in float32 and weight exactly 0 at every non-trigger row.",
    profiles=BOTH,
)
def _(m):
    holds = m["_relu_vis_exact_err"] <= EXACT_ERR and m["_relu_vis_exact_mass"] == 0
    return (
        holds,
        f"largest relative error {m['_relu_vis_exact_err']:.2g}, largest row mass {m['_relu_vis_exact_mass']:.2g}",
    )


@CHAPTER.claim(
    "sink-logit-third-way",
    "The sink_logit head of prop-off-constructions goes silent through its learned logit alone: its content "
    "queries score exactly 0 on every key, and every non-trigger row keeps below 1e-4 of its mass.",
    profiles=BOTH,
)
def _(m):
    holds = m["_sink_logit_content_score"] == 0 and m["_sink_logit_mass"] < CONSTRUCT_MASS
    return (
        holds,
        f"largest content score {m['_sink_logit_content_score']:.2g}, largest row mass {m['_sink_logit_mass']:.2g}",
    )


@CHAPTER.claim(
    "off-constructions-bos",
    "With BOS, the softmax1, sink_logit and gated heads of prop-off-constructions at M = 12, run in float32 on "
    "2000 test sequences with BOS, have relative errors of at most 1e-6 at the trigger and at the other rows, "
    "keep below 1e-4 of every non-trigger row, put below 1e-10 of a row on BOS at every row from 1 on and below "
    "1e-5 at row 0, and output exactly 0 at row 0; the proof's bounds e^-24 and e^-12 are below 1e-10 and 1e-5.",
    profiles=BOTH,
)
def _(m):
    proved = math.exp(-2 * MARGIN) < BOS_ROWS and math.exp(-MARGIN) < BOS_ROW0
    holds = (
        proved
        and m["bos_construct_max_err"] <= CONSTRUCT_ERR
        and m["bos_construct_max_mass"] < CONSTRUCT_MASS
        and m["bos_construct_max_bos"] < BOS_ROWS
        and m["bos_construct_row0_bos"] < BOS_ROW0
        and m["_bos_construct_row0_out"] == 0
    )
    return holds, (
        f"largest relative error {m['bos_construct_max_err']:.2g}, row mass {m['bos_construct_max_mass']:.2g}; "
        f"on BOS {m['bos_construct_max_bos']:.2g} (rows 1 on), {m['bos_construct_row0_bos']:.2g} (row 0); "
        f"row 0's largest output {m['_bos_construct_row0_out']:.2g}"
    )


@CHAPTER.claim(
    "off-constructions-form",
    "In float64, at M = 2, 4, 6 and 12 and sequence lengths L = 4, 8, 16 and 32 (every trigger position), each "
    "head of prop-off-constructions (the four without BOS, the three with it) outputs c_j y_j at the trigger, "
    "with 0 < 1 - c_j < e^-M: off the line of y_j by at most 1e-8 of that bound, e^-M |y_j|, where the "
    "statement says 0. Its weights times its value scale sum to less than L e^-M at every other row; its "
    "relative errors are below e^-2M at the trigger and (63/2) L^2 e^-2M elsewhere (at L = 16, the "
    "statement's 16 e^-M and 8064 e^-2M); with BOS, row 0 outputs exactly 0, and BOS weighs below e^-2M at "
    "rows 1 on and below e^-M at row 0.",
    profiles=BOTH,
)
def _(m):
    shares = [m[f"_form_{k}"] for k in ("c_hi", "mass", "err_trigger", "err_other", "bos_rows", "bos_row0")]
    holds = (
        m["_form_grid"] == ((2, 4, 6, 12), (4, 8, 16, 32))
        and m["_form_cases"] == 4 * 4 * (len(CONSTRUCTED) + len(BOS_CONSTRUCTED))
        and m["_form_c_lo"] > 0
        and max(shares) < 1
        and m["_form_off_line"] <= OFF_LINE
        and m["_form_row0_out"] == 0
    )
    return holds, (
        f"{m['_form_cases']} cases; (1 - c_j) e^M least {m['_form_c_lo']:.3g}, largest {m['_form_c_hi']:.7f}; off the "
        f"line {m['_form_off_line']:.2g} of the bound; largest share of a bound {max(shares):.7f}; row 0's "
        f"output {m['_form_row0_out']:.2g}"
    )


@CHAPTER.claim(
    "sigmoid-could-stop",
    "Without BOS, the sigmoid head of prop-off-constructions has a largest absolute error below the stopping "
    "rule's bar on 2000 test sequences.",
    profiles=BOTH,
)
def _(m):
    return m["construct_sigmoid_linf"] < m["_stop_linf"], (
        f"largest absolute error {m['construct_sigmoid_linf']:.2g}, bar {m['_stop_linf']:g}"
    )


@CHAPTER.claim(
    "floor-allows-solved",
    "At a non-trigger relative error of 1%, the corollary's floor on the trigger's relative error is under "
    "1%: alone, it does not exclude a solution to within 1%; at a non-trigger error of 0 it does.",
    profiles=BOTH,
)
def _(m):
    return m["nb_bound_at_solved"] < SOLVED < m["nb_bound_exact"], (
        f"floor {m['nb_bound_at_solved']:.2g} at 1%, {m['nb_bound_exact']:.2g} at 0"
    )


# ---- exact, or only close ----


@CHAPTER.claim(
    "exact-rules-stop",
    "relu with BOS and relu_visible without it, which can be exact, meet the stopping rule in every seed.",
    profiles=BOTH,
)
def _(m):
    return m["relu_stopped"] and m[
        "relu_vis_nb_stopped"
    ], f"relu: {m['relu_stopped']}; relu_visible: {m['relu_vis_nb_stopped']}"


@CHAPTER.claim(
    "scale-floors",
    "Every relu_visible head with BOS and relu head without it stays above the floor that "
    "Chapter 3 proves for its scale, on the noise-free sequences.",
    profiles=BOTH,
)
def _(m):
    return m["_scale_margin"] >= -1e-6, f"least margin {m['_scale_margin']:.2g}"


@CHAPTER.claim(
    "scale-errors-small",
    "Those two heads leave a small error: above 0 and under 0.05 relative error at the trigger, on average.",
    profiles=BOTH,
)
def _(m):
    errs = (m["relu_vis_err"], m["relu_nb_err"])
    return 0 < min(errs) and max(
        errs
    ) < 0.05, f"relu_visible {m['relu_vis_err']:.2g}, relu without BOS {m['relu_nb_err']:.2g}"


@CHAPTER.claim(
    "sigmoid-slower",
    "sigmoid takes more steps than relu (median; a run that never stops counts its budget).",
    profiles=BOTH,
)
def _(m):
    return m["sigmoid_steps"] > m["relu_steps"], f"sigmoid {m['sigmoid_steps']:,}, relu {m['relu_steps']:,}"


@CHAPTER.claim(
    "sigmoid-close-with-bos",
    "With BOS, the sigmoid heads' relative error at the trigger is above 0 and under 1% in every seed.",
)
def _(m):
    holds = 0 < m["_sigmoid_err_lo"] and m["_sigmoid_err_hi"] < SOLVED
    lo, hi = (readable(m[f"_sigmoid_err_{end}"], 2, side) for end, side in SPAN)
    return holds, f"{lo} to {hi} (mean {m['sigmoid_err']:.2g})"


@CHAPTER.claim(
    "clipped-never-stops",
    "clipped_softmax meets the stopping rule in none of its runs (every seed, both tasks) within the step budget.",
)
def _(m):
    return m["_clipped_stopped"] == 0, f"{m['_clipped_stopped']} runs of {m['never_runs']} stopped"


@CHAPTER.claim(
    "sigmoid-never-stops",
    "sigmoid meets the stopping rule in none of its runs (every seed, both tasks) within the step budget.",
)
def _(m):
    return m["sigmoid_stopped"] == 0, f"{m['sigmoid_stopped']} runs of {m['never_runs']} stopped"


@CHAPTER.claim(
    "inexact-rules-stop",
    "softmax1, sink_logit and gated, which cannot be exact either, meet the stopping rule in every seed on both tasks.",
)
def _(m):
    return m["_inexact_stop"], f"all stopped: {m['_inexact_stop']}"
