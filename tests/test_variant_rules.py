"""The classes of :data:`attnsink.experiments.VARIANT_RULES` against the row sums the rules can reach."""

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from attnsink.attention import CLIP_GAMMA, causal_mask, get_rule
from attnsink.experiments import VARIANT_RULES
from attnsink.model import AttentionModel

L = 16
MASK = causal_mask(L, torch.device("cpu"))


def scores(scale: float, seed: int = 0) -> torch.Tensor:
    """(batch, heads, query, key) random scores, up to ``scale`` in size."""
    return scale * torch.randn(64, 1, L, L, generator=torch.Generator().manual_seed(seed))


def weights(rule: str, s: torch.Tensor) -> torch.Tensor:
    kwargs = {"sink": torch.zeros(1)} if rule == "sink_logit" else {}
    return get_rule(rule)(s, MASK, **kwargs)


def test_every_rule_has_a_known_class():
    assert set(VARIANT_RULES.values()) == {"simplex", "partial", "off state"}
    assert VARIANT_RULES["clipped_softmax"] == "partial" and VARIANT_RULES["gated"] == "off state"


@pytest.mark.parametrize("rule", [r for r, c in VARIANT_RULES.items() if c == "simplex" and r != "gated"])
@pytest.mark.parametrize("scale", [0.1, 3.0, 30.0])
def test_simplex_rules_rows_sum_to_one(rule, scale):
    w = weights(rule, scores(scale))
    assert (w >= 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(64, 1, L))


@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0, 10.0, 100.0])
def test_partial_rule_rows_sum_between_one_plus_gamma_i_and_one(scale):
    (rule,) = [r for r, c in VARIANT_RULES.items() if c == "partial"]
    w = weights(rule, scores(scale))
    s = w.sum(-1)  # (batch, heads, query)
    floor = 1 + CLIP_GAMMA * torch.arange(L)  # row i: at least 1 + gamma i (rows of fewer than 35 keys)
    assert (s >= floor - 1e-6).all() and (s <= 1 + 1e-6).all()
    assert (w[..., 0, 0] == 1).all()  # BOS's own row keeps weight 1: a_00 = 1
    assert (w <= 1).all()
    # the floor is reached: equal scores leave every weight unclipped, and row i sums to 1 + gamma i
    torch.testing.assert_close(weights(rule, torch.zeros(1, 1, L, L)).sum(-1)[0, 0], floor.float())


@pytest.mark.parametrize("rule", [r for r, c in VARIANT_RULES.items() if c == "off state" and r != "gated"])
def test_off_state_rules_can_zero_a_row(rule):
    s = torch.full((1, 1, L, L), -1000.0)
    if rule == "sink_logit":
        w = get_rule(rule)(torch.zeros(1, 1, L, L), MASK, sink=torch.tensor([1000.0]))
    else:
        w = weights(rule, s)
    assert w.abs().max() == 0


def test_gated_is_off_state():
    m = AttentionModel(16, attention="gated", seed=0)
    with torch.no_grad():
        m.W_G.fill_(-100.0)
    _, (a,) = m(torch.rand(2, L, 16))
    assert a.abs().max() == 0


def test_variants_summary_colours_every_class():
    from attnsink import plots

    runs = [
        {"attention": r, "no_bos": nb, "prediction": c, "bos_mass_nontrigger": 0.5, "rel_err_trigger": 0.1}
        for r, c in VARIANT_RULES.items()
        for nb in (False, True)
    ]
    fig = plots.variants_summary(runs)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["simplex", "partial", "off state"]
    matplotlib.pyplot.close(fig)


def test_relu_visible_is_exact_without_bos():
    """Chapter 6's claim: with the trigger query scoring 1 on every key and every other query
    scoring 0, relu_visible (scale 1/(i+1)) outputs the exact target of the task without BOS."""
    from attnsink import AttentionModel, TriggerTask
    from attnsink.task import TRIGGER

    task = TriggerTask(bos=False)
    n = task.d_model
    model = AttentionModel(n, attention="relu_visible")
    qk = torch.zeros(n, n)
    qk[TRIGGER, n - 1] = qk[TRIGGER, TRIGGER] = 1.0  # bias channel (content) and trigger channel
    with torch.no_grad():
        model.W_Q.copy_(qk[None, None])
        for w in (model.W_K, model.W_V, model.W_O):
            w.copy_(torch.eye(n)[None, None])
    batch = task.sample(300, generator=torch.Generator().manual_seed(0))
    y_hat, _ = model(batch.x)
    torch.testing.assert_close(y_hat, batch.y, atol=1e-6, rtol=0)
