"""The chapters as files: Colab install cell, no committed outputs, toc and config in step."""

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


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_first_cell_installs_on_colab_only(path):
    nb = json.loads(path.read_text())
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    source = "".join(first["source"])
    assert "hide-output" in first["metadata"].get("tags", [])
    assert f'REPO_URL = "{CONFIG["repository"]["url"]}"' in source, "the URL must be _config.yml's repository.url"
    assert '"google.colab" in sys.modules' in source and 'find_spec("attnsink") is None' in source
    assert '"git", "clone"' in source and "REPO_URL" in source  # the repository: the library and its store
    assert "ATTNSINK_TRAIN=1" in source, "the first cell says how to retrain what is not stored"
    assert "resolve_profile()" in source, "the first cell picks the profile (full on a Colab GPU)"


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
