"""The training benchmark (benchmarks/bench_train.py): its schema, its baseline, its arguments.

Only tiny runs here: the benchmark's numbers are measured by running it, never by tests.
"""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_train.py"
spec = importlib.util.spec_from_file_location("bench_train", PATH)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

TINY = ["--seeds", "2", "--steps", "6", "--seed-steps", "3", "--baseline-steps", "3", "--repeats", "1"]


def test_tiny_run_writes_the_fields_the_issue_names(tmp_path, capsys):
    out = tmp_path / "bench.json"
    result = bench.main([*TINY, "--criterion-steps", "4", "--out", str(out), "--device", "cpu"])
    assert json.loads(out.read_text()) == result
    assert result["seeds"] == 2 and result["device"] == "cpu"
    for attention in ("softmax", "relu"):
        r = result[attention]
        for key in ("baseline_steps_per_s", "single_steps_per_s", "multi_seed_model_steps_per_s"):
            assert r[key] > 0
        # with one repeat the median of the ratios is the ratio itself
        assert r["speedup_single"] == pytest.approx(r["single_steps_per_s"] / r["baseline_steps_per_s"])
        per_model = r["multi_seed_model_steps_per_s"] / r["single_steps_per_s"]
        assert r["speedup_multi_per_model"] == pytest.approx(per_model)
        # four steps are far too few to meet the criterion: every run stops at the cap
        assert r["baseline_steps_to_criterion"] == r["single_steps_to_criterion"] == 4
        assert r["multi_seed_steps_to_criterion"] == 4 and r["criterion_steps_cap"] == 4
    for key in ("baseline_steps_per_s", "single_steps_per_s", "speedup_single", "speedup_multi_per_model"):
        assert result[key] == result["softmax"][key]  # the headline is the softmax row
    table = capsys.readouterr().out
    assert "softmax" in table and "relu" in table and "time to criterion" in table


def test_baseline_draws_the_library_task_and_the_check_can_fail(monkeypatch):
    bench.check_baseline_data()
    draw = bench.OneSequenceAtATime.__iter__

    def shifted(self):
        for x, y in draw(self):
            yield x, y + 1e-3

    monkeypatch.setattr(bench.OneSequenceAtATime, "__iter__", shifted)
    with pytest.raises(AssertionError, match="differ"):
        bench.check_baseline_data(n=4)


@pytest.mark.parametrize("attention", ["softmax", "relu"])
def test_baseline_is_a_working_training_loop(attention):
    # the comparison means something only if the baseline learns the task as the library does
    steps, seconds = bench.baseline(attention, 3000, bench.STOP)
    assert steps < 3000 and seconds > 0


@pytest.mark.parametrize(
    ("args", "name"),
    [(["--repeats", "0"], "--repeats"), (["--seeds", "two"], "--seeds"), (["--device", "tpu9"], "--device")],
)
def test_bad_arguments_name_the_argument(args, name, capsys):
    with pytest.raises(SystemExit):
        bench.main(args)
    assert name in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="the GPU run needs CUDA")
def test_tiny_run_on_the_gpu():
    result = bench.main([*TINY, "--criterion-steps", "4", "--device", "cuda"])
    assert result["device"] == "cuda" and result["softmax"]["single_steps_per_s"] > 0
