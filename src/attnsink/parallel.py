"""Several training calls at once: the groups of an experiment trained side by side, each in
its own process, on the CPU's cores.

A one-layer model of the paper's size is too small to keep two cores busy: on a two-core
CPU, one training process with two threads runs far less than twice as fast as with one
thread (``benchmarks/RESULTS.md``). So an experiment with many independent groups (chapter 6's 18 rules and tasks, the
sweeps' points) finishes sooner when two one-thread processes train two groups at a time.
:func:`train_many` does that with the standard library's process pool; each worker trains
its group with :func:`attnsink.engine.train_spec` and sends the results back, and this
process stores them in the results cache as they arrive, so an interrupted run keeps every
finished group. A model trained in a worker is the same, number for number, as one trained
here (the engine's results do not depend on the thread count; ``tests/test_parallel.py``
checks it).

On a GPU, or with one worker, the groups are trained one after the other in this process.

Two kinds of job take this path, each through its trainer (:data:`TRAINERS`, the one hook):
the trigger-task models (``"train_seeds"``: a group of seeds trained as one stack by the
engine) and the language models (``"gpt"``: :func:`attnsink.lm.train_gpt`, one GPT per seed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import torch

from ._checks import check_int
from .cache import MissingResultsError, entry_meta, load, put
from .engine import train_spec
from .lm import GPTSpec, load_gpt, train_gpt
from .spec import RunSpec
from .training import NonFiniteLossError, TrainResult, resolve_device

WORKERS_ENV = "ATTNSINK_WORKERS"


@dataclass(frozen=True)
class Job:
    """One training call: ``seeds`` of the run ``spec``, a :class:`~attnsink.spec.RunSpec` (a
    trigger-task model; its seeds train as one stack) or a :class:`~attnsink.lm.GPTSpec` (a
    language model; one GPT per seed). The spec's ``kind`` names its trainer (:data:`TRAINERS`)."""

    spec: RunSpec | GPTSpec
    seeds: tuple[int, ...]

    @property
    def task(self):
        return self.spec.task

    @property
    def options(self) -> dict:
        """The spec's training options (for a RunSpec, :func:`attnsink.engine.train_seeds`' keywords)."""
        return self.spec.options()


@dataclass(frozen=True)
class Trainer:
    """How one kind of job is trained and read back: ``train(spec, seeds, device, progress)``
    trains the seeds (here or in a worker process) and returns one payload per seed (plain
    tensors, picklable; what the results cache keeps under ``spec.config(seed)``);
    ``result(spec, seed, payload, device)`` makes the result the experiment gets;
    ``cost(spec, n_seeds)`` guesses the training time, to start the longest jobs first."""

    train: Callable
    result: Callable
    cost: Callable


def _train_stack_payloads(spec: RunSpec, seeds: list[int], device: str, progress: bool = False) -> list[dict]:
    trained = train_spec(spec, list(seeds), device=torch.device(device), progress=progress)
    return [r.to_payload() for r in trained]


def _stack_cost(spec: RunSpec, n_seeds: int) -> float:
    """seeds x step cap x layers x heads x the size of one head's (query, key) and (key, d) work."""
    t, a = spec.task, spec.arch
    return n_seeds * spec.recipe.steps * a.n_layers * a.n_heads * t.seq_len * (t.seq_len + t.d_model)


def _train_gpt_payloads(spec: GPTSpec, seeds: list[int], device: str, progress: bool = False) -> list[dict]:
    return [train_gpt(spec, s, device, progress) for s in seeds]


def _gpt_cost(spec: GPTSpec, n_seeds: int) -> float:
    a = spec.arch
    return n_seeds * spec.recipe.steps * a["n_layers"] * a["d_model"] ** 2 * spec.task.seq_len


TRAINERS = {
    RunSpec.kind: Trainer(
        _train_stack_payloads, lambda spec, seed, payload, device: TrainResult.from_payload(payload), _stack_cost
    ),
    GPTSpec.kind: Trainer(_train_gpt_payloads, load_gpt, _gpt_cost),
}
"""The trainer of each kind of :class:`Job`: the one hook between a job and its training."""


def trainer(job: Job) -> Trainer:
    """The trainer of ``job``'s kind; ``ValueError`` for a spec of no known kind."""
    kind = getattr(job.spec, "kind", None)
    if kind not in TRAINERS:
        raise ValueError(f"a job's spec must be a RunSpec or a GPTSpec, got {type(job.spec).__name__}")
    return TRAINERS[kind]


def job_configs(job: Job) -> list[dict]:
    """The results-cache configs of ``job``'s models, one per seed."""
    return [job.spec.config(s) for s in job.seeds]


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


def _parse_device(device: torch.device | str) -> torch.device:
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from e


def _init_worker(threads: int) -> None:
    torch.set_num_threads(threads)


def _train_job(spec, seeds: list[int], device: str, record_failure: bool = False, progress: bool = False):
    """Train one job's missing seeds (in a worker, or here); return their payloads (picklable).
    With ``record_failure``, a non-finite loss returns ``{"failed": message}`` instead of raising."""
    try:
        return TRAINERS[spec.kind].train(spec, seeds, device, progress)
    except NonFiniteLossError as e:
        if not record_failure:
            raise
        return {"failed": str(e)}


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
    failures: dict | None = None,
) -> list[list[TrainResult]]:
    """Every job's results (one per seed, in the job's order: a
    :class:`~attnsink.training.TrainResult`, or a GPT and its history), through the results
    cache: what is cached is read, what is missing is trained, and stored here as each group
    finishes. ``progress`` shows one bar of groups done and left.

    ``backend="local"`` trains up to ``workers`` groups at once in processes on this machine
    (see :func:`resolve_workers`); ``backend="ray"`` makes each group a Ray task
    (:func:`attnsink.cluster.in_ray`, whose keyword arguments ``address``, ``num_cpus``,
    ``num_gpus`` and ``max_retries`` come from ``ray_options``), on ``device`` as the workers
    see it (default: CUDA when the tasks ask for GPUs, else the CPU). With ``allow_training``
    False, a missing model raises :class:`~attnsink.cache.MissingResultsError` (how many are
    missing, of how many) before anything trains. A job whose training ends in a non-finite loss
    raises :class:`~attnsink.training.NonFiniteLossError`; with a ``failures`` dict, it is
    recorded there instead (job index -> message), its untrained seeds' results are None, and
    every other job trains on."""
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
    lookups = [_lookup(job, cache_dir) for job in jobs]
    todo = [i for i, (_, _, missing) in enumerate(lookups) if missing]
    if todo and not allow_training:
        n_missing = sum(len(lookups[i][2]) for i in todo)
        raise MissingResultsError(f"{n_missing} of {sum(len(j.seeds) for j in jobs)} models")
    # the longest first, so no worker idles at the end
    todo.sort(key=lambda i: -trainer(jobs[i]).cost(jobs[i].spec, len(lookups[i][2])))

    def keep(k: int, payloads) -> None:
        i = todo[k]
        if isinstance(payloads, dict):  # {"failed": message}: nothing to keep
            failures[i] = payloads["failed"]
            return
        configs, found, missing = lookups[i]
        for seed, payload in zip(missing, payloads):
            found[seed] = payload
            if cache_dir is not None:
                put(cache_dir, configs[jobs[i].seeds.index(seed)], payload, entry_meta(dev))

    calls = [(jobs[i].spec, lookups[i][2], str(dev), failures is not None) for i in todo]
    n_workers = min(n_workers, len(todo))
    if not todo:  # everything was in the store or the cache: no process, no cluster
        pass
    elif backend == "local" and n_workers <= 1:  # one after the other, here, with the trainers' own progress bars
        for k, call in enumerate(calls):
            keep(k, _train_job(*call, progress=progress))
    elif backend == "ray":
        from .cluster import in_ray

        in_ray(_train_job, calls, on_result=keep, progress=progress, desc="training groups", **ray_options)
    else:
        in_processes(_train_job, calls, workers=n_workers, on_result=keep, progress=progress, desc="training groups")
    return [
        [trainer(job).result(job.spec, s, found[s], dev) if s in found else None for s in job.seeds]
        for job, (_, found, _) in zip(jobs, lookups)
    ]


def _lookup(job: Job, cache_dir: str | Path | None) -> tuple[list[dict], dict, list[int]]:
    """``job``'s seeds' configs, the payloads of the seeds already in the store or the cache,
    and the seeds missing."""
    configs = job_configs(job)
    found = {}
    for seed, config in zip(job.seeds, configs):
        payload = load(cache_dir, config)
        if payload is not None:
            found[seed] = payload
    return configs, found, [s for s in job.seeds if s not in found]
