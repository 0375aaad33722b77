"""The book's look: the seaborn theme every chapter sets once (:func:`set_theme`, called in
every chapter's setup call, :func:`attnsink.book.setup`), and the colours that figures of several chapters share
(the theory's predictions in chapter 6, the head kinds in chapter 5)."""

from __future__ import annotations

import seaborn as sns

#: The colour of what the theory predicts for a rule (:func:`attnsink.plots.trigger.variants_summary`).
PREDICTION_COLOURS = {"simplex": "tab:red", "partial": "tab:orange", "off state": "tab:green"}


def set_theme() -> None:
    """The book's seaborn theme (white background, notebook sizes), for every figure drawn
    after; in a notebook, figures are drawn at twice their pixel size and shown at their size
    (IPython's "retina" format), so that their labels stay sharp and readable."""
    sns.set_theme(style="white", context="notebook")
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # no notebook kernel here: nothing to set
        return
    set_matplotlib_formats("retina")


def kind_colours() -> dict[str, tuple]:
    """The colour of each head kind (:data:`attnsink.metrics.HEAD_KINDS`), from seaborn's
    colour-blind palette (:func:`attnsink.plots.trigger.head_kinds`)."""
    cb = sns.color_palette("colorblind")
    return {"sink": cb[0], "dormant": cb[4], "diffuse": cb[2], "off": cb[1]}
