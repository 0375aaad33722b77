r"""The trigger-conditional task of Ran-Milo (2026), Section 4. Used in every chapter.

A sequence has ``seq_len`` tokens, each a vector in :math:`\mathbb{R}^d` with
:math:`d` = ``d_model``. Coordinates of a token:

* 0: BOS indicator (1 only at position 0),
* 1: trigger indicator (1 only at the trigger),
* 2 .. d_model-2: i.i.d. Uniform(-1, 1) noise on every non-BOS token, the trigger included,
* d_model-1: bias channel, 1 on content tokens, 0 on BOS and on the trigger.

Exactly one trigger per sequence, at a 0-indexed position drawn uniformly from
2 .. seq_len-1. The target is zero everywhere except at the trigger, where it is the mean
of the tokens at positions 1 .. trigger (the trigger included). With ``residual=True`` the
target is ``x`` plus that: the layers must add nothing at non-trigger positions.

:class:`ConstantTriggerTask` asks a constant instead of zero at the other rows, and
:class:`GlobalTriggerTask` the mean of the whole sequence at the trigger, for a model
without the causal mask.

The ablation ``bos=False`` removes BOS: position 0 is an ordinary content token, and the
target at the trigger is the mean of the tokens at positions 0 .. trigger.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, replace

import torch

from ._checks import check_bool, check_int

BOS, TRIGGER = 0, 1  # coordinate indices of the two indicator channels
DATA_SEED_OFFSET = 1_000_003  # a run's training batches come from seed + this; its initialisation from seed


@dataclass(frozen=True)
class Batch:
    """A batch of sequences: inputs, targets and where the trigger is."""

    x: torch.Tensor  # (batch, seq_len, d_model)
    y: torch.Tensor  # (batch, seq_len, d_model)
    trigger_pos: torch.Tensor  # (batch,) 0-indexed, int64
    is_trigger: torch.Tensor  # (batch, seq_len) bool
    is_nontrigger: torch.Tensor  # (batch, seq_len) bool: content positions (t >= 1 with BOS) but the trigger
    # (the fast trainer also builds stacks of batches, with one more leading dimension)

    def __getitem__(self, rows: slice) -> Batch:
        """The sequences ``rows`` of this batch."""
        return Batch(*(getattr(self, f.name)[rows] for f in fields(self)))


@dataclass(frozen=True)
class TriggerTask:
    """The paper's task; defaults are the paper's setting (d_model = seq_len = 16)."""

    d_model: int = 16
    seq_len: int = 16
    residual: bool = False
    bos: bool = True

    def __post_init__(self):
        check_int("d_model", self.d_model, 3)  # BOS, trigger and bias channels
        check_int("seq_len", self.seq_len, 4)
        check_bool("residual", self.residual)
        check_bool("bos", self.bos)

    def job_rows(self, batch: Batch) -> torch.Tensor:
        """The rows whose target asks for the task's computed output (bool, (batch,
        seq_len)): the trigger here. Relative errors and the ablations' scale are measured
        against the update these rows need (:func:`attnsink.metrics.job_cost`)."""
        return batch.is_trigger

    @property
    def n_noise(self) -> int:
        """Number of Uniform(-1, 1) content coordinates per token."""
        return self.d_model - 3

    @property
    def first_content(self) -> int:
        """Position of the first content token: 1 after BOS, 0 without BOS."""
        return 1 if self.bos else 0

    @property
    def n_noise_positions(self) -> int:
        """Number of positions that carry noise (all but BOS)."""
        return self.seq_len - self.first_content

    def sample(
        self,
        batch_size: int,
        *,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        trigger_pos: int | None = None,
    ) -> Batch:
        """Draw ``batch_size`` sequences on ``device``, vectorised (no per-sequence loop).

        ``trigger_pos`` fixes the 0-indexed trigger position (the paper's figures use 7);
        by default it is uniform on 2 .. seq_len-1. ``generator`` makes the draw
        reproducible and must live on ``device``.
        """
        check_int("batch_size", batch_size, 1)
        if device is None:
            device = generator.device if generator is not None else torch.device("cpu")
        device = torch.device(device)
        g_dev = generator.device if generator is not None else device
        if g_dev.type != device.type or (None not in (g_dev.index, device.index) and g_dev.index != device.index):
            raise ValueError(f"generator is on {generator.device} but device is {device}; they must match")
        L = self.seq_len
        if trigger_pos is None:
            j = torch.randint(2, L, (batch_size,), generator=generator, device=device)
        else:
            check_int("trigger_pos", trigger_pos, 2, L - 1)
            j = torch.full((batch_size,), trigger_pos, dtype=torch.long, device=device)

        noise = torch.rand(batch_size, self.n_noise_positions, self.n_noise, generator=generator, device=device)
        return self.build(j, noise)

    def data_chunk(self, batch_size: int) -> int:
        """Training steps whose batches are drawn at once: about 256k numbers per chunk, so the
        draws stay in cache. It depends on the task and batch size only, so a seed's data
        stream is the same whatever else is trained beside it."""
        return max(1, min(32, 2**18 // (batch_size * self.seq_len * self.d_model)))

    def training_batches(
        self, batch_size: int, *, seed: int, device: torch.device | str | None = None
    ) -> Iterator[Batch]:
        """The training data of run ``seed``: an endless stream of batches of ``batch_size``.

        Every :meth:`data_chunk` steps it draws that many batches with one :meth:`sample` call
        from a generator seeded with ``seed + DATA_SEED_OFFSET``; the fast trainer draws the
        same numbers in the same order, so both trainers see the same batches.
        """
        check_int("batch_size", batch_size, 1)
        check_int("seed", seed, 0)
        device = torch.device("cpu" if device is None else device)
        generator = torch.Generator(device).manual_seed(seed + DATA_SEED_OFFSET)
        return self._stream(batch_size, generator, device)

    def _stream(self, batch_size: int, generator: torch.Generator, device: torch.device) -> Iterator[Batch]:
        chunk = self.data_chunk(batch_size)
        while True:
            block = self.sample(chunk * batch_size, generator=generator, device=device)
            for i in range(chunk):
                yield block[i * batch_size : (i + 1) * batch_size]

    def build(self, trigger_pos: torch.Tensor, noise: torch.Tensor, *, validate: bool = True) -> Batch:
        """The sequences and targets for given trigger positions ``(*,)`` and Uniform(0, 1) draws
        ``(*, n_noise_positions, n_noise)``; any leading dimensions. :meth:`sample` draws these two and
        calls this. ``validate=False`` skips the check of the trigger positions' values (it
        costs a device sync); positions outside 2 .. seq_len-1 then give wrong batches.
        """
        L = self.seq_len
        if not isinstance(trigger_pos, torch.Tensor) or trigger_pos.dtype != torch.long:
            raise ValueError("trigger_pos must be an int64 tensor of 0-indexed trigger positions")
        shape = (*trigger_pos.shape, self.n_noise_positions, self.n_noise)
        if not isinstance(noise, torch.Tensor) or tuple(noise.shape) != shape:
            raise ValueError(f"noise must have shape (*trigger_pos.shape, {self.n_noise_positions}, {self.n_noise})")
        if validate and trigger_pos.numel() and not (2 <= int(trigger_pos.min()) and int(trigger_pos.max()) <= L - 1):
            raise ValueError(f"trigger_pos values must lie in 2..{L - 1}")
        return self._assemble(trigger_pos, 2.0 * noise - 1.0)

    def _assemble(self, trigger_pos: torch.Tensor, content: torch.Tensor) -> Batch:
        """:meth:`build` from the content coordinates themselves, ``2 * noise - 1``, which the
        trainer computes once per chunk of draws. Every step goes through here, so each line
        is the cheapest of the ways we timed (benchmarks/RESULTS.md, "Why the engine is built as it is")."""
        L, n = self.seq_len, self.d_model
        lead = tuple(trigger_pos.shape)
        first = self.first_content
        dev = content.device
        pos = torch.arange(L, device=dev)
        is_trigger = pos == trigger_pos[..., None]  # (*, seq_len)
        is_content = (pos >= first) & ~is_trigger  # (*, seq_len)
        x = torch.zeros(*lead, L, n, device=dev)
        if self.bos:
            x[..., 0, BOS] = 1.0
        x[..., TRIGGER].copy_(is_trigger)
        x[..., first:, 2 : n - 1].copy_(content)
        x[..., n - 1].copy_(is_content)

        # the mean of the tokens first..j, written at the trigger j of each sequence
        summed = ((pos >= first) & (pos <= trigger_pos[..., None])).to(x.dtype)  # (*, seq_len)
        mean = (summed[..., None] * x).sum(dim=-2) / (trigger_pos - first + 1).to(x.dtype)[..., None]
        rows = torch.arange(trigger_pos.numel(), device=dev) * L + trigger_pos.flatten()  # in x.view(-1, n)
        target = mean.reshape(-1, n)
        if self.residual:
            y = x.clone()
            target = target + x.view(-1, n).index_select(0, rows)
        else:
            y = torch.zeros_like(x)
        y.view(-1, n).index_copy_(0, rows, target)  # (index_copy_: deterministic on a GPU too)
        return Batch(x=x, y=y, trigger_pos=trigger_pos, is_trigger=is_trigger, is_nontrigger=is_content)


@dataclass(frozen=True)
class ConstantTriggerTask(TriggerTask):
    """The trigger task with a constant default: the target at every position but the
    trigger, BOS's own row included, is the constant vector :math:`c` whose every coordinate
    is ``default`` (with ``residual=True``: the token plus :math:`c`), instead of zero; the
    trigger's target is :class:`TriggerTask`'s. ``default=0`` is :class:`TriggerTask` itself.
    Tokens, trigger positions and the noise are drawn exactly as there."""

    default: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        if isinstance(self.default, bool) or not isinstance(self.default, (int, float)) or self.default != self.default:
            raise ValueError(f"default must be a finite number, got {self.default!r}")
        if abs(self.default) == float("inf"):
            raise ValueError(f"default must be a finite number, got {self.default!r}")

    @property
    def constant(self) -> torch.Tensor:
        """:math:`c`, the target at every non-trigger position, (d_model,)."""
        return torch.full((self.d_model,), float(self.default))

    def _assemble(self, trigger_pos: torch.Tensor, content: torch.Tensor) -> Batch:
        batch = super()._assemble(trigger_pos, content)
        off = (~batch.is_trigger).to(batch.y.dtype)[..., None]  # every row but the trigger
        return replace(batch, y=batch.y + float(self.default) * off)


GLOBAL_DEFAULTS = ("zero", "mean")
"""What :class:`GlobalTriggerTask` asks at every row but the trigger: zero (the trigger asks
the global mean), or the global mean (the trigger asks zero)."""


@dataclass(frozen=True)
class GlobalTriggerTask(TriggerTask):
    """The trigger task for a model that sees the whole sequence (``causal=False``): the
    trigger's target is the *global* mean :math:`m`, the mean of every token from the first
    content token to the last (the trigger included), not the mean up to the trigger, and zero
    at every other row, BOS's own included (``default="zero"``). Its mirror,
    ``default="mean"``, asks :math:`m` at every row but the trigger and zero at the trigger.
    With ``residual=True`` the target is the token plus that. Tokens, trigger positions and
    the noise are drawn exactly as in :class:`TriggerTask`."""

    default: str = "zero"

    def __post_init__(self):
        super().__post_init__()
        if self.default not in GLOBAL_DEFAULTS:
            raise ValueError(f"default must be one of {list(GLOBAL_DEFAULTS)}, got {self.default!r}")

    def job_rows(self, batch: Batch) -> torch.Tensor:
        """The rows that ask :math:`m`: the trigger (``default="zero"``), or every row but
        the trigger, BOS's own included (``"mean"``)."""
        return batch.is_trigger if self.default == "zero" else ~batch.is_trigger

    def global_mean(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`m` of each sequence of ``x`` (*, seq_len, d_model): (*, d_model)."""
        return x[..., self.first_content :, :].mean(dim=-2)

    def _assemble(self, trigger_pos: torch.Tensor, content: torch.Tensor) -> Batch:
        batch = super()._assemble(trigger_pos, content)
        x = batch.x
        m = self.global_mean(x)[..., None, :]  # (*, 1, d_model)
        wants_mean = batch.is_trigger if self.default == "zero" else ~batch.is_trigger
        y = (x if self.residual else torch.zeros_like(x)) + wants_mean[..., None].to(x.dtype) * m
        return replace(batch, y=y)
