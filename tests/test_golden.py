"""The training code's numbers are pinned (tests/golden.py), so that stored models stay valid
across refactors, and a change that moves a number is caught until its version is bumped."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import golden
import pytest

from attnsink import TriggerTask, cache
from attnsink.cache import TRAINING_VERSIONS, cache_key, seed_configs
from attnsink.experiments.base import planned_configs

EXPECTED = json.loads(golden.FILE.read_text())


def test_the_file_was_written_for_these_training_versions():
    assert EXPECTED["versions"] == TRAINING_VERSIONS, "versions changed: run `python tests/golden.py --write`"
    assert EXPECTED["rule_versions"] == golden.rule_versions(), "versions changed: run `python tests/golden.py --write`"


@pytest.mark.parametrize("threads", [1, 2])
def test_training_gives_the_golden_numbers(threads):
    got = golden.compute(threads)
    advice = golden.advice(EXPECTED, got)
    assert not advice, advice  # says whether to add runs, or which version to bump


def test_a_rule_version_re_keys_only_that_rule(monkeypatch):
    task = TriggerTask()
    relu, softmax = (seed_configs(task, [0], attention=rule, steps=100, lr=1e-3)[0] for rule in ("relu", "softmax"))
    gpt = {**planned_configs("text_lm", "full")[0], "attention": "relu"}
    before = {name: cache_key(c) for name, c in [("relu", relu), ("softmax", softmax), ("gpt", gpt)]}
    monkeypatch.setitem(cache.RULE_VERSIONS, ("train_seeds", "relu"), 2)
    after = {name: cache_key(c) for name, c in [("relu", relu), ("softmax", softmax), ("gpt", gpt)]}
    assert after["relu"] != before["relu"] and after["softmax"] == before["softmax"] and after["gpt"] == before["gpt"]
    monkeypatch.setitem(cache.RULE_VERSIONS, ("train_seeds", "relu"), 1)  # version 1: the key as before versions
    assert cache_key(relu) == before["relu"]


def test_the_advice_tells_a_new_configuration_from_a_moved_number():
    old = {"train_seeds": {"one_layer/relu": 1.0, "one_layer/softmax": 1.0, "blocks/mlp": 1.0}}
    assert golden.advice(old, old) == {}
    added = golden.advice(old, {"train_seeds": {**old["train_seeds"], "one_layer/new_rule": 2.0}})
    assert "new golden runs (one_layer/new_rule)" in added["train_seeds"] and "--add" in added["train_seeds"]
    assert "VERSIONS" not in added["train_seeds"]
    one = golden.advice(old, {"train_seeds": {**old["train_seeds"], "one_layer/relu": 1.1}})
    assert "RULE_VERSIONS[('train_seeds', 'relu')] = 2" in one["train_seeds"]
    several = golden.advice(old, {"train_seeds": {**old["train_seeds"], "one_layer/relu": 1.1, "blocks/mlp": 1.1}})
    assert "TRAINING_VERSIONS['train_seeds']" in several["train_seeds"]


def test_the_keys_of_stored_models_are_pinned():
    """The store names a model by its key: a change to how keys are made (the config's
    fields, their names, the version) would orphan every stored model."""
    paper = seed_configs(TriggerTask(), [0], attention="softmax", steps=50_000, lr=1e-3)[0]
    assert cache_key(paper) == "ecd1ac82640b76d709fc608e84712e1d"
    text = planned_configs("text_lm", "full")[0]
    assert cache_key(text) == "3914deb8599fe7bf5435843fd7a52213", text


def _copy_library(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(
        Path(golden.__file__).parents[1] / "src" / "attnsink",
        src / "attnsink",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return src / "attnsink"


def _check(lib: Path, kind: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(lib.parent)}
    return subprocess.run(
        [sys.executable, golden.__file__, "--check", "--only", kind],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def test_a_refactor_keeps_the_numbers_and_a_changed_constant_does_not(tmp_path):
    lib = _copy_library(tmp_path)
    # a refactor: comments, a renamed local and a new option that defaults to the old behaviour
    _edit(lib / "engine.py", "def _train_stack(", "# the loop\ndef _train_stack(")
    _edit(lib / "training.py", '    n = len(history["loss"])', '    count = len(history["loss"])\n    n = count')
    _edit(
        lib / "lm" / "training.py",
        "    seed: int = 0,\n    progress: bool = False,\n) -> LMResult:",
        "    seed: int = 0,\n    progress: bool = False,\n    unused_option: bool = False,\n) -> LMResult:",
    )
    for kind in ("train_seeds", "gpt"):
        run = _check(lib, kind)
        assert run.returncode == 0, run.stdout + run.stderr
        assert re.search(rf"{kind}: 0 numbers differ", run.stdout)
    # a changed constant of each kind's trainer
    _edit(lib / "training.py", "BETAS = (0.9, 0.95)", "BETAS = (0.9, 0.96)")
    run = _check(lib, "train_seeds")
    assert run.returncode == 1 and not re.search(r"train_seeds: 0 numbers", run.stdout), run.stdout
    assert "bump attnsink.cache.TRAINING_VERSIONS['train_seeds']" in run.stdout, run.stdout
    _edit(lib / "lm" / "training.py", "BETAS = (0.9, 0.95)", "BETAS = (0.9, 0.96)")
    run = _check(lib, "gpt")
    assert run.returncode == 1 and not re.search(r"gpt: 0 numbers", run.stdout), run.stdout


def test_a_new_rule_adds_runs_and_a_change_to_one_rule_bumps_only_its_version(tmp_path):
    lib = _copy_library(tmp_path)
    _edit(
        lib / "attention.py",
        '        Rule("relu", relu),\n',
        '        Rule("relu", relu),\n        Rule("relu_twin", relu),\n',
    )
    _edit(
        lib / "attention.py",
        "    return torch.relu(scores * _masked_scale(mask, scale))  # relu(s) c",
        "    return 1.01 * torch.relu(scores * _masked_scale(mask, scale))  # relu(s) c",
    )
    run = _check(lib, "train_seeds")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "new golden runs (one_layer/relu_twin)" in run.stdout, run.stdout
    assert "RULE_VERSIONS[('train_seeds', 'relu')] = 2" in run.stdout, run.stdout
    assert "golden runs moved (no_bos/relu, one_layer/relu, residual_2x2/relu, stopping_rule/relu;" in run.stdout
