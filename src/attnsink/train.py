"""Training with the paper's recipe: Adam (0.9, 0.95), MSE, early stop on the largest error.

Used in every chapter that trains. Every run trains a *stack* of models of one shape at
once (:func:`train_many`): ``S`` seeds cost one batched forward and backward pass per
step. A single run (:func:`train`) is the stack with ``S = 1``, so seed ``s`` gives the
same numbers alone or among others (up to float rounding).

For speed nothing leaves the device inside the loop: each seed's batches are drawn
``chunk`` steps at a time on the device (on the CPU, by a background thread, one chunk
ahead of the steps); the stopping criterion (the batch's largest absolute error below
``stop_linf``) is applied on the device by freezing that seed's parameters, exactly at
the step where it is first met; the host looks at the device only every ``check_every``
steps, to end the loop once every seed has stopped and to raise on a non-finite loss.
All parameters of the stack live in one (S, n_params) tensor, so a step's Adam update is
a dozen operations whatever the architecture. ``benchmarks/bench_train.py`` measures it.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from .metrics import bos_mass
from .model import AttentionModel, forward_stacked
from .task import TriggerTask

BETAS = (0.9, 0.95)
ADAM_EPS = 1e-8
DATA_SEED_OFFSET = 1_000_003  # a run's batches come from seed + this; its initialisation from seed


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN or infinite loss."""


class _SquaredError(torch.autograd.Function):
    """Each model's MSE, ``loss[s] = mean((y_hat[s] - y[s]) ** 2)``, and the error itself.

    The same loss autograd would build from ``(y_hat - y).pow(2).mean(...)``, with a
    backward pass of one multiplication, ``2 (y_hat - y) / n``, where autograd's takes
    four passes over the (S, batch, seq, d) error; the error comes back for the metrics.
    """

    @staticmethod
    def forward(ctx, y_hat, y):
        err = y_hat - y
        ctx.save_for_backward(err)
        ctx.mark_non_differentiable(err)
        return err.pow(2).mean(dim=tuple(range(1, err.dim()))), err

    @staticmethod
    def backward(ctx, grad_loss, _grad_err):
        (err,) = ctx.saved_tensors
        scale = grad_loss * (2.0 / err[0].numel())
        return err * scale.view(-1, *[1] * (err.dim() - 1)), None


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
            "history": {k: torch.from_numpy(np.asarray(v)) for k, v in self.history.items()},
        }

    @classmethod
    def from_payload(cls, payload: dict) -> TrainResult:
        cfg = payload["config"]
        model = AttentionModel(
            cfg["d_model"],
            cfg["n_heads"],
            cfg["n_layers"],
            cfg["attention"],
            cfg["residual"],
            mlp=cfg.get("mlp", False),
            layer_norm=cfg.get("layer_norm", False),
        )
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


@functools.cache
def keep_freed_memory() -> bool:
    """Ask glibc's ``malloc`` to keep freed memory for reuse instead of handing it back.

    A training step allocates and frees tens of 2 MB tensors. By default glibc serves such
    blocks with fresh ``mmap`` calls or trims them off the heap when they are freed, so the
    next step touches new pages, and each page fault costs microseconds in a virtual machine:
    1,400 faults per step, about 40% of a 16-seed step's forward and backward pass, on our
    two-core test machine. With a 32 MiB mmap threshold and a 1 GiB trim threshold, freed
    blocks stay in the heap and the faults vanish. The price: the process keeps the peak of
    its heap (tens of MB here) until it exits. Called by :func:`train_many` on the CPU, once
    per process; returns whether the setting took (only with glibc on Linux). Set
    ``ATTNSINK_KEEP_FREED_MEMORY=0`` to leave malloc alone.
    """
    if os.environ.get("ATTNSINK_KEEP_FREED_MEMORY", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, for one)
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # from glibc's malloc.h
    return bool(mallopt(M_MMAP_THRESHOLD, 32 * 2**20)) and bool(mallopt(M_TRIM_THRESHOLD, 2**30))


def _draw(task: TriggerTask, g: torch.Generator, trig: torch.Tensor, noise: torch.Tensor) -> None:
    """One seed's next chunk of draws, in place: the same numbers, in the same order, as
    ``task.sample(n, generator=g)`` (trigger positions, then noise)."""
    torch.randint(2, task.seq_len, trig.shape, generator=g, device=trig.device, out=trig)
    torch.rand(noise.shape, generator=g, device=noise.device, out=noise)


def _data_chunk(task: TriggerTask, batch_size: int) -> int:
    # steps of data drawn at once: about 256k numbers per seed (a few MB for 16 seeds, so the
    # buffers stay in cache); depends on the task only,
    # so a seed's data stream is the same whatever else is trained beside it
    return max(1, min(32, 2**18 // (batch_size * task.seq_len * task.d_model)))


def _validate(task, models, seeds, steps, lr, batch_size, stop_linf, check_every):
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
        if not isinstance(s, int) or isinstance(s, bool) or s < 0:
            raise ValueError(f"seed must be a non-negative integer, got {s!r}")
    for name, value in (("steps", steps), ("batch_size", batch_size), ("check_every", check_every)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(lr, bool) or not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if stop_linf is not None and (
        isinstance(stop_linf, bool) or not (isinstance(stop_linf, (int, float)) and 0 < stop_linf < math.inf)
    ):
        raise ValueError(f"stop_linf must be a positive finite number or None (no early stop), got {stop_linf!r}")


def train_many(
    models: list[AttentionModel],
    task: TriggerTask,
    *,
    seeds: list[int],
    steps: int,
    lr: float,
    batch_size: int = 128,
    stop_linf: float | None = 5e-3,
    device: torch.device | str | None = None,
    progress: bool = True,
    check_every: int = 50,
) -> list[TrainResult]:
    """Train models of one config side by side; model ``i`` sees the data stream of ``seeds[i]``.

    Each model stops (freezes) on its own criterion. The models are updated in place and
    returned in their results, on the device they came from. A non-finite loss in any
    model raises :class:`NonFiniteLossError` for the whole stack.
    """
    _validate(task, models, seeds, steps, lr, batch_size, stop_linf, check_every)
    dev = resolve_device(device)
    cfg = models[0].config
    S = len(models)
    # every parameter of every model lives in one (S, n_params) tensor: the gradient comes
    # back as one tensor and Adam is a dozen operations per step, not a dozen per parameter
    shapes = {name: p.shape for name, p in models[0].named_parameters()}
    flat = torch.stack([torch.cat([p.detach().flatten() for p in m.parameters()]) for m in models])
    flat = flat.to(dev).requires_grad_()
    adam_m, adam_v = torch.zeros_like(flat), torch.zeros_like(flat)

    def unflatten(t: torch.Tensor) -> dict[str, torch.Tensor]:  # views (S, *shape) into t
        views, start = {}, 0
        for name, shape in shapes.items():
            n = math.prod(shape)
            views[name] = t[:, start : start + n].view(S, *shape)
            start += n
        return views

    gens = [torch.Generator(dev).manual_seed(s + DATA_SEED_OFFSET) for s in seeds]
    chunk = _data_chunk(task, batch_size)
    # steps whose batches are assembled at once: about 256k numbers (fewer operations per
    # step for a few seeds, cache-sized tensors for many); a divisor of the chunk
    per_step = S * batch_size * task.seq_len * task.d_model
    group = max(k for k in range(1, chunk + 1) if chunk % k == 0 and (k == 1 or k * per_step <= 2**18))
    stop = -math.inf if stop_linf is None else float(stop_linf)

    active = torch.ones(S, dtype=torch.bool, device=dev)
    updates = torch.zeros(S, dtype=torch.long, device=dev)  # updates applied to each seed
    hist_loss = torch.full((steps, S), math.nan, device=dev)
    hist_linf = torch.full((steps, S), math.nan, device=dev)
    hist_bos = torch.full((steps, S, cfg["n_layers"], cfg["n_heads"]), math.nan, device=dev)

    bar = tqdm(total=steps, disable=not progress, desc=f"{cfg['attention']} x{S}", leave=False)
    last = steps - 1
    n_draw = chunk * batch_size
    buffers = [  # two sets: the steps read one while the next chunk is drawn into the other
        (
            torch.empty(S, n_draw, dtype=torch.long, device=dev),
            torch.empty(S, n_draw, task.n_noise_positions, task.n_noise, device=dev),
        )
        for _ in range(2)
    ]

    def draw_chunk(trig_buf: torch.Tensor, noise_buf: torch.Tensor) -> None:
        for i, g in enumerate(gens):
            _draw(task, g, trig_buf[i], noise_buf[i])

    # On the CPU a generator draws on one core, about 2 ns a number: a tenth of a 16-seed
    # step. So a background thread draws chunk k+1 while the steps of chunk k run (each
    # generator still draws in order, one chunk after the other, so the numbers are the
    # same). On a GPU the draws are asynchronous kernels already.
    pool = ThreadPoolExecutor(1, thread_name_prefix="attnsink-draws") if dev.type == "cpu" else None
    pending = None
    checked = 0  # steps whose losses have been checked for non-finite values
    if dev.type == "cpu":
        keep_freed_memory()
    try:
        for step in range(steps):
            if step % chunk == 0:
                trig_buf, noise_buf = buffers[(step // chunk) % 2]
                if pending is None:
                    draw_chunk(trig_buf, noise_buf)
                else:
                    pending.result()
                    pending = None
                if pool is not None and step + chunk < steps:
                    pending = pool.submit(draw_chunk, *buffers[(step // chunk + 1) % 2])
            if step % group == 0:  # assemble the batches of the next `group` steps at once
                rows = slice((step % chunk) * batch_size, (step % chunk + group) * batch_size)
                content = noise_buf[:, rows].mul(2.0).sub_(1.0)  # 2 u - 1, as task.build computes it
                batches = task._assemble(trig_buf[:, rows], content)  # (S, group * batch, ...)
            rows = slice((step % group) * batch_size, (step % group + 1) * batch_size)
            x, y, mask = batches.x[:, rows], batches.y[:, rows], batches.is_nontrigger[:, rows]

            y_hat, attn = forward_stacked(unflatten(flat), x, attention=cfg["attention"], residual=cfg["residual"])
            loss, err = _SquaredError.apply(y_hat, y)  # (S,) and (S, batch, seq, d)
            linf = err.abs().amax(dim=(1, 2, 3))  # (torch.linalg.vector_norm with ord=inf is 15x slower here)
            with torch.no_grad():
                # a non-finite loss freezes the seed too; the check below raises for it
                active &= torch.isfinite(loss.detach()) & (linf >= stop)  # criterion met: freeze
                hist_loss[step] = loss.detach()
                hist_linf[step] = linf
                hist_bos[step] = torch.stack([bos_mass(a, mask) for a in attn], dim=1)

            (g,) = torch.autograd.grad(loss.sum(), flat)
            with torch.no_grad():
                t = step + 1  # every still-active seed has been updated at every step so far
                adam_m.mul_(BETAS[0]).add_(g, alpha=1 - BETAS[0])
                adam_v.mul_(BETAS[1]).addcmul_(g, g, value=1 - BETAS[1])
                m_hat = adam_m / (1 - BETAS[0] ** t)
                v_hat = adam_v / (1 - BETAS[1] ** t)
                flat.copy_(torch.where(active[:, None], flat - lr * m_hat / (v_hat.sqrt() + ADAM_EPS), flat))
                updates += active

            if (step + 1) % check_every == 0 or step == last:
                bar.update(step + 1 - checked)
                bad = ~torch.isfinite(hist_loss[checked : step + 1])  # the steps since the last check
                if bad.any():
                    first, s = torch.nonzero(bad)[0].tolist()
                    raise NonFiniteLossError(
                        f"non-finite loss at step {checked + first} (seed {seeds[s]}) with "
                        f"model {cfg}, task {task}, lr={lr}, batch_size={batch_size}"
                    )
                checked = step + 1
                if not active.any():
                    break
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)  # waits for a chunk being drawn
        bar.close()

    n_updates = updates.cpu().tolist()
    stopped = (~active).cpu().tolist()
    results = []
    trained = unflatten(flat.detach())
    for i, (m, seed) in enumerate(zip(models, seeds)):
        with torch.no_grad():
            for name, p in m.named_parameters():
                p.copy_(trained[name][i].to(p.device))
        n_hist = n_updates[i] + 1 if stopped[i] else n_updates[i]
        history = {
            "step": np.arange(n_hist),
            "loss": hist_loss[:n_hist, i].cpu().numpy(),
            "linf": hist_linf[:n_hist, i].cpu().numpy(),
            "bos_mass": hist_bos[:n_hist, i].cpu().numpy(),
        }
        results.append(TrainResult(m, seed, n_updates[i], stopped[i], history))
    return results


def train(
    model: AttentionModel,
    task: TriggerTask,
    *,
    steps: int,
    lr: float,
    batch_size: int = 128,
    seed: int = 0,
    stop_linf: float | None = 5e-3,
    device: torch.device | str | None = None,
    progress: bool = True,
    check_every: int = 50,
) -> TrainResult:
    """Train one model (in place) on batches from the data stream of ``seed``."""
    return train_many(
        [model],
        task,
        seeds=[seed],
        steps=steps,
        lr=lr,
        batch_size=batch_size,
        stop_linf=stop_linf,
        device=device,
        progress=progress,
        check_every=check_every,
    )[0]


def train_seeds(
    task: TriggerTask,
    seeds: list[int],
    *,
    attention: str = "softmax",
    n_heads: int = 1,
    n_layers: int = 1,
    mlp: bool = False,
    layer_norm: bool = False,
    **train_kwargs,
) -> list[TrainResult]:
    """Initialise one model per seed (``AttentionModel(seed=s)``) and train them together."""
    models = [
        AttentionModel(
            task.d_model, n_heads, n_layers, attention, task.residual, seed=s, mlp=mlp, layer_norm=layer_norm
        )
        for s in seeds
    ]
    return train_many(models, task, seeds=list(seeds), **train_kwargs)
