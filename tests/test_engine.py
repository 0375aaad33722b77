"""The fast path agrees with the plain one: forward, gradients and training trajectories."""

import pytest
import torch

from attnsink import AttentionModel, TriggerTask, train
from attnsink.attention import ATTENTION_RULES
from attnsink.engine import forward_stacked, train_seeds

RULES = [*ATTENTION_RULES, "softmax_cap0.5"]
SHAPES = [  # (n_layers, n_heads, residual, mlp, layer_norm)
    (1, 1, False, False, False),
    (1, 3, False, False, False),
    (2, 2, True, False, False),
    (2, 2, True, True, True),
    (2, 1, True, False, True),
]


def _stacked(models):
    return {
        name: torch.stack([dict(m.named_parameters())[name] for m in models])
        for name, _ in models[0].named_parameters()
    }


def _random_model(attention, n_layers, n_heads, residual, mlp, layer_norm, seed):
    model = AttentionModel(
        8, n_heads, n_layers, attention, residual, seed=seed, init_std=0.4, mlp=mlp, layer_norm=layer_norm
    )
    with torch.no_grad():  # move the LayerNorm gains, biases and sink logits off their initial values too
        g = torch.Generator().manual_seed(seed + 100)
        for name, p in model.named_parameters():
            if name.startswith(("ln", "b_", "sink")):
                p.add_(0.3 * torch.randn(p.shape, generator=g))
    return model


@pytest.mark.parametrize("attention", RULES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_forward_and_gradients_agree(attention, shape):
    n_layers, n_heads, residual, mlp, layer_norm = shape
    task = TriggerTask(d_model=8, seq_len=10, residual=residual)
    # in float64, so the two orders of the same arithmetic agree to 1e-9 whatever the weights
    models = [_random_model(attention, *shape, seed=s).double() for s in (0, 1)]
    batches = [task.sample(6, generator=torch.Generator().manual_seed(s)) for s in (0, 1)]
    x = torch.stack([b.x for b in batches]).double()
    params = _stacked(models)
    y_fast, attn_fast, values_fast = forward_stacked(
        params, x, attention=attention, residual=residual, return_values=True
    )
    loss_fast = y_fast.pow(2).sum() + sum(a.sum() for a in attn_fast)
    grads_fast = torch.autograd.grad(loss_fast, [p for p in params.values()])
    for i, model in enumerate(models):
        y, attn, values = model(x[i], return_values=True)
        assert y.abs().max() > 0.1, "the outputs are not trivially small"
        torch.testing.assert_close(y_fast[i], y, rtol=1e-9, atol=1e-9)
        for layer in range(n_layers):
            torch.testing.assert_close(attn_fast[layer][i], attn[layer], rtol=1e-9, atol=1e-9)
            torch.testing.assert_close(values_fast[layer][i], values[layer], rtol=1e-9, atol=1e-9)
        loss = y.pow(2).sum() + sum(a.sum() for a in attn)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        for (name, _), g_fast, g in zip(params.items(), grads_fast, grads):
            torch.testing.assert_close(g_fast[i], g, rtol=1e-8, atol=1e-9, msg=lambda m, name=name: f"{name}: {m}")


def test_every_rule_and_shape_is_covered():
    assert {"softmax", "relu", "sink_logit", "gated", "clipped_softmax"} <= set(RULES)
    assert any(s[3] and s[4] for s in SHAPES) and any(s[1] > 1 for s in SHAPES)


@pytest.mark.parametrize(
    "attention,arch",
    [
        ("softmax", {}),
        ("relu", {}),
        ("sink_logit", {}),
        ("softmax", {"n_layers": 2, "n_heads": 2, "mlp": True, "layer_norm": True}),
    ],
)
def test_plain_loop_and_engine_follow_the_same_trajectory(attention, arch):
    residual = bool(arch)
    task = TriggerTask(d_model=8, seq_len=8, residual=residual)
    config = {"d_model": 8, "residual": residual, "attention": attention, **arch}
    recipe = {"steps": 300, "lr": 1e-3, "batch_size": 16, "stop_linf": None, "progress": False}
    plain = train(AttentionModel.from_config(config, seed=3), task, seed=3, **recipe)
    fast = train_seeds(task, [3], attention=attention, **arch, **recipe)[0]
    assert plain.steps == fast.steps == 300
    for key in ("loss", "linf", "bos_mass"):
        torch.testing.assert_close(
            torch.as_tensor(plain.history[key]), torch.as_tensor(fast.history[key]), rtol=2e-3, atol=1e-5
        )
    for (name, p), q in zip(plain.model.named_parameters(), fast.model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-4, msg=lambda m, name=name: f"{name}: {m}")
    assert plain.history["loss"][-1] < 0.5 * plain.history["loss"][0], "and it trains"


def test_plain_loop_stops_where_the_engine_stops():
    task = TriggerTask()
    recipe = {"steps": 3000, "lr": 1e-3, "stop_linf": 5e-2, "progress": False}
    plain = train(AttentionModel(16, attention="relu", seed=0), task, seed=0, **recipe)
    (fast,) = train_seeds(task, models=[AttentionModel(16, attention="relu", seed=0)], seeds=[0], **recipe)
    assert plain.stopped_early and fast.stopped_early
    assert abs(plain.steps - fast.steps) <= 2, (plain.steps, fast.steps)
    assert len(plain.history["loss"]) == plain.steps + 1 and plain.history["linf"][-1] < 5e-2


def test_training_batches_are_the_engines_data():
    task = TriggerTask(d_model=8, seq_len=8)
    stream = task.training_batches(16, seed=5)
    chunk = task.data_chunk(16)
    first = [next(stream) for _ in range(chunk + 2)]
    again = task.training_batches(16, seed=5)
    for b in first:
        torch.testing.assert_close(next(again).x, b.x)
    block = task.sample(chunk * 16, generator=torch.Generator().manual_seed(5 + 1_000_003))
    torch.testing.assert_close(first[1].x, block.x[16:32])
    with pytest.raises(ValueError, match="seed"):
        task.training_batches(16, seed=-1)
    with pytest.raises(ValueError, match="batch_size"):
        task.training_batches(0, seed=0)


def test_a_bidirectional_model_sees_the_whole_sequence_and_both_paths_agree():
    from attnsink.spec import RunSpec

    task = TriggerTask(d_model=8, seq_len=10, residual=True)
    models = [AttentionModel(8, 2, 2, "softmax", True, seed=s, init_std=0.4, causal=False).double() for s in (0, 1)]
    x = torch.stack([task.sample(6, generator=torch.Generator().manual_seed(s)).x for s in (0, 1)]).double()
    y_fast, attn_fast = forward_stacked(_stacked(models), x, attention="softmax", residual=True, causal=False)
    for i, model in enumerate(models):
        y, attn = model(x[i])
        torch.testing.assert_close(y_fast[i], y, rtol=1e-9, atol=1e-9)
        assert attn[0][:, :, 0, 1:].sum() > 0.1  # BOS's own row weighs the tokens after it
    later = x[0].clone()
    later[:, -1] += 1.0  # change the last token only: a causal model's first rows would not move
    assert not torch.allclose(models[0](later)[0][:, 0], models[0](x[0])[0][:, 0])
    with pytest.raises(ValueError, match="causal"):
        AttentionModel(8, attention="relu", causal=False)
    # the option keeps the keys of the causal runs stored before it existed, and keys its own
    options = {"steps": 10, "lr": 1e-3}
    assert "causal" not in RunSpec.from_options(task, options).base_config()
    assert RunSpec.from_options(task, {**options, "causal": False}).base_config()["causal"] is False
    # the engine trains with the full mask: it follows the plain loop of a bidirectional model
    from attnsink.task import GlobalTriggerTask

    glob = GlobalTriggerTask(d_model=8, seq_len=8, residual=True)
    recipe = {"steps": 100, "lr": 1e-3, "batch_size": 16, "stop_linf": None, "progress": False}
    config = {"d_model": 8, "residual": True, "n_layers": 2, "causal": False}
    plain = train(AttentionModel.from_config(config, seed=2), glob, seed=2, **recipe)
    fast = train_seeds(glob, [2], n_layers=2, causal=False, **recipe)[0]
    assert fast.model.causal is False
    torch.testing.assert_close(
        torch.as_tensor(plain.history["loss"]), torch.as_tensor(fast.history["loss"]), rtol=2e-3, atol=1e-5
    )
    causal = train_seeds(glob, [2], n_layers=2, **recipe)[0]  # the mask changes what is learned
    assert abs(causal.history["loss"][-1] - fast.history["loss"][-1]) > 1e-4
    with pytest.raises(ValueError, match="causal"):
        RunSpec.from_options(task, {**options, "causal": 1})
