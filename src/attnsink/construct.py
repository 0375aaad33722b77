"""Hand-built heads with explicit weights: a softmax family that needs a sink (and one whose
sink writes the constant of :class:`~attnsink.task.ConstantTriggerTask`), an exact ReLU
head that does not, two softmax heads that cancel, and a layer of ``L - 1`` softmax heads
that solves the residual task exactly with no sink at any row ``i >= 1`` (in exact rational
arithmetic, :func:`cancelling_layer`). Used in the theory chapters.

Both read the task's channels directly. With the token layout of :mod:`attnsink.task`
(0 = BOS, 1 = trigger, 2..n-2 = noise, n-1 = bias), a head's score is
``s_ik = x_i W_Q W_K^T x_k^T`` and its value map is ``W_V W_O``; the constructions choose
those two products and factor them as ``W_Q = A, W_K = I`` and ``W_V = B, W_O = I``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from ._checks import check_int, check_number
from .model import AttentionModel
from .task import BOS, TRIGGER, ConstantTriggerTask, TriggerTask


def _check_task(task: TriggerTask) -> None:
    if not isinstance(task, TriggerTask):
        raise ValueError(f"task must be a TriggerTask, got {type(task).__name__}")
    if getattr(task, "default", 0) != 0:
        raise ValueError("task must have the zero default: these constructions solve TriggerTask")
    if task.residual or not task.bos:
        raise ValueError("the constructions are for the paper's task: residual=False and bos=True")


def _model(task: TriggerTask, attention: str, qk: torch.Tensor, vo: torch.Tensor) -> AttentionModel:
    n = task.d_model
    model = AttentionModel(n, attention=attention)
    with torch.no_grad():
        model.W_Q.copy_(qk[None, None])
        model.W_K.copy_(torch.eye(n)[None, None])
        model.W_V.copy_(vo[None, None])
        model.W_O.copy_(torch.eye(n)[None, None])
    return model


def value_map(task: TriggerTask) -> torch.Tensor:
    """``W_V W_O`` of both constructions: copy every channel but BOS's, so BOS's value is 0
    and every other token's value is the token itself."""
    vo = torch.eye(task.d_model)
    vo[BOS, BOS] = 0.0
    return vo


def softmax_solution(task: TriggerTask, margin: float) -> AttentionModel:
    """A softmax head that solves the task as ``margin`` grows, by sinking on BOS.

    A content query scores ``margin`` on BOS and 0 on every other key; the trigger query
    scores 0 on BOS and ``margin`` on every other key. So at a non-trigger position i the
    weight on BOS is e^margin / (e^margin + i) -> 1, and at the trigger j every key 1..j
    gets e^margin / (1 + j e^margin) -> 1/j. Error -> 0 and BOS mass -> 1 together.
    """
    _check_task(task)
    check_number("margin", margin, low_open=False)
    n = task.d_model
    bias = n - 1
    # keys: BOS -> direction 0; every non-BOS token (bias or trigger channel) -> direction 1
    # queries: content (bias channel) -> margin * direction 0; trigger -> margin * direction 1
    qk = torch.zeros(n, n)
    qk[bias, BOS] = margin  # content query . BOS key
    qk[TRIGGER, TRIGGER] = margin  # trigger query . trigger key
    qk[TRIGGER, bias] = margin  # trigger query . content key
    return _model(task, "softmax", qk, value_map(task))


def constant_sink_solution(task: ConstantTriggerTask, margin: float) -> AttentionModel:
    """A softmax head that solves the constant-default task as ``margin`` grows, by parking
    on BOS, whose value is the constant: :func:`softmax_solution`'s scores, and the value map
    of :func:`value_map` with BOS's value :math:`c` instead of 0. Non-trigger rows output
    a_i0 c + (1 - a_i0) (the mean of their content values) -> c; BOS's own row outputs c."""
    if not isinstance(task, ConstantTriggerTask):
        raise ValueError(f"task must be a ConstantTriggerTask, got {type(task).__name__}")
    if task.residual or not task.bos:
        raise ValueError("the construction is for the task with BOS and residual=False")
    zero_default = TriggerTask(task.d_model, task.seq_len)
    model = softmax_solution(zero_default, margin)
    with torch.no_grad():
        model.W_V[0, 0, BOS] = task.constant
    return model


def relu_solution(task: TriggerTask) -> AttentionModel:
    """A ReLU head that solves the task exactly, with weight exactly 0 at non-trigger positions.

    Only the trigger query has a non-zero query vector: it scores 1 on every non-BOS key and
    0 on BOS, so with the scale 1 / max(j, 1) it puts exactly 1/j on keys 1..j. Every other
    query is the zero vector, every score is 0, and relu(0) = 0: the head is off.
    """
    _check_task(task)
    n = task.d_model
    qk = torch.zeros(n, n)
    qk[TRIGGER, TRIGGER] = 1.0  # trigger query . trigger key
    qk[TRIGGER, n - 1] = 1.0  # trigger query . content key (bias channel)
    return _model(task, "relu", qk, value_map(task))


def cancelling_heads(task: TriggerTask, margin: float) -> AttentionModel:
    """One residual layer of two softmax heads that solves the task as ``margin`` grows with
    no head parking on BOS at any non-trigger position: the heads cancel instead.

    Both heads score 0 on every key at a content query, so there both spread their weight
    evenly over keys 0..i; their values are x and -x (BOS's value is 0 in both), so their
    outputs cancel exactly. At the trigger query head 1 scores ``-margin`` on BOS (so it
    averages keys 1..j) and head 2 scores ``+margin`` on BOS (so it parks there and adds
    nearly nothing): the layer adds j (1 / (j + e^-margin) - 1 / (j + e^margin)) times the
    mean of x_1..x_j, which tends to the target. For the residual task (``residual=True``).
    """
    if not isinstance(task, TriggerTask):
        raise ValueError(f"task must be a TriggerTask, got {type(task).__name__}")
    if getattr(task, "default", 0) != 0:
        raise ValueError("task must have the zero default: this construction solves TriggerTask")
    if not task.residual or not task.bos:
        raise ValueError("cancelling_heads is for the residual task with BOS: residual=True and bos=True")
    check_number("margin", margin, low_open=False)
    n = task.d_model
    model = AttentionModel(n, n_heads=2, attention="softmax", residual=True)
    qk = torch.zeros(2, n, n)
    qk[0, TRIGGER, BOS] = -margin  # trigger query . BOS key: head 1 leaves BOS ...
    qk[1, TRIGGER, BOS] = margin  # ... head 2 parks on it
    vo = torch.stack([value_map(task), -value_map(task)])
    with torch.no_grad():
        model.W_Q.copy_(qk[None])
        model.W_K.copy_(torch.eye(n).expand(1, 2, n, n))
        model.W_V.copy_(vo[None])
        model.W_O.copy_(torch.eye(n).expand(1, 2, n, n))
    return model


def with_attention(model: AttentionModel, attention: str) -> AttentionModel:
    """The same weights under another rule (for example ``relu_visible``)."""
    cfg = model.config
    copy = AttentionModel(
        cfg["d_model"],
        cfg["n_heads"],
        cfg["n_layers"],
        attention,
        cfg["residual"],
        mlp=cfg["mlp"],
        layer_norm=cfg["layer_norm"],
        causal=cfg["causal"],
    )
    copy.load_state_dict(model.state_dict(), strict=False)
    return copy


def row_one_leak(task: TriggerTask, batch, mass_off: torch.Tensor) -> torch.Tensor:
    """The outputs (n, L, d) of a head that is exact everywhere but row 1, where sequence s keeps
    ``mass_off[s]`` of its weight off BOS: the worst case for the theorem "A sink from the loss alone".

    The head is in the theorem's class but is not an :class:`AttentionModel`: its weights are
    chosen per sequence (the theorem allows any weights on the simplex). Its values are the
    value map of :func:`value_map` (BOS's value 0, every other token's value the token); it
    puts weight 1 on BOS at every non-trigger row but row 1, where it puts ``1 - mass_off``
    on BOS and ``mass_off`` on token 1, and 1/j on each of the keys 1..j at the trigger j. So
    its output is the target except at row 1, where it is ``mass_off * x_1``.
    """
    _check_task(task)
    mass_off = torch.as_tensor(mass_off, dtype=batch.x.dtype)
    if mass_off.shape != batch.x.shape[:1] or (mass_off < 0).any() or (mass_off > 1).any():
        raise ValueError("mass_off must hold one number in [0, 1] per sequence of the batch")
    y_hat = batch.y.clone()
    y_hat[:, 1] = mass_off[:, None] * batch.x[:, 1]
    return y_hat


def _fractions(name: str, values) -> list[Fraction]:
    try:
        out = [Fraction(v) for v in values]
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a list of rational numbers, got {values!r}") from e
    return out


def cancelling_layer(seq_len: int, c) -> list[Fraction]:
    """The value weights ``alpha_h`` of a one-layer residual model with ``H = seq_len - 1``
    softmax heads that solves the residual task *exactly* with no head above weight
    ``max(1/2, c_h / (c_h + 2))`` on BOS at any row ``i >= 1`` (chapter "Several layers").

    Head ``h`` scores 0 everywhere except ``log c_h`` from a trigger query to the BOS key, and
    its value map is ``alpha_h`` times the copy of every channel but BOS's. Non-trigger rows
    are uniform in every head, so they cancel when ``sum(alpha) = 0``; the trigger row ``j``
    adds ``sum_h alpha_h / (c_h + j)`` times the sum of the tokens ``1..j``, the target's update
    when that is ``1/j``. Solves those ``seq_len - 1`` linear equations in exact arithmetic
    (``c`` distinct positive rationals); the solution is unique."""
    check_int("seq_len", seq_len, 3)
    c = _fractions("c", c)
    if len(c) != seq_len - 1:
        raise ValueError(f"c must give seq_len - 1 = {seq_len - 1} heads, got {len(c)}")
    if any(v <= 0 for v in c) or len(set(c)) != len(c):
        raise ValueError(f"c must be distinct positive numbers, got {[str(v) for v in c]}")
    rows = [[Fraction(1)] * len(c) + [Fraction(0)]]
    rows += [[1 / (ch + j) for ch in c] + [Fraction(1, j)] for j in range(2, seq_len)]
    n = len(c)
    for col in range(n):  # Gauss-Jordan elimination over the rationals
        pivot = next(r for r in range(col, n) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        rows[col] = [v / rows[col][col] for v in rows[col]]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col])]
    return [rows[h][n] for h in range(n)]


def extremal_logits(seq_len: int, theta, eps=Fraction(1, 10**6)) -> list[Fraction]:
    """Near-cheapest logits ``c_h`` for :func:`cancelling_layer` under the cap ``theta``: the
    ``seq_len - 1`` points where the test function of the theorem "The price of cancelling"
    (chapter "Several layers") peaks, ``t = tau (1 + cos(pi k / m)) / 2`` for ``k = 0 .. m``
    with ``m = seq_len - 2``, ``tau = C / (C + seq_len - 1)``, ``C = 2 theta / (1 - theta)``,
    mapped back by ``c = (seq_len - 1) t / (1 - t)``; the point ``c = 0`` (no head may have it)
    moves to ``eps``. Rationals, so that :func:`cancelling_layer` stays exact."""
    check_int("seq_len", seq_len, 3)
    theta = Fraction(theta).limit_denominator(10**6)
    if not Fraction(1, 2) <= theta < 1:
        raise ValueError(f"theta must lie in [1/2, 1), got {theta}")
    m, cap = seq_len - 2, 2 * theta / (1 - theta)
    tau = cap / (cap + seq_len - 1)
    c = []
    for k in range(m + 1):
        t = tau / 2 + tau / 2 * Fraction(math.cos(math.pi * k / m)).limit_denominator(10**6)
        c.append(min(max((seq_len - 1) * t / (1 - t), Fraction(eps)), cap))
    return sorted(c)


def cancelling_layer_rows(tokens, trigger_pos: int, c, alpha) -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """What the layer of :func:`cancelling_layer` adds at every row of one sequence, and every
    head's weight on BOS there, in exact arithmetic. ``tokens`` is the sequence (rows of
    rationals, BOS first); returns ``(update, bos_weight)``: ``update[i]`` is the vector added
    at row ``i``, ``bos_weight[h][i]`` head ``h``'s weight on BOS at row ``i``."""
    tokens = [_fractions("tokens", row) for row in tokens]
    c, alpha = _fractions("c", c), _fractions("alpha", alpha)
    n = len(tokens[0])
    values = [[Fraction(0)] + row[1:] for row in tokens]  # every channel but BOS's
    update, bos_weight = [], [[] for _ in c]
    for i in range(len(tokens)):
        added = [Fraction(0)] * n
        content = [sum(values[k][d] for k in range(1, i + 1)) for d in range(n)]
        for h, (ch, ah) in enumerate(zip(c, alpha)):
            bos = ch if i == trigger_pos else Fraction(1)  # e^{score} of the BOS key; every other key scores 0
            total = bos + i
            bos_weight[h].append(bos / total)
            added = [a + ah * (bos * values[0][d] + content[d]) / total for d, a in enumerate(added)]
        update.append(added)
    return update, bos_weight


def cancelling_tradeoff(seq_len: int, c, lams) -> list[dict]:
    """What the cancelling layer of :func:`cancelling_layer` can do on a budget: for each ridge
    weight ``lam`` of ``lams``, the value weights ``alpha`` (with ``c`` as there) that minimise
    ``sum_j (j sum_h alpha_h / (c_h + j) - 1)^2 + lam * sum_h alpha_h^2`` over j = 2 .. seq_len - 1
    subject to ``sum_h alpha_h = 0``, in float64.

    With ``sum_h alpha_h = 0`` every non-trigger row is exactly zero, as in the exact layer, so
    no head needs a sink; the trigger row ``j`` then adds ``(1 + r_j)`` times the target's
    update, for every input, where ``r_j = j sum_h alpha_h / (c_h + j) - 1``. Returns one
    record per ``lam``: ``lam``, ``weight`` (``sum_h |alpha_h|``, the value maps' total
    operator norm, the quantity :func:`attnsink.theory.cancellation_weight_floor` bounds),
    ``r`` (the list of ``r_j``, j = 2 .. seq_len - 1) and ``alpha``. A larger ``lam`` buys a
    smaller weight with a larger error."""
    import numpy as np

    check_int("seq_len", seq_len, 3)
    c = np.array([float(v) for v in _fractions("c", c)])
    if len(c) != seq_len - 1 or (c <= 0).any() or len(set(c)) != len(c):
        raise ValueError(f"c must give seq_len - 1 = {seq_len - 1} distinct positive numbers, got {list(c)}")
    lams = list(lams)
    if not lams or any(not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0 for v in lams):
        raise ValueError(f"lams must be numbers > 0, got {lams!r}")
    j = np.arange(2, seq_len, dtype=float)
    A = j[:, None] / (c[None, :] + j[:, None])  # (triggers, heads): row j, times alpha, is 1 + r_j
    H = len(c)
    # an orthonormal basis of {alpha : sum(alpha) = 0}: the last H - 1 left singular vectors of the ones vector
    basis = np.linalg.svd(np.ones((H, 1)))[0][:, 1:]
    out = []
    for lam in lams:
        design = np.vstack([A @ basis, np.sqrt(lam) * np.eye(H - 1)])
        target = np.concatenate([np.ones(len(j)), np.zeros(H - 1)])
        z = np.linalg.lstsq(design, target, rcond=None)[0]
        alpha = basis @ z
        out.append(
            {"lam": lam, "weight": float(np.abs(alpha).sum()), "r": (A @ alpha - 1).tolist(), "alpha": alpha.tolist()}
        )
    return out


def cancelling_layer_float(tokens, trigger_pos: int, c, alpha, dtype="float64"):
    """What :func:`cancelling_layer_rows` computes (the update added at every row), in floating
    point of ``dtype`` instead of exact arithmetic, head after head as a model would: a
    (seq_len, d) array. With weights as large as the exact layer's, its uniform rows cancel
    only to within the rounding of those weights."""
    import numpy as np

    x = np.array([[float(v) for v in row] for row in tokens], dtype=dtype)
    c = np.array([float(v) for v in c], dtype=dtype)
    alpha = np.array([float(v) for v in alpha], dtype=dtype)
    values = x.copy()
    values[:, BOS] = 0  # every channel but BOS's
    update = np.zeros_like(x)
    for i in range(len(x)):
        content = values[1 : i + 1].sum(axis=0)
        for ch, ah in zip(c, alpha):
            bos = ch if i == trigger_pos else np.ones((), dtype=dtype)
            update[i] += ah * content / (bos + i)  # BOS's value is 0
    return update
