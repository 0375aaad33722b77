"""Seaborn figures of the book, one function per figure, named for what it draws. Each
returns the Figure. Call :func:`~attnsink.plots.style.set_theme` once first for the book's look.

The figures live in modules by family, and every one is importable from here
(``from attnsink import plots; plots.head_grid(...)``):

- :mod:`attnsink.plots.style`: the theme and the shared colours;
- :mod:`attnsink.plots.maps`: heat maps of attention and of sequences;
- :mod:`attnsink.plots.trigger`: charts of the trigger task's measurements;
- :mod:`attnsink.plots.language`: the language models' figures;
- :mod:`attnsink.plots.grid`: the summary of a sweep from a spec file.

What they draw is reshaped by :mod:`attnsink.analysis` (:func:`~attnsink.analysis.history_frame`
and :func:`~attnsink.analysis.model_label` are importable from here too).
"""

from ..analysis import history_frame, model_label
from .grid import grid_summary
from .language import (
    backcopy_heads,
    first_layer_course,
    head_ablations,
    sink_by_context,
    sink_over_tokens,
    sink_over_training,
)
from .maps import attention_maps, attention_mean_std, head_grid, missing_colour_bars, sequence
from .style import set_theme
from .trigger import (
    capped_tradeoff,
    head_kinds,
    price_frontier,
    sink_certificate,
    sink_inequality,
    sink_step_share,
    sink_vs_loss_steps,
    sweep_metrics,
    training_curves,
    variants_summary,
)

__all__ = [
    "set_theme",
    "attention_mean_std",
    "head_grid",
    "sequence",
    "attention_maps",
    "missing_colour_bars",
    "head_ablations",
    "history_frame",
    "training_curves",
    "variants_summary",
    "sink_inequality",
    "capped_tradeoff",
    "price_frontier",
    "model_label",
    "head_kinds",
    "sweep_metrics",
    "sink_vs_loss_steps",
    "sink_step_share",
    "sink_certificate",
    "backcopy_heads",
    "sink_over_training",
    "first_layer_course",
    "sink_by_context",
    "sink_over_tokens",
    "grid_summary",
]
