"""A small GPT for the bridge from the trigger task to language models (chapters 7 and 8).

A standard pre-LayerNorm decoder: token and learned position embeddings, ``n_layers`` blocks
(attention, then a two-layer GELU MLP 4x wide), scores scaled by ``1/sqrt(d_head)``, a causal
mask, a final LayerNorm and a linear read-out. The attention weights come from any rule of
:mod:`attnsink.attention` (its :class:`~attnsink.attention.Rule` record says whether the rule
has a learned logit or gates the output), so the book's "off-state" rules can be compared with
softmax in a language model. A BOS token (id ``vocab_size``) starts every sequence unless the
task says otherwise.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_int
from ..attention import causal_mask, get_rule

INIT_STD = 0.02  # GPT-2's initialisation of every matrix; biases start at zero


class Block(nn.Module):
    """One pre-LN block: ``h + attn(LN(h))``, then ``h + mlp(LN(h))``. Per head, ``n_heads``
    slices of width ``d_head`` of the ``qkv`` and ``out`` maps; a rule with a learned logit
    adds it (one per head), a gated rule adds ``gate``, a linear map from the token to one
    gate logit per head."""

    def __init__(self, d_model: int, n_heads: int, attention: str):
        super().__init__()
        self.rule = get_rule(attention)
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        # registered in this order: GPT's initialisation draws the matrices in it
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        if self.rule.logit is not None:
            self.register_parameter(self.rule.logit, nn.Parameter(torch.full((n_heads,), self.rule.logit_init)))
        if self.rule.gated:
            self.gate = nn.Linear(d_model, n_heads)

    def out_maps(self) -> torch.Tensor:
        """Each head's slice of the output map, (heads, d_head, d_model): head ``h`` adds
        ``o_h @ out_maps()[h]`` to the residual stream."""
        return self.out.weight.view(-1, self.n_heads, self.d_head).permute(1, 2, 0)

    def forward(self, h: torch.Tensor, mask: torch.Tensor, edit: Callable[..., torch.Tensor] | None = None):
        """The new residual stream, the weights (batch, heads, query, key) and the values
        (batch, heads, key, d_head) of this block's heads. ``edit``, if given, receives the
        heads' outputs (batch, heads, query, d_head) before the output map, their weights and
        their values, and returns the outputs the block adds instead (for ablations:
        :func:`attnsink.lm.ablate_heads`)."""
        B, L, _ = h.shape
        a_in = self.ln1(h)
        q, k, v = self.qkv(a_in).view(B, L, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)  # (B, heads, query, key)
        logit = getattr(self, self.rule.logit) if self.rule.logit else None
        # a gated head's weights times sigmoid(gate(x_i)), per query and head
        gate = self.gate(a_in).transpose(1, 2) if self.rule.gated else None
        w = self.rule.weights(scores, mask, logit, gate)
        o = w @ v
        if edit is not None:
            o = edit(o, w, v)
        o = o.transpose(1, 2).reshape(B, L, -1)
        h = h + self.out(o)
        h = h + self.mlp(self.ln2(h))
        return h, w, v


class GPT(nn.Module):
    """A pre-LN decoder with ``n_layers`` blocks of ``n_heads`` heads and an MLP (4x wide).

    ``forward(x)`` returns next-token logits (batch, seq, vocab + 1) for tokens ``x``; with
    ``return_values=True`` also, per layer, the weights (batch, heads, query, key) and the
    values in output space (batch, heads, key, d_model): what head ``h`` adds to the residual
    stream per unit of weight on key ``t`` (``v_t`` through its slice of the output map), as
    :meth:`attnsink.model.AttentionModel.forward` gives them.
    """

    def __init__(
        self,
        vocab_size: int,
        *,
        seq_len: int,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        attention: str = "softmax",
        seed: int = 0,
    ):
        super().__init__()
        check_int("vocab_size", vocab_size, 2)
        check_int("seq_len", seq_len, 2)
        check_int("d_model", d_model, 1)
        check_int("n_layers", n_layers, 1)
        check_int("n_heads", n_heads, 1)
        check_int("seed", seed, 0)
        if d_model % n_heads:
            raise ValueError(f"d_model must be a multiple of n_heads, got d_model={d_model}, n_heads={n_heads}")
        get_rule(attention)  # ValueError for an unknown rule
        self.config = {
            "vocab_size": vocab_size,
            "seq_len": seq_len,
            "d_model": d_model,
            "n_layers": n_layers,
            "n_heads": n_heads,
            "attention": attention,
            "seed": seed,
        }
        self.attention, self.n_heads, self.d_head = attention, n_heads, d_model // n_heads
        self.tok = nn.Embedding(vocab_size + 1, d_model)  # + BOS
        self.pos = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, attention) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size + 1, bias=False)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():  # GPT-2's init, drawn from ``seed`` alone: N(0, 0.02) matrices, zero biases
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    p.copy_(torch.randn(p.shape, generator=g) * INIT_STD)
                elif name.endswith("bias"):
                    p.zero_()

    def forward(
        self,
        x: torch.Tensor,
        *,
        return_values: bool = False,
        edit: Callable[..., torch.Tensor] | None = None,
    ):
        """``edit(layer, outputs, weights, values)``, if given, replaces the heads' outputs of each layer before
        its output map (see :meth:`Block.forward`)."""
        B, L = x.shape
        if L > self.config["seq_len"]:
            raise ValueError(f"x has {L} tokens; the model was built for seq_len={self.config['seq_len']}")
        h = self.tok(x) + self.pos(torch.arange(L, device=x.device))
        mask = causal_mask(L, x.device)
        attns, values = [], []
        for layer, block in enumerate(self.blocks):
            h, w, v = block(h, mask, None if edit is None else functools.partial(edit, layer))
            if return_values:
                attns.append(w)
                values.append(torch.einsum("bhkd,hdm->bhkm", v, block.out_maps()))
        logits = self.head(self.ln_f(h))
        return (logits, attns, values) if return_values else logits


def lm_loss(model: GPT, x: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over every position after the first (BOS is never a
    target); ``x`` moves to the model's device."""
    x = x.to(next(model.parameters()).device)
    logits = model(x[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
