"""A small on-disk cache for trained models, so chapters and reruns do not train twice.

An entry's key is a hash of what produced it: the experiment's full config, the seed,
the library version and a hash of the source of the modules that train models (task,
attention rules, model, trainer), so editing them never reads a stale result, and
editing anything else (figures, metrics, bounds, experiments' analysis) keeps every
entry. Writes are atomic (a temporary file, then a rename); every read checks a checksum
and the stored config, and a truncated or corrupted entry is reported with a warning,
recomputed and rewritten.

:func:`train_seeds_cached` is the fast trainer behind the cache: what every experiment
calls. Where the cache lives: :func:`default_cache_dir`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import asdict
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch

from .engine import train_seeds
from .model import ARCH_DEFAULTS
from .task import TriggerTask
from .train import TrainResult, resolve_device

CACHE_ENV = "ATTNSINK_CACHE_DIR"
RECIPE_DEFAULTS = {"batch_size": 128, "stop_linf": 5e-3}  # train_seeds' defaults; steps and lr have none

MAGIC = b"ATSNK001"  # format marker and version
_DIGEST = 32  # bytes of a sha256 digest


class CacheWarning(UserWarning):
    """A cache entry could not be used and was recomputed."""


TRAINING_MODULES = ("task.py", "attention.py", "model.py", "train.py", "engine.py")
"""The modules that decide a trained model's numbers: the only cached results. Editing a
figure, a metric, a bound or an experiment's analysis never retrains anything."""


@lru_cache(maxsize=4)
def source_hash(root: str | Path | None = None) -> str:
    """sha256 over the source of :data:`TRAINING_MODULES` (in the library's folder, or ``root``):
    any edit to them changes every key."""
    folder = Path(root) if root is not None else Path(__file__).parent
    h = hashlib.sha256()
    for name in TRAINING_MODULES:
        h.update(name.encode())
        h.update((folder / name).read_bytes())
    return h.hexdigest()


@lru_cache(maxsize=1)
def library_version() -> str:
    """The installed version of ``attnsink`` ("unknown" when it runs from an uninstalled tree)."""
    try:
        return version("attnsink")
    except PackageNotFoundError:
        return "unknown"


def cache_key(config: dict) -> str:
    """Key of an entry: the config (which must be JSON-serialisable), version and source hash."""
    blob = json.dumps({"config": config, "version": library_version(), "source": source_hash()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _encode(config: dict, payload: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save({"config": json.dumps(config, sort_keys=True), "payload": payload}, buffer)
    body = buffer.getvalue()
    return MAGIC + hashlib.sha256(body).digest() + body


def _decode(data: bytes, config: dict) -> Any:
    if len(data) < len(MAGIC) + _DIGEST or not data.startswith(MAGIC):
        raise ValueError("not a cache file of this format, or truncated")
    digest, body = data[len(MAGIC) : len(MAGIC) + _DIGEST], data[len(MAGIC) + _DIGEST :]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError("checksum mismatch (truncated or corrupted)")
    entry = torch.load(io.BytesIO(body), weights_only=True)
    if entry["config"] != json.dumps(config, sort_keys=True):
        raise ValueError("stored config differs from the requested one")
    return entry["payload"]


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def entry_path(cache_dir: str | Path, config: dict) -> Path:
    return Path(cache_dir) / f"{cache_key(config)}.pt"


def load(cache_dir: str | Path, config: dict) -> Any | None:
    """The stored payload for ``config``, or None when there is none or it is unusable (with a warning)."""
    path = entry_path(cache_dir, config)
    if not path.exists():
        return None
    try:
        return _decode(path.read_bytes(), config)
    except Exception as e:  # any unreadable entry: say so; the caller recomputes and overwrites it
        warnings.warn(f"cache entry {path} is unusable ({e}); recomputing it", CacheWarning, stacklevel=2)
        return None


def store(cache_dir: str | Path, config: dict, payload: Any) -> None:
    """Store ``payload`` (tensors, numbers, strings, lists and dicts: it is read back with
    ``weights_only=True``) for ``config``, atomically."""
    write_atomic(entry_path(cache_dir, config), _encode(config, payload))


def cached(cache_dir: str | Path | None, config: dict, compute: Callable[[], Any]) -> Any:
    """``compute()``, or its stored result for ``config`` in ``cache_dir`` (no cache when None)."""
    if cache_dir is None:
        return compute()
    payload = load(cache_dir, config)
    if payload is None:
        payload = compute()
        store(cache_dir, config, payload)
    return payload


def default_cache_dir() -> Path | None:
    """Where chapters cache trained models: ``$ATTNSINK_CACHE_DIR``, else ``~/.cache/attnsink``.

    Setting the variable to an empty string turns the cache off.
    """
    value = os.environ.get(CACHE_ENV)
    if value is None:
        return Path.home() / ".cache" / "attnsink"
    return Path(value) if value else None


def train_seeds_cached(
    task: TriggerTask,
    seeds: list[int],
    *,
    cache_dir: str | Path | None,
    device: torch.device | str | None = None,
    progress: bool = False,
    **options,
) -> list[TrainResult]:
    """:func:`attnsink.engine.train_seeds`, reading each seed's result from the cache when it
    is there and training the missing seeds together (then storing them).

    ``options`` are train_seeds' architecture (``attention``, ``n_heads``, ...) and recipe
    (``steps``, ``lr``, ``batch_size``, ``stop_linf``); an entry's key holds all of them,
    defaults filled in, so the same run asked for in two ways is found once.
    """
    dev = resolve_device(device)
    base, found, missing = cache_lookup(task, seeds, cache_dir=cache_dir, device=dev, **options)
    train_missing(task, (base, found, missing), cache_dir=cache_dir, device=dev, progress=progress)
    return [found[s] for s in seeds]


def train_missing(
    task: TriggerTask, lookup: tuple, *, cache_dir: str | Path | None, device: torch.device, progress: bool = False
) -> None:
    """Train the missing seeds of a :func:`cache_lookup` together, here, and store each one
    (in ``found`` and in the cache)."""
    base, found, missing = lookup
    if missing:
        for r in train_seeds(task, missing, device=device, progress=progress, **base["options"]):
            found[r.seed] = r
            store_seed(cache_dir, base, r)


def cache_lookup(
    task: TriggerTask, seeds: list[int], *, cache_dir: str | Path | None, device: torch.device, **options
) -> tuple[dict, dict[int, TrainResult], list[int]]:
    """The seeds of one training call already in the cache, and those missing.

    Returns ``(base, found, missing)``: ``base`` is the entries' key without the seed (its
    ``options`` are train_seeds' keyword arguments, defaults filled in, so the same run asked
    for in two ways is found once), ``found`` maps a cached seed to its result.
    """
    known = {*ARCH_DEFAULTS, "steps", "lr", *RECIPE_DEFAULTS}
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown training options {sorted(unknown)}; expected some of {sorted(known)}")
    for name in ("steps", "lr"):
        if name not in options:
            raise ValueError(f"{name} must be given")
    options = {**ARCH_DEFAULTS, **RECIPE_DEFAULTS, **options}
    base = {"kind": "train_seeds", "task": asdict(task), "device": device.type, **options}
    found = {}
    if cache_dir is not None:
        for s in seeds:
            payload = load(cache_dir, {**base, "seed": s})
            if payload is not None:
                found[s] = TrainResult.from_payload(payload)
    return {"key": base, "options": options}, found, [s for s in seeds if s not in found]


def store_seed(cache_dir: str | Path | None, base: dict, result: TrainResult) -> None:
    """Keep one seed's result under the key ``base`` of :func:`cache_lookup` (no-op without a cache)."""
    if cache_dir is not None:
        store(cache_dir, {**base["key"], "seed": result.seed}, result.to_payload())


def _fingerprint(value) -> Any:
    """A JSON-able stand-in for an argument of a memoized function: a model by its config and
    a hash of its weights, a tensor by a hash of its values, a dataclass by its fields."""
    import dataclasses

    if isinstance(value, torch.nn.Module):
        h = hashlib.sha256()
        for name, tensor in sorted(value.state_dict().items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        config = getattr(value, "config", type(value).__name__)
        return {"module": config, "weights": h.hexdigest()}
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        return {"tensor": str(t.dtype), "shape": list(t.shape), "sha": hashlib.sha256(t.numpy().tobytes()).hexdigest()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {type(value).__name__: dataclasses.asdict(value)}
    if isinstance(value, (list, tuple)):
        return [_fingerprint(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _fingerprint(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"cannot memoize a call with an argument of type {type(value).__name__}")


def memoized(fn: Callable, *, cache_dir: str | Path | None | bool = True) -> Callable:
    """``fn`` with its results kept in the results cache: for deterministic, expensive analysis
    of trained models (certified hull distances, the terms of the theorems' inequalities).

    A result's key holds the function's name, its arguments (a model by its weights) and a
    hash of the source of the function's own module besides the training modules, so an edit
    to that module recomputes it and an edit anywhere else does not. The results must be
    what the cache stores (tensors, numbers, strings, lists, dicts). ``cache_dir=True`` (the
    default) means :func:`default_cache_dir` at call time; None turns the memo off.
    """
    import inspect

    source = hashlib.sha256(Path(inspect.getsourcefile(fn)).read_bytes()).hexdigest()

    def call(*args, **kwargs):
        folder = default_cache_dir() if cache_dir is True else cache_dir
        config = {
            "kind": "memoized",
            "function": f"{fn.__module__}.{fn.__qualname__}",
            "function_source": source,
            "args": _fingerprint(list(args)),
            "kwargs": _fingerprint(kwargs),
        }
        return cached(folder, config, lambda: fn(*args, **kwargs))

    call.__wrapped__ = fn
    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return call
