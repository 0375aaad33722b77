"""One grid, trained with the local backend and with Ray, on this machine: the ratio of wall times.

The grid (``--spec``, default: a small sweep of softmax and ReLU one-layer heads over four
sequence lengths, 2 seeds, a 600-step cap without early stopping) is trained from an empty
cache with ``--backend local`` (``--workers`` processes) and with ``--backend ray`` (a local
Ray cluster with ``--workers`` CPUs, one CPU per task), ``--repeats`` times each, in turn;
each time is the median of its repeats, and the ratio is ray / local. Starting the Ray
cluster is timed apart (it is paid once per run of the command, not per grid). The two
backends' records are checked to be identical. Run:

    python benchmarks/bench_grid.py [--workers 2] [--repeats 3] [--out bench_grid.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from attnsink.experiments.grid import load_spec, run_grid

SPEC = {"attention": ["softmax", "relu"], "seq_len": [8, 12, 16, 24], "seeds": 2, "steps": 600, "stop_linf": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=None, help="a spec file (default: the built-in small sweep)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import ray

    spec = load_spec(args.spec or SPEC)
    t = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    start_ray = time.perf_counter() - t
    times = {"local": [], "ray": []}
    records = {}
    for _ in range(args.repeats):
        for backend in ("local", "ray"):
            t = time.perf_counter()
            options = {"workers": args.workers} if backend == "local" else {}
            result = run_grid(spec, backend=backend, cache_dir=None, **options)
            times[backend].append(time.perf_counter() - t)
            records.setdefault(backend, result.runs)
    ray.shutdown()
    if json.dumps(records["local"], sort_keys=True) != json.dumps(records["ray"], sort_keys=True):  # NaN == NaN
        raise SystemExit("the backends' records differ")
    med = {k: statistics.median(v) for k, v in times.items()}
    report = {
        "points": len(spec.points),
        "seeds": spec.seeds,
        "steps": spec.steps,
        "workers": args.workers,
        "seconds": med,
        "all_seconds": times,
        "ray_start_seconds": start_ray,
        "ratio_ray_over_local": med["ray"] / med["local"],
    }
    print(json.dumps(report, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
