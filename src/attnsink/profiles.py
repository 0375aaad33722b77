"""Every knob of the book's experiments on one page: the ``quick`` profile (CPU, CI) and the
``full`` one (GPU, the published book).

The profile is the one place the library reads the environment: an explicit
``profile=`` wins, then the variable ``ATTNSINK_PROFILE``, then ``full`` when CUDA is
available and ``quick`` otherwise. Whether an experiment may train what is neither stored
nor cached is decided here too (:func:`resolve_training`). The experiments of :mod:`attnsink.experiments` read
their settings from the tables below.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields

from ._checks import check_int
from .spec import Recipe

PROFILE_ENV = "ATTNSINK_PROFILE"
TRAIN_ENV = "ATTNSINK_TRAIN"
PROFILES = ("quick", "full")
FIGURE_TRIGGER_POS = 7  # the paper's figures put the trigger at 0-indexed position 7 ("position 8")
N_TEST = 1000  # test sequences for every reported metric and figure


def resolve_profile(profile: str | None = None) -> str:
    """The profile in use: ``profile``, else ``$ATTNSINK_PROFILE``, else full on CUDA, quick otherwise."""
    source = "profile"
    if profile is None:
        profile, source = os.environ.get(PROFILE_ENV) or None, PROFILE_ENV
    if profile is None:
        import torch  # here, so that reading the settings does not load torch

        return "full" if torch.cuda.is_available() else "quick"
    if profile not in PROFILES:
        raise ValueError(f"{source} must be one of {list(PROFILES)}, got {profile!r}")
    return profile


def resolve_training(train: bool | None, profile: str) -> bool:
    """Whether an experiment may train models it finds neither in the store nor in the cache:
    ``train``, else ``$ATTNSINK_TRAIN`` (``1`` yes, ``0`` no), else yes for ``quick`` (minutes)
    and no for ``full`` (hours on a CPU: the book reads the stored models and says what is
    missing rather than train inside a notebook cell)."""
    if train is not None:
        if not isinstance(train, bool):
            raise ValueError(f"train must be True, False or None, got {train!r}")
        return train
    value = os.environ.get(TRAIN_ENV)
    if value:
        if value not in ("0", "1"):
            raise ValueError(f"{TRAIN_ENV} must be 0 or 1, got {value!r}")
        return value == "1"
    return profile == "quick"


@dataclass(frozen=True, kw_only=True)
class Settings(Recipe):
    """A profile's settings for one experiment: a training :class:`~attnsink.spec.Recipe`
    (by default the paper's) with a number of ``seeds`` (or which seeds, ``seed_list``). The
    recipe's ``steps`` is the step cap."""

    seeds: int
    seed_list: tuple[int, ...] | None = None  # which seeds; None: 0 .. seeds - 1

    @property
    def seed_ids(self) -> tuple[int, ...]:
        """The seeds to train: :attr:`seed_list`, else ``0 .. seeds - 1``."""
        return tuple(self.seed_list) if self.seed_list is not None else tuple(range(self.seeds))

    def with_seeds(self, seeds: int | None) -> Settings:
        """These settings with ``seeds`` seeds (None keeps the profile's number)."""
        return self.with_overrides(seeds=seeds)

    def with_overrides(
        self,
        *,
        seeds: int | None = None,
        steps: int | None = None,
        lr: float | None = None,
        seed_list: list[int] | tuple[int, ...] | None = None,
    ) -> Settings:
        """These settings with any of ``seeds`` (a number), ``seed_list`` (which seeds, distinct
        and non-negative; not with ``seeds``), ``steps`` (the step cap) and ``lr`` (in (0, 1])
        replaced; None keeps the profile's. ``ValueError`` names a bad one."""
        new = asdict(self)
        if seeds is not None and seed_list is not None:
            raise ValueError("seeds and seed_list: give one (seed_list sets the number of seeds too)")
        if seeds is not None:
            check_int("seeds", seeds, 1)
            new.update(seeds=seeds, seed_list=None)
        if seed_list is not None:
            seed_list = tuple(seed_list)
            if not seed_list:
                raise ValueError("seed_list must name at least one seed")
            for seed in seed_list:
                check_int("seed_list", seed, 0)
            if len(set(seed_list)) != len(seed_list):
                raise ValueError(f"seed_list must not repeat a seed, got {list(seed_list)}")
            new.update(seeds=len(seed_list), seed_list=seed_list)
        if steps is not None:
            check_int("steps", steps, 1)
            new["steps"] = steps
        if lr is not None:
            if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr <= 1:
                raise ValueError(f"lr must be a number in (0, 1], got {lr!r}")
            new["lr"] = float(lr)
        return Settings(**new)

    def recipe(self) -> Recipe:
        """The training recipe alone (the seeds left out)."""
        return Recipe(**{f.name: getattr(self, f.name) for f in fields(Recipe)})


# ---- chapter 1: the paper's central experiment ----
SINGLE_LAYER = {
    # models stop early after about a thousand steps, so quick keeps the paper's criterion
    # and differs from full in the number of seeds and the step cap only
    "quick": Settings(seeds=3, steps=5_000),
    "full": Settings(seeds=10, steps=50_000),
}

# ---- chapter 2: a softmax head kept off BOS ----
CAPPED = {"quick": Settings(seeds=2, steps=3_000), "full": Settings(seeds=5, steps=20_000)}
CAPS = {
    "quick": (0.0, 0.25, 0.5, 0.75, 0.9, 0.97, 1.0),
    "full": (0.0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.85, 0.9, 0.95, 0.97, 0.99, 1.0),
}

# ---- chapters 4 and 5: many heads, many layers, MLPs and LayerNorm ----
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

# ---- chapter 5: one-layer sweeps ----
SWEEP_POINTS = {  # parameter -> values; the others stay at the paper's setting (L = 16, d = 16, lr = 1e-3)
    "quick": {"seq_len": (8, 16, 32, 64), "d_model": (8, 16, 32), "lr": (3e-4, 1e-3, 3e-3)},
    "full": {"seq_len": (8, 16, 32, 64, 128), "d_model": (8, 16, 32, 64), "lr": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)},
}
SWEEP = {
    "quick": Settings(seeds=3, steps=5_000),  # lr 3e-4 needs about 3,000 steps
    "full": Settings(seeds=5, steps=50_000),
}

# ---- chapter 6: every way to let a head do nothing ----
VARIANTS = {
    "quick": Settings(seeds=3, steps=5_000),
    "full": Settings(seeds=5, steps=50_000),
}

# ---- what a sink writes: the trigger task with a constant default ----
CONSTANT_DEFAULT = 0.5  # every coordinate of the constant target c at the non-trigger rows
CONSTANT = {  # chapter 6's budgets: one head of every rule, the one-layer recipe
    "quick": Settings(seeds=3, steps=5_000),
    "full": Settings(seeds=5, steps=50_000),
}

# ---- what a sink writes: a sink that could gather (no causal mask) ----
BROADCAST_MODEL = {"n_layers": 2, "n_heads": 1}  # BOS can gather in the first layer and be read in the second
BROADCAST = {  # the multi-layer recipe
    "quick": MULTI_LAYER["quick"],
    "full": MULTI_LAYER["full"],
}

# ---- language models: a small GPT on the Bigram-Backcopy language ----
BACKCOPY_TASK = {"vocab_size": 32, "n_triggers": 3, "seq_len": 48}  # Guo et al. (2024)'s task, small
BACKCOPY_MODEL = {"d_model": 64, "n_layers": 2, "n_heads": 4}
BACKCOPY_RULES = (
    "softmax",
    "relu",
    "softmax1",
    "sigmoid",
    "sink_logit",
)  # softmax, and rules that can switch a head off
BACKCOPY_NO_BOS = ("softmax", "relu", "sigmoid", "softmax1", "sink_logit")  # also trained on the language without BOS
BACKCOPY = {  # AdamW at 3e-3, batches of 32 sequences; no stopping rule (stop_linf is unused)
    "quick": Settings(seeds=2, steps=600, lr=3e-3, batch_size=32, stop_linf=None),
    "full": Settings(seeds=5, steps=5_000, lr=3e-3, batch_size=32, stop_linf=None),
}

# ---- language models: a character-level GPT on English text (CPython 3.11.7's help topics, in lm/corpus) ----
TEXT_TASK = {"seq_len": 64}  # BOS and 63 characters
TEXT_MODEL = {"d_model": 64, "n_layers": 4, "n_heads": 4}
TEXT_RULES = ("softmax", "relu")
TEXT_LRS = (3e-3, 1e-2)  # a first-token head formed in our exploration only at the larger rate
TEXT_WEIGHT_DECAY = 0.1
TEXT = {  # AdamW, batches of 8 windows; lr is unused (every model trains at each rate of TEXT_LRS)
    "quick": Settings(seeds=1, steps=2_000, lr=TEXT_LRS[0], batch_size=8, stop_linf=None),
    "full": Settings(seeds=3, steps=20_000, lr=TEXT_LRS[0], batch_size=8, stop_linf=None),
}

# ---- language models: chapter 8's GPT and text at several weight decays ----
DECAY_RATES = (0.0, TEXT_WEIGHT_DECAY, 0.5, 1.0)  # AdamW's weight decay on the linear maps' weights (Gu et al. vary it)
TEXT_DECAY = {  # TEXT's recipe at its larger rate, where a head sat on the threshold; softmax and ReLU
    "quick": Settings(seeds=1, steps=2_000, lr=TEXT_LRS[1], batch_size=8, stop_linf=None),
    "full": Settings(seeds=3, steps=20_000, lr=TEXT_LRS[1], batch_size=8, stop_linf=None),
}

# ---- language models: the same GPT on ten times more text (CPython 3.11.7's standard library source) ----
SCALE_TASK = {"seq_len": 64}  # BOS and 63 characters, as TEXT_TASK
SCALE_CHARS = (
    None,
    420_000,
)  # every training character (about 4.2 million), and about chapter 8's amount in 100 stretches spread over them
SCALE_WEIGHT_DECAY = 0.1
SCALE_WARMUP = 0.05  # the share of the steps the learning rate warms up over, before its cosine decay
TEXT_SCALE = {  # softmax only: the question is whether its first-token sink forms; AdamW, batches of 32 windows
    "quick": Settings(seeds=1, steps=300, lr=1e-2, batch_size=32, stop_linf=None),
    "full": Settings(seeds=2, steps=10_000, lr=1e-2, batch_size=32, stop_linf=None),
}

# ---- language models: the GPT on all the Python source at a weight decay where sinks formed on English ----
CONTROL_WEIGHT_DECAY = (
    0.5  # AdamW's on the matrices: Gu et al.'s largest share of sinks, and dormant heads in text_decay
)
TEXT_CONTROL = {  # TEXT_SCALE's recipe on all its text, softmax and ReLU; AdamW, batches of 32 windows
    "quick": Settings(seeds=1, steps=300, lr=1e-2, batch_size=32, stop_linf=None),
    "full": Settings(seeds=3, steps=10_000, lr=1e-2, batch_size=32, stop_linf=None),
}

# ---- language models: the Python-source GPT at longer windows (Barbero et al. (2025): sinks grow with context) ----
CONTEXT_LENGTHS = (64, 256)  # tokens a window holds, BOS included
CONTEXT_CHARS_PER_STEP = 32 * 63  # characters per step, as near as whole windows allow: 32 windows of 64
TEXT_CONTEXT = {  # TEXT_SCALE's recipe (its 64-character runs are the first length's); batches set per length
    "quick": Settings(seeds=1, steps=300, lr=1e-2, batch_size=32, stop_linf=None),
    "full": Settings(seeds=2, steps=10_000, lr=1e-2, batch_size=32, stop_linf=None),
}
