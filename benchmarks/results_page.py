"""The measurements page, benchmarks/RESULTS.md: each benchmark writes its own section, between
``<!-- NAME -->`` and ``<!-- /NAME -->``, with the date, commit and machine of the run.

    python benchmarks/results_page.py store                  the full profile's training, from the store
    python benchmarks/results_page.py bench FILE [MACHINE]   a run of bench_train.py (its --out JSON)
"""

from __future__ import annotations

import datetime
import json
import re
import sys
from pathlib import Path

PAGE = Path(__file__).with_name("RESULTS.md")
HEADER = """# Measurements

What the benchmarks and the store measured, each section written by the script it names
(with the date, commit and machine of its run). The README says how to run things; this page
says how long they took and how fast they ran.
"""


def write_section(name: str, body: str, page: Path = PAGE) -> None:
    """Put ``body`` in the section ``name`` of the page, replacing what was there."""
    text = page.read_text() if page.exists() else HEADER
    block = f"<!-- {name} -->\n{body.rstrip()}\n<!-- /{name} -->"
    pattern = re.compile(rf"<!-- {re.escape(name)} -->.*?<!-- /{re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    page.write_text(text)


def stamp() -> str:
    from attnsink.cache import machine
    from attnsink.stored import commit

    return f"{datetime.date.today().isoformat()}, commit {commit()}, {machine()}"


def store_section(store_dir: Path | None = None) -> str:
    """The full profile's training, per experiment: models stored of those needed, where and how
    long they trained (from the manifests), and the store's size."""
    from attnsink.cache import default_store_dir
    from attnsink.stored import analyses_status, read_manifest, status

    store_dir = store_dir or default_store_dir()
    table = status("full", store_dir=store_dir)
    lines = [
        "## The full profile's training (the store)",
        "",
        f"Written by `python benchmarks/results_page.py store` ({stamp()}). Wall time is that of",
        "the run that trained the models (several experiments may have shared the machine; the note says).",
        "",
        "| experiment | models stored | MB | trained on | wall time | date | commit | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        manifest = read_manifest(store_dir, row.experiment, "full") or {"runs": []}
        runs = manifest["runs"] or [{}]
        for i, run in enumerate(runs):
            wall = run.get("wall_s")
            where = f"{run['device']}: {run.get('machine', '')}" if run else "not trained yet"
            lines.append(
                f"| {row.experiment if i == 0 else ''} | {f'{row.stored} of {row.models}' if i == 0 else ''} "
                f"| {row.MB if i == 0 else ''} | {where} "
                f"| {'' if wall is None else f'{wall / 60:.1f} min'} | {run.get('date', '')} "
                f"| {run.get('commit', '')} | {run.get('note', '')} |"
            )
    total = table.sum(numeric_only=True)
    lines += ["", f"In all: {int(total.stored)} of {int(total.models)} models, {total.MB:.1f} MB."]
    a = analyses_status(store_dir)
    lines += [
        "",
        f"Beside them, {a['current']} memoized analyses of those models for the current code, "
        f"{a['MB']:.1f} MB (`make store-analyses`)"
        + (f"; {a['set_aside']} stored by earlier code are set aside." if a["set_aside"] else "."),
        "",
        "How much the repository grows per change: an edit that moves no number (a docstring, a comment, "
        "a figure, the text, the command line, an analysis nobody calls) stores nothing; an edit to one "
        "analysis function stores again only its entries (each keyed by the code it reaches, "
        "`attnsink.codehash`): "
        + "; ".join(
            f"`{name.removeprefix('attnsink.')}` {row['entries']} entries, {row['MB']:.2f} MB"
            for name, row in a["by_function"].items()
        )
        + ". A model moves only with its training version: its kind's, or its rule's (`attnsink.cache`).",
    ]
    return "\n".join(lines)


def bench_section(result: dict, machine: str | None = None) -> str:
    """A run of ``benchmarks/bench_train.py`` (its JSON): steps per second and the speed-ups."""
    where = f"{datetime.date.today().isoformat()}, {machine}" if machine else stamp()
    device = result["device"]
    lines = [
        f"## Training throughput on {device} (benchmarks/bench_train.py)",
        "",
        f"Written by `python benchmarks/results_page.py bench` ({where}); S = {result['seeds']} seeds,",
        "the paper's one-layer setting. Baseline: DataLoader of single sequences, one model, `.item()` per step.",
        "",
        "| rule | baseline steps/s | library steps/s | x | S seeds, per model steps/s | x "
        "| time to criterion: baseline, library |",
        "|---|---|---|---|---|---|---|",
    ]
    for rule in ("softmax", "relu"):
        r = result[rule]
        lines.append(
            f"| {rule} | {r['baseline_steps_per_s']:.0f} | {r['single_steps_per_s']:.0f} | {r['speedup_single']:.1f} "
            f"| {r['multi_seed_model_steps_per_s']:.0f} | {r['speedup_multi_per_model']:.1f} "
            f"| {r['baseline_time_to_criterion_s']:.2f} s, {r['single_time_to_criterion_s']:.2f} s |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["store"]:
        write_section("store", store_section())
        print(f"wrote the store section of {PAGE}")
        return 0
    if argv[:1] == ["bench"] and len(argv) in (2, 3):
        result = json.loads(Path(argv[1]).read_text())
        write_section(f"bench-{result['device']}", bench_section(result, argv[2] if len(argv) == 3 else None))
        print(f"wrote the bench-{result['device']} section of {PAGE}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
