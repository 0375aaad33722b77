"""The attention maps the chapters draw: what they show, and that drawing a grid of maps
does not render the figure once per map (seaborn's heatmap does, which made chapter 5's
4 x 4 grids take 13 s each)."""

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from attnsink import plots  # noqa: E402


def _attn(n_layers: int, n_heads: int, L: int = 8) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    causal = torch.tril(torch.ones(L, L, dtype=torch.bool))
    out = []
    for _ in range(n_layers):
        scores = torch.randn(2, n_heads, L, L, generator=g).masked_fill(~causal, float("-inf"))
        out.append(torch.softmax(scores, dim=-1))
    return out


def _meshes(fig: Figure) -> list[QuadMesh]:
    """The maps' meshes (a colour bar's axes has a mesh too, but no title)."""
    return [c for ax in fig.axes if ax.get_title() for c in ax.collections if isinstance(c, QuadMesh)]


def test_head_grid_draws_one_map_per_head_with_the_causal_triangle_blank():
    attn = _attn(3, 2)
    fig = plots.head_grid(attn, trigger_pos=3, index=1)
    meshes = _meshes(fig)
    assert len(meshes) == 3 * 2
    first = meshes[0].get_array()  # layer 0, head 0 of sequence 1, row-major
    L = attn[0].shape[-1]
    shown = np.ma.getdata(first).reshape(L, L)
    hidden = np.ma.getmaskarray(first).reshape(L, L)
    assert np.array_equal(hidden, np.triu(np.ones((L, L), dtype=bool), k=1))
    lower = ~hidden
    assert np.allclose(shown[lower], attn[0][1, 0].numpy()[lower])
    assert meshes[0].norm.vmin == 0.0 and meshes[0].norm.vmax == pytest.approx(1.0)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[:2] == ["layer 0, head 0", "layer 0, head 1"]
    plt.close(fig)


def test_a_grid_of_maps_is_not_rendered_while_it_is_built(monkeypatch):
    draws = []
    original = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, renderer: draws.append(1) or original(self, renderer))
    fig = plots.head_grid(_attn(4, 4), trigger_pos=3)
    built = len(draws)
    fig.canvas.draw()
    assert built <= 1, f"the figure was drawn {built} times while 16 maps were added"
    assert len(draws) == built + 1  # the patch does count draws
    plt.close(fig)


def test_attention_maps_share_one_colour_scale_from_zero():
    maps = {"a": _attn(1, 1)[0][:, 0], "b": 2 * _attn(1, 1)[0][:, 0]}
    fig = plots.attention_maps(maps, trigger_pos=2, ncols=2)
    meshes = _meshes(fig)
    assert len(meshes) == 2
    assert {m.norm.vmin for m in meshes} == {0.0}
    assert len({m.norm.vmax for m in meshes}) == 1 and meshes[0].norm.vmax >= 1.0
    plt.close(fig)


def test_sink_over_training_draws_each_layers_largest_head_per_step():
    history = {"step": [10, 20], "first_mean": [[[0.1, 0.5], [0.0, 0.2]], [[0.05, 0.7], [0.3, 0.1]]]}
    runs = [{"attention": rule, "lr": 0.01, "seed": 0, "history": history} for rule in ("softmax", "relu")]
    fig = plots.sink_over_training(runs)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["softmax, lr 0.01", "relu, lr 0.01"]
    lines = [line for line in axes[0].get_lines() if list(line.get_xdata()) == [10, 20]]  # the layers' curves
    ys = sorted(tuple(line.get_ydata()) for line in lines)
    assert ys == [(0.2, 0.3), (0.5, 0.7)]  # layer 1: max(0.0, 0.2), max(0.3, 0.1); layer 0: 0.5, 0.7
    assert any(list(line.get_ydata()) == [0.3, 0.3] for line in axes[0].get_lines())  # the threshold
    plt.close(fig)


def test_grid_summary_slices_one_setting_at_a_time_sweeps_at_the_defaults():
    import pandas as pd

    rows = []
    for L, d in [(8, 16), (16, 16), (32, 16), (16, 8), (16, 32)]:  # seq_len swept at d 16, d swept at L 16
        rows.append(
            {"attention": "softmax", "seq_len": L, "d_model": d, "bos_mass_nontrigger": L / 100 + d, "linf": 0.01}
        )
    fig = plots.grid_summary(pd.DataFrame(rows), ["seq_len", "d_model"], {"seq_len": 16, "d_model": 16})
    top_left, top_right = fig.axes[0], fig.axes[1]
    (line,) = [ln for ln in top_left.get_lines() if len(ln.get_xdata()) == 3]
    assert list(line.get_xdata()) == [8, 16, 32] and list(line.get_ydata()) == [16.08, 16.16, 16.32]  # d = 16 only
    (line,) = [ln for ln in top_right.get_lines() if len(ln.get_xdata()) == 3]
    assert list(line.get_ydata()) == [8.16, 16.16, 32.16]  # L = 16 only
    plt.close(fig)


def test_the_package_keeps_every_figure_at_its_old_address():
    # plots was one module; the chapters call plots.<figure> and import set_theme and model_label from it
    old = """set_theme attention_mean_std head_grid history_frame training_curves sequence attention_maps
    variants_summary sink_inequality capped_tradeoff model_label head_kinds sweep_metrics sink_vs_loss_steps
    sink_certificate backcopy_heads sink_over_training grid_summary""".split()
    assert set(old) <= set(plots.__all__)
    for name in old:
        assert callable(getattr(plots, name))
        assert getattr(plots, name).__module__.startswith(("attnsink.plots.", "attnsink.analysis"))


def test_price_frontier_draws_the_path_and_every_trained_model_on_log_axes():
    import pandas as pd

    front = pd.DataFrame(
        {"path": ["a", "a", "a", "b"], "weight": [5.0, 50.0, 5e4, 3.0], "rel_err_trigger": [0.3, 0.05, 1e-4, 0.1]}
    )
    trained = pd.DataFrame(
        {"model": ["softmax 2 × 2", "relu 2 × 2"], "value weight": [2.7, 3.0], "rel_err_trigger": [2e-5, 3e-5]}
    )
    fig = plots.price_frontier(front, trained)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert list(ax.lines[0].get_xdata()) == [5.0, 50.0, 5e4] and list(ax.lines[1].get_xdata()) == [3.0]
    assert sum(len(c.get_offsets()) for c in ax.collections) == 2  # one marker per trained model
    matplotlib.pyplot.close(fig)


def test_every_heat_map_of_the_book_has_a_colour_bar():
    """Issue 30: a heat map without its key cannot be read. Every map-drawing figure passes
    :func:`plots.missing_colour_bars`; a figure with a keyless map fails it."""
    L = 8
    one = _attn(1, 1, L)[0][:, 0]
    x = torch.randn(L, 5)
    figures = {
        "head_grid 2x2": plots.head_grid(_attn(2, 2, L), trigger_pos=3),
        "head_grid 4x4": plots.head_grid(_attn(4, 4, L), trigger_pos=3),
        "attention_maps": plots.attention_maps({"a": one, "b": one, "c": one, "d": one}, trigger_pos=3),
        "attention_mean_std": plots.attention_mean_std({"softmax": one, "relu": 0.5 * one}, trigger_pos=3),
        "sequence": plots.sequence(x, torch.zeros_like(x), trigger_pos=3),
    }
    for name, fig in figures.items():
        assert len(_meshes(fig)) > 0, name
        assert plots.missing_colour_bars(fig) == [], name
        plt.close(fig)
    fig, (a, b) = plt.subplots(1, 2)
    a.pcolormesh(np.eye(3), vmin=0, vmax=1)
    a.set_title("keyless")
    fig.colorbar(b.pcolormesh(np.eye(3), vmin=0, vmax=2), ax=b)  # another scale: explains only its own map
    assert plots.missing_colour_bars(fig) == ["keyless"]
    plt.close(fig)


def test_sink_over_tokens_draws_each_amount_of_text_per_seed_against_tokens():
    def run(chars, seed, largest):
        steps = [100, 200]
        first = [[[0.1, largest[0]]], [[0.1, largest[1]]]]  # (steps, layers, heads)
        tokens = [s * 32 * 63 for s in steps]
        history = {
            "step": steps,
            "tokens": tokens,
            "epochs": [t / chars for t in tokens],
            "val_loss": [2.0, 1.5],
            "sink": [0.0, 0.0],
            "first_mean": first,
        }
        return {"train_chars": chars, "seed": seed, "history": history}

    runs = [run(420_000, 0, (0.2, 0.4)), run(4_200_000, 0, (0.1, 0.12)), run(4_200_000, 1, (0.1, 0.13))]
    fig = plots.sink_over_tokens(runs)
    left = fig.axes[0]
    assert left.get_xscale() == "log"
    lines = [ln for ln in left.get_lines() if len(ln.get_xdata()) == 2 and list(ln.get_ydata()) != [0.3, 0.3]]
    assert len(lines) == 3  # one line per (amount, seed)
    assert sorted(tuple(ln.get_ydata()) for ln in lines) == [(0.1, 0.12), (0.1, 0.13), (0.2, 0.4)]
    assert any(list(ln.get_ydata()) == [0.3, 0.3] for ln in left.get_lines())  # the threshold
    plt.close(fig)


def test_sink_by_context_draws_every_head_per_window_with_the_threshold_and_an_even_spread():
    runs = [
        {"seq_len": n, "seed": s, "first_mean": [[0.1, 0.35 if n == 256 else 0.2], [0.05, 0.0]]}
        for n in (64, 256)
        for s in (0, 1)
    ]
    fig = plots.sink_by_context(runs)
    ax = fig.axes[0]
    dots = np.concatenate([c.get_offsets() for c in ax.collections])
    assert len(dots) == 16  # 4 heads x 2 seeds x 2 windows
    assert sorted({round(float(y), 2) for y in dots[:, 1]}) == [0.0, 0.05, 0.1, 0.2, 0.35]
    assert max(float(y) for x, y in dots if x > 0.5) == pytest.approx(0.35)  # the 256 windows: the second column
    flat = [tuple(ln.get_ydata()) for ln in ax.get_lines() if len(set(ln.get_ydata())) == 1]
    assert (0.3, 0.3) in flat  # the threshold
    even = {round(y[0], 3) for y in flat if y[0] < 0.3}
    assert len(even) == 2 and max(even) == pytest.approx(np.mean([1 / (q + 1) for q in range(1, 63)]), abs=1e-3)
    plt.close(fig)
