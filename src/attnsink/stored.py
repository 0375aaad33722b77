"""The store: the ``full`` profile's trained models, kept in the repository so that the
published book, CI and Colab read them instead of training for hours.

``store/entries/KEY.pt`` holds one model (a results-cache entry, its training history
thinned to about two thousand points); ``store/manifests/NAME-PROFILE.json`` lists what the
experiment ``NAME`` needs under ``PROFILE``: per model its key, settings, steps taken and
whether it met the stopping rule, where it was trained, and per run that added models the
commit, machine, device and wall time. ``store/analyses/KEY.pt`` keeps the chapters' memoized
analyses of those models, each keyed by the code it computes from (:func:`save_analyses`,
:func:`analyses_status`); :func:`verify` checks every stored file's checksum. :func:`save`
writes the models after ``python -m attnsink reproduce NAME --store`` has trained;
:func:`status` compares the store with what each experiment asks for now (stored, missing, stale). Where the store is:
:func:`attnsink.cache.default_store_dir`.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from .cache import (
    TRAINING_VERSIONS,
    analysis_current,
    cache_key,
    default_store_dir,
    load_entry,
    put_in_store,
    read_config,
    store_entry_path,
    write_atomic,
)
from .experiments import EXPERIMENTS
from .experiments.base import _BODIES, planned_configs

COMMIT_ENV = "ATTNSINK_COMMIT"  # the commit, where the code runs outside its git checkout (a copied tree)
SUMMARY_FIELDS = ("attention", "n_layers", "n_heads", "mlp", "layer_norm", "causal", "lr", "steps", "seed")


def manifest_path(store_dir: str | Path, name: str, profile: str) -> Path:
    return Path(store_dir) / "manifests" / f"{name}-{profile}.json"


def read_manifest(store_dir: str | Path, name: str, profile: str) -> dict | None:
    """The manifest of ``name`` under ``profile``, or None when the store has none."""
    path = manifest_path(store_dir, name, profile)
    return json.loads(path.read_text()) if path.exists() else None


def commit() -> str:
    """The commit this code runs from (``-dirty`` when the tree has changes), or ``$ATTNSINK_COMMIT``."""
    if os.environ.get(COMMIT_ENV):
        return os.environ[COMMIT_ENV]
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=root, capture_output=True, text=True)
    except OSError:
        return "unknown"
    if head.returncode:
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _summary(config: dict) -> dict:
    """The fields of an entry's config a reader scans for (the full config is in the entry)."""
    out = {k: config[k] for k in SUMMARY_FIELDS if k in config}
    out["steps_cap"] = out.pop("steps", None)
    task = config.get("task") or {}
    for k in ("seq_len", "d_model", "bos", "residual", "default"):
        if k in task:
            out[k] = task[k]
    return out


def save(name: str, profile: str, *, cache_dir, store_dir=None, run: dict, partial: bool = False) -> dict:
    """Copy every model the experiment ``name`` needs under ``profile`` from the results cache
    into the store (those already stored stay as they are) and write its manifest; ``run``
    describes the run that trained them (``wall_s``, ``device``, ``machine``). A model in
    neither place raises ``ValueError``, or with ``partial`` is left out (``status`` counts it
    missing). Returns the manifest."""
    store_dir = Path(store_dir) if store_dir is not None else _repo_store()
    configs = planned_configs(name, profile)
    old = read_manifest(store_dir, name, profile) or {}
    here = commit()
    if here.endswith("-dirty"):
        raise ValueError(
            f"the library has uncommitted changes ({here}): commit them first, so that the manifest "
            "names the code that trained the models"
        )
    run = {"commit": here, "date": datetime.date.today().isoformat(), **run}
    run_id = len(old.get("runs", []))
    models, added = [], 0
    for config in configs:
        entry = load_entry(None, config, store_dir=store_dir)
        if entry:
            where = entry.get("meta", {}).get("run", None)
        else:
            entry = load_entry(cache_dir, config, store_dir=None) if cache_dir is not None else {}
            if not entry and partial:
                continue
            if not entry:
                raise ValueError(f"{name} ({profile}): a model is neither stored nor cached: {_summary(config)}")
            entry["meta"] = {**entry.get("meta", {}), "run": run_id}
            put_in_store(store_dir, config, entry)
            where, added = run_id, added + 1
        payload, meta = entry["payload"], entry.get("meta", {})
        record = {"key": cache_key(config), **_summary(config)}
        if "stopped_early" in payload:
            record.update(steps=int(payload["steps"]), stopped_early=bool(payload["stopped_early"]))
        record.update(device=meta.get("device"), machine=meta.get("machine"), trained=meta.get("trained"), run=where)
        models.append(record)
    runs = old.get("runs", []) + ([{**run, "models_added": added}] if added else [])
    manifest = {
        "experiment": name,
        "profile": profile,
        "training_versions": {kind: TRAINING_VERSIONS[kind] for kind in sorted({c["kind"] for c in configs})},
        "settings": asdict(_BODIES[name][1][profile].recipe()) | {"seeds": _BODIES[name][1][profile].seeds},
        "runs": runs,
        "models": models,
    }
    path = manifest_path(store_dir, name, profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    prune(store_dir)
    return manifest


def prune(store_dir: str | Path) -> list[Path]:
    """Delete the entries no manifest lists (stale ones, once their manifest was rewritten)."""
    store_dir = Path(store_dir)
    listed = set()
    for path in (store_dir / "manifests").glob("*.json"):
        listed |= {m["key"] for m in json.loads(path.read_text())["models"]}
    gone = [p for p in (store_dir / "entries").glob("*.pt") if p.stem not in listed]
    for p in gone:
        p.unlink()
    return gone


def save_analyses(cache_dir: str | Path, store_dir=None, *, read: set[str] | None = None) -> dict:
    """Copy every memoized analysis in ``cache_dir`` computed by the current code (see
    :func:`~attnsink.cache.analysis_current`) into the store's ``analyses/``, and delete the
    stored ones the current code no longer reads: those of older code, and, when ``read`` (the
    keys the run read from the store) is given, those neither read nor just computed. Run it
    after a full-profile build of the book from an empty cache (``make store-analyses``), so
    that only what the chapters ask for is kept. Returns :func:`analyses_status`."""
    store_dir = Path(store_dir) if store_dir is not None else _repo_store()
    cache_dir = Path(cache_dir)
    if not cache_dir.is_dir():
        raise ValueError(f"cache_dir must be a folder, got {str(cache_dir)!r}")
    written = set()
    for path in sorted(cache_dir.glob("*.pt")):
        try:
            config = read_config(path)
        except Exception:  # noqa: BLE001 - an unreadable file is not an analysis to keep
            continue
        if config.get("kind") == "memoized" and analysis_current(config):
            target = store_entry_path(store_dir, config)
            if not target.exists() or target.read_bytes() != path.read_bytes():
                write_atomic(target, path.read_bytes())
            written.add(target.stem)
    for path, config in _stored_analyses(store_dir):
        current = config is not None and analysis_current(config)
        if not current or (read is not None and path.stem not in read | written):
            path.unlink()
    return analyses_status(store_dir)


def _stored_analyses(store_dir: Path) -> list[tuple[Path, dict | None]]:
    """Every stored analysis, with its config (None when the file is unreadable)."""
    out = []
    for path in sorted((store_dir / "analyses").glob("*.pt")):
        try:
            out.append((path, read_config(path)))
        except ValueError:
            out.append((path, None))
    return out


def analyses_status(store_dir=None) -> dict:
    """The stored analyses: ``current`` (how many the current code reads, and their ``MB``),
    ``set_aside`` (how many were stored by other code: an edit since to what they compute
    from) and ``by_function``, per analysis function (``module.function``) the entries the
    current code reads and their MB: what an edit to that function alone would store again."""
    store_dir = Path(store_dir) if store_dir is not None else _repo_store()
    now, other = [], []
    by_function: dict[str, dict] = {}
    for path, config in _stored_analyses(store_dir):
        current = config is not None and analysis_current(config)
        (now if current else other).append(path)
        if current:
            row = by_function.setdefault(f"{config['module']}.{config['function']}", {"entries": 0, "bytes": 0})
            row["entries"] += 1
            row["bytes"] += path.stat().st_size
    return {
        "current": len(now),
        "MB": round(sum(p.stat().st_size for p in now) / 2**20, 1),
        "set_aside": len(other),
        "by_function": {
            name: {"entries": row["entries"], "MB": round(row["bytes"] / 2**20, 2)}
            for name, row in sorted(by_function.items())
        },
    }


def verify(store_dir=None) -> list[str]:
    """Every stored file whose checksum, format or key is wrong, as one line each naming the
    file and the command that restores it (an empty list when all are whole)."""
    store_dir = Path(store_dir) if store_dir is not None else _repo_store()
    owner = {}
    for path in sorted((store_dir / "manifests").glob("*.json")):
        manifest = json.loads(path.read_text())
        for m in manifest["models"]:
            owner[m["key"]] = f"{manifest['experiment']} --profile {manifest['profile']}"
    problems = []
    for folder in ("entries", "analyses"):
        for path in sorted((store_dir / folder).glob("*.pt")):
            try:
                if cache_key(read_config(path)) != path.stem:
                    raise ValueError("its config is not the one its name says")
            except Exception as e:  # noqa: BLE001 - any unreadable file is reported, not raised
                again = (
                    f"or retrain it: python -m attnsink reproduce {owner[path.stem]} --store"
                    if path.stem in owner
                    else "or store the analyses again: make store-analyses"
                )
                problems.append(f"{path}: {e}; restore it: git checkout -- {path}, {again}")
    return problems


def _repo_store() -> Path:
    store_dir = default_store_dir()
    if store_dir is None:
        store_dir = Path(__file__).resolve().parents[2] / "store"
    return store_dir


def status(profile: str = "full", *, store_dir=None, names=None) -> pd.DataFrame:
    """Per experiment: how many models ``profile`` needs, how many are stored, missing, and
    stale (listed in the manifest but no longer asked for: another training version or
    setting), and the store's size on disk in MB."""
    store_dir = Path(store_dir) if store_dir is not None else _repo_store()
    rows = []
    for name in names or sorted(EXPERIMENTS):
        configs = planned_configs(name, profile)
        keys = {cache_key(c) for c in configs}
        stored = sum(store_entry_path(store_dir, c).exists() for c in configs)
        manifest = read_manifest(store_dir, name, profile) or {"models": []}
        stale = sum(m["key"] not in keys for m in manifest["models"])
        size = sum(p.stat().st_size for c in configs if (p := store_entry_path(store_dir, c)).exists())
        rows.append(
            {
                "experiment": name,
                "profile": profile,
                "models": len(configs),
                "stored": stored,
                "missing": len(configs) - stored,
                "stale": stale,
                "MB": round(size / 2**20, 1),
            }
        )
    return pd.DataFrame(rows)


STEPS_RTOL = 0.1
"""How far a retrained model's steps to the stopping rule may be from the stored model's.
Measured: the engine gives the same steps with 1 and 2 CPU threads; the same seeds on an
H200 and on a two-core CPU differed by at most 2.4% (relu seeds 0-2: 667, 649, 665 against
678, 640, 653; softmax seed 2: 733 against 751); the tolerance leaves four times that."""


def compare_with_store(runs: list[dict], name: str, profile: str = "full", *, store_dir=None) -> pd.DataFrame:
    """The runs of a fresh ``reproduce NAME`` (its JSON's ``runs``) beside the stored models of
    the same rule, shape and seed: one row each with both step counts, their ratio, and
    ``ok`` when the steps agree within :data:`STEPS_RTOL` and both met the stopping rule, or
    both did not."""
    store_dir = Path(store_dir) if store_dir is not None else _repo_store()
    manifest = read_manifest(store_dir, name, profile)
    if manifest is None:
        raise ValueError(f"the store has no manifest for {name} ({profile})")
    fields = ("attention", "n_layers", "n_heads", "mlp", "layer_norm", "seed")
    index = {tuple(m.get(f) for f in fields): m for m in manifest["models"]}
    rows = []
    for run in runs:
        model = index.get(tuple(run.get(f) for f in fields))
        if model is None or "steps" not in model:
            continue
        ratio = run["steps"] / model["steps"]
        same_stop = bool(run["stopped_early"]) == bool(model["stopped_early"])
        rows.append(
            {
                **{f: run[f] for f in ("attention", "seed")},
                "steps": run["steps"],
                "stored_steps": model["steps"],
                "ratio": ratio,
                "stored_on": model.get("device"),
                "ok": same_stop and abs(ratio - 1) <= STEPS_RTOL,
            }
        )
    return pd.DataFrame(rows)
