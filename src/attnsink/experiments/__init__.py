"""The book's experiments, one module per chapter, each with a ``quick`` and a ``full`` profile.

Modules: :mod:`~attnsink.experiments.base` (what they share), :mod:`~attnsink.experiments.one_head`,
:mod:`~attnsink.experiments.capped`, :mod:`~attnsink.experiments.deep`,
:mod:`~attnsink.experiments.sweeps`, :mod:`~attnsink.experiments.rules`,
:mod:`~attnsink.experiments.language`, :mod:`~attnsink.experiments.scale`,
:mod:`~attnsink.experiments.decay`, :mod:`~attnsink.experiments.control`,
:mod:`~attnsink.experiments.constant` and :mod:`~attnsink.experiments.broadcast`.
Every experiment is called the same way, ``NAME(profile=None, *, seeds=None, device=None,
progress=False, cache_dir=None, workers=None)``, returns an :class:`~attnsink.experiments.base.ExperimentResult`
and is registered in :data:`EXPERIMENTS` for ``python -m attnsink reproduce NAME``. Their
settings are in :mod:`attnsink.profiles`.

========================  ==================================  =========
experiment                what it trains                      chapters
========================  ==================================  =========
:func:`single_layer`      one-layer softmax and ReLU heads    1, 2, 3
:func:`capped_bos`        softmax heads with BOS capped       2
:func:`multi_layer`       2 x 2 and 4 x 4 residual models     4, 5
:func:`blocks`            2 x 2 with MLP and/or LayerNorm     5
:func:`sweep`             one-layer heads over L, d and lr    5
:func:`variants`          every attention rule, with and      2, 3, 6
                          without BOS
:func:`backcopy`          a small GPT on Bigram-Backcopy      7
:func:`text_lm`           a character-level GPT on English    8
:func:`text_scale`        the same GPT on ten times more      8
                          text (Python source)
:func:`text_decay`        the English GPT at several weight   8
                          decays, softmax and ReLU
:func:`text_control`      the Python-source GPT at weight     8
                          decay 0.5, softmax and ReLU
:func:`text_context`      the Python-source GPT at windows    8
                          of 64 and 256 characters
:func:`constant_default`  every rule on the task with a       9
                          constant target off the trigger
:func:`broadcast`         2-layer softmax models without the  9
                          causal mask, on the trigger task
                          asking the whole sequence's mean
========================  ==================================  =========
"""

from ..cache import default_cache_dir
from ..profiles import (
    BLOCKS,
    BLOCKS_SETTINGS,
    CAPPED,
    CAPS,
    FIGURE_TRIGGER_POS,
    MULTI_LAYER,
    N_TEST,
    PROFILE_ENV,
    PROFILES,
    SHAPES,
    SINGLE_LAYER,
    SWEEP,
    SWEEP_POINTS,
    VARIANTS,
    Settings,
    resolve_profile,
)
from .base import CHAPTERS, EXPERIMENTS, Context, ExperimentResult, chapter_experiments, experiment, run_record
from .broadcast import broadcast
from .capped import capped_bos
from .constant import CONSTANT_RULES, constant_default
from .control import text_control
from .decay import text_decay
from .deep import blocks, multi_layer
from .language import backcopy, text_lm
from .one_head import single_layer
from .rules import VARIANT_RULES, variants, variants_table
from .scale import text_scale
from .sweeps import sweep
from .text_context import text_context

__all__ = [
    "BLOCKS",
    "CHAPTERS",
    "BLOCKS_SETTINGS",
    "CAPPED",
    "CAPS",
    "CONSTANT_RULES",
    "EXPERIMENTS",
    "FIGURE_TRIGGER_POS",
    "MULTI_LAYER",
    "N_TEST",
    "PROFILES",
    "PROFILE_ENV",
    "SHAPES",
    "SINGLE_LAYER",
    "SWEEP",
    "SWEEP_POINTS",
    "VARIANTS",
    "VARIANT_RULES",
    "backcopy",
    "Context",
    "ExperimentResult",
    "Settings",
    "blocks",
    "capped_bos",
    "chapter_experiments",
    "constant_default",
    "broadcast",
    "default_cache_dir",
    "experiment",
    "multi_layer",
    "resolve_profile",
    "run_record",
    "single_layer",
    "sweep",
    "text_control",
    "text_context",
    "text_decay",
    "text_lm",
    "text_scale",
    "variants",
    "variants_table",
]
