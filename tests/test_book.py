"""The chapters as files: Colab install cell, one setup call, no committed outputs, toc and config in step."""

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


def test_there_are_chapters_and_all_are_in_the_toc():
    assert CHAPTERS
    listed = {ch["file"] for part in TOC["parts"] for ch in part["chapters"]}
    for nb in CHAPTERS:
        assert f"book/{nb.stem}" in listed, f"{nb.name} is not in _toc.yml"


def test_colab_is_configured_in_one_place():
    url = CONFIG["repository"]["url"]
    assert url.startswith("https://github.com/") and CONFIG["repository"]["branch"] == "main"
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_first_cell_installs_on_colab_only(path):
    first = code_cells(path)[0]
    source = "".join(first["source"])
    assert "remove-cell" in first["metadata"].get("tags", []), "only Colab needs it: the page does not show it"
    assert f'REPO_URL = "{CONFIG["repository"]["url"]}"' in source, "the URL must be _config.yml's repository.url"
    assert '"google.colab" in sys.modules' in source and 'find_spec("attnsink") is None' in source
    assert '"git", "clone"' in source and "REPO_URL" in source  # the repository: the library and its store
    assert 'sys.path.insert(0, "/content/book/src")' in source, "importable in the kernel that ran the install"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_then_one_visible_setup_call_and_hidden_imports(path):
    _, setup, imports = code_cells(path)[:3]
    source = "".join(setup["source"])
    assert "from attnsink.book import setup" in source and f"PROFILE = setup(chapter={int(path.name[:2])})" in source
    assert len([line for line in source.splitlines() if line.strip()]) <= 3, "at most three visible lines of setup"
    assert not setup["metadata"].get("tags"), "the setup call and the line it prints are shown"
    assert "hide-input" in imports["metadata"].get("tags", []), "the chapter's imports are folded away"
    chapter = "".join("".join(c["source"]) for c in code_cells(path))
    assert "resolve_profile(" not in chapter and "set_theme(" not in chapter, "setup() does both, once"


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_setup_resolves_the_profile_and_says_how_to_change_it(profile, monkeypatch, capsys, tmp_path):
    from attnsink import book, plots

    themed = []
    monkeypatch.setattr(plots, "set_theme", lambda: themed.append(True))
    monkeypatch.setenv("ATTNSINK_PROFILE", profile)
    monkeypatch.delenv("ATTNSINK_TRAIN", raising=False)
    monkeypatch.setenv("ATTNSINK_STORE", str(tmp_path))
    monkeypatch.setenv("ATTNSINK_CACHE_DIR", str(tmp_path / "cache"))
    assert book.setup() == profile and themed == [True]
    line, *banner = capsys.readouterr().out.splitlines()
    assert line.startswith(f"profile {profile}: models from ") and "ATTNSINK_PROFILE=quick|full" in line
    assert banner == ([book.QUICK_BANNER] if profile == "quick" else []), "quick says the text describes full"
    if profile == "full":  # the published book: the store first, and how to train what it lacks
        assert "the store, then the cache" in line and "ATTNSINK_TRAIN=1" in line
    else:  # the store holds full models only; quick trains what the cache lacks
        assert "store" not in line and "else trained here" in line
    monkeypatch.setenv("ATTNSINK_TRAIN", "1")
    assert book.setup(profile="full") == "full" and "else trained here" in capsys.readouterr().out
    monkeypatch.setenv("ATTNSINK_PROFILE", "huge")
    with pytest.raises(ValueError, match="ATTNSINK_PROFILE"):
        book.setup()


def test_models_line_names_what_is_there():
    from attnsink.book import models_line

    line = models_line("quick", train=True, store=True, cache=True, chosen=False)
    assert line.startswith("profile quick (no GPU): models from the cache, else trained here (ATTNSINK_TRAIN=0")
    assert models_line("full", train=True, store=True, cache=True, chosen=False).startswith("profile full (GPU): ")
    line = models_line("full", train=False, store=False, cache=False)
    assert line.startswith("profile full: no store and no cache; missing ones are not trained (ATTNSINK_TRAIN=1")
    assert "\n" not in line


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, f"{path.name} has outputs"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_plots_hidden_and_captioned(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and "plots." in source:
            assert "hide-input" in cell["metadata"].get("tags", []), f"{path.name}: plotting cell not hidden"
            caption = cell["metadata"].get("mystnb", {}).get("figure", {}).get("caption", "")
            assert len(caption) > 40, f"{path.name}: a figure cell without a caption:\n{source}"
            # the image's alt text says what the figure shows (a screen reader reads it; without it
            # the page shows the file's path)
            alt = cell["metadata"]["mystnb"].get("image", {}).get("alt", "")
            assert len(alt) > 40 and ".png" not in alt, f"{path.name}: a figure without alt text:\n{source}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_code_fits_the_column(path):
    """The chapters' code is read in the book's column: at most 88 characters a line
    (book/ruff.toml; `ruff format book/` reflows it), so no code cell scrolls sideways."""
    limit = 88
    long = [line for cell in code_cells(path) for line in "".join(cell["source"]).split("\n") if len(line) > limit]
    assert not long, f"{path.name}: {len(long)} code lines over {limit} characters, e.g. {long[0]!r}"


def _proved_results() -> list[tuple[str, str]]:
    """(label, title) of every labelled theorem, lemma, proposition and corollary, in book order."""
    import re

    found = []
    pattern = re.compile(r"```\{prf:(theorem|lemma|proposition|corollary)\}([^\n]*)\n((?::[^\n]*\n)*)")
    for path in CHAPTERS:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                for m in pattern.finditer("".join(cell["source"])):
                    label = re.search(r":label:\s*(\S+)", m.group(3))
                    assert label, f"{path.name}: a {m.group(1)} without a label cannot be listed or referred to"
                    found.append((label.group(1), m.group(2).strip()))
    return found


def test_the_list_of_results_lists_every_proved_result_in_order():
    import re

    page = (ROOT / "book" / "results.md").read_text()
    listed = re.findall(r"^\* \{prf:ref\}`([\w-]+)`: (.+)$", page, re.M)
    assert listed == _proved_results()  # each with its own title: the reference renders as 'Theorem 2.1' only


def test_notation_and_results_pages_are_in_the_toc():
    files = [c["file"] for part in TOC["parts"] for c in part["chapters"]]
    assert "book/notation" in files and "book/results" in files


def test_numbers_are_written_as_a_reader_writes_them():
    from attnsink.book import number

    assert [number(x) for x in (2.261, 0.0123, 0.1, 0, 12345.6)] == ["2.261", "0.012", "0.100", "0", "12345.600"]
    assert number(0.00123) == "1.2 × 10⁻³" and number(3.2e-5) == "3.2 × 10⁻⁵" and number(-4e-9) == "−4.0 × 10⁻⁹"
    assert number(-0.25) == "−0.250"
    assert number(1.5e6) == "1.5 × 10⁶" and number(float("nan")) == "–" and number(None) == "–"
    assert number(0.05, precision=2) == "5.0 × 10⁻²" and number(0.5, precision=2) == "0.50"


def test_a_table_has_a_caption_plain_numbers_and_whole_numbers_as_integers():
    import pandas as pd

    from attnsink.book import table

    df = pd.DataFrame(
        {"rule": ["softmax", "relu"], "steps": [1000.0, 25000.0], "mse": [3e-6, 0.012], "seeds stopped": [1.0, 0.5]}
    )
    html = table(df, "Table 1.1. Two rules.", index=False, formats={"seeds stopped": "{:.0%}"}).to_html()
    assert "<caption>Table 1.1. Two rules.</caption>" in html
    for shown in (">1000<", ">25,000<", ">3.0 × 10⁻⁶<", ">0.012<", ">100%<", ">50%<", ">softmax<"):
        assert shown in html, shown
    assert "e-06" not in html and "1000.000" not in html
    with pytest.raises(ValueError, match="caption"):
        table(df, "")
    with pytest.raises(ValueError, match="formats"):
        table(df, "T", formats={"nope": "{:.1f}"})


def _py_targets() -> list[tuple[str, str]]:
    """(page, target) of every {py:...} reference in the book's pages."""
    import re

    pages = [*CHAPTERS, *(ROOT / "book").glob("*.md")]
    found = []
    for path in pages:
        text = path.read_text()
        for m in re.finditer(r"\{py:(?:func|class|meth|mod|data|attr|obj)\}`([^`]+)`", text):
            target = m.group(1)
            target = re.search(r"<([^>]+)>", target).group(1) if "<" in target else target
            found.append((path.name, target.lstrip("~")))
    return found


def test_every_library_name_the_book_links_is_documented_where_the_link_points():
    """A {py:func} link resolves only to the module the API page documents the name in (its
    ``__module__``); otherwise Sphinx shows it as plain code, silently. Every link's target
    must be that canonical path, under a module the API page lists."""
    import importlib
    import re

    api = (ROOT / "book" / "api.md").read_text()
    documented = set(re.findall(r"automodule:: ([\w.]+)", api))
    if ".. experiments-api::" in api:  # one automodule per experiment of the registry
        from attnsink.registry import REGISTRY

        documented |= {e.module for e in REGISTRY}
    bad = []
    for page, target in _py_targets():
        try:
            importlib.import_module(target)
            ok = target in documented  # a module
        except ImportError:
            parts = target.split(".")
            cut = 1
            while cut < len(parts) - 1:  # the longest prefix that is a module
                try:
                    importlib.import_module(".".join(parts[: cut + 1]))
                except ImportError:
                    break
                cut += 1
            module = ".".join(parts[:cut])
            owner = getattr(importlib.import_module(module), parts[cut], None)  # the function, class or data
            attr = owner
            for name in parts[cut + 1 :]:  # a method or attribute of a class
                attr = getattr(attr, name, None)
            home = getattr(owner, "__module__", module) if callable(owner) else module
            ok = attr is not None and module in documented and home == module
        if not ok:
            bad.append(f"{page}: {target}")
    assert not bad, "links to names not documented there:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_a_chapter_runs_the_experiments_the_registry_gives_it(path):
    """``setup(chapter=N)`` reads the store for the experiments of :data:`attnsink.experiments.CHAPTERS`:
    they must be the ones the chapter calls."""
    import re

    from attnsink.experiments import EXPERIMENTS, chapter_experiments

    chapter = "".join("".join(c["source"]) for c in code_cells(path))
    called = {name for name in EXPERIMENTS if re.search(rf"\b{name}\(", chapter)}
    assert called == set(chapter_experiments(int(path.name[:2])))


def test_with_no_profile_set_a_chapter_reads_the_store_that_holds_its_models(monkeypatch, capsys, tmp_path):
    import torch

    from attnsink import book, plots

    monkeypatch.setattr(plots, "set_theme", lambda: None)
    monkeypatch.delenv("ATTNSINK_PROFILE", raising=False)
    monkeypatch.delenv("ATTNSINK_TRAIN", raising=False)
    monkeypatch.delenv("ATTNSINK_STORE", raising=False)  # the repository's store
    assert book.setup(chapter=1) == "full"  # the store holds single_layer's full models
    assert capsys.readouterr().out.startswith("profile full: models from the store")
    monkeypatch.setenv("ATTNSINK_STORE", str(tmp_path))  # a store without them: this machine's default
    assert book.setup(chapter=1) == ("full" if torch.cuda.is_available() else "quick")
    monkeypatch.setenv("ATTNSINK_STORE", "")  # no store at all
    assert book.setup(chapter=1) == ("full" if torch.cuda.is_available() else "quick")
    assert book.setup() == ("full" if torch.cuda.is_available() else "quick")  # no chapter: no store to read
    monkeypatch.setenv("ATTNSINK_PROFILE", "quick")  # a profile set wins over the store
    monkeypatch.delenv("ATTNSINK_STORE")
    assert book.setup(chapter=1) == "quick"


def test_glue_shows_the_value_without_the_build_tools(monkeypatch, capsys):
    import sys

    from attnsink import book

    monkeypatch.setitem(sys.modules, "myst_nb", None)  # import myst_nb raises ImportError, as in Colab
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda v: shown.append(v))
    assert book.glue("x", 0.5) is None and shown == [0.5]
    assert book.glue("y", 0.25, display=False) is None and shown == [0.5]


def test_every_chapter_glues_through_the_library():
    for path in CHAPTERS:
        assert "myst_nb" not in path.read_text(), f"{path.name}: glue comes from attnsink.book (Colab has no myst_nb)"


def test_the_colab_cell_states_what_it_downloads():
    """The install cell's "about N MB" is the size of the files a shallow clone fetches (within 15%)."""
    import re
    import subprocess

    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    size = sum((ROOT / f.decode()).stat().st_size for f in files if f and (ROOT / f.decode()).is_file()) / 1e6
    for path in CHAPTERS:
        source = "".join(code_cells(path)[0]["source"])
        assert '"--depth", "1"' in source, "the latest version only: no history"
        stated = float(re.search(r"about (\d+) MB", source).group(1))
        assert abs(stated - size) <= 0.15 * size, f"{path.name} says about {stated:.0f} MB; a clone is {size:.0f} MB"
