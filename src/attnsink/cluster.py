"""Training calls on a Ray cluster: the same contract as :func:`attnsink.parallel.in_processes`,
for sweeps that outgrow one machine.

Each call is one Ray task that asks for ``num_cpus`` CPUs and ``num_gpus`` GPUs; the task
returns its result (plain tensors) to this process, which hands it to ``on_result`` as it
arrives, so the workers need no shared filesystem and the driver alone writes the results
cache. A task whose worker process dies is run again, up to ``max_retries`` times (Ray's
own retries); a task that raises is not retried, and its error reaches the caller once
every other task has finished and been handed over. On Ctrl-C the tasks still running are
cancelled and whatever finished is kept.

Ray is an optional dependency (``pip install attnsink[cluster]``), imported only here and
only when a call is made.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

FAULT_ENV = "ATTNSINK_RAY_FAULT"
"""Fault injection for the tests: when this variable names a file that exists and holds a call's
index, that call's task deletes the file and kills its own worker process, as a crashed
machine would."""


def _ray():
    try:
        import ray
    except ImportError as e:  # the extra is not installed
        raise ImportError("the ray backend needs Ray: pip install 'attnsink[cluster]' (or pip install ray)") from e
    return ray


def _call(fn: Callable, threads: int, index: int, *args):
    """In a Ray worker: ``fn(*args)`` with ``threads`` torch threads (a trained model is the same
    whatever the thread count; the thread count only keeps the task inside its CPUs)."""
    import torch

    marker = os.environ.get(FAULT_ENV)
    if marker and os.path.exists(marker):
        try:
            chosen = int(open(marker).read())
        except (OSError, ValueError):
            chosen = None
        if chosen == index:
            os.remove(marker)
            os._exit(1)  # the worker dies mid-task; Ray retries the task on a new one
    torch.set_num_threads(threads)
    return fn(*args)


def in_ray(
    fn: Callable,
    calls: Sequence[tuple],
    *,
    on_result: Callable,
    address: str | None = None,
    num_cpus: float = 1,
    num_gpus: float = 0,
    max_retries: int = 3,
    progress: bool = False,
    desc: str = "",
) -> None:
    """``fn(*args)`` for every ``args`` of ``calls``, each as a Ray task; ``on_result(i, value)``
    runs here as call ``i`` finishes. ``address`` joins a running cluster (``"auto"``, or
    ``"ray://host:10001"``); None lets Ray choose, as ``ray.init()`` does: ``$RAY_ADDRESS``,
    else a cluster ``ray start`` runs on this machine, else a new local one for the length of
    the call. A Ray already initialised in this process is used as it is (then ``address``
    must be None). A task that asks for more CPUs or GPUs than the cluster has is refused
    before any is sent (``ValueError``). ``fn`` must be importable on the workers
    (``attnsink`` installed there)."""
    if not (isinstance(num_cpus, (int, float)) and not isinstance(num_cpus, bool) and num_cpus > 0):
        raise ValueError(f"num_cpus must be a number > 0, got {num_cpus!r}")
    if not (isinstance(num_gpus, (int, float)) and not isinstance(num_gpus, bool) and num_gpus >= 0):
        raise ValueError(f"num_gpus must be a number >= 0, got {num_gpus!r}")
    if not (isinstance(max_retries, int) and not isinstance(max_retries, bool) and max_retries >= 0):
        raise ValueError(f"max_retries must be a whole number >= 0, got {max_retries!r}")
    ray = _ray()
    started = not ray.is_initialized()
    if not started and address is not None:
        raise ValueError(f"address={address!r}, but Ray is already initialised in this process; pass address=None")
    if started:
        env = {FAULT_ENV: os.environ[FAULT_ENV]} if os.environ.get(FAULT_ENV) else {}
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": env} if env else None,
        )
    bar, pending = None, []
    try:
        have = ray.cluster_resources()
        for name, wanted in (("CPU", num_cpus), ("GPU", num_gpus)):
            if wanted > have.get(name, 0):
                raise ValueError(
                    f"each task asks for num_{name.lower()}s={wanted:g}, but the Ray cluster has "
                    f"{have.get(name, 0):g} {name}s in all: no task could ever start"
                )
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(calls), desc=f"{desc} (ray)", unit="task")
        task = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=max_retries)(_call)
        threads = max(1, int(num_cpus))
        refs = {task.remote(fn, threads, i, *args): i for i, args in enumerate(calls)}
        pending, failed = list(refs), None
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                i = refs.pop(ref)  # no reference kept: Ray may free the result once handed over
                try:
                    value = ray.get(ref)
                except ray.exceptions.RayError as e:  # this call failed: keep collecting the others
                    failed = failed or e
                else:
                    on_result(i, value)
                if bar is not None:
                    bar.update()
        if failed is not None:
            raise failed
    finally:
        for ref in pending:  # after an error or Ctrl-C: stop what is still running
            ray.cancel(ref, force=True)
        if bar is not None:
            bar.close()
        if started:
            ray.shutdown()
