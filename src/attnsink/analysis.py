"""The analyses behind the tables of chapters 3 to 5, one function per table.

Each function takes trained models (or an experiment's result) and returns what a chapter
shows, a :class:`pandas.DataFrame` or a number, so that a chapter's visible cell is one call
and its glue and asserts sit in hidden cells. The terms of the per-head inequality, whose
certified hull distances are the slow part, go through :func:`attnsink.cache.memoized`: a
warm rebuild reads them from the results cache.

Experiment results are read through what every :class:`~attnsink.experiments.ExperimentResult`
has: ``results`` (key -> trained runs, each with ``seed`` and ``model``), ``runs`` (one JSON
record per run), ``heads()`` (one row per head) and ``task``.

The last section holds the frames behind the figures: what :mod:`attnsink.plots` reshapes
records into before it draws them (a training history in long form, a model's label, ...).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ._checks import check_int
from .cache import memoized
from .construct import cancelling_heads
from .metrics import evaluate, head_bound_terms
from .model import AttentionModel
from .task import Batch, TriggerTask

if TYPE_CHECKING:
    from .training import TrainResult

# ---- chapter 3: ReLU escapes ----


@torch.no_grad()
def noise_free_trigger_rms(model: AttentionModel, task: TriggerTask) -> float:
    """Root mean square, over trigger positions j = 2..L-1, of the error at the trigger on
    noise-free sequences (every content coordinate 0): the error a head whose scale counts
    positions, not the averaged tokens, cannot avoid (chapter "ReLU escapes")."""
    j = torch.arange(2, task.seq_len)
    noise = torch.full((len(j), task.n_noise_positions, task.n_noise), 0.5)  # a bit of 0.5 is 2 * 0.5 - 1 = 0
    batch = task.build(j, noise)
    y_hat, _ = model(batch.x)
    return (y_hat - batch.y)[batch.is_trigger].pow(2).sum(-1).mean().sqrt().item()


@torch.no_grad()
def relu_trigger_anatomy(runs, batch: Batch, *, positions: tuple[int, ...] = (3, 7, 12)) -> pd.DataFrame:
    """How trained one-head ReLU models solve the trigger row, one row per (seed, trigger j).

    Columns: ``j x weight on keys 1..j`` (the construction puts 1/j on each, so 1) and its
    ``spread over keys``; ``j x weight on BOS``; the diagonal and largest off-diagonal entry of
    the value map ``W_V W_O`` on the noise channels; the mean ``BOS value norm``. ``runs`` are
    trained runs (``seed``, ``model``); ``batch`` the test sequences.
    """
    rows = []
    for run in runs:
        model = run.model
        _, (attn,), (values,) = model(batch.x, return_values=True)
        vo = (model.W_V[0, 0] @ model.W_O[0, 0]).detach()
        noise = slice(2, model.d_model - 1)
        off_diagonal = vo[noise, noise] - torch.diag(vo[noise, noise].diag())
        for j in positions:
            w = attn[batch.trigger_pos == j][:, 0, j]  # the trigger row of each sequence: (sequences, keys)
            rows.append(
                {
                    "seed": run.seed,
                    "trigger j": j,
                    "j x weight on keys 1..j": (j * w[:, 1 : j + 1]).mean().item(),
                    "spread over keys": w[:, 1 : j + 1].std().item(),
                    "j x weight on BOS": (j * w[:, 0]).mean().item(),
                    "value map on noise (diagonal)": vo[noise, noise].diag().mean().item(),
                    "value map on noise (off-diagonal)": off_diagonal.abs().max().item(),
                    "BOS value norm": values[:, 0, 0].norm(dim=-1).mean().item(),
                }
            )
    return pd.DataFrame(rows)


@torch.no_grad()
def bos_trigger_share(
    model: AttentionModel, task: TriggerTask, *, trigger_pos: int = 7, n: int = 2000, seed: int = 7
) -> float:
    """The share of a one-head model's trigger channel, at the trigger row, that comes through
    BOS (its weight on BOS times BOS's value), on ``n`` sequences with the trigger at
    ``trigger_pos``."""
    batch = task.sample(n, generator=torch.Generator().manual_seed(seed), trigger_pos=trigger_pos)
    out, (attn,), (values,) = model(batch.x, return_values=True)
    from_bos = (attn[:, 0, trigger_pos, 0, None] * values[:, 0, 0]).mean(0)[1]  # channel 1 is the trigger's
    return (from_bos / out[:, trigger_pos, 1].mean()).item()


@torch.no_grad()
def content_value_norm(model: AttentionModel, batch: Batch) -> float:
    """The mean length of a one-head model's values at the non-trigger positions of ``batch``."""
    _, _, (values,) = model(batch.x, return_values=True)
    return values[:, 0][batch.is_nontrigger].norm(dim=-1).mean().item()


# ---- chapter 4: several layers ----


def cancelling_table(task: TriggerTask, margins=(0.0, 2.0, 5.0, 10.0, 20.0)) -> pd.DataFrame:
    """The two cancelling heads of :func:`attnsink.construct.cancelling_heads`, one row per
    margin: the largest error, the largest BOS weight at non-trigger rows, head 2's smallest
    BOS weight at the trigger and the largest gap of a non-trigger row to the uniform 1/(i+1)."""
    rows = []
    L = task.seq_len
    i = torch.arange(L, dtype=torch.float32)[:, None]
    uniform = torch.where(torch.arange(L) <= i, 1 / (i + 1), 0.0)  # (query, key)
    for margin in margins:
        ev = evaluate(cancelling_heads(task, margin), task)
        attn = ev.attn[0]  # (sequences, heads, query, key)
        nontrig, trig = ev.batch.is_nontrigger, ev.batch.is_trigger
        rows.append(
            {
                "margin": margin,
                "largest |error|": ev.errors["linf"],
                "largest BOS weight, non-trigger rows": attn[..., 0].permute(0, 2, 1)[nontrig].max().item(),
                "head 2's BOS weight at the trigger (min)": attn[:, 1, :, 0][trig].min().item(),
                "largest gap to 1/(i+1), non-trigger rows": (attn - uniform)
                .abs()
                .amax(-1)
                .permute(0, 2, 1)[nontrig]
                .max()
                .item(),
            }
        )
    return pd.DataFrame(rows)


def head_terms(model: AttentionModel, task: TriggerTask, *, n: int = 30, iters: int = 1000) -> pd.DataFrame:
    """:func:`attnsink.metrics.head_bound_terms` as a table, one row per (sequence, row, layer,
    head), with ``lhs`` = mass off BOS x D and ``violated`` when lhs exceeds the move plus the
    float32 slack. Kept in the results cache."""
    terms = memoized(head_bound_terms)(model, task, n=n, iters=iters)
    frame = pd.DataFrame({k: v.numpy() for k, v in terms.items()})
    frame["lhs"] = frame["mass_off_bos"] * frame["d_lower"]
    frame["violated"] = frame["lhs"] > frame["moved"] + frame["slack"] + 1e-12
    return frame


def bound_check(model: AttentionModel, task: TriggerTask, *, n: int = 30, iters: int = 1000) -> dict:
    """The per-head inequality checked on one model: how many (sequence, row, head) triples,
    how many violate it, and the medians of its terms."""
    t = head_terms(model, task, n=n, iters=iters)
    return {
        "(sequence, row, head) triples": len(t),
        "violations": int(t["violated"].sum()),
        "median mass off BOS": t["mass_off_bos"].median(),
        "median D": t["d_lower"].median(),
        "largest slack": t["slack"].max(),
        "median lhs / move": (t["lhs"] / t["moved"]).median(),
    }


def model_name(n_layers: int, n_heads: int) -> str:
    """'2 x 2' for two layers of two heads."""
    return f"{n_layers} x {n_heads}"


def trained_head_terms(result, *, attention: str = "softmax", n: int = 30, iters: int = 1000) -> pd.DataFrame:
    """:func:`head_terms` of every ``attention`` model of a ``multi_layer`` result, with
    ``model`` ('2 x 2') and ``seed`` columns."""
    frames = []
    for (rule, n_layers, n_heads), runs in result.results.items():
        if rule != attention:
            continue
        for run in runs:
            frames.append(
                head_terms(run.model, result.task, n=n, iters=iters).assign(
                    model=model_name(n_layers, n_heads), seed=run.seed
                )
            )
    return pd.concat(frames, ignore_index=True)


def per_head_terms(terms: pd.DataFrame, heads: pd.DataFrame) -> pd.DataFrame:
    """The inequality's terms averaged per head (``bos_mass``, ``output``, ``move``, ``D``,
    ``layer_move``) next to the head's kind from ``heads`` (an experiment's ``heads()``)."""
    per_head = (
        terms.groupby(["model", "seed", "layer", "head"])
        .agg(
            bos_mass=("mass_off_bos", lambda m: 1 - m.mean()),
            output=("out", "mean"),
            move=("moved", "mean"),
            D=("d_lower", "mean"),
            layer_move=("layer_moved", "mean"),
        )
        .reset_index()
    )
    kinds = heads.assign(model=[model_name(a, b) for a, b in zip(heads["n_layers"], heads["n_heads"])])
    return per_head.merge(kinds[["model", "seed", "layer", "head", "kind"]], on=["model", "seed", "layer", "head"])


def kinds_phrase(kind: pd.Series, seeds: int) -> str:
    """'all 12 heads of the 3 seeds are sinks', or the count of every kind present."""
    check_int("seeds", seeds, 1)
    counts = kind.value_counts()
    total = f"{len(kind)} heads of the {'one seed' if seeds == 1 else f'{seeds} seeds'}"
    if len(counts) == 1:
        return f"all {total} are {_kind_word(counts.index[0], 2)}"
    return f"of the {total}, " + ", ".join(
        f"{n} {'is' if n == 1 else 'are'} {_kind_word(k, n)}" for k, n in counts.items()
    )


def _kind_word(kind: str, n: int) -> str:
    """A head kind after "is"/"are": the noun "sink" takes a number ("a sink", "sinks"); the
    other kinds ("off", "dormant", "diffuse") are adjectives."""
    if kind != "sink":
        return kind
    return "a sink" if n == 1 else "sinks"


def cancellation_summary(result, per_head: pd.DataFrame, *, attention: str = "softmax") -> pd.DataFrame:
    """One row per ``attention`` model of a ``multi_layer`` result: its heads by kind, the
    largest BOS mass, the mean move of sinks and of diffuse heads, the smallest mean D of a
    diffuse head, the largest layer move and the mean length of the model's update at
    non-trigger rows (what it adds to its input there)."""
    rows = []
    for (rule, n_layers, n_heads), runs in result.results.items():
        if rule != attention:
            continue
        for run in runs:
            g = per_head[(per_head["model"] == model_name(n_layers, n_heads)) & (per_head["seed"] == run.seed)]
            diffuse = g["kind"] == "diffuse"
            ev = evaluate(run.model, result.task)
            update = (ev.y_hat - ev.batch.x).norm(dim=-1)[ev.batch.is_nontrigger]
            rows.append(
                {
                    "model": model_name(n_layers, n_heads),
                    "seed": run.seed,
                    **{kind: int((g["kind"] == kind).sum()) for kind in ("sink", "dormant", "diffuse")},
                    "largest BOS mass": g["bos_mass"].max(),
                    "mean move, sinks": g.loc[~diffuse, "move"].mean(),
                    "mean move, diffuse": g.loc[diffuse, "move"].mean(),
                    "smallest mean D, diffuse": g.loc[diffuse, "D"].min(),
                    "largest layer move": g["layer_move"].max(),
                    "mean |update|, non-trigger rows": update.mean().item(),
                }
            )
    return pd.DataFrame(rows)


# ---- chapter 5: beyond the theorem ----


def spread(values: pd.Series) -> str:
    """'0.044 (0.040–0.048)': :func:`mean_range` to three decimals."""
    return mean_range(values)


def block_standard_error(values, block: int) -> float:
    """The standard error of the mean of ``values``, a sequence in order (losses of
    consecutive text windows, say), from the means of its ``block`` consecutive values
    (batch means: neighbours may be correlated, blocks much less), the last partial block
    left out. ``ValueError`` for fewer than two whole blocks."""
    v = np.asarray(values, dtype=float)
    if not isinstance(block, int) or isinstance(block, bool) or block < 1:
        raise ValueError(f"block must be a positive integer, got {block!r}")
    n = v.size // block
    if v.ndim != 1 or n < 2:
        raise ValueError(f"values must be one sequence of at least two blocks of {block}, got shape {v.shape}")
    means = v[: n * block].reshape(n, block).mean(axis=1)
    return float(means.std(ddof=1) / np.sqrt(n))


def sign_test(above: int, n: int) -> Fraction:
    """The two-sided sign test's p-value, exactly: the chance that ``n`` fair coins give
    ``above`` heads or a count as far from ``n`` / 2 (5 of 5: 1/16; 4 of 5: 3/8; 0 of 0: 1).
    Chapters 7 and 8 use it on same-seed differences, a tie counting for neither side."""
    check_int("n", n)
    if not 0 <= above <= n:
        raise ValueError(f"above must be between 0 and n = {n}, got {above}")
    far = max(above, n - above)
    tail = sum(math.comb(n, k) for k in range(far, n + 1))
    return min(Fraction(1), Fraction(2 * tail, 2**n))


def mean_range(values, digits: int = 3) -> str:
    """'0.044 (0.040–0.048)': the mean and, in brackets, the smallest and largest value (over
    seeds, say), to ``digits`` decimals, negative numbers with a minus sign (−); the mean
    alone for one value."""
    v = np.asarray(values, dtype=float)
    if not v.size:
        raise ValueError("mean_range needs at least one value")

    def fmt(x):
        return f"{x:.{digits}f}".replace("-", "\u2212")

    mean = fmt(v.mean())
    return mean if v.size == 1 else f"{mean} ({fmt(v.min())}–{fmt(v.max())})"


def seed_means(frame: pd.DataFrame, by: list[str], columns: dict[str, str], digits: int = 3) -> pd.DataFrame:
    """Per group of ``by``, each column of ``columns`` (source column: its name in the result)
    averaged over the group's rows seed by seed (``frame``'s ``seed`` column), then written
    as :func:`mean_range` of those per-seed means: the mean over seeds and, in brackets, the
    smallest and largest seed's. With as many rows per seed, the mean is the plain mean over
    every row; NaNs are left out of a seed's mean."""
    missing = [c for c in [*by, "seed", *columns] if c not in frame.columns]
    if missing:
        raise ValueError(f"frame has no column {missing[0]!r}")
    per_seed = frame.groupby([*by, "seed"], sort=False)[list(columns)].mean()
    return per_seed.groupby(level=list(range(len(by))), sort=False).agg(
        **{name: (col, lambda v: mean_range(v.dropna(), digits)) for col, name in columns.items()}
    )


def kind_counts(kinds) -> str:
    """'3 sink, 1 dormant': how many of each kind, the commonest first."""
    return ", ".join(f"{n} {kind}" for kind, n in pd.Series(list(kinds), dtype=object).value_counts().items())


def head_spread(heads: pd.DataFrame) -> pd.DataFrame:
    """Head by head over the seeds (``heads`` with a ``model`` column): the mean and range of
    its BOS mass, attention mass and trigger-row weights, and its kinds."""
    return heads.groupby(["model", "layer", "head"], sort=False).agg(
        **{
            "BOS mass": ("bos_mass_nontrigger", spread),
            "attention mass": ("attn_mass_nontrigger", spread),
            "trigger row: on tokens 1..j": ("trigger_content_weight", spread),
            "trigger row: on BOS": ("trigger_bos_weight", spread),
            "kinds over seeds": (
                "kind",
                lambda k: ", ".join(f"{kind} \u00d7{n}" for kind, n in k.value_counts().items()),
            ),
        }
    )


def runs_frame(result, label=None) -> pd.DataFrame:
    """An experiment's run records as a table, with ``kinds``, its heads' kinds counted, and
    a ``model`` column named by ``label(record)`` when a ``label`` is given."""
    runs = pd.DataFrame(result.runs)
    if label is not None:
        runs["model"] = runs.apply(label, axis=1)
    runs["kinds"] = [kind_counts(h["kind"] for h in heads) for heads in runs["heads"]]
    return runs


def blocks_summary(result) -> pd.DataFrame:
    """A ``blocks`` result per (block, attention): the largest head BOS mass of the worst seed,
    the largest error, the share of runs that met the stopping rule and the heads' kinds."""
    runs = pd.DataFrame(result.runs)
    table = (
        runs.groupby(["blocks", "attention"], sort=False)
        .agg(
            largest_head_BOS_mass=("max_head_bos_mass_nontrigger", "min"),
            linf=("linf", "max"),
            stopped=("stopped_early", "mean"),
        )
        .rename(columns={"largest_head_BOS_mass": "largest head BOS mass (worst seed)"})
    )
    table["kinds (all seeds)"] = result.heads().groupby(["blocks", "attention"], sort=False)["kind"].apply(kind_counts)
    return table


def sweep_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """A sweep's runs per (swept parameter, attention): the smallest BOS mass, the largest
    attention mass, the median steps, the share that met the stopping rule, the largest error."""
    return runs.groupby(["swept", "attention"], sort=False).agg(
        min_bos_mass=("bos_mass_nontrigger", "min"),
        max_attn_mass=("attn_mass_nontrigger", "max"),
        median_steps=("steps", "median"),
        stopped=("stopped_early", "mean"),
        max_linf=("linf", "max"),
    )


def median_steps(runs: pd.DataFrame, parameter: str) -> pd.Series:
    """The median steps of a sweep's runs along ``parameter``, per (attention, value)."""
    if parameter not in set(runs["swept"]):
        raise ValueError(f"parameter must be one of the swept ones {sorted(set(runs['swept']))}, got {parameter!r}")
    return runs[runs["swept"] == parameter].groupby(["attention", parameter])["steps"].median()


# ---- the frames behind the figures (attnsink.plots draws them) ----


def history_frame(results: dict[str, list[TrainResult]]) -> pd.DataFrame:
    """Long-form training history: one row per (rule, seed, step); BOS mass averaged over heads."""
    frames = []
    for name, runs in results.items():
        for r in runs:
            h = r.history
            frames.append(
                pd.DataFrame(
                    {
                        "attention": name,
                        "seed": r.seed,
                        "step": h["step"],
                        "loss": h["loss"],
                        "linf": h["linf"],
                        "bos_mass": h["bos_mass"].reshape(len(h["step"]), -1).mean(axis=1),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def model_label(run: dict) -> str:
    """A short name for a run's model, such as "softmax 2x2" or "relu 2x2 + mlp"."""
    label = f"{run['attention']} {run['n_layers']}x{run['n_heads']}"
    return label + (f" + {run['blocks']}" if run.get("blocks") else "")


def capped_error_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """A ``capped_bos`` result's runs in long form, one row per (cap, seed, quantity): the
    squared error at non-trigger rows (``measured``) and its ``lower bound from the theorem``."""
    long = runs.melt(
        id_vars=["cap", "seed"],
        value_vars=["sq_err_nontrigger_row", "sq_bound_nontrigger_row"],
        var_name="quantity",
        value_name="value",
    )
    long["quantity"] = long["quantity"].map(
        {"sq_err_nontrigger_row": "measured", "sq_bound_nontrigger_row": "lower bound from the theorem"}
    )
    return long


def backcopy_frame(runs: list[dict]) -> pd.DataFrame:
    """Language-model records as one row per (run, layer, head) (:func:`attnsink.lm.head_rows`),
    with a ``model`` column: the rule, and " (no BOS)" after it for runs without BOS."""
    from .lm import head_rows

    df = pd.DataFrame(head_rows(runs))
    df["model"] = df["attention"] + np.where(df["bos"], "", " (no BOS)")
    return df


TEXT_HEAD_KEYS = (
    "first_mean",
    "value_ratio",
    "first_share",
    "sink_rows",
    "ablate_zero",
    "ablate_mean",
    "ablate_first",
)
"""The per-head fields of the text GPTs' records (:func:`attnsink.experiments.text.text_heads`)."""


def text_heads_frame(runs: list[dict]) -> pd.DataFrame:
    """The text GPTs' heads (:func:`attnsink.experiments.text_lm`,
    :func:`attnsink.experiments.text_decay`), one row per (run, layer, head): the run's
    ``attention``, ``lr``, ``weight_decay`` and ``seed``, the ``layer`` and ``head``, and
    the head's fields of :data:`TEXT_HEAD_KEYS`."""
    rows = []
    for r in runs:
        fields = {k: np.asarray(r[k], dtype=float) for k in TEXT_HEAD_KEYS}
        layers, heads = fields["first_mean"].shape
        for layer in range(layers):
            for head in range(heads):
                rows.append(
                    {
                        **{k: r[k] for k in ("attention", "lr", "weight_decay", "seed")},
                        "layer": layer,
                        "head": head,
                        **{k: float(v[layer, head]) for k, v in fields.items()},
                    }
                )
    return pd.DataFrame(rows)


def health_frame(runs: list[dict]) -> pd.DataFrame:
    """The text GPTs' runs, one row per run: ``attention``, ``lr``, ``weight_decay``, ``seed``,
    the final ``val_loss``, and from :func:`attnsink.lm.training_health` the share of heads
    whose rows sit on one key (``collapsed_share``), whether the run ``collapsed``, the
    median head's row entropy in nats (``entropy``) and the largest layer's query-map norm
    (``query_norm``). Used in chapter 8."""
    rows = []
    for r in runs:
        h = r["health"]
        rows.append(
            {
                **{k: r[k] for k in ("attention", "lr", "weight_decay", "seed", "val_loss")},
                "collapsed_share": h["collapsed_share"],
                "collapsed": h["collapsed"],
                "entropy": float(np.nanmedian(np.asarray(h["entropy"], dtype=float))),
                "query_norm": float(np.max(h["query_norm"])),
            }
        )
    return pd.DataFrame(rows)


def sink_history_frame(runs: list[dict]) -> pd.DataFrame:
    """Language models during training, one row per (run, step, layer): the largest of the
    layer's heads' mean weights on token 0 (``weight``), with the ``panel`` (rule and
    learning rate, and the weight decay where the runs differ in it), ``seed`` and ``step``."""
    rows = []
    decays = {r.get("weight_decay") for r in runs}
    for r in runs:
        h = r["history"]
        first = np.asarray(h["first_mean"])  # (steps, layers, heads)
        panel = f"{r['attention']}, lr {r['lr']:g}" + (f", wd {r['weight_decay']:g}" if len(decays) > 1 else "")
        for i, step in enumerate(h["step"]):
            for layer in range(first.shape[1]):
                rows.append(
                    {
                        "panel": panel,
                        "seed": r["seed"],
                        "layer": layer,
                        "step": step,
                        "weight": first[i, layer].max(),
                    }
                )
    return pd.DataFrame(rows)


def scale_history_frame(runs: list[dict]) -> pd.DataFrame:
    """:func:`attnsink.experiments.text_scale`'s runs during training, one row per (run,
    measurement): the amount of text (``text``, e.g. "4.2M characters"), ``seed``, ``step``,
    the tokens seen (``tokens``) and passes over the text (``epochs``), the validation loss,
    ``Sink_1^eps`` (``sink``) and the largest mean weight on token 0 among all heads
    (``largest``)."""
    rows = []
    for r in runs:
        h = r["history"]
        first = np.asarray(h["first_mean"])  # (steps, layers, heads)
        for i, step in enumerate(h["step"]):
            rows.append(
                {
                    "text": f"{r['train_chars'] / 1e6:.2g}M characters",
                    "seed": r["seed"],
                    "step": step,
                    "tokens": h["tokens"][i],
                    "epochs": h["epochs"][i],
                    "val_loss": h["val_loss"][i],
                    "sink": h["sink"][i],
                    "largest": float(first[i].max()),
                }
            )
    return pd.DataFrame(rows)


def grid_slice(runs: pd.DataFrame, axis: str, axes: list[str], defaults: dict) -> pd.DataFrame:
    """The runs of a grid that its summary shows along ``axis``: those whose other varied
    settings (``axes``) are at ``defaults`` (the slice a one-setting-at-a-time sweep varies)
    when that slice holds two values or more of ``axis``, and otherwise all of them."""
    keep = pd.Series(True, index=runs.index)
    for other in axes:
        if other != axis and other in defaults:
            keep &= runs[other] == defaults[other]
    return runs[keep] if runs.loc[keep, axis].nunique() >= 2 else runs


def value_weight(model: AttentionModel) -> float:
    """A model's total value weight: the sum over its layers and heads of the operator norm of
    the head's value-output map ``W_V W_O``, the quantity
    :func:`attnsink.theory.cancellation_weight_floor` bounds for sink-free cancelling layers."""
    with torch.no_grad():
        maps = model.W_V.double() @ model.W_O.double()  # (layers, heads, d, d)
        return float(torch.linalg.matrix_norm(maps, ord=2).sum())


def cancelling_frontier(task: TriggerTask, c, lams, *, n: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The error a sink-free cancelling layer (:func:`attnsink.construct.cancelling_tradeoff`)
    makes on a weight budget, in the book's measure: one row per ridge weight, with ``weight``
    (the value maps' total operator norm), ``max_r`` (the largest relative amplitude error of
    the trigger's update, over trigger positions) and ``rel_err_trigger`` (the mean squared
    error at the trigger over the mean squared update, as :func:`attnsink.metrics.evaluate`
    computes it) on ``n`` test sequences of ``task`` (the residual task with BOS). Its weights
    sum to zero up to float64 rounding, so every other row is zero to that rounding."""
    from .construct import cancelling_tradeoff

    if not (task.residual and task.bos):
        raise ValueError("task must be the residual task with BOS (residual=True, bos=True)")
    batch = task.sample(n, generator=torch.Generator().manual_seed(seed))
    rows = batch.is_trigger
    update = (batch.y - batch.x)[rows].pow(2).sum(-1).double()  # |what the layer must add|^2, per sequence
    trig = rows.float().argmax(-1)  # each sequence's trigger position j
    out = []
    for point in cancelling_tradeoff(task.seq_len, c, lams):
        r = torch.tensor(point["r"], dtype=torch.float64)[trig - 2]  # r_j of each sequence's trigger
        err = (r.pow(2) * update).mean() / update.mean()
        out.append(
            {
                "lam": point["lam"],
                "weight": point["weight"],
                "max_r": float(r.abs().max()),
                "rel_err_trigger": float(err),
            }
        )
    return pd.DataFrame(out)


__all__ = [
    "noise_free_trigger_rms",
    "relu_trigger_anatomy",
    "bos_trigger_share",
    "content_value_norm",
    "cancelling_table",
    "head_terms",
    "bound_check",
    "model_name",
    "trained_head_terms",
    "per_head_terms",
    "kinds_phrase",
    "cancellation_summary",
    "spread",
    "kind_counts",
    "head_spread",
    "runs_frame",
    "blocks_summary",
    "sweep_summary",
    "median_steps",
    "history_frame",
    "model_label",
    "capped_error_frame",
    "backcopy_frame",
    "sink_history_frame",
    "scale_history_frame",
    "grid_slice",
    "value_weight",
    "cancelling_frontier",
]
