"""Command line: ``python -m attnsink reproduce NAME [--profile quick|full] [--seeds N | --seed-list S,S]
[--steps N] [--lr LR] [--out FILE] [--store]``,
``python -m attnsink grid SPEC.yaml [--backend local|ray] [--address ADDR] [--out DIR]`` and
``python -m attnsink status [--profile full|quick] [--check]``,
``python -m attnsink store NAME...``, ``python -m attnsink store-analyses --cache-dir DIR`` and
``python -m attnsink list [--chapter N]``.

``reproduce`` runs a named experiment, prints a summary table, writes the metrics as JSON
to ``--out`` and the experiment's figure as a PNG beside it (with ``--store``, it also puts the
trained models in the repository's store, :mod:`attnsink.stored`); ``status`` says per
experiment how many of its models are stored, missing and stale, and whether the stored
analyses are the current code's; ``store-analyses`` keeps the memoized analyses that a
full-profile build of the book left in a fresh cache; ``list`` prints the experiments'
names (:data:`attnsink.registry.REGISTRY`); ``grid`` trains every point of
a spec file (:mod:`attnsink.experiments.grid`) and writes ``runs.json``, ``runs.csv`` and
``summary.png`` into ``--out``. Every argument, the environment's
``ATTNSINK_PROFILE`` and the output folder are checked before anything trains: a bad one
ends the command with one ``error:`` line and exit status 2. Only the standard library is
imported until the arguments are checked, so ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from .registry import NAMES as EXPERIMENT_NAMES  # the registry imports nothing: --help stays instant
from .registry import REGISTRY
from .registry import get as get_experiment

PROFILE_CHOICES = ("quick", "full")  # attnsink.profiles.PROFILES, checked by the same test

TABLE_COLUMNS = [
    "attention",
    "seed",
    "steps",
    "stopped_early",
    "linf",
    "rel_err_trigger",
    "rel_err_nontrigger",
    "bos_mass_nontrigger",
    "max_head_bos_mass_nontrigger",
    "attn_mass_nontrigger",
    "sink_rate",
    "val_loss",  # the language models'
    "copy_acc",
    "copy_loss",
    "other_loss",
    "sink",
]
CONFIG_COLUMNS = ["bos", "cap", "no_bos", "blocks", "n_layers", "n_heads", "swept", "seq_len", "d_model", "lr"]


def _json_safe(value):
    """NaN is not JSON: write it as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _seed_list(text: str) -> list[int]:
    try:
        seeds = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be seeds separated by commas, e.g. 0,3,7, got {text!r}") from None
    if any(seed < 0 for seed in seeds) or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"must be distinct non-negative integers, got {text!r}")
    return seeds


def _learning_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return value


def _writable_folder(folder: Path) -> str | None:
    """Why ``folder`` cannot hold our files (created if missing), or None when it can."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create folder {str(folder)!r} ({e.strerror or e})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write in folder {str(folder)!r}"
    return None


def _add_progress(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bars on stderr (default: on when stderr is a terminal)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attnsink", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run a named experiment")
    rep.add_argument("name", choices=EXPERIMENT_NAMES)
    rep.add_argument(
        "--profile",
        choices=PROFILE_CHOICES,
        default=None,
        help="quick (CPU) or full (GPU); default: $ATTNSINK_PROFILE, else full when CUDA is available",
    )
    rep.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (default: the profile's)")
    rep.add_argument("--seed-list", type=_seed_list, default=None, help="which seeds, e.g. 3,7,11 (not with --seeds)")
    rep.add_argument("--steps", type=_positive_int, default=None, help="the step cap (default: the profile's)")
    rep.add_argument("--lr", type=_learning_rate, default=None, help="learning rate in (0, 1] (default: the profile's)")
    rep.add_argument("--out", type=Path, default=None, help="JSON file to write (default: results/NAME.json)")
    rep.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    _add_progress(rep)
    rep.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="processes that train at once (default: $ATTNSINK_WORKERS, else one per CPU core, one on a GPU)",
    )
    rep.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="reuse and store trained models in this folder (default: the chapters' results cache, "
        "$ATTNSINK_CACHE_DIR or ~/.cache/attnsink)",
    )
    rep.add_argument(
        "--no-cache", action="store_true", help="keep nothing in the results cache (stored models are still read)"
    )
    rep.add_argument(
        "--store",
        action="store_true",
        help="full profile only: afterwards, put its models in the repository's store and write its manifest",
    )
    parser.reproduce = rep  # errors about its arguments print its usage
    _store_parsers(parser, sub)
    _grid_parser(parser, sub)
    ls = sub.add_parser("list", help="the experiments' names, in the order make full-cache trains them")
    ls.add_argument("--chapter", type=_positive_int, default=None, help="only those whose models this chapter reads")
    return parser


def _store_parsers(parser: argparse.ArgumentParser, sub) -> None:
    """The commands that read and write the store: status, store, store-analyses."""
    st = sub.add_parser("status", help="how many of each experiment's models are stored, missing and stale")
    st.add_argument("--profile", choices=PROFILE_CHOICES, default="full", help="default: full")
    st.add_argument("--store-dir", type=Path, default=None, help="default: $ATTNSINK_STORE, else the checkout's store/")
    st.add_argument(
        "--check",
        action="store_true",
        help="also verify every stored file's checksum; exit with status 1 when a model is missing or stale, "
        "or a stored file is corrupted",
    )
    parser.status = st

    sto = sub.add_parser(
        "store", help="put the full-profile models of experiments that the results cache holds into the store"
    )
    sto.add_argument("names", nargs="+", choices=EXPERIMENT_NAMES, metavar="NAME")
    sto.add_argument("--cache-dir", type=Path, default=None, help="default: $ATTNSINK_CACHE_DIR or ~/.cache/attnsink")
    sto.add_argument("--wall-s", type=float, default=None, help="the wall time of the run that trained them")
    sto.add_argument("--device", default=None, help="the device they were trained on (default: cuda when available)")
    parser.store = sto

    sta = sub.add_parser(
        "store-analyses",
        help="put the memoized analyses of the current code that a fresh results cache holds into the store",
    )
    sta.add_argument("--cache-dir", type=Path, required=True, help="the cache a full-profile book build just filled")
    sta.add_argument("--store-dir", type=Path, default=None, help="default: $ATTNSINK_STORE, else store/")
    sta.add_argument(
        "--read",
        type=Path,
        default=None,
        help="the keys the build read from the store ($ATTNSINK_STORE_READS): stored analyses neither read "
        "nor in the cache are deleted",
    )
    parser.store_analyses = sta


def _grid_parser(parser: argparse.ArgumentParser, sub) -> None:
    grid = sub.add_parser("grid", help="train every point of a sweep spec (YAML), here or on a Ray cluster")
    grid.add_argument("spec", type=Path, help="the spec file, e.g. examples/sweep.yaml")
    grid.add_argument("--backend", choices=("local", "ray"), default="local", help="where to train (default: local)")
    grid.add_argument(
        "--address",
        default=None,
        help="ray only: join this cluster ('auto' for the one ray start made); default: start one",
    )
    grid.add_argument("--out", type=Path, default=None, help="folder for the results (default: results/grid-SPEC)")
    grid.add_argument(
        "--device", default=None, help="torch device (default: cuda when available; ray: cuda if num_gpus)"
    )
    _add_progress(grid)
    grid.add_argument("--workers", type=_positive_int, default=None, help="local only: processes that train at once")
    grid.add_argument("--cache-dir", type=Path, default=None, help="results cache (default: the chapters')")
    grid.add_argument("--no-cache", action="store_true", help="train everything and keep nothing")
    parser.grid = grid


def _progress(args) -> bool:
    """``--progress`` / ``--no-progress`` if given, else whether stderr is a terminal (tqdm's
    convention: bars for a person watching, none in logs and pipes)."""
    return args.progress if args.progress is not None else sys.stderr.isatty()


def _device_and_workers(cmd: argparse.ArgumentParser, args):
    """The torch device of ``--device`` on this machine, with ``--workers`` / ``$ATTNSINK_WORKERS``
    checked against it (an error exits)."""
    from .parallel import resolve_workers
    from .training import resolve_device

    try:
        device = resolve_device(args.device)
    except ValueError as e:
        cmd.error(f"argument --device: {e}")
    try:
        resolve_workers(args.workers, device)
    except ValueError as e:
        cmd.error(str(e))
    return device


def _cache_folder(cmd: argparse.ArgumentParser, args) -> Path | None:
    """The results cache the command uses, checked (an error exits)."""
    if args.no_cache and args.cache_dir is not None:
        cmd.error("argument --no-cache: not allowed with --cache-dir")
    option, cache_dir = "--cache-dir", args.cache_dir
    if args.no_cache:
        return None
    if cache_dir is None:
        from .cache import CACHE_ENV, default_cache_dir  # the chapters' cache, so a long run is never lost

        option, cache_dir = f"--cache-dir (default: ${CACHE_ENV} or ~/.cache/attnsink)", default_cache_dir()
    problem = cache_dir is not None and _writable_folder(cache_dir)
    if problem:
        cmd.error(f"argument {option}: {problem}")
    return cache_dir


def _grid(parser: argparse.ArgumentParser, args) -> int:
    cmd = parser.grid
    from .experiments.grid import load_spec  # checks the spec before anything trains

    try:
        spec = load_spec(args.spec)
    except ValueError as e:
        cmd.error(f"argument spec: {e}")
    if args.backend == "ray":
        if args.workers is not None:
            cmd.error("argument --workers: only for --backend local (Ray places the tasks)")
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            cmd.error("argument --backend: ray is not installed; pip install 'attnsink[cluster]'")
        import torch

        device = args.device
        if device is None:
            device = "cuda" if spec.ray.get("num_gpus", 0) else "cpu"
        try:
            kind = torch.device(device).type
        except (RuntimeError, TypeError):
            cmd.error(f"argument --device: must be a torch device such as 'cpu' or 'cuda', got {device!r}")
        if (kind == "cuda") != bool(spec.ray.get("num_gpus", 0)):
            cmd.error(f"argument --device: {device!r} does not match the spec's num_gpus={spec.ray.get('num_gpus', 0)}")
    else:
        if args.address is not None:
            cmd.error("argument --address: only for --backend ray")
        device = _device_and_workers(cmd, args)
        try:
            spec.check_fits(device)
        except ValueError as e:
            cmd.error(f"argument spec: {e}")
    out = args.out if args.out is not None else Path("results") / f"grid-{args.spec.stem}"
    problem = _writable_folder(out)
    if problem:
        cmd.error(f"argument --out: {problem}")
    cache_dir = _cache_folder(cmd, args)

    from . import plots
    from .experiments.grid import AXES, run_grid

    print(
        f"grid {args.spec}: {len(spec.points)} points x {spec.seeds} seeds on the {args.backend} backend",
        file=sys.stderr,
    )
    result = run_grid(
        spec,
        backend=args.backend,
        address=args.address,
        cache_dir=cache_dir,
        device=device,
        workers=args.workers,
        progress=_progress(args),
    )
    table = result.frame()
    record = {"spec": str(args.spec), "seeds": spec.seeds, "steps": spec.steps, "stop_linf": spec.stop_linf}
    (out / "runs.json").write_text(json.dumps(_json_safe({**record, "runs": result.runs}), indent=2) + "\n")
    table.to_csv(out / "runs.csv", index=False)
    plots.set_theme()
    result.figure().savefig(out / "summary.png", dpi=120)
    print(
        f"wrote {out / 'runs.json'}, {out / 'runs.csv'} and {out / 'summary.png'} ({len(table)} runs)", file=sys.stderr
    )
    if result.diverged:
        points = sorted({json.dumps({k: r[k] for k in AXES}, sort_keys=True) for r in result.diverged})
        print(f"error: {len(result.diverged)} of {len(table)} runs diverged (non-finite loss) at:", file=sys.stderr)
        for point in points:
            print(f"  {point}", file=sys.stderr)
        return 1
    return 0


def _status(parser: argparse.ArgumentParser, args) -> int:
    if args.store_dir is not None and not args.store_dir.is_dir():
        parser.status.error(f"argument --store-dir: {str(args.store_dir)!r} is not a folder")
    import pandas as pd

    from .stored import status

    table = status(args.profile, store_dir=args.store_dir)
    with pd.option_context("display.width", 200):
        print(table.to_string(index=False))
    total = table[["models", "stored", "missing", "stale"]].sum()
    print(
        f"{int(total.stored)} of {int(total.models)} models stored ({table.MB.sum():.1f} MB), "
        f"{int(total.missing)} missing, {int(total.stale)} stale"
    )
    if args.profile == "full":
        from .stored import analyses_status

        a = analyses_status(args.store_dir)
        print(
            f"{a['current']} analyses stored for the current code ({a['MB']:.1f} MB)"
            + (
                f"; {a['set_aside']} stored by earlier code are set aside (the full book recomputes what it "
                "needs, in minutes; `make store-analyses` stores them again)"
                if a["set_aside"]
                else ""
            )
        )
        for name, row in a["by_function"].items():  # what an edit to one analysis would store again
            print(f"  {name.removeprefix('attnsink.')}: {row['entries']} entries, {row['MB']:.2f} MB")
    bad = table[(table.missing > 0) | (table.stale > 0)]
    failed = False
    if args.check and len(bad):
        names = " ".join(bad.experiment)
        print(
            f"error: the store is incomplete or stale for {names}; run `make full-cache` "
            f"(python -m attnsink reproduce NAME --profile {args.profile} --store)",
            file=sys.stderr,
        )
        failed = True
    if args.check:
        from .stored import verify

        problems = verify(args.store_dir)
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        if not problems:
            print("every stored file is whole (checksums verified)")
        failed = failed or bool(problems)
    return 1 if failed else 0


def _store(parser: argparse.ArgumentParser, args) -> int:
    cmd = parser.store
    args.no_cache = False
    cache_dir = _cache_folder(cmd, args)
    device = args.device or ("cuda" if _cuda() else "cpu")
    from .cache import machine
    from .stored import save

    for name in args.names:
        run = {"wall_s": args.wall_s, "device": device, "machine": machine()}
        manifest = save(name, "full", cache_dir=cache_dir, run=run, partial=True)
        print(f"{name}: {len(manifest['models'])} models in the store", file=sys.stderr)
    return 0


def _store_analyses(parser: argparse.ArgumentParser, args) -> int:
    cmd = parser.store_analyses
    for name in ("cache_dir", "store_dir"):
        folder = getattr(args, name)
        if folder is not None and not folder.is_dir():
            cmd.error(f"argument --{name.replace('_', '-')}: {str(folder)!r} is not a folder")
    if args.read is not None and not args.read.is_file():
        cmd.error(f"argument --read: {str(args.read)!r} is not a file")
    from .stored import save_analyses

    read = set(args.read.read_text().split()) if args.read is not None else None
    a = save_analyses(args.cache_dir, args.store_dir, read=read)
    print(f"{a['current']} analyses in the store for the current code ({a['MB']:.1f} MB)", file=sys.stderr)
    return 0


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _check_settings(rep: argparse.ArgumentParser, args, profile: str, cache_dir) -> None:
    """``reproduce``'s settings and ``--store``, checked before anything trains."""
    if args.seeds is not None and args.seed_list is not None:
        rep.error("argument --seed-list: not with --seeds (the list sets the number of seeds)")
    if args.lr is not None and not get_experiment(args.name).takes_lr:
        rep.error(f"argument --lr: {args.name} trains at learning rates of its own, so it takes no --lr")
    if args.store:
        if profile != "full":
            rep.error("argument --store: only the full profile is stored (add --profile full)")
        for option in ("seeds", "seed_list", "steps", "lr"):
            if getattr(args, option) is not None:
                flag = "--" + option.replace("_", "-")
                rep.error(f"argument --store: not with {flag} (the store holds the profile's settings)")
        if cache_dir is None:
            rep.error("argument --store: not with --no-cache (the store is filled from the cache)")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "grid":
        return _grid(parser, args)
    if args.command == "status":
        return _status(parser, args)
    if args.command == "store":
        return _store(parser, args)
    if args.command == "store-analyses":
        return _store_analyses(parser, args)
    if args.command == "list":
        print("\n".join(e.name for e in REGISTRY if args.chapter is None or args.chapter in e.chapters))
        return 0
    rep = parser.reproduce

    # everything is checked before anything trains
    from .profiles import resolve_profile

    try:
        profile = resolve_profile(args.profile)
    except ValueError as e:
        rep.error(str(e))
    device = _device_and_workers(rep, args)
    out = args.out if args.out is not None else Path("results") / f"{args.name}.json"
    if out.is_dir():
        rep.error(f"argument --out: {str(out)!r} is a folder; give a file name such as {str(out / 'result.json')!r}")
    problem = _writable_folder(out.parent)
    if problem:
        rep.error(f"argument --out: {problem}")
    cache_dir = _cache_folder(rep, args)
    _check_settings(rep, args, profile, cache_dir)

    import time

    import pandas as pd

    from . import plots
    from .experiments import EXPERIMENTS

    print(f"running {args.name} with the {profile} profile on {device}", file=sys.stderr)
    start = time.perf_counter()
    result = EXPERIMENTS[args.name](
        profile,
        seeds=args.seeds,
        seed_list=args.seed_list,
        steps=args.steps,
        lr=args.lr,
        device=device,
        progress=_progress(args),
        cache_dir=cache_dir,
        workers=args.workers,
        train=True,
    )
    if args.store:
        from .cache import machine
        from .stored import save

        run = {"wall_s": round(time.perf_counter() - start, 1), "device": device.type, "machine": machine()}
        manifest = save(args.name, profile, cache_dir=cache_dir, run=run)
        print(f"stored {len(manifest['models'])} models of {args.name}", file=sys.stderr)

    table = result.frame()
    varying = [c for c in CONFIG_COLUMNS if c in table and table[c].astype(str).nunique() > 1]
    table = table[[c for c in ["attention", *varying, *TABLE_COLUMNS[1:]] if c in table]]
    with pd.option_context("display.float_format", "{:.4g}".format, "display.width", 200):
        print(table.to_string(index=False))

    out.write_text(json.dumps(_json_safe(result.to_json()), indent=2) + "\n")
    figure_path = out.with_suffix(f".{result.figure_name}.png")
    plots.set_theme()
    result.figure().savefig(figure_path, dpi=120)
    print(f"wrote {out} and {figure_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
