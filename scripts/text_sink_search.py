"""The hand search behind chapter 8's settings: twelve character-level GPTs on ``pydoc_data``
text, and whether any head's mean weight on the first token passes 0.3 (a sink, as
``Sink_1^eps`` counts it).

These are the runs the README's "Language models" paragraph counts (eleven softmax models,
one ReLU): depth 2 to 4, 4 or 8 heads, 64 or 128 characters, batches of 8 or 32, learning
rate 3e-3 or 1e-2, weight decay 0.1 or 0.5, 2,000 to 12,000 steps. Two run at a time, one
thread each; about 15 minutes on two cores. Run:

    python scripts/text_sink_search.py [--out text_sink_search.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from attnsink import lm
from attnsink.parallel import in_processes

# (name, layers, heads, seq_len, batch, lr, weight decay, steps, seed, rule)
RUNS = [
    ("L2 H4", 2, 4, 64, 32, 3e-3, 0.1, 2000, 0, "softmax"),
    ("L2 H8", 2, 8, 64, 32, 3e-3, 0.1, 2000, 0, "softmax"),
    ("L2 H4 lr 1e-2", 2, 4, 64, 8, 1e-2, 0.1, 6000, 0, "softmax"),
    ("L3 H4 128 chars", 3, 4, 128, 8, 3e-3, 0.1, 4000, 0, "softmax"),
    ("L2 H4 lr 1e-2 seed 1", 2, 4, 64, 8, 1e-2, 0.1, 6000, 1, "softmax"),
    ("L2 H4 lr 1e-2 wd 0.5", 2, 4, 64, 8, 1e-2, 0.5, 6000, 0, "softmax"),
    ("L2 H4 12k steps", 2, 4, 64, 8, 3e-3, 0.1, 12000, 0, "softmax"),
    ("L4 H4 lr 1e-2", 4, 4, 64, 8, 1e-2, 0.1, 6000, 0, "softmax"),
    ("L2 H4 lr 1e-2 wd 0.5 seed 1", 2, 4, 64, 8, 1e-2, 0.5, 4000, 1, "softmax"),
    ("L2 H4 wd 0.5", 2, 4, 64, 8, 3e-3, 0.5, 4000, 0, "softmax"),
    ("L4 H4 lr 1e-2 seed 1", 4, 4, 64, 8, 1e-2, 0.1, 4000, 1, "softmax"),
    ("L2 H4 ReLU lr 1e-2 wd 0.5", 2, 4, 64, 8, 1e-2, 0.5, 4000, 0, "relu"),
]


def run(name, layers, heads, seq_len, batch, lr, wd, steps, seed, rule) -> dict:
    torch.set_num_threads(1)
    start = time.time()
    task = lm.CharText(seq_len=seq_len)
    shape = {"d_model": 64, "n_layers": layers, "n_heads": heads}
    model = lm.GPT(task.vocab_size, seq_len=seq_len, **shape, attention=rule, seed=seed)
    every = 250 if steps <= 2000 else 500
    h = lm.train_lm(
        model, task, steps=steps, lr=lr, batch_size=batch, weight_decay=wd, every=every, n_val=64, seed=seed
    ).history
    first = h["first_mean"]  # (measurements, layers, heads)
    return {
        "name": name,
        "rule": rule,
        "lr": lr,
        "seconds": time.time() - start,
        "val_loss": float(h["val_loss"][-1]),
        "largest_first_mean_ever": float(first.max()),
        "largest_first_mean_end": float(first[-1].max()),
        "sink_ever": bool((first > lm.SINK_EPS).any()),
        "first_mean_end": np.round(first[-1], 3).tolist(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    results = {}
    in_processes(run, RUNS, workers=2, on_result=lambda i, r: results.__setitem__(i, r))
    rows = [results[i] for i in range(len(RUNS))]
    for r in rows:
        print(
            f"{r['name']:30s} val {r['val_loss']:.3f}  largest first-token weight:"
            f" end {r['largest_first_mean_end']:.2f}, ever {r['largest_first_mean_ever']:.2f}"
            + ("  SINK" if r["sink_ever"] else "")
        )
    soft = [r for r in rows if r["rule"] == "softmax"]
    for lr in sorted({r["lr"] for r in soft}):
        part = [r for r in soft if r["lr"] == lr]
        hits = sum(r["sink_ever"] for r in part)
        print(f"softmax at lr {lr:g}: a head above {lm.SINK_EPS} in {hits} of {len(part)} runs")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
