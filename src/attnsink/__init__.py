"""attnsink: the library behind the book "Attention sinks, proved and shown by experiment".

Train the attention models of Ran-Milo (2026) on the trigger-conditional task, measure
their sinks and draw the book's figures. Read it bottom up: :mod:`~attnsink.task` and
:mod:`~attnsink.attention`, then :mod:`~attnsink.model` (the forward pass) and
:mod:`~attnsink.train` (the training loop); :mod:`~attnsink.engine` is the fast path that
trains many seeds at once; :mod:`~attnsink.experiments` runs the chapters' experiments.
This package imports only the lower layers; ``attnsink.experiments`` and
``attnsink.plots`` are imported where they are used.
"""

from importlib.metadata import PackageNotFoundError, version

from .attention import ATTENTION_RULES
from .engine import train_seeds
from .metrics import evaluate
from .model import AttentionModel
from .profiles import resolve_profile
from .task import Batch, TriggerTask
from .train import NonFiniteLossError, TrainResult, train

try:
    __version__ = version("attnsink")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "unknown"

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
