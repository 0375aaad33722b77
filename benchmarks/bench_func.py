"""Is the hand-written engine worth its code? ``attnsink.train_seeds`` (the engine: a stacked
model with its own Adam and backward pass) against the standard way to train many seeds at
once, ``torch.func``: ``vmap`` over ``functional_call`` of the library's plain
:class:`~attnsink.model.AttentionModel`, with ``torch.optim.Adam`` on the stacked parameters.

Both train the paper's one-layer setting (d_model = seq_len = 16, batch 128, lr 1e-3, Adam
(0.9, 0.95)) for a fixed number of steps with the early stop off, on each seed's own data
stream (``TriggerTask.training_batches``), for S = 1 and S = 16 seeds, softmax and ReLU. The
two paths run in turn, ``--repeats`` times; each speed is the median of its repeats and the
ratio the median of the repeats' ratios (one run, one machine, so the ratio holds even on a
shared machine where the absolute speeds do not). Run:

    python benchmarks/bench_func.py [--steps 300] [--repeats 3] [--seeds 1 16] [--out bench_func.json]

The issue's rule: if ``torch.func`` comes within about 1.3x of the engine, it replaces the
engine; otherwise the numbers go on the measurements page and the engine stays.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch.func import functional_call, stack_module_state, vmap

from attnsink import AttentionModel, TriggerTask, train_seeds
from attnsink.training import ADAM_EPS, BETAS

TASK = TriggerTask()
LR, BATCH = 1e-3, 128


def func_train(attention: str, seeds: list[int], steps: int) -> float:
    """``steps`` Adam steps of ``len(seeds)`` models with torch.func; returns seconds."""
    models = [AttentionModel(TASK.d_model, attention=attention, seed=s) for s in seeds]
    params, buffers = stack_module_state(models)
    base = models[0]

    def loss_one(p, b, x, y):
        y_hat, _ = functional_call(base, (p, b), (x,))
        return (y_hat - y).pow(2).mean()

    loss_all = vmap(loss_one)
    optimizer = torch.optim.Adam(list(params.values()), lr=LR, betas=BETAS, eps=ADAM_EPS)
    streams = [TASK.training_batches(BATCH, seed=s) for s in seeds]
    start = time.perf_counter()
    for _ in range(steps):
        batches = [next(s) for s in streams]
        x = torch.stack([b.x for b in batches])
        y = torch.stack([b.y for b in batches])
        loss = loss_all(params, buffers, x, y).sum()  # each model's gradient is its own loss's
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def engine_train(attention: str, seeds: list[int], steps: int) -> float:
    start = time.perf_counter()
    train_seeds(TASK, seeds, attention=attention, steps=steps, lr=LR, batch_size=BATCH, stop_linf=None, progress=False)
    return time.perf_counter() - start


def check_same_training(steps: int = 20) -> float:
    """Both paths train the same models: the largest parameter difference after ``steps``."""
    seeds = [0, 1]
    models = [AttentionModel(TASK.d_model, attention="softmax", seed=s) for s in seeds]
    params, buffers = stack_module_state(models)

    def loss_one(p, b, x, y):
        return (functional_call(models[0], (p, b), (x,))[0] - y).pow(2).mean()

    optimizer = torch.optim.Adam(list(params.values()), lr=LR, betas=BETAS, eps=ADAM_EPS)
    streams = [TASK.training_batches(BATCH, seed=s) for s in seeds]
    for _ in range(steps):
        batches = [next(s) for s in streams]
        loss = vmap(loss_one)(params, buffers, torch.stack([b.x for b in batches]), torch.stack([b.y for b in batches]))
        optimizer.zero_grad()
        loss.sum().backward()
        optimizer.step()
    trained = train_seeds(TASK, seeds, attention="softmax", steps=steps, lr=LR, stop_linf=None, progress=False)
    return max(
        (params[k][i] - r.model.state_dict()[k]).abs().max().item() for i, r in enumerate(trained) for k in params
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = {"steps": args.steps, "repeats": args.repeats, "threads": torch.get_num_threads(), "rows": []}
    out["max_param_difference_after_20_steps"] = check_same_training()
    for attention in ("softmax", "relu"):
        for n in args.seeds:
            seeds = list(range(n))
            engine_train(attention, seeds, 10)  # warm both paths up
            func_train(attention, seeds, 10)
            engine, func = [], []
            for _ in range(args.repeats):
                engine.append(engine_train(attention, seeds, args.steps))
                func.append(func_train(attention, seeds, args.steps))
            row = {
                "attention": attention,
                "seeds": n,
                "engine_model_steps_per_s": round(statistics.median(n * args.steps / t for t in engine), 1),
                "func_model_steps_per_s": round(statistics.median(n * args.steps / t for t in func), 1),
                "func_over_engine_time": round(statistics.median(f / e for f, e in zip(func, engine)), 2),
            }
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
