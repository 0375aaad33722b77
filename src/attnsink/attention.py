"""Score -> weight rules of an attention head, selected by name. Used in every chapter.

Every rule maps raw scores ``q . k`` (no 1/sqrt(d) scale, as in the paper), shape
(..., heads, query, key), and a (query, key) mask (causal, or all True for a model without
the causal mask) to attention weights of the same
shape; masked keys get weight exactly 0. Each rule is defined once, as a :class:`Rule`
record: its weight function, the learned per-head logit it takes, if any (``sink`` for
``sink_logit``: its name, shape and initial value), and whether the head's output is gated
(``gated``). Every forward pass (the plain model, the fast engine, the GPT) asks the record,
never the rule's name; only how a gate's logits are computed from a token belongs to the model.

Which rules can say "nothing"? The weights of ``softmax``, ``sigmoid_norm`` and ``gated``
lie on the probability simplex (every row sums to 1), but ``gated``'s gate can scale the
head's output to zero: its off state is in the gate, not the weights. ``softmax1``,
``sink_logit``, ``sigmoid``, ``relu`` and ``relu_visible`` can make a whole row's weights
(near) zero. ``clipped_softmax``'s off state is partial: it zeroes only weights below its clip, so a whole
row can be zero only on rows with more than 35 visible keys (at its default clip). A
``softmax_cap<cap>`` head is softmax with BOS's weight capped. Chapter 6 tests what follows.

:func:`bos_mass`, the weight a head puts on BOS, lives here too: the trainer records it at
every step, so it belongs with the modules that decide a trained model's numbers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch

CLIP_GAMMA = -0.03  # clipped softmax: zeta = 1, gamma = -0.03 (the BERT setting of Bondarenko et al., 2023)


@lru_cache(maxsize=32)
def causal_mask(seq_len: int, device: torch.device) -> torch.Tensor:
    """(query, key) bool: key k is visible from query i when k <= i."""
    with torch.inference_mode(False):  # cached: must stay usable by autograd later
        return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


@lru_cache(maxsize=32)
def full_mask(seq_len: int, device: torch.device) -> torch.Tensor:
    """(query, key) bool, all True: every key is visible (a bidirectional model)."""
    with torch.inference_mode(False):
        return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)


def visibility(seq_len: int, device: torch.device, causal: bool = True) -> torch.Tensor:
    """The (query, key) mask of a causal model (:func:`causal_mask`) or of one that sees the
    whole sequence (:func:`full_mask`)."""
    return causal_mask(seq_len, device) if causal else full_mask(seq_len, device)


BIDIRECTIONAL_RULES = ("softmax", "softmax1", "sink_logit")
"""The rules a model without the causal mask may use, kept to the softmax family the book
trains that way. ReLU's 1/i and sigmoid's -log(i + 1) count the keys a causal query sees and
are refused; ``gated`` and ``clipped_softmax`` would be well defined too, but are untested."""


@lru_cache(maxsize=32)
def _positions(seq_len: int, device: torch.device) -> torch.Tensor:
    with torch.inference_mode(False):
        return torch.arange(seq_len, device=device).float()[:, None]  # (query, 1): i


def _masked(mask: torch.Tensor, visible, dtype: torch.dtype) -> torch.Tensor:
    """A (query, key) tensor: ``visible`` where the key is visible, -inf where it is masked.

    Adding it to the scores masks them as ``masked_fill`` would, bit for bit, but the
    addition passes its gradient through untouched, where ``masked_fill`` costs one more
    pass over the (batch, heads, query, key) gradient; the weights of masked keys are
    exactly 0 either way, and so are their gradients.
    """
    return torch.where(mask, torch.as_tensor(visible, dtype=dtype, device=mask.device), float("-inf"))


def _masked_scale(mask: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``scale`` (query, 1) where the key is visible and 0 where it is masked, as (query, key)."""
    return torch.where(mask, scale, 0.0)


def softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """exp(s_ik) / sum_{k' <= i} exp(s_ik'): every row lies on the probability simplex."""
    return (scores + _masked(mask, 0.0, scores.dtype)).softmax(dim=-1)


def relu(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """relu(s_ik) / max(i, 1) for query i (0-indexed): the paper's ReLU attention.

    The scale is the number of non-BOS tokens visible from query i. It depends on the
    position only, never on the scores, so a head can switch off by making every
    score non-positive.
    """
    scale = 1.0 / _positions(scores.shape[-1], scores.device).clamp(min=1).to(scores.dtype)
    return torch.relu(scores * _masked_scale(mask, scale))  # relu(s) c = relu(s c) for c >= 0


def relu_visible(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """relu(s_ik) / (i + 1): ReLU attention scaled by the number of visible keys, BOS included."""
    scale = 1.0 / (_positions(scores.shape[-1], scores.device) + 1).to(scores.dtype)
    return torch.relu(scores * _masked_scale(mask, scale))


def _softmax_with_extra_logit(scores: torch.Tensor, mask: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
    """exp(s_ik) / (exp(extra) + sum_k' exp(s_ik')): a softmax over the keys and one phantom key."""
    masked = scores + _masked(mask, 0.0, scores.dtype)
    extra = extra.expand(*scores.shape[:-1], 1)
    full = torch.cat([masked, extra], dim=-1).softmax(dim=-1)
    return full[..., :-1]


def softmax1(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """exp(s_ik) / (1 + sum_k' exp(s_ik')): softmax with an extra zero logit (Miller, 2023).

    The row sums to less than 1; it can approach 0 when every score is very negative.
    """
    return _softmax_with_extra_logit(scores, mask, scores.new_zeros(()))


def sink_logit(scores: torch.Tensor, mask: torch.Tensor, sink: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys and a learned per-head logit ``sink`` (heads,) that is dropped
    afterwards (the "attention sinks" of the gpt-oss models): the phantom key takes the
    mass the head does not want to spend."""
    extra = sink.to(scores.dtype)[..., :, None, None]  # (..., heads, 1, 1)
    return _softmax_with_extra_logit(scores, mask, extra)


def sigmoid(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """sigmoid(s_ik - log(i + 1)): each key on its own, no normalisation (Ramapuram et al., 2025).

    The bias -log(number of visible keys) keeps a row's total near 1 at initialisation.
    """
    bias = -torch.log(_positions(scores.shape[-1], scores.device) + 1).to(scores.dtype)
    return torch.sigmoid(scores + _masked(mask, bias, scores.dtype))  # sigmoid(-inf) = 0


def sigmoid_norm(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The weights of :func:`sigmoid` divided by their row sum: a control that puts the
    rows back on the simplex (Gu et al., 2025, saw sinks return under this rule)."""
    w = sigmoid(scores, mask)
    return w / w.sum(dim=-1, keepdim=True)


def clipped_softmax(scores: torch.Tensor, mask: torch.Tensor, gamma: float = CLIP_GAMMA) -> torch.Tensor:
    """clip((zeta - gamma) * softmax + gamma, 0, 1) with zeta = 1 and gamma = ``gamma``
    (Bondarenko et al., 2023): probabilities below -gamma / (1 - gamma) are clipped to 0.

    A row can be all zeros only if every softmax weight is below that threshold, so only
    rows with more than (1 - gamma) / -gamma visible keys (35 for gamma = -0.03) can
    switch off; and a larger ``|gamma|`` also zeroes the small, even weights an average needs.
    """
    p = softmax(scores, mask)
    return torch.where(mask, ((1.0 - gamma) * p + gamma).clamp(0.0, 1.0), 0.0)


def softmax_capped(scores: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    """Softmax with the weight on BOS capped at ``cap``; the rest of the row keeps its softmax
    proportions and takes up the remainder, so every row stays on the simplex. A "sink-free"
    softmax head by construction (BOS's own row, which sees nothing else, keeps weight 1).
    Selected as ``softmax_cap{cap}``, for example ``softmax_cap0.5``."""
    p0 = softmax(scores, mask)[..., :1]  # the softmax weight BOS would get
    others = mask.clone()
    others[..., 0] = False
    has_others = others.any(dim=-1, keepdim=True)  # (query, 1)
    # a finite fill keeps BOS's own row (no other key) finite, and its gradient too; its weight is 0 anyway
    rest = scores.masked_fill(~others, torch.finfo(scores.dtype).min)[..., 1:].softmax(dim=-1)
    a0 = torch.where(has_others, p0.clamp(max=cap), torch.ones_like(p0))
    return torch.cat([a0, (1.0 - a0) * rest], dim=-1)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of values ``(*, batch, heads, query)`` over batch and the masked queries -> ``(*, heads)``."""
    w = mask.unsqueeze(-2).to(values.dtype)  # (*, batch, 1, query)
    return (values * w).sum(dim=(-3, -1)) / w.sum(dim=(-3, -1))


def bos_mass(attn: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Mean weight on key 0 (BOS) over the query positions in ``query_mask`` -> ``(*, heads)``.

    With ``query_mask = batch.is_nontrigger`` this is the paper's headline quantity,
    the BOS mass at non-trigger positions.
    """
    return masked_mean(attn[..., 0], query_mask)


@dataclass(frozen=True)
class Rule:
    """One attention rule, defined once: every forward pass asks this record what to do.

    ``fn(scores, mask[, logit])`` gives the weights. ``logit`` names the rule's learned
    per-head logit, if it has one (``sink`` for ``sink_logit``: one number per layer and head,
    starting at ``logit_init``), which the forward passes as ``fn``'s third argument.
    ``gated`` says that the head's output is multiplied by a learned gate in (0, 1) per query
    and head, ``sigmoid(g)`` for gate logits ``g`` that the model computes from the token
    (:meth:`gate`).
    """

    name: str
    fn: Callable[..., torch.Tensor]
    logit: str | None = None
    logit_init: float = 0.0
    gated: bool = False

    def __call__(self, scores: torch.Tensor, mask: torch.Tensor, logit: torch.Tensor | None = None, **kwargs):
        """The weights for ``scores`` under ``mask``; ``logit`` is the rule's learned logit,
        (..., heads), when it has one (also accepted by its name, e.g. ``sink=``)."""
        if self.logit is not None:
            logit = kwargs.pop(self.logit, logit)
            if logit is None:
                raise ValueError(f"attention {self.name!r} needs its learned logit {self.logit!r}")
            return self.fn(scores, mask, logit, **kwargs)
        if logit is not None:
            raise ValueError(f"attention {self.name!r} has no learned logit, got one")
        return self.fn(scores, mask, **kwargs)

    def weights(
        self, scores: torch.Tensor, mask: torch.Tensor, logit: torch.Tensor | None, gate_logits: torch.Tensor | None
    ) -> torch.Tensor:
        """What a head applies to its values: the rule's weights, times the gate when the rule
        is gated; ``gate_logits`` (..., heads, query) are the gate's logits, None for a rule
        that is not gated (the model computes them only when :attr:`gated`)."""
        w = self(scores, mask, logit)
        if self.gated:
            if gate_logits is None:
                raise ValueError(f"attention {self.name!r} gates each head's output: pass its gate_logits")
            return self.gate(w, gate_logits)
        return w

    @staticmethod
    def gate(weights: torch.Tensor, gate_logits: torch.Tensor) -> torch.Tensor:
        """``weights`` (..., heads, query, key) times ``sigmoid(gate_logits)`` (..., heads, query)."""
        return weights * torch.sigmoid(gate_logits)[..., None]


ATTENTION_RULES = {
    rule.name: rule
    for rule in (
        Rule("softmax", softmax),
        Rule("relu", relu),
        Rule("relu_visible", relu_visible),
        Rule("softmax1", softmax1),
        # the phantom key's logit starts at 0: it weighs like a key with score 0
        Rule("sink_logit", sink_logit, logit="sink", logit_init=0.0),
        Rule("sigmoid", sigmoid),
        Rule("sigmoid_norm", sigmoid_norm),
        # softmax weights; the head's output is multiplied by its gate (the weights times the gate)
        Rule("gated", softmax, gated=True),
        Rule("clipped_softmax", clipped_softmax),
    )
}
"""Every rule by name (the capped softmax rules, one per cap, come from :func:`get_rule`)."""


CAPPED_PREFIX = "softmax_cap"


def get_rule(name: str) -> Rule:
    """The rule called ``name``; raises ``ValueError`` for an unknown name."""
    if isinstance(name, str) and name.startswith(CAPPED_PREFIX):
        try:
            cap = float(name[len(CAPPED_PREFIX) :])
        except ValueError:
            cap = math.nan
        if not 0.0 <= cap <= 1.0:
            raise ValueError(f"attention {name!r}: the cap after {CAPPED_PREFIX!r} must be a number in [0, 1]")
        return Rule(name, functools.partial(softmax_capped, cap=cap))
    if name not in ATTENTION_RULES:
        raise ValueError(
            f"attention must be one of {sorted(ATTENTION_RULES)} or {CAPPED_PREFIX}<cap in [0, 1]>, got {name!r}"
        )
    return ATTENTION_RULES[name]
