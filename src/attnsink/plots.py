"""Seaborn figures of the book, one function per figure, named for what it draws. Each
returns the Figure. Call :func:`set_theme` once first for the book's look."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch

from .metrics import HEAD_KINDS, OFF_MASS, SINK_MASS

if TYPE_CHECKING:
    from .train import TrainResult


def set_theme() -> None:
    """The book's seaborn theme (white background, notebook sizes), for every figure drawn after."""
    sns.set_theme(style="white", context="notebook")


def _heatmap(ax, matrix: np.ndarray, *, title: str, vmax: float, trigger_pos: int | None, cbar: bool = True):
    """One (query, key) map with the causally masked upper triangle left blank.

    Drawn with matplotlib's ``pcolormesh`` in seaborn's ``rocket_r`` colours, the way
    ``sns.heatmap`` draws it, but without ``sns.heatmap``'s full redraw of the figure on
    every call (it draws the whole figure to check its tick labels), which made a grid of
    n maps cost O(n^2) draws: a 4 x 4 grid took 13 s.
    """
    L = matrix.shape[0]
    hidden = np.triu(np.ones((L, L), dtype=bool), k=1)
    mesh = ax.pcolormesh(
        np.ma.masked_array(matrix, mask=hidden), cmap=sns.color_palette("rocket_r", as_cmap=True), vmin=0.0, vmax=vmax
    )
    ax.set(xlim=(0, L), ylim=(L, 0), aspect="equal")  # row 0 on top, square cells
    sns.despine(ax=ax, left=True, bottom=True)
    if cbar:
        ax.figure.colorbar(mesh, ax=ax, shrink=0.7).outline.set_linewidth(0)
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
    ticks = np.arange(0, L, 2 if L <= 32 else 8)
    ax.set_xticks(ticks + 0.5, ticks, rotation=0, fontsize=8)
    ax.set_yticks(ticks + 0.5, ticks, rotation=0, fontsize=8)
    if trigger_pos is not None:  # outline the trigger row
        ax.add_patch(plt.Rectangle((0, trigger_pos), trigger_pos + 1, 1, fill=False, edgecolor="tab:blue", lw=1.5))


def attention_mean_std(figure_attn: dict[str, torch.Tensor], trigger_pos: int) -> plt.Figure:
    """The paper's Figure 3: mean and std of attention over test sequences, one row per rule.

    ``figure_attn`` maps a rule name to (sequences, query, key) weights of a one-head model,
    all with the trigger at ``trigger_pos`` (outlined in blue). Used in chapter 1.
    """
    n = len(figure_attn)
    fig, axes = plt.subplots(n, 2, figsize=(9.5, 4.3 * n), squeeze=False)
    for row, (name, attn) in zip(axes, figure_attn.items()):
        a = attn.detach().float().cpu()
        mean, std = a.mean(dim=0).numpy(), a.std(dim=0).numpy()
        _heatmap(row[0], mean, title=f"{name}: mean", vmax=max(1.0, float(mean.max())), trigger_pos=trigger_pos)
        _heatmap(row[1], std, title=f"{name}: std", vmax=max(0.05, float(std.max())), trigger_pos=trigger_pos)
    fig.tight_layout()
    return fig


def head_grid(attn: list[torch.Tensor], trigger_pos: int | None = None, *, index: int = 0) -> plt.Figure:
    """Attention of every head of every layer on one sequence (row = layer, column = head).

    ``attn`` is the model's list of (batch, heads, query, key) tensors; ``index`` picks
    the sequence. Used for multi-layer models.
    """
    n_layers, n_heads = len(attn), attn[0].shape[1]
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(3.4 * n_heads, 3.2 * n_layers), squeeze=False)
    vmax = max(1.0, max(float(a[index].max()) for a in attn))
    for layer, a in enumerate(attn):
        for head in range(n_heads):
            ax = axes[layer, head]
            _heatmap(
                ax,
                a[index, head].detach().cpu().numpy(),
                title=f"layer {layer}, head {head}",
                vmax=vmax,
                trigger_pos=trigger_pos,
                cbar=head == n_heads - 1,
            )
            if head:
                ax.set_ylabel("")
            if layer < n_layers - 1:
                ax.set_xlabel("")
    fig.tight_layout()
    return fig


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


def sequence(x: torch.Tensor, y: torch.Tensor, trigger_pos: int) -> plt.Figure:
    """One input sequence and its target as (position, coordinate) maps. Used in chapter 1."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    lim = max(1.0, float(x.abs().max()))
    for ax, m, title in ((axes[0], x, "input x"), (axes[1], y, "target y")):
        sns.heatmap(
            m.detach().cpu().numpy(), ax=ax, cmap="vlag", vmin=-lim, vmax=lim, square=True, cbar_kws={"shrink": 0.7}
        )
        ax.set_title(title, fontsize=11)
        ax.set_xlabel("coordinate")
        ax.set_ylabel("position")
        ax.axhline(trigger_pos, color="tab:blue", lw=1.5)
        ax.axhline(trigger_pos + 1, color="tab:blue", lw=1.5)
    fig.tight_layout()
    return fig


def attention_maps(maps: dict[str, torch.Tensor], trigger_pos: int, *, ncols: int = 3) -> plt.Figure:
    """Mean attention over test sequences for several models, one panel each (title = key).

    ``maps`` maps a title to (sequences, query, key) weights; the colour scale is shared
    and starts at 0, so a head that is off shows as a blank triangle.
    """
    n = len(maps)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.4 * nrows), squeeze=False)
    means = {k: v.detach().float().cpu().mean(dim=0).numpy() for k, v in maps.items()}
    vmax = max(1.0, max(float(m.max()) for m in means.values()))
    for ax, (title, mean) in zip(axes.flat, means.items()):
        _heatmap(ax, mean, title=title, vmax=vmax, trigger_pos=trigger_pos, cbar=False)
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax in axes[:, 1:].flat:
        ax.set_ylabel("")
    for ax in axes[:-1, :].flat:
        ax.set_xlabel("")
    fig.tight_layout()
    return fig


def variants_summary(runs: list[dict]) -> plt.Figure:
    """Every rule, one dot per seed: BOS mass at non-trigger positions when BOS is there, and
    the relative error at the trigger when it is not. Colour: what the theory predicts."""
    df = pd.DataFrame(runs)
    order = list(dict.fromkeys(df["attention"]))
    palette = {"simplex": "tab:red", "partial": "tab:orange", "off state": "tab:green"}
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
    """Mass off BOS against (``|y_hat_i - y_i|`` + ``|y_hat_0 - y_0|``) / D_i, one dot per non-trigger row.

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
    ax.set_ylabel(ylabel or r"$(\|\hat y_i - y_i\| + \|\hat y_0 - y_0\|)\,/\,D_i$")
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
    long = df.melt(
        id_vars=["cap", "seed"],
        value_vars=["sq_err_nontrigger_row", "sq_bound_nontrigger_row"],
        var_name="quantity",
        value_name="value",
    )
    long["quantity"] = long["quantity"].map(
        {"sq_err_nontrigger_row": "measured", "sq_bound_nontrigger_row": "lower bound from the theorem"}
    )
    sns.lineplot(long, x="cap", y="value", hue="quantity", marker="o", ax=axes[1], errorbar=None)
    axes[1].set_yscale("log")
    axes[1].set_xlabel("cap on the weight of BOS")
    axes[1].set_ylabel("mean squared error, non-trigger rows")
    sns.despine(fig)
    fig.tight_layout()
    return fig


def model_label(run: dict) -> str:
    """A short name for a run's model, such as "softmax 2x2" or "relu 2x2 + mlp"."""
    label = f"{run['attention']} {run['n_layers']}x{run['n_heads']}"
    return label + (f" + {run['blocks']}" if run.get("blocks") else "")


def head_kinds(heads: pd.DataFrame) -> plt.Figure:
    """Every head of every seed: its BOS mass and its attention mass at non-trigger rows, by
    model, coloured by the kind the measurements give it (:func:`attnsink.metrics.classify_head`).

    ``heads`` has one row per (run, layer, head), as ``ExperimentResult.heads()`` gives.
    """
    df = heads.assign(model=heads.apply(model_label, axis=1))
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.5 * df["model"].nunique() + 2.2), sharey=True)
    cb = sns.color_palette("colorblind")
    palette = {"sink": cb[0], "dormant": cb[4], "diffuse": cb[2], "off": cb[1]}
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


def backcopy_heads(runs: list[dict]) -> plt.Figure:
    """Each head's weight on token 0 at ordinary queries against trigger queries, one panel
    per rule (and softmax without BOS), colour = layer: a dormant head sits top left (on
    token 0 at ordinary tokens, off it at triggers)."""
    from .lm import head_rows

    df = pd.DataFrame(head_rows(runs))
    df["model"] = df["attention"] + np.where(df["bos"], "", " (no BOS)")
    models = list(dict.fromkeys(df["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(3.4 * len(models), 3.4), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], models):
        part = df[df["model"] == name]
        sns.scatterplot(data=part, x="first_trigger", y="first_ordinary", hue="layer", palette="deep", ax=ax, s=40)
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
        ax.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), title=name, xlabel="weight on token 0, trigger queries")
        ax.set_ylabel("weight on token 0, ordinary queries")
    fig.tight_layout()
    return fig


def sink_over_training(runs: list[dict], *, eps: float | None = None) -> plt.Figure:
    """Language models during training: the largest mean weight on token 0 among each layer's
    heads, against the step, one panel per (rule, learning rate), one line per layer and
    seed; the dotted line is ``Sink_1^eps``'s threshold (a head above it is a sink)."""
    from .lm import SINK_EPS

    eps = SINK_EPS if eps is None else eps
    rows = []
    for r in runs:
        h = r["history"]
        first = np.asarray(h["first_mean"])  # (steps, layers, heads)
        for i, step in enumerate(h["step"]):
            for layer in range(first.shape[1]):
                rows.append(
                    {
                        "panel": f"{r['attention']}, lr {r['lr']:g}",
                        "seed": r["seed"],
                        "layer": layer,
                        "step": step,
                        "weight": first[i, layer].max(),
                    }
                )
    df = pd.DataFrame(rows)
    panels = list(dict.fromkeys(df["panel"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.2), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], panels):
        part = df[df["panel"] == name]
        sns.lineplot(data=part, x="step", y="weight", hue="layer", units="seed", estimator=None, palette="deep", ax=ax)
        ax.axhline(eps, color="grey", lw=0.8, ls=":")
        ax.set(ylim=(-0.02, 1.02), title=name, xlabel="training step", ylabel="largest head weight on token 0")
    fig.tight_layout()
    return fig


def grid_summary(runs: pd.DataFrame, axes: list[str], defaults: dict | None = None) -> plt.Figure:
    """A grid's runs: for each varied setting (one column each; the rule alone when nothing
    else varies), the mean of the BOS mass at non-trigger rows (top) and of the largest test
    error (bottom; log scale when it spans more than a factor 20), one line per attention
    rule. A column shows the runs whose other varied settings are at ``defaults`` (the slice
    a one-setting-at-a-time sweep varies) when that slice holds two values or more of its
    setting, and otherwise the mean over the other settings too."""
    axes = list(axes) or ["attention"]
    defaults = defaults or {}
    metrics = (("bos_mass_nontrigger", "BOS mass, non-trigger"), ("linf", "max error"))
    fig, grid = plt.subplots(2, len(axes), figsize=(3.4 * len(axes), 5.6), squeeze=False)
    for col, axis in enumerate(axes):
        keep = pd.Series(True, index=runs.index)
        for other in axes:
            if other != axis and other in defaults:
                keep &= runs[other] == defaults[other]
        part = runs[keep] if runs.loc[keep, axis].nunique() >= 2 else runs
        for row, (metric, label) in enumerate(metrics):
            ax = grid[row, col]
            if axis == "attention":
                sns.barplot(data=part, x="attention", y=metric, ax=ax, errorbar=None, color="C0")
            else:
                sns.lineplot(data=part, x=axis, y=metric, hue="attention", marker="o", errorbar=None, ax=ax)
                values = sorted(part[axis].unique())
                if axis in ("lr", "seq_len", "d_model") and len(values) > 1:
                    ax.set_xscale("log")
                    ax.minorticks_off()
                ax.set_xticks(values, [f"{v:g}" for v in values])
            ax.set(ylabel=label, xlabel=axis)
            if metric == "linf" and part[metric].min() > 0 and part[metric].max() > 20 * part[metric].min():
                ax.set_yscale("log")
    fig.tight_layout()
    return fig
