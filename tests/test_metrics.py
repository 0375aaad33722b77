import math

import pytest
import torch

from attnsink import AttentionModel, TriggerTask, evaluate
from attnsink.metrics import attn_mass, bos_mass, bos_share, bos_value_ratio, sink_rate, task_errors


def one_hot_rows(L, key):
    a = torch.zeros(1, 1, L, L)
    a[..., key] = 1.0
    return a


def test_bos_and_attn_mass_known_answer():
    L = 4
    a = torch.zeros(2, 2, L, L)  # (batch, heads, query, key)
    a[:, 0, :, 0] = 1.0  # head 0: pure sink
    a[:, 1, :, 0] = 0.25  # head 1: 0.25 on BOS, 0.5 elsewhere
    a[:, 1, 1:, 1] = 0.5
    mask = torch.tensor([[False, True, False, True], [False, True, True, False]])
    torch.testing.assert_close(bos_mass(a, mask), torch.tensor([1.0, 0.25]))
    torch.testing.assert_close(attn_mass(a, mask), torch.tensor([1.0, 0.75]))
    torch.testing.assert_close(bos_share(a, mask), torch.tensor([1.0, 1 / 3]))


def test_masked_rows_only_count():
    a = torch.zeros(1, 1, 3, 3)
    a[0, 0, 1, 0] = 1.0  # row 1 on BOS
    a[0, 0, 2, 2] = 1.0  # row 2 elsewhere
    assert bos_mass(a, torch.tensor([[False, True, False]])).item() == 1.0
    assert bos_mass(a, torch.tensor([[False, False, True]])).item() == 0.0
    assert bos_mass(a, torch.tensor([[False, True, True]])).item() == 0.5


def test_leading_dims_for_stacks():
    a = torch.rand(5, 3, 2, 4, 4)  # (seeds, batch, heads, query, key)
    mask = torch.rand(5, 3, 4) > 0.3
    mask[..., 1] = True
    out = bos_mass(a, mask)
    assert out.shape == (5, 2)
    torch.testing.assert_close(out[2], bos_mass(a[2], mask[2]))


def test_bos_share_nan_for_switched_off_head():
    a = torch.zeros(1, 1, 3, 3)
    assert math.isnan(bos_share(a, torch.ones(1, 3, dtype=torch.bool)).item())


def test_sink_rate_threshold():
    L = 5
    sink = one_hot_rows(L, 0)
    diffuse = torch.ones(1, 1, L, L).tril() / torch.arange(1, L + 1)[:, None]
    attn = [torch.cat([sink, diffuse], dim=1), torch.cat([diffuse, diffuse], dim=1)]
    # diffuse head: weight on BOS averaged over queries 1..4 is (1/2+1/3+1/4+1/5)/4 = 0.32 > 0.3
    assert sink_rate(attn) == 1.0
    assert sink_rate(attn, eps=0.5) == 0.25
    with pytest.raises(ValueError, match="eps"):
        sink_rate(attn, eps=1.5)


def test_bos_value_ratio():
    task = TriggerTask(d_model=5, seq_len=6)
    b = task.sample(3, generator=torch.Generator().manual_seed(0))
    values = torch.ones(3, 1, 6, 5)
    values[:, :, 0] *= 0.1  # BOS's value one tenth as long
    values[:, 0][b.is_trigger] *= 100.0  # the trigger is not a content token: ignored
    torch.testing.assert_close(bos_value_ratio(values, b), torch.tensor([0.1]))


def test_task_errors():
    task = TriggerTask(d_model=4, seq_len=5)
    b = task.sample(10, generator=torch.Generator().manual_seed(0))
    perfect = task_errors(b.y.clone(), b, task)
    assert perfect == {"mse": 0.0, "linf": 0.0, "rel_err_trigger": 0.0, "rel_err_nontrigger": 0.0}
    zero = task_errors(torch.zeros_like(b.y), b, task)
    assert zero["rel_err_trigger"] == pytest.approx(1.0) and zero["rel_err_nontrigger"] == 0.0
    noisy = b.y.clone()
    noisy[b.is_nontrigger] += 0.5
    errs = task_errors(noisy, b, task)
    assert errs["linf"] == pytest.approx(0.5) and errs["rel_err_trigger"] == 0.0 and errs["rel_err_nontrigger"] > 0
    # residual task: errors relative to the update, not to x
    rtask = TriggerTask(d_model=4, seq_len=5, residual=True)
    rb = rtask.sample(10, generator=torch.Generator().manual_seed(0))
    assert task_errors(rb.x.clone(), rb, rtask)["rel_err_trigger"] == pytest.approx(1.0)


def test_errors_at_bos_row_count_as_nontrigger():
    task = TriggerTask(d_model=4, seq_len=5)
    b = task.sample(8, generator=torch.Generator().manual_seed(0))
    off = b.y.clone()
    off[:, 0] += 1.0  # wrong only at BOS's own row
    errs = task_errors(off, b, task)
    assert errs["rel_err_nontrigger"] > 0 and errs["rel_err_trigger"] == 0.0


# ---- the distance to a convex hull, and the terms of the sink inequality ----
from attnsink.metrics import hull_distance, sink_bound_terms  # noqa: E402


def test_hull_distance_known_answers():
    pts = torch.zeros(4, 3, 2)
    mask = torch.ones(4, 3, dtype=torch.bool)
    pts[0] = torch.tensor([[1.0, 1.0], [1.0, -1.0], [1.0, 5.0]])  # segment on x = 1: distance 1
    pts[1] = torch.tensor([[1.0, 0.0], [-1.0, 0.5], [0.0, -1.0]])  # surrounds the origin: 0
    pts[2] = torch.tensor([[2.0, 2.0], [3.0, 1.0], [9.0, 9.0]])  # closest point (2, 2)
    pts[3] = torch.tensor([[3.0, 4.0], [0.0, 0.0], [0.0, 0.0]])  # one point only
    mask[3, 1:] = False
    lower, upper = hull_distance(pts, mask)
    torch.testing.assert_close(lower, torch.tensor([1.0, 0.0, 8**0.5, 5.0]), atol=1e-5, rtol=0)
    assert (lower <= upper + 1e-6).all() and (upper - lower).max() < 1e-4
    with pytest.raises(ValueError, match="mask"):
        hull_distance(pts, torch.zeros(4, 3, dtype=torch.bool))


def test_hull_distance_random_against_sampling():
    g = torch.Generator().manual_seed(0)
    pts = torch.randn(20, 6, 4, generator=g) + 1.0
    lower, upper = hull_distance(pts)
    lam = torch.rand(20, 5000, 6, generator=g)
    lam = lam / lam.sum(-1, keepdim=True)
    sampled = (lam @ pts).norm(dim=-1).min(dim=-1).values  # random convex combinations are never shorter
    assert (sampled >= lower - 1e-5).all()


def test_sink_inequality_holds_for_random_heads():
    task = TriggerTask(d_model=8, seq_len=8)
    for seed in range(3):
        t = sink_bound_terms(AttentionModel(8, seed=seed, init_std=0.7), task, n=50)
        assert (t["mass_off_bos"] * t["d_lower"] <= t["err_row"] + t["err_bos"] + 1e-5).all()
    with pytest.raises(ValueError, match="one-layer"):
        sink_bound_terms(AttentionModel(8, n_heads=2), task)
    with pytest.raises(ValueError, match="bos"):
        sink_bound_terms(AttentionModel(8), TriggerTask(d_model=8, seq_len=8, bos=False))


def test_classify_head():
    from attnsink.metrics import HEAD_KINDS, classify_head

    assert classify_head(0.0, 0.01, float("nan")) == "off"
    assert classify_head(0.99, 1.0, 0.02) == "sink"
    assert classify_head(0.99, 1.0, 0.9) == "dormant"
    assert classify_head(0.2, 1.0, 0.1) == "diffuse"
    assert classify_head(2.0, 2.5, 0.1) == "sink"  # an unnormalised head that piles weight on BOS
    assert set(HEAD_KINDS) == {"off", "sink", "dormant", "diffuse"}


def test_per_head_trigger_row_of_the_constructions():
    from attnsink.construct import relu_solution, softmax_solution

    task = TriggerTask()
    (soft,) = evaluate(softmax_solution(task, 20.0), task, n=200).per_head()
    assert soft["kind"] == "sink" and soft["trigger_content_weight"] == pytest.approx(1.0, abs=1e-6)
    assert soft["trigger_bos_weight"] < 1e-6
    (relu,) = evaluate(relu_solution(task), task, n=200).per_head()
    assert relu["kind"] == "off" and relu["attn_mass_nontrigger"] == 0.0
    assert relu["trigger_content_weight"] == pytest.approx(1.0, abs=1e-6) and relu["trigger_bos_weight"] == 0.0


@pytest.mark.parametrize("arch", [{}, {"mlp": True, "layer_norm": True}])
def test_per_head_anchor_inequality_on_random_deep_models(arch):
    """(1 - a_i0) D_i <= |o_i - o_0| for every head of every layer, whatever the weights."""
    from attnsink.metrics import head_bound_terms

    task = TriggerTask(residual=True)
    for seed in range(3):
        model = AttentionModel(16, 2, 3, residual=True, seed=seed, init_std=0.25, **arch)
        t = head_bound_terms(model, task, n=20, iters=500)
        lhs = t["mass_off_bos"] * t["d_lower"]
        assert (lhs <= t["moved"] + t["slack"] + 1e-12).all()
        assert t["d_lower"].median() > 0.1 and t["mass_off_bos"].median() > 0.1  # not a vacuous check
        assert (lhs / t["moved"]).max() > 0.99  # tight somewhere (row 1 has a single content value)
        assert set(t["layer"].tolist()) == {0, 1, 2} and set(t["head"].tolist()) == {0, 1}


def test_head_bound_terms_of_the_cancelling_heads():
    from attnsink.construct import cancelling_heads
    from attnsink.metrics import head_bound_terms

    task = TriggerTask(residual=True)
    t = head_bound_terms(cancelling_heads(task, 20.0), task, n=20, iters=500)
    # each head moves a lot off BOS's output, but the layer's sum does not move at all
    assert t["moved"].min() > 0.1 and t["layer_moved"].max() < 1e-6
    with pytest.raises(ValueError, match="softmax"):
        head_bound_terms(AttentionModel(16, attention="relu"), TriggerTask())
    with pytest.raises(ValueError, match="bos"):
        head_bound_terms(AttentionModel(16), TriggerTask(bos=False))


def test_what_a_sink_writes_on_heads_whose_answer_is_known():
    """The ablation test of what a head writes, on three hand-built heads: a sink that does
    nothing (BOS's value 0), a sink that writes the constant default, and the exact ReLU
    head at its trigger rows, where what it writes depends on the input."""
    from attnsink.construct import constant_sink_solution, relu_solution, softmax_solution
    from attnsink.metrics import ablate_trigger_heads, what_it_writes
    from attnsink.task import ConstantTriggerTask

    gen = torch.Generator().manual_seed(0)
    zero_task, const_task = TriggerTask(), ConstantTriggerTask(default=0.5)
    tol = 1e-6
    # a no-op sink: parked on BOS, whose value is zero; neither ablation moves the error
    noop = softmax_solution(zero_task, 30.0)
    batch = zero_task.sample(64, generator=gen)
    res = ablate_trigger_heads(noop, batch)
    assert res["mse"] < 1e-9 and what_it_writes(res["zero"].item(), res["mean"].item(), tol) == "nothing"
    # a constant-writing sink: parked on BOS, whose value is c; zero costs (c at every
    # non-trigger content row), the mean does not
    const = constant_sink_solution(const_task, 30.0)
    batch = const_task.sample(64, generator=gen)
    res = ablate_trigger_heads(const, batch)
    assert res["mse"] < 1e-9
    share = batch.is_nontrigger.float().mean().item()  # rows zeroed, of all rows
    assert res["zero"].item() == pytest.approx(share * 0.5**2, rel=1e-4)  # each zeroed row misses c
    assert what_it_writes(res["zero"].item(), res["mean"].item(), tol) == "constant"
    # the exact ReLU head at its trigger rows: what it writes there is the running mean
    relu = relu_solution(zero_task)
    batch = zero_task.sample(64, generator=gen)
    res = ablate_trigger_heads(relu, batch, batch.is_trigger)
    assert what_it_writes(res["zero"].item(), res["mean"].item(), tol) == "informative"
    # ... and at its other rows it is off: nothing to take away
    res = ablate_trigger_heads(relu, batch)
    assert res["zero"].item() == 0 and res["mean"].item() == 0
    with pytest.raises(ValueError, match="rows"):
        ablate_trigger_heads(relu, batch, batch.is_trigger.float())
    with pytest.raises(ValueError, match="kinds"):
        ablate_trigger_heads(relu, batch, kinds=("first",))


def test_an_identity_edit_leaves_the_model_unchanged():
    model = AttentionModel(16, n_heads=2, n_layers=2, residual=True, seed=3)
    x = TriggerTask(residual=True).sample(4, generator=torch.Generator().manual_seed(1)).x
    seen = []
    y, _ = model(x, edit=lambda layer, out: seen.append((layer, tuple(out.shape))) or out)
    assert torch.equal(y, model(x)[0]) and seen == [(0, (4, 2, 16, 16)), (1, (4, 2, 16, 16))]


def test_zeroing_every_head_at_once_sees_cancelling_constants():
    """Two heads that write +v and -v at the default rows: each costs alone, together nothing."""
    from attnsink.construct import softmax_solution
    from attnsink.metrics import ablate_trigger_heads, heads_add_up, zero_every_head

    task = TriggerTask()
    one = softmax_solution(task, 16.0)
    model = AttentionModel(16, n_heads=2, attention="softmax")
    v = torch.full((16,), 0.3)
    with torch.no_grad():
        for h, sign in ((0, 1.0), (1, -1.0)):
            model.W_Q[0, h] = one.W_Q[0, 0]
            model.W_K[0, h] = one.W_K[0, 0]
            model.W_V[0, h] = one.W_V[0, 0] * 0.5  # each writes half the running mean at the trigger
            model.W_V[0, h, 0] = sign * v  # BOS's value: +v in one head, -v in the other
            model.W_O[0, h] = one.W_O[0, 0]
    batch = task.sample(200, generator=torch.Generator().manual_seed(4))
    alone = ablate_trigger_heads(model, batch)["zero"][0]
    assert (alone > 1e-3).all() and abs(zero_every_head(model, batch)) < 1e-6
    # what they write there adds up to (nearly) nothing: the softmax weight off BOS is ~e^-16
    assert heads_add_up(model, batch) < 1e-5
    assert heads_add_up(one, batch) == pytest.approx(1.0)  # one head: its own write
    with pytest.raises(ValueError, match="rows"):
        zero_every_head(model, batch, batch.is_trigger.float())
    with pytest.raises(ValueError, match="rows"):
        heads_add_up(model, batch, batch.is_trigger.float())


def test_blocks_add_up_counts_the_mlps():
    """Without MLP blocks the heads are everything the model adds; with them, heads and MLPs
    together are the output less the input, and an MLP that writes minus the heads' constant
    makes the heads' sum large while the model adds nothing."""
    from attnsink.metrics import blocks_add_up, heads_add_up

    task = TriggerTask(residual=True)
    batch = task.sample(100, generator=torch.Generator().manual_seed(5))
    plain = AttentionModel(16, n_heads=2, n_layers=2, residual=True, seed=1, init_std=0.3)
    res = blocks_add_up(plain, batch)
    assert res["heads"] == pytest.approx(heads_add_up(plain, batch), rel=1e-5)
    assert res["mlps"] < 1e-5 and res["all"] == pytest.approx(res["heads"], rel=1e-5)
    # one head whose value is v for every token (x . (e_0 + e_1 + e_15) = 1 for each), so it
    # writes v at every row, and an MLP block that writes -v: the model adds nothing
    model = AttentionModel(16, residual=True, mlp=True, seed=2)
    v = torch.linspace(-1.0, 1.0, 16)
    with torch.no_grad():
        model.W_V.zero_()
        model.W_V[0, 0, [0, 1, 15]] = v
        model.W_O.copy_(torch.eye(16))
        for name in ("W_in", "b_in", "W_out"):
            getattr(model, name).zero_()
        model.b_out.copy_(-v[None])
    got = blocks_add_up(model, batch)
    assert got["heads"] == pytest.approx(1.0)  # one head: its own write
    assert got["mlps"] == pytest.approx(1.0) and got["all"] < 1e-5 and got["spread"] < 1e-5
    with pytest.raises(ValueError, match="residual"):
        blocks_add_up(AttentionModel(16), task.sample(4))


def test_sink_timing_reads_training_steps_even_from_a_thinned_history():
    import numpy as np

    from attnsink.metrics import sink_timing

    # every 10th step kept, as the store keeps a long run's history
    steps = np.arange(0, 100, 10)
    bos = np.array([0.1, 0.2, 0.5, 0.95, 0.99, 1, 1, 1, 1, 1])[:, None, None]
    loss = np.array([1.0, 0.5, 0.2, 0.09, 0.05, 0.009, 0.005, 0.004, 0.003, 0.002])
    t = sink_timing({"step": steps, "bos_mass": bos, "loss": loss})
    assert t == {"step_sink": 30, "step_loss": 30}
    assert sink_timing({"step": steps, "bos_mass": bos, "loss": loss}, loss_drop=0.01)["step_loss"] == 50
    never = sink_timing({"step": steps, "bos_mass": bos * 0, "loss": loss * 0 + 1})
    assert never == {"step_sink": None, "step_loss": None}
