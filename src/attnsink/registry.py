"""Every experiment of the book, declared once: its name (and module,
``attnsink.experiments.NAME``), the chapters that read its models, the kind of model it trains
and what it trains.

The command line's choices, ``make full-cache`` (``python -m attnsink list``), the chapters'
experiment lists and the API page read this table; ``tests/test_registry.py`` checks the
README and the architecture test against it. Adding an experiment is one module,
``experiments/NAME.py``, whose function ``NAME`` is registered with
:func:`attnsink.experiments.base.experiment`, and one line here. This module imports nothing,
so that ``python -m attnsink --help`` answers at once.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("trigger", "gpt")
"""What an experiment trains: attention models on the trigger task (:mod:`attnsink.model`) or
GPTs on a language (:mod:`attnsink.lm`)."""


@dataclass(frozen=True)
class Experiment:
    """One experiment: ``name`` (its module and function), the ``chapters`` that read its
    models, the ``kind`` of model it trains (one of :data:`KINDS`), ``trains``, what it
    trains in a few words, and ``takes_lr``, whether a learning rate given to it (``reproduce
    --lr``) sets its rate (False for one that trains at several rates of its own)."""

    name: str
    chapters: tuple[int, ...]
    kind: str
    trains: str
    takes_lr: bool = True  # False: it sets its learning rates itself (a sweep over them)

    def __post_init__(self):
        if not self.name.isidentifier():
            raise ValueError(f"name must be a Python identifier, got {self.name!r}")
        if not self.chapters or not all(isinstance(c, int) and c >= 1 for c in self.chapters):
            raise ValueError(f"chapters must be a non-empty tuple of chapter numbers, got {self.chapters!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def module(self) -> str:
        return f"attnsink.experiments.{self.name}"


REGISTRY = (  # in the order `make full-cache` trains them: the cheapest first
    Experiment("single_layer", (1, 2, 3, 9), "trigger", "one-layer softmax and ReLU heads"),
    Experiment("capped_bos", (2, 9), "trigger", "softmax heads with BOS capped"),
    Experiment("multi_layer", (4, 5, 9), "trigger", "2 x 2 and 4 x 4 residual models"),
    Experiment("blocks", (5, 9), "trigger", "2 x 2 models with an MLP and/or LayerNorm"),
    Experiment("backcopy", (7, 9), "gpt", "a small GPT on Bigram-Backcopy"),
    Experiment("text_lm", (8, 9), "gpt", "a character-level GPT on English", takes_lr=False),
    Experiment("text_decay", (8, 9), "gpt", "the English GPT at several weight decays"),
    Experiment("text_scale", (8, 9), "gpt", "the same GPT on ten times more text (Python source)"),
    Experiment("text_control", (8, 9), "gpt", "the Python-source GPT at weight decay 0.5, softmax and ReLU"),
    Experiment("text_context", (8, 9), "gpt", "the Python-source GPT at windows of 64 and 256 characters"),
    Experiment("sweep", (5,), "trigger", "one-layer heads over L, d and lr", takes_lr=False),
    Experiment("variants", (2, 3, 6, 9), "trigger", "every attention rule, with and without BOS"),
    Experiment("constant_default", (9,), "trigger", "every rule on a task with a constant target off the trigger"),
    Experiment("broadcast", (9,), "trigger", "2-layer softmax models without the causal mask"),
)
"""Every experiment, once."""

BY_NAME = {e.name: e for e in REGISTRY}
NAMES = tuple(sorted(BY_NAME))
"""The experiments' names, sorted: the command line's choices."""


def get(name: str) -> Experiment:
    """The registry's entry for ``name``."""
    if name not in BY_NAME:
        raise ValueError(f"name must be one of {list(NAMES)}, got {name!r}")
    return BY_NAME[name]


def table() -> str:
    """The registry as a reStructuredText table (the experiments package's docstring shows it)."""
    rows = [(f":func:`{e.name}`", e.trains, ", ".join(map(str, e.chapters))) for e in REGISTRY]
    widths = [max(len(r[i]) for r in [("experiment", "what it trains", "chapters"), *rows]) for i in range(3)]
    rule = "  ".join("=" * w for w in widths)
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([rule, line(("experiment", "what it trains", "chapters")), rule, *map(line, rows), rule])
