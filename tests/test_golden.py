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

from attnsink import TriggerTask
from attnsink.cache import TRAINING_VERSIONS, cache_key, seed_configs
from attnsink.experiments.base import planned_configs

EXPECTED = json.loads(golden.FILE.read_text())
HOW = "bump attnsink.cache.TRAINING_VERSIONS[{kind!r}] and run `python tests/golden.py --write`"


def test_the_file_was_written_for_these_training_versions():
    assert EXPECTED["versions"] == TRAINING_VERSIONS, "versions changed: run `python tests/golden.py --write`"


@pytest.mark.parametrize("threads", [1, 2])
def test_training_gives_the_golden_numbers(threads):
    got = golden.compute(threads)
    for kind, bad in golden.differences(EXPECTED, got).items():
        assert not bad, f"{len(bad)} {kind} numbers moved ({bad[:3]}): " + HOW.format(kind=kind)


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
    _edit(lib / "lm" / "training.py", "BETAS = (0.9, 0.95)", "BETAS = (0.9, 0.96)")
    run = _check(lib, "gpt")
    assert run.returncode == 1 and not re.search(r"gpt: 0 numbers", run.stdout), run.stdout
