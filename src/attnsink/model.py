"""The paper's attention-only model, written to be read. Used in every chapter.

Queries, keys, values and output maps have no bias and are initialised N(0, 0.02^2);
scores are ``q . k`` with no 1/sqrt(d) scale; every head has the full width ``d_model``
and the heads' outputs are summed through their own output maps (the same as
concatenating them and applying one ``(n_heads * d_model, d_model)`` map). With
``residual=True`` each layer adds its output to the residual stream, ``x <- x + layer(x)``.

Beyond the paper (all off by default, so the paper's models stay exactly as they are):
``mlp=True`` adds a two-layer GELU MLP block (hidden width ``MLP_RATIO * d_model``, with
biases) after the attention of every layer, and ``layer_norm=True`` puts a LayerNorm
before each block (pre-LN): ``h <- h + attn(LN(h))``, then ``h <- h + mlp(LN(h))``. Both
need ``residual=True``. There is no final LayerNorm: the task's target is the stream itself.
``causal=False`` lifts the causal mask, so every query sees the whole sequence (for the rules
of :data:`attnsink.attention.BIDIRECTIONAL_RULES`; chapter "What a sink writes" uses it).

:meth:`AttentionModel.forward` is the reference: one model, head by head, as the book
writes the formulas. Training runs many seeds at once through the fast path of
:mod:`attnsink.engine`, which computes the same function (tested to float tolerance).
"""

from __future__ import annotations

from dataclasses import asdict

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_bool, check_int, check_number
from .attention import BIDIRECTIONAL_RULES, get_rule, visibility
from .spec import Arch

PARAM_NAMES = ("W_Q", "W_K", "W_V", "W_O")  # every model has these; a rule may add its logit ("sink") or "W_G"
GATE = "W_G"  # a gated rule's gate: (n_layers, n_heads, d_model), gate logit x_i . w_h
MLP_RATIO = 4  # hidden width of the optional MLP block, in units of d_model
LN_EPS = 1e-5
ARCH_DEFAULTS = asdict(Arch())
"""The architecture options of :class:`AttentionModel` besides ``d_model`` and ``residual``,
with their defaults (the paper's one-layer, one-head softmax model)."""


class AttentionModel(nn.Module):
    """Causal attention-only model of Ran-Milo (2026): ``model(x) -> (y_hat, attn)``
    (with ``causal=False``, a bidirectional one).

    ``attn`` is a list with one (batch, heads, query, key) tensor per layer: the weights
    each head applies to its values (for ``gated``, the softmax weights times the gate).
    ``seed`` makes the initialisation reproducible (it draws from its own generator, not
    from torch's global one).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 1,
        n_layers: int = 1,
        attention: str = "softmax",
        residual: bool = False,
        *,
        seed: int | None = None,
        init_std: float = 0.02,
        mlp: bool = False,
        layer_norm: bool = False,
        causal: bool = True,
    ):
        super().__init__()
        check_int("d_model", d_model, 1)
        check_int("n_heads", n_heads, 1)
        check_int("n_layers", n_layers, 1)
        rule = get_rule(attention)
        check_bool("residual", residual)
        if n_layers > 1 and not residual:
            raise ValueError(
                f"n_layers > 1 requires residual=True (the paper's deeper models are residual), got n_layers={n_layers}"
            )
        for name, flag in (("mlp", mlp), ("layer_norm", layer_norm)):
            check_bool(name, flag)
            if flag and not residual:
                raise ValueError(f"{name}=True requires residual=True (the blocks add to the residual stream)")
        check_bool("causal", causal)
        if not causal and attention not in BIDIRECTIONAL_RULES:
            raise ValueError(
                f"causal=False needs a rule whose weights do not count the visible keys, one of "
                f"{list(BIDIRECTIONAL_RULES)}; got attention={attention!r}"
            )
        if seed is not None:
            check_int("seed", seed, 0)
        check_number("init_std", init_std)
        self.d_model, self.n_heads, self.n_layers = d_model, n_heads, n_layers
        self.attention, self.residual, self.seed = attention, residual, seed
        self.mlp, self.layer_norm, self.causal = mlp, layer_norm, causal

        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        shape = (n_layers, n_heads, d_model, d_model)
        for name in PARAM_NAMES:
            init = torch.randn(shape, generator=generator) * init_std
            self.register_parameter(name, nn.Parameter(init))
        if rule.logit is not None:  # the rule's learned logit, one per layer and head
            self.register_parameter(rule.logit, nn.Parameter(torch.full((n_layers, n_heads), rule.logit_init)))
        if rule.gated:  # starts near sigmoid(0) = 1/2
            gate = torch.randn(n_layers, n_heads, d_model, generator=generator) * init_std
            self.register_parameter(GATE, nn.Parameter(gate))
        if mlp:  # drawn after the attention weights, so adding the block leaves them unchanged
            hidden = MLP_RATIO * d_model
            w_in = torch.randn(n_layers, d_model, hidden, generator=generator) * init_std
            w_out = torch.randn(n_layers, hidden, d_model, generator=generator) * init_std
            self.register_parameter("W_in", nn.Parameter(w_in))
            self.register_parameter("b_in", nn.Parameter(torch.zeros(n_layers, hidden)))
            self.register_parameter("W_out", nn.Parameter(w_out))
            self.register_parameter("b_out", nn.Parameter(torch.zeros(n_layers, d_model)))
        if layer_norm:
            for block in ("ln1", "ln2") if mlp else ("ln1",):
                self.register_parameter(f"{block}_g", nn.Parameter(torch.ones(n_layers, d_model)))
                self.register_parameter(f"{block}_b", nn.Parameter(torch.zeros(n_layers, d_model)))

    @classmethod
    def from_config(cls, config: dict, *, seed: int | None = None, init_std: float = 0.02) -> AttentionModel:
        """A new model with the architecture ``config`` (a :attr:`config`, or ``d_model``,
        ``residual`` and any of :data:`ARCH_DEFAULTS`); unknown keys raise ``ValueError``."""
        unknown = set(config) - {"d_model", "residual", *ARCH_DEFAULTS}
        if unknown:
            raise ValueError(
                f"config has unknown keys {sorted(unknown)}; expected d_model, residual and {sorted(ARCH_DEFAULTS)}"
            )
        arch = {**ARCH_DEFAULTS, **config}
        return cls(
            arch["d_model"],
            arch["n_heads"],
            arch["n_layers"],
            arch["attention"],
            arch.get("residual", False),
            seed=seed,
            init_std=init_std,
            mlp=arch["mlp"],
            layer_norm=arch["layer_norm"],
            causal=arch["causal"],
        )

    @property
    def config(self) -> dict:
        """What defines the architecture (for messages, JSON, cache keys and :meth:`from_config`)."""
        return {
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "n_layers": self.n_layers,
            "attention": self.attention,
            "residual": self.residual,
            "mlp": self.mlp,
            "layer_norm": self.layer_norm,
            "causal": self.causal,
        }

    def forward(self, x: torch.Tensor, *, return_values: bool = False, edit=None):
        """``(y_hat, attn)``, and with ``return_values`` also each layer's per-head values in
        output space, ``v_t W_O`` (batch, heads, seq_len, d_model): the vector a head adds per
        unit of weight on token t. ``edit(layer, heads_out)``, if given, may replace each
        layer's per-head outputs (batch, heads, query, d_model) before they are added up
        (for ablations: :func:`attnsink.metrics.ablate_trigger_heads`)."""
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, seq_len, {self.d_model}), got {tuple(x.shape)}")
        rule = get_rule(self.attention)
        mask = visibility(x.shape[1], x.device, self.causal)  # (query, key): key <= query, or all
        h, attn, values = x, [], []  # h: the residual stream, (batch, seq, d)
        for layer in range(self.n_layers):
            a_in = self._norm(h, "ln1", layer)  # pre-LN, or h itself
            # every head reads the whole token: (batch, seq, d) x (heads, d, d) -> (batch, heads, seq, d)
            q = torch.einsum("bld,hde->bhle", a_in, self.W_Q[layer])
            k = torch.einsum("bld,hde->bhle", a_in, self.W_K[layer])
            v = torch.einsum("bld,hde->bhle", a_in, self.W_V[layer])
            scores = q @ k.transpose(-1, -2)  # (batch, heads, query, key), no 1 / sqrt(d)
            logit = getattr(self, rule.logit)[layer] if rule.logit else None
            # zero where the mask hides the key; a gated head's weights times sigmoid(x_i . w_h), per query and head
            gate = torch.einsum("bld,hd->bhl", a_in, self.W_G[layer]) if rule.gated else None
            weights = rule.weights(scores, mask, logit, gate)
            heads_out = (weights @ v) @ self.W_O[layer]  # (batch, heads, query, d)
            if edit is not None:
                heads_out = edit(layer, heads_out)
            out = heads_out.sum(dim=1)  # the heads' outputs add up
            h = h + out if self.residual else out
            if self.mlp:
                hidden = F.gelu(self._norm(h, "ln2", layer) @ self.W_in[layer] + self.b_in[layer])
                h = h + hidden @ self.W_out[layer] + self.b_out[layer]
            attn.append(weights)
            if return_values:
                values.append(v @ self.W_O[layer])
        return (h, attn, values) if return_values else (h, attn)

    def _norm(self, h: torch.Tensor, block: str, layer: int) -> torch.Tensor:
        """LayerNorm ``block`` ("ln1" before attention, "ln2" before the MLP) of ``layer``, or ``h``."""
        if not self.layer_norm:
            return h
        gain, bias = getattr(self, f"{block}_g")[layer], getattr(self, f"{block}_b")[layer]
        return F.layer_norm(h, (self.d_model,), gain, bias, LN_EPS)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.config.items())
