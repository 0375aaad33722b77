"""The certified bounds of attnsink.theory: they hold on heads built here, they bite, and bad
input is refused. "Holds" is checked against the task's own distribution, with the MSE
estimated on a large sample and passed with a margin (the bound needs MSE <= mse)."""

import math

import pytest
import torch

from attnsink import AttentionModel, TriggerTask, evaluate, train
from attnsink.construct import relu_solution, softmax_solution, with_attention
from attnsink.theory import (
    bos_mass_lower_bound,
    hull_distance_floor,
    mse_lower_bound,
    position_scale_error_bound,
    trigger_error_lower_bound,
    tube_probability,
)

TASK = TriggerTask()
NO_BOS = TriggerTask(bos=False)
DELTA = 0.05


def test_bos_bound_shape_and_rows():
    b = bos_mass_lower_bound(TASK, 3e-8)
    assert b.shape == (TASK.seq_len,) and b.dtype == torch.float64
    assert b[1] > 0.9 and (b[0] == 0) and (b[2:] == 0).all()  # row 1 only; BOS's own row is not certified
    looser = [bos_mass_lower_bound(TASK, mse)[1].item() for mse in (1e-8, 1e-7, 1e-6, 1e-5)]
    assert looser == sorted(looser, reverse=True) and looser[-1] == 0.0  # vacuous at large error, not negative
    assert bos_mass_lower_bound(TASK, 1e-7, delta=0.2)[1] > bos_mass_lower_bound(TASK, 1e-7, delta=0.01)[1]
    assert (bos_mass_lower_bound(TriggerTask(d_model=4), 1e-9) == 0).all()  # one noise coordinate: nothing


@pytest.mark.parametrize("mse", [0.0, -1e-6, math.nan, math.inf, True, "1e-6"])
def test_bos_bound_rejects_bad_mse(mse):
    with pytest.raises(ValueError, match="mse"):
        bos_mass_lower_bound(TASK, mse)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, math.nan, None])
def test_bos_bound_rejects_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        bos_mass_lower_bound(TASK, 1e-7, delta=delta)


def test_bos_bound_rejects_tasks_it_does_not_cover():
    with pytest.raises(ValueError, match="BOS"):
        bos_mass_lower_bound(NO_BOS, 1e-7)
    with pytest.raises(ValueError, match="residual"):
        bos_mass_lower_bound(TriggerTask(residual=True), 1e-7)
    with pytest.raises(ValueError, match="task"):
        bos_mass_lower_bound("paper", 1e-7)


def _fraction_below(model, bound, n=20_000):
    ev = evaluate(model, TASK, n=n, seed=11)
    return (ev.attn[0][:, 0, 1, 0] < bound).double().mean().item()


@pytest.mark.parametrize("margin", [8.0, 10.0, 12.0, 14.0])
def test_bos_bound_holds_on_hand_built_heads(margin):
    head = softmax_solution(TASK, margin)
    mse = evaluate(head, TASK, n=20_000, seed=5).errors["mse"]
    bound = bos_mass_lower_bound(TASK, 1.2 * mse, DELTA)[1].item()
    assert bound > 0 or margin < 10  # it bites once the error is small
    assert _fraction_below(head, bound) <= DELTA


def test_bos_bound_nearly_tight_on_worst_case_heads():
    """Heads in the theorem's class (linear values, weights any function of the sequence on the
    simplex) that keep a mass m off BOS at row 1 on a 2 * delta fraction of sequences and are
    exact everywhere else. The bound must allow that mass (else it would be false) and, to be
    worth anything, not allow much more."""
    gen = torch.Generator().manual_seed(3)
    b = TASK.sample(200_000, generator=gen)
    x1 = b.x[:, 1]  # value of token 1 = the token itself (value map: identity but BOS)
    chosen = x1[:, 2] > 1 - 4 * DELTA  # P(z > 1 - 4 delta) = 2 delta for z uniform on [-1, 1]
    for m in (1e-4, 1e-3, 1e-2):
        mse = (chosen * (m * x1).pow(2).sum(-1)).mean().item() / (TASK.seq_len * TASK.d_model)
        bound = bos_mass_lower_bound(TASK, 1.05 * mse, DELTA)[1].item()
        assert 1 - bound >= m, "the bound would exclude a head that exists"
        assert (1 - bound) / m < 20, f"loose by {(1 - bound) / m:.1f}x"


def test_bos_bound_above_half_for_a_trained_head():
    model = AttentionModel(TASK.d_model, attention="softmax", seed=0)
    result = train(model, TASK, steps=3000, lr=1e-3, seed=0, progress=False)
    assert result.stopped_early  # the paper's criterion: the batch's largest error below 5e-3
    mse = evaluate(model, TASK, n=20_000, seed=5).errors["mse"]
    bound = bos_mass_lower_bound(TASK, 1.2 * mse, DELTA)[1].item()
    assert bound > 0.5
    assert _fraction_below(model, bound) <= DELTA


def _relative_errors(model, task, n=20_000):
    ev = evaluate(model, task, n=n, seed=5)
    return ev.errors["rel_err_trigger"], ev.errors["rel_err_nontrigger"], ev.errors["mse"]


def _scaled_identity_head(task, scale, attention="softmax"):
    """Zero scores (uniform weights) and value map scale * identity: a head that trades the
    non-trigger rows' error against the trigger's."""
    head = AttentionModel(task.d_model, attention=attention, seed=0)
    with torch.no_grad():
        head.W_Q.zero_()
        head.W_V.copy_(torch.eye(task.d_model) * scale)
        head.W_O.copy_(torch.eye(task.d_model))
    return head


@pytest.mark.parametrize("cap", [0.0, 0.5, 0.9])
def test_capped_bound_holds_on_built_heads(cap):
    heads = [with_attention(softmax_solution(TASK, lam), f"softmax_cap{cap}") for lam in (0.0, 4.0, 12.0)]
    heads += [_scaled_identity_head(TASK, s, f"softmax_cap{cap}") for s in (0.0, 0.01, 0.1, 1.0)]
    floor = mse_lower_bound(TASK, cap=cap)
    assert floor > 0
    for head in heads:
        trig, nontrig, mse = _relative_errors(head, TASK)
        assert trig >= 0.97 * trigger_error_lower_bound(TASK, nontrig, cap=cap)  # 3%: the sample's signal estimate
        assert mse >= 0.97 * floor


def test_no_bos_bound_holds_on_built_heads():
    heads = [_scaled_identity_head(NO_BOS, s) for s in (0.0, 0.003, 0.03, 0.3, 1.0)]
    heads += [AttentionModel(NO_BOS.d_model, seed=s, init_std=0.3) for s in range(3)]
    floor = mse_lower_bound(NO_BOS)
    for head in heads:
        trig, nontrig, mse = _relative_errors(head, NO_BOS)
        assert trig >= 0.97 * trigger_error_lower_bound(NO_BOS, nontrig)
        assert mse >= 0.97 * floor


def test_trigger_bounds_values_and_monotone():
    m = TASK.n_noise
    j = torch.arange(2, TASK.seq_len, dtype=torch.float64)
    signal = (1 / j**2 + ((j - 1) / j) ** 2 + m / (3 * j)).mean()
    exact = ((m - 2) * (j - 1) / (3 * j**2)).mean() / signal  # no error allowed at non-trigger rows
    assert trigger_error_lower_bound(TASK, 0.0, cap=0.3) == pytest.approx(exact.item(), rel=1e-9)
    values = [trigger_error_lower_bound(TASK, r, cap=0.0) for r in (0.0, 1e-4, 1e-3, 1e-2, 1.0)]
    assert values == sorted(values, reverse=True) and values[-1] == 0.0
    caps = [mse_lower_bound(TASK, cap=c) for c in (0.0, 0.5, 0.9, 0.99)]
    assert caps == sorted(caps, reverse=True) and caps[-1] > 0


def test_trigger_bounds_reject_bad_input():
    with pytest.raises(ValueError, match="cap"):
        trigger_error_lower_bound(TASK, 0.0)  # with BOS a cap is needed
    with pytest.raises(ValueError, match="cap"):
        trigger_error_lower_bound(TASK, 0.0, cap=1.0)
    with pytest.raises(ValueError, match="cap"):
        mse_lower_bound(NO_BOS, cap=0.5)
    with pytest.raises(ValueError, match="rel_err_nontrigger"):
        trigger_error_lower_bound(NO_BOS, -1.0)
    with pytest.raises(ValueError, match="rel_err_nontrigger"):
        trigger_error_lower_bound(NO_BOS, math.nan)


def _noise_free_rms_error(model, task):
    """Root mean square over trigger positions of the error at the trigger, noise-free sequences."""
    j = torch.arange(2, task.seq_len)
    noise = torch.full((len(j), task.n_noise_positions, task.n_noise), 0.5)  # content coordinates 2u - 1 = 0
    b = task.build(j, noise)
    with torch.no_grad():
        y_hat, _ = model(b.x)
    return (y_hat - b.y)[b.is_trigger].pow(2).sum(-1).mean().sqrt().item()


def test_position_scale_bound():
    assert position_scale_error_bound(TASK, "relu") < 1e-12  # 1/max(i, 1): exact with BOS
    assert position_scale_error_bound(NO_BOS, "relu_visible") < 1e-12  # 1/(i+1): exact without BOS
    assert position_scale_error_bound(TASK, 3.0 / torch.arange(TASK.seq_len, dtype=torch.float64).clamp(min=1)) < 1e-12
    visible = position_scale_error_bound(TASK, "relu_visible")
    assert visible > 0.01 and position_scale_error_bound(NO_BOS, "relu") > 0.01
    # the bound holds on the construction with the wrong scale, and on random ReLU heads
    heads = [with_attention(relu_solution(TASK), "relu_visible")]
    heads += [AttentionModel(TASK.d_model, attention="relu_visible", seed=s, init_std=0.5) for s in range(3)]
    for head in heads:
        assert _noise_free_rms_error(head, TASK) >= visible - 1e-6
    with pytest.raises(ValueError, match="scale"):
        position_scale_error_bound(TASK, "softmax")
    with pytest.raises(ValueError, match="scale"):
        position_scale_error_bound(TASK, [1.0, 2.0])
    with pytest.raises(ValueError, match="scale"):
        position_scale_error_bound(TASK, torch.zeros(TASK.seq_len))
    with pytest.raises(ValueError, match="seq_len"):
        position_scale_error_bound(TriggerTask(seq_len=4), "relu")


@pytest.mark.parametrize("task, rule", [(TASK, "relu_visible"), (NO_BOS, "relu"), (TASK, "relu")])
def test_position_scale_bound_is_attained(task, rule):
    """Part 1 of the proposition: on the noise-free sequences some head of the class reaches
    the floor. The proof's head: the trigger query scores 1 on every key, BOS's value is 0,
    and the trigger's and the content token's values are the two least-squares fits."""
    n, L = task.d_model, task.seq_len
    pos = torch.arange(L, dtype=torch.float64)
    g = 1.0 / pos.clamp(min=1.0) if rule == "relu" else 1.0 / (pos + 1.0)
    j = torch.arange(2, L)
    count = (j - task.first_content).double()  # content tokens before the trigger
    design = torch.stack([g[j], g[j] * count], dim=1)
    trig = torch.linalg.lstsq(design, (1 / (count + 1))[:, None]).solution.flatten()  # p, q
    bias = torch.linalg.lstsq(design, (count / (count + 1))[:, None]).solution.flatten()  # p', q'
    qk, vo = torch.zeros(n, n), torch.zeros(n, n)
    qk[1, 0] = qk[1, 1] = qk[1, n - 1] = 1.0  # the trigger query scores 1 on every key
    vo[1, 1], vo[1, n - 1] = trig[0], bias[0]  # V(trigger) = p e_1 + p' e_b
    vo[n - 1, 1], vo[n - 1, n - 1] = trig[1], bias[1]  # V(content) = q e_1 + q' e_b
    model = AttentionModel(n, attention=rule)
    with torch.no_grad():
        model.W_Q.copy_(qk[None, None])
        model.W_K.copy_(torch.eye(n)[None, None])
        model.W_V.copy_(vo[None, None])
        model.W_O.copy_(torch.eye(n)[None, None])
    floor = position_scale_error_bound(task, rule)
    assert _noise_free_rms_error(model, task) == pytest.approx(floor, abs=1e-5)


def test_hull_distance_floor():
    before, after = hull_distance_floor(softmax_solution(TASK, 4.0), TASK)
    assert before == pytest.approx(1.0) and after == pytest.approx(1 / math.sqrt(2))
    from attnsink.metrics import sink_bound_terms

    for s in range(3):
        head = AttentionModel(TASK.d_model, seed=s, init_std=0.5)
        before, after = hull_distance_floor(head, TASK)
        terms = sink_bound_terms(head, TASK, n=50)
        assert (terms["d_upper"] >= min(before, after) - 1e-5).all()  # no hull point closer than the floor
    with pytest.raises(ValueError, match="one-layer"):
        hull_distance_floor(AttentionModel(TASK.d_model, n_heads=2), TASK)


def test_hull_distance_floor_with_dependent_noise_rows():
    """A value map whose bias row equals a noise row, and another noise row zero: the content
    token with that noise coordinate at -1 has value 0, so no floor above 0 is true."""
    for s in range(5):
        head = AttentionModel(TASK.d_model, seed=s, init_std=0.5)
        with torch.no_grad():
            head.W_O[0, 0] = torch.eye(TASK.d_model)
            head.W_V[0, 0, 2] = 0.0
            head.W_V[0, 0, TASK.d_model - 1] = head.W_V[0, 0, TASK.d_model - 2]
        before, after = hull_distance_floor(head, TASK)
        assert before < 1e-6 and after < 1e-6


def test_tube_probability_against_sampling():
    assert tube_probability(1, 0.01) == 1.0
    gen = torch.Generator().manual_seed(0)
    for m in (2, 3, 5):
        z = torch.rand(200_000, m, generator=gen) * 2 - 1
        v = torch.ones(m) / math.sqrt(m)  # the cube's diagonal, the longest chord
        dist = (z - (z @ v)[:, None] * v).norm(dim=-1)
        for radius in (0.1, 0.3):
            assert (dist <= radius).double().mean().item() <= tube_probability(m, radius)
