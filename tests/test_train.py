import platform
import sys

import numpy as np
import pytest
import torch

from attnsink import AttentionModel, NonFiniteLossError, TriggerTask, evaluate, train, train_seeds

TASK = TriggerTask(d_model=8, seq_len=8)


def fit(seed=0, steps=40, **kw):
    m = AttentionModel(8, seed=seed)
    return train(m, TASK, steps=steps, lr=1e-2, batch_size=32, seed=seed, progress=False, **kw)


def test_history_and_steps():
    r = fit(stop_linf=None)
    assert r.steps == 40 and not r.stopped_early
    assert r.history["loss"].shape == (40,) and r.history["bos_mass"].shape == (40, 1, 1)
    assert np.isfinite(r.history["loss"]).all()
    assert r.history["loss"][-5:].mean() < r.history["loss"][:5].mean()


def test_same_seed_same_numbers():
    a, b = fit(seed=5), fit(seed=5)
    assert np.array_equal(a.history["loss"], b.history["loss"])
    assert torch.equal(a.model.W_Q, b.model.W_Q)
    assert not np.array_equal(a.history["loss"], fit(seed=6).history["loss"])


def test_seeds_side_by_side_equal_single_runs():
    seeds = [0, 3, 7]
    together = train_seeds(TASK, seeds, steps=60, lr=1e-2, batch_size=32, progress=False, stop_linf=None)
    for seed, r in zip(seeds, together):
        alone = fit(seed=seed, steps=60, stop_linf=None)
        np.testing.assert_allclose(r.history["loss"], alone.history["loss"], rtol=1e-4, atol=1e-7)
        torch.testing.assert_close(r.model.W_O, alone.model.W_O, rtol=1e-4, atol=1e-6)


def test_early_stop_is_exact_and_per_seed():
    # the stop is the first step whose batch error is below the threshold, for each seed alone
    free = train_seeds(TASK, [0, 1], steps=300, lr=1e-2, batch_size=32, progress=False, stop_linf=None)
    threshold = float(np.median([r.history["linf"][-1] for r in free])) * 1.5
    stopped = train_seeds(TASK, [0, 1], steps=300, lr=1e-2, batch_size=32, progress=False, stop_linf=threshold)
    for f, s in zip(free, stopped):
        first = int(np.argmax(f.history["linf"] < threshold))
        assert f.history["linf"][first] < threshold
        assert s.stopped_early and s.steps == first
        assert len(s.history["linf"]) == first + 1 and s.history["linf"][-1] < threshold
    assert stopped[0].steps != stopped[1].steps  # frozen independently


def test_trained_softmax_sinks_and_relu_switches_off():
    task = TriggerTask()
    soft, relu = (
        train_seeds(task, [0], attention=a, steps=3000, lr=1e-3, progress=False)[0] for a in ("softmax", "relu")
    )
    assert soft.stopped_early and relu.stopped_early
    s, r = evaluate(soft.model, task, n=200).summary(), evaluate(relu.model, task, n=200).summary()
    assert s["bos_mass_nontrigger"] > 0.95 and s["rel_err_trigger"] < 1e-3
    assert r["attn_mass_nontrigger"] < 0.01 and r["rel_err_trigger"] < 1e-3


def test_non_finite_loss_names_step_and_config():
    m = AttentionModel(8, seed=0, init_std=1e18)  # scores overflow to inf and nan at once
    with pytest.raises(NonFiniteLossError, match=r"step 0 .*'attention': 'softmax'"):
        train(m, TASK, steps=10, lr=1e-3, progress=False)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"steps": 0}, "steps"),
        ({"steps": 2.5}, "steps"),
        ({"lr": 0}, "lr"),
        ({"lr": -1e-3}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"batch_size": 0}, "batch_size"),
        ({"stop_linf": -1.0}, "stop_linf"),
        ({"seed": -2}, "seed"),
    ],
)
def test_invalid_training_args(kwargs, name):
    args = {"steps": 5, "lr": 1e-3, **kwargs}
    with pytest.raises(ValueError, match=name):
        train(AttentionModel(8), TASK, progress=False, **args)


def test_mismatched_models():
    with pytest.raises(ValueError, match="d_model"):
        train(AttentionModel(16), TASK, steps=5, lr=1e-3, progress=False)
    with pytest.raises(ValueError, match="one config"):
        train_seeds(
            TASK, models=[AttentionModel(8), AttentionModel(8, attention="relu")], seeds=[0, 1], steps=5, lr=1e-3
        )
    with pytest.raises(ValueError, match="residual"):
        train(AttentionModel(8, residual=True), TASK, steps=5, lr=1e-3, progress=False)


def test_trainer_sees_the_seeds_own_task_samples():
    # step 0's loss is the initial model's MSE on the first batch of task.sample(..., generator=seed's stream)
    from attnsink.task import DATA_SEED_OFFSET

    seed, batch_size = 4, 32
    model = AttentionModel(8, seed=seed)
    g = torch.Generator().manual_seed(seed + DATA_SEED_OFFSET)
    first = TASK.sample(TASK.data_chunk(batch_size) * batch_size, generator=g)
    with torch.no_grad():
        expected = (model(first.x[:batch_size])[0] - first.y[:batch_size]).pow(2).mean().item()
    r = train(model, TASK, steps=1, lr=1e-3, batch_size=batch_size, seed=seed, progress=False)
    assert r.history["loss"][0] == pytest.approx(expected, rel=1e-5)


def test_build_with_leading_dims_matches_per_batch_build():
    trig = torch.randint(2, 8, (3, 5))
    noise = torch.rand(3, 5, 7, 5)
    stacked = TASK.build(trig, noise)
    assert stacked.x.shape == (3, 5, 8, 8) and stacked.is_nontrigger.shape == (3, 5, 8)
    for i in range(3):
        one = TASK.build(trig[i], noise[i])
        assert torch.equal(stacked.x[i], one.x) and torch.equal(stacked.y[i], one.y)


def test_training_after_inference_mode_evaluation():
    # cached masks built under inference_mode must still work with autograd
    for attention, L in (("relu", 11), ("softmax", 13)):
        task = TriggerTask(d_model=8, seq_len=L)
        with torch.inference_mode():
            AttentionModel(8, attention=attention)(task.sample(2).x)
        train(AttentionModel(8, attention=attention), task, steps=3, lr=1e-3, progress=False)


def test_adam_matches_torch_adam():
    seed, steps = 2, 5
    ours = train(
        AttentionModel(8, seed=seed),
        TASK,
        steps=steps,
        lr=1e-2,
        batch_size=16,
        seed=seed,
        stop_linf=None,
        progress=False,
    )
    ref = AttentionModel(8, seed=seed)
    opt = torch.optim.Adam(ref.parameters(), lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    from attnsink.task import DATA_SEED_OFFSET

    g = torch.Generator().manual_seed(seed + DATA_SEED_OFFSET)
    data = TASK.sample(TASK.data_chunk(16) * 16, generator=g)
    for step in range(steps):
        x, y = data.x[16 * step : 16 * (step + 1)], data.y[16 * step : 16 * (step + 1)]
        loss = (ref(x)[0] - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.testing.assert_close(ours.model.W_Q, ref.W_Q, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(ours.model.W_O, ref.W_O, rtol=1e-4, atol=1e-6)


def test_stopped_weights_meet_the_criterion_on_their_batch():
    free = fit(seed=1, steps=300, stop_linf=None)
    threshold = float(free.history["linf"][-1]) * 2
    r = fit(seed=1, steps=300, stop_linf=threshold)
    assert r.stopped_early
    from attnsink.task import DATA_SEED_OFFSET

    chunk = TASK.data_chunk(32)
    g = torch.Generator().manual_seed(1 + DATA_SEED_OFFSET)
    for _ in range(r.steps // chunk + 1):
        data = TASK.sample(chunk * 32, generator=g)
    rows = slice((r.steps % chunk) * 32, (r.steps % chunk + 1) * 32)
    with torch.no_grad():
        linf = (r.model(data.x[rows])[0] - data.y[rows]).abs().max().item()
    assert linf < threshold and linf == pytest.approx(float(r.history["linf"][-1]), rel=1e-5)


def test_residual_two_layer_training_runs():
    task = TriggerTask(d_model=8, seq_len=8, residual=True)
    rs = train_seeds(
        task,
        [0, 1],
        attention="softmax",
        n_heads=2,
        n_layers=2,
        steps=30,
        lr=1e-3,
        batch_size=16,
        stop_linf=None,
        progress=False,
    )
    assert rs[0].history["bos_mass"].shape == (30, 2, 2)
    assert rs[0].history["loss"][-1] < rs[0].history["loss"][0]
    assert len(evaluate(rs[0].model, task, n=20).per_head()) == 4


@pytest.mark.parametrize(
    "kwargs, name",
    [({"lr": True}, "lr"), ({"stop_linf": float("inf")}, "stop_linf"), ({"device": "nonsense"}, "device")],
)
def test_more_invalid_training_args(kwargs, name):
    with pytest.raises(ValueError, match=name):
        train(AttentionModel(8), TASK, progress=False, **{"steps": 5, "lr": 1e-3, **kwargs})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_cuda_without_cuda_is_a_value_error():
    with pytest.raises(ValueError, match="device"):
        train(AttentionModel(8), TASK, steps=5, lr=1e-3, device="cuda", progress=False)


def test_squared_error_matches_autograd_mse():
    from attnsink.engine import _SquaredError

    y_hat = torch.randn(3, 4, 5, 6, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 4, 5, 6, dtype=torch.float64)
    loss, err = _SquaredError.apply(y_hat, y)
    torch.testing.assert_close(loss, (y_hat - y).pow(2).mean(dim=(1, 2, 3)))
    torch.testing.assert_close(err, y_hat - y)
    assert not err.requires_grad
    torch.autograd.gradcheck(lambda a: _SquaredError.apply(a, y)[0], (y_hat,))
    w = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    (g_ours,) = torch.autograd.grad((loss * w).sum(), y_hat)
    (g_ref,) = torch.autograd.grad(((y_hat - y).pow(2).mean(dim=(1, 2, 3)) * w).sum(), y_hat)
    torch.testing.assert_close(g_ours, g_ref)


def test_keep_freed_memory_can_be_switched_off(monkeypatch):
    from attnsink.engine import keep_freed_memory

    keep_freed_memory.cache_clear()
    monkeypatch.setenv("ATTNSINK_KEEP_FREED_MEMORY", "0")
    assert keep_freed_memory() is False
    keep_freed_memory.cache_clear()
    monkeypatch.delenv("ATTNSINK_KEEP_FREED_MEMORY")
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert keep_freed_memory() is glibc
    keep_freed_memory.cache_clear()


def test_non_finite_loss_after_a_check_names_its_step_and_seed():
    # lr = 1e30: both seeds' first update blows their weights up, so step 1 is the first
    # non-finite one, found by the check after step 1 (the check after step 0 passed)
    models = [AttentionModel(8, seed=4), AttentionModel(8, seed=5)]
    with pytest.raises(NonFiniteLossError, match=r"step 1 \(seed 4\)"):
        train_seeds(TASK, models=models, seeds=[4, 5], steps=10, lr=1e30, check_every=1, progress=False)
    # only seed 5 is broken, from the start: the error names it
    models = [AttentionModel(8, seed=4), AttentionModel(8, seed=5, init_std=1e18)]
    with pytest.raises(NonFiniteLossError, match=r"step 0 \(seed 5\)"):
        train_seeds(TASK, models=models, seeds=[4, 5], steps=10, lr=1e-3, progress=False)
