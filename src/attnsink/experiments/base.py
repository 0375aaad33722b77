"""What every experiment shares: its arguments, its cached training, its result type.

An experiment is a function registered with :func:`experiment`: it receives a
:class:`Context` (the profile, its :class:`~attnsink.profiles.Settings`, where to train
and cache) and returns an :class:`ExperimentResult`. The decorator gives every experiment
the same public signature, ``name(profile=None, *, seeds=None, seed_list=None, steps=None,
lr=None, device=None, progress=False, cache_dir=None, workers=None, **options)`` (``seeds``,
``seed_list``, ``steps`` and ``lr`` override the profile's settings:
:meth:`~attnsink.profiles.Settings.with_overrides`), and enters it in :data:`EXPERIMENTS`, which
the command line reads.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd
import torch

from .. import registry
from ..cache import MissingResultsError
from ..metrics import Evaluation, evaluate
from ..parallel import Job, job_configs, train_many
from ..profiles import FIGURE_TRIGGER_POS, N_TEST, Settings, resolve_profile, resolve_training
from ..spec import Arch, RunSpec
from ..task import TriggerTask
from ..training import TrainResult

EXPERIMENTS: dict[str, Callable[..., ExperimentResult]] = {}
"""Every registered experiment by name: what ``python -m attnsink reproduce NAME`` runs."""
_BODIES: dict[str, tuple[Callable, dict[str, Settings]]] = {}
CHAPTERS: dict[str, tuple[int, ...]] = {}
"""Every registered experiment's chapters (from :data:`attnsink.registry.REGISTRY`): the
book's chapters that read its models."""


class Planned(Exception):
    """Raised by a planning :class:`Context` at the training call: the plan is complete."""


@dataclass(frozen=True)
class Context:
    """What an experiment is asked to do: its profile and settings, where to train, where to cache."""

    name: str
    profile: str
    settings: Settings
    device: torch.device | str | None = None
    progress: bool = False
    cache_dir: str | Path | None = None
    workers: int | None = None
    train: bool = True  # may it train what is neither stored nor cached (see profiles.resolve_training)
    plan: list | None = None  # when a list: collect the configs of the models asked for, train nothing

    def missing(self, what: str) -> MissingResultsError:
        """The error for models that are neither stored nor cached where training is not allowed."""
        return MissingResultsError(
            f"{self.name} ({self.profile} profile): {what} are neither in the store nor in the results cache; "
            f"make them with `python -m attnsink reproduce {self.name} --profile {self.profile} --store`, "
            "or set ATTNSINK_TRAIN=1 to train them here"
        )

    def job(self, task: TriggerTask, attention: str, *, lr: float | None = None, **arch) -> Job:
        """The settings' seeds (:attr:`~attnsink.profiles.Settings.seed_ids`) of one run:
        ``task``, the architecture (``attention`` and ``arch``: ``n_layers``, ``mlp``, ... as
        :class:`~attnsink.spec.Arch` names them) and the profile's recipe, whose learning rate
        ``lr`` overrides."""
        recipe = self.settings.recipe()
        if lr is not None:
            recipe = replace(recipe, lr=lr)
        return Job(RunSpec(task, Arch(attention=attention, **arch), recipe), self.settings.seed_ids)

    def train_many(self, jobs: dict) -> dict[object, list]:
        """Every job of ``jobs`` (key -> :meth:`job`, or any :class:`~attnsink.parallel.Job`)
        trained through the cache, the missing ones side by side
        (:func:`attnsink.parallel.train_many`); the results under the same keys."""
        if self.plan is not None:
            for job in jobs.values():
                self.plan.extend(job_configs(job))
            raise Planned
        try:
            trained = train_many(
                list(jobs.values()),
                cache_dir=self.cache_dir,
                device=self.device,
                progress=self.progress,
                workers=self.workers,
                allow_training=self.train,
            )
        except MissingResultsError as e:
            raise self.missing(str(e)) from None
        return dict(zip(jobs, trained))

    def record(self, trained: list[TrainResult], task: TriggerTask) -> tuple[list[dict], list]:
        """One :func:`run_record` per seed, and seed 0's attention on test sequences with the
        trigger at :data:`~attnsink.profiles.FIGURE_TRIGGER_POS` (per layer)."""
        runs = [run_record(r, evaluate(r.model, task, n=N_TEST)) for r in trained]
        shown = evaluate(trained[0].model, task, n=N_TEST, trigger_pos=FIGURE_TRIGGER_POS)
        return runs, shown.attn

    def result(self, runs: list[dict], **fields) -> ExperimentResult:
        """This experiment's result: ``runs`` and any other :class:`ExperimentResult` field."""
        return ExperimentResult(self.name, self.profile, self.settings, runs, **fields)


def run_record(result: TrainResult, evaluation: Evaluation) -> dict:
    """One row of an experiment's JSON: the model's shape, how training went, and the test metrics
    (with one entry per head under ``heads`` when the model has more than one)."""
    cfg = result.model.config
    record = {
        "attention": cfg["attention"],
        "seed": result.seed,
        "n_layers": cfg["n_layers"],
        "n_heads": cfg["n_heads"],
        "mlp": cfg["mlp"],
        "layer_norm": cfg["layer_norm"],
        "steps": result.steps,
        "stopped_early": result.stopped_early,
        **evaluation.summary(),
    }
    if cfg["n_layers"] * cfg["n_heads"] > 1:
        record["heads"] = evaluation.per_head()
    return record


@dataclass
class ExperimentResult:
    """What every experiment returns.

    ``runs`` has one record per trained model (:func:`run_record` plus the experiment's own
    fields) and is what the JSON holds; ``results`` maps a model key (the rule, or the rule
    and shape) to one :class:`~attnsink.training.TrainResult` per seed; ``figure_attn`` holds
    the attention of seed 0 on test sequences with the trigger at position 7; ``task`` is the
    task every model learned (None when they learned several); ``meta`` holds what else the
    JSON records (the predictions of chapter 6, the sweep's points, ...).
    """

    experiment: str
    profile: str
    settings: Settings
    runs: list[dict]
    task: TriggerTask | None = None
    results: dict = field(default_factory=dict, repr=False)
    figure_attn: dict = field(default_factory=dict, repr=False)
    meta: dict = field(default_factory=dict)

    def frame(self) -> pd.DataFrame:
        """The runs as a table, one row per trained model (without the per-head entries)."""
        return pd.DataFrame([{k: v for k, v in run.items() if k != "heads"} for run in self.runs])

    def heads(self) -> pd.DataFrame:
        """One row per (run, layer, head): the run's fields and the head's measurements and kind."""
        rows = []
        for run in self.runs:
            base = {k: v for k, v in run.items() if k != "heads"}
            rows += [{**base, **h} for h in run.get("heads", [])]
        return pd.DataFrame(rows)

    @property
    def figure_name(self) -> str:
        """The file-name tag of the headline figure (``NAME.FIGURE.png`` beside the JSON)."""
        return _FIGURES[self.experiment][0]

    def figure(self):
        """The experiment's headline figure (a matplotlib Figure)."""
        return _FIGURES[self.experiment][1](self)

    def to_json(self) -> dict:
        """The JSON record: experiment, profile, settings, task (when there is one), meta, runs."""
        out = {"experiment": self.experiment, "profile": self.profile, "settings": asdict(self.settings)}
        if self.task is not None:
            out["task"] = asdict(self.task)
        return {**out, **self.meta, "runs": self.runs}


_FIGURES: dict[str, tuple[str, Callable[[ExperimentResult], object]]] = {}


def _public_signature(body: Callable) -> inspect.Signature:
    """The shared arguments, then the experiment's own keyword options."""
    P = inspect.Parameter
    common = [
        P("profile", P.POSITIONAL_OR_KEYWORD, default=None, annotation="str | None"),
        P("seeds", P.KEYWORD_ONLY, default=None, annotation="int | None"),
        P("seed_list", P.KEYWORD_ONLY, default=None, annotation="list[int] | None"),
        P("steps", P.KEYWORD_ONLY, default=None, annotation="int | None"),
        P("lr", P.KEYWORD_ONLY, default=None, annotation="float | None"),
        P("device", P.KEYWORD_ONLY, default=None, annotation="torch.device | str | None"),
        P("progress", P.KEYWORD_ONLY, default=False, annotation="bool"),
        P("cache_dir", P.KEYWORD_ONLY, default=None, annotation="str | Path | None"),
        P("workers", P.KEYWORD_ONLY, default=None, annotation="int | None"),
        P("train", P.KEYWORD_ONLY, default=None, annotation="bool | None"),
    ]
    own = list(inspect.signature(body).parameters.values())[1:]  # after ctx
    return inspect.Signature(common + own, return_annotation="ExperimentResult")


def experiment(name: str, settings: dict[str, Settings], *, figure: Callable, figure_name: str):
    """Register ``body(ctx, **options)`` as the experiment ``name``, declared in
    :data:`attnsink.registry.REGISTRY` (its chapters come from there): it runs with the
    settings ``settings[profile]`` (read at call time) and its result draws ``figure(result)``."""
    entry = registry.get(name)
    chapters = entry.chapters

    def register(body: Callable[..., ExperimentResult]) -> Callable[..., ExperimentResult]:
        @functools.wraps(body)
        def run(
            profile=None,
            *,
            seeds=None,
            seed_list=None,
            steps=None,
            lr=None,
            device=None,
            progress=False,
            cache_dir=None,
            workers=None,
            train=None,
            **options,
        ):
            profile = resolve_profile(profile)
            if lr is not None and not entry.takes_lr:
                raise ValueError(f"lr: {name} sets its learning rates itself, so it takes no lr")
            ctx = Context(
                name,
                profile,
                settings[profile].with_overrides(seeds=seeds, seed_list=seed_list, steps=steps, lr=lr),
                device,
                progress,
                cache_dir,
                workers,
                resolve_training(train, profile),
            )
            return body(ctx, **options)

        del run.__wrapped__  # the public signature is the shared one, not body's
        run.__signature__ = _public_signature(body)
        EXPERIMENTS[name] = run
        _BODIES[name] = (body, settings)
        CHAPTERS[name] = tuple(chapters)
        _FIGURES[name] = (figure_name, figure)
        return run

    return register


def chapter_experiments(chapter: int) -> list[str]:
    """The experiments whose models chapter ``chapter`` reads (:data:`CHAPTERS`), by name."""
    names = [name for name, chapters in CHAPTERS.items() if chapter in chapters]
    if not names:
        raise ValueError(
            f"chapter must be one of {sorted({c for cs in CHAPTERS.values() for c in cs})}, got {chapter!r}"
        )
    return sorted(names)


def planned_configs(name: str, profile: str) -> list[dict]:
    """The results-cache configs of every model the experiment ``name`` trains under ``profile``
    (the profile's seeds, default options), found without training or loading anything."""
    if name not in _BODIES:
        raise ValueError(f"name must be one of {sorted(_BODIES)}, got {name!r}")
    body, settings = _BODIES[name]
    ctx = Context(name, resolve_profile(profile), settings[resolve_profile(profile)], device="cpu", plan=[])
    try:
        body(ctx)
    except Planned:
        return ctx.plan
    raise RuntimeError(f"experiment {name} returned without asking for any model")
