"""Sweeps from a spec file: every combination of the settings it lists, trained on this
machine or on a Ray cluster, through the results cache.

A spec is a YAML mapping. Every axis is a list of values; an axis the spec does not list
keeps the paper's value (:data:`DEFAULTS`)::

    attention: [softmax, relu]
    seq_len: [8, 16]
    seeds: 2          # seeds 0 and 1 of every point
    steps: 400        # the step cap of every run

A spec may also hold ``grids``, a list of such mappings of axes: the points are then the
union of each sub-grid's combinations (the top-level axes apply to all of them, and an axis
a sub-grid lists replaces the top-level one there), which
expresses one-setting-at-a-time sweeps such as chapter 5's (``examples/sweep.yaml``); a
point listed twice is trained once. The other keys: ``seeds`` (default 1), ``steps``
(default: the step cap of chapter 5's sweep in the spec's ``profile``, else the profile in
use), ``stop_linf`` (the stopping rule, default the paper's 5e-3; null for none) and, for
the Ray backend, ``num_cpus`` and ``num_gpus`` per task and ``max_retries``.

Each point trains its seeds as one stack (:func:`attnsink.engine.train_seeds`), one group
per point, through :func:`attnsink.parallel.train_many`; points already in the results
cache are not trained again, so a second run of a spec, or a run the chapters have already
done, trains nothing. :func:`run_grid` writes one JSON record per run (the fields of the
other experiments, plus the point's settings), a CSV table and a summary figure.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..attention import ATTENTION_RULES, CAPPED_PREFIX, get_rule
from ..engine import check_fits
from ..metrics import evaluate, sink_timing
from ..parallel import Job, train_many
from ..profiles import N_TEST, SWEEP, resolve_profile
from ..spec import ARCH_FIELDS, PAPER_BATCH, PAPER_LR, PAPER_STOP, Arch, Recipe, RunSpec
from ..task import TriggerTask
from .base import run_record


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_rule(v) -> bool:
    try:
        get_rule(v)
    except (ValueError, TypeError):
        return False
    return True


# axis -> (what a value must be, the check)
AXES = {
    "attention": (f"one of {sorted(ATTENTION_RULES)} or {CAPPED_PREFIX}<cap in [0, 1]>", lambda v: _is_rule(v)),
    "seq_len": ("a whole number >= 2", lambda v: _is_int(v) and v >= 2),
    "d_model": ("a whole number >= 1", lambda v: _is_int(v) and v >= 1),
    "n_layers": ("a whole number >= 1", lambda v: _is_int(v) and v >= 1),
    "n_heads": ("a whole number >= 1", lambda v: _is_int(v) and v >= 1),
    "lr": ("a number > 0", lambda v: _is_number(v) and v > 0),
    "batch_size": ("a whole number >= 1", lambda v: _is_int(v) and v >= 1),
    "residual": ("true or false", lambda v: isinstance(v, bool)),
    "bos": ("true or false", lambda v: isinstance(v, bool)),
    "mlp": ("true or false", lambda v: isinstance(v, bool)),
    "layer_norm": ("true or false", lambda v: isinstance(v, bool)),
}
DEFAULTS = {  # the paper's setting
    "attention": "softmax",
    "seq_len": 16,
    "d_model": 16,
    "n_layers": 1,
    "n_heads": 1,
    "lr": PAPER_LR,
    "batch_size": PAPER_BATCH,
    "residual": False,
    "bos": True,
    "mlp": False,
    "layer_norm": False,
}
SCALARS = {
    "seeds": ("a whole number >= 1", lambda v: _is_int(v) and v >= 1),
    "steps": ("a whole number >= 1", lambda v: _is_int(v) and v >= 1),
    "profile": ("'quick' or 'full'", lambda v: v in ("quick", "full")),
    "stop_linf": ("a number > 0, or null", lambda v: v is None or (_is_number(v) and v > 0)),
    "num_cpus": ("a number > 0", lambda v: _is_number(v) and v > 0),
    "num_gpus": ("a number >= 0", lambda v: _is_number(v) and v >= 0),
    "max_retries": ("a whole number >= 0", lambda v: _is_int(v) and v >= 0),
}


@dataclass(frozen=True)
class GridSpec:
    """A checked spec: its points (every axis filled in), and how to train them."""

    points: tuple[dict, ...]
    seeds: int = 1
    steps: int = 5_000
    stop_linf: float | None = PAPER_STOP
    ray: dict = field(default_factory=dict)  # num_cpus, num_gpus, max_retries for the ray backend

    def check_fits(self, device=None) -> None:
        """``ValueError`` naming ``seeds`` if any point's seeds, stacked, cannot fit in the memory
        free on ``device`` (:func:`attnsink.engine.check_fits`), before a model is built."""
        for job in self.jobs(seeds=1):
            check_fits(job.spec, self.seeds, device)

    def jobs(self, seeds: int | None = None) -> list[Job]:
        """One training group per point: its seeds (the spec's, or the first ``seeds``) as one stack."""
        out = []
        for p in self.points:
            task = TriggerTask(d_model=p["d_model"], seq_len=p["seq_len"], residual=p["residual"], bos=p["bos"])
            arch = Arch(**{k: p[k] for k in ARCH_FIELDS if k in p})  # a grid trains causal models
            recipe = Recipe(steps=self.steps, lr=p["lr"], batch_size=p["batch_size"], stop_linf=self.stop_linf)
            out.append(Job(RunSpec(task, arch, recipe), tuple(range(self.seeds if seeds is None else seeds))))
        return out


def _check_point(point: dict, where: str) -> None:
    """The rules between settings that the task and the model enforce, checked before training."""
    try:
        TriggerTask(d_model=point["d_model"], seq_len=point["seq_len"], residual=point["residual"], bos=point["bos"])
    except ValueError as e:
        raise ValueError(f"{where}: the point {point} is not a valid task: {e}") from None
    needs = [k for k in ("mlp", "layer_norm") if point[k]] + (["n_layers > 1"] if point["n_layers"] > 1 else [])
    if needs and not point["residual"]:
        raise ValueError(
            f"{where}: the point {point} has {', '.join(needs)}, which needs residual: true "
            "(add residual: [true] to the spec)"
        )


def _check_axes(axes: dict, where: str) -> dict:
    for key, values in axes.items():
        name = f"{where}{key}"
        if not isinstance(values, list):
            raise ValueError(f"{name} must be a list of values (every axis is a list), got {values!r}")
        if not values:
            raise ValueError(f"{name} is empty: list at least one value")
        what, ok = AXES[key]
        for i, v in enumerate(values):
            if not ok(v):
                raise ValueError(f"{name}[{i}] must be {what}, got {v!r}")
        if len({float(v) if key == "lr" else repr(v) for v in values}) < len(values):
            raise ValueError(f"{name} lists a value twice: {values!r}")
    return axes


def _loader():
    """PyYAML's safe loader, reading ``3e-4`` and ``1e-05`` as numbers (YAML 1.2 and JSON do;
    PyYAML's YAML 1.1 rule wants a dot, ``3.0e-4``, and reads them as strings otherwise)."""
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )
    return Loader


def load_spec(spec: str | Path | dict) -> GridSpec:
    """A :class:`GridSpec` from a YAML file (a path) or a mapping; ``ValueError`` naming the key
    for anything wrong (an unknown key, an axis that is not a non-empty list, a value of the
    wrong type or out of range), before anything trains."""
    if isinstance(spec, (str, Path)):
        import yaml

        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"spec {str(path)!r} is not a file")
        try:
            spec = yaml.load(path.read_text(), Loader=_loader())
        except yaml.YAMLError as e:
            raise ValueError(f"spec {str(path)!r} is not valid YAML: {e}") from e
    if not isinstance(spec, dict) or not spec:
        raise ValueError(f"a spec must be a non-empty mapping of settings, got {spec!r}")
    unknown = set(spec) - set(AXES) - set(SCALARS) - {"grids"}
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)} in the spec; axes are {sorted(AXES)}, "
                         f"other keys {sorted([*SCALARS, 'grids'])}")  # fmt: skip
    for key in set(spec) & set(SCALARS):
        what, ok = SCALARS[key]
        if not ok(spec[key]):
            raise ValueError(f"{key} must be {what}, got {spec[key]!r}")
    top = _check_axes({k: v for k, v in spec.items() if k in AXES}, "")
    grids = spec.get("grids", [{}])
    if not isinstance(grids, list) or not grids:
        raise ValueError(f"grids must be a non-empty list of mappings of axes, got {grids!r}")
    points, seen = [], set()
    for i, sub in enumerate(grids):
        if not isinstance(sub, dict):
            raise ValueError(f"grids[{i}] must be a mapping of axes, got {sub!r}")
        bad = set(sub) - set(AXES)
        if bad:
            raise ValueError(f"unknown axis {sorted(bad)} in grids[{i}]; axes are {sorted(AXES)}")
        axes = {k: [v] for k, v in DEFAULTS.items()}
        axes.update(top)
        axes.update(_check_axes(sub, f"grids[{i}]."))
        for combo in itertools.product(*axes.values()):
            point = dict(zip(axes, combo))
            point["lr"] = float(point["lr"])  # lr 1 and 1.0 are one point
            _check_point(point, f"grids[{i}]" if "grids" in spec else "the spec")
            key = json.dumps(point, sort_keys=True)
            if key not in seen:
                seen.add(key)
                points.append(point)
    profile = resolve_profile(spec.get("profile"))
    return GridSpec(
        points=tuple(points),
        seeds=spec.get("seeds", 1),
        steps=spec.get("steps", SWEEP[profile].steps),
        stop_linf=spec.get("stop_linf", PAPER_STOP),
        ray={k: spec[k] for k in ("num_cpus", "num_gpus", "max_retries") if k in spec},
    )


@dataclass
class GridResult:
    """The records of a grid's runs (one per point and seed) and the spec that made them."""

    spec: GridSpec
    runs: list[dict]

    @property
    def diverged(self) -> list[dict]:
        """The runs whose training ended in a non-finite loss."""
        return [r for r in self.runs if r.get("diverged")]

    def frame(self):
        """The runs as a table, one row per (point, seed), without the per-head entries
        (a diverged run's metrics are empty)."""
        import pandas as pd

        return pd.DataFrame([{k: v for k, v in r.items() if k != "heads"} for r in self.runs])

    def figure(self):
        """Each varied axis against the mean BOS mass at non-trigger rows and the largest error
        (:func:`attnsink.plots.grid_summary`; a column slices the others at :data:`DEFAULTS`)."""
        from .. import plots

        varied = [k for k in AXES if k != "attention" and len({repr(p[k]) for p in self.spec.points}) > 1]
        frame = self.frame()
        trained = frame[~frame["diverged"].astype(bool)]
        if trained.empty:  # nothing to draw but the news
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(4, 1.5))
            ax.text(0.5, 0.5, "every run diverged (non-finite loss)", ha="center", va="center")
            ax.set_axis_off()
            return fig
        return plots.grid_summary(trained, varied, DEFAULTS)


def run_grid(
    spec: str | Path | dict | GridSpec,
    *,
    backend: str = "local",
    address: str | None = None,
    cache_dir: str | Path | None = None,
    device=None,
    workers: int | None = None,
    progress: bool = False,
) -> GridResult:
    """Train every point of ``spec`` (seeds as one stack per point) and evaluate each run on
    :data:`~attnsink.profiles.N_TEST` test sequences. A point whose training ends in a
    non-finite loss does not stop the sweep: its runs are recorded with ``diverged`` True and
    the ``error``, and no metrics (every other run has ``diverged`` False). ``backend`` is ``"local"`` (processes on
    this machine, ``workers`` at once) or ``"ray"`` (one Ray task per point; ``address``
    joins a running cluster, None starts a local one)."""
    if not isinstance(spec, GridSpec):
        spec = load_spec(spec)
    ray_options = {**spec.ray, "address": address} if backend == "ray" else None
    if backend != "ray" and address is not None:
        raise ValueError("address is only for backend='ray'")
    if backend == "local":  # a Ray worker checks its own machine when it trains
        spec.check_fits(device)
    jobs = spec.jobs()
    failures: dict[int, str] = {}
    trained = train_many(
        jobs,
        cache_dir=cache_dir,
        device=device,
        progress=progress,
        workers=workers,
        backend=backend,
        ray_options=ray_options,
        failures=failures,
    )
    runs = []
    for i, (point, job, results) in enumerate(zip(spec.points, jobs, trained)):
        for seed, r in zip(job.seeds, results):
            if r is None:  # its group diverged: a record that says so, and the sweep goes on
                runs.append({**point, "seed": seed, "diverged": True, "error": failures[i]})
                continue
            record = run_record(r, evaluate(r.model.cpu(), job.task, n=N_TEST))
            runs.append({**point, **record, **sink_timing(r.history), "diverged": False})
    return GridResult(spec, runs)
