"""The paper's attention-only model. Used in every chapter.

Queries, keys, values and output maps have no bias and are initialised N(0, 0.02^2);
scores are ``q . k`` with no 1/sqrt(d) scale; every head has the full width ``d_model``
and the heads' outputs are summed through their own output maps (the same as
concatenating them and applying one ``(n_heads * d_model, d_model)`` map). With
``residual=True`` each layer adds its output to the residual stream, ``x <- x + layer(x)``.

Beyond the paper (both off by default, so the paper's models stay exactly as they are):
``mlp=True`` adds a two-layer GELU MLP block (hidden width ``MLP_RATIO * d_model``, with
biases) after the attention of every layer, and ``layer_norm=True`` puts a LayerNorm
before each block (pre-LN): ``h <- h + attn(LN(h))``, then ``h <- h + mlp(LN(h))``. Both
need ``residual=True``. There is no final LayerNorm: the task's target is the stream itself.

The forward pass is written once, for a stack of ``S`` models of the same shape
(:func:`forward_stacked`): the trainer trains several seeds as one batched model with it,
and :class:`AttentionModel` calls it with ``S = 1``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import causal_mask, get_rule

PARAM_NAMES = ("W_Q", "W_K", "W_V", "W_O")  # every model has these; sink_logit adds "sink", gated "W_G"
MLP_RATIO = 4  # hidden width of the optional MLP block, in units of d_model
LN_EPS = 1e-5


def _layer_norm(h: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """LayerNorm over the last dimension; ``gain`` and ``bias`` are (S, d), ``h`` is (S, ..., d)."""
    mean = h.mean(dim=-1, keepdim=True)
    var = (h - mean).pow(2).mean(dim=-1, keepdim=True)
    shape = (gain.shape[0],) + (1,) * (h.dim() - 2) + (gain.shape[-1],)
    return (h - mean) / torch.sqrt(var + LN_EPS) * gain.view(shape) + bias.view(shape)


def _check_int(name: str, value, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def forward_stacked(
    params: dict[str, torch.Tensor],
    x: torch.Tensor,
    *,
    attention: str,
    residual: bool,
    return_values: bool = False,
):
    """Run ``S`` stacked models on their own inputs.

    ``params[name]`` has shape (S, n_layers, n_heads, d_model, d_model) for the four maps,
    (S, n_layers, n_heads) for ``sink`` and (S, n_layers, n_heads, d_model) for ``W_G``;
    the optional blocks add ``W_in`` (S, n_layers, d_model, hidden), ``b_in``, ``W_out``,
    ``b_out`` (MLP) and ``ln1_g``, ``ln1_b`` [, ``ln2_g``, ``ln2_b``] (S, n_layers, d_model);
    ``x`` has shape (S, batch, seq_len, d_model). Returns ``(y_hat, attn)`` with ``attn`` a
    list of (S, batch, heads, query, key) tensors, one per layer: the weights the head
    applies to its values (for ``gated``, the softmax weights times the gate). With
    ``return_values`` also each layer's per-head output-space values ``v_t W_O``
    (S, batch, heads, seq_len, d_model): the vector a head adds per unit of weight on token t.
    """
    rule = get_rule(attention)
    n_layers = params["W_Q"].shape[1]
    mlp, layer_norm = "W_in" in params, "ln1_g" in params
    S, B, L, D = x.shape
    mask = causal_mask(L, x.device)  # (query, key)
    h = x  # (S, batch, seq, d)
    attn, values = [], []
    for layer in range(n_layers):
        W_Q, W_K, W_V, W_O = (params[name][:, layer] for name in PARAM_NAMES)  # (S, heads, d, d)
        H = W_Q.shape[1]
        # q . k = x_i W_Q W_K^T x_k and sum_k a_ik x_k W_V W_O: two (d, d) products per head
        # instead of four projections of every token (the same function, fewer FLOPs)
        W_QK = W_Q @ W_K.transpose(-1, -2)  # (S, heads, d, d)
        W_VO = W_V @ W_O
        a_in = _layer_norm(h, params["ln1_g"][:, layer], params["ln1_b"][:, layer]) if layer_norm else h
        # every matrix product below is one batched GEMM, written out rather than left to einsum,
        # which would copy permuted operands; on a CPU these products and the elementwise
        # passes over (S, batch, heads, seq, seq) tensors are most of a training step
        hq = torch.bmm(a_in.reshape(S, B * L, D), W_QK.transpose(1, 2).reshape(S, D, H * D))
        hq = hq.view(S, B, L, H, D).transpose(2, 3)  # (S, batch, heads, seq, d): x_i W_QK per head
        keys = a_in.unsqueeze(2)  # (S, batch, 1, seq, d)
        scores = hq @ keys.transpose(-1, -2)  # (S, batch, heads, query, key)
        if attention == "sink_logit":
            weights = rule(scores, mask, sink=params["sink"][:, layer, None])  # sink: (S, 1, heads)
        else:
            weights = rule(scores, mask)
        if attention == "gated":  # the head's output times sigmoid(x_i . w_h): one gate per query and head
            # (S, batch, heads, seq)
            gate = torch.sigmoid(torch.einsum("sbld,shd->sbhl", a_in, params["W_G"][:, layer]))
            weights = weights * gate[..., None]
        # sum_k a_ik (x_k W_VO) = (sum_k a_ik x_k) W_VO: mix the inputs, then map once per head
        mixed = weights @ keys  # (S, batch, heads, query, d)
        if H > 1:
            mixed = mixed.transpose(2, 3)  # (S, batch, query, heads, d); reshape copies it
        out = torch.bmm(mixed.reshape(S, B * L, H * D), W_VO.reshape(S, H * D, D)).view(S, B, L, D)
        h = h + out if residual else out
        if mlp:
            m_in = _layer_norm(h, params["ln2_g"][:, layer], params["ln2_b"][:, layer]) if layer_norm else h
            hidden = torch.nn.functional.gelu(
                torch.einsum("sbld,sdf->sblf", m_in, params["W_in"][:, layer]) + params["b_in"][:, layer, None, None]
            )
            mlp_out = torch.einsum("sblf,sfd->sbld", hidden, params["W_out"][:, layer])
            h = h + mlp_out + params["b_out"][:, layer, None, None]
        attn.append(weights)
        if return_values:  # v_t W_O per head, (S, batch, heads, seq, d)
            values.append(torch.einsum("sbld,shde->sbhle", a_in, W_VO))
    return (h, attn, values) if return_values else (h, attn)


class AttentionModel(nn.Module):
    """Causal attention-only model of Ran-Milo (2026): ``model(x) -> (y_hat, attn)``.

    ``attn`` is a list with one (batch, heads, query, key) tensor per layer. ``seed``
    makes the initialisation reproducible (it draws from its own generator, not from
    torch's global one).
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
    ):
        super().__init__()
        _check_int("d_model", d_model, 1)
        _check_int("n_heads", n_heads, 1)
        _check_int("n_layers", n_layers, 1)
        get_rule(attention)
        if not isinstance(residual, bool):
            raise ValueError(f"residual must be True or False, got {residual!r}")
        if n_layers > 1 and not residual:
            raise ValueError(
                f"n_layers > 1 requires residual=True (the paper's deeper models are residual), got n_layers={n_layers}"
            )
        for name, flag in (("mlp", mlp), ("layer_norm", layer_norm)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be True or False, got {flag!r}")
            if flag and not residual:
                raise ValueError(f"{name}=True requires residual=True (the blocks add to the residual stream)")
        if seed is not None:
            _check_int("seed", seed, 0)
        if isinstance(init_std, bool) or not (isinstance(init_std, (int, float)) and 0 < init_std < math.inf):
            raise ValueError(f"init_std must be a positive finite number, got {init_std!r}")
        self.d_model, self.n_heads, self.n_layers = d_model, n_heads, n_layers
        self.attention, self.residual, self.seed = attention, residual, seed
        self.mlp, self.layer_norm = mlp, layer_norm

        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        shape = (n_layers, n_heads, d_model, d_model)
        for name in PARAM_NAMES:
            init = torch.randn(shape, generator=generator) * init_std
            self.register_parameter(name, nn.Parameter(init))
        if attention == "sink_logit":  # starts at 0: the phantom key weighs like a key with score 0
            self.register_parameter("sink", nn.Parameter(torch.zeros(n_layers, n_heads)))
        if attention == "gated":  # starts near sigmoid(0) = 1/2
            gate = torch.randn(n_layers, n_heads, d_model, generator=generator) * init_std
            self.register_parameter("W_G", nn.Parameter(gate))
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

    @property
    def config(self) -> dict:
        """What defines the architecture (for messages, JSON and cache keys)."""
        return {
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "n_layers": self.n_layers,
            "attention": self.attention,
            "residual": self.residual,
            "mlp": self.mlp,
            "layer_norm": self.layer_norm,
        }

    def forward(self, x: torch.Tensor, *, return_values: bool = False):
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, seq_len, {self.d_model}), got {tuple(x.shape)}")
        params = {name: p.unsqueeze(0) for name, p in self.named_parameters()}
        outputs = forward_stacked(
            params, x.unsqueeze(0), attention=self.attention, residual=self.residual, return_values=return_values
        )
        y_hat, attn = outputs[0][0], [a[0] for a in outputs[1]]
        if return_values:
            return y_hat, attn, [v[0] for v in outputs[2]]
        return y_hat, attn

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.config.items())
