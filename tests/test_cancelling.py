"""A residual softmax layer that solves the task exactly with no sink at any row i >= 1, and
the proved price of doing so (chapter "Several layers")."""

import math
import random
from fractions import Fraction

import pytest

from attnsink import TriggerTask
from attnsink.construct import cancelling_layer, cancelling_layer_rows, extremal_logits
from attnsink.theory import cancellation_weight_floor, fewest_cancelling_heads


def sequence(rng, seq_len, d_model, trigger_pos):
    """One sequence of the task in exact arithmetic: BOS, content tokens, one trigger."""
    rows = []
    for i in range(seq_len):
        row = [Fraction(0)] * d_model
        if i == 0:
            row[0] = Fraction(1)
        else:
            for d in range(2, d_model - 1):
                row[d] = Fraction(rng.randint(-999, 999), 1000)
            row[1 if i == trigger_pos else d_model - 1] = Fraction(1)
        rows.append(row)
    return rows


def spaced(cap, count):
    return [cap * Fraction(k, count) for k in range(1, count + 1)]


@pytest.mark.parametrize("seq_len", [3, 4, 7, 16])
@pytest.mark.parametrize("theta", [Fraction(1, 2), Fraction(9, 10)])
def test_the_layer_is_exact_and_never_sinks(seq_len, theta):
    cap = 2 * theta / (1 - theta)  # c / (c + 2) <= theta
    c = spaced(cap, seq_len - 1)
    alpha = cancelling_layer(seq_len, c)
    assert sum(alpha) == 0
    rng = random.Random(seq_len)
    for trigger_pos in range(2, seq_len):
        tokens = sequence(rng, seq_len, 8, trigger_pos)
        update, bos = cancelling_layer_rows(tokens, trigger_pos, c, alpha)
        for i, added in enumerate(update):  # the residual target adds the mean at the trigger, 0 elsewhere
            want = [sum(t[d] for t in tokens[1 : i + 1]) / i for d in range(8)] if i == trigger_pos else [0] * 8
            assert added == want, (trigger_pos, i)
        assert max(w for head in bos for w in head[1:]) <= theta  # no head above theta at any row i >= 1
    floor = cancellation_weight_floor(seq_len, float(theta))
    assert float(sum(abs(a) for a in alpha)) >= floor


@pytest.mark.parametrize("seq_len", range(3, 13))
@pytest.mark.parametrize("theta", [0.5, 0.6, 0.75, 0.9, 0.99])
def test_no_exact_layer_pays_less_than_the_floor(seq_len, theta):
    cap = Fraction(2 * theta / (1 - theta)).limit_denominator(10**6)
    rng = random.Random(100 * seq_len + int(100 * theta))
    floor = cancellation_weight_floor(seq_len, theta)
    candidates = [extremal_logits(seq_len, theta)]  # near the cheapest (LP: within 3% for L <= 8)
    for _ in range(20):  # random placements of the logits
        candidates.append(sorted({cap * Fraction(rng.randint(1, 10**4), 10**4) for _ in range(seq_len - 1)}))
    best = math.inf
    for c in candidates:
        if len(c) == seq_len - 1:
            best = min(best, float(sum(abs(a) for a in cancelling_layer(seq_len, c))))
    assert best >= floor * (1 - 1e-12)
    assert best < 1e3 * floor or theta > 0.7  # near the floor where the sinks are strictly capped
    if theta == 0.5 and seq_len <= 10:
        assert best < 2.5 * floor  # the doubled floor is within a small factor of what an exact layer pays


@pytest.mark.parametrize("theta", [Fraction(1, 2), Fraction(3, 4), Fraction(9, 10)])
def test_the_floor_is_tight_at_three_positions(theta):
    """L = 3: one trigger position, j = 2. Two heads with c = (eps, C) approach the floor
    F_3(theta) = 2 / theta (4 at theta = 1/2) from above: it is the infimum. (Their weights are
    +-2 / (theta - eps / (eps + 2)): head 2 sits at the cap, head 1 next to BOS-free.)"""
    cap = 2 * theta / (1 - theta)
    floor = cancellation_weight_floor(3, float(theta))
    assert floor == pytest.approx(float(2 / theta), rel=1e-12)
    gaps = []
    for k in range(2, 9):
        eps = Fraction(1, 10**k)
        weight = sum(abs(a) for a in cancelling_layer(3, [eps, cap]))
        assert weight > floor * (1 - 1e-12)
        gaps.append(float(weight) - floor)
    assert all(b < a for a, b in zip(gaps, gaps[1:])) and gaps[-1] < 1e-6 * floor
    assert cancellation_weight_floor(3, 0.5) == pytest.approx(4.0, rel=1e-12)


def _chebyshev(m, s):
    """T_m(s), exactly for a rational s."""
    a, b = Fraction(1), s
    for _ in range(m - 1):
        a, b = b, 2 * s * b - a
    return b if m >= 1 else a


@pytest.mark.parametrize("seq_len", range(3, 11))
@pytest.mark.parametrize("theta", [Fraction(1, 2), Fraction(2, 3), Fraction(9, 10)])
def test_the_proof_step_by_step(seq_len, theta):
    """The proof of thm-cancel-price, in exact arithmetic: its test function
    g(c) = Q(0) R(t) (1-t)^(-m) / Q(c) has sigma g in [0, 1] on (0, C] (sigma = (-1)^(m+1)), and
    every exact layer has sum_h alpha_h g(c_h) = -p with p = F_L(theta) / 2, so that
    sum_h |alpha_h| >= p / (1/2) = F_L(theta)."""
    m, cap = seq_len - 2, 2 * theta / (1 - theta)
    tau = cap / (cap + seq_len - 1)
    q0 = math.factorial(seq_len - 1)

    def R(t):
        return (_chebyshev(m, 2 * t / tau - 1) - (-1) ** m) / 2

    def g(c):
        t = c / (c + seq_len - 1)
        return q0 * R(t) / (1 - t) ** m / math.prod(c + j for j in range(2, seq_len))

    sigma = (-1) ** (m + 1)
    grid = [cap * Fraction(k, 200) for k in range(1, 201)] + [cap / 10**k for k in range(3, 9)]
    assert all(0 <= sigma * g(c) <= 1 for c in grid)  # one-signed, so |g - sigma/2| <= 1/2
    p = q0 * R(Fraction(1)) / (seq_len - 1) ** m
    assert float(2 * p) == pytest.approx(cancellation_weight_floor(seq_len, float(theta)), rel=1e-9)
    rng = random.Random(seq_len)
    for _ in range(3):
        c = sorted({cap * Fraction(rng.randint(1, 10**3), 10**3) for _ in range(seq_len - 1)})
        if len(c) < seq_len - 1:
            continue
        alpha = cancelling_layer(seq_len, c)
        assert sum(a * g(x) for a, x in zip(alpha, c)) == -p  # the partial-fraction identity, exactly
        assert sum(a * (g(x) - Fraction(sigma, 2)) for a, x in zip(alpha, c)) == -p  # shifted: the same
        assert sum(abs(a) for a in alpha) >= 2 * p


def test_the_floor_grows_faster_than_exponentially():
    floors = [cancellation_weight_floor(L, 0.5) for L in range(3, 20)]
    ratios = [b / a for a, b in zip(floors, floors[1:])]
    assert all(r2 > r1 for r1, r2 in zip(ratios, ratios[1:]))  # each extra position costs more than the last
    assert cancellation_weight_floor(16, 0.5) > 1e15
    assert cancellation_weight_floor(16, 0.9) < cancellation_weight_floor(16, 0.5)


def _solve_all_but_one(seq_len, c):
    """Solve sum(alpha) = 0 and the trigger equations for j = 2 .. L-2 with len(c) = L - 2 heads;
    return alpha and the residual of the last equation (j = L - 1)."""
    m = len(c)
    rows = [[Fraction(1)] * m + [Fraction(0)]] + [
        [1 / (x + j) for x in c] + [Fraction(1, j)] for j in range(2, seq_len - 1)
    ]
    for col in range(m):
        piv = next(r for r in range(col, m) if rows[r][col] != 0)
        rows[col], rows[piv] = rows[piv], rows[col]
        rows[col] = [v / rows[col][col] for v in rows[col]]
        for r in range(m):
            if r != col:
                rows[r] = [a - rows[r][col] * b for a, b in zip(rows[r], rows[col])]
    alpha = [rows[h][m] for h in range(m)]
    j = seq_len - 1
    return alpha, sum(a / (x + j) for a, x in zip(alpha, c)) - Fraction(1, j)


@pytest.mark.parametrize("seq_len", [6, 8, 16])
def test_fewest_heads(seq_len):
    m = seq_len - 2
    c = [Fraction(k, 2) for k in range(1, m)]  # L - 2 heads: exact only if the product of c is (L-1)!
    c.append(math.factorial(seq_len - 1) / math.prod(c))
    _, residual = _solve_all_but_one(seq_len, c)
    assert residual == 0  # L even: L - 2 heads suffice, with one logit large (a strong BOS weight at j = 2)
    c[-1] *= 2
    assert _solve_all_but_one(seq_len, c)[1] != 0  # another product: no exact solution
    heavy = c[-1] / (c[-1] + 2)
    assert fewest_cancelling_heads(seq_len, 0.5) == seq_len - 1
    assert fewest_cancelling_heads(seq_len, 0.999999) == m and float(heavy) > 0.5


def test_bad_arguments():
    with pytest.raises(ValueError, match="theta"):
        cancellation_weight_floor(16, 0.4)
    with pytest.raises(ValueError, match="seq_len"):
        cancellation_weight_floor(2, 0.5)
    with pytest.raises(ValueError, match="distinct"):
        cancelling_layer(4, [1, 1, 2])
    with pytest.raises(ValueError, match="seq_len - 1"):
        cancelling_layer(4, [1, 2])
    with pytest.raises(ValueError, match="theta"):
        extremal_logits(4, 0.4)


def _nodes(L=16, C=2.0):
    import numpy as np

    return [
        Fraction(C / 2 * (1 + np.cos(np.pi * (2 * k + 1) / (2 * (L - 1))))).limit_denominator(10**6)
        for k in range(L - 1)
    ]


def test_the_tradeoff_trades_weight_for_error_and_never_needs_a_sink():
    from attnsink.construct import cancelling_tradeoff

    lams = [10.0**-k for k in range(0, 13, 2)]
    path = cancelling_tradeoff(16, _nodes(), lams)
    for p in path:  # every non-trigger row cancels: the weights sum to zero
        assert abs(sum(p["alpha"])) <= 1e-9 * p["weight"]
        assert p["weight"] == pytest.approx(sum(abs(a) for a in p["alpha"]))
    # ridge: a smaller penalty buys a smaller residual with a larger (L2) weight
    l2 = [sum(a * a for a in p["alpha"]) for p in path]
    res = [sum(r * r for r in p["r"]) for p in path]
    assert all(a < b for a, b in zip(l2, l2[1:])) and all(a > b for a, b in zip(res, res[1:]))
    assert max(abs(r) for r in path[-1]["r"]) < 0.05 < max(abs(r) for r in path[0]["r"])
    # the exact layer's weight is the end of the road: far beyond any point of the path
    from attnsink.construct import cancelling_layer

    assert float(sum(abs(a) for a in cancelling_layer(16, _nodes()))) > 1e6 * path[-1]["weight"]
    with pytest.raises(ValueError, match="lams"):
        cancelling_tradeoff(16, _nodes(), [0.0])
    with pytest.raises(ValueError, match="c must"):
        cancelling_tradeoff(16, _nodes()[:-1], [1.0])


def test_the_frontier_measures_the_trigger_error_as_evaluate_does():
    from attnsink.analysis import cancelling_frontier, value_weight
    from attnsink.construct import cancelling_heads

    task = TriggerTask(residual=True)
    front = cancelling_frontier(task, _nodes(), [1.0, 1e-6], n=200)
    assert list(front.columns) == ["lam", "weight", "max_r", "rel_err_trigger"]
    assert (front.rel_err_trigger <= front.max_r**2 + 1e-12).all()  # a weighted mean of r_j^2
    assert front.rel_err_trigger.iloc[1] < front.rel_err_trigger.iloc[0]
    # value_weight: the two cancelling heads have value maps x and -x, each of operator norm 1
    assert value_weight(cancelling_heads(task, 5.0)) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="residual"):
        cancelling_frontier(TriggerTask(), _nodes(), [1.0])


def test_in_floating_point_the_exact_layer_computes_nothing_useful():
    """The exact layer's weights are about 1e17: in float64 its uniform rows cancel only to
    within their rounding, so it errs by far more than the targets' size; in exact
    arithmetic (the same function, Fractions) it is exact."""
    import numpy as np

    from attnsink.construct import cancelling_layer_float

    c = _nodes()
    alpha = cancelling_layer(16, c)
    rng = random.Random(0)
    x = sequence(rng, 16, 16, 7)
    exact, _ = cancelling_layer_rows(x, 7, c, alpha)
    small = [Fraction(1, 3), Fraction(2, 3), Fraction(3, 2)]  # three heads with modest weights: float agrees
    a3 = cancelling_layer(4, small)
    x4 = sequence(rng, 4, 8, 2)
    assert np.allclose(
        cancelling_layer_float(x4, 2, small, a3), np.array(cancelling_layer_rows(x4, 2, small, a3)[0], dtype=float)
    )
    err = np.abs(cancelling_layer_float(x, 7, c, alpha) - np.array(exact, dtype=float)).max()
    assert err > 1.0
