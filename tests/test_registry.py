"""Every experiment is declared once, in attnsink.registry: every other list of experiments
(the package, the command line, the README, the API page, the architecture test, the
chapters) is read from it or checked against it here."""

from pathlib import Path

import pytest

from attnsink import experiments, registry
from attnsink.registry import REGISTRY, Experiment

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "src" / "attnsink"


def test_each_experiment_is_its_module_and_its_function():
    assert len({e.name for e in REGISTRY}) == len(REGISTRY)
    assert sorted(experiments.EXPERIMENTS) == sorted(registry.NAMES)
    for e in REGISTRY:
        assert (LIB / "experiments" / f"{e.name}.py").is_file(), e.name
        assert experiments.EXPERIMENTS[e.name].__module__ == e.module
        assert experiments.CHAPTERS[e.name] == e.chapters
        assert getattr(experiments, e.name) is experiments.EXPERIMENTS[e.name]
        assert e.name in experiments.__all__


def test_no_experiment_module_is_left_out_of_the_registry():
    shared = {"__init__", "base", "text", "grid"}  # what the experiments share, and the sweep-spec runner
    modules = {p.stem for p in (LIB / "experiments").glob("*.py")} - shared
    assert modules == set(registry.NAMES)


def test_the_readme_and_the_api_page_read_the_registry():
    """Neither lists the experiments by hand: the README points to ``python -m attnsink list``
    and the API page's directive (``_ext/experiments_api.py``) writes one automodule each."""
    readme = (ROOT / "README.md").read_text()
    assert "`NAME` is one of the experiments `python -m attnsink list` prints" in readme
    api = (ROOT / "book" / "api.md").read_text()
    assert ".. experiments-api::" in api
    assert not [e.name for e in REGISTRY if f"automodule:: {e.module}\n" in api]  # no hand-written copy
    assert "experiments_api: _ext/" in (ROOT / "_config.yml").read_text()
    import sys

    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        import experiments_api  # noqa: F401  (the directive imports)
    finally:
        sys.path.remove(str(ROOT / "_ext"))


def test_the_experiments_docstring_shows_the_registry():
    for e in REGISTRY:
        assert f":func:`{e.name}`" in experiments.__doc__


def test_a_chapter_reads_the_experiments_the_registry_gives_it():
    for chapter in range(1, 10):
        assert experiments.chapter_experiments(chapter) == sorted(e.name for e in REGISTRY if chapter in e.chapters)


@pytest.mark.parametrize(
    "args, message",
    [
        (("not a name", (1,), "trigger", "x"), "name must be a Python identifier"),
        (("x", (), "trigger", "x"), "chapters must be a non-empty tuple"),
        (("x", (0,), "trigger", "x"), "chapters must be a non-empty tuple"),
        (("x", (1,), "cnn", "x"), "kind must be one of"),
    ],
)
def test_a_bad_entry_is_refused(args, message):
    with pytest.raises(ValueError, match=message):
        Experiment(*args)


def test_an_unregistered_experiment_is_refused():
    from attnsink.experiments.base import experiment

    with pytest.raises(ValueError, match="name must be one of"):
        experiment("not_registered", {}, figure=lambda r: None, figure_name="x")
    with pytest.raises(ValueError, match="name must be one of"):
        registry.get("nope")
