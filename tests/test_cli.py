import json
import math

import numpy as np
import pytest
import torch

from attnsink.__main__ import main
from attnsink.experiments import PROFILE_ENV, resolve_profile


@pytest.fixture(autouse=True)
def _no_results_cache(monkeypatch):
    # the CLI keeps models in the chapters' results cache by default: off here, so each test trains
    monkeypatch.setenv("ATTNSINK_CACHE_DIR", "")


def test_profile_resolution(monkeypatch):
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    assert resolve_profile() in ("quick", "full")
    monkeypatch.setenv(PROFILE_ENV, "full")
    assert resolve_profile() == "full"
    assert resolve_profile("quick") == "quick"  # an explicit choice wins
    monkeypatch.setenv(PROFILE_ENV, "fast")
    with pytest.raises(ValueError, match=PROFILE_ENV):
        resolve_profile()
    with pytest.raises(ValueError, match="profile"):
        resolve_profile("medium")


def test_reproduce_single_layer_writes_json_and_figure(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["reproduce", "single_layer", "--profile", "quick", "--seeds", "1", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["experiment"] == "single_layer" and data["profile"] == "quick"
    assert [(r["attention"], r["seed"]) for r in data["runs"]] == [("softmax", 0), ("relu", 0)]
    keys = {
        "n_layers",
        "n_heads",
        "steps",
        "stopped_early",
        "linf",
        "mse",
        "rel_err_trigger",
        "rel_err_nontrigger",
        "bos_mass_nontrigger",
        "attn_mass_nontrigger",
        "sink_rate",
    }
    for run in data["runs"]:
        assert keys <= run.keys()
        assert run["stopped_early"] and run["n_layers"] == 1 and run["n_heads"] == 1
    soft, relu = data["runs"]
    assert soft["bos_mass_nontrigger"] >= 0.95 and relu["attn_mass_nontrigger"] <= 0.01
    assert relu["bos_share_nontrigger"] is None  # 0/0 for a switched-off head: null, not NaN
    assert (tmp_path / "r.figure3.png").stat().st_size > 10_000
    table = capsys.readouterr().out
    assert "softmax" in table and "bos_mass_nontrigger" in table

    # the same command twice gives the same JSON
    again = tmp_path / "again.json"
    main(["reproduce", "single_layer", "--profile", "quick", "--seeds", "1", "--out", str(again)])
    assert again.read_text() == out.read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["reproduce", "nope"],
        ["reproduce", "single_layer", "--seeds", "0"],
        ["reproduce", "single_layer", "--profile", "medium"],
    ],
)
def test_bad_arguments(args):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2


def test_variants_experiment_schema(tmp_path):
    from attnsink.experiments import variants

    result = variants("quick", seeds=1, rules=["softmax", "relu_visible"], cache_dir=tmp_path)
    data = result.to_json()
    assert data["experiment"] == "variants" and data["predictions"]["softmax"] == "simplex"
    keys = {(r["attention"], r["no_bos"]) for r in data["runs"]}
    assert keys == {("softmax", False), ("softmax", True), ("relu_visible", False), ("relu_visible", True)}
    soft = next(r for r in data["runs"] if r["attention"] == "softmax" and not r["no_bos"])
    soft_nb = next(r for r in data["runs"] if r["attention"] == "softmax" and r["no_bos"])
    relu_nb = next(r for r in data["runs"] if r["attention"] == "relu_visible" and r["no_bos"])
    assert soft["bos_mass_nontrigger"] >= 0.95 and soft_nb["rel_err_trigger"] > 0.1
    assert relu_nb["stopped_early"] and relu_nb["attn_mass_nontrigger"] <= 0.01
    from attnsink.experiments import variants_table

    assert list(variants_table(result).index) == ["softmax", "relu_visible"]
    with pytest.raises(ValueError, match="rules"):
        variants("quick", rules=["nope"])


def test_multi_layer_json_lists_every_head(tmp_path, monkeypatch):
    from attnsink import experiments
    from attnsink.metrics import HEAD_KINDS

    monkeypatch.setitem(experiments.MULTI_LAYER, "quick", experiments.Settings(seeds=1, steps=30, lr=1e-3))
    out = tmp_path / "ml.json"
    assert main(["reproduce", "multi_layer", "--profile", "quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["experiment"] == "multi_layer" and data["task"]["residual"] is True
    shapes = [(r["attention"], r["n_layers"], r["n_heads"]) for r in data["runs"]]
    assert shapes == [("softmax", 2, 2), ("relu", 2, 2), ("softmax", 4, 4), ("relu", 4, 4)]
    for run in data["runs"]:
        assert len(run["heads"]) == run["n_layers"] * run["n_heads"]
        assert [(h["layer"], h["head"]) for h in run["heads"]][:2] == [(0, 0), (0, 1)]
        for h in run["heads"]:
            assert {"bos_mass_nontrigger", "attn_mass_nontrigger", "trigger_content_weight"} <= h.keys()
            assert h["kind"] in HEAD_KINDS
    assert (tmp_path / "ml.heads.png").stat().st_size > 10_000


def test_sweep_and_blocks_json(tmp_path, monkeypatch):
    from attnsink import experiments

    monkeypatch.setitem(experiments.SWEEP, "quick", experiments.Settings(seeds=2, steps=20))
    monkeypatch.setitem(experiments.SWEEP_POINTS, "quick", {"seq_len": (8, 16), "lr": (1e-3, 3e-3)})
    out = tmp_path / "sweep.json"
    assert main(["reproduce", "sweep", "--profile", "quick", "--out", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    points = [(r["swept"], r["seq_len"], r["d_model"], r["lr"], r["attention"], r["seed"]) for r in runs]
    assert len(points) == len(set(points)) == 4 * 2 * 2
    assert {"step_sink", "step_loss", "steps", "linf"} <= runs[0].keys()
    # the default point (L = 16, lr = 1e-3) is in both sweeps and trained once: identical records
    a = [r for r in runs if r["swept"] == "seq_len" and r["seq_len"] == 16]
    b = [r for r in runs if r["swept"] == "lr" and r["lr"] == 1e-3]
    assert [{**r, "swept": None} for r in a] == [{**r, "swept": None} for r in b]

    monkeypatch.setitem(experiments.BLOCKS_SETTINGS, "quick", experiments.Settings(seeds=1, steps=10, lr=1e-3))
    result = experiments.blocks("quick")
    assert [(r["attention"], r["blocks"], r["mlp"], r["layer_norm"]) for r in result.to_json()["runs"]] == [
        ("softmax", "mlp", True, False),
        ("relu", "mlp", True, False),
        ("softmax", "layer_norm", False, True),
        ("relu", "layer_norm", False, True),
        ("softmax", "mlp + layer_norm", True, True),
        ("relu", "mlp + layer_norm", True, True),
    ]
    assert len(result.heads()) == 6 * 4


def test_names_for_help_match_the_registry():
    from attnsink import __main__ as cli
    from attnsink.experiments import EXPERIMENTS, PROFILES

    assert cli.EXPERIMENT_NAMES == tuple(sorted(EXPERIMENTS)) and cli.PROFILE_CHOICES == PROFILES


def test_help_needs_no_torch():
    import subprocess
    import sys

    code = (
        "import sys\nfrom attnsink.__main__ import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "reproduce" in done.stdout


@pytest.fixture
def no_training(monkeypatch):
    """Fails the test if anything starts training."""
    from attnsink import cache, parallel

    def refuse(*args, **kwargs):
        raise AssertionError("training started")

    for module, name in ((cache, "train_seeds"), (parallel, "train_spec"), (parallel, "ProcessPoolExecutor")):
        monkeypatch.setattr(module, name, refuse)


@pytest.mark.parametrize(
    "args,env,named",
    [
        (["--device", "tpu"], {}, "--device"),
        (["--device", "cuda:0"], {}, "--device"),
        ([], {"ATTNSINK_PROFILE": "fast"}, "ATTNSINK_PROFILE"),
        (["--seeds", "two"], {}, "--seeds"),
        (["--workers", "0"], {}, "--workers"),
        (["--seed-list", "1,x"], {}, "--seed-list"),
        (["--seed-list", "1,1"], {}, "--seed-list"),
        (["--seed-list", "-1"], {}, "--seed-list"),
        (["--seed-list", "1,2", "--seeds", "2"], {}, "--seed-list"),
        (["--steps", "0"], {}, "--steps"),
        (["--lr", "0"], {}, "--lr"),
        (["--lr", "2"], {}, "--lr"),
        (["--lr", "nan"], {}, "--lr"),
        (["--profile", "full", "--store", "--lr", "1e-3"], {}, "--store"),
        ([], {"ATTNSINK_WORKERS": "many"}, "ATTNSINK_WORKERS"),
        ([], {"ATTNSINK_WORKERS": "0"}, "ATTNSINK_WORKERS"),
    ],
)
def test_bad_values_fail_before_training(args, env, named, monkeypatch, capsys, tmp_path, no_training):
    import torch

    if "cuda" in " ".join(args) and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "single_layer", "--out", str(tmp_path / "r.json"), *args])
    assert e.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and named in errors[0], errors


def test_unwritable_output_fails_before_training(tmp_path, capsys, no_training):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    cases = [
        (["--out", str(blocker / "sub" / "r.json")], "--out"),  # its folder cannot be created
        (["--out", str(tmp_path)], "--out"),  # a folder, not a file
        (["--cache-dir", str(blocker / "cache"), "--out", str(tmp_path / "r.json")], "--cache-dir"),
    ]
    for args, named in cases:
        with pytest.raises(SystemExit) as e:
            main(["reproduce", "single_layer", *args])
        assert e.value.code == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
        assert len(errors) == 1 and named in errors[0], errors
    assert not (tmp_path / "r.json").exists()


def test_the_cli_keeps_its_models_in_the_results_cache_by_default(tmp_path, monkeypatch, capsys):
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("ATTNSINK_CACHE_DIR", str(cache_dir))
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert main(["reproduce", "single_layer", "--profile", "quick", "--seeds", "1", "--out", str(first)]) == 0
    assert len(list(cache_dir.glob("*.pt"))) >= 2  # a softmax and a ReLU model, kept
    from attnsink import cache

    def refuse(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(cache, "train_seeds", refuse)  # a second run reads them and trains nothing
    assert main(["reproduce", "single_layer", "--profile", "quick", "--seeds", "1", "--out", str(second)]) == 0
    assert second.read_text() == first.read_text()


def test_no_cache_excludes_cache_dir(tmp_path, capsys, no_training):
    with pytest.raises(SystemExit) as e:
        main(
            ["reproduce", "single_layer", "--no-cache", "--cache-dir", str(tmp_path), "--out", str(tmp_path / "r.json")]
        )
    assert e.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--no-cache" in errors[0]


def test_an_unwritable_default_cache_is_named(tmp_path, monkeypatch, capsys, no_training):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("ATTNSINK_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "single_layer", "--out", str(tmp_path / "r.json")])
    assert e.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "ATTNSINK_CACHE_DIR" in errors[0], errors


@pytest.mark.parametrize("command", [["reproduce", "single_layer"], ["grid", "spec.yaml"]])
def test_progress_bars_by_default_on_a_terminal_only(monkeypatch, command):
    import sys

    from attnsink.__main__ import _parser, _progress

    parser = _parser()
    for tty in (True, False):
        monkeypatch.setattr(sys.stderr, "isatty", lambda tty=tty: tty)
        assert _progress(parser.parse_args(command)) is tty  # tqdm's convention: bars for a person watching
        assert _progress(parser.parse_args([*command, "--progress"])) is True
        assert _progress(parser.parse_args([*command, "--no-progress"])) is False


def test_reproduce_passes_the_progress_choice_to_the_experiment(monkeypatch, tmp_path):
    import sys

    from attnsink import experiments

    seen = []

    def fake(profile, **kwargs):
        seen.append(kwargs["progress"])
        raise SystemExit(0)  # stop once the choice is seen

    monkeypatch.setitem(experiments.EXPERIMENTS, "single_layer", fake)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    for flags in ([], ["--no-progress"]):
        with pytest.raises(SystemExit):
            main(["reproduce", "single_layer", "--profile", "quick", "--out", str(tmp_path / "r.json"), *flags])
    assert seen == [True, False]


def test_reproduce_passes_other_settings_to_the_experiment(monkeypatch, tmp_path, capsys, no_training):
    from attnsink import experiments

    seen = []

    def fake(profile, **kwargs):
        seen.append({k: kwargs[k] for k in ("seeds", "seed_list", "steps", "lr")})
        raise SystemExit(0)

    monkeypatch.setitem(experiments.EXPERIMENTS, "single_layer", fake)
    args = ["reproduce", "single_layer", "--profile", "quick", "--out", str(tmp_path / "r.json")]
    with pytest.raises(SystemExit):
        main([*args, "--seed-list", "3,7", "--steps", "40", "--lr", "3e-4"])
    assert seen == [{"seeds": None, "seed_list": [3, 7], "steps": 40, "lr": 3e-4}]
    with pytest.raises(SystemExit) as e:  # sweep trains at learning rates of its own
        main(["reproduce", "sweep", "--profile", "quick", "--lr", "1e-3", "--out", str(tmp_path / "s.json")])
    assert e.value.code == 2 and "argument --lr: sweep" in capsys.readouterr().err


def test_other_settings_train_those_seeds_at_that_rate(tmp_path):
    from attnsink.experiments import single_layer, sweep

    result = single_layer("quick", seed_list=[4, 9], steps=30, lr=2e-3, cache_dir=None)
    assert [(r["attention"], r["seed"]) for r in result.runs] == [
        ("softmax", 4),
        ("softmax", 9),
        ("relu", 4),
        ("relu", 9),
    ]
    assert result.settings.lr == 2e-3 and result.settings.steps == 30 and result.settings.seed_ids == (4, 9)
    assert all(r["steps"] <= 30 for r in result.runs)
    with pytest.raises(ValueError, match="lr: sweep sets its learning rates itself"):
        sweep("quick", lr=1e-3)
    with pytest.raises(ValueError, match="seeds and seed_list"):
        single_layer("quick", seeds=2, seed_list=[0, 1])
    with pytest.raises(ValueError, match="lr must be a number in"):
        single_layer("quick", lr=-1.0)
    with pytest.raises(ValueError, match="seed_list must not repeat"):
        single_layer("quick", seed_list=[1, 1])


def test_constant_default_experiment_records_what_the_head_writes(tmp_path):
    from attnsink.experiments import constant_default

    result = constant_default("quick", seeds=1, rules=["softmax", "relu"], cache_dir=tmp_path)
    data = result.to_json()
    assert data["experiment"] == "constant_default" and data["default"] == 0.5
    assert data["task"]["default"] == 0.5
    assert {r["attention"] for r in result.runs} == {"softmax", "relu"}
    for r in result.runs:
        for key in ("bos_value_error", "bos_value_norm", "ablate_zero", "ablate_mean"):
            assert math.isfinite(r[key])
    soft = next(r for r in result.runs if r["attention"] == "softmax")
    # the softmax head parks on BOS and BOS's value moves toward c (theory: it must, as the
    # error falls); zeroing what it writes at its default rows costs, its mean does not
    assert soft["bos_mass_nontrigger"] > 0.9 and soft["bos_value_error"] < 0.5
    assert soft["ablate_zero"] > 10 * abs(soft["ablate_mean"])
    assert result.runs[0]["prediction"] == "constant sink" and result.runs[1]["prediction"] == "position scale"
    with pytest.raises(ValueError, match="rules"):
        constant_default("quick", rules=["nope"])


def _reader(d: int, reads: bool, bos_looks_at_trigger: bool = False):
    """A bidirectional 2-layer model: the first layer averages every token's noise (BOS's row
    too, or with ``bos_looks_at_trigger`` BOS's row copies the trigger's), the second puts
    (nearly) all its weight on BOS and copies its noise channels, or (``reads=False``) writes
    nothing."""
    from attnsink import AttentionModel
    from attnsink.task import BOS, TRIGGER

    model = AttentionModel(d, 1, 2, "softmax", True, causal=False)
    noise = torch.zeros(d, d)
    noise[2 : d - 1, 2 : d - 1] = torch.eye(d - 3)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.W_V[0, 0], model.W_O[0, 0] = noise, torch.eye(d)  # layer 0: W_QK = 0, an even average
        if bos_looks_at_trigger:
            model.W_Q[0, 0, BOS, 0], model.W_K[0, 0, TRIGGER, 0] = 30.0, 1.0
        for ch in (BOS, TRIGGER, d - 1):  # every token has one of these: every query points at BOS
            model.W_Q[1, 0, ch, 0] = 30.0
        model.W_K[1, 0, BOS, 0] = 1.0
        if reads:
            model.W_V[1, 0], model.W_O[1, 0] = noise, torch.eye(d)
    return model


def test_broadcast_measures_read_models_that_hand_the_mean_on_and_ones_that_do_not():
    from attnsink.experiments.broadcast import broadcast_measures
    from attnsink.task import GlobalTriggerTask, TriggerTask

    for default in ("zero", "mean"):
        task = GlobalTriggerTask(residual=True, default=default)
        batch = task.sample(256, generator=torch.Generator().manual_seed(0))
        L = task.seq_len
        hands = broadcast_measures(_reader(task.d_model, True), task, batch)
        # BOS's row averages every token, BOS's own (no noise) included: (L - 1) / L of the mean;
        # every row then reads that from BOS, one for one
        assert hands["bos_gathers"][0] == pytest.approx((L - 1) / L, abs=1e-6)
        assert hands["reads_bos"][1] > 0.999 and hands["parks_bos"][1] > 0.999
        assert hands["bos_carries"] == pytest.approx((L - 1) / L, abs=1e-4) and hands["bos_fit"] > 0.999
        assert hands["read_gain"] == pytest.approx(1.0, abs=1e-3) and hands["read_gain_zero"] > 0.99
        assert hands["handed_on"] == pytest.approx((L - 1) / L, abs=1e-3)
        assert hands["zero_rows_moved"] == pytest.approx((L - 1) / L, abs=1e-3)
        # what BOS carries varies as m does, in m's own code; both layers write the same
        # vector at the rows that ask zero, so their sum is as long as the two added
        assert hands["bos_spread"] == pytest.approx((L - 1) / L, abs=1e-4) and hands["bos_decodable"] > 0.999
        assert hands["bos_norm"] > 0
        assert hands["zero_rows_sum"] == pytest.approx(sum(hands["zero_rows_out"]), rel=1e-3)
        assert np.asarray(hands["writes"]).shape == (2, 1) and math.isfinite(hands["ablate_tol"])
        assert hands["ablate_tol"] > 0  # the mirror's job rows are the rows that ask m
        keeps = broadcast_measures(_reader(task.d_model, False), task, batch)
        assert keeps["bos_carries"] == pytest.approx((L - 1) / L, abs=1e-4)  # BOS still gathers...
        for key in ("read_gain", "read_gain_zero", "handed_on", "zero_rows_moved"):
            assert abs(keeps[key]) < 1e-6  # ...and no row reads it
        # a BOS that copies one token has the mean's gain but explains little of it
        one = broadcast_measures(_reader(task.d_model, True, bos_looks_at_trigger=True), task, batch)
        assert one["bos_carries"] == pytest.approx(1.0, abs=0.2) and one["bos_fit"] < 0.3
    with pytest.raises(ValueError, match="GlobalTriggerTask"):
        broadcast_measures(_reader(16, True), TriggerTask(residual=True), batch)


def test_broadcast_experiment_trains_bidirectional_models_on_both_defaults(tmp_path):
    from attnsink.experiments import broadcast

    result = broadcast("quick", seeds=1, cache_dir=tmp_path)
    data = result.to_json()
    assert data["experiment"] == "broadcast" and [r["default"] for r in result.runs] == ["zero", "mean"]
    for r in result.runs:
        assert r["n_layers"] == 2 and len(r["bos_gathers"]) == 2
        assert math.isfinite(r["handed_on"]) and r["mse"] < 1e-4  # both tasks are learned
        assert math.isfinite(r["rel_err_trigger"]) and math.isfinite(r["rel_err_nontrigger"])
    assert all(r.model.causal is False for trained in result.results.values() for r in trained)
