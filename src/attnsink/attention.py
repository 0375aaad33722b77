"""Score -> weight rules of an attention head, selected by name. Used in chapters 1 and 3.

Every rule maps raw scores ``q . k`` (no 1/sqrt(d) scale, as in the paper) and a causal
mask to attention weights of the same shape, ``(..., query, key)``. Masked keys get
weight exactly 0.
"""

from __future__ import annotations

from functools import lru_cache

import torch


@lru_cache(maxsize=32)
def causal_mask(seq_len: int, device: torch.device) -> torch.Tensor:
    """(query, key) bool: key k is visible from query i when k <= i."""
    with torch.inference_mode(False):  # cached: must stay usable by autograd later
        return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the visible keys 0..i: every row lies on the probability simplex."""
    return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)


@lru_cache(maxsize=32)
def _relu_scale(seq_len: int, device: torch.device) -> torch.Tensor:
    with torch.inference_mode(False):
        return 1.0 / torch.arange(seq_len, device=device).clamp(min=1).float()[:, None]


def relu(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """relu(q . k) / max(i, 1) for query i (0-indexed): the paper's ReLU attention.

    The scale is the number of non-BOS tokens visible from query i. It depends on the
    position only, never on the scores, so a head can switch off by making every
    score non-positive.
    """
    scale = _relu_scale(scores.shape[-2], scores.device).to(scores.dtype)  # (query, 1)
    return torch.where(mask, torch.relu(scores), 0.0) * scale


ATTENTION_RULES = {"softmax": softmax, "relu": relu}


def get_rule(name: str):
    """The weight rule called ``name``; raises ``ValueError`` for an unknown name."""
    if name not in ATTENTION_RULES:
        raise ValueError(f"attention must be one of {sorted(ATTENTION_RULES)}, got {name!r}")
    return ATTENTION_RULES[name]
