"""Named experiments, each with a ``quick`` profile (CPU, CI) and a ``full`` one (GPU, the book).

The profile is the one place the library reads the environment: an explicit
``profile=`` wins, then the variable ``ATTNSINK_PROFILE``, then ``full`` when CUDA is
available and ``quick`` otherwise. Used by every chapter and by ``python -m attnsink``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import cache
from .metrics import Evaluation, evaluate
from .task import TriggerTask
from .train import TrainResult, resolve_device, train_seeds

PROFILE_ENV = "ATTNSINK_PROFILE"
CACHE_ENV = "ATTNSINK_CACHE_DIR"
PROFILES = ("quick", "full")
FIGURE_TRIGGER_POS = 7  # the paper's figures put the trigger at 0-indexed position 7 ("position 8")
N_TEST = 1000  # test sequences for every reported metric and figure


def resolve_profile(profile: str | None = None) -> str:
    """The profile in use: ``profile``, else ``$ATTNSINK_PROFILE``, else full on CUDA, quick otherwise."""
    source = "profile"
    if profile is None:
        profile, source = os.environ.get(PROFILE_ENV) or None, PROFILE_ENV
    if profile is None:
        return "full" if torch.cuda.is_available() else "quick"
    if profile not in PROFILES:
        raise ValueError(f"{source} must be one of {list(PROFILES)}, got {profile!r}")
    return profile


def default_cache_dir() -> Path | None:
    """Where chapters cache trained models: ``$ATTNSINK_CACHE_DIR``, else ``~/.cache/attnsink``.

    Setting the variable to an empty string turns the cache off.
    """
    value = os.environ.get(CACHE_ENV)
    if value is None:
        return Path.home() / ".cache" / "attnsink"
    return Path(value) if value else None


def train_seeds_cached(
    task: TriggerTask,
    seeds: list[int],
    *,
    cache_dir: str | Path | None,
    attention: str,
    n_heads: int = 1,
    n_layers: int = 1,
    mlp: bool = False,
    layer_norm: bool = False,
    device: torch.device | str | None = None,
    progress: bool = False,
    **train_kwargs,
) -> list[TrainResult]:
    """:func:`attnsink.train.train_seeds`, reading each seed's result from the cache when it is
    there and training the missing seeds together (then storing them)."""
    dev = resolve_device(device)
    configs = {
        s: {
            "kind": "train_seeds",
            "task": asdict(task),
            "attention": attention,
            "n_heads": n_heads,
            "n_layers": n_layers,
            "mlp": mlp,
            "layer_norm": layer_norm,
            "seed": s,
            "device": dev.type,
            **train_kwargs,
        }
        for s in seeds
    }
    found = {}
    if cache_dir is not None:
        for s in seeds:
            payload = cache.load(cache_dir, configs[s])
            if payload is not None:
                found[s] = TrainResult.from_payload(payload)
    missing = [s for s in seeds if s not in found]
    if missing:
        trained = train_seeds(
            task,
            missing,
            attention=attention,
            n_heads=n_heads,
            n_layers=n_layers,
            mlp=mlp,
            layer_norm=layer_norm,
            device=dev,
            progress=progress,
            **train_kwargs,
        )
        for r in trained:
            found[r.seed] = r
            if cache_dir is not None:
                cache.store(cache_dir, configs[r.seed], r.to_payload())
    return [found[s] for s in seeds]


@dataclass(frozen=True)
class Settings:
    """The paper's one-layer training recipe (learning rate 1e-3, batch 128, stop at 5e-3),
    with a number of seeds and a step cap that depend on the experiment and the profile."""

    seeds: int
    steps: int
    lr: float = 1e-3
    batch_size: int = 128
    stop_linf: float = 5e-3

    def with_seeds(self, seeds: int | None) -> Settings:
        """These settings with ``seeds`` seeds (None keeps the profile's number)."""
        if seeds is None:
            return self
        if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
            raise ValueError(f"seeds must be a positive integer, got {seeds!r}")
        return Settings(**{**asdict(self), "seeds": seeds})

    def train(
        self,
        task: TriggerTask,
        attention: str,
        *,
        cache_dir: str | Path | None,
        device: torch.device | str | None = None,
        progress: bool = False,
        lr: float | None = None,
        **arch,
    ) -> list[TrainResult]:
        """Train seeds 0..seeds-1 with this recipe (through the cache); ``lr`` overrides the
        recipe's learning rate, ``arch`` holds the model's shape (``n_layers``, ``mlp``, ...)."""
        return train_seeds_cached(
            task,
            list(range(self.seeds)),
            cache_dir=cache_dir,
            attention=attention,
            steps=self.steps,
            lr=self.lr if lr is None else lr,
            batch_size=self.batch_size,
            stop_linf=self.stop_linf,
            device=device,
            progress=progress,
            **arch,
        )


SINGLE_LAYER = {
    # models stop early after about a thousand steps, so quick keeps the paper's criterion
    # and differs from full in the number of seeds and the step cap only
    "quick": Settings(seeds=3, steps=5_000),
    "full": Settings(seeds=10, steps=50_000),
}


def run_record(result: TrainResult, evaluation: Evaluation) -> dict:
    """One row of an experiment's JSON: the config, how training went, and the test metrics."""
    cfg = result.model.config
    summary = evaluation.summary()
    record = {
        "attention": cfg["attention"],
        "seed": result.seed,
        "n_layers": cfg["n_layers"],
        "n_heads": cfg["n_heads"],
        "mlp": cfg["mlp"],
        "layer_norm": cfg["layer_norm"],
        "steps": result.steps,
        "stopped_early": result.stopped_early,
        **summary,
    }
    if cfg["n_layers"] * cfg["n_heads"] > 1:
        record["heads"] = evaluation.per_head()
    return record


@dataclass
class SingleLayerResult:
    """Trained models, their test metrics, and the attention behind the Figure 3 panels."""

    profile: str
    settings: Settings
    task: TriggerTask
    results: dict[str, list[TrainResult]]  # attention -> one result per seed
    runs: list[dict]  # one record per (attention, seed), see run_record
    figure_attn: dict[str, torch.Tensor] = field(repr=False)  # attention -> (N_TEST, query, key), seed 0

    figure_name = "figure3"

    def figure(self):
        """The headline figure: the paper's Figure 3 panels."""
        from . import plots

        return plots.attention_mean_std(self.figure_attn, FIGURE_TRIGGER_POS)

    def to_json(self) -> dict:
        return {
            "experiment": "single_layer",
            "profile": self.profile,
            "settings": asdict(self.settings),
            "task": asdict(self.task),
            "runs": self.runs,
        }


def single_layer(
    profile: str | None = None,
    *,
    seeds: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
    cache_dir: str | Path | None = None,
) -> SingleLayerResult:
    """The paper's central experiment: one-layer one-head softmax and ReLU models, several seeds.

    Trained models are read from and stored in ``cache_dir`` when one is given. Used in
    chapter 1 and by ``python -m attnsink reproduce single_layer``.
    """
    profile = resolve_profile(profile)
    settings = SINGLE_LAYER[profile].with_seeds(seeds)
    task = TriggerTask()
    results, runs, figure_attn = {}, [], {}
    for attention in ("softmax", "relu"):
        results[attention] = settings.train(task, attention, cache_dir=cache_dir, device=device, progress=progress)
        for r in results[attention]:
            runs.append(run_record(r, evaluate(r.model, task, n=N_TEST)))
        shown = evaluate(results[attention][0].model, task, n=N_TEST, trigger_pos=FIGURE_TRIGGER_POS)
        figure_attn[attention] = shown.attn[0][:, 0]  # layer 0, head 0: (N_TEST, query, key)
    return SingleLayerResult(profile, settings, task, results, runs, figure_attn)


# ---- every way to let a head do nothing (chapter "Every way to let a head do nothing") ----

# What the theory predicts, written down before any training: rules whose rows must sum to
# 1 (the simplex) need a content-free token to park on, so they sink when BOS is there and
# cannot solve the task without it; clipped softmax ("partial") keeps a row sum between
# 1 + CLIP_GAMMA * i and 1 at row i (fewer than 34 keys), so the sink inequality still
# demands a sink of at least about 1 + CLIP_GAMMA * i; rules with an "off" state do not need BOS.
VARIANT_RULES = {
    "softmax": "simplex",
    "sigmoid_norm": "simplex",
    "clipped_softmax": "partial",
    "relu": "off state",
    "relu_visible": "off state",
    "softmax1": "off state",
    "sink_logit": "off state",
    "sigmoid": "off state",
    "gated": "off state",
}


VARIANTS = {
    "quick": Settings(seeds=3, steps=5_000),
    "full": Settings(seeds=5, steps=50_000),
}


@dataclass
class VariantsResult:
    """Every rule trained on the task with BOS and without it."""

    profile: str
    settings: Settings
    results: dict[tuple[str, bool], list[TrainResult]]  # (attention, bos) -> one result per seed
    runs: list[dict]
    figure_attn: dict[tuple[str, bool], torch.Tensor] = field(repr=False)  # (attention, bos) -> (N_TEST, q, k)
    figure_name = "variants"

    def figure(self):
        """The headline figure: BOS mass with BOS, and the error without BOS, for every rule."""
        from . import plots

        return plots.variants_summary(self.runs)

    def table(self):
        """One row per rule: means over seeds on the task with BOS, then on the task without it."""
        import pandas as pd

        def summary(df):
            g = df.groupby("attention", sort=False)
            return pd.DataFrame(
                {
                    "BOS mass": g["bos_mass_nontrigger"].mean(),
                    "attention mass": g["attn_mass_nontrigger"].mean(),
                    "BOS share": g["bos_share_nontrigger"].mean(),
                    "rel. err. trigger": g["rel_err_trigger"].mean(),
                    "rel. err. non-trigger": g["rel_err_nontrigger"].mean(),
                    "max error": g["linf"].max(),
                    "steps (median)": g["steps"].median().astype(int),
                    "stopped": g["stopped_early"].mean(),
                }
            )

        runs = pd.DataFrame(self.runs)
        classes = runs.groupby("attention", sort=False)["prediction"].first().rename("class")
        with_bos = summary(runs[~runs["no_bos"]])
        no_bos = summary(runs[runs["no_bos"]]).add_suffix(" (no BOS)")
        return pd.concat([classes, with_bos, no_bos], axis=1)

    def to_json(self) -> dict:
        return {
            "experiment": "variants",
            "profile": self.profile,
            "settings": asdict(self.settings),
            "predictions": VARIANT_RULES,
            "runs": self.runs,
        }


def variants(
    profile: str | None = None,
    *,
    seeds: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
    cache_dir: str | Path | None = None,
    rules: list[str] | None = None,
) -> VariantsResult:
    """Train every rule of :data:`VARIANT_RULES` on the paper's task and on the task without BOS.

    Used in the chapter "Every way to let a head do nothing" and by
    ``python -m attnsink reproduce variants``.
    """
    profile = resolve_profile(profile)
    settings = VARIANTS[profile].with_seeds(seeds)
    rules = list(VARIANT_RULES) if rules is None else rules
    for rule in rules:
        if rule not in VARIANT_RULES:
            raise ValueError(f"rules must be drawn from {list(VARIANT_RULES)}, got {rule!r}")
    results, runs, figure_attn = {}, [], {}
    for bos in (True, False):
        task = TriggerTask(bos=bos)
        for attention in rules:
            trained = settings.train(task, attention, cache_dir=cache_dir, device=device, progress=progress)
            results[attention, bos] = trained
            for r in trained:
                record = run_record(r, evaluate(r.model, task, n=N_TEST))
                record.update({"no_bos": not bos, "prediction": VARIANT_RULES[attention]})
                runs.append(record)
            shown = evaluate(trained[0].model, task, n=N_TEST, trigger_pos=FIGURE_TRIGGER_POS)
            figure_attn[attention, bos] = shown.attn[0][:, 0]
    return VariantsResult(profile, settings, results, runs, figure_attn)


# ---- a softmax head kept off BOS (theory chapter) ----

CAPS = {
    "quick": (0.0, 0.25, 0.5, 0.75, 0.9, 0.97, 1.0),
    "full": (0.0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.85, 0.9, 0.95, 0.97, 0.99, 1.0),
}
CAPPED_STEPS = {"quick": 3_000, "full": 20_000}
CAPPED_SEEDS = {"quick": 2, "full": 5}


def capped_bos(
    profile: str | None = None,
    *,
    device: torch.device | str | None = None,
    progress: bool = False,
    cache_dir: str | Path | None = None,
) -> list[dict]:
    """Train softmax heads whose weight on BOS is capped (``softmax_cap{c}``) for several caps.

    Returns one record per (cap, seed) with the test metrics and, from the theory
    chapter's inequality, the mean over non-trigger rows of the squared lower bound
    ``max(0, (1 - a_i0) D_i - |y_hat_0|)^2`` on each row's squared error.
    """
    from .metrics import sink_bound_terms

    profile = resolve_profile(profile)
    task = TriggerTask()
    records = []
    for cap in CAPS[profile]:
        trained = train_seeds_cached(
            task,
            list(range(CAPPED_SEEDS[profile])),
            cache_dir=cache_dir,
            attention=f"softmax_cap{cap}",
            steps=CAPPED_STEPS[profile],
            lr=1e-3,
            stop_linf=5e-3,
            device=device,
            progress=progress,
        )
        for r in trained:
            summary = evaluate(r.model, task, n=N_TEST).summary()
            terms = sink_bound_terms(r.model, task)
            bound = ((terms["mass_off_bos"] * terms["d_lower"] - terms["err_bos"]).clamp(min=0) ** 2).mean().item()
            records.append(
                {
                    "cap": cap,
                    "seed": r.seed,
                    "steps": r.steps,
                    "stopped_early": r.stopped_early,
                    **summary,
                    "sq_err_nontrigger_row": (terms["err_row"] ** 2).mean().item(),
                    "sq_bound_nontrigger_row": bound,
                    "mean_d": terms["d_lower"].mean().item(),  # the distance D_i, averaged over rows
                }
            )
    return records


# ---- many heads, many layers, MLPs and LayerNorm (chapters "Several layers", "Beyond the theorem") ----

SHAPES = ((2, 2), (4, 4))  # (n_layers, n_heads): the paper's Figures 4 to 8
MULTI_LAYER = {
    # the paper trains these at lr 1e-4 for up to 50,000 steps; on two CPU cores that budget is
    # out of reach, so quick trains at the one-layer rate 1e-3 for 2,000 steps (the sweep in
    # chapter "Beyond the theorem" shows what the learning rate changes)
    "quick": Settings(seeds=3, steps=2_000, lr=1e-3),
    "full": Settings(seeds=5, steps=50_000, lr=1e-4),
}
BLOCKS_SETTINGS = {  # the multi-layer recipe; quick trains fewer seeds and steps, to keep its chapter in three minutes
    "quick": Settings(seeds=2, steps=1_500, lr=1e-3),
    "full": MULTI_LAYER["full"],
}
BLOCKS = {  # name -> AttentionModel options; every model is 2 layers x 2 heads
    "mlp": {"mlp": True},
    "layer_norm": {"layer_norm": True},
    "mlp + layer_norm": {"mlp": True, "layer_norm": True},
}


@dataclass
class MultiLayerResult:
    """Residual models of several layers and heads, softmax and ReLU, with their test metrics."""

    profile: str
    settings: Settings
    task: TriggerTask
    results: dict[tuple[str, int, int], list[TrainResult]]  # (attention, n_layers, n_heads) or (attention, block)
    runs: list[dict]  # see run_record; each has "heads", one entry per (layer, head)
    figure_attn: dict[tuple, list[torch.Tensor]] = field(repr=False)  # key -> per-layer (N_TEST, heads, q, k)
    experiment: str = "multi_layer"
    figure_name = "heads"

    def heads(self):
        """One row per (run, layer, head): the run's config and the head's measurements and kind."""
        import pandas as pd

        rows = []
        for run in self.runs:
            base = {k: v for k, v in run.items() if k != "heads"}
            for h in run["heads"]:
                rows.append({**base, **h})
        return pd.DataFrame(rows)

    def figure(self):
        """BOS mass at non-trigger rows of every head, by model and kind (all seeds)."""
        from . import plots

        return plots.head_kinds(self.heads())

    def to_json(self) -> dict:
        return {
            "experiment": self.experiment,
            "profile": self.profile,
            "settings": asdict(self.settings),
            "task": asdict(self.task),
            "runs": self.runs,
        }


def _train_and_record(task, settings, attention, *, cache_dir, device, progress, **arch):
    trained = settings.train(task, attention, cache_dir=cache_dir, device=device, progress=progress, **arch)
    runs = [run_record(r, evaluate(r.model, task, n=N_TEST)) for r in trained]
    shown = evaluate(trained[0].model, task, n=N_TEST, trigger_pos=FIGURE_TRIGGER_POS)
    return trained, runs, shown.attn


def multi_layer(
    profile: str | None = None,
    *,
    seeds: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
    cache_dir: str | Path | None = None,
) -> MultiLayerResult:
    """The paper's multi-layer experiment: residual softmax and ReLU models of 2 layers x 2
    heads and 4 layers x 4 heads, several seeds. Used in chapters "Several layers" and
    "Beyond the theorem" and by ``python -m attnsink reproduce multi_layer``."""
    profile = resolve_profile(profile)
    settings = MULTI_LAYER[profile].with_seeds(seeds)
    task = TriggerTask(residual=True)
    results, runs, figure_attn = {}, [], {}
    for n_layers, n_heads in SHAPES:
        for attention in ("softmax", "relu"):
            key = (attention, n_layers, n_heads)
            results[key], new_runs, figure_attn[key] = _train_and_record(
                task,
                settings,
                attention,
                n_layers=n_layers,
                n_heads=n_heads,
                cache_dir=cache_dir,
                device=device,
                progress=progress,
            )
            runs += new_runs
    return MultiLayerResult(profile, settings, task, results, runs, figure_attn)


def blocks(
    profile: str | None = None,
    *,
    seeds: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
    cache_dir: str | Path | None = None,
) -> MultiLayerResult:
    """Beyond the paper's architecture: 2 x 2 residual models with an MLP block, pre-LayerNorm,
    or both (:data:`BLOCKS`), softmax and ReLU, with the multi-layer recipe (:data:`BLOCKS_SETTINGS`).
    Used in chapter "Beyond the theorem" and by ``python -m attnsink reproduce blocks``."""
    profile = resolve_profile(profile)
    settings = BLOCKS_SETTINGS[profile].with_seeds(seeds)
    task = TriggerTask(residual=True)
    results, runs, figure_attn = {}, [], {}
    for name, arch in BLOCKS.items():
        for attention in ("softmax", "relu"):
            key = (attention, name)
            results[key], new_runs, figure_attn[key] = _train_and_record(
                task,
                settings,
                attention,
                n_layers=2,
                n_heads=2,
                cache_dir=cache_dir,
                device=device,
                progress=progress,
                **arch,
            )
            for r in new_runs:
                r["blocks"] = name
            runs += new_runs
    return MultiLayerResult(profile, settings, task, results, runs, figure_attn, experiment="blocks")


# ---- how robust, how fast: one-layer sweeps ----

SWEEP_POINTS = {  # parameter -> values; the others stay at the paper's setting (L = 16, d = 16, lr = 1e-3)
    "quick": {"seq_len": (8, 16, 32, 64), "d_model": (8, 16, 32), "lr": (3e-4, 1e-3, 3e-3)},
    "full": {"seq_len": (8, 16, 32, 64, 128), "d_model": (8, 16, 32, 64), "lr": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)},
}
SWEEP = {
    "quick": Settings(seeds=3, steps=5_000),  # lr 3e-4 needs about 3,000 steps
    "full": Settings(seeds=5, steps=50_000),
}


def sink_timing(result: TrainResult, *, sink: float = 0.9, loss_drop: float = 0.1) -> dict:
    """When the sink forms, against when the loss drops, read off a run's history.

    ``step_sink``: the first step at which some head's BOS mass at non-trigger rows
    reaches ``sink``; ``step_loss``: the first step at which the batch loss falls to
    ``loss_drop`` times its value at step 0. None when it never happens.
    """
    h = result.history
    bos = h["bos_mass"].reshape(len(h["step"]), -1).max(axis=1)
    loss = h["loss"]

    def first(flags):
        idx = np.flatnonzero(flags)
        return int(idx[0]) if len(idx) else None

    return {"step_sink": first(bos >= sink), "step_loss": first(loss <= loss_drop * loss[0])}


@dataclass
class SweepResult:
    """One-layer softmax and ReLU models over sequence length, width and learning rate."""

    profile: str
    settings: Settings
    runs: list[dict]  # run_record + "swept", "seq_len", "d_model", "lr", sink_timing
    experiment = "sweep"
    figure_name = "sweep"

    def figure(self):
        from . import plots

        return plots.sweep(self.runs)

    def to_json(self) -> dict:
        return {
            "experiment": "sweep",
            "profile": self.profile,
            "settings": asdict(self.settings),
            "points": {k: list(v) for k, v in SWEEP_POINTS[self.profile].items()},
            "runs": self.runs,
        }


def sweep(
    profile: str | None = None,
    *,
    seeds: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
    cache_dir: str | Path | None = None,
) -> SweepResult:
    """Sweep one setting at a time (:data:`SWEEP_POINTS`) for one-layer softmax and ReLU heads.

    Used in chapter "Beyond the theorem" and by ``python -m attnsink reproduce sweep``.
    """
    profile = resolve_profile(profile)
    settings = SWEEP[profile].with_seeds(seeds)
    default = {"seq_len": 16, "d_model": 16, "lr": settings.lr}
    runs, done = [], {}  # the default point appears in every sweep: train it once
    for swept, values in SWEEP_POINTS[profile].items():
        for value in values:
            point = {**default, swept: value}
            task = TriggerTask(d_model=point["d_model"], seq_len=point["seq_len"])
            for attention in ("softmax", "relu"):
                key = (attention, *point.values())
                if key in done:
                    runs += [{**r, "swept": swept} for r in done[key]]
                    continue
                trained = settings.train(
                    task, attention, cache_dir=cache_dir, device=device, progress=progress, lr=point["lr"]
                )
                done[key] = [
                    {"swept": swept, **point, **run_record(r, evaluate(r.model, task, n=N_TEST)), **sink_timing(r)}
                    for r in trained
                ]
                runs += done[key]
    return SweepResult(profile, settings, runs)


EXPERIMENTS = {
    "single_layer": single_layer,
    "variants": variants,
    "multi_layer": multi_layer,
    "blocks": blocks,
    "sweep": sweep,
}
