"""attnsink: the library behind the book "Attention sinks, proved and shown by experiment".

Train the attention models of Ran-Milo (2026) on the trigger-conditional task, measure
their sinks and draw the book's figures.
"""

from .attention import ATTENTION_RULES
from .experiments import resolve_profile
from .metrics import evaluate
from .model import AttentionModel
from .task import Batch, TriggerTask
from .train import NonFiniteLossError, TrainResult, train, train_many, train_seeds

__version__ = "0.1.0"

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
    "train_many",
    "train_seeds",
]
