"""The fast path: many seeds trained as one stacked model. Used by every chapter that trains.

It computes what :meth:`attnsink.model.AttentionModel.forward` and
:func:`attnsink.training.train` compute, for ``S`` models of one shape at once, tuned for
speed (``benchmarks/bench_train.py`` measures it; ``tests/test_engine.py`` checks that it
agrees with the plain path):

* the ``S`` models are one stack: every tensor has a leading seed dimension, so ``S``
  seeds cost one batched forward and backward pass per step;
* each head's query-key and value-output maps are folded into two (d, d) products,
  ``W_QK = W_Q W_K^T`` and ``W_VO = W_V W_O`` (the same function, fewer FLOPs);
* every parameter of the stack lives in one (S, n_params) tensor, so a step's Adam update
  is a dozen operations whatever the architecture, and the loss has a hand-written
  backward pass (:class:`_SquaredError`);
* nothing leaves the device inside the loop: each seed's batches are drawn ``chunk`` steps
  at a time (on the CPU by a background thread, one chunk ahead), the stopping criterion
  freezes a seed's parameters on the device at the step it is first met, and the host
  looks only every ``check_every`` steps, to end the loop once every seed has stopped and
  to raise on a non-finite loss.

Why a hand-written engine rather than ``torch.func`` (``vmap`` over ``functional_call`` of
the plain model, with ``torch.optim.Adam``): measured on two CPU cores, that standard path
trains the same models but takes about 1.6 times as long, at 1 seed and at 16
(``benchmarks/bench_func.py``; the numbers are on the measurements page,
``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import numpy as np
import torch
from tqdm import tqdm

from ._checks import check_int
from .attention import bos_mass, get_rule, visibility
from .model import GATE, LN_EPS, PARAM_NAMES, AttentionModel
from .spec import ARCH_FIELDS, PAPER_BATCH, PAPER_STOP, RunSpec
from .task import DATA_SEED_OFFSET, TriggerTask
from .training import ADAM_EPS, BETAS, NonFiniteLossError, TrainResult, check_run, resolve_device


def _layer_norm(h: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """LayerNorm over the last dimension; ``gain`` and ``bias`` are (S, d), ``h`` is (S, ..., d)."""
    mean = h.mean(dim=-1, keepdim=True)
    var = (h - mean).pow(2).mean(dim=-1, keepdim=True)
    shape = (gain.shape[0],) + (1,) * (h.dim() - 2) + (gain.shape[-1],)
    return (h - mean) / torch.sqrt(var + LN_EPS) * gain.view(shape) + bias.view(shape)


def forward_stacked(
    params: dict[str, torch.Tensor],
    x: torch.Tensor,
    *,
    attention: str,
    residual: bool,
    return_values: bool = False,
    causal: bool = True,
):
    """Run ``S`` stacked models on their own inputs: :meth:`AttentionModel.forward`, batched over seeds.

    ``params[name]`` has shape (S, n_layers, n_heads, d_model, d_model) for the four maps,
    (S, n_layers, n_heads) for a rule's logit (``sink``) and (S, n_layers, n_heads, d_model) for
    a gate (``W_G``);
    the optional blocks add ``W_in`` (S, n_layers, d_model, hidden), ``b_in``, ``W_out``,
    ``b_out`` (MLP) and ``ln1_g``, ``ln1_b`` [, ``ln2_g``, ``ln2_b``] (S, n_layers, d_model);
    ``x`` has shape (S, batch, seq_len, d_model). Returns ``(y_hat, attn)`` with ``attn`` a
    list of (S, batch, heads, query, key) tensors, one per layer: the weights the head
    applies to its values (for ``gated``, the softmax weights times the gate). With
    ``return_values`` also each layer's per-head output-space values ``v_t W_O``
    (S, batch, heads, seq_len, d_model): the vector a head adds per unit of weight on token t.
    """
    rule = get_rule(attention)
    n_layers = params["W_Q"].shape[1]
    mlp, layer_norm = "W_in" in params, "ln1_g" in params
    S, B, L, D = x.shape
    mask = visibility(L, x.device, causal)  # (query, key)
    h = x  # (S, batch, seq, d)
    attn, values = [], []
    for layer in range(n_layers):
        W_Q, W_K, W_V, W_O = (params[name][:, layer] for name in PARAM_NAMES)  # (S, heads, d, d)
        H = W_Q.shape[1]
        # q . k = x_i W_Q W_K^T x_k and sum_k a_ik x_k W_V W_O: two (d, d) products per head
        # instead of four projections of every token (the same function, fewer FLOPs)
        W_QK = W_Q @ W_K.transpose(-1, -2)  # (S, heads, d, d)
        W_VO = W_V @ W_O
        a_in = _layer_norm(h, params["ln1_g"][:, layer], params["ln1_b"][:, layer]) if layer_norm else h
        # every matrix product below is one batched GEMM, written out rather than left to einsum,
        # which would copy permuted operands; on a CPU these products and the elementwise
        # passes over (S, batch, heads, seq, seq) tensors are most of a training step
        hq = torch.bmm(a_in.reshape(S, B * L, D), W_QK.transpose(1, 2).reshape(S, D, H * D))
        hq = hq.view(S, B, L, H, D).transpose(2, 3)  # (S, batch, heads, seq, d): x_i W_QK per head
        keys = a_in.unsqueeze(2)  # (S, batch, 1, seq, d)
        scores = hq @ keys.transpose(-1, -2)  # (S, batch, heads, query, key)
        logit = params[rule.logit][:, layer, None] if rule.logit else None  # (S, 1, heads)
        # a gated head's weights times sigmoid(x_i . w_h): one gate per query and head, (S, batch, heads, seq)
        gate = torch.einsum("sbld,shd->sbhl", a_in, params[GATE][:, layer]) if rule.gated else None
        weights = rule.weights(scores, mask, logit, gate)
        # sum_k a_ik (x_k W_VO) = (sum_k a_ik x_k) W_VO: mix the inputs, then map once per head
        mixed = weights @ keys  # (S, batch, heads, query, d)
        if H > 1:
            mixed = mixed.transpose(2, 3)  # (S, batch, query, heads, d); reshape copies it
        out = torch.bmm(mixed.reshape(S, B * L, H * D), W_VO.reshape(S, H * D, D)).view(S, B, L, D)
        h = h + out if residual else out
        if mlp:
            m_in = _layer_norm(h, params["ln2_g"][:, layer], params["ln2_b"][:, layer]) if layer_norm else h
            hidden = torch.nn.functional.gelu(
                torch.einsum("sbld,sdf->sblf", m_in, params["W_in"][:, layer]) + params["b_in"][:, layer, None, None]
            )
            mlp_out = torch.einsum("sblf,sfd->sbld", hidden, params["W_out"][:, layer])
            h = h + mlp_out + params["b_out"][:, layer, None, None]
        attn.append(weights)
        if return_values:  # v_t W_O per head, (S, batch, heads, seq, d)
            values.append(torch.einsum("sbld,shde->sbhle", a_in, W_VO))
    return (h, attn, values) if return_values else (h, attn)


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


@functools.cache
def keep_freed_memory() -> bool:
    """Ask glibc's ``malloc`` to keep freed memory for reuse instead of handing it back.

    A training step allocates and frees tens of 2 MB tensors. By default glibc serves such
    blocks with fresh ``mmap`` calls or trims them off the heap when they are freed, so the
    next step touches new pages, and each page fault costs microseconds in a virtual machine:
    a large share of a step's forward and backward pass on a small virtual CPU (the numbers are
    on ``benchmarks/RESULTS.md``, "Why the engine is built as it is"). With a 32 MiB mmap
    threshold and a 1 GiB trim threshold, freed blocks stay in the heap and the faults vanish.
    The price: the process keeps the peak of its heap until it exits. Called by the engine's
    loop on the CPU, once
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


class _Stack:
    """Every parameter of ``S`` models in one (S, n_params) tensor, with its Adam state: the
    gradient comes back as one tensor and Adam is a dozen operations per step, not a dozen
    per parameter."""

    def __init__(self, models: list[AttentionModel], dev: torch.device):
        self.shapes = {name: p.shape for name, p in models[0].named_parameters()}
        flat = torch.stack([torch.cat([p.detach().flatten() for p in m.parameters()]) for m in models])
        self.flat = flat.to(dev).requires_grad_()
        self.m, self.v = torch.zeros_like(self.flat), torch.zeros_like(self.flat)

    def views(self, t: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Each parameter as a (S, *shape) view into ``t`` (default: the parameters)."""
        t = self.flat if t is None else t
        views, start, S = {}, 0, t.shape[0]
        for name, shape in self.shapes.items():
            n = math.prod(shape)
            views[name] = t[:, start : start + n].view(S, *shape)
            start += n
        return views

    @torch.no_grad()
    def adam_step(self, g: torch.Tensor, t: int, lr: float, active: torch.Tensor) -> None:
        """Adam's update number ``t`` with gradient ``g``, applied to the active seeds only."""
        self.m.mul_(BETAS[0]).add_(g, alpha=1 - BETAS[0])
        self.v.mul_(BETAS[1]).addcmul_(g, g, value=1 - BETAS[1])
        m_hat = self.m / (1 - BETAS[0] ** t)
        v_hat = self.v / (1 - BETAS[1] ** t)
        self.flat.copy_(torch.where(active[:, None], self.flat - lr * m_hat / (v_hat.sqrt() + ADAM_EPS), self.flat))


class _Batches:
    """The seeds' training batches, step by step, drawn on the device a chunk at a time.

    Seed ``i``'s batches are those of ``task.training_batches(batch_size, seed=seeds[i])``.
    On the CPU a generator draws on one core, a noticeable share of a step for many seeds.
    So a background thread draws chunk k+1 while the steps of chunk k run (each generator
    still draws in order, one chunk after the other, so the numbers are the same). On a GPU
    the draws are asynchronous kernels already."""

    def __init__(self, task: TriggerTask, seeds: list[int], batch_size: int, steps: int, dev: torch.device):
        self.task, self.batch_size, self.steps = task, batch_size, steps
        self.gens = [torch.Generator(dev).manual_seed(s + DATA_SEED_OFFSET) for s in seeds]  # as training_batches
        self.chunk = task.data_chunk(batch_size)
        # steps whose batches are assembled at once: about 256k numbers (fewer operations per
        # step for a few seeds, cache-sized tensors for many); a divisor of the chunk
        per_step = len(seeds) * batch_size * task.seq_len * task.d_model
        self.group = max(
            k for k in range(1, self.chunk + 1) if self.chunk % k == 0 and (k == 1 or k * per_step <= 2**18)
        )
        n_draw = self.chunk * batch_size
        self.buffers = [  # two sets: the steps read one while the next chunk is drawn into the other
            (
                torch.empty(len(seeds), n_draw, dtype=torch.long, device=dev),
                torch.empty(len(seeds), n_draw, task.n_noise_positions, task.n_noise, device=dev),
            )
            for _ in range(2)
        ]
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="attnsink-draws") if dev.type == "cpu" else None
        self.pending = None

    def _draw_chunk(self, trig_buf: torch.Tensor, noise_buf: torch.Tensor) -> None:
        for i, g in enumerate(self.gens):
            _draw(self.task, g, trig_buf[i], noise_buf[i])

    def at(self, step: int):
        """Step ``step``'s batches (``x``, ``y``, ``is_nontrigger``), each (S, batch, ...); steps come in order."""
        chunk, group, b = self.chunk, self.group, self.batch_size
        if step % chunk == 0:
            self.trig, self.noise = self.buffers[(step // chunk) % 2]
            if self.pending is None:
                self._draw_chunk(self.trig, self.noise)
            else:
                self.pending.result()
                self.pending = None
            if self.pool is not None and step + chunk < self.steps:
                self.pending = self.pool.submit(self._draw_chunk, *self.buffers[(step // chunk + 1) % 2])
        if step % group == 0:  # assemble the batches of the next `group` steps at once
            rows = slice((step % chunk) * b, (step % chunk + group) * b)
            content = self.noise[:, rows].mul(2.0).sub_(1.0)  # 2 u - 1, as task.build computes it
            self.assembled = self.task._assemble(self.trig[:, rows], content)  # (S, group * batch, ...)
        rows = slice((step % group) * b, (step % group + 1) * b)
        a = self.assembled
        return a.x[:, rows], a.y[:, rows], a.is_nontrigger[:, rows]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)  # waits for a chunk being drawn


class _History:
    """What each seed's training records at every step, kept on the device: the batch's loss,
    its largest absolute error and each head's BOS mass at non-trigger positions."""

    def __init__(self, steps: int, S: int, n_layers: int, n_heads: int, dev: torch.device):
        self.loss = torch.full((steps, S), math.nan, device=dev)
        self.linf = torch.full((steps, S), math.nan, device=dev)
        self.bos = torch.full((steps, S, n_layers, n_heads), math.nan, device=dev)
        self.checked = 0  # steps whose losses have been checked for non-finite values

    def first_non_finite(self, step: int) -> tuple[int, int] | None:
        """(step, seed index) of the first non-finite loss since the last check, up to ``step``."""
        bad = ~torch.isfinite(self.loss[self.checked : step + 1])
        found = None
        if bad.any():
            first, s = torch.nonzero(bad)[0].tolist()
            found = (self.checked + first, s)
        self.checked = step + 1
        return found

    def of(self, i: int, n: int) -> dict[str, np.ndarray]:
        """Seed ``i``'s first ``n`` entries."""
        return {
            "step": np.arange(n),
            "loss": self.loss[:n, i].cpu().numpy(),
            "linf": self.linf[:n, i].cpu().numpy(),
            "bos_mass": self.bos[:n, i].cpu().numpy(),
        }


def _train_stack(
    models: list[AttentionModel],
    spec: RunSpec,
    seeds: list[int],
    *,
    device: torch.device | str | None = None,
    progress: bool = True,
    check_every: int = 50,
) -> list[TrainResult]:
    """The engine's loop (:func:`train_spec` calls it): train models of one config side by
    side with ``spec``'s recipe; model ``i`` sees the data stream of ``seeds[i]``.

    Each model stops (freezes) on its own criterion. The models are updated in place and
    returned in their results, on the device they came from. A non-finite loss in any
    model raises :class:`NonFiniteLossError` for the whole stack.
    """
    task, recipe = spec.task, spec.recipe
    check_run(task, models, seeds, **asdict(recipe))
    check_int("check_every", check_every, 1)
    dev = resolve_device(device)
    cfg, S, steps = models[0].config, len(models), recipe.steps
    stack = _Stack(models, dev)
    batches = _Batches(task, seeds, recipe.batch_size, steps, dev)
    history = _History(steps, S, cfg["n_layers"], cfg["n_heads"], dev)
    stop = -math.inf if recipe.stop_linf is None else float(recipe.stop_linf)
    active = torch.ones(S, dtype=torch.bool, device=dev)
    updates = torch.zeros(S, dtype=torch.long, device=dev)  # updates applied to each seed
    bar = tqdm(total=steps, disable=not progress, desc=f"{cfg['attention']} x{S}", leave=False)
    if dev.type == "cpu":
        keep_freed_memory()
    try:
        for step in range(steps):
            x, y, mask = batches.at(step)
            y_hat, attn = forward_stacked(
                stack.views(), x, attention=cfg["attention"], residual=cfg["residual"], causal=cfg["causal"]
            )
            loss, err = _SquaredError.apply(y_hat, y)  # (S,) and (S, batch, seq, d)
            linf = err.abs().amax(dim=(1, 2, 3))  # (faster than torch.linalg.vector_norm with ord=inf)
            with torch.no_grad():
                # a non-finite loss freezes the seed too; the check below raises for it
                active &= torch.isfinite(loss.detach()) & (linf >= stop)  # criterion met: freeze
                history.loss[step] = loss.detach()
                history.linf[step] = linf
                history.bos[step] = torch.stack([bos_mass(a, mask) for a in attn], dim=1)
            (g,) = torch.autograd.grad(loss.sum(), stack.flat)
            stack.adam_step(g, step + 1, recipe.lr, active)  # every still-active seed was updated at every step so far
            updates += active
            if (step + 1) % check_every == 0 or step == steps - 1:
                bar.update(step + 1 - history.checked)
                bad = history.first_non_finite(step)
                if bad is not None:
                    raise NonFiniteLossError(
                        f"non-finite loss at step {bad[0]} (seed {seeds[bad[1]]}) with "
                        f"model {cfg}, task {task}, lr={recipe.lr}, batch_size={recipe.batch_size}"
                    )
                if not active.any():
                    break
    finally:
        batches.close()
        bar.close()
    return _results(models, seeds, stack, updates.cpu().tolist(), (~active).cpu().tolist(), history)


def _results(models, seeds, stack: _Stack, n_updates: list[int], stopped: list[bool], history: _History):
    """The trained parameters copied back into ``models``, with each seed's steps and history."""
    results = []
    trained = stack.views(stack.flat.detach())
    for i, (m, seed) in enumerate(zip(models, seeds)):
        with torch.no_grad():
            for name, p in m.named_parameters():
                p.copy_(trained[name][i].to(p.device))
        n_hist = n_updates[i] + 1 if stopped[i] else n_updates[i]
        results.append(TrainResult(m, seed, n_updates[i], stopped[i], history.of(i, n_hist)))
    return results


def stack_bytes(spec: RunSpec, n_seeds: int) -> int:
    """A lower bound on the memory that training ``n_seeds`` stacked models of ``spec`` takes,
    in bytes: per model, its parameters with their gradients and Adam's two moments, and one
    step's inputs and targets and its attention weights, each with its gradient (float32)."""
    check_int("n_seeds", n_seeds, 1)
    one = AttentionModel.from_config(spec.model_config(), seed=0)
    params = sum(p.numel() for p in one.parameters())
    task, batch = spec.task, spec.recipe.batch_size
    activations = (
        2 * batch * task.seq_len * task.d_model + batch * spec.arch.n_layers * spec.arch.n_heads * task.seq_len**2
    )
    return 4 * n_seeds * (4 * params + 2 * activations)


def available_bytes(device: torch.device) -> int | None:
    """Memory free for new tensors on ``device``: the GPU's free memory, or the machine's
    available memory (``MemAvailable`` of /proc/meminfo, else the free physical pages); None
    where neither can be read."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(spec: RunSpec, n_seeds: int, device=None) -> None:
    """``ValueError`` naming ``seeds`` when ``n_seeds`` stacked models of ``spec`` cannot fit in
    the memory free on ``device`` (by :func:`stack_bytes`, a lower bound), saying how much they
    need: refused before any model is built, not after hours of swapping."""
    dev = resolve_device(device)
    need, have = stack_bytes(spec, n_seeds), available_bytes(dev)
    if have is not None and need > have:
        raise ValueError(
            f"seeds: {n_seeds:,} stacked models of this run need at least {need / 2**30:,.1f} GiB on {dev}, "
            f"and {have / 2**30:,.1f} GiB is free; train fewer seeds at a time"
        )


def train_spec(
    spec: RunSpec,
    seeds: list[int],
    *,
    models: list[AttentionModel] | None = None,
    device: torch.device | str | None = None,
    progress: bool = True,
    check_every: int = 50,
) -> list[TrainResult]:
    """Train one model per seed of the run ``spec``, all together; model ``i`` sees the data
    stream of ``seeds[i]``. The models are ``AttentionModel(..., seed=s)`` of ``spec``'s
    architecture, or ``models`` (one per seed, of that architecture, updated in place).
    Seed ``s`` gives the same model as the plain loop :func:`attnsink.training.train` with
    ``seed=s``, up to float rounding. Each model stops (freezes) on its own criterion; a
    non-finite loss in any model raises :class:`~attnsink.training.NonFiniteLossError` for
    the whole stack. ``ValueError`` before anything is built when the stack cannot fit in
    memory (:func:`check_fits`)."""
    check_fits(spec, len(seeds), device)
    if models is None:
        models = [AttentionModel.from_config(spec.model_config(), seed=s) for s in seeds]
    return _train_stack(models, spec, list(seeds), device=device, progress=progress, check_every=check_every)


def train_seeds(
    task: TriggerTask,
    seeds: list[int],
    *,
    attention: str = "softmax",
    n_heads: int = 1,
    n_layers: int = 1,
    mlp: bool = False,
    layer_norm: bool = False,
    causal: bool = True,
    models: list[AttentionModel] | None = None,
    steps: int,
    lr: float,
    batch_size: int = PAPER_BATCH,
    stop_linf: float | None = PAPER_STOP,
    **run_kwargs,
) -> list[TrainResult]:
    """:func:`train_spec` with the run spelled out as keywords: the architecture
    (``attention``, ``n_heads``, ...; with ``models``, theirs) and the recipe (``steps``,
    ``lr``, ``batch_size``, ``stop_linf``, as :func:`attnsink.training.train` takes them);
    ``run_kwargs`` are ``device``, ``progress`` and ``check_every``."""
    if models and isinstance(models[0], AttentionModel):  # anything else: train_spec's checks say what is wrong
        arch = {k: v for k, v in models[0].config.items() if k in ARCH_FIELDS}
    else:
        arch = {
            "attention": attention,
            "n_heads": n_heads,
            "n_layers": n_layers,
            "mlp": mlp,
            "layer_norm": layer_norm,
            "causal": causal,
        }
    recipe = {"steps": steps, "lr": lr, "batch_size": batch_size, "stop_linf": stop_linf}
    return train_spec(RunSpec.from_options(task, {**arch, **recipe}), seeds, models=models, **run_kwargs)
