"""The chapters as a Colab reader meets them: the library's base install only (its install cell
runs ``pip install -e .`` with no extras), no profile set, the store present.

Every package that only the book's, the tests' and the developers' extras bring (``myst_nb``,
Sphinx, pytest, ...) is blocked in the kernel that runs the chapter, so a chapter that imports
one fails here as it would in Colab."""

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("0*.ipynb"))
KERNEL = ("ipykernel", "nbclient", "nbformat", "jupyter-client")  # Colab's kernel: what runs a notebook at all


def _requires(dist: str, extra: str | None = None) -> set[str]:
    """The distributions ``dist`` needs (with its ``extra``'s), markers evaluated here."""
    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return set()
    out = set()
    for line in reqs:
        req = Requirement(line)
        env = {"extra": extra or ""}
        if req.marker is None or req.marker.evaluate(env):
            out.add(canonicalize_name(req.name))
    return out


def _closure(roots: set[str]) -> set[str]:
    seen, todo = set(), list(roots)
    while todo:
        dist = todo.pop()
        if dist in seen:
            continue
        seen.add(dist)
        todo.extend(_requires(dist) - seen)
    return seen


def blocked_modules() -> list[str]:
    """The top-level modules that only the project's extras bring: installed by a distribution
    that the extras need (directly or through others) and that neither the base install nor a
    notebook kernel needs."""
    extras = set()
    for extra in ("book", "test", "dev", "cluster"):
        extras |= _requires("attnsink", extra)
    base = _closure(_requires("attnsink") | {canonicalize_name(k) for k in KERNEL})
    only_extras = _closure(extras) - base
    modules = []
    for module, dists in metadata.packages_distributions().items():
        if module.isidentifier() and {canonicalize_name(d) for d in dists} <= only_extras:
            modules.append(module)
    return sorted(modules)


BLOCKER = """
import sys

# Modules only the extras bring: absent, as a missing package is. A None entry makes `import`
# raise ModuleNotFoundError and importlib.util.find_spec answer None (libraries probe with it).
for name in {blocked!r}:
    sys.modules[name] = None
"""


@pytest.fixture(scope="module")
def base_env(tmp_path_factory):
    """The environment of a kernel with the extras blocked (a ``sitecustomize`` on its path),
    no profile set, nothing trained."""
    folder = tmp_path_factory.mktemp("base-install")
    blocked = blocked_modules()
    assert "myst_nb" in blocked and "sphinx" in blocked and "pytest" in blocked
    assert not {"torch", "numpy", "pandas", "seaborn", "ipykernel", "IPython"} & set(blocked)
    (folder / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked)))
    env = {k: v for k, v in os.environ.items() if k not in ("ATTNSINK_PROFILE", "ATTNSINK_TRAIN")}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), *filter(None, [env.get("PYTHONPATH")])])
    env["ATTNSINK_TRAIN"] = "0"  # read the store; train nothing
    env.setdefault("ATTNSINK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))  # CI's: the book build's analyses
    return env


def test_the_blocker_refuses_the_build_tools(base_env):
    """The kernel's environment blocks what a chapter must not need, and keeps what it does."""
    code = (
        "import attnsink.book, torch, seaborn\ntry:\n    import myst_nb\nexcept ModuleNotFoundError:\n    print('no')"
    )
    out = subprocess.run([sys.executable, "-c", code], env=base_env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "no"


def _execute(path: Path, env: dict) -> nbformat.NotebookNode:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=env)  # the kernel's environment
    return nb


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_runs_with_the_base_install_from_the_store(path, base_env):
    nb = _execute(path, base_env)
    setup = next(c for c in nb.cells if c.cell_type == "code" and "PROFILE = setup(" in c.source)
    printed = "".join(o.get("text", "") for o in setup.outputs)
    assert re.match(r"profile full: models from the store", printed), f"no profile set, the store there: {printed!r}"
