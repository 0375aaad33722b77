import pytest
import torch

from attnsink import TriggerTask, evaluate

DEFAULT = TriggerTask()


def sample(task=DEFAULT, n=256, seed=0, **kw):
    return task.sample(n, generator=torch.Generator().manual_seed(seed), **kw)


def test_shapes_and_dtypes():
    b = sample(TriggerTask(d_model=8, seq_len=12), n=5)
    assert b.x.shape == b.y.shape == (5, 12, 8)
    assert b.trigger_pos.shape == (5,) and b.trigger_pos.dtype == torch.long
    assert b.is_trigger.shape == (5, 12) and b.is_trigger.dtype == torch.bool


def test_exactly_one_trigger_in_allowed_range():
    task = TriggerTask(seq_len=10)
    b = sample(task, n=4000)
    assert (b.is_trigger.sum(dim=1) == 1).all()
    assert torch.equal(b.is_trigger.float().argmax(dim=1), b.trigger_pos)
    assert b.trigger_pos.min() == 2 and b.trigger_pos.max() == 9  # every position 2..L-1 occurs
    assert set(b.trigger_pos.tolist()) == set(range(2, 10))


def test_token_coordinates():
    task = TriggerTask(d_model=7, seq_len=9)
    b = sample(task, n=300)
    x = b.x
    # BOS: indicator only
    assert torch.equal(x[:, 0], torch.nn.functional.one_hot(torch.tensor(0), 7).float().expand(300, 7))
    # BOS indicator nowhere else
    assert (x[:, 1:, 0] == 0).all()
    # trigger indicator exactly at the trigger
    assert torch.equal(x[:, :, 1] == 1, b.is_trigger)
    assert ((x[:, :, 1] == 0) | (x[:, :, 1] == 1)).all()
    # noise on every non-BOS token (trigger included), uniform on (-1, 1)
    noise = x[:, 1:, 2:6]
    assert noise.abs().max() <= 1 and noise.abs().min() > 0
    assert abs(noise.mean().item()) < 0.03 and abs(noise.var().item() - 1 / 3) < 0.02
    # bias: 1 on content tokens, 0 on BOS and on the trigger
    content = ~b.is_trigger
    content[:, 0] = False
    assert torch.equal(x[:, :, 6] == 1, content)
    assert ((x[:, :, 6] == 0) | (x[:, :, 6] == 1)).all()


def test_targets_are_mean_of_tokens_1_to_trigger():
    task = TriggerTask()
    b = sample(task, n=64)
    for i in range(64):
        j = int(b.trigger_pos[i])
        expected = torch.zeros(16, 16)
        expected[j] = b.x[i, 1 : j + 1].mean(dim=0)
        torch.testing.assert_close(b.y[i], expected)


def test_residual_targets_add_x():
    task = TriggerTask(residual=True)
    b = sample(task, n=32)
    plain = TriggerTask().sample(32, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(b.x, plain.x)
    torch.testing.assert_close(b.y, plain.x + plain.y)


def test_fixed_trigger_position():
    b = sample(n=10, trigger_pos=7)
    assert (b.trigger_pos == 7).all()
    assert b.is_nontrigger[:, 7].logical_not().all() and b.is_nontrigger[:, 0].logical_not().all()
    assert b.is_nontrigger.sum(dim=1).eq(14).all()


def test_seeded_sampling_is_deterministic():
    a, b = sample(seed=3), sample(seed=3)
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert not torch.equal(a.x, sample(seed=4).x)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"d_model": 2}, "d_model"),
        ({"d_model": 3.0}, "d_model"),
        ({"seq_len": 3}, "seq_len"),
        ({"seq_len": -1}, "seq_len"),
        ({"residual": 1}, "residual"),
    ],
)
def test_invalid_task(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TriggerTask(**kwargs)


@pytest.mark.parametrize("pos", [0, 1, 16, -1, 7.0])
def test_invalid_trigger_pos(pos):
    with pytest.raises(ValueError, match="trigger_pos"):
        TriggerTask().sample(4, trigger_pos=pos)


@pytest.mark.parametrize("n", [0, -3, 2.5])
def test_invalid_batch_size(n):
    with pytest.raises(ValueError, match="batch_size"):
        TriggerTask().sample(n)


def test_build_validates_its_inputs():
    task = TriggerTask(d_model=5, seq_len=6)
    noise = torch.rand(3, 5, 2)
    with pytest.raises(ValueError, match="trigger_pos"):
        task.build(torch.tensor([2, 0, 3]), noise)
    with pytest.raises(ValueError, match="trigger_pos"):
        task.build(torch.tensor([2, 6, 3]), noise)
    with pytest.raises(ValueError, match="trigger_pos"):
        task.build(torch.tensor([2.0, 3.0, 4.0]), noise)
    with pytest.raises(ValueError, match="noise"):
        task.build(torch.tensor([2, 3, 4]), torch.rand(3, 6, 2))


def test_the_constant_default_task_moves_every_target_but_the_trigger_by_c():
    from attnsink.construct import constant_sink_solution, softmax_solution
    from attnsink.task import ConstantTriggerTask
    from attnsink.theory import bos_mass_lower_bound

    for residual in (False, True):
        plain = TriggerTask(residual=residual).sample(8, generator=torch.Generator().manual_seed(2))
        task = ConstantTriggerTask(residual=residual, default=-0.25)
        moved = task.sample(8, generator=torch.Generator().manual_seed(2))
        assert torch.equal(moved.x, plain.x) and torch.equal(moved.trigger_pos, plain.trigger_pos)
        shift = moved.y - plain.y
        assert torch.all(shift[moved.is_trigger] == 0)
        assert torch.allclose(shift[~moved.is_trigger], task.constant.expand_as(shift[~moved.is_trigger]))
    zero = ConstantTriggerTask(default=0.0).sample(4, generator=torch.Generator().manual_seed(5))
    assert torch.equal(zero.y, TriggerTask().sample(4, generator=torch.Generator().manual_seed(5)).y)
    # the constant-writing sink solves it as the margin grows; the zero-default head does not
    task = ConstantTriggerTask(default=0.5)
    errs = [evaluate(constant_sink_solution(task, m), task, n=200).errors["mse"] for m in (4.0, 8.0, 16.0)]
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-5
    assert evaluate(softmax_solution(TriggerTask(), 16.0), task, n=200).errors["mse"] > 0.1
    for bad in (float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValueError, match="default"):
            ConstantTriggerTask(default=bad)
    with pytest.raises(ValueError, match="zero default"):
        bos_mass_lower_bound(task, 1e-4)
    with pytest.raises(ValueError, match="zero default"):
        softmax_solution(task, 4.0)
    with pytest.raises(ValueError, match="ConstantTriggerTask"):
        constant_sink_solution(TriggerTask(), 4.0)


def test_global_task_asks_the_whole_sequences_mean_at_the_trigger_or_everywhere_else():
    from attnsink.task import GlobalTriggerTask

    for residual in (False, True):
        zero = GlobalTriggerTask(residual=residual)
        b = zero.sample(5, generator=torch.Generator().manual_seed(0))
        m = b.x[:, 1:].mean(dim=1)  # every token after BOS, the ones after the trigger too
        base = b.x if residual else torch.zeros_like(b.x)
        rows = torch.arange(5)
        torch.testing.assert_close(b.y[rows, b.trigger_pos], base[rows, b.trigger_pos] + m)
        off = ~b.is_trigger
        torch.testing.assert_close(b.y[off], base[off])
        mirror = GlobalTriggerTask(residual=residual, default="mean")
        bm = mirror.sample(5, generator=torch.Generator().manual_seed(0))
        torch.testing.assert_close(bm.x, b.x)  # the same draws
        torch.testing.assert_close(bm.y[rows, bm.trigger_pos], base[rows, b.trigger_pos])
        torch.testing.assert_close(bm.y[off], base[off] + m[:, None].expand_as(b.x)[off])
    with pytest.raises(ValueError, match="default"):
        GlobalTriggerTask(default="one")
