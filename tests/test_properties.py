"""Property-based checks: valid configurations run, invalid ones raise ValueError naming the parameter."""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnsink import AttentionModel, TriggerTask, train
from attnsink.attention import ATTENTION_RULES

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
bad_ints = st.one_of(st.integers(max_value=-1), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3))


@FAST
@given(d_model=st.integers(3, 24), seq_len=st.integers(4, 24), residual=st.booleans(), batch=st.integers(1, 9))
def test_valid_tasks_sample(d_model, seq_len, residual, batch):
    b = TriggerTask(d_model, seq_len, residual).sample(batch, generator=torch.Generator().manual_seed(0))
    assert b.x.shape == (batch, seq_len, d_model) and (b.is_trigger.sum(1) == 1).all()
    assert torch.isfinite(b.y).all()


@FAST
@given(field=st.sampled_from(["d_model", "seq_len"]), value=st.one_of(st.integers(-5, 2), bad_ints))
def test_invalid_tasks_raise(field, value):
    if field == "seq_len" and isinstance(value, int) and not isinstance(value, bool) and value >= 4:
        return
    with pytest.raises(ValueError, match=field):
        TriggerTask(**{field: value})


@FAST
@given(
    d_model=st.integers(1, 12),
    n_heads=st.integers(1, 3),
    n_layers=st.integers(1, 3),
    attention=st.sampled_from(["softmax", "relu"]),
    residual=st.booleans(),
)
def test_model_configs(d_model, n_heads, n_layers, attention, residual):
    if n_layers > 1 and not residual:
        with pytest.raises(ValueError, match="n_layers"):
            AttentionModel(d_model, n_heads, n_layers, attention, residual)
        return
    m = AttentionModel(d_model, n_heads, n_layers, attention, residual, seed=0)
    y, attn = m(torch.randn(2, 5, d_model))
    assert y.shape == (2, 5, d_model) and len(attn) == n_layers and attn[0].shape == (2, n_heads, 5, 5)


@FAST
@given(field=st.sampled_from(["d_model", "n_heads", "n_layers"]), value=st.one_of(st.integers(-3, 0), bad_ints))
def test_invalid_model_sizes_raise(field, value):
    kwargs = {"d_model": 8, field: value}
    with pytest.raises(ValueError, match=field):
        AttentionModel(**kwargs)


@FAST
@given(
    name=st.text(min_size=1, max_size=8).filter(lambda s: s not in ATTENTION_RULES and not s.startswith("softmax_cap"))
)
def test_unknown_attention_raises(name):  # any name that is not a rule (hypothesis once drew "sigmoid", which is one)
    with pytest.raises(ValueError, match="attention"):
        AttentionModel(8, attention=name)


TASK = TriggerTask(d_model=6, seq_len=6)


@FAST
@given(
    steps=st.integers(1, 4),
    lr=st.floats(1e-5, 1e-1),
    batch_size=st.integers(1, 8),
    stop=st.one_of(st.none(), st.floats(1e-4, 10.0)),
    seed=st.integers(0, 2**31),
)
def test_valid_training_runs(steps, lr, batch_size, stop, seed):
    r = train(
        AttentionModel(6, seed=0),
        TASK,
        steps=steps,
        lr=lr,
        batch_size=batch_size,
        stop_linf=stop,
        seed=seed,
        progress=False,
    )
    assert 0 <= r.steps <= steps and all(math.isfinite(v) for v in r.history["loss"])


@FAST
@given(
    field=st.sampled_from(["steps", "lr", "batch_size", "stop_linf", "seed"]),
    value=st.one_of(
        st.integers(-5, 0), st.just(float("nan")), st.just(float("inf")), st.booleans(), st.text(max_size=2)
    ),
)
def test_invalid_training_args_raise(field, value):
    if field == "stop_linf" and value is False:
        value = 0  # False is 0, not None: invalid as well
    if field == "seed" and isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return  # seed 0 is valid
    kwargs = {"steps": 2, "lr": 1e-3, "progress": False, field: value}
    with pytest.raises(ValueError, match=field):
        train(AttentionModel(6), TASK, **kwargs)
