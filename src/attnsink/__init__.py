"""attnsink: the library behind the book "Attention sinks: proofs and experiments".

Train the attention models of Ran-Milo (2026) on the trigger-conditional task, measure
their sinks and draw the book's figures. Read it bottom up: :mod:`~attnsink.task` and
:mod:`~attnsink.attention`, then :mod:`~attnsink.model` (the forward pass) and
:mod:`~attnsink.training` (the training loop); :mod:`~attnsink.engine` is the fast path that
trains many seeds at once; :mod:`~attnsink.experiments` runs the chapters' experiments.

The names below are imported from the lower layers when first used (so that
``python -m attnsink --help`` does not wait for torch); ``attnsink.experiments`` and
``attnsink.plots`` are imported where they are used.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

try:
    __version__ = version("attnsink")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "unknown"

_EXPORTS = {
    "ATTENTION_RULES": "attention",
    "AttentionModel": "model",
    "Batch": "task",
    "NonFiniteLossError": "training",
    "TrainResult": "training",
    "TriggerTask": "task",
    "evaluate": "metrics",
    "resolve_profile": "profiles",
    "train": "training",
    "train_seeds": "engine",
}
__all__ = [
    "ATTENTION_RULES",
    "AttentionModel",
    "Batch",
    "NonFiniteLossError",
    "TrainResult",
    "TriggerTask",
    "evaluate",
    "resolve_profile",
    "train",
    "train_seeds",
]

if TYPE_CHECKING:
    from .attention import ATTENTION_RULES
    from .engine import train_seeds
    from .metrics import evaluate
    from .model import AttentionModel
    from .profiles import resolve_profile
    from .task import Batch, TriggerTask
    from .training import NonFiniteLossError, TrainResult, train


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'attnsink' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_EXPORTS])
