"""The book's experiments, one module per experiment, each with a ``quick`` and a ``full`` profile.

Every experiment is declared once, in :data:`attnsink.registry.REGISTRY`, and lives in the
module of its name (``attnsink.experiments.NAME``, function ``NAME``), registered with
:func:`~attnsink.experiments.base.experiment`; this package imports every module the registry
names. :mod:`~attnsink.experiments.base` holds what they share, :mod:`~attnsink.experiments.text`
what the text experiments share. Every experiment is called the same way,
``NAME(profile=None, *, seeds=None, device=None, progress=False, cache_dir=None, workers=None)``,
returns an :class:`~attnsink.experiments.base.ExperimentResult` and is in :data:`EXPERIMENTS`
for ``python -m attnsink reproduce NAME``. Their settings are in :mod:`attnsink.profiles`.
(A module and its function share a name: ``attnsink.experiments.NAME`` is the function; the
module is ``sys.modules["attnsink.experiments.NAME"]``, or ``from attnsink.experiments.NAME
import ...``.)

"""

import importlib as _importlib

from .. import registry as _registry
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
from .constant_default import CONSTANT_RULES
from .variants import VARIANT_RULES, variants_table

for _e in _registry.REGISTRY:  # each experiment's module, which registers it
    globals()[_e.name] = getattr(_importlib.import_module(f".{_e.name}", __name__), _e.name)
__doc__ += "\n\n" + _registry.table() + "\n"

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
    "Context",
    "ExperimentResult",
    "Settings",
    "chapter_experiments",
    "default_cache_dir",
    "experiment",
    "resolve_profile",
    "run_record",
    "variants_table",
    *(_e.name for _e in _registry.REGISTRY),
]
