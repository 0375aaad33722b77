"""Training throughput for the paper's one-layer setting: a straightforward loop vs the library.

Measures, for softmax and ReLU one-layer one-head models (d_model = seq_len = 16, batch 128,
lr 1e-3, Adam (0.9, 0.95)):

(a) baseline: what one writes first -- sequences sampled one at a time by an IterableDataset
    through a DataLoader, one model, ``.item()`` on the loss every step for the stop check;
(b) the library's fast path with one model (``attnsink.train_seeds`` with one seed);
(c) the library's fast path, S seeds at once (``attnsink.train_seeds``), reported per model;
(p) for reference, the library's plain loop (``attnsink.training.train``, the readable path).

Steps per second are measured over a fixed number of steps with the early stop off,
(a), (b) and (c) in turn, ``--repeats`` times; each is the median of its repeats and each
ratio the median of the repeats' ratios. The time to the stopping criterion (largest
batch error below 5e-3) is measured with it on (the library's one model: the median of
``--repeats`` runs; the others: one run). Run:

    python benchmarks/bench_train.py [--seeds 16] [--repeats 5] [--out bench.json] [--device cpu]

With ``--device cuda`` all three run on the GPU: the baseline moves each batch from its
DataLoader to the device, as such a loop does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset

from attnsink import AttentionModel, TriggerTask, train, train_seeds

TASK = TriggerTask()
LR, BATCH, STOP = 1e-3, 128, 5e-3


class OneSequenceAtATime(IterableDataset):
    """Baseline data: draws each sequence on its own, as a per-example dataset does.

    Written out here rather than calling ``task.sample(1)``, so that the baseline does not
    move when the library's batch code changes; :func:`check_baseline_data` checks that it
    draws the library's task.
    """

    def __init__(self, task: TriggerTask, seed: int):
        self.task, self.seed = task, seed

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed)
        L, d = self.task.seq_len, self.task.d_model
        while True:
            j = int(torch.randint(2, L, (1,), generator=g))  # the trigger's position
            x = torch.zeros(L, d)
            x[0, 0] = 1.0  # BOS
            x[1:, 2 : d - 1] = 2.0 * torch.rand(L - 1, d - 3, generator=g) - 1.0
            x[j, 1] = 1.0
            x[1:, d - 1] = 1.0
            x[j, d - 1] = 0.0
            y = torch.zeros(L, d)
            y[j] = x[1 : j + 1].mean(dim=0)
            yield x, y


def check_baseline_data(n: int = 64) -> None:
    """The baseline's sequences are the library's: the same draws give the same x and y."""
    ours = iter(OneSequenceAtATime(TASK, seed=0))
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        x, y = next(ours)
        ref = TASK.sample(1, generator=g)
        if not (torch.equal(x, ref.x[0]) and torch.allclose(y, ref.y[0], atol=1e-6)):
            raise AssertionError("the baseline's data differ from TriggerTask's")


class BaselineHead(nn.Module):
    """The same one-head model, written the usual way with nn.Linear layers."""

    def __init__(self, d: int, attention: str):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        for lin in (self.q, self.k, self.v, self.o):
            nn.init.normal_(lin.weight, std=0.02)
        self.attention = attention

    def forward(self, x):
        L = x.shape[1]
        scores = self.q(x) @ self.k(x).transpose(1, 2)
        mask = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
        if self.attention == "softmax":
            a = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        else:
            scale = torch.arange(L, device=x.device).clamp(min=1)[:, None]
            a = torch.relu(scores).masked_fill(~mask, 0.0) / scale
        return self.o(a @ self.v(x))


def baseline(attention: str, steps: int, stop: float | None, device: str = "cpu", seed: int = 0) -> tuple[int, float]:
    """(steps taken, seconds): ``steps`` updates, or fewer if the batch error falls below ``stop``."""
    torch.manual_seed(seed)
    model = BaselineHead(TASK.d_model, attention).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.95))
    loader = iter(DataLoader(OneSequenceAtATime(TASK, seed), batch_size=BATCH))
    start = time.perf_counter()
    for step in range(steps):
        x, y = next(loader)
        x, y = x.to(device), y.to(device)
        err = model(x) - y
        loss = err.pow(2).mean()
        if stop is not None and err.abs().max().item() < stop:
            return step, time.perf_counter() - start
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()  # the per-step host sync of a logging loop
    return steps, time.perf_counter() - start


def plain(attention: str, steps: int, stop: float | None, device: str) -> tuple[int, float]:
    """(steps taken, seconds) for the library's plain loop, one model."""
    start = time.perf_counter()
    model = AttentionModel(TASK.d_model, attention=attention, seed=0)
    n = train(model, TASK, steps=steps, lr=LR, stop_linf=stop, device=device, progress=False).steps
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return n, time.perf_counter() - start


def library(attention: str, steps: int, stop: float | None, device: str, seeds: int = 1) -> tuple[int, float]:
    """(steps taken, seconds) for ``seeds`` models at once on the fast path (the most steps
    any of them took)."""
    start = time.perf_counter()
    rs = train_seeds(
        TASK,
        list(range(seeds)),
        attention=attention,
        steps=steps,
        lr=LR,
        stop_linf=stop,
        device=device,
        progress=False,
    )
    n = max(r.steps for r in rs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return n, time.perf_counter() - start


def median_of(repeats: int, fn, *args):
    runs = [fn(*args) for _ in range(repeats)]
    return statistics.median(r[1] for r in runs), runs[0][0]


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark, print its table and return (and with ``--out``, write) the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=positive_int, default=16, help="S, models trained at once in (c)")
    parser.add_argument("--steps", type=positive_int, default=400, help="steps timed for one model's steps per second")
    parser.add_argument("--seed-steps", type=positive_int, default=100, help="steps timed for S seeds at once")
    parser.add_argument("--baseline-steps", type=positive_int, default=100, help="steps timed for the (slow) baseline")
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument(
        "--criterion-steps",
        type=positive_int,
        default=50_000,
        help="most steps of a run to the stopping criterion (a run that hits it has not met the criterion)",
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    try:
        device = torch.device(args.device)
    except RuntimeError:
        parser.error(f"argument --device: not a torch device: {args.device!r}")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("argument --device: CUDA is not available here")

    check_baseline_data()
    rows, out = [], {"device": args.device, "torch_threads": torch.get_num_threads(), "seeds": args.seeds}
    for attention in ("softmax", "relu"):
        library(attention, 20, None, args.device)  # warm-up
        # the three are timed in turn, repeat after repeat, so that each repeat's ratios
        # compare runs made a second apart: a shared machine's speed drifts by tens of
        # percent over minutes, and the ratios of medians taken minutes apart would carry that
        base_sps, one_sps, many_model_sps, plain_sps = [], [], [], []
        for _ in range(args.repeats):
            base_sps.append(args.baseline_steps / baseline(attention, args.baseline_steps, None, args.device)[1])
            plain_sps.append(args.baseline_steps / plain(attention, args.baseline_steps, None, args.device)[1])
            one_sps.append(args.steps / library(attention, args.steps, None, args.device)[1])
            t_many = library(attention, args.seed_steps, None, args.device, args.seeds)[1]
            many_model_sps.append(args.seeds * args.seed_steps / t_many)
        speedup_single = statistics.median(o / b for o, b in zip(one_sps, base_sps))
        speedup_multi = statistics.median(m / o for m, o in zip(many_model_sps, one_sps))
        speedup_plain = statistics.median(p / b for p, b in zip(plain_sps, base_sps))
        plain_sps = statistics.median(plain_sps)
        base_sps, one_sps = statistics.median(base_sps), statistics.median(one_sps)
        many_model_sps = statistics.median(many_model_sps)
        cap = args.criterion_steps
        ttc_base, n_base = median_of(1, baseline, attention, cap, STOP, args.device)
        ttc_one, n_one = median_of(args.repeats, library, attention, cap, STOP, args.device)
        ttc_many, n_many = median_of(1, library, attention, cap, STOP, args.device, args.seeds)
        rows.append(
            (attention, base_sps, plain_sps, one_sps, speedup_single, many_model_sps, speedup_multi)
            + (ttc_base, n_base, ttc_one, n_one, ttc_many)
        )
        out[attention] = {
            "baseline_steps_per_s": base_sps,
            "single_steps_per_s": one_sps,
            "speedup_single": speedup_single,
            "multi_seed_model_steps_per_s": many_model_sps,
            "speedup_multi_per_model": speedup_multi,
            "plain_steps_per_s": plain_sps,
            "speedup_plain": speedup_plain,  # the plain loop over the baseline
            "baseline_time_to_criterion_s": ttc_base,
            "baseline_steps_to_criterion": n_base,
            "single_time_to_criterion_s": ttc_one,
            "single_steps_to_criterion": n_one,
            "multi_seed_time_to_criterion_s": ttc_many,
            "multi_seed_steps_to_criterion": n_many,  # the most any of the S seeds took
            "criterion_steps_cap": cap,
        }
    # the headline numbers (softmax, the paper's main model) at the top level
    out.update(
        {
            k: out["softmax"][k]
            for k in (
                "baseline_steps_per_s",
                "single_steps_per_s",
                "speedup_single",
                "multi_seed_model_steps_per_s",
                "speedup_multi_per_model",
            )
        }
    )

    print(
        f"device {args.device}, {torch.get_num_threads()} threads, S = {args.seeds}, "
        f"medians of {args.repeats} interleaved repeats (each ratio: the median of the repeats' ratios)"
    )
    header = (
        f"{'attention':<9} {'baseline':>10} {'plain':>10} {'fast':>10} {'x':>6} {'S seeds':>10} {'x':>6}"
        f"   time to criterion: {'baseline':>9} {'library':>9} {'S seeds':>9}"
    )
    print(header)
    print(f"{'':<9} {'steps/s':>10} {'steps/s':>10} {'steps/s':>10} {'':>6} {'/model/s':>10}")
    for attention, b, p, o, xo, m, xm, tb, nb, to, no, tm in rows:
        print(
            f"{attention:<9} {b:>10.0f} {p:>10.0f} {o:>10.0f} {xo:>6.1f} {m:>10.0f} {xm:>6.1f}"
            f"   {'':>19}{tb:>8.2f}s {to:>8.2f}s {tm:>8.2f}s   ({nb} / {no} steps)"
        )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
        print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    main()
