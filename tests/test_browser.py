r"""The built book, opened page by page in headless Chromium.

Builds the HTML book (incremental: fast when ``_build`` is up to date), serves it on
localhost and opens every page. Fails on a JavaScript error, a missing image, an empty
page, a page missing from the navigation, a chapter without its Colab button, or math that
MathJax did not typeset (a raw ``\(``, ``\[`` or ``$$`` left in the visible text), a
table wider than the text column at 1400 px, a bold glued number, or an image whose alt
text is missing or only its file's path. Saves screenshots of every page at 1400 px and
420 px (a phone) under ``test-artifacts/``.

Select it alone with ``pytest -m browser``. Needs Debian's ``chromium`` and the
``playwright`` package; without them it is skipped, unless ``ATTNSINK_REQUIRE_BROWSER=1``
(as in CI), which turns the skip into a failure. Requests to any host but localhost are
blocked, as a reader's laptop without network would: the book serves its own MathJax.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
# console messages that are not errors of the book: the theme's note on a fresh profile
KNOWN_CONSOLE = ("Got invalid theme mode",)


def _unavailable(reason: str):
    if os.environ.get("ATTNSINK_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser test required but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def site():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        _unavailable("Debian's chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")

    build = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
            "build",
            str(ROOT),
            "-W",
            "--keep-going",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, f"book build failed:\n{build.stdout[-4000:]}\n{build.stderr[-4000:]}"

    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(HTML))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        browser = p.chromium.launch_persistent_context(
            profile,
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield base, browser
        finally:
            browser.close()
            server.shutdown()


def book_pages() -> list[str]:
    """Every content page of the built book, as paths relative to the site root."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]
    return [f"{Path(f).with_suffix('')}.html" for f in files]


def visit(browser, url: str) -> tuple:
    """Open ``url``; return the page and the problems seen while loading it."""
    page = browser.new_page()
    problems = []
    page.on("pageerror", lambda e: problems.append(f"JavaScript error: {e}"))
    page.on(
        "console",
        lambda m: (
            problems.append(f"console error: {m.text}")
            if m.type == "error" and "Failed to load resource" not in m.text and not m.text.startswith(KNOWN_CONSOLE)
            else None
        ),
    )
    page.on("requestfailed", lambda r: problems.append(f"failed to load {r.url}") if "127.0.0.1" in r.url else None)
    page.route("**/*", lambda route: route.continue_() if "127.0.0.1" in route.request.url else route.abort())
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{url}: HTTP {response.status if response else 'no response'}"
    return page, problems


MATH_JS = """() => {
  const math = Array.from(document.querySelectorAll('main .math'));
  return {math: math.length, untypeset: math.filter(m => !m.querySelector('mjx-container')).length,
          mathjax: !!(window.MathJax && window.MathJax.startup)};
}"""


def math_problems(page) -> list[str]:
    """Formulas MathJax left untypeset on ``page`` and raw TeX delimiters in its visible text."""
    try:  # MathJax typesets after the page's load event; wait for it (or for a page without math)
        page.wait_for_function(
            "() => !document.querySelector('main .math') || "
            "(window.MathJax && window.MathJax.startup && window.MathJax.startup.document && "
            "document.querySelectorAll('main .math mjx-container').length > 0)",
            timeout=15_000,
        )
        page.evaluate("() => window.MathJax && window.MathJax.startup ? window.MathJax.startup.promise : null")
    except Exception:  # timed out: what is (not) there is reported below
        pass
    info = page.evaluate(MATH_JS)
    problems = []
    if info["untypeset"]:
        why = "MathJax ran" if info["mathjax"] else "MathJax did not load"
        problems.append(f"{info['untypeset']} of {info['math']} formulas not typeset ({why})")
    text = page.inner_text("main")
    problems += [f"raw {d} in the visible text" for d in ("\\(", "\\[", "$$") if d in text]
    return problems


def test_every_page_renders(site):
    base, browser = site
    colab_url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    repo_path = colab_url.removeprefix("https://github.com/")
    for rel in book_pages():
        page, problems = visit(browser, f"{base}/{rel}")
        broken = page.evaluate(
            "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
        )
        assert not broken, f"{rel}: images that did not load: {broken}"
        text = page.inner_text("main")
        assert len(text.strip()) > 300, f"{rel}: the page is (nearly) empty"
        if (ROOT / rel).with_suffix(".ipynb").exists():
            colab = page.evaluate("Array.from(document.querySelectorAll('a')).map(a => a.href)")
            expected = (
                f"https://colab.research.google.com/github/{repo_path}/blob/main/{Path(rel).with_suffix('.ipynb')}"
            )
            assert expected in colab, f"{rel}: no Colab launch link to {expected}"
            assert page.locator("figure img").count() >= 1, f"{rel}: a chapter without a figure"
        if (ROOT / rel).with_suffix(".ipynb").exists():  # every chapter has formulas: the check has work
            assert page.locator("main .math").count() > 0, f"{rel}: a chapter without math?"
        assert not math_problems(page), f"{rel}: {math_problems(page)}"
        page.wait_for_timeout(300)  # let late scripts run and report
        assert not problems, f"{rel}: {problems}"
        page.close()


def test_the_math_check_fails_on_untypeset_math(site):
    """A page whose formulas MathJax never typeset (here: no MathJax at all) is caught."""
    _, browser = site
    page = browser.new_page()
    page.set_content('<main><p>The mean <span class="math">\\(\\bar x\\)</span> and $$y$$.</p></main>')
    problems = math_problems(page)
    assert any("not typeset" in p for p in problems) and any("raw" in p for p in problems), problems
    page.close()


def test_every_page_is_in_the_navigation(site):
    base, browser = site
    page, problems = visit(browser, f"{base}/{book_pages()[0]}")
    hrefs = page.evaluate("Array.from(document.querySelectorAll('.bd-sidebar-primary a')).map(a => a.href)")
    linked = {h.split("#")[0].removeprefix(base + "/") for h in hrefs}
    missing = [rel for rel in book_pages() if rel not in linked]
    assert not missing, f"pages missing from the navigation: {missing} (linked: {sorted(linked)})"
    assert not problems


LAYOUT_JS = """() => {
  const column = document.querySelector('main .bd-article') || document.querySelector('main');
  const width = column.getBoundingClientRect().width;
  const wide = Array.from(column.querySelectorAll('table'))
    .filter(t => t.scrollWidth > width + 1)
    .map(t => `${(t.querySelector('caption') || t).innerText.slice(0, 60).replace(/\\s+/g, ' ')}`
              + ` (${t.scrollWidth} px in a ${Math.round(width)} px column)`);
  const bold = Array.from(document.querySelectorAll('main span.pasted-text'))
    .filter(s => !s.closest('strong, b, th, h1, h2, h3, h4, h5, h6'))  // the author's bold
    .filter(s => parseInt(getComputedStyle(s).fontWeight) > 500)
    .map(s => s.innerText.slice(0, 40));
  const images = Array.from(column.querySelectorAll('img'));  // the book's, not the theme's
  const noAlt = images.filter(i => {
      const alt = (i.getAttribute('alt') || '').trim();
      const file = (i.getAttribute('src') || '').split('/').pop();
      return alt.length < 20 || alt.includes(file) || /\\.(png|jpe?g|svg)$/i.test(alt);
    }).map(i => i.getAttribute('src'));
  return {wide, bold, noAlt, images: images.length, tables: column.querySelectorAll('table').length};
}"""


def layout_problems(page) -> list[str]:
    """Tables wider than the text column, glued values set in bold, and images without alt
    text (or with their file's path as alt text) on ``page``."""
    info = page.evaluate(LAYOUT_JS)
    return (
        [f"table wider than the column: {t}" for t in info["wide"]]
        + [f"glued value in bold: {b!r}" for b in info["bold"]]
        + [f"image without alt text: {src}" for src in info["noAlt"]]
    )


def test_tables_fit_glued_values_are_plain_and_images_have_alt_text(site):
    base, browser = site
    page, _ = visit(browser, f"{base}/{book_pages()[0]}")
    page.set_viewport_size({"width": 1400, "height": 900})
    found = {}
    for rel in book_pages():
        page.goto(f"{base}/{rel}", wait_until="load")
        problems = layout_problems(page)
        if problems:
            found[rel] = problems
    assert not found, "\n".join(f"{rel}: {p}" for rel, ps in found.items() for p in ps)
    page.close()


def test_the_layout_check_fails_on_a_wide_table_bold_value_and_missing_alt(site):
    _, browser = site
    page = browser.new_page()
    page.set_viewport_size({"width": 1400, "height": 900})
    page.set_content(
        '<main><article class="bd-article" style="width: 300px">'
        '<table><tr><td style="min-width: 900px">wide</td></tr></table>'
        '<span class="pasted-text" style="font-weight: bold">0.5</span>'
        '<img src="_images/plot.png" alt="plot.png">'
        "</article></main>"
    )
    problems = layout_problems(page)
    assert any("table wider" in p for p in problems), problems
    assert any("bold" in p for p in problems), problems
    assert any("alt text" in p for p in problems), problems
    page.close()


def test_screenshots(site):
    """Every page at a desktop's width and a phone's, for a person to look at."""
    base, browser = site
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1400, 420):
        page, _ = visit(browser, f"{base}/{book_pages()[0]}")
        page.set_viewport_size({"width": width, "height": 900})
        for i, rel in enumerate(book_pages()):
            page.goto(f"{base}/{rel}", wait_until="load")
            path = ARTIFACTS / f"{i:02d}_{Path(rel).stem}_{width}.png"
            page.screenshot(path=str(path), full_page=True)
            assert path.stat().st_size > 20_000, f"{path} looks blank"
        page.close()
    for name, rel in (("landing", book_pages()[0]), ("chapter1", book_pages()[1])):  # CI checks these two
        page, _ = visit(browser, f"{base}/{rel}")
        page.set_viewport_size({"width": 1400, "height": 900})
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        page.close()
