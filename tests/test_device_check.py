"""scripts/device_check.sh, the first thing to run on a lent GPU, works end to end in its CPU
dry mode; its GPU tests exist and pass where CUDA is."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from attnsink import TriggerTask
from attnsink.cache import default_store_dir
from attnsink.engine import train_seeds
from attnsink.stored import STEPS_RTOL, compare_with_store, read_manifest

ROOT = Path(__file__).resolve().parents[1]


def test_dry_run_passes(tmp_path):
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "device_check.sh"), "--dry"],
        env={"PATH": os.environ["PATH"], "OUT": str(tmp_path), "HOME": str(tmp_path), "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "device check passed" in done.stdout and "same conclusions" in done.stdout
    assert (tmp_path / "bench_cpu.json").exists() and (tmp_path / "single_layer_cpu.json").exists()


def test_compare_with_store_flags_a_different_step_count():
    manifest = read_manifest(default_store_dir(), "single_layer", "full")
    stored = next(m for m in manifest["models"] if m["attention"] == "relu" and m["seed"] == 0)
    run = {"attention": "relu", "n_layers": 1, "n_heads": 1, "mlp": False, "layer_norm": False, "seed": 0}
    runs = [
        {**run, "steps": stored["steps"], "stopped_early": True},  # the same
        {**run, "steps": int(stored["steps"] * (1 + 2 * STEPS_RTOL)), "stopped_early": True},  # far off
        {**run, "steps": stored["steps"], "stopped_early": False},  # did not stop
    ]
    table = compare_with_store(runs, "single_layer")
    assert isinstance(table, pd.DataFrame) and table.ok.tolist() == [True, False, False]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_engine_on_the_gpu_trains_what_it_trains_on_the_cpu():
    task = TriggerTask(d_model=8, seq_len=8)
    kw = {"attention": "softmax", "steps": 50, "lr": 1e-2, "batch_size": 32, "stop_linf": None, "progress": False}
    cpu = train_seeds(task, [0, 1], device="cpu", **kw)
    gpu = train_seeds(task, [0, 1], device="cuda", **kw)
    for a, b in zip(cpu, gpu):
        np.testing.assert_allclose(a.history["loss"], b.history["loss"], rtol=1e-3, atol=1e-6)
