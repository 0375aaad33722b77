"""Sweeps from a spec file: the spec refused when malformed, expanded as written, trained here
or on a local Ray cluster with the same numbers, resumed from the cache, and complete when
a Ray worker dies mid-run."""

import json
import os
from pathlib import Path

import pytest
import torch

from attnsink import cluster
from attnsink.__main__ import main
from attnsink.cache import cache_lookup
from attnsink.experiments.grid import DEFAULTS, load_spec, run_grid

ROOT = Path(__file__).resolve().parents[1]
TINY = {"attention": ["softmax", "relu"], "seq_len": [6, 8], "d_model": [6], "seeds": 2, "steps": 30}
NEED_RAY = os.environ.get("ATTNSINK_REQUIRE_RAY") == "1"  # CI installs the cluster extra and requires it


def same(a: list[dict], b: list[dict]) -> bool:
    """Records equal number for number (NaN, a metric with nothing to average, equals NaN)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _ray():
    if NEED_RAY:
        import ray
    else:
        ray = pytest.importorskip("ray")
    return ray


@pytest.mark.parametrize(
    "spec, named",
    [
        ({"colour": ["red"]}, "colour"),
        ({"seq_len": []}, "seq_len is empty"),
        ({"seq_len": 8}, "seq_len must be a list"),
        ({"seq_len": ["8"]}, r"seq_len\[0\] must be a whole number"),
        ({"seq_len": [8, 8]}, "seq_len lists a value twice"),
        ({"lr": [1e-3, 0]}, r"lr\[1\] must be a number > 0"),
        ({"lr": [-1e-3]}, r"lr\[0\]"),
        ({"attention": ["softmaxx"]}, r"attention\[0\] must be one of"),
        ({"residual": ["yes"]}, r"residual\[0\] must be true or false"),
        ({"seeds": 0}, "seeds must be"),
        ({"steps": 1.5}, "steps must be"),
        ({"num_gpus": -1}, "num_gpus must be"),
        ({"grids": [{"seq_len": [8]}, {"width": [8]}]}, r"unknown axis \['width'\] in grids\[1\]"),
        ({"grids": []}, "grids must be a non-empty list"),
        ({"grids": [{"lr": [0]}]}, r"grids\[0\]\.lr\[0\]"),
        ({"lr": [1, 1.0]}, "lr lists a value twice"),
        ({"n_layers": [1, 2]}, "n_layers > 1, which needs residual: true"),
        ({"mlp": [True]}, "mlp, which needs residual: true"),
        ({"d_model": [1]}, "is not a valid task"),
        ({"grids": [{"seq_len": [8]}, {"d_model": [2]}]}, r"grids\[1\]: the point"),
        ({"attention": ["softmax_cap2"]}, r"attention\[0\] must be one of"),
        ([], "non-empty mapping"),
    ],
)
def test_a_malformed_spec_is_refused_naming_the_key(spec, named):
    with pytest.raises(ValueError, match=named):
        load_spec(spec)


def test_yaml_numbers_with_an_exponent_are_numbers_and_capped_rules_are_rules(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("lr: [3e-4, 1e-05, 1]\nattention: [softmax_cap0.5]\nn_layers: [2]\nresidual: [true]\n")
    points = load_spec(spec).points
    assert [p["lr"] for p in points] == [3e-4, 1e-5, 1.0] and all(isinstance(p["lr"], float) for p in points)
    assert points[0]["attention"] == "softmax_cap0.5" and points[0]["n_layers"] == 2


def test_a_spec_file_that_is_not_yaml_or_not_there(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seq_len: [8, 16\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_spec(bad)
    with pytest.raises(ValueError, match="is not a file"):
        load_spec(tmp_path / "missing.yaml")


def test_axes_expand_to_every_combination_and_unlisted_settings_keep_the_papers():
    spec = load_spec(TINY)
    assert [(p["attention"], p["seq_len"]) for p in spec.points] == [
        ("softmax", 6),
        ("softmax", 8),
        ("relu", 6),
        ("relu", 8),
    ]
    for p in spec.points:
        assert {k: v for k, v in p.items() if k not in TINY} == {k: v for k, v in DEFAULTS.items() if k not in TINY}
    jobs = spec.jobs()
    assert all(j.seeds == (0, 1) and j.options["steps"] == 30 and j.task.d_model == 6 for j in jobs)


def test_the_example_spec_is_chapter_5s_sweep_point_for_point():
    from attnsink.profiles import SWEEP, SWEEP_POINTS

    spec = load_spec(ROOT / "examples" / "sweep.yaml")
    points = SWEEP_POINTS["quick"]
    expected = {(rule, 16, 16, 1e-3) for rule in ("softmax", "relu")}
    for name, values in points.items():
        for v in values:
            point = {"seq_len": 16, "d_model": 16, "lr": 1e-3, name: v}
            expected |= {(rule, point["seq_len"], point["d_model"], point["lr"]) for rule in ("softmax", "relu")}
    got = [(p["attention"], p["seq_len"], p["d_model"], p["lr"]) for p in spec.points]
    assert len(got) == len(set(got)) and set(got) == expected  # the shared default point once
    assert spec.seeds == SWEEP["quick"].seeds and spec.steps == SWEEP["quick"].steps


def test_local_grid_writes_records_table_and_figure_and_a_second_run_trains_nothing(tmp_path, monkeypatch):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(json.dumps(TINY))  # JSON is YAML
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["grid", str(spec), "--out", str(out), "--cache-dir", str(cache), "--workers", "2"]
    assert main(args) == 0
    record = json.loads((out / "runs.json").read_text())
    runs = record["runs"]
    assert len(runs) == 8 and {(r["attention"], r["seq_len"], r["seed"]) for r in runs} == {
        (a, L, s) for a in ("softmax", "relu") for L in (6, 8) for s in (0, 1)
    }
    for r in runs:
        assert r["steps"] <= 30 and 0 <= r["bos_mass_nontrigger"] <= 1 and r["d_model"] == 6 and "linf" in r
    assert (out / "runs.csv").read_text().count("\n") == 9 and (out / "summary.png").stat().st_size > 0

    def refuse(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr("attnsink.parallel.in_processes", refuse)
    monkeypatch.setattr("attnsink.cache.train_seeds", refuse)
    assert main(args) == 0
    assert same(json.loads((out / "runs.json").read_text())["runs"], runs)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--address", "auto"], "--address: only for --backend ray"),
        (["--backend", "ray", "--workers", "2"], "--workers: only for --backend local"),
        (["--device", "tpu"], "--device"),
        (["--backend", "ray", "--device", "tpu"], "--device: must be a torch device"),
        (["--backend", "ray", "--device", "cuda"], "does not match the spec's num_gpus=0"),
    ],
)
def test_grid_command_refuses_bad_arguments_before_training(tmp_path, capsys, extra, message):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(json.dumps(TINY))
    with pytest.raises(SystemExit) as e:
        main(["grid", str(spec), "--out", str(tmp_path / "o"), "--no-cache", *extra])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and err[-1].startswith("python -m attnsink grid: error:")


def test_grid_command_refuses_a_bad_spec_and_a_missing_ray(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "bad.yaml"
    spec.write_text("lr: [0.0]\n")
    with pytest.raises(SystemExit) as e:
        main(["grid", str(spec), "--no-cache"])
    assert e.value.code == 2 and "lr[0] must be a number > 0" in capsys.readouterr().err
    spec.write_text(json.dumps(TINY))
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(SystemExit) as e:
        main(["grid", str(spec), "--backend", "ray", "--no-cache", "--out", str(tmp_path / "o")])
    assert e.value.code == 2 and "ray is not installed" in capsys.readouterr().err


def test_in_ray_checks_its_arguments():
    for kwargs, named in (
        ({"num_cpus": 0}, "num_cpus"),
        ({"num_gpus": -1}, "num_gpus"),
        ({"max_retries": -1}, "max_retries"),
    ):
        with pytest.raises(ValueError, match=named):
            cluster.in_ray(print, [], on_result=print, **kwargs)


@pytest.fixture
def ray_two_cpus():
    """A local Ray cluster with two CPUs for one test (its workers inherit this environment)."""
    ray = _ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_gives_the_local_numbers_and_resumes_from_the_cache(tmp_path, monkeypatch, ray_two_cpus):
    local = run_grid(TINY, cache_dir=None, workers=2)
    remote = run_grid(TINY, backend="ray", cache_dir=tmp_path / "c")
    assert same(remote.runs, local.runs)  # same seeds, same numbers
    for job in load_spec(TINY).jobs():  # the driver stored every run
        _, found, missing = cache_lookup(
            job.task, list(job.seeds), cache_dir=tmp_path / "c", device=torch.device("cpu"), **job.options
        )
        assert not missing

    def refuse(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr(cluster, "in_ray", refuse)
    assert same(run_grid(TINY, backend="ray", cache_dir=tmp_path / "c").runs, local.runs)


def _complete_points(cache_dir) -> int:
    """How many of TINY's points have every seed in the cache."""
    return sum(
        not cache_lookup(j.task, list(j.seeds), cache_dir=cache_dir, device=torch.device("cpu"), **j.options)[2]
        for j in load_spec(TINY).jobs()
    )


def test_a_worker_killed_mid_run_loses_no_other_result_and_the_sweep_completes(tmp_path, monkeypatch):
    ray = _ray()
    marker = tmp_path / "kill-one-worker"
    marker.write_text("3")  # the last of the 4 tasks (two CPUs: it starts after the first results are in)
    monkeypatch.setenv(cluster.FAULT_ENV, str(marker))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # workers inherit this environment
    try:
        remote = run_grid({**TINY, "max_retries": 1}, backend="ray", cache_dir=tmp_path / "c")
        assert not marker.exists()  # the worker did die, and its task was run again
        # the same fault with no retry: the run fails, and every other point is in the cache
        marker.write_text("3")
        with pytest.raises(Exception, match="(?i)worker|died|crash"):
            run_grid({**TINY, "max_retries": 0}, backend="ray", cache_dir=tmp_path / "c2")
        assert not marker.exists() and _complete_points(tmp_path / "c2") == 3
    finally:
        ray.shutdown()
    monkeypatch.delenv(cluster.FAULT_ENV)
    assert _complete_points(tmp_path / "c") == 4
    local = run_grid(TINY, cache_dir=None, workers=1)  # trained in this process, not through the pool
    assert same(remote.runs, local.runs)  # every run, the same numbers


def test_ray_refuses_what_could_never_run(tmp_path, ray_two_cpus):
    with pytest.raises(ValueError, match="num_gpus=1, but the Ray cluster has 0 GPUs"):
        cluster.in_ray(print, [(1,)], on_result=print, num_gpus=1)
    with pytest.raises(ValueError, match="already initialised"):
        cluster.in_ray(print, [(1,)], on_result=print, address="auto")
    with pytest.raises(ValueError, match="ask for no GPU"):
        run_grid(TINY, backend="ray", device="cuda", cache_dir=None)
    with pytest.raises(ValueError, match="num_gpus=1 but device is cpu"):
        run_grid({**TINY, "num_gpus": 1}, backend="ray", device="cpu", cache_dir=None)


def test_a_task_that_raises_is_reported_after_the_others_are_kept(ray_two_cpus):
    def maybe_fail(x):  # a local function: Ray ships it by value
        if x == 0:
            raise RuntimeError("boom")
        return x

    kept = {}
    with pytest.raises(Exception, match="boom"):
        cluster.in_ray(maybe_fail, [(1,), (0,), (2,)], on_result=kept.__setitem__, max_retries=0)
    assert kept == {0: 1, 2: 2}


def test_ctrl_c_keeps_what_finished_and_stops_the_rest(ray_two_cpus):
    import time

    def slow(x):
        time.sleep(0.2 if x == 0 else 30)
        return x

    kept = {}

    def keep(i, value):
        kept[i] = value
        raise KeyboardInterrupt  # as if Ctrl-C arrived right after the first result was stored

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        cluster.in_ray(slow, [(0,), (1,), (2,)], on_result=keep)
    assert kept == {0: 0} and time.monotonic() - start < 20  # the 30 s tasks were cancelled, not awaited


@pytest.mark.parametrize("workers", ["1", "2"])  # here, and in worker processes
def test_a_diverging_point_is_recorded_and_the_sweep_finishes(tmp_path, capsys, workers):
    """A point whose loss turns non-finite does not stop the sweep: its runs say diverged (in
    runs.json and the table), the other points train, and the exit status says some failed."""
    import json

    from attnsink.__main__ import main

    spec = tmp_path / "s.yaml"
    spec.write_text("seq_len: [8]\nd_model: [8]\nlr: [1e-3, 1e9]\nsteps: 30\nseeds: 2\nstop_linf: null\n")
    out = tmp_path / "o"
    assert main(["grid", str(spec), "--no-cache", "--workers", workers, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "2 of 4 runs diverged" in err and '"lr": 1000000000.0' in err
    runs = json.loads((out / "runs.json").read_text())["runs"]
    bad = [r for r in runs if r["diverged"]]
    good = [r for r in runs if not r["diverged"]]
    assert {r["lr"] for r in bad} == {1e9} and {r["seed"] for r in bad} == {0, 1}
    assert "non-finite loss" in bad[0]["error"] and "bos_mass_nontrigger" not in bad[0]
    assert len(good) == 2 and all(r["lr"] == 1e-3 and r["mse"] >= 0 for r in good)
    assert (out / "summary.png").stat().st_size > 0 and (out / "runs.csv").exists()


def test_a_stack_that_cannot_fit_in_memory_is_refused_before_training(tmp_path, capsys, monkeypatch):
    """``seeds: 100000000`` is refused at once, saying how much memory the stack needs, instead
    of hanging while a hundred million models are built."""
    from attnsink import engine
    from attnsink.__main__ import main
    from attnsink.spec import Arch, Recipe, RunSpec
    from attnsink.task import TriggerTask

    spec = RunSpec(TriggerTask(residual=True), Arch(n_layers=2, n_heads=2), Recipe(steps=10))
    one = engine.stack_bytes(spec, 1)
    assert engine.stack_bytes(spec, 3) == 3 * one and one > 4 * 4 * 2 * 2 * 16**2  # params, Adam, attention
    monkeypatch.setattr(engine, "available_bytes", lambda device: 10 * one)
    engine.check_fits(spec, 10)  # fits exactly
    with pytest.raises(ValueError, match=r"seeds: 11 stacked models of this run need at least .* GiB on cpu"):
        engine.train_spec(spec, list(range(11)), device="cpu")
    monkeypatch.undo()
    path = tmp_path / "huge.yaml"
    path.write_text("seq_len: [8]\nd_model: [8]\nsteps: 10\nseeds: 100000000\n")
    with pytest.raises(SystemExit) as exit_:
        main(["grid", str(path), "--no-cache", "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "seeds: 100,000,000 stacked models" in err and "GiB" in err
    with pytest.raises(ValueError, match="seeds: 100,000,000"):
        run_grid(path, cache_dir=None)
