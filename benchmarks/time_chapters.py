"""Execute every chapter (or those named) as the book build does, and time each one; with
``--write``, put the times on the measurements page (benchmarks/RESULTS.md), in the section of
the profile used.

    ATTNSINK_PROFILE=full python benchmarks/time_chapters.py --write     the published book, from the store
    python benchmarks/time_chapters.py book/03_relu_escapes.ipynb       one chapter, the profile of the machine

A chapter that fails is reported with its error and the run exits with status 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))


def run(path: Path, timeout: int) -> tuple[float, str | None]:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        resources = {"metadata": {"path": str(path.parent)}}
        NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=resources).execute()
        error = None
    except Exception as e:  # a failing cell: its error, shortened
        error = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"
    return time.perf_counter() - start, error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="default: every chapter in book/")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds a cell may take (default 1200)")
    parser.add_argument("--write", action="store_true", help="put the times on benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    from attnsink.profiles import resolve_profile

    profile = resolve_profile()
    chapters = args.chapters or sorted((ROOT / "book").glob("*.ipynb"))
    rows, failed = [], 0
    for path in chapters:
        seconds, error = run(path, args.timeout)
        failed += error is not None
        rows.append((path.name, seconds, error))
        print(f"{path.name}: {seconds:.1f} s" + (f"  FAILED {error}" if error else ""), flush=True)
    total = sum(s for _, s, _ in rows)
    print(f"{len(rows)} chapters, {total:.1f} s, {failed} failed")
    if args.write:
        import results_page

        lines = [
            f"## Chapters under the {profile} profile",
            "",
            f"Written by `ATTNSINK_PROFILE={profile} python benchmarks/time_chapters.py --write` "
            f"({results_page.stamp()}); each chapter executed as the book build executes it.",
            "",
            "| chapter | seconds | result |",
            "|---|---|---|",
            *[f"| {name} | {s:.1f} | {'passed' if e is None else 'FAILED: ' + e} |" for name, s, e in rows],
            "",
            f"In all {total:.0f} s ({total / 60:.1f} min), {failed} failed.",
        ]
        results_page.write_section(f"chapters-{profile}", "\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
