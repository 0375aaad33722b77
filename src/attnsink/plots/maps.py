"""Heat maps of attention and of sequences: the mean and spread of one head's attention
(chapter 1), one model's heads layer by layer (chapters 4 and 5), several models side by
side (chapters 3 and 6), and a task sequence with its target (chapter 1)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import torch


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
    return mesh


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
    # panels sized so that four to a row stay legible at the book's column width
    size = 3.2 if n_heads <= 2 else 2.5
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(size * n_heads + 0.6, size * n_layers), squeeze=False)
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
    (one colour bar, on the right) and starts at 0, so a head that is off shows as a blank
    triangle.
    """
    n = len(maps)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(3.2 * ncols + 0.8, 3.2 * nrows), squeeze=False, layout="constrained"
    )
    means = {k: v.detach().float().cpu().mean(dim=0).numpy() for k, v in maps.items()}
    vmax = max(1.0, max(float(m.max()) for m in means.values()))
    for ax, (title, mean) in zip(axes.flat, means.items()):
        mesh = _heatmap(ax, mean, title=title, vmax=vmax, trigger_pos=trigger_pos, cbar=False)
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax in axes[:, 1:].flat:
        ax.set_ylabel("")
    for ax in axes[:-1, :].flat:
        ax.set_xlabel("")
    bar = fig.colorbar(mesh, ax=axes.ravel().tolist(), shrink=0.6, label="mean attention weight")
    bar.outline.set_linewidth(0)
    return fig


def missing_colour_bars(fig: plt.Figure) -> list[str]:
    """The heat maps of ``fig`` whose colours no colour bar explains: a map (a
    ``pcolormesh`` or an image) counts as explained when it has a colour bar of its own or
    shares its colour map and limits with one that has. Empty when every map has its key;
    otherwise the maps' titles. The book's heat maps are checked with it in the tests."""
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage

    maps = [
        (ax, m)
        for ax in fig.axes
        for m in [*ax.collections, *ax.images]
        if isinstance(m, (QuadMesh, AxesImage)) and not hasattr(ax, "_colorbar")
    ]
    keyed = {(m.get_cmap().name, m.norm.vmin, m.norm.vmax) for _, m in maps if m.colorbar is not None}
    return [
        ax.get_title() or f"axes {i}"
        for i, (ax, m) in enumerate(maps)
        if m.colorbar is None and (m.get_cmap().name, m.norm.vmin, m.norm.vmax) not in keyed
    ]
