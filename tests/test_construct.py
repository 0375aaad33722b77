import math

import pytest
import torch

from attnsink import TriggerTask, evaluate
from attnsink.construct import relu_solution, softmax_solution, with_attention

TASK = TriggerTask()


def draw(n=10_000, seed=123, task=TASK):
    return task.sample(n, generator=torch.Generator().manual_seed(seed))


def test_relu_solution_is_exact_and_off():
    model = relu_solution(TASK)
    b = draw()
    with torch.no_grad():
        y_hat, (a,) = model(b.x)
    assert (y_hat - b.y).abs().max().item() <= 1e-5
    off_rows = ~b.is_trigger  # every non-trigger position, BOS's own row included
    assert (a[:, 0][off_rows] == 0).all()  # exactly zero on every key
    trig = a[:, 0][b.is_trigger]  # (n, key): 1/j on keys 1..j, 0 on BOS and later keys
    j = b.trigger_pos
    expected = torch.zeros_like(trig)
    for i in range(len(j)):
        expected[i, 1 : j[i] + 1] = 1.0 / j[i]
    torch.testing.assert_close(trig, expected)


def test_relu_solution_other_task_sizes():
    for d, L in ((5, 4), (32, 64)):
        task = TriggerTask(d_model=d, seq_len=L)
        b = draw(2000, task=task)
        with torch.no_grad():
            y_hat, _ = relu_solution(task)(b.x)
        assert (y_hat - b.y).abs().max().item() <= 1e-5


def test_visible_key_scale_leaves_an_error_but_no_sink():
    model = with_attention(relu_solution(TASK), "relu_visible")
    b = draw(2000)
    with torch.no_grad():
        y_hat, (a,) = model(b.x)
    # at the trigger j the weights are 1/(j+1): the output is j/(j+1) of the mean
    torch.testing.assert_close(y_hat[b.is_trigger], b.y[b.is_trigger] * (b.trigger_pos / (b.trigger_pos + 1))[:, None])
    assert (y_hat - b.y).abs().max() > 0.01
    assert (a[:, 0][~b.is_trigger] == 0).all()


def test_softmax_solution_error_falls_and_bos_mass_rises():
    errors, masses = [], []
    for margin in (0.0, 2.0, 5.0, 10.0, 20.0):
        s = evaluate(softmax_solution(TASK, margin), TASK, n=500).summary()
        errors.append(s["mse"])
        masses.append(s["bos_mass_nontrigger"])
    assert all(e1 > e2 for e1, e2 in zip(errors, errors[1:]))
    assert all(m1 < m2 for m1, m2 in zip(masses, masses[1:]))
    assert masses[-1] > 1 - 1e-6 and errors[-1] < 1e-12
    assert masses[0] < 0.3  # margin 0: uniform weights, no sink


def test_softmax_solution_weights_are_the_formula():
    margin = 3.0
    b = draw(50)
    with torch.no_grad():
        _, (a,) = softmax_solution(TASK, margin)(b.x)
    e = torch.tensor(margin).exp()
    for n in range(50):
        j = int(b.trigger_pos[n])
        for i in range(1, 16):
            if i == j:
                torch.testing.assert_close(a[n, 0, i, 1 : j + 1], torch.full((j,), (e / (1 + j * e)).item()))
            else:
                torch.testing.assert_close(a[n, 0, i, 0], e / (e + i))


@pytest.mark.parametrize("margin", [-1.0, float("nan"), float("inf"), "big"])
def test_bad_margin(margin):
    with pytest.raises(ValueError, match="margin"):
        softmax_solution(TASK, margin)


def test_constructions_need_the_papers_task():
    with pytest.raises(ValueError, match="residual"):
        relu_solution(TriggerTask(residual=True))
    with pytest.raises(ValueError, match="bos"):
        softmax_solution(TriggerTask(bos=False), 1.0)


def test_cancelling_heads_solve_the_task_without_a_sink():
    from attnsink.construct import cancelling_heads

    task = TriggerTask(residual=True)
    b = draw(2000, task=task)
    errors = []
    for margin in (0.0, 5.0, 10.0, 25.0):
        model = cancelling_heads(task, margin)
        with torch.no_grad():
            y_hat, (a,) = model(b.x)
        errors.append((y_hat - b.y).abs().max().item())
        rows = b.is_nontrigger
        i = torch.arange(task.seq_len).float()
        # at non-trigger rows both heads spread evenly over keys 0..i: weight 1/(i+1) on BOS
        expected = (1 / (i + 1)).expand(len(b.x), -1)[rows]
        for head in range(2):
            torch.testing.assert_close(a[:, head, :, 0][rows], expected)
        # at the trigger row head 2 parks on BOS as the margin grows
        assert a[:, 1, :, 0][b.is_trigger].min() >= 1 / (1 + 15 * math.exp(-margin)) - 1e-6
    assert errors[0] > 0.5 and errors == sorted(errors, reverse=True) and errors[-1] < 1e-5


def test_cancelling_heads_need_the_residual_task():
    from attnsink.construct import cancelling_heads

    with pytest.raises(ValueError, match="residual"):
        cancelling_heads(TriggerTask(), 5.0)
    with pytest.raises(ValueError, match="margin"):
        cancelling_heads(TriggerTask(residual=True), -1.0)
