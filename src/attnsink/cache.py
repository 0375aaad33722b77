"""A small on-disk cache for trained models, so chapters and reruns do not train twice,
and the read-only store of the ``full`` profile's models that the repository carries.

An entry's key is a hash of what produced it: the training call's full config (task,
architecture, recipe, seed) and the *training version* of its kind
(:data:`TRAINING_VERSIONS`). The version is declared, not computed from the source: a
refactor, a comment or a new option keeps every entry, and ``tests/test_golden.py`` pins the
numbers the training code produces, so a change that moves any of them fails that test
until the version is bumped, which re-keys (and so marks stale) every entry of that kind.
The device is not in the key: a model is the same run wherever it was trained, and where
it was trained is recorded beside it (:func:`entry_meta`).

Writes are atomic (a temporary file, then a rename); every read checks a checksum and the
stored config, and a truncated or corrupted entry is reported with a warning, recomputed
and rewritten. :func:`load` looks in the store (:func:`default_store_dir`) first, then in
the local cache (:func:`default_cache_dir`).

The store also keeps the results of :func:`memoized` analyses of its models (the ablations
and certified distances that take minutes under ``full``), in ``analyses/KEY.pt``. Their keys
hold a hash of the code each one computes from (:func:`attnsink.codehash.function_code`), so an
edit that could move one of its numbers sets that analysis aside (``status`` says so), and a
chapter recomputes it until ``make store-analyses`` stores it again; an edit to a docstring, a
figure or another analysis sets nothing aside.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import platform
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from . import codehash
from .engine import train_seeds
from .spec import RunSpec
from .task import TriggerTask
from .training import TrainResult, resolve_device

CACHE_ENV = "ATTNSINK_CACHE_DIR"
STORE_ENV = "ATTNSINK_STORE"

MAGIC = b"ATSNK001"  # format marker and version
_DIGEST = 32  # bytes of a sha256 digest
STORE_HISTORY_POINTS = 2000
"""A stored model keeps at most about this many entries of its training history (every k-th
step and the last one): a 50,000-step history of a 4 x 4 model would be 4 MB otherwise."""


class CacheWarning(UserWarning):
    """A cache entry could not be used and was recomputed."""


class MissingResultsError(RuntimeError):
    """Models that are neither stored nor cached were asked for where training is not allowed."""


TRAINING_VERSIONS = {"train_seeds": 1, "gpt": 2}
"""The training version of each kind of entry: the trigger-task models (task, attention rules,
model, trainers, engine) and the language models (:mod:`attnsink.lm`, attention rules). Bump one
when a change moves a trained number (``tests/test_golden.py`` says so, and how to write the new
values): every entry of that kind is then stale, and ``python -m attnsink status`` lists it. A
change that moves one rule's numbers bumps that rule's version instead (:data:`RULE_VERSIONS`).

History of ``gpt``: 2, weight decay on the linear maps' matrices only, and the heads measured
during training on the positions the model trains on (the last position of a window never trains)."""


RULE_VERSIONS: dict[tuple[str, str], int] = {}
"""The training version of one attention rule within a kind, ``(kind, rule) -> version``, for
a change that moves the numbers of that rule only: bump it here (a rule not listed is at
version 1) and only that rule's entries of that kind are stale. ``tests/test_golden.py`` says
which to bump: this one when the moved numbers are one rule's, :data:`TRAINING_VERSIONS`
when they are the whole kind's, and neither for a new rule, option or experiment, whose golden
runs are only added."""


def cache_key(config: dict) -> str:
    """Key of an entry: the config (which must be JSON-serialisable), its kind's training
    version and, when it is above 1, its rule's (:data:`RULE_VERSIONS`)."""
    kind = config.get("kind")
    blob = {"config": config, "training_version": TRAINING_VERSIONS.get(kind)}
    rule_version = RULE_VERSIONS.get((kind, config.get("attention")), 1)
    if rule_version != 1:  # version 1 leaves the key as it was before rules had versions
        blob["rule_version"] = rule_version
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:32]


def machine() -> str:
    """This machine in words: processor, cores and, when one is visible, the GPU."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return f"{cpu}, {os.cpu_count()} cores{gpu}"


def entry_meta(device: torch.device | str) -> dict:
    """What an entry records about where and when it was trained."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {"device": torch.device(device).type, "machine": machine(), "torch": str(torch.__version__), "trained": now}


def _encode(config: dict, payload: Any, meta: dict | None = None) -> bytes:
    buffer = io.BytesIO()
    torch.save({"config": json.dumps(config, sort_keys=True), "payload": payload, "meta": meta or {}}, buffer)
    body = buffer.getvalue()
    return MAGIC + hashlib.sha256(body).digest() + body


def _checked_entry(data: bytes) -> dict:
    """The entry an entry file's bytes hold, once its format and checksum are checked."""
    if len(data) < len(MAGIC) + _DIGEST or not data.startswith(MAGIC):
        raise ValueError("not a cache file of this format, or truncated")
    digest, body = data[len(MAGIC) : len(MAGIC) + _DIGEST], data[len(MAGIC) + _DIGEST :]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError("checksum mismatch (truncated or corrupted)")
    return torch.load(io.BytesIO(body), weights_only=True)


def _decode_entry(data: bytes, config: dict) -> dict:
    entry = _checked_entry(data)
    if entry["config"] != json.dumps(config, sort_keys=True):
        raise ValueError("stored config differs from the requested one")
    return entry


def _decode(data: bytes, config: dict) -> Any:
    return _decode_entry(data, config)["payload"]


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


def default_store_dir() -> Path | None:
    """The store of trained models the repository carries: ``$ATTNSINK_STORE``, else the
    ``store/`` folder of the checkout this library runs from (None when there is none, as for
    a library installed without its repository). An empty variable turns the store off."""
    value = os.environ.get(STORE_ENV)
    if value is not None:
        return Path(value) if value else None
    folder = Path(__file__).resolve().parents[2] / "store"
    return folder if folder.is_dir() else None


STORE_READS_ENV = "ATTNSINK_STORE_READS"
"""A file: when set, every memoized analysis read from the store appends its key there (so that
``make store-analyses`` keeps what the chapters read and drops what nobody asks for)."""


def analysis_current(config: dict) -> bool:
    """Whether a memoized analysis's entry was computed by the code as it is now: its
    ``code`` is :func:`attnsink.codehash.function_code` of its function today (False for a
    function that no longer exists)."""
    try:
        return config.get("code") == codehash.function_code(config["module"], config["function"])
    except (KeyError, ValueError, OSError, SyntaxError):
        return False


def store_entry_path(store_dir: str | Path, config: dict) -> Path:
    """Where the store keeps ``config``'s entry: ``entries/KEY.pt`` for a trained model,
    ``analyses/KEY.pt`` for a :func:`memoized` analysis (its key holds its code's hash)."""
    if config.get("kind") == "memoized":
        return Path(store_dir) / "analyses" / f"{cache_key(config)}.pt"
    return Path(store_dir) / "entries" / f"{cache_key(config)}.pt"


def read_config(path: str | Path) -> dict:
    """The config an entry file was written for (checked as :func:`load` checks it)."""
    try:
        entry = _checked_entry(Path(path).read_bytes())
    except ValueError as e:
        raise ValueError(f"{path} is not a whole cache file of this format ({e})") from None
    return json.loads(entry["config"])


def _read(path: Path, config: dict) -> dict | None:
    if not path.exists():
        return None
    try:
        return _decode_entry(path.read_bytes(), config)
    except Exception as e:  # any unreadable entry: say so; the caller recomputes (and overwrites it, in a cache)
        warnings.warn(f"cache entry {path} is unusable ({e}); recomputing it", CacheWarning, stacklevel=3)
        return None


def load(cache_dir: str | Path | None, config: dict, *, store_dir: str | Path | None | bool = True) -> Any | None:
    """The payload for ``config``: from the store (``store_dir``; True: :func:`default_store_dir`)
    when it holds it, else from ``cache_dir``; None when neither has a usable one (with a warning
    for an unusable one)."""
    return load_entry(cache_dir, config, store_dir=store_dir).get("payload")


def load_entry(cache_dir: str | Path | None, config: dict, *, store_dir: str | Path | None | bool = True) -> dict:
    """Like :func:`load`, but the whole entry: ``payload``, ``meta`` and ``where`` ("store" or
    "cache"); an empty dict when there is none."""
    store_dir = default_store_dir() if store_dir is True else store_dir
    for where, path in (
        ("store", store_entry_path(store_dir, config) if store_dir else None),
        ("cache", entry_path(cache_dir, config) if cache_dir is not None else None),
    ):
        entry = _read(path, config) if path is not None else None
        if entry is not None:
            if where == "store" and config.get("kind") == "memoized" and os.environ.get(STORE_READS_ENV):
                with open(os.environ[STORE_READS_ENV], "a") as log:
                    log.write(path.stem + "\n")
            return {**entry, "where": where}
    return {}


def put(cache_dir: str | Path, config: dict, payload: Any, meta: dict | None = None) -> None:
    """Keep ``payload`` (tensors, numbers, strings, lists and dicts: it is read back with
    ``weights_only=True``) for ``config`` in the local cache, atomically, with ``meta`` (where
    and when it was trained) beside it."""
    write_atomic(entry_path(cache_dir, config), _encode(config, payload, meta))


def thin_history(payload: dict, points: int = STORE_HISTORY_POINTS) -> dict:
    """``payload`` with its ``history`` (arrays over steps, first axis) cut to every k-th entry
    and the last one, at most about ``points`` of them; ``history["step"]`` says which remain.
    Every array is copied, so none drags along the buffer it was a view of."""
    history = payload.get("history")
    if not history:
        return payload
    n = len(next(iter(history.values())))
    stride = max(1, -(-n // points))
    keep = torch.arange(0, n, stride)
    if n and keep[-1] != n - 1:
        keep = torch.cat([keep, torch.tensor([n - 1])])
    return {**payload, "history": {k: torch.as_tensor(v)[keep].clone() for k, v in history.items()}}


def put_in_store(store_dir: str | Path, config: dict, entry: dict) -> Path:
    """Copy an entry (``payload`` and ``meta``, as :func:`load_entry` returns it) into the store,
    its history thinned (:func:`thin_history`). Returns the file written."""
    path = store_entry_path(store_dir, config)
    write_atomic(path, _encode(config, thin_history(entry["payload"]), entry.get("meta")))
    return path


def cached(cache_dir: str | Path | None, config: dict, compute: Callable[[], Any]) -> Any:
    """``compute()``, or its stored result for ``config`` in ``cache_dir`` (no cache when None)."""
    if cache_dir is None:
        return compute()
    payload = load(cache_dir, config)
    if payload is None:
        payload = compute()
        put(cache_dir, config, payload)
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
            put_seed(cache_dir, base, r)


def base_config(task: TriggerTask, options: dict) -> tuple[dict, dict]:
    """The config shared by the seeds of one :func:`~attnsink.engine.train_seeds` call (the
    key without the seed), and the call's options with their defaults filled in."""
    spec = RunSpec.from_options(task, options)
    return spec.base_config(), spec.options()


def seed_configs(task: TriggerTask, seeds: list[int], **options) -> list[dict]:
    """The entries' configs of one training call (train_seeds' options), one per seed."""
    base, _ = base_config(task, options)
    return [{**base, "seed": s} for s in seeds]


def cache_lookup(
    task: TriggerTask, seeds: list[int], *, cache_dir: str | Path | None, device: torch.device, **options
) -> tuple[dict, dict[int, TrainResult], list[int]]:
    """The seeds of one training call already in the store or the cache, and those missing.

    Returns ``(base, found, missing)``: ``base["key"]`` is the entries' key without the seed
    (``base["options"]`` are train_seeds' keyword arguments, defaults filled in, so the same
    run asked for in two ways is found once; ``base["device"]`` is where missing seeds would
    train), ``found`` maps a stored or cached seed to its result.
    """
    base, options = base_config(task, options)
    found = {}
    for s in seeds:
        payload = load(cache_dir, {**base, "seed": s})
        if payload is not None:
            found[s] = TrainResult.from_payload(payload)
    return {"key": base, "options": options, "device": device.type}, found, [s for s in seeds if s not in found]


def put_seed(cache_dir: str | Path | None, base: dict, result: TrainResult) -> None:
    """Keep one seed's result under the key ``base`` of :func:`cache_lookup` (no-op without a cache)."""
    if cache_dir is not None:
        put(cache_dir, {**base["key"], "seed": result.seed}, result.to_payload(), entry_meta(base["device"]))


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

    A result's key holds the function's name, its arguments (a model by its weights) and
    :func:`attnsink.codehash.function_code`, a hash of the code it computes from (its own and
    every definition of the library it reaches), so an edit that could
    change what it returns recomputes it, and an edit to a docstring, a comment, another
    function, a figure or the command line does not. The results must be what the cache stores
    (tensors, numbers, strings, lists, dicts). ``cache_dir=True`` (the default) means
    :func:`default_cache_dir` at call time; None turns the memo off.
    """

    def call(*args, **kwargs):
        folder = default_cache_dir() if cache_dir is True else cache_dir
        config = {
            "kind": "memoized",
            "module": fn.__module__,
            "function": fn.__qualname__,
            "code": codehash.function_code(fn.__module__, fn.__qualname__),
            "args": _fingerprint(list(args)),
            "kwargs": _fingerprint(kwargs),
        }
        return cached(folder, config, lambda: fn(*args, **kwargs))

    call.__wrapped__ = fn
    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return call
