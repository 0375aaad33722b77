"""A small GPT trained by next-token prediction, for the bridge from the trigger task to
language models (chapters 7 and 8), in four parts:

* :mod:`attnsink.lm.data`: the languages: Bigram-Backcopy, a synthetic language with known
  triggers (after Guo et al., 2024), English text (CPython 3.11.7's help topics) and Python
  source (its standard library), both carried here;
* :mod:`attnsink.lm.model`: the GPT (pre-LN blocks, any attention rule);
* :mod:`attnsink.lm.metrics`: where the heads' weight goes (``Sink_1^eps``, the first token's
  weight and share, the value norms), what they write, which are trigger-conditional;
* :mod:`attnsink.lm.training`: AdamW on cross-entropy, and the trainer the experiments'
  shared training path (:func:`attnsink.parallel.train_many`, the results cache) calls.
"""

from .data import (
    BigramBackcopy,
    CharText,
    PythonSample,
    PythonSource,
    source_corpus,
    task_config,
    text_corpus,
    val_batch,
)
from .metrics import (
    HEAD_KEYS,
    ablate_heads,
    ablate_layers,
    backcopy_metrics,
    conditional_heads,
    head_metrics,
    head_outputs,
    head_rows,
    sink_rows,
    training_health,
    transplant_layer,
    window_losses,
)
from .model import GPT, Block, lm_loss
from .training import GPTSpec, LMRecipe, LMResult, learning_rate, load_gpt, param_groups, train_gpt, train_lm

__all__ = [
    "GPT",
    "GPTSpec",
    "LMRecipe",
    "HEAD_KEYS",
    "BigramBackcopy",
    "Block",
    "CharText",
    "PythonSample",
    "PythonSource",
    "source_corpus",
    "LMResult",
    "ablate_heads",
    "ablate_layers",
    "backcopy_metrics",
    "conditional_heads",
    "head_metrics",
    "training_health",
    "head_outputs",
    "head_rows",
    "learning_rate",
    "lm_loss",
    "load_gpt",
    "param_groups",
    "sink_rows",
    "transplant_layer",
    "window_losses",
    "task_config",
    "text_corpus",
    "train_gpt",
    "train_lm",
    "val_batch",
]
