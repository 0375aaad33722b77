"""Training with the paper's recipe, written to be read: Adam (0.9, 0.95), MSE, early stop
on the batch's largest error. Used in chapter 1, and as the reference for the fast path.

:func:`train` is the plain loop: one model, ``torch.optim.Adam``, one batch per step from
the task's training stream. The chapters train many seeds at once with
:func:`attnsink.engine.train_seeds`, which follows the same trajectory (tested to float
tolerance) several times faster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from ._checks import check_int, check_number
from .attention import bos_mass
from .model import AttentionModel
from .spec import PAPER_BATCH, PAPER_STOP
from .task import TriggerTask

BETAS = (0.9, 0.95)
ADAM_EPS = 1e-8


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN or infinite loss."""


@dataclass
class TrainResult:
    """A trained model, how many updates it took, and its history (one entry per step).

    ``history`` holds ``loss`` (MSE of the batch), ``linf`` (the batch's largest absolute
    error) and ``bos_mass`` (steps, n_layers, n_heads) at non-trigger positions, each
    measured on the step's batch before that step's update. Its last entry is the state
    that met the stopping criterion when ``stopped_early``.
    """

    model: AttentionModel
    seed: int
    steps: int
    stopped_early: bool
    history: dict[str, np.ndarray] = field(repr=False)

    def to_payload(self) -> dict:
        """Plain tensors and numbers, for the results cache."""
        return {
            "config": self.model.config,
            "state": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "seed": self.seed,
            "steps": self.steps,
            "stopped_early": self.stopped_early,
            "history": {k: torch.from_numpy(np.array(v)) for k, v in self.history.items()},  # copies, not views
        }

    @classmethod
    def from_payload(cls, payload: dict) -> TrainResult:
        model = AttentionModel.from_config(payload["config"])
        model.load_state_dict(payload["state"])
        history = {k: v.numpy() for k, v in payload["history"].items()}
        return cls(model, payload["seed"], payload["steps"], payload["stopped_early"], history)


def resolve_device(device: torch.device | str | None) -> torch.device:
    """``device``, or CUDA when it is available and the CPU otherwise."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from e
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device is {device!r} but CUDA is not available here; use 'cpu' or None")
    return device


def check_run(task, models, seeds, *, steps, lr, batch_size, stop_linf) -> None:
    """``ValueError`` for anything wrong with a training run's arguments (both trainers call it)."""
    if not isinstance(task, TriggerTask):
        raise ValueError(f"task must be a TriggerTask, got {type(task).__name__}")
    if not models:
        raise ValueError("models must hold at least one AttentionModel")
    for m in models:
        if not isinstance(m, AttentionModel):
            raise ValueError(f"models must be AttentionModel instances, got {type(m).__name__}")
        if m.config != models[0].config:
            raise ValueError(f"models must share one config, got {m.config} and {models[0].config}")
    cfg = models[0].config
    if cfg["d_model"] != task.d_model:
        raise ValueError(f"model d_model ({cfg['d_model']}) must equal task.d_model ({task.d_model})")
    if cfg["residual"] != task.residual:
        raise ValueError(f"model residual ({cfg['residual']}) must equal task.residual ({task.residual})")
    if len(seeds) != len(models):
        raise ValueError(f"seeds must give one seed per model: {len(seeds)} seeds for {len(models)} models")
    for s in seeds:
        check_int("seed", s, 0)
    check_int("steps", steps, 1)
    check_int("batch_size", batch_size, 1)
    check_number("lr", lr)
    if stop_linf is not None:
        check_number("stop_linf", stop_linf)


def train(
    model: AttentionModel,
    task: TriggerTask,
    *,
    steps: int,
    lr: float,
    batch_size: int = PAPER_BATCH,
    seed: int = 0,
    stop_linf: float | None = PAPER_STOP,
    device: torch.device | str | None = None,
    progress: bool = True,
) -> TrainResult:
    """Train ``model`` in place on the training stream of ``seed``; stop once a batch's largest
    absolute error is below ``stop_linf`` (None: never), or after ``steps`` updates."""
    check_run(task, [model], [seed], steps=steps, lr=lr, batch_size=batch_size, stop_linf=stop_linf)
    home, dev = next(model.parameters()).device, resolve_device(device)
    model.to(dev)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=BETAS, eps=ADAM_EPS)
    batches = task.training_batches(batch_size, seed=seed, device=dev)
    history = {"loss": [], "linf": [], "bos_mass": []}
    stopped = False
    for step in tqdm(range(steps), disable=not progress, desc=model.attention, leave=False):
        batch = next(batches)
        y_hat, attn = model(batch.x)
        loss = (y_hat - batch.y).pow(2).mean()
        linf = (y_hat - batch.y).abs().max().item()
        if not torch.isfinite(loss):
            raise NonFiniteLossError(f"non-finite loss at step {step} (seed {seed}) with model {model.config}, lr={lr}")
        history["loss"].append(loss.item())
        history["linf"].append(linf)
        history["bos_mass"].append(torch.stack([bos_mass(a.detach(), batch.is_nontrigger) for a in attn]).cpu())
        if stop_linf is not None and linf < stop_linf:  # the paper's criterion: this model is done
            stopped = True
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.to(home)
    n = len(history["loss"])
    history = {
        "step": np.arange(n),
        "loss": np.array(history["loss"], dtype=np.float32),
        "linf": np.array(history["linf"], dtype=np.float32),
        "bos_mass": torch.stack(history["bos_mass"]).numpy(),
    }
    return TrainResult(model, seed, n - stopped, stopped, history)
