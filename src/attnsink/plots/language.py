"""Figures of the language models: each head's weight on token 0 at ordinary and trigger
queries (:func:`backcopy_heads`, chapter 7), and the sink forming during training
(:func:`sink_over_training`, chapter 8). The frames they draw come from :mod:`attnsink.analysis`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns

from ..analysis import backcopy_frame, sink_history_frame


def backcopy_heads(runs: list[dict]) -> plt.Figure:
    """Each head's weight on token 0 at ordinary queries against trigger queries, one panel
    per rule (and softmax without BOS), colour = layer: a dormant head sits top left (on
    token 0 at ordinary tokens, off it at triggers)."""
    df = backcopy_frame(runs)
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
    from ..metrics import SINK_EPS

    eps = SINK_EPS if eps is None else eps
    df = sink_history_frame(runs)
    panels = list(dict.fromkeys(df["panel"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.2), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], panels):
        part = df[df["panel"] == name]
        sns.lineplot(data=part, x="step", y="weight", hue="layer", units="seed", estimator=None, palette="deep", ax=ax)
        ax.axhline(eps, color="grey", lw=0.8, ls=":")
        ax.set(ylim=(-0.02, 1.02), title=name, xlabel="training step", ylabel="largest head weight on token 0")
    fig.tight_layout()
    return fig
