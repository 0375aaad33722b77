"""Groups trained side by side in worker processes give the models trained here, number for
number; what is cached is not trained again; bad worker counts are refused."""

import numpy as np
import pytest
import torch

from attnsink import TriggerTask, cache, parallel
from attnsink.cache import train_seeds_cached
from attnsink.parallel import Job, resolve_workers, train_many
from attnsink.spec import RunSpec

RECIPE = {"steps": 40, "lr": 1e-2, "batch_size": 16, "stop_linf": None}
JOBS = [
    Job(RunSpec.from_options(TriggerTask(d_model=8, seq_len=8), {"attention": "softmax", **RECIPE}), (0, 1)),
    Job(RunSpec.from_options(TriggerTask(d_model=8, seq_len=8, bos=False), {"attention": "relu", **RECIPE}), (0,)),
    Job(
        RunSpec.from_options(
            TriggerTask(d_model=8, seq_len=8, residual=True),
            {"attention": "softmax", "n_layers": 2, "n_heads": 2, **RECIPE},
        ),
        (1,),
    ),
]


def assert_same(a, b):
    assert (a.seed, a.steps, a.stopped_early) == (b.seed, b.steps, b.stopped_early)
    assert a.model.config == b.model.config
    for (name, x), (_, y) in zip(sorted(a.model.state_dict().items()), sorted(b.model.state_dict().items())):
        assert torch.equal(x, y), name
    for key in a.history:
        np.testing.assert_array_equal(a.history[key], b.history[key])


def test_workers_train_the_same_models_as_this_process(tmp_path):
    here = [train_seeds_cached(j.task, list(j.seeds), cache_dir=None, device="cpu", **j.options) for j in JOBS]
    pooled = train_many(JOBS, cache_dir=tmp_path, device="cpu", workers=2)
    assert [len(r) for r in pooled] == [2, 1, 1]
    for a_runs, b_runs in zip(here, pooled):
        for a, b in zip(a_runs, b_runs):
            assert_same(a, b)
    assert len(list(tmp_path.glob("*.pt"))) == 4  # every seed stored by this process


def test_cached_groups_are_not_trained_again(tmp_path, monkeypatch):
    first = train_many(JOBS[:2], cache_dir=tmp_path, device="cpu", workers=2)

    def refuse(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", refuse)
    monkeypatch.setattr(parallel, "train_spec", refuse)
    monkeypatch.setattr(cache, "train_seeds", refuse)
    again = train_many(JOBS[:2], cache_dir=tmp_path, device="cpu", workers=2)
    for a_runs, b_runs in zip(first, again):
        for a, b in zip(a_runs, b_runs):
            assert_same(a, b)


def test_one_missing_group_trains_here_without_a_pool(tmp_path, monkeypatch):
    train_many(JOBS[:1], cache_dir=tmp_path, device="cpu", workers=1)
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", lambda *a, **k: pytest.fail("a pool for one group"))
    out = train_many(JOBS[:2], cache_dir=tmp_path, device="cpu", workers=2)  # only the second is missing
    assert [r.seed for r in out[1]] == [0]


def test_an_error_in_a_worker_reaches_the_caller(tmp_path):
    bad = Job(RunSpec.from_options(TriggerTask(d_model=8, seq_len=8), {"attention": "no_such_rule", **RECIPE}), (0,))
    with pytest.raises(ValueError, match="no_such_rule"):
        train_many([JOBS[1], bad], cache_dir=tmp_path, device="cpu", workers=2)
    assert len(list(tmp_path.glob("*.pt"))) <= 1  # the good group may have finished and been kept


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2", True])
def test_bad_worker_counts_are_refused(workers):
    with pytest.raises(ValueError, match="workers"):
        resolve_workers(workers, torch.device("cpu"))


@pytest.mark.parametrize("value", ["0", "two", "-3", "1.0"])
def test_a_bad_environment_value_is_named(value, monkeypatch):
    monkeypatch.setenv(parallel.WORKERS_ENV, value)
    with pytest.raises(ValueError, match=parallel.WORKERS_ENV):
        resolve_workers(None, torch.device("cpu"))


def test_default_workers(monkeypatch):
    monkeypatch.delenv(parallel.WORKERS_ENV, raising=False)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 6)
    assert resolve_workers(None, torch.device("cpu")) == 6
    assert resolve_workers(None, torch.device("cuda")) == 1
    monkeypatch.setenv(parallel.WORKERS_ENV, "3")
    assert resolve_workers(None, torch.device("cpu")) == 3
    assert resolve_workers(1, torch.device("cpu")) == 1  # an explicit count wins


def test_the_longest_groups_start_first(tmp_path, monkeypatch):
    from concurrent.futures import Future

    submitted = []

    class InProcess:  # a pool that runs each group here, in the order it is submitted
        def __init__(self, *args, **kwargs):
            pass

        def submit(self, fn, spec, *args):
            submitted.append((spec.arch.n_layers, spec.arch.n_heads))
            future = Future()
            future.set_result(fn(spec, *args))
            return future

        def shutdown(self, **kwargs):
            pass

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", InProcess)
    task = TriggerTask(d_model=8, seq_len=8, residual=True)
    shapes = [(1, 1), (2, 2), (1, 2)]
    jobs = [
        Job(RunSpec.from_options(task, {"attention": "relu", "n_layers": a, "n_heads": b, **RECIPE}), (0,))
        for a, b in shapes
    ]
    out = train_many(jobs, cache_dir=tmp_path, device="cpu", workers=2)
    assert submitted == [(2, 2), (1, 2), (1, 1)]
    assert [r[0].model.config["n_layers"] for r in out] == [1, 2, 1]  # results in the jobs' order
