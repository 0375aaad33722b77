"""Training a GPT: AdamW on next-token cross-entropy (:func:`train_lm`), and the trainer the
experiments' shared training path calls for one GPT (:func:`train_gpt`). Used in chapters 7 and 8.

Weight decay acts on the matrices of the linear maps only (attention, MLP, read-out, gates):
never on embeddings, LayerNorm gains, biases or a rule's learned logit, the usual practice
(GPT-2, nanoGPT); Gu et al. (2025) found that weight decay changes how many heads sink.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import torch
from torch import nn

from .._checks import check_int
from .data import task_config, val_batch
from .metrics import device_of, head_metrics
from .model import GPT, lm_loss

BETAS = (0.9, 0.95)


@dataclass
class LMResult:
    """A trained model and what training recorded every ``every`` steps: the step, the
    training loss, the validation loss and ``Sink_1^eps``, and the per-head mean weight on
    token 0 (steps, layers, heads)."""

    model: GPT
    history: dict


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW's parameter groups: the weights of ``model``'s linear maps with ``weight_decay``,
    every other parameter (embeddings, LayerNorm, biases, learned logits) without."""
    matrices = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
    decay = [p for p in model.parameters() if id(p) in matrices]
    rest = [p for p in model.parameters() if id(p) not in matrices]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]


SCHEDULES = ("constant", "cosine")
"""The learning-rate schedules of :func:`train_lm` after its warmup."""


def learning_rate(step: int, steps: int, lr: float, warmup: int = 0, schedule: str = "constant") -> float:
    """The learning rate of step ``step`` (1 .. ``steps``): ``lr * step / warmup`` while
    ``step <= warmup``; then ``lr`` (``constant``), or ``lr`` falling along a half cosine to
    ``lr / 10`` at step ``steps`` (``cosine``)."""
    if step <= warmup:
        return lr * step / warmup
    if schedule == "constant":
        return lr
    done = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done)))


def train_lm(
    model: GPT,
    task,
    *,
    steps: int,
    lr: float = 3e-3,
    batch_size: int = 32,
    weight_decay: float = 0.0,
    every: int = 50,
    n_val: int = 128,
    warmup: int = 0,
    schedule: str = "constant",
    seed: int = 0,
    progress: bool = False,
) -> LMResult:
    """AdamW on next-token cross-entropy for ``steps`` steps; batches of ``batch_size``
    fresh sequences from ``task`` (a :class:`~attnsink.lm.BigramBackcopy` or
    :class:`~attnsink.lm.CharText`), on the model's device. Weight decay on the matrices only
    (:func:`param_groups`). Every ``every`` steps (and at the end) the history records the
    validation loss and the heads' metrics on ``n_val`` fixed validation sequences.

    The learning rate rises linearly from ``lr / warmup`` to ``lr`` over the first ``warmup``
    steps, then stays at ``lr`` (``schedule="constant"``) or falls along a half cosine to
    ``lr / 10`` at the last step (``"cosine"``; :func:`learning_rate`)."""
    check_int("steps", steps, 1)
    check_int("warmup", warmup, 0)
    if warmup >= steps:
        raise ValueError(f"warmup must be fewer steps than steps={steps}, got {warmup}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    check_int("batch_size", batch_size, 1)
    check_int("every", every, 1)
    check_int("n_val", n_val, 1)
    check_int("seed", seed, 0)
    for name, value in (("lr", lr), ("weight_decay", weight_decay)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or (name == "lr" and value == 0):
            raise ValueError(f"{name} must be a number {'> 0' if name == 'lr' else '>= 0'}, got {value!r}")
    device = device_of(model)
    val = val_batch(task, n_val).to(device)
    opt = torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, betas=BETAS)
    history = {"step": [], "loss": [], "val_loss": [], "sink": [], "first_mean": []}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=f"GPT {model.attention}", leave=False)
    for step in range(1, steps + 1):
        if warmup or schedule != "constant":
            for group in opt.param_groups:
                group["lr"] = learning_rate(step, steps, lr, warmup, schedule)
        x = task.sample(batch_size, seed=seed * 1_000_003 + step).to(device)
        loss = lm_loss(model, x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % every == 0 or step == steps:
            m = head_metrics(model, val[:, :-1])  # the positions the model trains on
            with torch.no_grad():
                model.eval()
                val_loss = lm_loss(model, val).item()
                model.train()
            for key, value in (("step", step), ("loss", loss.item()), ("val_loss", val_loss), ("sink", m["sink"])):
                history[key].append(value)
            history["first_mean"].append(m["first_mean"].numpy())
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return LMResult(model, {k: np.asarray(v) for k, v in history.items()})


ARCH_KEYS = ("vocab_size", "seq_len", "d_model", "n_layers", "n_heads", "attention")


@dataclass(frozen=True)
class LMRecipe:
    """How a GPT is trained: :func:`train_lm`'s arguments but the seed, typed. A field left
    None takes :func:`train_lm`'s default and stays out of the run's key
    (:meth:`GPTSpec.config`), so an option added later keeps older entries found; ``steps``
    must be given. :meth:`given` is what :func:`train_lm` receives."""

    steps: int
    lr: float | None = None
    batch_size: int | None = None
    weight_decay: float | None = None
    every: int | None = None
    n_val: int | None = None
    warmup: int | None = None
    schedule: str | None = None

    def __post_init__(self):
        check_int("steps", self.steps, 1)

    def given(self) -> dict:
        """The fields given (not None), by name, in the order declared."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


RECIPE_KEYS = tuple(f.name for f in fields(LMRecipe))


@dataclass(frozen=True)
class GPTSpec:
    """One training run of a GPT, but for its seed: the language ``task``, the shape ``arch``
    (:class:`GPT`'s arguments but the seed: ``vocab_size``, ``seq_len``, ``d_model``,
    ``n_layers``, ``n_heads``, ``attention``) and the ``recipe`` (an :class:`LMRecipe`, or a
    dict of its fields, made into one). Its :meth:`config` is the results cache's key; the
    recipe's fields not given are not in it, so an older entry stays found when a new option appears."""

    task: object
    arch: dict
    recipe: LMRecipe

    kind = "gpt"

    def __post_init__(self):
        missing = set(ARCH_KEYS) - set(self.arch)
        unknown = set(self.arch) - set(ARCH_KEYS)
        if missing or unknown:
            raise ValueError(f"a GPTSpec needs arch with exactly {list(ARCH_KEYS)}; got arch {sorted(self.arch)}")
        if isinstance(self.recipe, dict):
            bad = set(self.recipe) - set(RECIPE_KEYS)
            if bad or "steps" not in self.recipe:
                raise ValueError(
                    f"a GPTSpec's recipe takes {list(RECIPE_KEYS)}, steps at least; got {sorted(self.recipe)}"
                )
            object.__setattr__(self, "recipe", LMRecipe(**self.recipe))
        elif not isinstance(self.recipe, LMRecipe):
            raise ValueError(f"recipe must be an LMRecipe or a dict of its fields, got {type(self.recipe).__name__}")

    def options(self) -> dict:
        return {"arch": dict(self.arch), "recipe": self.recipe.given()}

    def config(self, seed: int) -> dict:
        """The results-cache config of seed ``seed``: its task, shape, rule, recipe and seed."""
        return {"kind": self.kind, **task_config(self.task), **self.arch, **self.recipe.given(), "seed": seed}


def train_gpt(spec: GPTSpec, seed: int, device: str, progress: bool = False) -> dict:
    """Train seed ``seed`` of the run ``spec``, here or in a worker process; its weights and
    history as plain tensors (the results cache's payload).

    On the CPU it trains with one thread wherever it runs: a GPT's matrix products sum in
    an order that depends on the thread count, and a few hundred steps of AdamW turn that
    last-bit difference into a different model, so one thread keeps the numbers the same
    whether the model was trained here or in a worker (``tests/test_lm.py`` checks it)."""
    threads = torch.get_num_threads()
    if torch.device(device).type == "cpu":
        torch.set_num_threads(1)
    try:
        model = GPT(**spec.arch, seed=seed).to(device)
        r = train_lm(model, spec.task, **spec.recipe.given(), seed=seed, progress=progress)
    finally:
        torch.set_num_threads(threads)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {"state": state, "history": {k: torch.from_numpy(v) for k, v in r.history.items()}}


def load_gpt(spec: GPTSpec, seed: int, payload: dict, device: torch.device | str = "cpu") -> tuple[GPT, dict]:
    """Seed ``seed``'s trained GPT and its history (numpy arrays), from :func:`train_gpt`'s payload."""
    model = GPT(**spec.arch, seed=seed)
    model.load_state_dict(payload["state"])
    return model.to(device), {k: v.numpy() for k, v in payload["history"].items()}
