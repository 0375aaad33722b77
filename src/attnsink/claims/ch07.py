"""Chapter 7's claims: a small GPT on Bigram-Backcopy (:func:`attnsink.experiments.backcopy`).
With BOS, its first-layer softmax heads park on BOS wherever they have no copy to make;
nothing forces them to (without BOS the model learns the language as well); silencing a
parked head there costs the loss nothing, as it costs nothing for every head of every rule.

:func:`measures` reads the result and its trained models (the ablations and transplant controls run on
fresh sequences, seconds each) and the training records :func:`training_courses` brings back;
the ``table_*`` functions draw the chapter's tables."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import torch

from .. import lm
from ..analysis import backcopy_frame, mean_range, sign_test
from ..book import table
from ..cache import memoized
from ..metrics import ROW_MIN, SINK_EPS, WRITE_TOL, what_it_writes
from ..profiles import BACKCOPY_MODEL, BACKCOPY_TASK
from ..prose import bound, readable
from .base import Chapter
from .bounds import at_least as _down
from .bounds import at_most as _up
from .bounds import printed
from .bounds import span as _span

CHAPTER = Chapter("ch7")
BOTH = ("quick", "full")

PARK = 0.5
"""A head parks on token 0 at a kind of query (ordinary or trigger) when it puts on average more than
this of its weight there: the chapter's one meaning of the word."""
OFF = 0.01
"""A row that carries at most this weight on the tokens, summed, is switched off (with a phantom
slot, the rest goes there)."""
OFF_RULES = ("relu", "sigmoid", "softmax1", "sink_logit")
"""The rules that can switch a row off."""
LEAVE = 0.05
"""A first-layer head that puts less than this on token 0 at trigger queries leaves it there:
it is one of the heads that copy."""
N_FRESH = 256  # fresh sequences per measurement
FRESH = 2**31 - 3  # fresh sequences: BOS taken away at inference (and the reader's exercises)
METRICS_SEED = 2**31 - 2
"""The sequences :func:`attnsink.lm.backcopy_metrics` reads (its default seed): where the rows
go, read on the same sequences as the weights it records, so the text quotes one number."""
FRESH_TOKEN = 2**31 - 8  # fresh sequences: the first position's weight, token by token
N_TOKEN = 4  # times N_FRESH sequences for the token-by-token measure (about 35 per first token)
FRESH_CAL = 2**31 - 6  # fresh sequences: the tolerance's noise and the transplant controls
COURSE_MODELS = (("softmax", True), ("softmax1", True), ("sink_logit", True), ("softmax", False))
"""The models whose training records :func:`training_courses` brings back (the figure's panels)."""
SETTLED = 0.01
"""A head within this of its final weight on token 0 has settled (the course measures)."""
PARKED = PARK
"""A softmax1 or sink_logit head that put more than this on token 0 at some recorded step
parked there before it left (the course measures)."""
NEAR = 0.05
"""A softmax head whose weight on token 0 is within this of a level sits at it (the course
measures: its final weight, or the copying heads' final weight)."""
SAT = 500
"""A staying softmax head that spent at least this many steps (recorded ones times the
recording interval, not necessarily in a row) at the copying heads' level before it rose
passed through that level (the course measures; how long it stayed there unbroken is measured
apart)."""


def model_name(attention: str, bos: bool) -> str:
    """'softmax', or 'softmax (no BOS)' for a model trained without BOS."""
    return attention if bos else f"{attention} (no BOS)"


def training_courses(result, *, cache_dir=None) -> list[dict]:
    """The training records of :data:`COURSE_MODELS` (every head's mean weight on token 0
    over the validation sequences, every 50 steps: :func:`attnsink.lm.train_lm`), read back
    with the models from the store or the cache where ``result``'s came from (trained only
    where the profile may train, as :func:`attnsink.experiments.backcopy` would); one record
    per model: ``model``, ``seed``, ``step`` and ``first_mean`` (step, layer, head)."""
    from ..experiments.base import Context
    from ..experiments.text import train_gpts
    from ..profiles import BACKCOPY_MODEL, resolve_training

    s = result.settings
    may_train = resolve_training(None, result.profile)
    ctx = Context(result.experiment, result.profile, s, cache_dir=cache_dir, train=may_train)
    recipe = {"steps": s.steps, "lr": s.lr, "batch_size": s.batch_size}
    tasks = {bos: lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos) for bos in (True, False)}
    wanted = [(tasks[bos], rule, seed, recipe) for rule, bos in COURSE_MODELS for seed in range(s.seeds)]
    names = [(model_name(rule, bos), seed) for rule, bos in COURSE_MODELS for seed in range(s.seeds)]
    return [
        {"model": name, "seed": seed, "step": np.asarray(h["step"]).tolist(), "first_mean": np.asarray(h["first_mean"])}
        for (name, seed), (_, h) in zip(names, train_gpts(ctx, wanted, BACKCOPY_MODEL))
    ]


def runs_frame(result) -> pd.DataFrame:
    """One row per trained model, with ``model``, and the loss above the best predictor's
    overall (``excess``) and at ordinary targets (``excess_other``)."""
    runs = pd.DataFrame(result.runs)
    runs["model"] = [model_name(a, b) for a, b in zip(runs["attention"], runs["bos"])]
    runs["excess"] = runs["loss"] - runs["best_loss"]
    runs["excess_other"] = runs["other_loss"] - runs["best_other_loss"]
    return runs


def heads_frame(result) -> pd.DataFrame:
    """One row per (model, seed, layer, head), with what the head ``writes`` at ordinary queries."""
    heads = backcopy_frame(result.runs)
    heads["writes"] = what_it_writes(heads["ablate_zero"], heads["ablate_mean"])
    return heads


def _part(heads: pd.DataFrame, model: str, layer: int) -> pd.DataFrame:
    return heads[(heads["model"] == model) & (heads["layer"] == layer)]


def _lo(values) -> float:
    v = pd.Series(values, dtype=float).dropna()
    return float(v.min()) if len(v) else math.nan


def _hi(values) -> float:
    v = pd.Series(values, dtype=float).dropna()
    return float(v.max()) if len(v) else math.nan


# ---- the measures: every number the text quotes ----


@CHAPTER.measures
def measures(result, courses) -> dict:
    """The numbers chapter 7 quotes, from :func:`~attnsink.experiments.backcopy`'s
    ``result`` (its records and its trained models) and the training ``courses``
    (:func:`training_courses`)."""
    runs, heads = runs_frame(result), heads_frame(result)
    m = {"_runs": runs, "_heads": heads}
    for part in (
        _setup(result),
        _learning(runs),
        _looks(heads),
        _off_rules(heads),
        _single_rows(result),
        _sink_share(runs, heads),
        _no_bos(runs, heads),
        _writes(runs, heads),
        _joint(runs, heads),
        _calibration(result, runs, heads),
        _controls_without_bos(result, heads),
        _quiet(heads),
        _where_without_bos(result, heads),
        _copy_looks(result, heads),
        _positional(result),
        _by_first_token(result),
        _course(courses, result.settings.steps, heads),
    ):
        m.update(part)
    m.update(_sets(m))
    return m


def _sets(m: dict) -> dict:
    """Table 7.1's fresh sequences (:data:`METRICS_SEED`) against Table 7.3's (:data:`FRESH`),
    both 256 of them: how far the softmax models' mean loss above the best moves between the
    two sets, each model apart (``set_shift_bos``: trained with BOS and fed it, the model the
    rules are compared with; ``set_shift_nobos``: trained without), and whether the two
    models swap order."""
    own = m["pos_excess_own"] - m["bos_soft_excess"]
    plain = m["pos_excess_plain"] - m["nobos_soft_excess"]
    order = (m["bos_soft_excess"] - m["nobos_soft_excess"]) * (m["pos_excess_own"] - m["pos_excess_plain"])
    return {"set_shift_bos": abs(own), "set_shift_nobos": abs(plain), "set_flip": bool(order < 0)}


def _setup(result) -> dict:
    """The language, the recipe and the thresholds, as the text writes them (the constants as
    strings: '0.3', not '0.30')."""
    task = lm.BigramBackcopy(**BACKCOPY_TASK)
    s = result.settings
    return {
        "width": BACKCOPY_MODEL["d_model"],
        "d_head": BACKCOPY_MODEL["d_model"] // BACKCOPY_MODEL["n_heads"],
        "vocab": task.vocab_size,
        "n_triggers": task.n_triggers,
        "seq_len": task.seq_len,
        "alpha": f"{task.alpha:g}",
        "n_seeds": int(s.seeds),
        "steps": int(s.steps),
        "lr": f"{s.lr:g}",
        "batch_size": int(s.batch_size),
        "betas": str(lm.training.BETAS),
        "eps": f"{SINK_EPS:g}",
        "tol": f"{WRITE_TOL:g}",
        "leave": f"{LEAVE:g}",
        "settled_tol": f"{SETTLED:g}",
        "near": f"{NEAR:g}",
        "off_row": f"{OFF:g}",
    }


def _learning(runs: pd.DataFrame) -> dict:
    bos = runs[runs["bos"]]
    by_model = runs.groupby("model", sort=False)["excess"].mean()
    loss = bos.groupby("attention")["loss"].mean()
    gap = loss.drop("softmax") - loss["softmax"]
    return {
        "best_loss": float(bos["best_loss"].iloc[0]),
        "best_other_loss": float(bos["best_other_loss"].iloc[0]),
        "best_loss_nobos": float(runs.loc[~runs["bos"], "best_loss"].iloc[0]) if (~runs["bos"]).any() else math.nan,
        "excess_min": float(by_model.min()),
        "excess_max": float(by_model.max()),
        "excess_seed_max": float(runs["excess"].max()),
        "below_best": float((runs["loss"] - runs["best_loss"]).min()),
        "copy_min": float(runs["copy_acc"].min()),
        "gap_min": float(gap.min()),
        "gap_max": float(gap.max()),
        "gap_abs": float(gap.abs().max()),
        "gap_abs_min": float(gap.abs().min()),
        **_paired(bos),
    }


def _paired(bos: pd.DataFrame) -> dict:
    """Each rule with BOS against softmax trained from the same seed (its loss minus
    softmax's, seed by seed): in how many seeds it ends above softmax, the two-sided sign
    test's p-value for that count (:func:`sign_test`; a tie counts for neither side), and
    the paired differences' means by rule and their range over seeds."""
    by_seed = bos.pivot_table(index="seed", columns="attention", values="loss")
    paired = by_seed.drop(columns="softmax").sub(by_seed["softmax"], axis=0)
    above, untied = (paired > 0).sum(), (paired != 0).sum()
    p = {rule: sign_test(int(above[rule]), int(untied[rule])) for rule in paired.columns}
    least, most = min(p.values(), default=Fraction(1)), max(p.values(), default=Fraction(1))
    return {
        **{f"{rule}_n_above": int(above[rule]) for rule in paired.columns},  # seeds above softmax
        "sign_p": float(least),  # the smallest p over the rules
        "sign_p_text": f"{least.numerator}/{least.denominator}" if least < 1 else "1",
        "sign_p_high": float(most),
        "sign_p_high_text": f"{most.numerator}/{most.denominator}" if most < 1 else "1",
        "paired_mean_min": float(paired.mean().min()),
        "paired_mean_max": float(paired.mean().max()),
        "paired_min": float(paired.min().min()),
        "paired_max": float(paired.max().max()),
    }


def _looks(heads: pd.DataFrame) -> dict:
    """Where the softmax heads with BOS look: the first layer parks, the second spreads."""
    soft, soft_1 = _part(heads, "softmax", 0), _part(heads, "softmax", 1)
    leave = soft["first_trigger"] < LEAVE
    return {
        "n_soft": int(len(soft)),
        "n_soft_per_model": int(soft.groupby("seed").size().max()) if len(soft) else 0,  # heads per first layer
        "soft_first_min": _lo(soft["first_ordinary"]),
        "soft_first_max": _hi(soft["first_ordinary"]),
        "n_soft_sinks": int((soft["first_ordinary"] > SINK_EPS).sum()),
        "n_leave": int(leave.sum()),
        "n_stay": int((~leave).sum()),
        "leave_every_seed": bool(leave.groupby(soft["seed"]).any().all()) if len(soft) else False,
        "leave_trigger_max": _hi(soft.loc[leave, "first_trigger"]),
        "stay_trigger_min": _lo(soft.loc[~leave, "first_trigger"]),
        "soft_value_min": _lo(soft["first_value"]),
        "soft_value_max": _hi(soft["first_value"]),
        "soft_entropy": float(soft["entropy_ordinary"].mean()),
        "l1_first_mean": float(soft_1["first_ordinary"].mean()),
        "l1_first_max": _hi(soft_1["first_ordinary"]),
        "l1_entropy_min": _lo(soft_1["entropy_ordinary"]),
        "even": _even(),
    }


def _even() -> float:
    """What an even spread gives token 0, averaged over queries 1 .. L-2: the mean of 1 / (i + 1)."""
    seq_len = BACKCOPY_TASK["seq_len"]
    return float(np.mean([1 / (i + 1) for i in range(1, seq_len - 1)]))


def _off_rules(heads: pd.DataFrame) -> dict:
    """The rules that can switch a row off, with BOS: ReLU and sigmoid rows go (nearly) empty;
    softmax1's and sink_logit's rows give their weight to the phantom slot."""
    out = {}
    for rule in OFF_RULES:
        first = _part(heads, rule, 0)
        per_run = first.groupby("seed")["row_trigger"].mean()
        l1_seed = _part(heads, rule, 1).groupby("seed")["row_ordinary"].mean()
        out |= {
            f"{rule}_row_max": _hi(first["row_ordinary"]),  # the largest head's mean over ordinary rows
            f"{rule}_first_max": _hi(first["first_ordinary"]),
            f"{rule}_trig_min": _lo(per_run),
            f"{rule}_l1_row": float(_part(heads, rule, 1)["row_ordinary"].mean()),
            # the second layer's mean row weight at ordinary queries, seed by seed
            f"{rule}_l1_row_seed_min": _lo(l1_seed),
            f"{rule}_l1_row_seed_max": _hi(l1_seed),
            f"{rule}_l1_n_off": int((l1_seed < 0.01).sum()),
        }
    out["off_trig_min"] = min(out["relu_trig_min"], out["sigmoid_trig_min"])
    out["phantom_row_max"] = max(out["softmax1_row_max"], out["sink_logit_row_max"])
    return out


@torch.no_grad()
def first_layer_rows(model, x: torch.Tensor) -> torch.Tensor:
    """(heads, n, query): each first-layer row's weights on inputs ``x``, summed over the keys
    (the tokens: a phantom slot's weight is not among them)."""
    return lm.head_outputs(model, x)["weights"][0].sum(-1).transpose(0, 1)


def _single_rows(result) -> dict:
    """With BOS, the rules that can switch a row off, row by row at ordinary queries (on the
    sequences :func:`attnsink.lm.backcopy_metrics` reads, :data:`METRICS_SEED`): the largest
    weight a single first-layer row carries (``*_row_top``), and in the run where most do, the
    share of first-layer rows that carry more than :data:`OFF` (``*_on_share``)."""
    x, _, ordinary = _fresh(lm.BigramBackcopy(**BACKCOPY_TASK), METRICS_SEED)
    out = {}
    for rule in OFF_RULES:
        top, on = [], []
        for model in result.results.get((rule, True), []):
            rows = memoized(first_layer_rows)(model, x[:, :-1])[:, ordinary]  # (heads, ordinary rows)
            top.append(float(rows.max()))
            on.append(float((rows > OFF).float().mean()))
        out[f"{rule}_row_top"] = max(top, default=math.nan)
        out[f"{rule}_on_share"] = max(on, default=math.nan)
    out["off_on_share"] = max(out[f"{rule}_on_share"] for rule in OFF_RULES)
    out["off_row_top_min"] = min(out[f"{rule}_row_top"] for rule in OFF_RULES)
    return out


def _sink_share(runs: pd.DataFrame, heads: pd.DataFrame) -> dict:
    """Table 7.1's Sink_1^eps for softmax with BOS, seed by seed (its smallest and largest),
    and the heads it counts: every head of a model, both layers together."""
    sink = runs.loc[runs["model"] == "softmax", "sink"]
    per_model = heads.groupby(["model", "seed"]).size()
    return {
        "soft_sink_min": _lo(sink),
        "soft_sink_max": _hi(sink),
        "heads_per_model": int(per_model.max()) if len(per_model) else 0,
    }


def _no_bos(runs: pd.DataFrame, heads: pd.DataFrame) -> dict:
    """Without BOS: no sink on the first real token, the rows spread, the copy learned."""
    nb, soft = _part(heads, "softmax (no BOS)", 0), _part(heads, "softmax", 0)
    nb_l1 = _part(heads, "softmax (no BOS)", 1)
    copy = runs.groupby(["attention", "bos"])["copy_acc"]
    excess = runs.groupby(["attention", "bos"])["excess"].mean()
    other = runs[~runs["bos"]]
    nb_rules = heads[~heads["bos"] & (heads["layer"] == 0)]
    return {
        "nobos_first_mean": float(nb["first_ordinary"].mean()),
        "nobos_first_max": _hi(nb["first_ordinary"]),
        "nobos_first_at_most": bound(_hi(nb["first_ordinary"]), "up"),  # the text's "at most"
        "nobos_any_first_max": _hi(nb_rules["first_ordinary"]),
        # every head of every rule without BOS, both layers: "at most"
        "nobos_every_first_max": bound(_hi(heads.loc[~heads["bos"], "first_ordinary"]), "up"),
        # ... and at triggers
        "nobos_every_first_trig_max": _hi(heads.loc[~heads["bos"], "first_trigger"]),
        # the second layer's softmax heads without BOS, head by head
        "nb_l1_first_min": _lo(nb_l1["first_ordinary"]),
        "nb_l1_first_max": _hi(nb_l1["first_ordinary"]),
        "nb_l1_entropy_min": _lo(nb_l1["entropy_ordinary"]),
        "nobos_entropy": float(nb["entropy_ordinary"].mean()),
        "bos_entropy": float(soft["entropy_ordinary"].mean()),
        "nobos_copy_min": _lo(other["copy_acc"]),
        "nobos_soft_copy": float(copy.mean().get(("softmax", False), math.nan)),
        "bos_soft_copy": float(copy.mean().get(("softmax", True), math.nan)),
        "nobos_soft_excess": float(excess.get(("softmax", False), math.nan)),
        "bos_soft_excess": float(excess.get(("softmax", True), math.nan)),
    }


def _writes(runs: pd.DataFrame, heads: pd.DataFrame) -> dict:
    """What one head writes at ordinary queries: by the ablation, nothing, in every head."""
    soft = _part(heads, "softmax", 0)
    copying, idle = soft[soft["first_trigger"] < LEAVE], soft[soft["first_trigger"] >= LEAVE]
    nothing = heads["writes"] == "nothing"
    exact = nothing & (heads["ablate_zero"] == 0)  # no change a float32 loss can show
    idle_cost = idle[["ablate_zero", "ablate_trigger_zero"]].abs().to_numpy()
    return {
        "n_heads": int(len(heads)),
        "n_nothing": int(nothing.sum()),
        "zero_max": _hi(heads["ablate_zero"].abs()),
        "mean_max": _hi(heads["ablate_mean"].abs()),
        "n_exact": int(exact.sum()),
        "n_empty": int((heads.loc[exact, "row_ordinary"] == 0).sum()),
        "ulp": float(np.spacing(np.float32(runs["loss"].max()))),
        "loss_max": float(runs["loss"].max()),
        "copy_ratio_min": _lo(copying["out_ratio"]),
        "copy_ratio_max": _hi(copying["out_ratio"]),
        "copy_first_min": _lo(copying["first_ordinary"]),
        "copy_value_min": _lo(copying["first_value"]),
        "copy_value_max": _hi(copying["first_value"]),
        "idle_cost": float(idle_cost.max()) if idle_cost.size else math.nan,
        "idle_ratio_min": _lo(idle["out_ratio"]),
    }


def _joint(runs: pd.DataFrame, heads: pd.DataFrame) -> dict:
    """Every head of a layer silenced at once (:func:`attnsink.lm.ablate_layers`)."""
    layer0_ord = runs["layer_zero_ordinary"].str[0]
    layer0_trig = runs["layer_zero_trigger"].str[0]
    layer1 = runs["layer_zero_all"].str[1]
    soft = runs["model"] == "softmax"
    soft_both = runs["model"].isin(["softmax", "softmax (no BOS)"])
    single = heads[heads["layer"] == 0].groupby(["model", "seed"])["ablate_trigger_zero"].max()
    joint = runs.assign(joint=layer0_trig).set_index(["model", "seed"])["joint"].reindex(single.index)
    busy = sorted(runs.loc[layer1.abs() > WRITE_TOL, "model"].unique())
    relu, relu_nb = layer1[runs["model"] == "relu"].abs(), layer1[runs["model"] == "relu (no BOS)"].abs()
    return {
        "relu_l1_n_busy": int((relu > WRITE_TOL).sum()),  # ReLU with BOS: the seeds whose second layer costs
        "relu_l1_max": _hi(relu),
        "relu_nobos_l1_max": _hi(relu_nb),
        "n_runs": int(len(runs)),
        "layer0_ord_min": _lo(layer0_ord),
        "layer0_ord_max": _hi(layer0_ord),
        "layer0_ord_abs": _hi(layer0_ord.abs()),
        "layer0_trig_min": _lo(layer0_trig),
        "layer0_trig_max": _hi(layer0_trig),
        "single_trig_min": _lo(single),
        "single_trig_max": _hi(single),
        "n_shared": int((single / joint < 0.1).sum()),
        "n_single": int(len(single)),
        "soft_l1_min": _lo(layer1[soft]),
        "soft_l1_max": _hi(layer1[soft]),
        "soft_l1_abs": _hi(layer1[soft].abs()),  # with BOS
        "soft_l1_both_abs": _hi(layer1[soft_both].abs()),  # with BOS and without
        "n_busy": len(busy),
        "busy": ", ".join(busy) if busy else "none",
        "l1_abs_max": _hi(layer1.abs()),
    }


def _fresh(task, seed: int, n: int | None = None):
    """``n`` (default :data:`N_FRESH`) fresh sequences of ``task``, their copy targets and their ordinary queries (query
    0 left out: it sees only token 0, and its target follows BOS, not the chain)."""
    x = task.sample(n or N_FRESH, seed=seed)
    copy = task.trigger_targets(x)
    ordinary = ~copy
    ordinary[:, 0] = False
    return x, copy, ordinary


def _layer0(model, rows: torch.Tensor) -> torch.Tensor:
    """``rows`` (n, L - 1) for every head of the first layer and none of the others, as
    :func:`attnsink.lm.ablate_heads` takes them per head: it skips a head without rows (NaN
    there), so a measure that reads only the first layer runs half the ablations."""
    out = torch.zeros((model.config["n_layers"], model.n_heads, *rows.shape), dtype=torch.bool)
    out[0] = rows
    return out


def _chi_factor(dof: int = 3) -> float:
    """How far a standard deviation estimated from ``dof`` + 1 samples can sit below the true
    one: sqrt(dof / q), q the 2.5% quantile of the chi-squared distribution with ``dof``
    degrees of freedom (found by bisection; the closed form below is for ``dof`` = 3)."""
    if dof != 3:
        raise ValueError(f"only dof=3 is implemented, got {dof}")

    def cdf(x):
        return math.erf(math.sqrt(x / 2)) - math.sqrt(2 * x / math.pi) * math.exp(-x / 2)

    lo, hi = 0.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < 0.025 else (lo, mid)
    return math.sqrt(dof / lo)


def _calibration(result, runs: pd.DataFrame, heads: pd.DataFrame) -> dict:
    """The tolerance against the measurement's noise (one head zeroed on four disjoint
    quarters of fresh sequences), and the transplant control at ordinary queries: each
    first-layer softmax head given there its own outputs from trigger queries drawn at random."""
    x, copy, ordinary = _fresh(lm.BigramBackcopy(**BACKCOPY_TASK), FRESH_CAL)
    noise, rows = [], []
    for seed, model in enumerate(result.results["softmax", True]):
        quarters = torch.stack(
            [
                lm.ablate_heads(model, x[q::4], _layer0(model, ordinary[q::4]), kinds=("zero",))["zero"][0]
                for q in range(4)
            ]
        )  # (quarter, head): the first layer
        noise += (quarters.std(dim=0) / 2).tolist()
        moved = lm.ablate_heads(model, x, _layer0(model, ordinary), kinds=("transplant",), donor=_layer0(model, copy))[
            "transplant"
        ][0]
        rows += [{"seed": seed, "head": h, "control": float(v)} for h, v in enumerate(moved)]
    columns = ["seed", "head", "first_trigger", "out_ratio", "first_value", "out_ordinary", "ablate_trigger_zero"]
    ctl = pd.DataFrame(rows).merge(_part(heads, "softmax", 0)[columns])
    layer = runs[runs["model"] == "softmax"].set_index("seed")["layer_zero_trigger"].str[0]
    ctl["trig_share"] = ctl["ablate_trigger_zero"] / ctl["seed"].map(layer)  # of what the whole layer costs
    ctl["trig_norm"] = ctl["out_ordinary"] / ctl["out_ratio"]  # the mean output norm at triggers
    leave, stay = ctl[ctl["first_trigger"] < LEAVE], ctl[ctl["first_trigger"] >= LEAVE]
    noticed, missed = leave[leave["control"] > WRITE_TOL], leave[leave["control"] <= WRITE_TOL]
    soft_excess = float(runs.loc[runs["model"] == "softmax", "excess"].mean())
    noise_max = max(noise)
    return {
        "_control": ctl,
        "copy_share": float(copy.float().mean()),
        "noise_max": noise_max,
        "chi_factor": _chi_factor(),
        "tol_over_noise": WRITE_TOL / noise_max,
        "soft_excess": soft_excess,
        "tol_over_excess": WRITE_TOL / soft_excess,
        "n_ctl_leave": int(len(leave)),
        "n_noticed": int(len(noticed)),
        "ctl_min": _lo(leave["control"]),
        "ctl_max": _hi(leave["control"]),
        "stay_ctl_abs": _hi(stay["control"].abs()),
        "noticed_ratio_min": _lo(noticed["out_ratio"]),
        "noticed_ratio_max": _hi(noticed["out_ratio"]),
        "noticed_value_max": _hi(noticed["first_value"]),
        "n_noticed_quiet": int((noticed["out_ratio"] < 0.1).sum()),
        "n_missed": int(len(missed)),
        "missed_ctl_max": _hi(missed["control"]),
        "missed_trig_max": _hi(missed["ablate_trigger_zero"]),
        "missed_trig_share_max": _hi(missed["trig_share"]),
        "missed_norm_max": _hi(missed["trig_norm"]),
        "noticed_ctl_min": _lo(noticed["control"]),
        "noticed_trig_min": _lo(noticed["ablate_trigger_zero"]),
        "noticed_norm_min": _lo(noticed["trig_norm"]),
        "noticed_norm_median": float(noticed["trig_norm"].median()) if len(noticed) else math.nan,
    }


def _controls_without_bos(result, heads: pd.DataFrame) -> dict:
    """The same transplant control without BOS, head by head; and for the whole first layer at once, with
    and without BOS, as measured and with the two models' copies matched in size."""
    tasks = {bos: lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos) for bos in (True, False)}
    fresh = {bos: _fresh(tasks[bos], FRESH_CAL) for bos in (True, False)}
    soft, nb = _part(heads, "softmax", 0), _part(heads, "softmax (no BOS)", 0)
    bos_copy, nb_copy = soft[soft["first_trigger"] < LEAVE], nb[nb["first_trigger"] < LEAVE]
    # how loudly the heads that copy write at triggers (the ordinary norm over the ratio)
    at_triggers = {k: h["out_ordinary"] / h["out_ratio"] for k, h in (("bos", bos_copy), ("nobos", nb_copy))}
    loud = float(at_triggers["bos"].mean() / at_triggers["nobos"].mean())
    per_head, layer, scaled = [], {True: [], False: []}, {True: [], False: []}
    for bos in (True, False):
        x, copy, ordinary = fresh[bos]
        for seed, model in enumerate(result.results["softmax", bos]):
            layer[bos].append(lm.transplant_layer(model, x, ordinary, copy, 0))
            if math.isfinite(loud) and loud > 0:  # no copying head on either side: nothing to match
                scaled[bos].append(lm.transplant_layer(model, x, ordinary, copy, 0, scale=1 / loud if bos else loud))
            if not bos:
                moved = lm.ablate_heads(
                    model, x, _layer0(model, ordinary), kinds=("transplant",), donor=_layer0(model, copy)
                )["transplant"][0]
                per_head += [{"seed": seed, "head": h, "control": float(v)} for h, v in enumerate(moved)]
    ctl = pd.DataFrame(per_head).merge(nb[["seed", "head", "first_trigger"]])
    copying = ctl["first_trigger"] < LEAVE
    return {
        "nb_ctl_max": _hi(ctl["control"]),
        "nb_n_above": int((ctl["control"] > WRITE_TOL).sum()),
        "nb_n_copy_above": int((ctl.loc[copying, "control"] > WRITE_TOL).sum()),
        "nb_n_heads": int(len(ctl)),
        "nb_n_leave": int((ctl["first_trigger"] < LEAVE).sum()),
        "layer_bos_min": _lo(layer[True]),
        "layer_bos_max": _hi(layer[True]),
        "layer_nobos_min": _lo(layer[False]),
        "layer_nobos_max": _hi(layer[False]),
        "loud": loud,
        "scaled_min": _lo(scaled[False]),  # the copies without BOS at the size of those with
        "scaled_max": _hi(scaled[False]),
        "shrunk_min": _lo(scaled[True]),  # the copies with BOS at the size of those without
        "shrunk_max": _hi(scaled[True]),
        **_matched(layer, scaled),
    }


def _matched(layer: dict, scaled: dict) -> dict:
    """How far apart the two models' first-layer controls are, as measured and matched in size:
    the ratio of their means (with BOS over without), and matched, the larger of the two
    ratios (each way round, whichever is over 1) between a model's scaled mean and the other's."""

    def mean(v):
        return float(np.mean(v)) if len(v) else math.nan

    def apart(a, b):
        r = a / b if b else math.inf
        return max(r, 1 / r) if r > 0 else math.inf

    bos, nobos = mean(layer[True]), mean(layer[False])
    up, down = mean(scaled[False]), mean(scaled[True])
    return {
        "layer_bos_mean": bos,
        "layer_nobos_mean": nobos,
        "scaled_mean": up,
        "shrunk_mean": down,
        "raw_gap": bos / nobos if nobos else math.inf,
        "matched_gap": max(apart(bos, up), apart(down, nobos)),
    }


def _quiet(heads: pd.DataFrame) -> dict:
    """What the heads that copy write at ordinary queries, with BOS against without."""
    soft, nb = _part(heads, "softmax", 0), _part(heads, "softmax (no BOS)", 0)
    bos_copy, nb_copy = soft[soft["first_trigger"] < LEAVE], nb[nb["first_trigger"] < LEAVE]
    rest = nb[nb["first_trigger"] >= LEAVE]
    return {
        "nb_n_copy": int(len(nb_copy)),
        "nb_copy_ratio_min": _lo(nb_copy["out_ratio"]),
        "nb_copy_ratio_max": _hi(nb_copy["out_ratio"]),
        "nb_copy_norm_min": _lo(nb_copy["out_ordinary"]),
        "nb_copy_norm_max": _hi(nb_copy["out_ordinary"]),
        "bos_copy_norm_min": _lo(bos_copy["out_ordinary"]),
        "bos_copy_norm_max": _hi(bos_copy["out_ordinary"]),
        "norm_factor": float(nb_copy["out_ordinary"].mean() / bos_copy["out_ordinary"].mean()),
        "nb_cost": _hi(nb["ablate_zero"].abs()),
        "nb_n_rest": int(len(rest)),
        "nb_rest_trig_min": _lo(rest["first_trigger"]),
        "nb_rest_trig_max": _hi(rest["first_trigger"]),
        "nb_rest_entropy_min": _lo(rest["entropy_ordinary"]),
    }


@torch.no_grad()
def _where_without_bos(result, heads: pd.DataFrame) -> dict:
    """Without BOS, where the first-layer softmax rows go at ordinary queries: the weight on
    the query itself, the token before it and the first token; the row's largest weight;
    and which key takes it. And the first token's pull: what the heads that copy (and the
    others) put on it, against an even spread's share."""
    task = lm.BigramBackcopy(**BACKCOPY_TASK, bos=False)
    x, _, ordinary = _fresh(task, METRICS_SEED)
    rows = []
    for seed, model in enumerate(result.results["softmax", False]):
        w = lm.head_outputs(model, x[:, :-1])["weights"][0].cpu()  # (n, heads, query, key)
        q = torch.arange(1, w.shape[-1])
        r = ordinary[:, 1:]  # (n, query >= 1)
        for head in range(w.shape[1]):
            top = w[:, head, 1:, :].argmax(-1)[r]  # the key of each ordinary row's largest weight
            largest = w[:, head, 1:, :].max(-1).values[r]  # each ordinary row's largest weight
            rows.append(
                {
                    "seed": seed,
                    "head": head,
                    "self": float(w[:, head, q, q][r].mean()),
                    "previous": float(w[:, head, q, q - 1][r].mean()),
                    "first": float(w[:, head, q, 0][r].mean()),
                    "largest": float(largest.mean()),
                    "row_top": float(largest.max()),
                    "over_half": float((largest > 0.5).float().mean()),
                    "top_self": float((top == q.expand_as(r)[r]).float().mean()),
                    "top_previous": float((top == (q - 1).expand_as(r)[r]).float().mean()),
                    "top_first": float((top == 0).float().mean()),
                }
            )
    nb = _part(heads, "softmax (no BOS)", 0)[["seed", "head", "first_trigger", "first_ordinary"]]
    where = pd.DataFrame(rows).merge(nb)
    copying = where["first_trigger"] < LEAVE
    top_first = where.loc[where["top_first"].idxmax()] if len(where) else None  # the head where it wins most rows
    return {
        "_where": where,
        "top_first_copies": bool(top_first["first_trigger"] < LEAVE) if top_first is not None else False,
        "nb_copy_first_min": _lo(where.loc[copying, "first_ordinary"]),
        "nb_copy_first_max": _hi(where.loc[copying, "first_ordinary"]),
        "nb_rest_first_max": _hi(where.loc[~copying, "first_ordinary"]),
        "nb_first_min": _lo(where["first_ordinary"]),
        "nb_first_over_even": _hi(where.loc[copying, "first_ordinary"]) / _even(),  # the copying heads
        "where_self_max": _hi(where["self"]),
        "where_previous_max": _hi(where["previous"]),
        "where_first_max": _hi(where["first"]),
        "where_largest_min": _lo(where["largest"]),
        "where_largest_max": _hi(where["largest"]),
        "where_row_top": _hi(where["row_top"]),  # the largest weight of any single row
        "where_over_half_min": _lo(where["over_half"]),  # the share of a head's rows whose largest weight passes 0.5
        "where_over_half_max": _hi(where["over_half"]),
        "top_previous_min": _lo(where["top_previous"]),
        "top_previous_max": _hi(where["top_previous"]),
        "top_first_max": _hi(where["top_first"]),
        "top_self_max": _hi(where["top_self"]),
    }


@torch.no_grad()
def _copy_looks(result, heads: pd.DataFrame) -> dict:
    """Where the first-layer softmax heads put their weight at triggers: on the token before
    the trigger (the one the next token copies) and on the trigger itself, for the heads
    that leave token 0 there (``look_*``; ``nb_look_*`` without BOS) and, without BOS, for
    the others (``nb_rest_look_*``), against what an even spread gives one key at those
    queries (``nb_even_trigger``: the mean of 1 / (i + 1) over them); read on the
    sequences that sorted them (:data:`METRICS_SEED`)."""
    out = {}
    for bos, key in ((True, "look"), (False, "nb_look")):
        part = _part(heads, model_name("softmax", bos), 0)
        x, copy, _ = _fresh(lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos), METRICS_SEED)
        q = torch.arange(1, x.shape[1] - 1)  # the queries after the first
        c = copy[:, 1:]  # (n, query >= 1): the trigger queries
        rows = []
        for seed, model in enumerate(result.results["softmax", bos]):
            w = lm.head_outputs(model, x[:, :-1])["weights"][0]  # (n, heads, query, key)
            rows += [
                {
                    "seed": seed,
                    "head": head,
                    "previous": float(w[:, head, q, q - 1][c].mean()),
                    "self": float(w[:, head, q, q][c].mean()),
                }
                for head in range(w.shape[1])
            ]
        looks = pd.DataFrame(rows, columns=["seed", "head", "previous", "self"]).merge(
            part[["seed", "head", "first_trigger"]]
        )
        leave, rest = looks[looks["first_trigger"] < LEAVE], looks[looks["first_trigger"] >= LEAVE]
        out |= {
            f"{key}_previous_min": _lo(leave["previous"]),
            f"{key}_previous_max": _hi(leave["previous"]),
            f"{key}_self_max": _hi(leave["self"]),
            f"{key}_n": int(len(leave)),
        }
        if not bos:
            even = (1 / (q + 1).float()).expand_as(c)[c]  # an even spread's share of one key
            out |= {
                "nb_rest_look_previous_min": _lo(rest["previous"]),
                "nb_rest_look_previous_max": _hi(rest["previous"]),
                "nb_rest_look_n": int(len(rest)),
                "nb_even_trigger": float(even.mean()) if even.numel() else math.nan,
            }
    return out


@torch.no_grad()
def _by_first_token(result) -> dict:
    """BOS taken away at inference, token by token: the models trained with BOS, fed
    :data:`N_TOKEN` times :data:`N_FRESH` fresh sequences without it; per seed and first token,
    the first layer's mean weight on that token (over heads and queries 1 on)."""
    task = lm.BigramBackcopy(**BACKCOPY_TASK, bos=False)
    x = task.sample(N_TOKEN * N_FRESH, seed=FRESH_TOKEN)
    rows = []
    for seed, model in enumerate(result.results["softmax", True]):
        w = lm.head_outputs(model, x[:, :-1])["weights"][0]  # (n, heads, query, key)
        on_first = w[:, :, 1:, 0].mean(dim=(1, 2))  # (n,): per sequence
        frame = pd.DataFrame({"token": x[:, 0].cpu().numpy(), "first": on_first.numpy()})
        rows += [{"seed": seed, "token": t, "first": v} for t, v in frame.groupby("token")["first"].mean().items()]
    by = pd.DataFrame(rows, columns=["seed", "token", "first"])
    return {
        "pos_token_min": _lo(by["first"]),
        "pos_token_max": _hi(by["first"]),
        "pos_n_tokens": int(by["token"].nunique()),
    }


@torch.no_grad()
def positional(result, n: int | None = None, seed: int = FRESH) -> pd.DataFrame:
    """BOS taken away at inference: each softmax model, trained with BOS or without, on ``n``
    (default :data:`N_FRESH`) fresh sequences of the language without BOS (and a model trained with BOS on its own
    sequences too); per model and seed, the loss above the best predictor's and the first
    layer's mean weight on token 0 (:func:`attnsink.lm.head_metrics`, queries 1 on)."""
    tasks = {bos: lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos) for bos in (True, False)}
    seqs = {bos: tasks[bos].sample(n or N_FRESH, seed=seed) for bos in (True, False)}
    best = {bos: tasks[bos].best_loss(seqs[bos]).mean().item() for bos in (True, False)}
    rows = []
    for trained in (True, False):
        for s, model in enumerate(result.results["softmax", trained]):
            for fed in (True, False) if trained else (False,):
                x = seqs[fed].to(next(model.parameters()).device)
                first = lm.head_metrics(model, x[:, :-1])["first_mean"][0]  # (heads,): the first layer
                rows.append(
                    {
                        "trained with BOS": trained,
                        "fed BOS": fed,
                        "seed": s,
                        "excess": lm.lm_loss(model, x).item() - best[fed],
                        "first": float(first.mean()),
                        "first_min": float(first.min()),
                    }
                )
    return pd.DataFrame(rows)


def _positional(result) -> dict:
    p = positional(result)
    moved = p[p["trained with BOS"] & ~p["fed BOS"]]
    own = p[p["trained with BOS"] & p["fed BOS"]]
    plain = p[~p["trained with BOS"]]
    return {
        "_positional": p,
        "pos_first": float(moved["first"].mean()),
        "pos_first_min": _lo(moved["first"]),
        "pos_first_max": _hi(moved["first"]),
        "pos_head_min": _lo(moved["first_min"]),
        "pos_bos": float(own["first"].mean()),
        "pos_share": float(moved["first"].mean() / own["first"].mean()),
        "pos_excess": float(moved["excess"].mean()),
        "pos_excess_own": float(own["excess"].mean()),
        "pos_excess_plain": float(plain["excess"].mean()),
        "plain_first": float(plain["first"].mean()),
    }


def _course(courses: list[dict], steps: int, heads: pd.DataFrame) -> dict:
    """How the first-layer heads' weight on token 0 went during training: whether it had
    levelled off by the end (the step from which every head stays within :data:`SETTLED` of
    its final weight), how far a softmax head rose over the second half, when the softmax
    heads that copy and those that stay came near their final weight (:func:`_paces`), and how
    high softmax1's and sink_logit's heads rose before they left token 0 (the last step at
    which one of them put more than :data:`LEAVE` there: :func:`_off_peaks`)."""
    out = {"course_mid_step": int(steps // 2)}
    head_peaks = []  # softmax1's and sink_logit's first-layer heads: (highest weight on token 0, model, seed, head)
    for key, name in (("course", "softmax"), ("course1", "softmax1"), ("course_null", "sink_logit")):
        mine = [
            (c["seed"], np.asarray(c["step"]), np.asarray(c["first_mean"], dtype=float)[:, 0])
            for c in courses
            if c["model"] == name
        ]
        settled, rise, peak, left = [], [], [], []
        for seed, step, w in mine:  # w: (step, head)
            far = np.abs(w - w[-1]).max(axis=1) > SETTLED  # (step,): some head still away from its end
            settled.append(int(step[np.flatnonzero(far)[-1] + 1]) if far.any() else int(step[0]))
            mid = int(np.searchsorted(step, steps / 2))
            rise += [
                (float(w[-1, h] - w[mid, h]), seed, h, float(w[mid, h]), float(w[-1, h])) for h in range(w.shape[1])
            ]
            peak.append(float(w.max()))
            if name != "softmax":
                head_peaks += [(float(p), name, int(seed), h) for h, p in enumerate(w.max(axis=0))]
            on = (w > LEAVE).any(axis=1)
            left.append(int(step[np.flatnonzero(on)[-1]]) if on.any() else 0)
        out[f"{key}_settled"] = max(settled, default=0)
        out[f"{key}_peak"] = max(peak, default=math.nan)
        out[f"{key}_left"] = max(left, default=0)
        if name == "softmax" and rise:
            best = max(rise)
            out |= {
                "course_rise": best[0],
                "course_rise_seed": int(best[1]),
                "course_rise_head": int(best[2]),
                "course_rise_from": best[3],
                "course_rise_to": best[4],
                "course_rise_end": readable(best[4], 4),  # a point value: to the nearest, four figures
            }
    out["course_flat"] = int(steps - out["course_settled"])
    out["off_peak"] = max(out["course1_peak"], out["course_null_peak"])
    out["off_left"] = max(out["course1_left"], out["course_null_left"])
    out |= _off_peaks(head_peaks)
    out |= _paces([c for c in courses if c["model"] == "softmax"], heads)
    nb = [np.asarray(c["first_mean"], dtype=float)[:, 0] for c in courses if c["model"] == "softmax (no BOS)"]
    out["nobos_course_max"] = float(max(w.max() for w in nb)) if nb else math.nan
    return out


def _off_peaks(head_peaks: list[tuple]) -> dict:
    """softmax1's and sink_logit's first-layer heads, each as (its highest recorded weight on
    token 0, model, seed, head): how many passed :data:`PARKED`, the range of their peaks, and
    the highest peak among the others, with that head named."""
    parked = [p for p, *_ in head_peaks if p > PARKED]
    low = max((h for h in head_peaks if h[0] <= PARKED), default=None)
    return {
        "off_n_heads": len(head_peaks),
        "off_n_parked": len(parked),
        "off_head_peak_min": min((p for p, *_ in head_peaks), default=math.nan),
        "off_parked_peak_min": min(parked, default=math.nan),
        "off_low_peak": low[0] if low else math.nan,
        "off_low_model": low[1] if low else "none",
        "off_low_seed": low[2] if low else -1,
        "off_low_head": low[3] if low else -1,
    }


def _paces(courses: list[dict], heads: pd.DataFrame) -> dict:
    """The softmax models' training records (with BOS), head by head, sorted by the chapter's
    rule (:data:`LEAVE` at triggers, on the final model): the step at which each head first
    came within :data:`NEAR` of its final weight on token 0, for the heads that copy and for
    those that stay; the copying heads' mean final weight (their level); and the staying
    heads that first spent time at that level (within :data:`NEAR` of it, at recorded steps
    worth at least :data:`SAT` steps in all, not necessarily in a row, before they came near
    their own final weight): how many, how long in all, from when, when they came near their
    final weight, and the longest unbroken stretch any of them spent at the level."""
    soft = _part(heads, "softmax", 0).set_index(["seed", "head"])["first_trigger"]
    reach, ends = {True: [], False: []}, {True: [], False: []}
    traces = []  # the staying heads: (steps, weights, index of reaching the final weight)
    for c in courses:
        step, w = np.asarray(c["step"]), np.asarray(c["first_mean"], dtype=float)[:, 0]
        for h in range(w.shape[1]):
            copies = bool(soft.get((c["seed"], h), math.inf) < LEAVE)
            at = int(np.argmax(np.abs(w[:, h] - w[-1, h]) <= NEAR))
            reach[copies].append(int(step[at]))
            ends[copies].append(float(w[-1, h]))
            if not copies:
                traces.append((step, w[:, h], at))
    level = float(np.mean(ends[True])) if ends[True] else math.nan
    sat = []  # (steps at the level, first step there, step of reaching the final weight, longest run there)
    for step, w, at in traces:
        there = np.abs(w[:at] - level) <= NEAR
        every = float(np.median(np.diff(step))) if len(step) > 1 else 0.0
        if there.sum() * every >= SAT:
            run = int(longest_run(there) * every)
            sat.append((int(there.sum() * every), int(step[np.argmax(there)]), int(step[at]), run))
    return {
        "course_copy_reach_min": min(reach[True], default=0),
        "course_copy_reach_max": max(reach[True], default=0),
        "course_stay_reach_min": min(reach[False], default=0),
        "course_stay_reach_max": max(reach[False], default=0),
        "course_n_stay": len(reach[False]),
        "course_stay_end_min": min(ends[False], default=math.nan),
        "course_copy_level": level,
        "course_n_sat": len(sat),
        "course_sat_steps_min": min((t for t, *_ in sat), default=0),
        "course_sat_from": min((f for _, f, *_ in sat), default=0),
        "course_sat_up_min": min((u for _, _, u, _ in sat), default=0),
        "course_sat_up_max": max((u for _, _, u, _ in sat), default=0),
        "course_sat_run_max": max((r for *_, r in sat), default=0),  # their longest unbroken stretch there
    }


def longest_run(flags) -> int:
    """The length of the longest run of consecutive true values in ``flags`` (0 when none is true)."""
    best = here = 0
    for flag in flags:
        here = here + 1 if flag else 0
        best = max(best, here)
    return best


# ---- the claims: one per sentence of the text that states a result ----


@CHAPTER.claim(
    "learns-language",
    "Every model learns the language: its mean loss ends within 0.15 nats per token of the best "
    "predictor's, no run more than 0.01 below it, and every run predicts over 90% of the copy targets right.",
    profiles=BOTH,
)
def _(m):
    ok = m["excess_max"] < 0.15 and m["below_best"] > -0.01 and m["copy_min"] > 0.9
    return (
        ok,
        f"loss above the best {_span(m['excess_min'], m['excess_max'])}; copy accuracy ≥ {_down(m['copy_min'], 3)}",
    )


@CHAPTER.claim(
    "learns-closely",
    "Every run ends within 0.02 nats per token of the best predictor, every model's mean within "
    "0.015, and every run gets at least 99% of the copy targets right.",
)
def _(m):
    ok = m["excess_seed_max"] < 0.02 and m["excess_max"] < 0.015 and m["copy_min"] >= 0.99
    return ok, (
        f"largest run {m['excess_seed_max']:.4f}; means {_span(m['excess_min'], m['excess_max'], 3)}; "
        f"copy ≥ {_down(m['copy_min'], 4)}"
    )


@CHAPTER.claim("never-below-best", "No run ends below the best predictor's loss.")
def _(m):
    return m["below_best"] > 0, f"smallest loss above the best {m['below_best']:.4f}"


@CHAPTER.claim("rule-barely-matters", "With BOS, every rule's mean loss is within 0.001 nats per token of softmax's.")
def _(m):
    return m["gap_abs"] < 1e-3, f"largest gap {m['gap_abs']:.2g}"


@CHAPTER.claim(
    "paired-signs",
    "From the same seed, relu and sink_logit with BOS end above softmax in every seed, sigmoid and "
    "softmax1 in all but one.",
)
def _(m):
    n = m["n_seeds"]
    counts = {rule: m[f"{rule}_n_above"] for rule in ("relu", "sink_logit", "sigmoid", "softmax1")}
    ok = counts["relu"] == counts["sink_logit"] == n and counts["sigmoid"] == counts["softmax1"] == n - 1
    return ok, ", ".join(f"{rule} {k} of {n}" for rule, k in counts.items())


@CHAPTER.claim(
    "paired-sign-test",
    "A two-sided sign test on those counts gives p = 1/16 for five of five, the least that five seeds allow, "
    "and 3/8 for four of five: no rule's difference reaches the 5% level.",
)
def _(m):
    n = m["n_seeds"]
    ok = m["sign_p"] == 2.0 ** (1 - n) and m["sign_p_high"] == float(sign_test(n - 1, n)) and m["sign_p"] > 0.05
    return ok, f"p from {m['sign_p_text']} to {m['sign_p_high_text']} over {n} seeds"


@CHAPTER.claim(
    "paired-small",
    "Averaged over seeds, each rule with BOS ends above softmax by under 0.001 nats per token; seed by "
    "seed, the paired differences run from below zero to under 0.0015.",
)
def _(m):
    ok = 0 < m["paired_mean_min"] and m["paired_mean_max"] < 0.001 and m["paired_min"] < 0
    ok = ok and m["paired_max"] < 0.0015
    return ok, (
        f"means {_span(m['paired_mean_min'], m['paired_mean_max'])}; seeds {_span(m['paired_min'], m['paired_max'])}"
    )


@CHAPTER.claim(
    "softmax-parks",
    "Every first-layer softmax head with BOS puts at least 0.99 of its weight on BOS at ordinary queries.",
)
def _(m):
    return m["soft_first_min"] >= 0.99, f"smallest {m['soft_first_min']:.4f}"


@CHAPTER.claim(
    "softmax-leans",
    "Every first-layer softmax head with BOS leans on BOS at ordinary queries (over 0.2 of its weight there).",
    profiles=BOTH,
)
def _(m):
    return m["soft_first_min"] > 0.2, f"smallest {m['soft_first_min']:.3f}"


@CHAPTER.claim(
    "soft-head-count",
    "The text's count of first-layer softmax heads with BOS is the heads per model times the seeds.",
    profiles=BOTH,
)
def _(m):
    ok = m["n_soft"] > 0 and m["n_soft"] == m["n_soft_per_model"] * m["n_seeds"]
    return ok, f"{m['n_soft']} heads: {m['n_soft_per_model']} per model, {m['n_seeds']} seeds"


@CHAPTER.claim(
    "two-kinds",
    "At triggers, in every seed some first-layer softmax heads leave BOS (under 0.05 there) "
    "and the others stay on it (over 0.9).",
)
def _(m):
    ok = m["leave_every_seed"] and m["n_stay"] > 0 and m["stay_trigger_min"] > 0.9
    return ok, f"{m['n_leave']} leave, {m['n_stay']} stay (≥ {_down(m['stay_trigger_min'], 3)})"


@CHAPTER.claim(
    "some-leave",
    "In every seed, some first-layer softmax head leaves BOS at triggers (under 0.05 there).",
    profiles=BOTH,
)
def _(m):
    return m["leave_every_seed"], f"{m['n_leave']} of {m['n_soft']} heads"


@CHAPTER.claim(
    "bos-value-small",
    "In every first-layer softmax head, the norm of BOS's value through the output map is under 0.15 of "
    "the median over the other positions of their value norms (each averaged over the sequences).",
)
def _(m):
    return m["soft_value_max"] < 0.15, _span(m["soft_value_min"], m["soft_value_max"])


@CHAPTER.claim(
    "second-layer-even",
    "The second layer's softmax heads spread their rows evenly: BOS gets within 0.002 of an even "
    "spread's share, and the rows' entropy is at least 0.9998 of the uniform row's.",
)
def _(m):
    ok = abs(m["l1_first_mean"] - m["even"]) < 0.002 and m["l1_entropy_min"] >= 0.9998
    return ok, f"BOS {m['l1_first_mean']:.3f} (even {m['even']:.3f}); entropy ≥ {_down(m['l1_entropy_min'], 4)}"


@CHAPTER.claim(
    "second-layer-spreads",
    "The second layer's softmax heads spread their rows (entropy over 0.8 of the uniform row's) and none is a sink.",
    profiles=BOTH,
)
def _(m):
    ok = m["l1_entropy_min"] > 0.8 and m["l1_first_max"] < SINK_EPS
    return ok, f"entropy ≥ {_down(m['l1_entropy_min'], 3)}; BOS ≤ {_up(m['l1_first_max'])}"


@CHAPTER.claim(
    "relu-sigmoid-off",
    "At ordinary queries ReLU's first-layer rows carry on average, head by head, at most 0.0017 of weight "
    "and sigmoid's at most 0.0012; at triggers both carry a mean of at least 0.28, in every seed.",
)
def _(m):
    ok = m["relu_row_max"] <= 0.0017 and m["sigmoid_row_max"] <= 0.0012
    ok = ok and min(m["relu_trig_min"], m["sigmoid_trig_min"]) >= 0.28
    return ok, (
        f"head means at ordinary queries: ReLU ≤ {_up(m['relu_row_max'])}, sigmoid ≤ {_up(m['sigmoid_row_max'])}; "
        f"triggers ≥ {_down(min(m['relu_trig_min'], m['sigmoid_trig_min']))}"
    )


@CHAPTER.claim(
    "relu-sigmoid-switch",
    "ReLU's and sigmoid's first-layer rows carry on average, head by head, at most 0.05 of weight at "
    "ordinary queries and a mean of at least 0.1 at triggers, in every seed.",
    profiles=BOTH,
)
def _(m):
    ok = all(m[f"{r}_row_max"] <= 0.05 and m[f"{r}_trig_min"] >= 0.1 for r in ("relu", "sigmoid"))
    top = max(m["relu_row_max"], m["sigmoid_row_max"])
    return (
        ok,
        f"head means at ordinary ≤ {_up(top)}; triggers ≥ {_down(min(m['relu_trig_min'], m['sigmoid_trig_min']))}",
    )


@CHAPTER.claim(
    "phantom-takes-row",
    "softmax1's and sink_logit's first-layer rows keep on average, head by head, at most 0.0015 of their "
    "weight on the tokens at ordinary queries.",
)
def _(m):
    top = max(m["softmax1_row_max"], m["sink_logit_row_max"])
    return top <= 0.0015, f"largest head mean {top:.2g}"


@CHAPTER.claim(
    "single-rows-carry-more",
    f"With BOS, single first-layer rows at ordinary queries can carry far more than their head's mean: in "
    f"each of {', '.join(OFF_RULES)} some row carries over 0.2 of weight on the tokens, in ReLU over 1.",
)
def _(m):
    ok = m["off_row_top_min"] > 0.2 and m["relu_row_top"] > 1
    return ok, "largest single rows: " + ", ".join(f"{r} {m[f'{r}_row_top']:.3g}" for r in OFF_RULES)


@CHAPTER.claim(
    "rows-mostly-off",
    f"With BOS, in every run of {', '.join(OFF_RULES)}, under 1% of the first-layer rows at ordinary "
    f"queries carry more than {OFF:g} of weight on the tokens.",
)
def _(m):
    return m["off_on_share"] < 0.01, "share in the run with most: " + ", ".join(
        f"{r} {m[f'{r}_on_share']:.4f}" for r in OFF_RULES
    )


@CHAPTER.claim(
    "sink-share-first-layer",
    "With BOS, softmax's Sink₁^ε in Table 7.1 is 0.5 in every seed: it counts the heads of both layers, "
    "and only the first layer's, every one, put over ε = 0.3 on BOS.",
)
def _(m):
    half = m["soft_sink_min"] == m["soft_sink_max"] == 0.5 == m["n_soft_per_model"] / m["heads_per_model"]
    ok = half and m["soft_first_min"] > SINK_EPS > m["l1_first_max"]
    lo, hi = m["soft_sink_min"], m["soft_sink_max"]
    sinks = f"{lo:.2f} in every seed" if lo == hi else f"seeds {_span(lo, hi)}"
    return ok, (
        f"{sinks}, over {m['heads_per_model']} heads; on BOS: first layer ≥ {_down(m['soft_first_min'], 3)}, "
        f"second ≤ {_up(m['l1_first_max'])}"
    )


@CHAPTER.claim(
    "no-bos-no-sink",
    "Without BOS, no first-layer softmax head puts more than ε = 0.3 on the first token at "
    "ordinary queries, and the rows' mean entropy is over half the uniform row's (with BOS, under half).",
    profiles=BOTH,
)
def _(m):
    ok = m["nobos_first_max"] < SINK_EPS and m["nobos_entropy"] > 0.5 > m["bos_entropy"]
    return ok, f"largest {m['nobos_first_max']:.3f}; entropy {m['nobos_entropy']:.2f} (with BOS {m['bos_entropy']:.2g})"


@CHAPTER.claim(
    "no-bos-learns",
    "Without BOS, softmax learns the copy and the language nearly as well as with it (within 0.02: "
    "the loose check of the quick profile; no-bos-as-well is the full one).",
    profiles=BOTH,
)
def _(m):
    copy = m["nobos_soft_copy"] >= m["bos_soft_copy"] - 0.02
    loss = m["nobos_soft_excess"] <= m["bos_soft_excess"] + 0.02
    return copy and loss, f"copy {m['nobos_soft_copy']:.4f} vs {m['bos_soft_copy']:.4f}"


@CHAPTER.claim(
    "no-bos-as-well",
    "Without BOS, softmax learns the language as well as with it: its mean loss above the best "
    "predictor is within 0.002 nats per token of softmax's with BOS, and its copy accuracy within 0.002.",
)
def _(m):
    loss = abs(m["nobos_soft_excess"] - m["bos_soft_excess"]) <= 0.002
    copy = m["nobos_soft_copy"] >= m["bos_soft_copy"] - 0.002
    return loss and copy, (
        f"above the best {m['nobos_soft_excess']:.4f} vs {m['bos_soft_excess']:.4f}; "
        f"copy {m['nobos_soft_copy']:.4f} vs {m['bos_soft_copy']:.4f}"
    )


@CHAPTER.claim(
    "no-bos-no-head-parks",
    "Without BOS, no head of any rule, in either layer, puts on average more than ε = 0.3 on the first token "
    "at ordinary queries, nor more than half its weight at triggers, so none parks at either kind of query.",
)
def _(m):
    ok = m["nobos_every_first_max"] < SINK_EPS and m["nobos_every_first_trig_max"] <= PARK
    return ok, (
        f"ordinary ≤ {_up(m['nobos_every_first_max'])}; triggers: largest {m['nobos_every_first_trig_max']:.3f}"
    )


@CHAPTER.claim(
    "second-layer-even-no-bos",
    "Without BOS too, the second layer's softmax heads spread their rows evenly: each puts within 0.002 of "
    "an even spread's share on the first token, and the rows' entropy is at least 0.9998 of the uniform row's.",
)
def _(m):
    near = max(abs(m["nb_l1_first_min"] - m["even"]), abs(m["nb_l1_first_max"] - m["even"])) < 0.002
    ok = near and m["nb_l1_entropy_min"] >= 0.9998
    return ok, (
        f"first token {_span(m['nb_l1_first_min'], m['nb_l1_first_max'], 3)} (even {m['even']:.4f}); "
        f"entropy ≥ {_down(m['nb_l1_entropy_min'], 4)}"
    )


@CHAPTER.claim(
    "no-bos-first-pull",
    "Without BOS, the first token still pulls: at ordinary queries every first-layer softmax head puts "
    "more than an even spread's share on it, some head that copies over twice that share, and in a "
    "head that does not copy it takes a row's largest weight in over half the ordinary rows.",
)
def _(m):
    ok = m["nb_first_over_even"] > 2 and m["nb_copy_first_max"] > 2 * m["even"] and m["nb_first_min"] > m["even"]
    ok = ok and m["top_first_max"] > 0.5 and not m["top_first_copies"]
    return ok, (
        f"all ≥ {_down(m['nb_first_min'])}, copying heads {_span(m['nb_copy_first_min'], m['nb_copy_first_max'])} "
        f"(even {m['even']:.3f}); first token on top in at most {_up(m['top_first_max'])} of a head's rows"
    )


@CHAPTER.claim(
    "no-bos-top-keys",
    "Without BOS, in every first-layer softmax head the query itself takes a row's largest weight in under "
    "5% of the ordinary rows, and the token before it in 5% to 45%; in some head over 40% of the rows "
    "put over half their weight on one key.",
)
def _(m):
    ok = m["top_self_max"] < 0.05 and 0.05 <= m["top_previous_min"] and m["top_previous_max"] <= 0.45
    ok = ok and m["where_over_half_max"] > 0.4
    return ok, (
        f"self ≤ {_up(m['top_self_max'])}; previous {_span(m['top_previous_min'], m['top_previous_max'])}; "
        f"rows over half ≤ {_up(m['where_over_half_max'])}"
    )


@CHAPTER.claim(
    "second-layer-not-off",
    "With BOS, ReLU's second-layer rows are switched off (mean row weight under 0.01 at ordinary "
    "queries) in every seed, sigmoid's in some seeds but not all, softmax1's and sink_logit's in none; "
    "those two keep a mean over seeds of over 0.2 on the tokens.",
)
def _(m):
    relu = m["relu_l1_row_seed_max"] < 0.01
    sigmoid = 0 < m["sigmoid_l1_n_off"] < m["n_seeds"]
    phantom = min(m["softmax1_l1_row_seed_min"], m["sink_logit_l1_row_seed_min"]) >= 0.01
    on = min(m["softmax1_l1_row"], m["sink_logit_l1_row"])
    return relu and sigmoid and phantom and on > 0.2, (
        f"ReLU seeds ≤ {_up(m['relu_l1_row_seed_max'])}; sigmoid off in {m['sigmoid_l1_n_off']} of "
        f"{m['n_seeds']} (seeds {_span(m['sigmoid_l1_row_seed_min'], m['sigmoid_l1_row_seed_max'])}); "
        f"softmax1 and sink_logit ≥ {_down(on)}"
    )


@CHAPTER.claim(
    "no-bos-rows-spread",
    "Without BOS, in every first-layer softmax head a row's largest weight averages at most about half "
    "(under 0.55) over the ordinary rows, and the heads that do not copy keep an entropy of at least 0.9 "
    "of the uniform row's.",
)
def _(m):
    ok = m["where_largest_max"] < 0.55 and m["nb_rest_entropy_min"] >= 0.9
    return ok, f"mean largest weight ≤ {_up(m['where_largest_max'])}; entropy ≥ {_down(m['nb_rest_entropy_min'])}"


@CHAPTER.claim(
    "no-bos-single-rows",
    "Without BOS, single ordinary rows of a first-layer softmax head can put over 0.9 of their weight on one key.",
)
def _(m):
    return m["where_row_top"] > 0.9, (
        f"largest single weight {m['where_row_top']:.3f}; "
        f"rows over 0.5: at most {_up(m['where_over_half_max'])} of a head's"
    )


@CHAPTER.claim(
    "leavers-look-back",
    "At triggers, every first-layer softmax head that leaves BOS puts on average at least 0.9 of its "
    "weight on the token before the trigger, the one to copy; without BOS, every copying head at least 0.8.",
)
def _(m):
    ok = m["look_n"] > 0 and m["look_previous_min"] >= 0.9 and m["nb_look_n"] > 0
    ok = ok and m["nb_look_previous_min"] >= 0.8
    return ok, (
        f"{m['look_n']} heads: {_span(m['look_previous_min'], m['look_previous_max'], 3)}; without BOS "
        f"{m['nb_look_n']}: {_span(m['nb_look_previous_min'], m['nb_look_previous_max'], 3)}"
    )


@CHAPTER.claim(
    "course-levelled",
    "The first-layer softmax heads had levelled off by the end: over at least the last 300 steps "
    "every head stayed within 0.01 of its final weight on BOS.",
)
def _(m):
    return m["course_flat"] >= 300, f"flat over the last {m['course_flat']} steps (from step {m['course_settled']})"


@CHAPTER.claim(
    "course-late-rise",
    "Over the second half of training some softmax head still rose by more than 0.5, to a final weight "
    "over 0.999 (the text prints it to four figures).",
)
def _(m):
    end, to = m["course_rise_end"], m["course_rise_to"]
    ok = m["course_rise"] > 0.5 and to > 0.999
    if ok:  # the printed end is the measured one to its four figures
        ok = abs(printed(end) - to) <= 0.5 * 10.0 ** (math.floor(math.log10(to)) - 3)
    return ok, (
        f"seed {m['course_rise_seed']} head {m['course_rise_head']}: "
        f"{m['course_rise_from']:.2f} at step {m['course_mid_step']:,}, {end} at the end"
    )


@CHAPTER.claim(
    "off-rules-parked-first",
    "All but one of softmax1's and sink_logit's first-layer heads first rose towards BOS (over 0.5 of "
    "their weight, averaged over every query, at some recorded step), with peaks from 0.55 to 0.9; the "
    "other peaked under 0.5. All left BOS for good before the last 30% of training.",
)
def _(m):
    parked = m["off_n_heads"] - m["off_n_parked"] == 1 and m["off_low_peak"] < PARKED
    parked = parked and m["off_parked_peak_min"] >= 0.55 and m["off_peak"] <= 0.9
    ok = parked and m["off_left"] <= 0.7 * m["steps"]
    return ok, (
        f"{m['off_n_parked']} of {m['off_n_heads']} parked (peaks {_span(m['off_parked_peak_min'], m['off_peak'], 3)}"
        f"); the other ({m['off_low_model']} seed {m['off_low_seed']} head "
        f"{m['off_low_head']}) {m['off_low_peak']:.3f}; last above {LEAVE:g} at step {m['off_left']}"
    )


@CHAPTER.claim(
    "course-two-paces",
    "The first-layer softmax heads that copy came within 0.05 of their final weight on BOS in the first "
    "half of training; those that stay on BOS at triggers, whose final weights are at least 0.999, only in "
    "the second half.",
)
def _(m):
    ok = m["course_n_stay"] > 0 and m["course_copy_reach_max"] <= m["steps"] / 2 < m["course_stay_reach_min"]
    ok = ok and m["course_stay_end_min"] >= 0.999
    return ok, (
        f"copying heads by step {m['course_copy_reach_min']} to {m['course_copy_reach_max']}; staying heads at "
        f"steps {m['course_stay_reach_min']} to {m['course_stay_reach_max']}"
    )


@CHAPTER.claim(
    "course-copy-to-stay",
    f"At least two first-layer softmax heads that stay on BOS at triggers first spent at least {SAT} "
    f"steps in all (recorded steps times the interval) within {NEAR:g} of the copying heads' final weight on "
    "BOS, before they rose to their own; not in one stretch: the longest unbroken one is shorter than that.",
)
def _(m):
    ok = m["course_n_sat"] >= 2 and m["course_sat_run_max"] < m["course_sat_steps_min"]
    return ok, (
        f"{m['course_n_sat']} of {m['course_n_stay']}, each for ≥ {m['course_sat_steps_min']} steps from step "
        f"{m['course_sat_from']} (level {m['course_copy_level']:.3f}), at most {m['course_sat_run_max']} in a row; "
        f"final weight reached at steps {m['course_sat_up_min']} to {m['course_sat_up_max']}"
    )


@CHAPTER.claim(
    "no-bos-never-sinks",
    "Without BOS, no first-layer softmax head put more than ε = 0.3 on the first token at any recorded step.",
)
def _(m):
    return m["nobos_course_max"] < SINK_EPS, f"largest {m['nobos_course_max']:.3f}"


@CHAPTER.claim(
    "sink-follows-position",
    "Fed sequences without BOS, the models trained with BOS put on average over seeds over 0.75 of "
    "their first-layer weight on the first real token, and over 0.7 in every seed.",
)
def _(m):
    return m["pos_first"] > 0.75 and m["pos_first_min"] > 0.7, (
        f"{m['pos_first']:.3f}, seeds ≥ {_down(m['pos_first_min'], 3)} (with BOS, on BOS: {m['pos_bos']:.3f})"
    )


@CHAPTER.claim(
    "sink-follows-every-token",
    "Fed sequences without BOS, the models trained with BOS put over half their first-layer weight on "
    "the first real token whatever it is: for every first token, in every seed.",
)
def _(m):
    return m["pos_token_min"] > 0.5, (
        f"{_span(m['pos_token_min'], m['pos_token_max'], 3)} over {m['pos_n_tokens']} first tokens"
    )


@CHAPTER.claim(
    "missing-bos-costs",
    "Without BOS, the models trained with it end over three times as far above the best "
    "predictor as on their own sequences, or as the models trained without BOS.",
)
def _(m):
    ok = m["pos_excess"] > 3 * max(m["pos_excess_own"], m["pos_excess_plain"])
    return ok, f"{m['pos_excess']:.3f} against {m['pos_excess_own']:.3f} and {m['pos_excess_plain']:.3f}"


@CHAPTER.claim(
    "every-head-passes",
    "Replacing any one head's output at ordinary queries by zero, or by its mean over those queries, "
    "moves the loss by at most the tolerance, for every head of every rule, with BOS and without.",
)
def _(m):
    return m["n_nothing"] == m["n_heads"], (
        f"{m['n_nothing']} of {m['n_heads']}; largest {m['zero_max']:.2g} (zero), {m['mean_max']:.2g} (mean)"
    )


@CHAPTER.claim(
    "tolerance-coarse",
    "The tolerance is over a third of softmax's mean loss above the best predictor (with BOS).",
)
def _(m):
    return m["tol_over_excess"] > 1 / 3, f"{m['tol_over_excess']:.2f} of it"


@CHAPTER.claim(
    "sets-move-no-bos",
    "Between Table 7.1's fresh sequences and Table 7.3's, the mean loss above the best of the softmax "
    "model trained without BOS moves by more than the largest gap between rules with BOS in Table 7.1.",
)
def _(m):
    return m["set_shift_nobos"] > m["gap_abs"], (
        f"moves {m['set_shift_nobos']:.2g}; largest gap between rules {m['gap_abs']:.2g}"
    )


@CHAPTER.claim(
    "sets-move-bos-less",
    "Between the same two draws, the mean loss above the best of the softmax model trained with BOS "
    "and fed it moves by less than the largest gap between rules with BOS in Table 7.1, but by more "
    "than the smallest.",
)
def _(m):
    ok = m["gap_abs_min"] < m["set_shift_bos"] < m["gap_abs"]
    return ok, f"moves {m['set_shift_bos']:.2g}; gaps between rules {_span(m['gap_abs_min'], m['gap_abs'])}"


@CHAPTER.claim(
    "sets-swap-order",
    "The softmax models trained with and without BOS swap order (mean loss above the best) between "
    "Table 7.1's fresh sequences and Table 7.3's.",
)
def _(m):
    return m["set_flip"], f"order swaps: {m['set_flip']}"


@CHAPTER.claim(
    "layer-spared",
    "Zeroing the whole first layer at ordinary queries moves the loss by less than the tolerance in every model.",
)
def _(m):
    return m["layer0_ord_abs"] <= WRITE_TOL, f"largest {m['layer0_ord_abs']:.2g}"


@CHAPTER.claim(
    "triggers-need-the-layer",
    "At triggers, zeroing the first layer costs more than the tolerance in every model, and more "
    "than zeroing any one head.",
    profiles=BOTH,
)
def _(m):
    ok = m["layer0_trig_min"] > WRITE_TOL and m["layer0_trig_min"] > m["single_trig_max"]
    return ok, f"layer ≥ {_down(m['layer0_trig_min'])}; one head ≤ {_up(m['single_trig_max'])}"


@CHAPTER.claim("copy-shared", "In most runs no single head costs a tenth of what the first layer costs at triggers.")
def _(m):
    return m["n_shared"] > m["n_single"] / 2, f"{m['n_shared']} of {m['n_single']} runs"


@CHAPTER.claim(
    "second-layer-idle",
    "Zeroing the softmax models' second layer at every query costs less than the tolerance, in the models "
    "trained with BOS and in those trained without.",
    profiles=BOTH,
)
def _(m):
    ok = max(m["soft_l1_abs"], m["soft_l1_both_abs"]) <= WRITE_TOL
    return ok, f"largest {m['soft_l1_both_abs']:.2g} (with BOS {m['soft_l1_abs']:.2g})"


@CHAPTER.claim(
    "no-job-parks-or-not",
    "Having no job does not decide whether a head parks: with BOS, the second-layer softmax heads and the "
    "first-layer softmax heads that stay on BOS all cost under the tolerance when zeroed, yet the first "
    "park (over half their weight on BOS) at both kinds of query and the second do not.",
)
def _(m):
    idle = m["n_stay"] > 0 and max(m["soft_l1_abs"], m["idle_cost"]) <= WRITE_TOL
    park = min(m["soft_first_min"], m["stay_trigger_min"]) > PARK and m["l1_first_max"] <= PARK
    return idle and park, (
        f"costs: second layer ≤ {_up(m['soft_l1_abs'])}, staying heads ≤ {_up(m['idle_cost'])}; on BOS: staying "
        f"heads ≥ {_down(min(m['soft_first_min'], m['stay_trigger_min']), 3)}, second layer ≤ {_up(m['l1_first_max'])}"
    )


@CHAPTER.claim(
    "only-relu-second-layer",
    "Only the ReLU models trained with BOS have a second layer that costs more than the tolerance, in "
    "some seeds but not all.",
)
def _(m):
    ok = m["busy"] == "relu" and 0 < m["relu_l1_n_busy"] < m["n_seeds"]
    return ok, (
        f"models: {m['busy']}; {m['relu_l1_n_busy']} of {m['n_seeds']} seeds, largest {m['relu_l1_max']:.2g} "
        f"(without BOS {m['relu_nobos_l1_max']:.2g})"
    )


@CHAPTER.claim(
    "idle-heads",
    "Zeroed one at a time, the softmax heads that stay on BOS at triggers cost less than the tolerance "
    "at either kind of query.",
)
def _(m):
    return m["n_stay"] > 0 and m["idle_cost"] <= WRITE_TOL, f"{m['n_stay']} heads; largest {m['idle_cost']:.2g}"


@CHAPTER.claim(
    "tolerance-above-noise",
    "The tolerance is over 20 times the measurement's standard error, on first-layer softmax "
    "heads whose zeroing changes nothing.",
)
def _(m):
    return m["tol_over_noise"] > 20, f"{m['tol_over_noise']:.0f} times"


@CHAPTER.claim("tolerance-over-noise", "The tolerance is over 3 times the measurement's standard error.", profiles=BOTH)
def _(m):
    return m["tol_over_noise"] > 3, f"{m['tol_over_noise']:.0f} times"


@CHAPTER.claim(
    "control-with-bos",
    "With BOS, the transplant control detects most of the heads that copy.",
)
def _(m):
    return m["n_noticed"] > m["n_ctl_leave"] / 2, f"{m['n_noticed']} of {m['n_ctl_leave']}"


@CHAPTER.claim(
    "control-misses-weak",
    "The copying heads the transplant control misses with BOS add little to the copy: zeroed at triggers, each costs "
    "under a hundredth of what its whole first layer costs there, and each writes copies (mean output "
    "norm at triggers) smaller than the median detected head's.",
)
def _(m):
    ok = m["n_missed"] > 0 and m["missed_trig_share_max"] < 0.01 and m["missed_norm_max"] < m["noticed_norm_median"]
    return ok, (
        f"{m['n_missed']} missed: at triggers ≤ {_up(m['missed_trig_max'])} (≤ {_up(m['missed_trig_share_max'])} of "
        f"the layer); norm ≤ {_up(m['missed_norm_max'], 3)} (detected: median {m['noticed_norm_median']:.2f}, "
        f"least {m['noticed_norm_min']:.2f})"
    )


@CHAPTER.claim(
    "control-continuum",
    "With BOS, the copying heads the transplant control detects include one that costs less to zero at "
    "triggers than a missed head, and one with a smaller mean output norm there; the least cost it detects "
    "is under 1.5 times the tolerance.",
)
def _(m):
    ok = m["noticed_trig_min"] < m["missed_trig_max"] and m["noticed_norm_min"] < m["missed_norm_max"]
    ok = ok and WRITE_TOL < m["noticed_ctl_min"] < 1.5 * WRITE_TOL
    return ok, (
        f"detected: at triggers ≥ {_down(m['noticed_trig_min'])} (missed ≤ {_up(m['missed_trig_max'])}), norm ≥ "
        f"{_down(m['noticed_norm_min'], 3)} (missed ≤ {_up(m['missed_norm_max'], 3)}); "
        f"control ≥ {_down(m['noticed_ctl_min'])}"
    )


@CHAPTER.claim("control-can-fail", "With BOS, the transplant control detects some head that copies.", profiles=BOTH)
def _(m):
    return m["n_noticed"] > 0, f"{m['n_noticed']} of {m['n_ctl_leave']}"


@CHAPTER.claim(
    "control-without-bos",
    "Without BOS, the same transplant control detects no head, copying or not, though some heads copy: "
    "there the test has no working positive control.",
)
def _(m):
    ok = m["nb_n_above"] == 0 and m["nb_n_copy_above"] == 0 and m["nb_n_leave"] > 0
    return ok, (
        f"{m['nb_n_copy_above']} of {m['nb_n_leave']} copying heads, {m['nb_n_above']} of {m['nb_n_heads']} "
        f"in all; largest {m['nb_ctl_max']:.2g}"
    )


@CHAPTER.claim(
    "parked-quiet",
    "With BOS, every copying head writes at most a tenth of its trigger-time output at "
    "ordinary queries, the ones the transplant control detects included.",
)
def _(m):
    ok = m["n_noticed"] > 0 and m["n_noticed_quiet"] == m["n_noticed"] and m["copy_ratio_max"] < 0.1
    return ok, f"detected {_span(m['noticed_ratio_min'], m['noticed_ratio_max'])}; all ≤ {_up(m['copy_ratio_max'])}"


@CHAPTER.claim(
    "loud-and-quiet",
    "Without BOS, the copying heads write over a quarter and under half of their trigger-time output "
    "at ordinary queries, and their copies are over twice as quiet as with BOS.",
)
def _(m):
    ok = 0.25 < m["nb_copy_ratio_min"] and m["nb_copy_ratio_max"] < 0.5 and m["loud"] > 2
    return ok, (f"ratio {_span(m['nb_copy_ratio_min'], m['nb_copy_ratio_max'])}; copies {m['loud']:.1f} times quieter")


@CHAPTER.claim(
    "louder-at-ordinary",
    "Without BOS, the copying heads' mean output norm at ordinary queries is over twice that with BOS, "
    "on average over the copying heads.",
)
def _(m):
    return m["nb_n_copy"] > 0 and m["norm_factor"] > 2, f"{m['norm_factor']:.2f} times"


@CHAPTER.claim(
    "single-head-range",
    "At triggers, the most useful single first-layer head costs under the tolerance in some run, "
    "and at most 0.25 nats per token in any.",
)
def _(m):
    ok = m["single_trig_min"] < WRITE_TOL and m["single_trig_max"] <= 0.25
    return ok, _span(m["single_trig_min"], m["single_trig_max"])


@CHAPTER.claim(
    "detected-value-small",
    "In the copying heads the transplant control detects, the norm of BOS's value through the output map is under a "
    "tenth of the median over the other positions of their value norms.",
)
def _(m):
    return m["n_noticed"] > 0 and m["noticed_value_max"] < 0.1, f"at most {_up(m['noticed_value_max'])}"


@CHAPTER.claim(
    "no-bos-where",
    "Without BOS, a first-layer softmax head puts on average under 0.1 on the query itself and under "
    "0.25 on the token before it or on the first token; a row's largest weight averages 0.1 or more.",
)
def _(m):
    ok = m["where_self_max"] < 0.1 and max(m["where_previous_max"], m["where_first_max"]) < 0.25
    ok = ok and m["where_largest_min"] >= 0.1
    return ok, (
        f"self ≤ {_up(m['where_self_max'])}, previous ≤ {_up(m['where_previous_max'])}, first ≤ "
        f"{_up(m['where_first_max'])}; largest ≥ {_down(m['where_largest_min'])}"
    )


@CHAPTER.claim(
    "no-bos-rest-even",
    "Without BOS, the heads that do not copy put on the first token at triggers at least 0.9 of an "
    "even spread's share there (the mean of 1 / (i + 1) over the trigger queries) and under twice it.",
)
def _(m):
    even = m["nb_even_trigger"]
    ok = m["nb_n_rest"] > 0 and m["nb_rest_trig_min"] >= 0.9 * even and m["nb_rest_trig_max"] < 2 * even
    return ok, f"{_span(m['nb_rest_trig_min'], m['nb_rest_trig_max'])} (even at triggers {even:.3f})"


@CHAPTER.claim(
    "no-bos-rest-no-look",
    "Without BOS, at triggers the first-layer softmax heads that do not copy put on the token before the "
    "trigger less than an even spread gives one key there, under a tenth of what any copying head puts there.",
)
def _(m):
    ok = m["nb_n_rest"] > 0 and m["nb_rest_look_n"] == m["nb_n_rest"]
    ok = ok and m["nb_rest_look_previous_max"] < min(m["nb_even_trigger"], 0.1 * m["nb_look_previous_min"])
    return ok, (
        f"{m['nb_rest_look_n']} heads: {_span(m['nb_rest_look_previous_min'], m['nb_rest_look_previous_max'])} "
        f"(even {m['nb_even_trigger']:.3f}; copying heads ≥ {_down(m['nb_look_previous_min'])})"
    )


@CHAPTER.claim(
    "matched-in-size",
    "The transplant control on the whole first layer costs over ten times more with BOS than without in "
    "every run, its means over 50 times apart. Matched in size, the two models' ranges overlap, each way "
    "round, and their means come within a factor of 3.",
)
def _(m):
    apart = m["layer_bos_min"] > 10 * m["layer_nobos_max"] and m["raw_gap"] > 50
    up = m["scaled_max"] >= m["layer_bos_min"] and m["scaled_min"] <= m["layer_bos_max"]
    down = m["shrunk_max"] >= m["layer_nobos_min"] and m["shrunk_min"] <= m["layer_nobos_max"]
    return apart and up and down and m["matched_gap"] < 3, (
        f"with BOS {_span(m['layer_bos_min'], m['layer_bos_max'])}, without "
        f"{_span(m['layer_nobos_min'], m['layer_nobos_max'])} (means {m['raw_gap']:.0f} times apart); scaled "
        f"{_span(m['scaled_min'], m['scaled_max'])}, {_span(m['shrunk_min'], m['shrunk_max'])} "
        f"(within {_up(m['matched_gap'])} times)"
    )


# ---- the chapter's tables ----


def table_learning(result):
    """Table 7.1: per model, the loss above the best predictor's, overall and at ordinary
    targets; the copy accuracy; Sink_1^eps for the rules whose rows sum to at most one."""
    runs = runs_frame(result)
    summary = runs.groupby("model", sort=False).agg(
        **{
            "loss above the best, all targets": ("excess", mean_range),
            "loss above the best, ordinary targets": ("excess_other", mean_range),
            "copy accuracy": ("copy_acc", mean_range),
            "Sink₁^ε": ("sink", lambda v: mean_range(v, 2)),
        }
    )
    unnormalised = [name for name in summary.index if name.split(" ")[0] in ("relu", "sigmoid")]
    summary.loc[unnormalised, "Sink₁^ε"] = "–"
    return table(
        summary,
        "Table 7.1. Loss above the least possible (nats per token) on 256 fresh sequences, over "
        "every target and over the targets of ordinary queries; copy accuracy; "
        "Sink₁^ε, the share of all a model's heads, both layers together, whose mean weight on the first "
        "token exceeds ε. Mean over seeds (smallest–largest).",
    )


def table_layers(result):
    """Table 7.2: per model and layer, the weight on token 0 and the row's whole weight at
    ordinary and at trigger queries."""
    columns = {
        "first_ordinary": "on token 0, ordinary",
        "first_trigger": "on token 0, triggers",
        "row_ordinary": "row weight, ordinary",
        "row_trigger": "row weight, triggers",
    }
    return table(
        _seed_spans(heads_frame(result), ["model", "layer"], columns),
        "Table 7.2. Per layer: the weight on token 0 and the row weight (a row's weights summed: "
        "1 for softmax, less with a phantom slot, no fixed sum for ReLU and sigmoid), at ordinary and "
        "trigger queries. Mean over heads, then seeds (smallest–largest seed).",
    )


def table_positional(p: pd.DataFrame):
    """Table 7.3: the softmax models with BOS and without, fed sequences with and without it
    (``p``: :func:`positional`)."""
    p = p.assign(
        model=np.where(p["trained with BOS"], "trained with BOS", "trained without BOS"),
        fed=np.where(p["fed BOS"], "with BOS", "without BOS"),
    )
    summary = p.groupby(["model", "fed"], sort=False).agg(
        **{"layer 0 on token 0": ("first", lambda v: mean_range(v, 2)), "loss above the best": ("excess", mean_range)}
    )
    return table(
        summary,
        "Table 7.3. Softmax models fed 256 fresh sequences with and without BOS: another draw than "
        "Table 7.1's. Mean over seeds (range).",
    )


def _seed_spans(frame: pd.DataFrame, by: list[str], columns: dict[str, str]) -> pd.DataFrame:
    """:func:`attnsink.analysis.seed_means`, with '–' for a group that has no value."""
    per_seed = frame.groupby([*by, "seed"], sort=False)[list(columns)].mean()

    def span(v):
        v = v.dropna()
        return mean_range(v, 2) if len(v) else "–"

    return per_seed.groupby(level=list(range(len(by))), sort=False).agg(
        **{name: (col, span) for col, name in columns.items()}
    )


def table_writes(result):
    """Table 7.4: per model and layer, what the heads write at ordinary queries."""
    heads = heads_frame(result)
    carrying = heads.assign(out_ratio=heads["out_ratio"].where(heads["row_trigger"] >= ROW_MIN))
    columns = {"out_ratio": "output, ordinary / triggers", "first_value": "token 0 value / median"}
    ablation = heads.groupby(["model", "layer"], sort=False).agg(
        **{
            "largest |change|, ordinary": ("ablate_zero", lambda v: v.abs().max()),
            "largest |change|, mean, ordinary": ("ablate_mean", lambda v: v.abs().max()),
            "largest change, triggers": ("ablate_trigger_zero", "max"),
            "costs nothing (both ablations)": ("writes", lambda w: f"{(w == 'nothing').sum()} of {len(w)}"),
        }
    )
    return table(
        _seed_spans(carrying, ["model", "layer"], columns).join(ablation),
        "Table 7.4. Per layer: a head's mean output norm at ordinary over trigger queries; the norm "
        "of token 0's value through the output map over the median, over the other positions, of "
        "theirs (each averaged over the sequences); one head's output replaced by zero, or at "
        "ordinary queries by its mean there (change in loss, nats per token); and the heads whose "
        "removal costs nothing: neither replacement at ordinary queries moves the loss by more than "
        "the tolerance. That does not show a head writes nothing.",
        precision=3,
    )


def count_corners(fig, result, near: float = 0.05) -> None:
    """Figure 7.1's counts: in each panel of ``fig`` (:func:`attnsink.plots.backcopy_heads`,
    titled by model), how many heads sit within ``near`` of each top corner, where many dots
    fall on one (top left: parks, and leaves at triggers; top right: parks at both)."""
    heads = heads_frame(result)
    corners = {(0, 1): ("left", "top"), (1, 1): ("right", "top")}
    for ax in fig.axes:
        part = heads[heads["model"] == ax.get_title()]
        for (x, y), (ha, va) in corners.items():
            at = ((part["first_trigger"] - x).abs() < near) & ((part["first_ordinary"] - y).abs() < near)
            n = int(at.sum())
            if n > 1:
                ax.annotate(f"{n} heads", (x, y), (x + (0.08 if x == 0 else -0.08), y - 0.08), ha=ha, va=va, fontsize=9)


def table_joint(result):
    """Table 7.5: every head of a layer zeroed at once."""
    from ..prose import readable

    runs = runs_frame(result)
    joint = runs.assign(trig=runs["layer_zero_trigger"].str[0], ordinary=runs["layer_zero_ordinary"].str[0])
    joint["later"] = runs["layer_zero_all"].str[1]
    summary = joint.groupby("model", sort=False).agg(
        **{
            "layer 0 at triggers": ("trig", lambda v: mean_range(v, 2)),
            "layer 0 at ordinary, largest |change|": ("ordinary", lambda v: readable(float(v.abs().max()))),
            "layer 1 everywhere, largest |change|": ("later", lambda v: readable(float(v.abs().max()))),
        }
    )
    return table(summary, "Table 7.5. A whole layer zeroed at once: change in loss, nats per token, over seeds.")
