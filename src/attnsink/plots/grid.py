"""The summary of a sweep from a spec file (:func:`grid_summary`, drawn by
:meth:`attnsink.experiments.grid.GridResult.figure` and ``python -m attnsink grid``; no
chapter calls it directly)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..analysis import grid_slice


def grid_summary(runs: pd.DataFrame, axes: list[str], defaults: dict | None = None) -> plt.Figure:
    """A grid's runs: for each varied setting (one column each; the rule alone when nothing
    else varies), the mean of the BOS mass at non-trigger rows (top) and of the largest test
    error (bottom; log scale when it spans more than a factor 20), one line per attention
    rule. A column shows the runs whose other varied settings are at ``defaults`` (the slice
    a one-setting-at-a-time sweep varies) when that slice holds two values or more of its
    setting, and otherwise the mean over the other settings too (:func:`attnsink.analysis.grid_slice`)."""
    axes = list(axes) or ["attention"]
    defaults = defaults or {}
    metrics = (("bos_mass_nontrigger", "BOS mass, non-trigger"), ("linf", "max error"))
    fig, grid = plt.subplots(2, len(axes), figsize=(3.4 * len(axes), 5.6), squeeze=False)
    for col, axis in enumerate(axes):
        part = grid_slice(runs, axis, axes, defaults)
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
