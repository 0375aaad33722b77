"""Publishing: ``make publish`` against a local bare repository, and the Pages workflow's shape."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
PAGES = [TOC["root"]] + [ch["file"] for part in TOC["parts"] for ch in part["chapters"]]


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def html_tree(tmp_path: Path) -> Path:
    """The built book when there is one (CI builds it first), else a stand-in with its pages."""
    built = ROOT / "_build" / "html"
    if (built / "index.html").exists():
        return built
    fake = tmp_path / "html"
    for page in PAGES:
        (fake / f"{page}.html").parent.mkdir(parents=True, exist_ok=True)
        (fake / f"{page}.html").write_text(f"<html><body>{page}</body></html>")
    (fake / "index.html").write_text('<meta http-equiv="Refresh" content="0; url=book/index.html" />')
    return fake


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("make") is None, reason="needs git and make")
def test_make_publish_pushes_the_book_to_gh_pages(tmp_path):
    remote = tmp_path / "remote.git"
    git("init", "--bare", "-q", str(remote), cwd=tmp_path)
    work = tmp_path / "work"  # a repository of its own, so the project's checkout gets no gh-pages branch
    work.mkdir()
    git("init", "-q", cwd=work)
    for key, value in (("user.name", "test"), ("user.email", "test@example.com")):
        git("config", key, value, cwd=work)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=work)
    html = html_tree(tmp_path)
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        [
            "make",
            "-C",
            str(work),
            "-f",
            str(ROOT / "Makefile"),
            "publish",
            f"REMOTE={remote}",
            f"HTML={html}",
            f"BIN={bin_dir}",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    files = set(git("ls-tree", "-r", "--name-only", "gh-pages", cwd=remote).split())
    assert "index.html" in files and ".nojekyll" in files
    missing = [p for p in PAGES if f"{p}.html" not in files]
    assert not missing, f"pages missing on gh-pages: {missing}"
    log = git("log", "-1", "--format=%s", "gh-pages", cwd=remote)
    assert "Publish the book" in log


def test_make_publish_refuses_without_a_built_book(tmp_path):
    done = subprocess.run(
        ["make", "-C", str(ROOT), "publish", f"HTML={tmp_path / 'none'}", f"BIN={Path(sys.executable).parent}"],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "run make book first" in done.stderr


def test_workflow_builds_and_publishes_with_the_make_targets():
    flow = yaml.safe_load(WORKFLOW.read_text())
    on = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert on["push"]["branches"] == ["main"]
    (job,) = flow["jobs"].values()
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "make book" in runs and "make publish" in runs
    makefile = (ROOT / "Makefile").read_text()
    for target in ("book", "publish"):
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert job["env"]["ATTNSINK_PROFILE"] == "full"  # the published book is the full profile
    assert flow["permissions"]["contents"] == "write"


def test_workflow_builds_from_the_store_and_never_trains():
    flow = yaml.safe_load(WORKFLOW.read_text())
    (job,) = flow["jobs"].values()
    assert job["env"]["ATTNSINK_TRAIN"] == "0"  # a missing model fails the build instead of training
    assert not [s for s in job["steps"] if s.get("uses", "").startswith("actions/cache")]  # the store is in the repo
    runs = [s.get("run", "") for s in job["steps"]]
    check = next(i for i, r in enumerate(runs) if "attnsink status" in r)
    assert "--profile full --check" in runs[check]
    assert check < next(i for i, r in enumerate(runs) if "make book" in r)  # checked before the build


def test_set_repo_url_rewrites_config_and_chapters(tmp_path):
    """A fork changes the URL with one command; the chapters follow _config.yml."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", ".venv", "_build", "*cache*", "test-artifacts"))
    url = "https://github.com/someone/a-fork"
    done = subprocess.run(
        [sys.executable, str(copy / "scripts" / "set_repo_url.py"), url], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load((copy / "_config.yml").read_text())["repository"]["url"] == url
    for nb in (copy / "book").glob("*.ipynb"):
        assert f'REPO_URL = \\"{url}\\"' in nb.read_text(), nb.name
    bad = subprocess.run([sys.executable, str(copy / "scripts" / "set_repo_url.py"), "not a url"], capture_output=True)
    assert bad.returncode == 2


def test_full_cache_trains_every_experiment_of_the_registry():
    import subprocess
    import sys

    from attnsink.registry import REGISTRY

    makefile = (ROOT / "Makefile").read_text()
    assert "for name in $$($(BIN)/python -m attnsink list)" in makefile
    assert "--profile full --store" in makefile and "full-cache: $(STAMP)" in makefile
    listed = subprocess.run([sys.executable, "-m", "attnsink", "list"], capture_output=True, text=True, check=True)
    assert listed.stdout.split() == [e.name for e in REGISTRY]
    chapter = subprocess.run(
        [sys.executable, "-m", "attnsink", "list", "--chapter", "5"], capture_output=True, text=True, check=True
    )
    assert chapter.stdout.split() == ["multi_layer", "blocks", "sweep"]
