"""environment.yml (conda) must list every dependency of pyproject.toml with the same range."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch"}  # PyPI name -> conda-forge name where they differ


def split(requirement: str) -> tuple[str, str]:
    name, spec = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", requirement).groups()
    return name.lower(), spec.replace(" ", "")


def test_environment_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = dict(split(d) for d in env["dependencies"] if isinstance(d, str))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda.update(split(d) for d in pip if not d.startswith("-"))  # packages only on PyPI go through pip
    for requirement in wanted:
        name, spec = split(requirement)
        conda_name = CONDA_NAMES.get(name, name)
        assert conda_name in conda, f"{conda_name} (from pyproject's {requirement!r}) is missing in environment.yml"
        assert conda[conda_name] == spec, f"{conda_name}: environment.yml has {conda[conda_name]!r}, pyproject {spec!r}"
    assert "-e ." in pip, "environment.yml must install the project itself"


def test_python_version_in_step():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = dict(split(d) for d in env["dependencies"] if isinstance(d, str))
    assert conda["python"] == project["requires-python"]
