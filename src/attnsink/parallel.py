"""Several training calls at once: the groups of an experiment trained side by side, each in
its own process, on the CPU's cores.

A one-layer model of the paper's size is too small to keep two cores busy: on a two-core
CPU, one training process with two threads runs only about 1.4 times as fast as with one
thread. So an experiment with many independent groups (chapter 6's 18 rules and tasks, the
sweeps' points) finishes sooner when two one-thread processes train two groups at a time.
:func:`train_many` does that with the standard library's process pool; each worker trains
its group with :func:`attnsink.engine.train_seeds` and sends the results back, and this
process stores them in the results cache as they arrive, so an interrupted run keeps every
finished group. A model trained in a worker is the same, number for number, as one trained
here (the engine's results do not depend on the thread count; ``tests/test_parallel.py``
checks it).

On a GPU, or with one worker, the groups are trained one after the other in this process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import torch

from ._checks import check_int
from .cache import MissingResultsError, cache_lookup, store_seed, train_missing
from .engine import train_seeds
from .task import TriggerTask
from .train import TrainResult, resolve_device

WORKERS_ENV = "ATTNSINK_WORKERS"


@dataclass(frozen=True)
class Job:
    """One training call: ``seeds`` of one model shape on ``task``; ``options`` are
    :func:`attnsink.engine.train_seeds`' keyword arguments (``attention``, ``steps``, ``lr``, ...)."""

    task: TriggerTask
    seeds: tuple[int, ...]
    options: dict = field(default_factory=dict)


def resolve_workers(workers: int | None, device: torch.device) -> int:
    """How many processes train at once: ``workers``, else ``$ATTNSINK_WORKERS``, else one per
    CPU core on the CPU and one on a GPU."""
    if workers is not None:
        check_int("workers", workers, 1)
        return workers
    value = os.environ.get(WORKERS_ENV)
    if value:
        try:
            workers = int(value)
        except ValueError:
            workers = 0
        if workers < 1:
            raise ValueError(f"{WORKERS_ENV} must be a whole number >= 1, got {value!r}")
        return workers
    return (os.cpu_count() or 1) if device.type == "cpu" else 1


def _cost(job: Job, seeds: int) -> float:
    """A rough guess of a group's training time, to start the longest groups first: seeds x
    step cap x layers x heads x the size of one head's (query, key) and (key, d) work."""
    o, t = job.options, job.task
    return seeds * o["steps"] * o.get("n_layers", 1) * o.get("n_heads", 1) * t.seq_len * (t.seq_len + t.d_model)


def _parse_device(device: torch.device | str) -> torch.device:
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from e


def _init_worker(threads: int) -> None:
    torch.set_num_threads(threads)


def _train_payloads(task: TriggerTask, seeds: list[int], device: str, options: dict) -> list[dict]:
    """In a worker: train one group, return its results as plain tensors (picklable)."""
    trained = train_seeds(task, seeds, device=torch.device(device), progress=False, **options)  # no bar per worker
    return [r.to_payload() for r in trained]


def in_processes(
    fn: Callable, calls: Sequence[tuple], *, workers: int, on_result: Callable, progress: bool = False, desc: str = ""
) -> None:
    """``fn(*args)`` for every ``args`` of ``calls``, in up to ``workers`` processes at once,
    started in the order given; ``on_result(i, value)`` runs in this process as call ``i``
    finishes, so whatever finished is kept when another call fails or on Ctrl-C. Each
    worker process uses ``cpu_count // workers`` threads; ``fn`` must be importable (the
    processes are spawned, not forked: a forked copy of a process running torch's threads
    can hang)."""
    check_int("workers", workers, 1)
    threads = max(1, (os.cpu_count() or 1) // workers)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(calls), desc=f"{desc} ({workers} processes)", unit="task")
    pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_init_worker, initargs=(threads,))
    try:
        futures = {pool.submit(fn, *args): i for i, args in enumerate(calls)}
        for future in as_completed(futures):
            on_result(futures[future], future.result())
            if bar is not None:
                bar.update()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()


BACKENDS = ("local", "ray")


def train_many(
    jobs: Sequence[Job],
    *,
    cache_dir: str | Path | None,
    device: torch.device | str | None = None,
    progress: bool = False,
    workers: int | None = None,
    backend: str = "local",
    ray_options: dict | None = None,
    allow_training: bool = True,
) -> list[list[TrainResult]]:
    """Every job's results (one :class:`~attnsink.train.TrainResult` per seed, in the job's
    order), through the results cache: what is cached is read, what is missing is trained,
    and stored here as each group finishes. ``progress`` shows one bar of groups done and left.

    ``backend="local"`` trains up to ``workers`` groups at once in processes on this machine
    (see :func:`resolve_workers`); ``backend="ray"`` makes each group a Ray task
    (:func:`attnsink.cluster.in_ray`, whose keyword arguments ``address``, ``num_cpus``,
    ``num_gpus`` and ``max_retries`` come from ``ray_options``), on ``device`` as the workers
    see it (default: CUDA when the tasks ask for GPUs, else the CPU). With ``allow_training``
    False, a missing model raises :class:`~attnsink.cache.MissingResultsError` (how many are
    missing, of how many) before anything trains."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    ray_options = dict(ray_options or {})
    if backend == "ray":
        if device is None:
            device = "cuda" if ray_options.get("num_gpus", 0) else "cpu"
        dev = _parse_device(device)  # the workers' device: this machine need not have it
        gpus = ray_options.get("num_gpus", 0)
        if dev.type == "cuda" and not gpus:
            raise ValueError("device is cuda but the Ray tasks ask for no GPU; set num_gpus (e.g. 1)")
        if dev.type == "cpu" and gpus:
            raise ValueError(f"the Ray tasks ask for num_gpus={gpus:g} but device is cpu; use device cuda")
    else:
        if ray_options:
            raise ValueError("ray_options is only for backend='ray'")
        dev = resolve_device(device)
    n_workers = resolve_workers(workers, dev) if backend == "local" else len(jobs)
    lookups = [cache_lookup(job.task, list(job.seeds), cache_dir=cache_dir, device=dev, **job.options) for job in jobs]
    todo = [i for i, (_, _, missing) in enumerate(lookups) if missing]
    if todo and not allow_training:
        n_missing = sum(len(lookups[i][2]) for i in todo)
        raise MissingResultsError(f"{n_missing} of {sum(len(j.seeds) for j in jobs)} models")
    todo.sort(key=lambda i: -_cost(jobs[i], len(lookups[i][2])))  # the longest first, so no worker idles at the end
    n_workers = min(n_workers, len(todo))
    if not todo:  # everything was in the cache: no process, no cluster
        return [[found[s] for s in job.seeds] for job, (_, found, _) in zip(jobs, lookups)]
    if backend == "local" and n_workers <= 1:  # one after the other, here, with the engine's own progress bars
        for i in todo:
            train_missing(jobs[i].task, lookups[i], cache_dir=cache_dir, device=dev, progress=progress)
        return [[found[s] for s in job.seeds] for job, (_, found, _) in zip(jobs, lookups)]

    def keep(k: int, payloads: list[dict]) -> None:
        base, found, _ = lookups[todo[k]]
        for payload in payloads:
            result = TrainResult.from_payload(payload)
            found[result.seed] = result
            store_seed(cache_dir, base, result)

    calls = [(jobs[i].task, lookups[i][2], dev.type, lookups[i][0]["options"]) for i in todo]
    if backend == "ray":
        from .cluster import in_ray

        in_ray(_train_payloads, calls, on_result=keep, progress=progress, desc="training groups", **ray_options)
    else:
        in_processes(
            _train_payloads, calls, workers=n_workers, on_result=keep, progress=progress, desc="training groups"
        )
    return [[found[s] for s in job.seeds] for job, (_, found, _) in zip(jobs, lookups)]
