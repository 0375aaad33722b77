"""Figures of the language models: each head's weight on token 0 at ordinary and trigger
queries (:func:`backcopy_heads`, chapter 7), what their outputs are worth
(:func:`head_ablations`), and the sink forming during training
(:func:`sink_over_training` and :func:`sink_over_tokens`, chapter 8). The frames they draw
come from :mod:`attnsink.analysis`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns

from ..analysis import backcopy_frame, scale_history_frame, sink_history_frame


def _panels(n: int, ncols: int = 3, size: float = 3.0, **kw):
    """A grid of ``n`` panels, at most ``ncols`` a row (a figure the book's column can show),
    with the unused panels removed."""
    rows = -(-n // ncols)
    cols = min(n, ncols)
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False, **kw)
    flat = axes.ravel()
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]


def backcopy_heads(runs: list[dict]) -> plt.Figure:
    """Each head's weight on token 0 at ordinary queries against trigger queries, one panel
    per model (rule, with or without BOS), three a row, colour = layer: a dormant head sits
    top left (on token 0 at ordinary tokens, off it at triggers)."""
    df = backcopy_frame(runs)
    models = list(dict.fromkeys(df["model"]))
    fig, axes = _panels(len(models), sharex=True, sharey=True)
    for i, (ax, name) in enumerate(zip(axes, models)):
        part = df[df["model"] == name]
        sns.scatterplot(
            data=part, x="first_trigger", y="first_ordinary", hue="layer", palette="deep", ax=ax, s=30, legend=i == 0
        )
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
        ax.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), title=name, xlabel="on token 0 at triggers")
        ax.set_ylabel("on token 0 at ordinary queries")
    fig.tight_layout()
    return fig


def head_ablations(runs: list[dict], *, tol: float | None = None) -> plt.Figure:
    """What each head's output is worth, by ablation (:func:`attnsink.lm.ablate_heads`): the
    change in loss when the head's output is replaced by zero at ordinary queries (left) and
    at triggers (right); one dot per head and seed, one row per model, colour = layer. The
    grey band is ``tol`` (:data:`attnsink.metrics.WRITE_TOL`): a head inside it costs
    nothing to silence there."""
    from ..metrics import WRITE_TOL

    tol = WRITE_TOL if tol is None else tol
    df = backcopy_frame(runs)
    fig, axes = plt.subplots(1, 2, figsize=(9, 0.45 * df["model"].nunique() + 1.4), sharey=True, sharex=True)
    for ax, (where, y) in zip(axes, (("ordinary queries", "ablate_zero"), ("triggers", "ablate_trigger_zero"))):
        ax.axvspan(-tol, tol, color="0.88", zorder=0)
        sns.stripplot(
            data=df, x=y, y="model", hue="layer", palette="deep", ax=ax, size=4, alpha=0.8, legend=ax is axes[1]
        )
        ax.set(title=f"output zeroed at {where}", xlabel="change in loss (nats per token)", ylabel="")
    axes[1].legend(title="layer", loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def sink_over_training(runs: list[dict], *, eps: float | None = None) -> plt.Figure:
    """Language models during training: the largest mean weight on token 0 among each layer's
    heads, against the step, one panel per (rule, learning rate), one line per layer and
    seed; the dotted line is ``Sink_1^eps``'s threshold (a head above it is a sink). A ReLU
    head's row need not sum to one, so its weight can pass 1: the axis reaches the largest."""
    from ..metrics import SINK_EPS

    eps = SINK_EPS if eps is None else eps
    df = sink_history_frame(runs)
    top = max(1.0, float(df["weight"].max()))
    panels = list(dict.fromkeys(df["panel"]))
    fig, axes = _panels(len(panels), ncols=2, size=3.4, sharey=True)
    for i, (ax, name) in enumerate(zip(axes, panels)):
        part = df[df["panel"] == name]
        sns.lineplot(
            data=part,
            x="step",
            y="weight",
            hue="layer",
            units="seed",
            estimator=None,
            palette="deep",
            ax=ax,
            legend=i == 0,
        )
        ax.axhline(eps, color="grey", lw=1.2, ls=":")
        ax.set(ylim=(-0.02, top + 0.02), title=name, xlabel="training step", ylabel="largest head weight on token 0")
    fig.tight_layout()
    return fig


def sink_over_tokens(runs: list[dict], *, eps: float | None = None) -> plt.Figure:
    """Language models on more text (:func:`attnsink.experiments.text_scale`): against the
    tokens seen, the largest mean weight on token 0 among all heads with ``Sink_1^eps``'s
    threshold dotted (left), and the validation loss (right); colour = amount of text, one
    line per seed."""
    from ..metrics import SINK_EPS

    eps = SINK_EPS if eps is None else eps
    df = scale_history_frame(runs)
    fig, axes = _panels(2, ncols=2, size=3.6)
    for ax, y, label in (
        (axes[0], "largest", "largest head weight on token 0"),
        (axes[1], "val_loss", "validation loss"),
    ):
        sns.lineplot(
            data=df,
            x="tokens",
            y=y,
            hue="text",
            units="seed",
            estimator=None,
            palette="deep",
            ax=ax,
            legend=ax is axes[1],
        )
        ax.set(xscale="log", xlabel="tokens seen", ylabel=label)
    axes[0].axhline(eps, color="grey", lw=1.2, ls=":")
    axes[0].set_ylim(-0.02, 1.02)
    fig.tight_layout()
    return fig


def sink_by_context(runs: list[dict], *, eps: float | None = None) -> plt.Figure:
    """Language models at several window lengths (:func:`attnsink.experiments.text_context`):
    every head's mean weight on token 0 over all its queries, against the window length it
    trained on, one dot per head, colour = seed; ``Sink_1^eps``'s threshold dotted and an
    even spread's weight (the mean of 1/(i + 1) over the queries) as a short grey bar."""
    import numpy as np
    import pandas as pd

    from ..metrics import SINK_EPS

    eps = SINK_EPS if eps is None else eps
    df = pd.DataFrame(
        [
            {"window": int(r["seq_len"]), "seed": str(r["seed"]), "weight": float(w)}
            for r in runs
            for w in np.asarray(r["first_mean"], dtype=float).ravel()
        ]
    )
    lengths = sorted(df["window"].unique())
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    sns.stripplot(data=df, x="window", y="weight", hue="seed", order=lengths, dodge=True, jitter=0.15, size=5, ax=ax)
    ax.axhline(eps, color="grey", lw=1.2, ls=":")
    for i, n in enumerate(lengths):
        even = float(np.mean([1 / (q + 1) for q in range(1, n - 1)]))
        ax.plot([i - 0.4, i + 0.4], [even, even], color="0.4", lw=2)
    ax.set(
        xlabel="training window (characters, BOS included)",
        ylabel="mean weight on token 0",
        ylim=(-0.02, 1.02),
    )
    ax.legend(title="seed", frameon=False, loc="upper left")
    fig.tight_layout()
    return fig


def first_layer_course(courses: list[dict], *, layer: int = 0) -> plt.Figure:
    """Each head's mean weight on token 0 during training, for one ``layer`` (the first by
    default): one panel per model, one line per head and seed, colour = seed. ``courses``: one
    record per trained model with ``model``, ``seed``, ``step`` (the steps recorded) and
    ``first_mean`` (step, layer, head), as :func:`attnsink.lm.train_lm` records it
    (:func:`attnsink.claims.ch07.training_courses` reads them back). Used in chapter 7."""
    import numpy as np
    import pandas as pd

    rows = []
    for c in courses:
        w = np.asarray(c["first_mean"], dtype=float)[:, layer]  # (step, head)
        for head in range(w.shape[1]):
            rows += [
                {"model": c["model"], "seed": str(c["seed"]), "line": f"{c['seed']}/{head}", "step": s, "weight": v}
                for s, v in zip(c["step"], w[:, head])
            ]
    df = pd.DataFrame(rows)
    models = list(dict.fromkeys(df["model"]))
    fig, axes = _panels(len(models), ncols=2, size=3.4, sharex=True, sharey=True)
    for i, (ax, name) in enumerate(zip(axes, models)):
        sns.lineplot(
            data=df[df["model"] == name],
            x="step",
            y="weight",
            hue="seed",
            units="line",
            estimator=None,
            palette="deep",
            lw=1,
            ax=ax,
            legend=i == 0,
        )
        ax.set(ylim=(-0.02, 1.02), title=name, xlabel="training step", ylabel=f"layer {layer} weight on token 0")
    if len(models):
        axes[0].legend(title="seed", fontsize="small", loc="lower right")
    fig.tight_layout()
    return fig
