import pytest
import torch

from attnsink import AttentionModel, TriggerTask
from attnsink.attention import causal_mask, relu, softmax


def batch(n=8, **kw):
    return TriggerTask(**kw).sample(n, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("attention", ["softmax", "relu"])
def test_shapes(attention):
    m = AttentionModel(16, n_heads=3, n_layers=2, attention=attention, residual=True, seed=0)
    y_hat, attn = m(batch().x)
    assert y_hat.shape == (8, 16, 16)
    assert len(attn) == 2 and all(a.shape == (8, 3, 16, 16) for a in attn)


def test_softmax_rows_sum_to_one_over_causal_keys():
    m = AttentionModel(16, n_heads=2, seed=0, init_std=1.0)  # large weights: far from uniform
    _, (a,) = m(batch().x)
    torch.testing.assert_close(a.sum(-1), torch.ones(8, 2, 16))
    assert (a.masked_select(~causal_mask(16, a.device)) == 0).all()
    assert (a[..., 0, 0] == 1).all()


def test_relu_divides_by_max_i_1():
    scores = torch.randn(5, 1, 6, 6)
    mask = causal_mask(6, scores.device)
    w = relu(scores, mask)
    for i in range(6):
        for k in range(6):
            expected = torch.clamp(scores[:, 0, i, k], min=0) / max(i, 1) if k <= i else torch.zeros(5)
            torch.testing.assert_close(w[:, 0, i, k], expected)


def test_softmax_rule_matches_formula():
    scores = torch.randn(3, 2, 5, 5)
    w = softmax(scores, causal_mask(5, scores.device))
    for i in range(5):
        e = scores[..., i, : i + 1].exp()
        torch.testing.assert_close(w[..., i, : i + 1], e / e.sum(-1, keepdim=True))


def test_forward_matches_direct_formula():
    torch.manual_seed(0)
    m = AttentionModel(16, n_heads=2, seed=4, init_std=0.3)
    x = batch(n=3).x
    y_hat, (a,) = m(x)
    expected = torch.zeros(3, 16, 16)
    for h in range(2):
        q, k, v = x @ m.W_Q[0, h], x @ m.W_K[0, h], x @ m.W_V[0, h]
        s = (q @ k.transpose(1, 2)).masked_fill(~torch.ones(16, 16, dtype=torch.bool).tril(), -torch.inf)
        expected += (s.softmax(-1) @ v) @ m.W_O[0, h]
    torch.testing.assert_close(y_hat, expected, rtol=1e-4, atol=1e-6)


def test_residual_adds_layer_output():
    m = AttentionModel(16, n_layers=1, residual=True, seed=0)
    plain = AttentionModel(16, n_layers=1, residual=False, seed=0)
    x = batch().x
    torch.testing.assert_close(m(x)[0], x + plain(x)[0])


def test_init_is_paper_init_and_seeded():
    m = AttentionModel(64, n_heads=4, seed=0)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        w = getattr(m, name)
        assert w.shape == (1, 4, 64, 64)
        assert abs(w.std().item() - 0.02) < 0.001 and abs(w.mean().item()) < 0.001
    assert torch.equal(AttentionModel(16, seed=3).W_Q, AttentionModel(16, seed=3).W_Q)
    assert not torch.equal(AttentionModel(16, seed=3).W_Q, AttentionModel(16, seed=4).W_Q)
    assert sum(p.numel() for p in AttentionModel(16).parameters()) == 4 * 16 * 16  # no biases


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"attention": "linear"}, "attention"),
        ({"n_heads": 0}, "n_heads"),
        ({"n_layers": 0}, "n_layers"),
        ({"n_layers": 2}, "n_layers"),  # needs residual
        ({"residual": "yes"}, "residual"),
        ({"seed": -1}, "seed"),
    ],
)
def test_invalid_model(kwargs, name):
    with pytest.raises(ValueError, match=name):
        AttentionModel(16, **kwargs)


def test_invalid_d_model_and_input():
    with pytest.raises(ValueError, match="d_model"):
        AttentionModel(0)
    with pytest.raises(ValueError, match="shape"):
        AttentionModel(16)(torch.zeros(2, 5, 8))


@pytest.mark.parametrize("init_std", [True, float("inf"), 0.0])
def test_invalid_init_std(init_std):
    with pytest.raises(ValueError, match="init_std"):
        AttentionModel(16, init_std=init_std)


# ---- the other attention rules, each against its formula on a small hand-made example ----
from attnsink.attention import (  # noqa: E402
    clipped_softmax,
    relu_visible,
    sigmoid,
    sigmoid_norm,
    sink_logit,
    softmax1,
)

L = 5
MASK = causal_mask(L, torch.device("cpu"))
SCORES = torch.tensor([[0.3, -1.2, 2.0, 0.1, -0.4]]).repeat(L, 1)[None, None] + torch.arange(L)[:, None] * 0.1


def rowwise(fn):
    """Apply fn(visible_scores, i) to every row i of SCORES: the direct formula, one row at a time."""
    out = torch.zeros(1, 1, L, L)
    for i in range(L):
        out[0, 0, i, : i + 1] = fn(SCORES[0, 0, i, : i + 1], i)
    return out


def test_relu_visible_formula():
    torch.testing.assert_close(relu_visible(SCORES, MASK), rowwise(lambda s, i: s.clamp(min=0) / (i + 1)))


def test_softmax1_formula_and_off_state():
    torch.testing.assert_close(softmax1(SCORES, MASK), rowwise(lambda s, i: s.exp() / (1 + s.exp().sum())))
    assert softmax1(torch.full((1, 1, L, L), -200.0), MASK).abs().max() == 0  # a row can be exactly 0


def test_sink_logit_formula_and_off_state():
    sink = torch.tensor([0.7])
    got = sink_logit(SCORES, MASK, sink=sink)
    torch.testing.assert_close(got, rowwise(lambda s, i: s.exp() / (sink.exp() + s.exp().sum())))
    assert sink_logit(SCORES, MASK, sink=torch.tensor([200.0])).abs().max() == 0


def test_sigmoid_formulas_and_off_state():
    expected = rowwise(lambda s, i: torch.sigmoid(s - torch.log(torch.tensor(i + 1.0))))
    torch.testing.assert_close(sigmoid(SCORES, MASK), expected)
    torch.testing.assert_close(sigmoid_norm(SCORES, MASK), expected / expected.sum(-1, keepdim=True))
    assert sigmoid(torch.full((1, 1, L, L), -1000.0), MASK).abs().max() == 0
    torch.testing.assert_close(sigmoid_norm(torch.full((1, 1, L, L), -50.0), MASK).sum(-1), torch.ones(1, 1, L))


def test_clipped_softmax_formula_and_zeros():
    gamma = -0.03
    expected = rowwise(lambda s, i: ((1 - gamma) * s.softmax(-1) + gamma).clamp(0, 1))
    torch.testing.assert_close(clipped_softmax(SCORES, MASK), expected)
    # a key whose probability is below -gamma / (1 - gamma) gets exactly 0
    scores = torch.tensor([[[[0.0, -9.0], [0.0, -9.0]]]])
    w = clipped_softmax(scores, causal_mask(2, torch.device("cpu")))
    p0 = torch.tensor([0.0, -9.0]).softmax(-1)[0].item()
    assert w[0, 0, 1, 1] == 0 and w[0, 0, 1, 0].item() == pytest.approx(1.03 * p0 - 0.03)


@pytest.mark.parametrize("rule", [softmax1, relu_visible, sigmoid, sigmoid_norm, clipped_softmax])
def test_masked_keys_get_zero(rule):
    w = rule(torch.randn(2, 3, L, L), MASK)
    assert (w.masked_select(~MASK) == 0).all()


def test_gated_model_output_and_off_state():
    m = AttentionModel(16, n_heads=2, attention="gated", seed=0, init_std=0.3)
    x = batch(n=3).x
    y_hat, (a,) = m(x)
    expected = torch.zeros(3, 16, 16)
    for h in range(2):
        q, k, v = x @ m.W_Q[0, h], x @ m.W_K[0, h], x @ m.W_V[0, h]
        s = (q @ k.transpose(1, 2)).masked_fill(~torch.ones(16, 16, dtype=torch.bool).tril(), -torch.inf)
        gate = torch.sigmoid(x @ m.W_G[0, h])  # (batch, seq): one gate per query
        expected += gate[..., None] * ((s.softmax(-1) @ v) @ m.W_O[0, h])
    torch.testing.assert_close(y_hat, expected, rtol=1e-4, atol=1e-6)
    with torch.no_grad():
        m.W_G.fill_(-100.0)  # the gate closes: the head outputs exactly nothing
    y_off, (a_off,) = m(x.abs())
    assert y_off.abs().max() == 0 and a_off.abs().max() == 0


def test_sink_logit_model_has_a_learned_sink_per_head():
    m = AttentionModel(8, n_heads=3, n_layers=2, attention="sink_logit", residual=True)
    assert m.sink.shape == (2, 3) and m.sink.requires_grad
    with torch.no_grad():
        m.sink.fill_(100.0)
    _, attn = m(torch.randn(2, 6, 8))
    assert all(a.abs().max() < 1e-30 for a in attn)


def test_softmax_capped():
    from attnsink.attention import get_rule

    rule = get_rule("softmax_cap0.3")
    scores = torch.randn(4, 2, L, L, requires_grad=True)
    with torch.no_grad():
        scores[..., 0] += 6.0  # BOS would take nearly everything
    w = rule(scores, MASK)
    torch.testing.assert_close(w.sum(-1), torch.ones(4, 2, L))
    assert (w[..., 1:, 0] <= 0.3 + 1e-6).all() and (w[..., 0, 0] == 1).all()
    assert (w.masked_select(~MASK) == 0).all()
    w.sum().backward()
    assert torch.isfinite(scores.grad).all()
    low = get_rule("softmax_cap1.0")(scores.detach(), MASK)
    torch.testing.assert_close(low, softmax(scores.detach(), MASK))  # cap 1: plain softmax
    for bad in ("softmax_cap1.5", "softmax_cap-0.1", "softmax_capx"):
        with pytest.raises(ValueError, match="cap"):
            get_rule(bad)


def test_from_config_rebuilds_the_architecture():
    m = AttentionModel(8, 2, 3, "gated", True, seed=4, mlp=True, layer_norm=True)
    again = AttentionModel.from_config(m.config, seed=4)
    assert again.config == m.config
    for (name, p), q in zip(m.named_parameters(), again.parameters()):
        assert torch.equal(p, q), name
    assert AttentionModel.from_config({"d_model": 8}).config["attention"] == "softmax"
    with pytest.raises(ValueError, match="n_head"):
        AttentionModel.from_config({"d_model": 8, "n_head": 2})


def test_argument_checks_name_the_parameter():
    from attnsink._checks import check_bool, check_int, check_number

    assert check_int("n", 3, 1) == 3 and check_bool("flag", False) is False and check_number("lr", 1e-3) == 1e-3
    for call, name in [
        (lambda: check_int("n_heads", True, 1), "n_heads"),
        (lambda: check_int("seed", -1, 0), "seed"),
        (lambda: check_int("trigger_pos", 9, 2, 8), "trigger_pos"),
        (lambda: check_bool("residual", 1), "residual"),
        (lambda: check_number("lr", 0.0), "lr"),
        (lambda: check_number("lr", float("nan")), "lr"),
        (lambda: check_number("delta", 1.0, high=1.0), "delta"),
        (lambda: check_number("cap", False, low_open=False), "cap"),
    ]:
        with pytest.raises(ValueError, match=name):
            call()
    assert check_number("cap", 0.0, low_open=False, high=1.0) == 0.0
