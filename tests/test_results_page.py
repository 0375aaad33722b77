"""The measurements page: sections written by the benchmarks, one per name, replaced in place."""

import importlib.util
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "results_page.py"
spec = importlib.util.spec_from_file_location("results_page", PATH)
page = importlib.util.module_from_spec(spec)
spec.loader.exec_module(page)


def test_sections_are_replaced_not_repeated(tmp_path):
    target = tmp_path / "RESULTS.md"
    page.write_section("a", "first", target)
    page.write_section("b", "other", target)
    page.write_section("a", "second", target)
    text = target.read_text()
    assert text.startswith("# Measurements") and text.count("<!-- a -->") == 1
    assert "second" in text and "first" not in text and "other" in text


def test_the_store_section_counts_every_experiment():
    from attnsink.experiments import EXPERIMENTS

    body = page.store_section()
    for name in EXPERIMENTS:
        assert f"| {name} |" in body
    assert "In all:" in body


def test_the_page_has_the_store_section():
    assert "<!-- store -->" in page.PAGE.read_text()
