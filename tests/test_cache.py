import warnings
from dataclasses import asdict

import numpy as np
import pytest
import torch

from attnsink import TriggerTask, cache
from attnsink.cache import CacheWarning, train_seeds_cached

TASK = TriggerTask(d_model=8, seq_len=8)
KW = {"steps": 20, "lr": 1e-2, "batch_size": 16, "stop_linf": None}


def run(tmp_path, seeds=(0, 1), **kw):
    return train_seeds_cached(TASK, list(seeds), cache_dir=tmp_path, attention="softmax", **{**KW, **kw})


def test_round_trip_and_reuse(tmp_path, monkeypatch):
    first = run(tmp_path)
    assert len(list(tmp_path.glob("*.pt"))) == 2 and not list(tmp_path.glob("*.tmp"))
    calls = []
    monkeypatch.setattr(cache, "train_seeds", lambda *a, **k: calls.append(1) or [])
    again = run(tmp_path)
    assert not calls  # nothing retrained
    for a, b in zip(first, again):
        assert torch.equal(a.model.W_Q, b.model.W_Q) and a.steps == b.steps
        np.testing.assert_array_equal(a.history["loss"], b.history["loss"])


def test_only_missing_seeds_are_trained(tmp_path):
    run(tmp_path, seeds=(0,))
    fresh = run(tmp_path / "other", seeds=(0, 1))
    mixed = run(tmp_path, seeds=(0, 1))
    for a, b in zip(fresh, mixed):
        torch.testing.assert_close(a.model.W_O, b.model.W_O)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupted_entry_is_recomputed_with_a_warning(tmp_path, damage):
    (good,) = run(tmp_path, seeds=(0,))
    (path,) = tmp_path.glob("*.pt")
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    elif damage == "garbage":
        path.write_bytes(b"not a cache entry at all" * 10)
    else:
        path.write_bytes(b"")
    with pytest.warns(CacheWarning, match="unusable"):
        (again,) = run(tmp_path, seeds=(0,))
    assert torch.equal(again.model.W_Q, good.model.W_Q)  # recomputed, same numbers
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the entry was rewritten: it now loads without a warning
        assert cache.load(tmp_path, cache_config(0)) is not None


def cache_config(seed):
    return {
        "kind": "train_seeds",
        "task": asdict(TASK),
        "attention": "softmax",
        "n_heads": 1,
        "n_layers": 1,
        "mlp": False,
        "layer_norm": False,
        "seed": seed,
        **KW,
    }


def test_changed_config_never_reads_a_stale_entry(tmp_path):
    base = cache_config(0)
    cache.put(tmp_path, base, {"value": torch.tensor(1.0)})
    for change in ({"lr": 2e-2}, {"seed": 1}, {"steps": 21}, {"attention": "relu"}):
        assert cache.load(tmp_path, {**base, **change}) is None
    assert cache.load(tmp_path, base)["value"].item() == 1.0


def test_key_depends_on_the_training_version_of_its_kind(monkeypatch):
    trigger, gpt = {"kind": "train_seeds", "a": 1}, {"kind": "gpt", "a": 1}
    before = cache.cache_key(trigger), cache.cache_key(gpt)
    monkeypatch.setitem(cache.TRAINING_VERSIONS, "train_seeds", cache.TRAINING_VERSIONS["train_seeds"] + 1)
    assert cache.cache_key(trigger) != before[0] and cache.cache_key(gpt) == before[1]


def test_the_key_holds_no_device_and_the_entry_says_where_it_trained(tmp_path):
    (r,) = run(tmp_path, seeds=(0,))
    base, found, missing = cache.cache_lookup(
        TASK, [0], cache_dir=tmp_path, device=torch.device("cpu"), attention="softmax", **KW
    )
    assert "device" not in base["key"] and not missing
    entry = cache.load_entry(tmp_path, {**base["key"], "seed": 0}, store_dir=None)
    assert entry["where"] == "cache" and entry["meta"]["device"] == "cpu" and "cores" in entry["meta"]["machine"]


def test_entry_under_the_wrong_key_is_rejected(tmp_path):
    a, b = cache_config(0), cache_config(1)
    cache.put(tmp_path, a, {"value": torch.tensor(1.0)})
    cache.entry_path(tmp_path, a).rename(cache.entry_path(tmp_path, b))  # e.g. a copied file
    with pytest.warns(CacheWarning, match="config differs"):
        assert cache.load(tmp_path, b) is None


def test_no_cache_dir_means_no_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train_seeds_cached(TASK, [0], cache_dir=None, attention="relu", **KW)
    assert not list(tmp_path.rglob("*.pt"))


def test_memoized_keeps_results_keyed_by_the_weights(tmp_path):
    from attnsink import AttentionModel
    from attnsink.cache import memoized

    calls = []

    def norm_of_w_q(model, task, *, scale=1.0):
        calls.append(1)
        return {"value": model.W_Q.detach().norm() * scale}

    f = memoized(norm_of_w_q, cache_dir=tmp_path)
    a, b = AttentionModel(8, seed=0), AttentionModel(8, seed=1)
    first = f(a, TASK, scale=2.0)
    assert torch.equal(f(a, TASK, scale=2.0)["value"], first["value"]) and len(calls) == 1  # read back
    f(b, TASK, scale=2.0)
    f(a, TASK, scale=3.0)
    f(a, TriggerTask(d_model=8, seq_len=9), scale=2.0)
    assert len(calls) == 4  # other weights, other arguments, another task: computed again
    with torch.no_grad():
        a.W_Q.add_(1.0)
    f(a, TASK, scale=2.0)
    assert len(calls) == 5  # the same model object with new weights is a new key
    memoized(norm_of_w_q, cache_dir=None)(a, TASK)
    assert len(calls) == 6 and len(list(tmp_path.glob("*.pt"))) == 5  # None: no cache
    with pytest.raises(ValueError, match="memoize"):
        f(object(), TASK)
