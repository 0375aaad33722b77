"""Chapter 1's claims: a softmax head parks on BOS, a ReLU head switches off, on the paper's
one-layer task (:func:`attnsink.experiments.single_layer`).

What the chapter measures by running its models on test sequences (:func:`head_measures`,
about a hundred evaluations) is kept in the results cache, keyed by the code it computes from
(:func:`attnsink.cache.memoized`), so a build with a warm cache, or with the analysis in the
store, reads it instead of recomputing it. The numbers are measured as they are: the text
rounds each bound it states toward its safe side when it glues it (:mod:`attnsink.claims.bounds`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..cache import memoized
from ..metrics import EVAL_SEED, SINK_MASS, evaluate, sink_timing
from ..model import AttentionModel
from ..profiles import FIGURE_TRIGGER_POS
from ..prose import bound, readable
from ..task import TriggerTask
from .base import Chapter
from .bounds import printed

CHAPTER = Chapter("ch1")
BOTH = ("quick", "full")


def _relu_trigger_bos(models) -> dict:
    """The ReLU heads' weight w on BOS at the trigger row, on the test sequences (trigger
    anywhere). Per seed: κ (the text's name; ``c`` here), the mean of j times w; how far j w
    ever is from max(s_j0, 0), the trigger row's clamped score on BOS, which reads the trigger
    token alone; how far j w strays from κ across sequences, as a share of κ; how far the mean
    w at j = 2 is from κ/2; and the share of the target's trigger coordinate (1/j) that BOS's
    term supplies (per j)."""
    task, out = TriggerTask(), {"c": [], "exact": [], "noise": [], "at_2": [], "gap_2": [], "share": []}
    for model in models:
        ev = evaluate(model, task)
        j, x = ev.batch.trigger_pos, ev.batch.x  # (sequences,), (sequences, L, d)
        rows = torch.arange(len(j))
        w = ev.attn[0][rows, 0, j, 0]  # (sequences,): the trigger row's weight on BOS
        with torch.no_grad():
            s_j0 = ((x[rows, j] @ model.W_Q[0, 0]) * (x[:, 0] @ model.W_K[0, 0])).sum(-1)
        cj = j * w
        c = cj.mean().item()
        bos_coord = ev.values[0][rows, 0, 0, 1]  # BOS's value, trigger coordinate
        out["c"].append(c)
        out["exact"].append((cj - s_j0.clamp(min=0)).abs().max().item())
        out["noise"].append((cj - c).abs().max().item() / c)
        out["at_2"].append(w[j == 2].mean().item())
        out["gap_2"].append(abs(out["at_2"][-1] - c / 2))
        out["share"] += [(w * bos_coord * j)[j == k].mean().item() for k in j.unique()]  # BOS's term / (1/j)
    return out


def _relu_bos_measures(bos: dict) -> dict:
    """What the text quotes of :func:`_relu_trigger_bos`: the ranges of measured values as
    measured (numbers: the text rounds a range's ends outward), the rest for the checks.
    The noise is a string with its unit ('3.9%'), an upper bound: rounded up here, since the
    text's automatic rounding leaves strings as they are."""
    return {
        "relu_bos_c_min": min(bos["c"]),  # a range: glued rounded outward, and checked so
        "relu_bos_c_max": max(bos["c"]),
        "_relu_bos_c": (min(bos["c"]), max(bos["c"])),
        "_relu_bos_exact": max(bos["exact"]),
        "relu_bos_c_noise": f"{100 * bound(max(bos['noise']), 'up'):.2g}%",
        "_relu_bos_c_noise": max(bos["noise"]),
        "relu_bos_at_2_min": min(bos["at_2"]),
        "relu_bos_at_2_max": max(bos["at_2"]),
        "_relu_bos_gap_2": max(bos["gap_2"]),
        "relu_bos_share_min": min(bos["share"]),
        "relu_bos_share_max": max(bos["share"]),
    }


def _rows(soft: list, relu: list, j: int) -> dict:
    """On the test sequences: each softmax head's smallest BOS weight in any single non-trigger
    row, and its largest gap between a key's mean weight and 1/j with the trigger at ``j``;
    each ReLU head's largest total weight in any single non-trigger row, and in BOS's own row 0
    (its one weight a_00). The extremes over heads."""
    task, row_min, key_gap, relu_row_max, relu_row0 = TriggerTask(), [], [], [], []
    for model in soft:
        ev = evaluate(model, task)
        row_min.append(ev.attn[0][:, 0, :, 0][ev.batch.is_nontrigger].min().item())
        keys = evaluate(model, task, trigger_pos=j).attn[0][:, 0, j, 1 : j + 1]  # (sequences, keys)
        key_gap.append((keys.mean(dim=0) - 1 / j).abs().max().item())
    for model in relu:
        ev = evaluate(model, task)
        row_mass = ev.attn[0][:, 0].abs().sum(dim=-1)  # (sequences, query rows)
        relu_row_max.append(row_mass[ev.batch.is_nontrigger].max().item())
        relu_row0.append(row_mass[:, 0].max().item())  # row 0 sees BOS alone: a_00
    return {
        "soft_min_bos_row": min(row_min),
        "trigger_key_gap": max(key_gap),
        "relu_max_row_mass": max(relu_row_max),
        "relu_row0_max": max(relu_row0),
    }


def _value_lengths(evaluations) -> list[tuple[float, float]]:
    """Per evaluation of a one-head model: the ordinary tokens' mean value length and BOS's."""
    out = []
    for e in evaluations:
        norms = e.values[0][:, 0].norm(dim=-1)  # (sequences, positions)
        out.append((norms[e.batch.is_nontrigger].mean().item(), norms[:, 0].mean().item()))
    return out


def _start(soft: list, soft_init: list, relu_init: list) -> dict:
    """How training starts and what it changes (section 1.4), on the test sequences: every
    head rebuilt at its initialisation (``soft_init``, ``relu_init``), its relative errors;
    the expected loss of outputting zero (the mean squared target, over 50,000 sequences);
    and per softmax seed, at initialisation and trained (``soft``): the ordinary tokens' mean
    value length, BOS's value length, and their ratio (Table 1.1's)."""
    task = TriggerTask()
    init = [evaluate(model, task) for model in soft_init + relu_init]
    before = _value_lengths(init[: len(soft_init)])
    after = _value_lengths(evaluate(model, task) for model in soft)
    sample = task.sample(50_000, generator=torch.Generator().manual_seed(EVAL_SEED))
    return {
        "init_trigger_gap": max(abs(e.errors["rel_err_trigger"] - 1) for e in init),  # 1: outputs nothing
        "init_rel_err_rest": max(e.errors["rel_err_nontrigger"] for e in init),
        "zero_loss": sample.y.pow(2).mean().item(),
        "init_value_max": max(lengths[0] for lengths in before),
        "trained_value_min": min(lengths[0] for lengths in after),
        "init_value_ratio_min": min(bos / ordinary for ordinary, bos in before),
        "bos_shrink_max": max(a[1] / b[1] for a, b in zip(after, before)),  # BOS's length, trained over initial
    }


def _first_steps(result) -> dict:
    """What the training histories say of the first step: the softmax seeds' mean first batch
    loss; what uniform weights give on BOS (row i weighs BOS 1/(i+1), averaged over the
    non-trigger rows and the trigger's position), as measured and as the text prints it, to
    four figures ('0.1605'), and how far each softmax seed's BOS mass is from that printed
    centre; and the ReLU heads' largest BOS mass, at the first step and at any step."""
    soft, relu = result.results["softmax"], result.results["relu"]
    first = lambda r, key: float(np.asarray(r.history[key]).ravel()[0])  # noqa: E731
    L = TriggerTask().seq_len
    uniform = np.mean([np.mean([1 / (i + 1) for i in range(1, L) if i != j]) for j in range(2, L)])
    centre = readable(float(uniform), 4)  # the centre as printed: the gap is measured from it
    return {
        "first_loss_mean": float(np.mean([first(r, "loss") for r in soft])),
        "soft_first_bos_gap": max(abs(first(r, "bos_mass") - float(centre)) for r in soft),
        "uniform_bos": centre,
        "_uniform_bos": float(uniform),
        "relu_history_max_bos": float(max(np.max(r.history["bos_mass"]) for r in relu)),
        "relu_first_bos": max(first(r, "bos_mass") for r in relu),
    }


def _moved(soft: list) -> dict:
    """Exercise 1.1: every softmax model with the trigger moved to each position the task
    draws, 2 .. L-1 (the exercise's table shows the first model at four of them): how far a
    key's mean weight, and its weight in one row, are from 1/j; BOS's mean weight at the
    trigger row, and at the other rows; and the positions measured."""
    task, key_gap, row_gap, bos_trigger, bos_rest = TriggerTask(), [], [], [], []
    positions = tuple(range(2, task.seq_len))  # every trigger position the task draws
    for j, model in ((j, model) for j in positions for model in soft):
        ev = evaluate(model, task, trigger_pos=j)
        a = ev.attn[0][:, 0]  # (sequences, query, key)
        keys = a[:, j, 1 : j + 1]  # (sequences, keys 1..j)
        key_gap.append((keys.mean(dim=0) - 1 / j).abs().max().item())
        row_gap.append((keys - 1 / j).abs().max().item())
        bos_trigger.append(a[:, j, 0].mean().item())
        bos_rest.append(ev.summary()["bos_mass_nontrigger"])
    return {
        "ex1_key_gap": max(key_gap),
        "ex1_row_gap": max(row_gap),
        "ex1_bos_trigger": max(bos_trigger),
        "ex1_bos_rest": min(bos_rest),
        "_ex1_positions": positions,
    }


def _quiet(soft: list, relu: list) -> dict:
    """Exercise 1.2: every model on sequences without a trigger (the trigger made an ordinary
    token), and on the variant whose trigger token keeps neither flag."""
    batch = TriggerTask().sample(1000, generator=torch.Generator().manual_seed(0))
    n, j = len(batch.trigger_pos), batch.trigger_pos
    quiet = batch.x.clone()
    quiet[batch.is_trigger, 1] = 0.0  # no trigger channel ...
    flagless = quiet.clone()  # ... and, for the variant, no bias channel either
    quiet[batch.is_trigger, -1] = 1.0
    q = {"soft_bos": [], "soft_out": [], "relu_mass": [], "relu_out": [], "flag_bos": [], "flag_relu": []}
    with torch.no_grad():
        for model in soft:
            y_hat, (a,) = model(quiet)
            q["soft_bos"].append(a[:, 0, 1:, 0].min().item())  # rows i >= 1
            q["soft_out"].append(y_hat.abs().max().item())
            a = model(flagless)[1][0]  # the weights alone
            q["flag_bos"].append(a[torch.arange(n), 0, j, 0].mean().item())
        for model in relu:
            y_hat, (a,) = model(quiet)
            q["relu_mass"].append(a[:, 0, 1:].sum(dim=-1).max().item())
            q["relu_out"].append(y_hat.abs().max().item())
            a = model(flagless)[1][0]  # the weights alone
            q["flag_relu"].append(a[torch.arange(n), 0, j].sum(dim=-1).max().item())
    return {
        "ex2_parked": min(q["soft_bos"]),
        "ex2_soft_out": max(q["soft_out"]),
        "ex2_relu_mass": max(q["relu_mass"]),
        "ex2_relu_out": max(q["relu_out"]),
        "ex2_flagless_bos": max(q["flag_bos"]),
        "ex2_flagless_relu": max(q["flag_relu"]),
    }


def _no_bos(soft: list, relu: list) -> dict:
    """Exercise 1.3: every model on the task without BOS. Each kind's relative errors; for each
    ReLU head, its trigger row corrected by j/(j+1), by adding back BOS's term (κ/j) x_0 W_V W_O,
    and by both (which gives exactly its output with BOS put back in front); the error of the
    1/j scale on an exact mean; and for each softmax head, the mean length of its output at every
    row but the trigger, alone and over the mean length of the values there, and the length of
    the bias channel's value."""
    no_bos = TriggerTask(bos=False)
    errs = {k: [evaluate(model, no_bos).errors for model in ms] for k, ms in (("softmax", soft), ("relu", relu))}
    sample = no_bos.sample(1000, generator=torch.Generator().manual_seed(EVAL_SEED))  # evaluate's
    j = sample.trigger_pos
    rows = torch.arange(len(j))
    seen = (torch.arange(no_bos.seq_len)[None] <= j[:, None]).float()  # (sequences, positions 0..j)
    scaled = (seen[..., None] * sample.x).sum(dim=1) / j[:, None]  # 1/j times the sum over 0..j
    target = sample.y[rows, j]
    signal = target.pow(2).sum(-1).mean()
    rel = lambda out: ((out - target).pow(2).sum(-1).mean() / signal).item()  # noqa: E731  (evaluate's)
    scale_only = rel(scaled)
    fixed = {"rescaled": [], "bos_back": [], "both": []}
    for model in relu:  # the trigger row, corrected: by j/(j+1), by adding back BOS's term, by both
        ev = evaluate(model, no_bos)
        y_hat = ev.y_hat[rows, j]
        bos = torch.zeros(no_bos.d_model)
        bos[0] = 1.0  # the BOS token of the task the head was trained on
        with torch.no_grad():
            s_j0 = (sample.x[rows, j] @ model.W_Q[0, 0]) @ (bos @ model.W_K[0, 0])  # (sequences,)
            term = (s_j0.clamp(min=0) / j)[:, None] * (bos @ model.W_V[0, 0] @ model.W_O[0, 0])
        to_mean = (j / (j + 1.0))[:, None]
        fixed["rescaled"].append(rel(y_hat * to_mean))
        fixed["bos_back"].append(rel(y_hat + term))
        fixed["both"].append(rel((y_hat + term) * to_mean))
    average = {"norm": [], "share": [], "bias": []}
    for model in soft:  # the non-trigger rows' output: an average of ordinary values
        ev = evaluate(model, no_bos)
        off = ~ev.batch.is_trigger  # every row but the trigger, row 0 included: all ordinary tokens
        out_norm = ev.y_hat.norm(dim=-1)[off].mean().item()
        average["norm"].append(out_norm)
        average["share"].append(out_norm / ev.values[0][:, 0].norm(dim=-1)[off].mean().item())
        bias = torch.zeros(no_bos.d_model)
        bias[-1] = 1.0
        with torch.no_grad():
            average["bias"].append((bias @ model.W_V[0, 0] @ model.W_O[0, 0]).norm().item())
    relu_trigger = [e["rel_err_trigger"] for e in errs["relu"]]
    return {
        "ex3_soft_rest": min(e["rel_err_nontrigger"] for e in errs["softmax"]),
        "ex3_soft_trigger": max(e["rel_err_trigger"] for e in errs["softmax"]),
        "ex3_relu_rest": max(e["rel_err_nontrigger"] for e in errs["relu"]),
        "ex3_relu_trigger": min(relu_trigger),
        "ex3_relu_trigger_max": max(relu_trigger),
        "ex3_scale_only": scale_only,
        "ex3_rescaled": max(fixed["rescaled"]),
        "ex3_both_fixed": max(fixed["both"]),
        "ex3_bos_back_min": min(fixed["bos_back"]),
        "ex3_bos_back_max": max(fixed["bos_back"]),
        "ex3_soft_avg_norm": min(average["norm"]),
        "ex3_soft_avg_share": min(average["share"]),
        "ex3_target_norm": target.norm(dim=-1).mean().item(),
        "ex3_bias_value_gap": max(abs(b - 1) for b in average["bias"]),  # its length, from 1
    }


def head_measures(soft: list, relu: list, soft_init: list, relu_init: list) -> dict:
    """Every number chapter 1 measures by running its models on test sequences: the trained
    softmax and ReLU models (``soft``, ``relu``, one per seed) and the softmax and ReLU models
    rebuilt at their initialisation (``soft_init``, ``relu_init``). About a hundred
    evaluations, half a minute: :func:`measures` calls it through
    :func:`attnsink.cache.memoized`, so that it is kept in the results cache, and in the store
    once ``make store-analyses`` puts it there. Numbers by name, as :func:`measures` returns
    them, and under ``relu_bos`` the raw values of :func:`_relu_trigger_bos`."""
    return {
        **_rows(soft, relu, FIGURE_TRIGGER_POS),
        "relu_bos": _relu_trigger_bos(relu),
        **_start(soft, soft_init, relu_init),
        **_moved(soft),
        **_quiet(soft, relu),
        **_no_bos(soft, relu),
    }


def sink_timings(result) -> pd.DataFrame:
    """Table 1.2: for each softmax seed, the step at which its BOS mass first reaches 0.9
    (``sink``), at which its loss has fallen tenfold and a hundredfold, and at which it
    stopped (:func:`attnsink.metrics.sink_timing`). A step that never came is NaN."""
    timing = pd.DataFrame(
        [
            {
                "seed": r.seed,
                "sink": sink_timing(r.history)["step_sink"],
                "tenfold": sink_timing(r.history)["step_loss"],
                "hundredfold": sink_timing(r.history, loss_drop=0.01)["step_loss"],
                "stopped": r.steps,
            }
            for r in result.results["softmax"]
        ],
        dtype=float,
    )  # a step that never came is NaN: it comes before nothing
    timing["seed"] = timing["seed"].astype(int)
    return timing


def _timing_measures(timing: pd.DataFrame) -> dict:
    """What the text says of :func:`sink_timings`: the median steps of the sink and of the
    tenfold fall, in how many seeds the sink comes first and by how much at least, and where
    in its training each seed's sink forms."""
    lead = timing.tenfold - timing.sink

    def median(column) -> int | None:
        value = timing[column].median()
        return None if np.isnan(value) else int(value)

    return {
        "sink_step": median("sink"),
        "loss_step_10": median("tenfold"),
        "n_before_10": int((timing.sink < timing.tenfold).sum()),
        "min_lead": None if lead.isna().any() else int(lead.min()),
        "sink_share_min": float((timing.sink / timing.stopped).min()),  # NaN when a sink never formed
        "sink_share_max": float((timing.sink / timing.stopped).max()),
        "_timing": timing,
    }


@CHAPTER.measures
def measures(result, plain_gap: dict | None = None) -> dict:
    """The numbers chapter 1 quotes, from :func:`~attnsink.experiments.single_layer`'s ``result``
    and, if given, ``plain_gap``: for each rule, the largest weight difference between the
    chapter's plain loop and the library's ``train`` after 100 steps. Each is measured as it
    is; the text rounds the bounds it states to their safe side when it glues them
    (:mod:`attnsink.claims.bounds`). What needs the models run comes from :func:`head_measures`,
    kept in the results cache."""
    runs = pd.DataFrame(result.runs)
    soft, relu = runs[runs.attention == "softmax"], runs[runs.attention == "relu"]
    trained = {kind: result.results[kind] for kind in ("softmax", "relu")}
    models = [[r.model for r in trained[kind]] for kind in ("softmax", "relu")]
    init = [[AttentionModel.from_config(r.model.config, seed=r.seed) for r in trained[k]] for k in ("softmax", "relu")]
    heads = memoized(head_measures)(*models, *init)  # the engine's initialisation, rebuilt
    j = FIGURE_TRIGGER_POS
    row = result.figure_attn["softmax"][:, j, 1 : j + 1].mean(dim=0)  # (keys 1..j,): the trigger row, mean
    relu_row = result.figure_attn["relu"][:, j].sum(dim=-1)  # (sequences,): the ReLU trigger row's mass
    steps = lambda frame: f"{frame.steps.median():,g}"  # noqa: E731  (a median of ten can end in .5)
    return {
        "n_seeds": int(len(soft)),
        "park_mass": f"{SINK_MASS:g}",  # the book's mark, as printed: a head parks on BOS from this weight on
        "_park_mass": float(SINK_MASS),
        "soft_min_bos": float(soft.bos_mass_nontrigger.min()),
        "soft_max_value_ratio": float(soft.bos_value_ratio.max()),
        "relu_max_mass": float(relu.attn_mass_nontrigger.max()),
        "relu_max_bos": float(relu.bos_mass_nontrigger.max()),
        "all_stopped": bool(runs.stopped_early.all()),
        "soft_steps": steps(soft),
        "relu_steps": steps(relu),
        "_max_steps": int(runs.steps.max()),
        "_step_budget": int(result.settings.steps),
        "plain_gap": None if not plain_gap else max(plain_gap.values()),
        "_plain_rules": tuple(sorted(plain_gap or ())),
        "max_rel_err": float(runs[["rel_err_trigger", "rel_err_nontrigger"]].max().max()),
        "max_test_linf": readable(float(runs.linf.max()), 3),  # as printed: three figures, so the ratio reads
        "_max_test_linf": float(runs.linf.max()),
        "_stop_linf": float(result.settings.stop_linf),
        "test_linf_ratio": float(runs.linf.max() / result.settings.stop_linf),
        "trigger_keys": j,
        "trigger_row_mean": float(row.mean()),
        "trigger_row_spread": float(row.max() - row.min()),
        "relu_trigger_mass": float(relu_row.mean()),
        "relu_trigger_bos_fig": float(result.figure_attn["relu"][:, j, 0].mean()),
        **_relu_bos_measures(heads["relu_bos"]),
        "relu_value_ratio_min": float(relu.bos_value_ratio.min()),
        "relu_value_ratio_max": float(relu.bos_value_ratio.max()),
        "soft_sink_rate": float(soft.sink_rate.min()),
        "relu_sink_rate": float(relu.sink_rate.max()),
        **_timing_measures(sink_timings(result)),
        **_first_steps(result),
        **{name: value for name, value in heads.items() if name != "relu_bos"},
        # exercise 1.3: the error's root-mean-square length over the target's
        "ex3_relu_rms_min": float(np.sqrt(heads["ex3_relu_trigger"])),
        "ex3_relu_rms_max": float(np.sqrt(heads["ex3_relu_trigger_max"])),
    }


@CHAPTER.claim(
    "softmax-parks",
    "Every softmax head puts at least 0.99 of every single non-trigger row on BOS, at least 0.999 on average.",
    profiles=BOTH,
)
def _(m):
    return (
        m["soft_min_bos_row"] >= 0.99 and m["soft_min_bos"] >= 0.999,
        f"smallest row {readable(m['soft_min_bos_row'], toward='down')}, "
        f"smallest mean {readable(m['soft_min_bos'], toward='down')}",
    )


@CHAPTER.claim(
    "parks-by-threshold",
    "A head parks on BOS when its mean weight on BOS at the non-trigger rows is at least 0.5, the book's mark "
    "(metrics.SINK_MASS); every softmax head parks and no ReLU head does.",
    profiles=BOTH,
)
def _(m):
    mark = m["_park_mass"]
    ok = mark == 0.5 and m["park_mass"] == f"{mark:g}" and m["soft_min_bos"] >= mark > m["relu_max_bos"]
    return ok, (
        f"mark {m['park_mass']}; softmax at least {readable(m['soft_min_bos'], toward='down')}, "
        f"ReLU at most {readable(m['relu_max_bos'], toward='up')}"
    )


@CHAPTER.claim(
    "sink-is-a-no-op",
    "Here the weight goes to BOS, whose value is tiny: under 5% of an ordinary token's, in every softmax head.",
    profiles=BOTH,
)
def _(m):
    return m["soft_max_value_ratio"] < 0.05, f"largest ratio {readable(m['soft_max_value_ratio'], toward='up')}"


@CHAPTER.claim(
    "relu-switches-off", "Every ReLU head keeps at most 0.01 of weight in every single non-trigger row.", profiles=BOTH
)
def _(m):
    return m["relu_max_row_mass"] <= 0.01, f"largest row mass {readable(m['relu_max_row_mass'], toward='up')}"


@CHAPTER.claim(
    "relu-off-at-bos-row",
    "At BOS's own row 0 every ReLU head's one weight, a₀₀ on BOS, is exactly zero, on every test sequence "
    "of every seed.",
)
def _(m):
    return m["relu_row0_max"] == 0, f"largest row-0 weight {readable(m['relu_row0_max'], toward='up')}"


@CHAPTER.claim(
    "relu-exactly-off", "At the non-trigger rows the ReLU heads' weights are exactly zero, in every row of every seed."
)
def _(m):
    return m["relu_max_row_mass"] == 0, f"largest row mass {readable(m['relu_max_row_mass'], toward='up')}"


@CHAPTER.claim(
    "plain-loop-matches",
    "For each rule, softmax and ReLU, the chapter's plain loop and the library's train give the same weights "
    "after 100 steps, to within 10⁻⁴.",
    profiles=BOTH,
)
def _(m):
    gap, rules = m["plain_gap"], m["_plain_rules"]
    ok = gap is not None and gap < 1e-4 and rules == ("relu", "softmax")
    shown = "none" if gap is None else readable(gap, toward="up")
    return ok, f"largest weight difference {shown}, rules compared: {', '.join(rules) or 'none'}"


@CHAPTER.claim(
    "both-solve-it",
    "Every model meets the stopping rule within its step budget; relative errors stay below 10⁻³.",
    profiles=BOTH,
)
def _(m):
    ok = m["all_stopped"] and m["max_rel_err"] < 1e-3 and m["_max_steps"] <= m["_step_budget"]
    return ok, (
        f"all stopped: {m['all_stopped']}, by step {m['_max_steps']} of {m['_step_budget']} at most; "
        f"medians {m['soft_steps']} (softmax), {m['relu_steps']} (ReLU); "
        f"largest error {readable(m['max_rel_err'], toward='up')}"
    )


@CHAPTER.claim(
    "test-error-twice-threshold",
    "On 1000 test sequences the largest absolute error is about twice the stopping threshold of 5 × 10⁻³; "
    "the error as printed (three figures) divided by the threshold gives the ratio as printed.",
)
def _(m):
    shown, ratio, stop = m["max_test_linf"], m["test_linf_ratio"], m["_stop_linf"]
    ok = 1.5 <= ratio <= 2.5 and stop == 5e-3 and shown == readable(m["_max_test_linf"], 3)
    ok = ok and readable(printed(shown) / stop) == readable(ratio)  # the text's numbers agree
    return ok, f"{shown} over {stop:g}: {readable(ratio)} times ({ratio:.3f})"


@CHAPTER.claim(
    "trigger-row-averages",
    "With the trigger at 7, every softmax head spreads its trigger row evenly over keys 1 to 7.",
    profiles=BOTH,
)
def _(m):
    gap = abs(m["trigger_row_mean"] - 1 / m["trigger_keys"])
    ok = gap < 0.01 and m["trigger_row_spread"] < 0.05 and m["trigger_key_gap"] < 0.01
    return ok, (
        f"first seed: mean {m['trigger_row_mean']:.4f} (1/7 = 0.1429), spread {m['trigger_row_spread']:.3f}; "
        f"every seed: each key within {readable(m['trigger_key_gap'], toward='up')} of 1/7"
    )


@CHAPTER.claim(
    "relu-on-at-trigger",
    "The first ReLU head switches on at the trigger row (at 7); some, under half, of that weight goes to BOS.",
    profiles=BOTH,
)
def _(m):
    mass, bos = m["relu_trigger_mass"], m["relu_trigger_bos_fig"]
    return mass > 0.5 and 0 < bos < mass / 2, f"trigger row mass {mass:.2f}, {bos:.2f} of it on BOS"


@CHAPTER.claim(
    "relu-bos-at-trigger",
    "At the trigger row every ReLU head weighs BOS κ/j, κ = max(s_j0, 0), a score that reads the trigger token "
    "alone; κ's mean lies between 1 and 2 by seed, and the trigger's noise moves κ by under 10% of it; "
    "so at j = 2 each head weighs BOS κ/2, to within 0.005.",
    profiles=BOTH,
)
def _(m):
    low, high = m["_relu_bos_c"]
    ok = m["_relu_bos_exact"] < 1e-5 and 1 <= low and high <= 2
    ok = ok and m["_relu_bos_c_noise"] < 0.1 and m["_relu_bos_gap_2"] <= 0.005
    return ok, (
        f"j w - max(s_j0, 0) at most {readable(m['_relu_bos_exact'], toward='up')}; "
        f"mean κ from {readable(low, 4, 'down')} to {readable(high, 4, 'up')}; "
        f"κ within {m['relu_bos_c_noise']} of its mean; "
        f"at j = 2, w - κ/2 at most {readable(m['_relu_bos_gap_2'], toward='up')} "
        f"(w from {readable(m['relu_bos_at_2_min'], 3, 'down')} to {readable(m['relu_bos_at_2_max'], 3, 'up')})"
    )


@CHAPTER.claim(
    "relu-bos-carries-trigger",
    "BOS's term supplies between a fifth and two fifths of the target's trigger coordinate; "
    "BOS's value is a third of an ordinary token's.",
    profiles=BOTH,
)
def _(m):
    return (
        0.2 <= m["relu_bos_share_min"]
        and m["relu_bos_share_max"] <= 0.4
        and 0.25 <= m["relu_value_ratio_min"]
        and m["relu_value_ratio_max"] <= 0.4,
        f"share {readable(m['relu_bos_share_min'], toward='down')} to "
        f"{readable(m['relu_bos_share_max'], toward='up')}; "
        f"value ratio {readable(m['relu_value_ratio_min'], toward='down')} to "
        f"{readable(m['relu_value_ratio_max'], toward='up')}",
    )


@CHAPTER.claim(
    "sinks-by-gu",
    "By Gu et al.'s threshold (mean weight on BOS over query rows 1 to L-1 above 0.3) every softmax head is a sink "
    "and no ReLU head is.",
    profiles=BOTH,
)
def _(m):
    return m["soft_sink_rate"] == 1 and m[
        "relu_sink_rate"
    ] == 0, f"softmax {m['soft_sink_rate']:.0%}, ReLU {m['relu_sink_rate']:.0%}"


@CHAPTER.claim(
    "sink-forms-early",
    "In every seed the sink forms before the loss has fallen tenfold; the median sink step comes first.",
    profiles=BOTH,
)
def _(m):
    ok = m["n_before_10"] == m["n_seeds"] and m["min_lead"] is not None and m["min_lead"] > 0
    ok = ok and m["sink_step"] is not None and m["loss_step_10"] is not None and m["sink_step"] < m["loss_step_10"]
    return ok, f"{m['n_before_10']} of {m['n_seeds']} seeds, by at least {m['min_lead']} steps"


@CHAPTER.claim(
    "untrained-outputs-nothing",
    "Untrained, every head outputs almost nothing: a relative error of about 1 at the trigger row, at most 10⁻⁴ "
    "elsewhere; the softmax seeds' first batch loss averages the loss of outputting zero, to within 5%.",
)
def _(m):
    ok = m["init_trigger_gap"] <= 0.05 and m["init_rel_err_rest"] <= 1e-4
    ok = ok and abs(m["first_loss_mean"] / m["zero_loss"] - 1) <= 0.05
    return ok, (
        f"trigger within {readable(m['init_trigger_gap'], toward='up')} of 1, elsewhere at most "
        f"{readable(m['init_rel_err_rest'], toward='up')}; "
        f"first loss {m['first_loss_mean']:.5f}, outputting zero {m['zero_loss']:.5f}"
    )


@CHAPTER.claim(
    "starts-uniform",
    "At the first step every softmax head puts about what uniform weights give on BOS (within 0.005 of it, "
    "as printed to four figures).",
)
def _(m):
    centre = m["uniform_bos"]  # as printed; the gap is measured from it
    ok = centre == readable(m["_uniform_bos"], 4) and m["soft_first_bos_gap"] <= 0.005
    return ok, f"within {readable(m['soft_first_bos_gap'], toward='up')} of {centre}"


@CHAPTER.claim(
    "values-grow-bos-shrinks",
    "Training lengthens the ordinary tokens' values a hundredfold or more, and shortens BOS's in every softmax "
    "seed: from 0.2 or more of an ordinary token's at initialisation to under 5% after training.",
)
def _(m):
    ok = m["trained_value_min"] >= 100 * m["init_value_max"] and m["bos_shrink_max"] < 1
    ok = ok and m["init_value_ratio_min"] >= 0.2 and m["soft_max_value_ratio"] < 0.05
    return ok, (
        f"ordinary value at most {readable(m['init_value_max'], toward='up')}, "
        f"then at least {readable(m['trained_value_min'], toward='down')}; "
        f"BOS's length times at most {readable(m['bos_shrink_max'], toward='up')}; "
        f"ratio at least {readable(m['init_value_ratio_min'], toward='down')}, "
        f"then at most {readable(m['soft_max_value_ratio'], toward='up')}"
    )


@CHAPTER.claim(
    "sink-forms-midway",
    "Each softmax seed's sink forms midway through its training: between a quarter and three quarters of its steps.",
)
def _(m):
    ok = 0.25 <= m["sink_share_min"] and m["sink_share_max"] <= 0.75
    low, high = m["sink_share_min"], m["sink_share_max"]
    return ok, f"{readable(low, toward='down')} to {readable(high, toward='up')} of its steps"


@CHAPTER.claim(
    "relu-never-parks",
    "Averaged over each training batch's non-trigger rows, no ReLU head ever puts more than 0.01 on BOS; "
    "at the first step each puts under 0.001 there.",
    profiles=BOTH,
)
def _(m):
    ok = m["relu_history_max_bos"] <= 0.01 and m["relu_first_bos"] < 0.001
    return ok, (
        f"largest {readable(m['relu_history_max_bos'], toward='up')}; "
        f"at the first step at most {readable(m['relu_first_bos'], toward='up')}"
    )


@CHAPTER.claim(
    "ex1-averages-anywhere",
    "Exercise 1.1: wherever the trigger sits (every position from 2 to 15, the task's), every softmax head "
    "gives each key 1..j its 1/j and BOS almost nothing.",
    profiles=BOTH,
)
def _(m):
    positions = tuple(m["_ex1_positions"])
    ok = positions == tuple(range(2, 16))  # every position the task draws (TriggerTask: 2 .. L-1)
    ok = ok and m["ex1_key_gap"] < 0.01 and m["ex1_row_gap"] < 0.01
    ok = ok and m["ex1_bos_trigger"] < 0.01 and m["ex1_bos_rest"] > 0.99
    return ok, (
        f"trigger at {', '.join(map(str, positions)) or 'no position'}; "
        f"key gap {readable(m['ex1_key_gap'], toward='up')}, in one row {readable(m['ex1_row_gap'], toward='up')}; "
        f"BOS {readable(m['ex1_bos_trigger'], toward='up')} at the trigger, "
        f"{readable(m['ex1_bos_rest'], toward='down')} elsewhere"
    )


@CHAPTER.claim(
    "ex2-no-trigger",
    "Exercise 1.2: with no trigger, the softmax heads park every row and the ReLU heads' weights are exactly zero.",
)
def _(m):
    return (
        m["ex2_parked"] >= 0.99 and m["ex2_soft_out"] < 0.01 and m["ex2_relu_mass"] == 0 and m["ex2_relu_out"] == 0,
        f"softmax: BOS ≥ {readable(m['ex2_parked'], toward='down')}, "
        f"output ≤ {readable(m['ex2_soft_out'], toward='up')}; ReLU: mass {m['ex2_relu_mass']:.2g}",
    )


@CHAPTER.claim(
    "ex2-flagless",
    "Exercise 1.2: a token with neither flag keeps the ReLU heads nearly off, but no softmax head parks it.",
    profiles=BOTH,
)
def _(m):
    return (
        m["ex2_flagless_relu"] < 0.1 and m["ex2_flagless_bos"] < 0.5,
        f"ReLU row mass ≤ {readable(m['ex2_flagless_relu'], toward='up')}; "
        f"softmax BOS weight ≤ {readable(m['ex2_flagless_bos'], toward='up')} on average",
    )


@CHAPTER.claim(
    "ex3-no-bos",
    "Exercise 1.3: without BOS the softmax heads fail off the trigger; the ReLU heads stay off there and reach "
    "a relative (mean-square) error of about 0.05 at it: an error whose root-mean-square length is about a fifth "
    "of the target's (between 0.18 and 0.23 of it).",
)
def _(m):
    holds = m["ex3_soft_rest"] > 1 and m["ex3_relu_rest"] == 0 and m["ex3_soft_trigger"] < m["ex3_relu_trigger"]
    holds = holds and 0.04 <= m["ex3_relu_trigger"] and m["ex3_relu_trigger_max"] <= 0.06
    holds = holds and 0.18 <= m["ex3_relu_rms_min"] and m["ex3_relu_rms_max"] <= 0.23
    return holds, (
        f"softmax: elsewhere ≥ {readable(m['ex3_soft_rest'], toward='down')}, "
        f"trigger ≤ {readable(m['ex3_soft_trigger'], toward='up')}; ReLU: elsewhere {m['ex3_relu_rest']:.2g}, "
        f"trigger {readable(m['ex3_relu_trigger'], toward='down')} to "
        f"{readable(m['ex3_relu_trigger_max'], toward='up')}, root-mean-square ratio "
        f"{readable(m['ex3_relu_rms_min'], toward='down')} to {readable(m['ex3_relu_rms_max'], toward='up')}"
    )


@CHAPTER.claim(
    "ex3-scale",
    "Exercise 1.3: the scale causes nearly all the ReLU error: rescaling by j/(j+1) leaves under a tenth of it; "
    "adding back BOS's term too leaves under 10⁻⁴; BOS's term alone leaves the scale's error on an exact mean, "
    "to within 2%, more than the head's: losing BOS's term offsets a little of the scale's overshoot.",
)
def _(m):
    low, high = m["ex3_bos_back_min"], m["ex3_bos_back_max"]
    scale = m["ex3_scale_only"]
    ok = m["ex3_rescaled"] < 0.1 * m["ex3_relu_trigger"] and m["ex3_both_fixed"] < 1e-4
    ok = ok and 0.98 * scale <= low and high <= 1.02 * scale
    ok = ok and m["ex3_relu_trigger_max"] < low  # the lost term had offset some of the scale's error
    return ok, (
        f"rescaled at most {readable(m['ex3_rescaled'], toward='up')}; "
        f"both at most {readable(m['ex3_both_fixed'], toward='up')}; "
        f"BOS's term back {readable(low, 3, 'down')} to {readable(high, 3, 'up')}, the scale alone {scale:.4f}"
    )


@CHAPTER.claim(
    "ex3-long-average",
    "Exercise 1.3: without BOS the softmax heads' rows but the trigger output an average of the values they see, "
    "longer than the trigger's target and over half an ordinary value's length; each ordinary value carries the "
    "bias channel's, of length about 1.",
)
def _(m):
    ok = m["ex3_soft_avg_norm"] > m["ex3_target_norm"] and m["ex3_soft_avg_share"] > 0.5
    ok = ok and m["ex3_bias_value_gap"] <= 0.1
    return ok, (
        f"mean length at least {readable(m['ex3_soft_avg_norm'], 4, 'down')} (target {m['ex3_target_norm']:.3f}), "
        f"at least {readable(m['ex3_soft_avg_share'], 3, 'down')} of an ordinary value; bias channel's value "
        f"within {readable(m['ex3_bias_value_gap'], toward='up')} of length 1"
    )
