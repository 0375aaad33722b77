"""Certified bounds from the book's theorems, evaluated.

Each function's docstring names the theorem it evaluates and the chapter that proves it
(chapter "Softmax needs a sink" for most, chapter "ReLU escapes" for
:func:`position_scale_error_bound`). All of them but :func:`hull_distance_floor` return a
bound that holds for *every* head in the class their theorem names, so they need nothing
from a particular head: the task's sizes and an error level (or a cap) are enough.
:func:`hull_distance_floor` is the exception: it reads one head's value weights (nothing
measured from its outputs) and bounds D_i for that head only. The constants are those of
the proofs; the free parameters of a proof (how a confidence ``delta`` is split between its
events) are chosen by a grid search, and any grid point gives a valid bound, so the search
can only lose tightness, never validity. Arithmetic is in float64.

* :func:`bos_mass_lower_bound`: the weight on BOS that any one-layer softmax head with a
  given expected test MSE must keep at row 1 (Theorem "A sink from the loss alone").
* :func:`trigger_error_lower_bound`, :func:`mse_lower_bound`: what a simplex head that
  cannot park on BOS (its BOS weight capped, or no BOS at all) must lose at the trigger.
* :func:`position_scale_error_bound`: the error a ReLU head with a position-only scale
  that is not proportional to 1/j cannot avoid.
* :func:`hull_distance_floor`: a lower bound on the distance D_i of the sink inequality
  read off a head's value weights, the same for every sequence.
"""

from __future__ import annotations

import math

import torch

from ._checks import check_int, check_number
from .task import TriggerTask


def _check_task(task: TriggerTask, *, need_bos: bool | None) -> None:
    if not isinstance(task, TriggerTask):
        raise ValueError(f"task must be a TriggerTask, got {type(task).__name__}")
    if getattr(task, "default", 0) != 0:
        raise ValueError("task must have the zero default: these bounds are stated and proved for TriggerTask")
    if task.residual:
        raise ValueError(
            "task must have residual=False: the theorems are about one head without residual stream "
            "(a one-layer residual head has the same errors: pass TriggerTask(residual=False))"
        )
    if need_bos is True and not task.bos:
        raise ValueError("task must have BOS (task.bos=True): the bound is on the weight on BOS")
    if need_bos is False and task.bos:
        raise ValueError("task must be the task without BOS (task.bos=False)")


def _unit_ball_volume(k: int) -> float:
    """Volume of the unit ball of R^k."""
    return math.pi ** (k / 2) / math.gamma(k / 2 + 1)


def tube_probability(m: int, radius: float) -> float:
    """An upper bound on P(dist(z, l) <= radius) for z uniform on the cube [-1, 1]^m and any line l.

    Fubini along the line's direction: the cube's chords in any direction are at most its
    diameter 2 sqrt(m) long, and each cross-section of the tube is an (m-1)-ball, so the
    tube meets the cube in volume at most 2 sqrt(m) V_{m-1} radius^(m-1), out of 2^m.
    """
    if m < 2:
        return 1.0  # a line can pass through the whole of [-1, 1]
    return min(1.0, 2.0 * math.sqrt(m) * _unit_ball_volume(m - 1) * radius ** (m - 1) / 2.0**m)


def _tube_radius(m: int, p: torch.Tensor) -> torch.Tensor:
    """The radius at which :func:`tube_probability` equals ``p`` (the inverse, elementwise)."""
    return (p * 2.0**m / (2.0 * math.sqrt(m) * _unit_ball_volume(m - 1))) ** (1.0 / (m - 1))


def bos_mass_lower_bound(task: TriggerTask, mse: float, delta: float = 0.05, *, grid: int = 400) -> torch.Tensor:
    r"""The weight on BOS that any one-layer softmax head with test MSE at most ``mse`` must keep.

    Returns a float64 tensor of shape ``(task.seq_len,)``: entry ``i`` is a lower bound on
    ``a_i0`` that holds, at position ``i``, for at least a ``1 - delta`` fraction of the task's
    sequences (trigger uniform on 2..L-1, noise uniform), for every one-layer, one-head
    causal head whose weights lie on the simplex (softmax with any scores) and whose values
    depend on the key token only, and whose mean squared error per coordinate over the
    task's sequences is at most ``mse``. The theorem certifies row 1 (never the trigger);
    every other entry is 0, BOS's own row included. See the theorem "A sink from the loss
    alone" in chapter "Softmax needs a sink": with :math:`\eta = L \cdot d \cdot \mathrm{mse}`
    (:math:`d` = ``d_model``), for :math:`r, \varepsilon_T, \varepsilon_1 > 0` with
    :math:`\varepsilon_1^2 > \eta`,

    .. math::

        P\Bigl(a_{10} < 1 - \frac{\varepsilon_1}{r}\Bigr) \le
        N_m\bigl(2(\varepsilon_T + \max(r, \sqrt{\eta}))\bigr)
        + \frac{(L-2)\,\eta}{\varepsilon_T^2} + \frac{\eta}{\varepsilon_1^2 - \eta},

    where :math:`N_m` is :func:`tube_probability` with :math:`m = d - 3` noise coordinates. The
    confidence ``delta`` is split between the three terms on a ``grid`` x ``grid`` search.
    """
    _check_task(task, need_bos=True)
    mse = check_number("mse", mse)
    check_number("delta", delta, high=1.0)
    check_int("grid", grid, 2)
    L, m = task.seq_len, task.n_noise
    out = torch.zeros(L, dtype=torch.float64)
    if m < 2:
        return out  # with one noise coordinate (or none) a line covers the content: nothing is certified
    eta = L * task.d_model * mse
    frac = (torch.arange(1, grid, dtype=torch.float64) / grid)[:, None]  # share of delta for the tube
    split = torch.arange(1, grid, dtype=torch.float64)[None, :] / grid  # share of the rest for the trigger row
    d_tube = delta * frac
    d_trig = delta * (1 - frac) * split
    d_row = delta * (1 - frac) * (1 - split)  # > 0 everywhere on the grid
    eps_row = torch.sqrt(eta * (1 + d_row) / d_row)  # eta / (eps^2 - eta) = d_row
    eps_trig = torch.sqrt(eta * (L - 2) / d_trig)  # (L-2) eta / eps^2 = d_trig
    r = _tube_radius(m, d_tube) / 2 - eps_trig  # N_m(2 (eps_trig + r)) = d_tube
    feasible = r >= math.sqrt(eta)  # then max(r, sqrt(eta)) = r
    bound = torch.where(feasible, 1.0 - eps_row / r.clamp(min=1e-300), torch.zeros_like(r))
    best = float(bound.max())
    out[1] = max(0.0, best - 1e-12)  # a hair below, for float64 rounding in the line above
    return out


def _signal(task: TriggerTask, j: torch.Tensor) -> torch.Tensor:
    """E ``|y_j|^2`` given the trigger at j: the squared norm of the mean of the averaged tokens."""
    n = (j - task.first_content + 1).double()  # how many tokens the trigger averages
    return 1.0 / n**2 + ((n - 1) / n) ** 2 + task.n_noise / (3.0 * n)


def _trigger_terms(task: TriggerTask, cap: float | None):
    """Per trigger position j = 2..L-1: A_j (the noise the trigger row cannot reach), k_j (how
    many small content values it could use) and the factor kappa with ``|u(z)|_2 <= kappa sqrt(e)``."""
    j = torch.arange(2, task.seq_len, dtype=torch.float64)
    m = task.n_noise
    if task.bos:
        a2 = (m - 2) * (j - 1) / (3 * j**2)  # the trigger row's reach: span{u_0, u_j}, two dimensions
        k = j - 1
        kappa = math.sqrt(1 + cap**2) / (1 - cap)
    else:
        a2 = (m - 1) * j / (3 * (j + 1) ** 2)  # span{u_j}, one dimension
        k = j
        kappa = 1.0
    return torch.sqrt(a2.clamp(min=0.0)), k, kappa, _signal(task, j.long())


def _check_cap(task: TriggerTask, cap) -> float | None:
    if task.bos:
        return check_number("cap", cap, high=1.0, low_open=False)  # in [0, 1) for a task with BOS
    if cap is not None:
        raise ValueError(f"cap must be None for the task without BOS (there is no BOS to cap), got {cap!r}")
    return None


def trigger_error_lower_bound(task: TriggerTask, rel_err_nontrigger: float, *, cap: float | None = None) -> float:
    """A lower bound on the relative error at the trigger of a simplex head that cannot sink.

    For a one-layer head whose rows lie on the simplex and whose values depend on the key
    token only: on the task with BOS, with the weight on BOS at row 1 at most ``cap`` < 1
    (the rule ``softmax_cap{cap}``); on the task without BOS (``cap=None``), any such head.
    ``rel_err_nontrigger`` is the head's relative error at non-trigger rows as
    :func:`attnsink.metrics.task_errors` defines it; the bound is on ``rel_err_trigger``, both
    with the task's exact expectations (proposition "A head that cannot park" and its
    corollary, chapter "Softmax needs a sink"). It falls as ``rel_err_nontrigger`` grows.
    """
    _check_task(task, need_bos=None)
    cap = _check_cap(task, cap)
    rel_err_nontrigger = check_number("rel_err_nontrigger", rel_err_nontrigger, low_open=False)
    a, k, kappa, signal = _trigger_terms(task, cap)
    early = (task.seq_len - 1) * float(signal.mean()) * rel_err_nontrigger  # >= E of the early rows' squared error
    per_j = (a - torch.sqrt(k) * kappa * math.sqrt(early)).clamp(min=0.0) ** 2
    return max(0.0, float(per_j.mean() / signal.mean()) - 1e-12)


def mse_lower_bound(task: TriggerTask, *, cap: float | None = None, grid: int = 100_000) -> float:
    """The smallest expected test MSE a simplex head that cannot sink can reach: a certified lower bound.

    Same heads as :func:`trigger_error_lower_bound`. With e the expected squared error at the
    early rows (0 and 1 with BOS, 0 without), the MSE times ``seq_len * d_model`` is at least
    f(e) = e + mean_j (A_j - sqrt(k_j) kappa sqrt(e))_+^2; f is minimised over e >= 0 on a
    grid, using that its second term falls as e grows: on [e_a, e_b], f >= e_a + g(e_b).
    """
    _check_task(task, need_bos=None)
    cap = _check_cap(task, cap)
    check_int("grid", grid, 2)
    a, k, kappa, _ = _trigger_terms(task, cap)

    def g(e: torch.Tensor) -> torch.Tensor:
        return ((a[None] - torch.sqrt(k)[None] * kappa * torch.sqrt(e)[:, None]).clamp(min=0.0) ** 2).mean(dim=1)

    f0 = float(g(torch.zeros(1, dtype=torch.float64)))  # f(0); for e >= f(0), f(e) >= e >= f(0)
    if f0 == 0.0:
        return 0.0
    e = torch.linspace(0.0, f0, grid + 1, dtype=torch.float64)
    lower = torch.minimum((e[:-1] + g(e[1:])).min(), torch.tensor(f0, dtype=torch.float64))
    return max(0.0, float(lower) / (task.seq_len * task.d_model) - 1e-15)


def _scale_vector(task: TriggerTask, scale) -> torch.Tensor:
    L = task.seq_len
    if isinstance(scale, str):
        pos = torch.arange(L, dtype=torch.float64)
        if scale == "relu":
            return 1.0 / pos.clamp(min=1.0)
        if scale == "relu_visible":
            return 1.0 / (pos + 1.0)
        raise ValueError(f"scale must be 'relu', 'relu_visible' or a sequence of {L} positive numbers, got {scale!r}")
    g = torch.as_tensor(scale, dtype=torch.float64)
    if g.shape != (L,) or not torch.isfinite(g).all() or (g <= 0).any():
        raise ValueError(f"scale must have {L} finite positive entries (one per position), got {scale!r}")
    return g


def position_scale_error_bound(task: TriggerTask, scale) -> float:
    """The error a head with weights ``scale[i] * rho(x_i, x_k)`` cannot avoid, whatever rho >= 0.

    ``scale`` is one positive number per query position (or ``"relu"``: 1/max(i, 1), the
    paper's; ``"relu_visible"``: 1/(i+1)). For every head whose weights are
    ``scale[i] * rho(x_i, x_k)`` with any non-negative function rho of the query and key tokens
    (ReLU of any score, no positional input) and whose values depend on the key token only,
    the root mean square over trigger positions j = 2..L-1 of the error at the trigger of the
    noise-free sequence with trigger j is at least the returned number, so some sequence has
    at least that error (proposition "Only one over the count will do", chapter "ReLU escapes").
    For ``task.seq_len >= 5`` (required) it is 0 exactly when ``scale[j]`` is proportional to one
    over the number of averaged tokens.
    """
    _check_task(task, need_bos=None)
    if task.seq_len < 5:
        raise ValueError(
            f"task.seq_len must be at least 5 (three trigger positions) for this bound, got {task.seq_len}"
        )
    g = _scale_vector(task, scale)
    j = torch.arange(2, task.seq_len)
    n_content = (j - task.first_content).double()  # content tokens before the trigger
    design = torch.stack([g[j], g[j] * n_content], dim=1)  # output = g_j (P + n_content Q)
    rss = 0.0
    for target in (1.0 / (n_content + 1), n_content / (n_content + 1)):  # trigger and bias channels
        coef = torch.linalg.lstsq(design, target[:, None]).solution
        rss += float((design @ coef - target[:, None]).pow(2).sum())
    return max(0.0, math.sqrt(max(0.0, rss / len(j))) - 1e-12)  # a hair below, for float64 rounding


def hull_distance_floor(model, task: TriggerTask) -> tuple[float, float]:
    """Lower bounds on D_i from a one-layer, one-head model's value map alone, for every sequence.

    With W = W_V W_O and P the projection onto the orthogonal complement of the span of
    W's noise rows, every content token's value has the same P-part, P w_bias, and the
    trigger's is P w_trigger. Returns ``(before, after)``: ``|P w_bias|``, a lower bound on D_i at
    every row i before the trigger, and the distance from 0 to the segment
    [P w_bias, P w_trigger], one for every row after it (each less a rounding slack when the
    noise rows are numerically rank-deficient; see the code).
    """
    if model.n_layers != 1 or model.n_heads != 1:
        raise ValueError("hull_distance_floor is for one-layer, one-head models")
    if model.d_model != task.d_model:
        raise ValueError(f"model.d_model ({model.d_model}) must equal task.d_model ({task.d_model})")
    if model.mlp or model.layer_norm:
        raise ValueError("hull_distance_floor needs values linear in the token (no MLP, no LayerNorm)")
    with torch.no_grad():
        w = model.W_V[0, 0].double() @ model.W_O[0, 0].double()  # (d, d): row c is channel c's value
    n = task.d_model
    noise = w[2 : n - 1]  # (m, d)
    # an orthonormal basis of the noise rows' span, from the SVD (rank-revealing; an unpivoted
    # QR is not a basis of the span when the rows are rank-deficient). Directions with a
    # singular value at or below the tolerance are dropped from the span, so P need not remove
    # all of the noise: along them a token's noise moves its P-part by at most sqrt(m) times
    # the largest dropped singular value (|z| <= sqrt(m) for noise in [-1, 1]^m), and the
    # floors are lowered by that much, so they stay lower bounds
    slack = 0.0
    if noise.shape[0]:
        _, sv, vh = torch.linalg.svd(noise, full_matrices=False)
        kept = sv > 1e-9 * max(float(sv.max()), 1e-300)
        basis = vh[kept]  # (rank, d)
        if not kept.all():
            slack = math.sqrt(noise.shape[0]) * float(sv[~kept].max())
    else:
        basis = w.new_zeros(0, n)
    proj = lambda v: v - basis.T @ (basis @ v)  # noqa: E731
    pb, pt = proj(w[n - 1]), proj(w[1])
    before = float(pb.norm())
    diff = pt - pb
    t = 0.0 if float(diff @ diff) == 0 else min(1.0, max(0.0, float(-(pb @ diff) / (diff @ diff))))
    after = float((pb + t * diff).norm())
    return max(0.0, before - slack), max(0.0, after - slack)


def cancellation_weight_floor(seq_len: int, theta: float) -> float:
    """A lower bound on the total value weight, ``sum_h ||W_VO^(h)||``, of a one-layer residual
    model of softmax heads whose only non-zero logit runs from the trigger to BOS, that solves
    the residual task exactly while no head puts more than ``theta`` on BOS at any row
    ``i >= 1`` (Theorem "The price of cancelling", chapter "Several layers"):

        F_L(theta) = (L-1)! / (L-1)^(L-2) * (T_(L-2)(1 + (L-1)(1-theta)/theta) - (-1)^L),

    with ``T_m`` the Chebyshev polynomial. The proof pairs the heads' weights with a test
    function whose values lie in [0, 1] (or [-1, 0]); as the weights sum to zero it may be
    shifted by 1/2, which gives twice what the unshifted function gives. The bound is tight
    at ``L = 3`` (4 at ``theta = 1/2``, approached by two heads with ``c = (eps, 2)``); for
    ``theta = 1/2`` and ``L <= 10`` some exact layer pays less than 2.5 times it. Such
    a layer exists for every ``theta`` in [1/2, 1) (:func:`attnsink.construct.cancelling_layer`)."""
    check_int("seq_len", seq_len, 3)
    check_number("theta", theta, low=0.5, high=1.0, low_open=False)
    m = seq_len - 2
    x = 1 + (seq_len - 1) * (1 - theta) / theta
    chebyshev = math.cosh(m * math.acosh(x))  # T_m(x) for x >= 1
    return math.factorial(seq_len - 1) / (seq_len - 1) ** m * (chebyshev - (-1) ** m)


def fewest_cancelling_heads(seq_len: int, theta: float) -> int:
    """The fewest heads such a layer can have: ``L - 2`` when ``L`` is even and
    ``C^(L-2) > (L-1)!`` with ``C = 2 theta / (1 - theta)``, else ``L - 1``."""
    check_int("seq_len", seq_len, 3)
    check_number("theta", theta, low=0.5, high=1.0, low_open=False)
    m, cap = seq_len - 2, 2 * theta / (1 - theta)
    return m if m % 2 == 0 and m * math.log(cap) > math.lgamma(seq_len) else m + 1
