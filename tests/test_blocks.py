"""The optional MLP and pre-LayerNorm blocks of AttentionModel (off by default)."""

import pytest
import torch
from torch.nn import functional as F

from attnsink import AttentionModel, TriggerTask
from attnsink.engine import train_seeds
from attnsink.model import MLP_RATIO
from attnsink.training import TrainResult


def batch(n=6):
    return TriggerTask(residual=True).sample(n, generator=torch.Generator().manual_seed(3))


def test_blocks_are_off_by_default_and_leave_attention_init_unchanged():
    plain = AttentionModel(16, 2, 2, residual=True, seed=5)
    both = AttentionModel(16, 2, 2, residual=True, seed=5, mlp=True, layer_norm=True)
    assert {n for n, _ in plain.named_parameters()} == {"W_Q", "W_K", "W_V", "W_O"}
    assert plain.config["mlp"] is False and plain.config["layer_norm"] is False
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        torch.testing.assert_close(plain.get_parameter(name), both.get_parameter(name))
    assert both.W_in.shape == (2, 16, MLP_RATIO * 16) and both.ln2_g.shape == (2, 16)


def test_block_forward_matches_a_direct_implementation():
    m = AttentionModel(16, 2, 2, residual=True, seed=1, init_std=0.3, mlp=True, layer_norm=True)
    with torch.no_grad():  # non-trivial LayerNorm and MLP parameters
        for name in ("ln1_g", "ln1_b", "ln2_g", "ln2_b", "b_in", "b_out"):
            m.get_parameter(name).normal_(generator=torch.Generator().manual_seed(len(name)))
    x = batch().x
    y_hat, attn = m(x)
    h = x
    for layer in range(2):
        a_in = F.layer_norm(h, (16,), m.ln1_g[layer], m.ln1_b[layer], eps=1e-5)
        out = 0
        for head in range(2):
            q, k = a_in @ m.W_Q[layer, head], a_in @ m.W_K[layer, head]
            s = (q @ k.transpose(-1, -2)).masked_fill(~torch.ones(16, 16, dtype=torch.bool).tril(), -torch.inf)
            w = s.softmax(-1)
            torch.testing.assert_close(w, attn[layer][:, head])
            out = out + w @ (a_in @ m.W_V[layer, head]) @ m.W_O[layer, head]
        h = h + out
        m_in = F.layer_norm(h, (16,), m.ln2_g[layer], m.ln2_b[layer], eps=1e-5)
        h = h + F.gelu(m_in @ m.W_in[layer] + m.b_in[layer]) @ m.W_out[layer] + m.b_out[layer]
    torch.testing.assert_close(y_hat, h, atol=1e-5, rtol=1e-5)


def test_mlp_alone_and_layer_norm_alone():
    x = batch().x
    for kw in ({"mlp": True}, {"layer_norm": True}):
        m = AttentionModel(16, 1, 2, residual=True, seed=0, **kw)
        y_hat, attn = m(x)
        assert y_hat.shape == x.shape and torch.isfinite(y_hat).all()
    ln_only = AttentionModel(16, 1, 1, residual=True, seed=0, layer_norm=True)
    assert not hasattr(ln_only, "ln2_g")  # no MLP: one LayerNorm per layer


@pytest.mark.parametrize("flag", ["mlp", "layer_norm"])
def test_blocks_need_the_residual_stream(flag):
    with pytest.raises(ValueError, match=flag):
        AttentionModel(16, **{flag: True})
    with pytest.raises(ValueError, match=flag):
        AttentionModel(16, residual=True, **{flag: 1})


def test_seeds_side_by_side_equal_single_runs_with_blocks():
    task = TriggerTask(residual=True)
    kw = dict(attention="softmax", n_heads=2, n_layers=2, mlp=True, layer_norm=True, steps=15, lr=1e-3)
    together = train_seeds(task, [0, 1], progress=False, **kw)
    alone = train_seeds(task, [1], progress=False, **kw)[0]
    for name, p in alone.model.named_parameters():
        torch.testing.assert_close(together[1].model.get_parameter(name), p, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(together[1].history["loss"], alone.history["loss"], atol=1e-6, rtol=1e-5)


def test_payload_round_trip_keeps_the_blocks():
    task = TriggerTask(residual=True)
    m = AttentionModel(16, 1, 2, residual=True, seed=2, mlp=True, layer_norm=True)
    (r,) = train_seeds(task, models=[m], seeds=[2], steps=3, lr=1e-3, progress=False)
    back = TrainResult.from_payload(r.to_payload())
    assert back.model.config == m.config
    x = batch().x
    torch.testing.assert_close(back.model(x)[0], m(x)[0])
