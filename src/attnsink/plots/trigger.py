"""Charts of the trigger task's measurements: training curves (chapter 1), the sink
inequality (chapters 2 and 4), its certificate and the capped-BOS trade-off (chapter 2),
head kinds, the one-layer sweeps and the sink-versus-loss timing (chapter 5), and every
rule's outcome (chapter 6), and the price of no sink on a budget (chapter 4). The frames
they draw come from :mod:`attnsink.analysis`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..analysis import capped_error_frame, history_frame, model_label
from ..metrics import HEAD_KINDS, OFF_MASS, SINK_MASS
from .style import PREDICTION_COLOURS, kind_colours

if TYPE_CHECKING:
    from ..training import TrainResult


def training_curves(results: dict[str, list[TrainResult]], *, stop_linf: float | None = None) -> plt.Figure:
    """Loss, largest error and BOS mass at non-trigger positions against the step, one line per seed.

    Shows when the sink forms relative to the drop in the loss. Used in chapter 1.
    """
    df = history_frame(results)
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    panels = [
        ("loss", "batch MSE", True),
        ("linf", "batch largest |error|", True),
        ("bos_mass", "BOS mass, non-trigger rows", False),
    ]
    for ax, (col, label, log) in zip(axes, panels):
        sns.lineplot(df, x="step", y=col, hue="attention", units="seed", estimator=None, ax=ax, lw=1.2, alpha=0.8)
        ax.set_ylabel(label)
        if log:
            ax.set_yscale("log")
        if col == "linf" and stop_linf is not None:
            ax.axhline(stop_linf, color="grey", ls="--", lw=1)
        if ax is not axes[-1]:
            ax.get_legend().remove()
    axes[-1].set_ylim(-0.03, 1.03)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def variants_summary(runs: list[dict]) -> plt.Figure:
    """Every rule, one dot per seed: BOS mass at non-trigger positions when BOS is there, and
    the relative error at the trigger when it is not. Colour: what the theory predicts."""
    df = pd.DataFrame(runs)
    order = list(dict.fromkeys(df["attention"]))
    palette = PREDICTION_COLOURS
    hue_order = [c for c in palette if c in set(df["prediction"])]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    with_bos, no_bos = df[~df["no_bos"]], df[df["no_bos"]]
    sns.stripplot(
        with_bos,
        x="bos_mass_nontrigger",
        y="attention",
        hue="prediction",
        hue_order=hue_order,
        order=order,
        palette=palette,
        ax=axes[0],
        size=7,
        jitter=0.15,
    )
    axes[0].set_xlim(-0.05, 1.05)
    axes[0].set_xlabel("BOS mass at non-trigger positions\n(task with BOS)")
    sns.stripplot(
        no_bos,
        x="rel_err_trigger",
        y="attention",
        hue="prediction",
        hue_order=hue_order,
        order=order,
        palette=palette,
        ax=axes[1],
        size=7,
        jitter=0.15,
        legend=False,
    )
    axes[1].set_xscale("log")
    axes[1].set_xlabel("relative error at the trigger\n(task without BOS)")
    axes[1].axvline(1e-2, color="grey", ls="--", lw=1)
    axes[0].set_ylabel("")
    axes[0].legend(title="theory", loc="lower left")
    sns.despine(fig)
    fig.tight_layout()
    return fig


def sink_inequality(points: pd.DataFrame, *, ylabel: str | None = None) -> plt.Figure:
    """Mass off BOS against (``|y_hat_i - y_i|`` + ``|y_hat_0 - y_0|``) / D_i^+ (an upper bound
    on D_i), one dot per non-trigger row.

    The theory chapter's inequality says every dot lies on or above the diagonal (drawn).
    ``points`` has columns ``mass_off_bos``, ``scaled_error`` and ``source`` (the legend);
    ``ylabel`` names what ``scaled_error`` holds when it is another bound of the same form.
    """
    fig, ax = plt.subplots(figsize=(6.4, 5.4))
    floor = 1e-9
    df = points.assign(
        mass_off_bos=points["mass_off_bos"].clip(lower=floor), scaled_error=points["scaled_error"].clip(lower=floor)
    )
    sns.scatterplot(df, x="mass_off_bos", y="scaled_error", hue="source", ax=ax, s=10, alpha=0.5, linewidth=0)
    lo = min(df["mass_off_bos"].min(), df["scaled_error"].min())
    ax.plot([lo, 1.0], [lo, 1.0], color="black", lw=1.2, label="bound: y = x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"mass off BOS, $1 - a_{i0}$")
    ax.set_ylabel(ylabel or r"$(\|\hat y_i - y_i\| + \|\hat y_0 - y_0\|)\,/\,D_i^+$")
    ax.legend(fontsize=8, markerscale=2)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def capped_tradeoff(records: list[dict]) -> plt.Figure:
    """Error of softmax heads whose BOS weight is capped, against the cap (one dot per seed):
    overall MSE, and the squared error at non-trigger rows next to its lower bound."""
    df = pd.DataFrame(records)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    sns.lineplot(df, x="cap", y="mse", marker="o", ax=axes[0], errorbar=None)
    sns.scatterplot(df, x="cap", y="mse", ax=axes[0], s=20, color="tab:blue")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("cap on the weight of BOS")
    axes[0].set_ylabel("test MSE")
    sns.lineplot(capped_error_frame(df), x="cap", y="value", hue="quantity", marker="o", ax=axes[1], errorbar=None)
    axes[1].set_yscale("log")
    axes[1].set_xlabel("cap on the weight of BOS")
    axes[1].set_ylabel("mean squared error, non-trigger rows")
    sns.despine(fig)
    fig.tight_layout()
    return fig


def head_kinds(heads: pd.DataFrame) -> plt.Figure:
    """Every head of every seed: its BOS mass and its attention mass at non-trigger rows, by
    model, coloured by the kind the measurements give it (:func:`attnsink.metrics.classify_head`).

    ``heads`` has one row per (run, layer, head), as ``ExperimentResult.heads()`` gives.
    """
    df = heads.assign(model=heads.apply(model_label, axis=1))
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.5 * df["model"].nunique() + 2.2), sharey=True)
    palette = kind_colours()
    for ax, (col, label, line) in zip(
        axes,
        [
            ("bos_mass_nontrigger", "BOS mass at non-trigger rows", SINK_MASS),
            ("attn_mass_nontrigger", "attention mass at non-trigger rows", OFF_MASS),
        ],
    ):
        sns.stripplot(
            df,
            x=col,
            y="model",
            hue="kind",
            hue_order=list(HEAD_KINDS),
            palette=palette,
            ax=ax,
            jitter=0.25,
            size=5,
            alpha=0.8,
        )
        ax.axvline(line, color="grey", ls="--", lw=1)
        ax.set_xlabel(label)
        ax.set_ylabel("")
    axes[0].get_legend().remove()
    sns.move_legend(axes[1], "upper left", bbox_to_anchor=(1.0, 1.0), title="kind")
    sns.despine(fig)
    fig.tight_layout()
    return fig


def sweep_metrics(runs: list[dict]) -> plt.Figure:
    """One-layer sweeps: BOS mass, steps to the stopping criterion and test error against
    sequence length, width and learning rate (one column each), softmax beside ReLU; points
    are means over seeds, bars one standard deviation."""
    df = pd.DataFrame(runs)
    swept = list(dict.fromkeys(df["swept"]))
    rows = [
        ("bos_mass_nontrigger", "BOS mass, non-trigger rows", False),
        ("steps", "steps to the criterion", True),
        ("linf", "largest |error| (test)", True),
    ]
    fig, axes = plt.subplots(len(rows), len(swept), figsize=(4.4 * len(swept), 3.0 * len(rows)), squeeze=False)
    for j, name in enumerate(swept):
        part = df[df["swept"] == name]
        for i, (col, label, log) in enumerate(rows):
            ax = axes[i, j]
            sns.pointplot(
                part,
                x=name,
                y=col,
                hue="attention",
                errorbar="sd",
                dodge=0.2,
                ax=ax,
                markersize=5,
                linewidth=1.5,
                capsize=0.1,
            )
            if log:
                ax.set_yscale("log")
            ax.set_ylabel(label if j == 0 else "")
            ax.set_xlabel(name if i == len(rows) - 1 else "")
            if (i, j) != (0, len(swept) - 1):
                ax.get_legend().remove()
    sns.despine(fig)
    fig.tight_layout()
    return fig


def sink_vs_loss_steps(runs: list[dict]) -> plt.Figure:
    """For every softmax run: the step at which the sink forms against the step at which the
    loss has dropped to a tenth of its start (:func:`attnsink.metrics.sink_timing`); the
    diagonal marks "at the same time"."""
    df = pd.DataFrame([r for r in runs if r.get("step_sink") is not None and r.get("step_loss") is not None])
    fig, ax = plt.subplots(figsize=(5.6, 4.6))
    sns.scatterplot(df, x="step_loss", y="step_sink", hue="swept", style="swept", ax=ax, s=45)
    top = max(df["step_loss"].max(), df["step_sink"].max()) * 1.1
    ax.plot([0, top], [0, top], color="grey", ls="--", lw=1)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("step at which the loss is down to 1/10")
    ax.set_ylabel("step at which BOS mass reaches 0.9")
    sns.despine(fig)
    fig.tight_layout()
    return fig


def sink_certificate(curve: pd.DataFrame, heads: pd.DataFrame) -> plt.Figure:
    """The row-1 certificate of the theory chapter against heads that exist.

    ``curve`` has columns ``mse``, ``delta`` and ``mass_off`` (the most weight off BOS at
    position 1 that the theorem allows a head with that test MSE, on all but a fraction
    delta of sequences): one line per delta. ``heads`` has ``mse``, ``mass_off`` (the
    weight off BOS at position 1 that a fraction delta of sequences exceeds, measured) and
    ``source``: one marker per head. The theorem says no marker lies above its line.
    """
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    sns.lineplot(curve, x="mse", y="mass_off", hue="delta", palette="flare", ax=ax)
    sns.scatterplot(heads, x="mse", y="mass_off", style="source", color="tab:blue", s=60, ax=ax, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(top=1.05)
    ax.set_xlabel("test MSE")
    ax.set_ylabel("weight off BOS at position 1")
    ax.legend(fontsize=8, loc="lower right")
    sns.despine(fig)
    fig.tight_layout()
    return fig


def price_frontier(front: pd.DataFrame, trained: pd.DataFrame) -> plt.Figure:
    """The price of a cap on BOS, on a budget (chapter 4): the relative error at the trigger of
    sink-free cancelling layers against their total value weight, one line per ``path`` of
    ``front`` (:func:`attnsink.analysis.cancelling_frontier`, one point per ridge weight), and
    single models as markers (``trained``: ``model``, ``value weight``, ``rel_err_trigger``),
    on log axes."""
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    greys = ["0.15", "0.45", "0.7", "0.85"]
    for (path, points), grey in zip(front.groupby("path", sort=False), greys):
        ax.plot(points["weight"], points["rel_err_trigger"], "o-", color=grey, lw=1.4, ms=3, label=path)
    sns.scatterplot(trained, x="value weight", y="rel_err_trigger", hue="model", style="model", s=60, ax=ax)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("total value weight  Σ ‖W_V W_O‖ (all heads)")
    ax.set_ylabel("relative error at the trigger")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def sink_step_share(runs: list[dict]) -> plt.Figure:
    """When the sink forms, as a share of when the loss falls (chapter 5): for every softmax run
    of a one-setting-at-a-time sweep, ``step_sink / step_loss``
    (:func:`attnsink.metrics.sink_timing`), one panel per setting swept and one dot per seed;
    below the dashed line at 1, the sink forms first. A ratio of the two steps reads the same on
    a history that keeps every k-th step."""
    df = pd.DataFrame([r for r in runs if r.get("step_sink") is not None and r.get("step_loss")])
    df = df.assign(share=df["step_sink"] / df["step_loss"])
    swept = list(dict.fromkeys(df["swept"]))
    fig, axes = plt.subplots(1, len(swept), figsize=(4.4 * len(swept), 3.6), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], swept):
        part = df[df["swept"] == name]
        sns.stripplot(part, x=name, y="share", ax=ax, color="tab:blue", size=5, jitter=0.15)
        ax.axhline(1.0, color="grey", ls="--", lw=1)
        ax.set_ylim(0, max(1.1, part["share"].max() * 1.05))
        ax.set_xlabel(name)
        ax.set_ylabel("parking step ÷ loss step" if ax is axes[0, 0] else "")
    sns.despine(fig)
    fig.tight_layout()
    return fig
