"""The store of full-profile models: read before the cache, written with a manifest, counted by
``status``, never trained into from a chapter of the full profile."""

import ast
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from attnsink import TriggerTask, cache, codehash, stored
from attnsink.__main__ import main
from attnsink.cache import MissingResultsError, seed_configs, train_seeds_cached
from attnsink.experiments import single_layer, text_lm
from attnsink.profiles import resolve_training

TASK = TriggerTask(d_model=8, seq_len=8)
KW = {"attention": "softmax", "steps": 30, "lr": 1e-2, "batch_size": 16, "stop_linf": None}


def tiny(tmp_path, seeds=(0, 1)):
    return train_seeds_cached(TASK, list(seeds), cache_dir=tmp_path / "cache", progress=False, **KW)


@pytest.fixture
def planned(monkeypatch):
    """Make the experiment single_layer ask for two tiny models."""
    configs = seed_configs(TASK, [0, 1], **KW)
    monkeypatch.setattr(stored, "planned_configs", lambda name, profile: configs)
    return configs


@pytest.fixture(autouse=True)
def committed(monkeypatch):
    """The tests' saves name a commit, wherever the tree stands."""
    monkeypatch.setenv(stored.COMMIT_ENV, "0123456789ab")


def test_save_status_and_prune(tmp_path, planned, monkeypatch):
    store_dir = tmp_path / "store"
    assert stored.status(store_dir=store_dir, names=["single_layer"]).iloc[0]["missing"] == 2
    tiny(tmp_path, seeds=(0,))
    manifest = stored.save(
        "single_layer",
        "full",
        cache_dir=tmp_path / "cache",
        store_dir=store_dir,
        run={"wall_s": 1.0, "device": "cpu"},
        partial=True,
    )
    assert len(manifest["models"]) == 1 and manifest["runs"][0]["models_added"] == 1
    with pytest.raises(ValueError, match="neither stored nor cached"):
        stored.save("single_layer", "full", cache_dir=tmp_path / "cache", store_dir=store_dir, run={})
    tiny(tmp_path)
    manifest = stored.save(
        "single_layer", "full", cache_dir=tmp_path / "cache", store_dir=store_dir, run={"wall_s": 2.0, "device": "cpu"}
    )
    (model,) = [m for m in manifest["models"] if m["seed"] == 0]
    assert model["steps"] == 30 and model["stopped_early"] is False and model["device"] == "cpu"
    assert model["run"] == 0 and len(manifest["runs"]) == 2  # seed 0 came from the first run
    on_disk = json.loads(stored.manifest_path(store_dir, "single_layer", "full").read_text())
    assert on_disk == manifest and on_disk["settings"]["seeds"] == 10
    row = stored.status(store_dir=store_dir, names=["single_layer"]).iloc[0]
    assert (row.models, row.stored, row.missing, row.stale) == (2, 2, 0, 0)
    # another training version: both models are stale and missing; storing anew prunes them
    monkeypatch.setitem(cache.TRAINING_VERSIONS, "train_seeds", cache.TRAINING_VERSIONS["train_seeds"] + 1)
    row = stored.status(store_dir=store_dir, names=["single_layer"]).iloc[0]
    assert (row.stored, row.missing, row.stale) == (0, 2, 2)
    tiny(tmp_path)
    stored.save("single_layer", "full", cache_dir=tmp_path / "cache", store_dir=store_dir, run={})
    assert len(list((store_dir / "entries").glob("*.pt"))) == 2
    row = stored.status(store_dir=store_dir, names=["single_layer"]).iloc[0]
    assert (row.stored, row.missing, row.stale) == (2, 0, 0)


def test_the_store_is_read_before_the_cache(tmp_path, planned):
    store_dir = tmp_path / "store"
    first = tiny(tmp_path)
    stored.save("single_layer", "full", cache_dir=tmp_path / "cache", store_dir=store_dir, run={})
    config = planned[0]
    entry = cache.load_entry(tmp_path / "cache", config, store_dir=store_dir)
    assert entry["where"] == "store"
    assert torch.equal(entry["payload"]["state"]["W_Q"], first[0].model.W_Q)
    assert cache.load_entry(tmp_path / "cache", config, store_dir=None)["where"] == "cache"


def test_a_long_history_is_thinned_in_the_store():
    n = 50_001
    payload = {"steps": n - 1, "history": {"step": torch.arange(n), "loss": torch.rand(n)}}
    thin = cache.thin_history(payload)
    steps = thin["history"]["step"].numpy()
    assert len(steps) <= cache.STORE_HISTORY_POINTS + 1 and steps[0] == 0 and steps[-1] == n - 1
    assert np.all(np.diff(steps) > 0)
    assert torch.equal(thin["history"]["loss"], payload["history"]["loss"][thin["history"]["step"]])
    assert thin["history"]["loss"].untyped_storage().nbytes() == 4 * len(steps)  # a copy, not a view
    short = {"history": {"step": torch.arange(10), "loss": torch.rand(10)}}
    assert torch.equal(cache.thin_history(short)["history"]["loss"], short["history"]["loss"])


def test_the_full_profile_does_not_train_in_a_chapter(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.STORE_ENV, "")  # no store
    monkeypatch.delenv("ATTNSINK_TRAIN", raising=False)
    for experiment in (single_layer, text_lm):
        with pytest.raises(MissingResultsError, match=r"reproduce \w+ --profile full --store"):
            experiment("full", cache_dir=tmp_path)
    assert not list(tmp_path.glob("*.pt"))


def test_whether_to_train(monkeypatch):
    monkeypatch.delenv("ATTNSINK_TRAIN", raising=False)
    assert resolve_training(None, "quick") and not resolve_training(None, "full")
    assert resolve_training(True, "full") and not resolve_training(False, "quick")
    monkeypatch.setenv("ATTNSINK_TRAIN", "1")
    assert resolve_training(None, "full")
    monkeypatch.setenv("ATTNSINK_TRAIN", "0")
    assert not resolve_training(None, "quick")
    monkeypatch.setenv("ATTNSINK_TRAIN", "yes")
    with pytest.raises(ValueError, match="ATTNSINK_TRAIN"):
        resolve_training(None, "quick")
    with pytest.raises(ValueError, match="train"):
        resolve_training("yes", "quick")


def test_the_repository_store_matches_its_manifests():
    """Every stored model is listed by a manifest of the current training versions, and loads."""
    store_dir = cache.default_store_dir()
    assert store_dir is not None, "the repository has a store/"
    listed = {}
    for path in (store_dir / "manifests").glob("*.json"):
        manifest = json.loads(path.read_text())
        kinds = set(manifest["training_versions"])  # the kinds of model it holds, at their current versions
        assert kinds and manifest["training_versions"] == {k: cache.TRAINING_VERSIONS[k] for k in kinds}, path.name
        listed.update({m["key"]: m for m in manifest["models"]})
    files = {p.stem for p in (store_dir / "entries").glob("*.pt")}
    assert files == set(listed)
    table = stored.status(store_dir=store_dir)
    assert (table.stale == 0).all(), table


def test_status_command(capsys, tmp_path):
    assert main(["status", "--store-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "single_layer" in out and "0 of" in out
    assert main(["status", "--store-dir", str(tmp_path), "--check"]) == 1
    assert "make full-cache" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["status", "--store-dir", str(tmp_path / "nowhere")])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["reproduce", "single_layer", "--profile", "quick", "--store"], "only the full profile"),
        (["reproduce", "single_layer", "--profile", "full", "--store", "--seeds", "2"], "not with --seeds"),
        (["reproduce", "single_layer", "--profile", "full", "--store", "--no-cache"], "not with --no-cache"),
    ],
)
def test_store_arguments_are_checked(args, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2 and message in capsys.readouterr().err


SAMPLE = [("single_layer", "softmax", 0), ("single_layer", "relu", 0), ("capped_bos", "softmax_cap0.5", 0)]


@pytest.mark.parametrize(("name", "rule", "seed"), SAMPLE)
def test_a_sample_of_stored_models_is_retrained_from_scratch(name, rule, seed):
    """Honest stored results: a cheap sample of the store, retrained here at the full budget, takes
    the same steps (within stored.STEPS_RTOL) and gives the metrics the chapters quote (masses
    within 0.01, errors within 10%). The engine's numbers do not depend on the thread count
    (tests/test_golden.py), so on the machine kind that trained them they agree exactly."""
    from attnsink.engine import train_seeds
    from attnsink.experiments.base import planned_configs
    from attnsink.metrics import evaluate
    from attnsink.training import TrainResult

    (config,) = [c for c in planned_configs(name, "full") if c["attention"] == rule and c["seed"] == seed]
    entry = cache.load_entry(None, config, store_dir=cache.default_store_dir())
    assert entry, f"{name} {rule} seed {seed} is not in the store"
    kept = TrainResult.from_payload(entry["payload"])
    task = TriggerTask(**config["task"])
    options = {k: v for k, v in config.items() if k not in ("kind", "task", "seed")}
    (fresh,) = train_seeds(task, [seed], progress=False, **options)
    assert fresh.stopped_early == kept.stopped_early
    assert abs(fresh.steps - kept.steps) <= stored.STEPS_RTOL * kept.steps, (fresh.steps, kept.steps)
    a, b = evaluate(kept.model, task).summary(), evaluate(fresh.model, task).summary()
    for key in ("bos_mass_nontrigger", "attn_mass_nontrigger", "sink_rate"):
        assert abs(a[key] - b[key]) <= 0.01, (key, a[key], b[key])
    for key in ("rel_err_trigger", "rel_err_nontrigger"):
        assert abs(a[key] - b[key]) <= 0.1 * abs(a[key]) + 1e-9, (key, a[key], b[key])


ANALYSES = {  # the library's memoized analyses, as (module, function)
    "text_heads": ("experiments.text", "text_heads"),
    "context_heads": ("experiments.text_context", "context_heads"),
    "sink_bound_terms": ("metrics", "sink_bound_terms"),
    "head_bound_terms": ("metrics", "head_bound_terms"),
    "backcopy_metrics": ("lm.metrics", "backcopy_metrics"),
}


@pytest.fixture
def library(tmp_path):
    """A copy of the library on disk, to edit, and its analyses' code hashes now."""
    root = tmp_path / "attnsink"
    shutil.copytree(Path(cache.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    pkg = codehash.Package(root, "attnsink")
    return root, pkg, {name: pkg.function_code(*where) for name, where in ANALYSES.items()}


def _changed(pkg, before):
    return {name for name, where in ANALYSES.items() if pkg.function_code(*where) != before[name]}


def test_docstrings_comments_figures_and_the_cli_set_no_analysis_aside(library):
    root, pkg, before = library
    metrics = root / "metrics.py"
    text = metrics.read_text()
    doc = text.index('"""', text.index("def sink_bound_terms")) + 3
    text = text[:doc] + "An edited docstring. " + text[doc:]  # a function's docstring
    metrics.write_text('"""A new module docstring."""\n# a comment\n' + text.split('"""', 2)[2].lstrip("\n"))
    (root / "plots" / "maps.py").write_text(
        (root / "plots" / "maps.py").read_text() + "\n\ndef new_figure():\n    return 1\n"
    )
    (root / "__main__.py").write_text((root / "__main__.py").read_text() + "\nX = 2\n")
    (root / "prose.py").write_text((root / "prose.py").read_text() + "\n\ndef more():\n    return 'a sentence'\n")
    assert _changed(pkg, before) == set()


def test_an_edit_to_one_analysis_sets_aside_only_its_entries(library):
    root, pkg, before = library
    _edit_body(root / "metrics.py", "head_bound_terms")
    assert _changed(pkg, before) == {"head_bound_terms"}


def _edit_body(path, function, line="_unused = 1"):
    """Add ``line`` to the top of ``function``'s body in the file ``path``, after its docstring."""
    text = path.read_text()
    at = text.index(f"def {function}(")
    indent = " " * (at - text.rindex("\n", 0, at) - 1 + 4)
    body = text.index('"""', text.index('"""', at) + 3) + 3
    path.write_text(text[:body] + f"\n{indent}{line}" + text[body:])


def test_an_edit_to_code_an_analysis_reaches_sets_it_aside(library):
    root, pkg, before = library
    lm_metrics = root / "lm" / "metrics.py"
    lm_metrics.write_text(lm_metrics.read_text() + "\n\nNEW_CONSTANT = 3\n")
    assert _changed(pkg, before) == set()  # nothing reads it
    _edit_body(lm_metrics, "sink_rows")  # reached through ``from .. import lm``, ``lm.sink_rows``
    assert _changed(pkg, before) == {"text_heads", "context_heads"}
    _edit_body(root / "model.py", "forward")  # AttentionModel.forward: the trigger-task models
    assert _changed(pkg, before) == {"text_heads", "context_heads", "sink_bound_terms", "head_bound_terms"}
    _edit_body(root / "attention.py", "get_rule")  # every model's attention
    assert _changed(pkg, before) == set(ANALYSES)


def test_code_that_runs_on_import_counts_for_every_function_of_its_module(library):
    root, pkg, before = library
    attention = root / "attention.py"
    attention.write_text(attention.read_text() + "\n\nprint('imported')\n")
    assert _changed(pkg, before) == set(ANALYSES)


def test_the_code_hash_reads_the_syntax_tree_the_same_on_every_python():
    """:func:`codehash.canonical` leaves out empty fields, so Python 3.12's ``type_params`` and
    3.13's new ``ast.dump`` do not change it: pinned here on a small function."""
    tree = codehash._strip_strings(ast.parse('def f(x, y=2):\n    """doc"""\n    return x + y  # note\n'))
    assert codehash.canonical(tree.body[0]) == (
        "FunctionDef(name=str:'f',args=arguments(args=[arg(arg=str:'x'),arg(arg=str:'y')],"
        "defaults=[Constant(value=int:2)]),body=[Return(value=BinOp(left=Name(id=str:'x'),"
        "op=Add(),right=Name(id=str:'y')))])"
    )


def _norm_of_w_q(model, scale=1.0):
    _CALLS.append(1)
    return {"value": model.W_Q.detach().norm() * scale}


_CALLS = []


def test_stored_analyses_are_read_and_set_aside_by_an_edit(tmp_path, monkeypatch, capsys):
    from attnsink import AttentionModel

    fresh, store_dir = tmp_path / "fresh", tmp_path / "store"
    fresh.mkdir()
    store_dir.mkdir()
    model = AttentionModel(8, seed=0)
    _CALLS.clear()
    first = cache.memoized(_norm_of_w_q, cache_dir=fresh)(model, scale=2.0)
    cache.put(fresh, {"kind": "memoized", "module": __name__, "function": "_norm_of_w_q", "code": "old"}, {})
    cache.put(fresh, {"kind": "train_seeds", "seed": 0}, {})  # a model, not an analysis
    assert main(["store-analyses", "--cache-dir", str(fresh), "--store-dir", str(store_dir)]) == 0
    a = stored.analyses_status(store_dir)
    assert a["current"] == 1 and a["set_aside"] == 0  # the analysis of the current code, only
    assert not (store_dir / "entries").exists()
    monkeypatch.setenv("ATTNSINK_STORE", str(store_dir))
    again = cache.memoized(_norm_of_w_q, cache_dir=tmp_path / "empty")(model, scale=2.0)
    assert torch.equal(again["value"], first["value"]) and len(_CALLS) == 1  # read from the store
    assert main(["status", "--store-dir", str(store_dir)]) == 0
    assert "1 analyses stored for the current code" in capsys.readouterr().out
    monkeypatch.setattr(codehash, "function_code", lambda module, qualname: "edited")  # as after an edit
    a = stored.analyses_status(store_dir)
    assert a["current"] == 0 and a["set_aside"] == 1
    cache.memoized(_norm_of_w_q, cache_dir=tmp_path / "empty2")(model, scale=2.0)
    assert len(_CALLS) == 2  # computed again
    assert main(["status", "--store-dir", str(store_dir)]) == 0
    assert "1 stored by earlier code are set aside" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        main(["store-analyses", "--cache-dir", str(tmp_path / "nowhere")])
    assert stop.value.code == 2 and "not a folder" in capsys.readouterr().err


def test_store_analyses_keeps_what_the_build_read(tmp_path):
    """Stored analyses the build neither read nor computed are deleted; those it read stay."""
    from attnsink import AttentionModel

    fresh, store_dir = tmp_path / "fresh", tmp_path / "store"
    fresh.mkdir()
    model = AttentionModel(8, seed=0)
    for scale in (1.0, 2.0):
        cache.memoized(_norm_of_w_q, cache_dir=fresh)(model, scale=scale)
    stored.save_analyses(fresh, store_dir)
    kept = sorted(p.stem for p in (store_dir / "analyses").glob("*.pt"))
    assert len(kept) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    stored.save_analyses(empty, store_dir, read={kept[0]})  # a build that read one of them only
    assert [p.stem for p in (store_dir / "analyses").glob("*.pt")] == [kept[0]]


def test_reads_from_the_store_are_logged(tmp_path, monkeypatch):
    from attnsink import AttentionModel

    fresh, store_dir, log = tmp_path / "fresh", tmp_path / "store", tmp_path / "read"
    fresh.mkdir()
    model = AttentionModel(8, seed=0)
    cache.memoized(_norm_of_w_q, cache_dir=fresh)(model)
    stored.save_analyses(fresh, store_dir)
    monkeypatch.setenv("ATTNSINK_STORE", str(store_dir))
    monkeypatch.setenv(cache.STORE_READS_ENV, str(log))
    cache.memoized(_norm_of_w_q, cache_dir=tmp_path / "other")(model)
    assert log.read_text().split() == [p.stem for p in (store_dir / "analyses").glob("*.pt")]


def test_status_check_names_a_corrupted_stored_file(tmp_path, planned, capsys):
    store_dir = tmp_path / "store"
    tiny(tmp_path)
    stored.save("single_layer", "full", cache_dir=tmp_path / "cache", store_dir=store_dir, run={})
    assert stored.verify(store_dir) == []
    victim = sorted((store_dir / "entries").glob("*.pt"))[0]
    data = bytearray(victim.read_bytes())
    data[-100] ^= 0xFF  # one flipped byte inside the model
    victim.write_bytes(bytes(data))
    (problem,) = stored.verify(store_dir)
    assert str(victim) in problem and "checksum" in problem
    assert f"git checkout -- {victim}" in problem and "reproduce single_layer --profile full --store" in problem
    assert main(["status", "--store-dir", str(store_dir), "--check"]) == 1
    assert str(victim) in capsys.readouterr().err


def test_a_manifest_refuses_a_dirty_tree(tmp_path, planned, monkeypatch):
    tiny(tmp_path)
    monkeypatch.setattr(stored, "commit", lambda: "0123456789ab-dirty")
    with pytest.raises(ValueError, match="uncommitted changes"):
        stored.save("single_layer", "full", cache_dir=tmp_path / "cache", store_dir=tmp_path / "store", run={})
