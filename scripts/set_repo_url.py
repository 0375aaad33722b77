"""Point the book at another repository (a fork): ``python scripts/set_repo_url.py URL``.

The repository's URL lives in ``_config.yml`` (``repository.url``: the book's GitHub and
Colab buttons). Each chapter's first cell repeats it, because on Colab a notebook runs
alone and must know where to install the library from; this script writes the URL into
``_config.yml`` and into every chapter, and ``tests/test_book.py`` checks that they agree.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
URL = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+$")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not URL.match(argv[0]):
        print("usage: python scripts/set_repo_url.py https://github.com/OWNER/REPO", file=sys.stderr)
        return 2
    url = argv[0]
    config = ROOT / "_config.yml"
    text, n = re.subn(r"(?m)^(repository:\n  url: ).*$", rf"\g<1>{url}", config.read_text())
    if n != 1:
        print("error: _config.yml has no repository.url to replace", file=sys.stderr)
        return 1
    config.write_text(text)
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            cell["source"] = [re.sub(r'^REPO_URL = "[^"]*"', f'REPO_URL = "{url}"', line) for line in cell["source"]]
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    print(f"repository URL set to {url} in _config.yml and every chapter")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
