"""The book's look: the seaborn theme every chapter sets once (:func:`set_theme`, called in
every chapter's setup call, :func:`attnsink.book.setup`), and the colours that figures of several chapters share
(the theory's predictions in chapter 6, the head kinds in chapter 5)."""

from __future__ import annotations

import seaborn as sns

#: The colour of what the theory predicts for a rule (:func:`attnsink.plots.trigger.variants_summary`).
PREDICTION_COLOURS = {"simplex": "tab:red", "partial": "tab:orange", "off state": "tab:green"}


def set_theme() -> None:
    """The book's seaborn theme (white background, notebook sizes), for every figure drawn after."""
    sns.set_theme(style="white", context="notebook")


def kind_colours() -> dict[str, tuple]:
    """The colour of each head kind (:data:`attnsink.metrics.HEAD_KINDS`), from seaborn's
    colour-blind palette (:func:`attnsink.plots.trigger.head_kinds`)."""
    cb = sns.color_palette("colorblind")
    return {"sink": cb[0], "dormant": cb[4], "diffuse": cb[2], "off": cb[1]}
