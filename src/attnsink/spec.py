"""What one training run of the trigger task is, typed: :class:`RunSpec` (the task, the
architecture, the recipe). Used by every chapter that trains, through the experiments.

A run spec is the experiment's job (:class:`attnsink.parallel.Job` holds one), the results
cache's key (:meth:`RunSpec.config`) and the engine's argument (:func:`attnsink.engine.train_spec`),
so a learning rate can be followed by name from a chapter to the Adam update:
``Context.job(lr=...)`` -> ``Recipe.lr`` -> ``RunSpec`` -> ``train_spec`` -> the engine's loop.

The paper's recipe (Ran-Milo, 2026) is written here once: Adam at learning rate
:data:`PAPER_LR`, batches of :data:`PAPER_BATCH` sequences, and the stopping rule: stop once
the batch's largest absolute error is below :data:`PAPER_STOP`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from .task import TriggerTask

PAPER_LR = 1e-3  # the one-layer models' learning rate (the deeper ones train at 1e-4)
PAPER_BATCH = 128  # sequences per batch
PAPER_STOP = 5e-3  # stop once the batch's largest absolute error is below this (None: never)
KIND = "train_seeds"  # the results cache's kind for these runs (its training version: cache.TRAINING_VERSIONS)


@dataclass(frozen=True)
class Arch:
    """The model's shape besides what the task fixes (``d_model`` and ``residual``): the
    attention rule (:mod:`attnsink.attention`), heads per layer, layers, and the optional
    MLP block and pre-LayerNorm (:class:`attnsink.model.AttentionModel`)."""

    attention: str = "softmax"
    n_heads: int = 1
    n_layers: int = 1
    mlp: bool = False
    layer_norm: bool = False
    causal: bool = True  # False: every query sees the whole sequence (attention.BIDIRECTIONAL_RULES only)

    def __post_init__(self):
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be True or False, got {self.causal!r}")


KEY_OMITTED_DEFAULTS = {"causal": True}
"""Options added after the store held entries: at these defaults they are left out of an
entry's key, so the runs that existed before the option keep their keys (and their stored models)."""


@dataclass(frozen=True)
class Recipe:
    """How a model is trained: at most ``steps`` Adam updates at learning rate ``lr`` on
    batches of ``batch_size`` fresh sequences, stopping once a batch's largest absolute error
    is below ``stop_linf`` (None: never)."""

    steps: int
    lr: float = PAPER_LR
    batch_size: int = PAPER_BATCH
    stop_linf: float | None = PAPER_STOP


ARCH_FIELDS = tuple(f.name for f in fields(Arch))
RECIPE_FIELDS = tuple(f.name for f in fields(Recipe))


@dataclass(frozen=True)
class RunSpec:
    """One training run of the trigger task, but for its seed: ``task``, ``arch``, ``recipe``."""

    task: TriggerTask
    arch: Arch
    recipe: Recipe

    kind = KIND

    @classmethod
    def from_options(cls, task: TriggerTask, options: dict) -> RunSpec:
        """The spec of ``task`` trained with ``options``, the keyword arguments of
        :func:`attnsink.engine.train_seeds` (the :class:`Arch` and :class:`Recipe` fields;
        ``steps`` and ``lr`` must be given); ``ValueError`` for an unknown or missing one."""
        unknown = set(options) - {*ARCH_FIELDS, *RECIPE_FIELDS}
        if unknown:
            raise ValueError(
                f"unknown training options {sorted(unknown)}; expected some of {sorted({*ARCH_FIELDS, *RECIPE_FIELDS})}"
            )
        for name in ("steps", "lr"):
            if name not in options:
                raise ValueError(f"{name} must be given")
        arch = Arch(**{k: v for k, v in options.items() if k in ARCH_FIELDS})
        recipe = Recipe(**{k: v for k, v in options.items() if k in RECIPE_FIELDS})
        return cls(task, arch, recipe)

    def options(self) -> dict:
        """The architecture and the recipe as :func:`attnsink.engine.train_seeds`' keyword arguments."""
        return {**asdict(self.arch), **asdict(self.recipe)}

    def model_config(self) -> dict:
        """The :attr:`attnsink.model.AttentionModel.config` of this run's models."""
        return {"d_model": self.task.d_model, "residual": self.task.residual, **asdict(self.arch)}

    def base_config(self) -> dict:
        """The results-cache config shared by this run's seeds (:meth:`config` without the seed)."""
        omitted = {k for k, v in self.options().items() if k in KEY_OMITTED_DEFAULTS and v is KEY_OMITTED_DEFAULTS[k]}
        options = {k: v for k, v in self.options().items() if k not in omitted}
        return {"kind": self.kind, "task": asdict(self.task), **options}

    def config(self, seed: int) -> dict:
        """The results-cache config of seed ``seed``: the key of its entry (with the training version)."""
        return {**self.base_config(), "seed": seed}
