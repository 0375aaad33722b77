"""A small GPT trained by next-token prediction, for the bridge from the trigger task to
language models: a synthetic language with known triggers (Bigram-Backcopy, after Guo et
al., 2024) and English text that ships with every Python (``pydoc_data.topics``).

The model is a standard decoder: token and learned position embeddings, pre-LayerNorm
blocks (attention, then a two-layer MLP), scores scaled by ``1/sqrt(d_head)``, a causal
mask and a linear read-out; the attention weights come from any rule of
:mod:`attnsink.attention`, so the book's "off-state" rules can be compared with softmax in
a language model. A BOS token (id ``vocab_size``) starts every sequence unless
``bos=False``. Training is the plain AdamW loop on cross-entropy.

What it measures, per layer and head (:func:`head_metrics`): the weight on the first
token at every query position, its mean over queries, Gu et al.'s (2025) ``Sink_1^eps``
(the share of heads whose mean weight on the first token exceeds ``eps = 0.3``), and the
norm of the first token's value relative to the other tokens' (a sink whose value is near
zero adds nothing: the head's "no-op").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_bool, check_int
from .attention import causal_mask, get_rule

SINK_EPS = 0.3  # Gu et al. (2025): a head is a sink when its mean weight on token 1 exceeds this


# ---- data ----


@dataclass(frozen=True)
class BigramBackcopy:
    """Sequences from a random bigram chain over ``vocab_size`` tokens, except that after
    one of ``n_triggers`` trigger tokens the next token copies the token before the
    trigger (Guo et al., 2024). The chain (Dirichlet(``alpha``) rows) and the triggers are
    drawn from ``seed``; a sequence never starts with a trigger, so every trigger has a
    token before it."""

    vocab_size: int = 32
    n_triggers: int = 3
    seq_len: int = 64
    alpha: float = 0.3
    seed: int = 0
    bos: bool = True

    def __post_init__(self):
        check_int("vocab_size", self.vocab_size, 4)
        check_int("n_triggers", self.n_triggers, 1, self.vocab_size - 2)
        check_int("seq_len", self.seq_len, 3)
        check_int("seed", self.seed, 0)
        check_bool("bos", self.bos)
        if not (isinstance(self.alpha, (int, float)) and not isinstance(self.alpha, bool) and self.alpha > 0):
            raise ValueError(f"alpha must be a number > 0, got {self.alpha!r}")

    @property
    def bos_id(self) -> int:
        return self.vocab_size

    def chain(self) -> tuple[np.ndarray, np.ndarray]:
        """The transition matrix (vocab, vocab) and the sorted trigger tokens."""
        rng = np.random.default_rng(self.seed)
        P = rng.dirichlet(np.full(self.vocab_size, self.alpha), size=self.vocab_size)
        triggers = np.sort(rng.choice(self.vocab_size, size=self.n_triggers, replace=False))
        return P, triggers

    def sample(self, n: int, seed: int) -> torch.Tensor:
        """``n`` sequences of ``seq_len`` tokens (BOS first when ``bos``), as int64 (n, seq_len)."""
        check_int("n", n, 1)
        P, triggers = self.chain()
        rng = np.random.default_rng([self.seed, seed])
        is_trigger = np.zeros(self.vocab_size, dtype=bool)
        is_trigger[triggers] = True
        start = 1 if self.bos else 0
        x = np.empty((n, self.seq_len), dtype=np.int64)
        if self.bos:
            x[:, 0] = self.bos_id
        ordinary = np.flatnonzero(~is_trigger)
        x[:, start] = rng.choice(ordinary, size=n)
        cdf = np.cumsum(P, axis=1)
        for t in range(start + 1, self.seq_len):
            prev = x[:, t - 1]
            drawn = (rng.random(n)[:, None] < cdf[prev]).argmax(axis=1)
            copy = is_trigger[prev] & (t - 2 >= start)
            x[:, t] = np.where(copy, x[:, t - 2], drawn)
        return torch.from_numpy(x)

    def trigger_targets(self, x: torch.Tensor) -> torch.Tensor:
        """(n, seq_len - 1) bool: the next-token targets that are copies (the input token is a trigger)."""
        _, triggers = self.chain()
        inputs = x[:, :-1]
        start = 1 if self.bos else 0
        hit = torch.isin(inputs, torch.as_tensor(triggers, device=x.device))
        hit[:, : start + 1] = False  # the first real token is never a trigger
        return hit


def text_corpus() -> str:
    """The English text of ``pydoc_data.topics`` (CPython's help topics, about 465 KB), which
    ships with every Python: no download."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


@lru_cache(maxsize=1)
def _encoded_corpus() -> tuple[torch.Tensor, tuple[str, ...]]:
    text = text_corpus()
    chars = tuple(sorted(set(text)))
    index = {c: i for i, c in enumerate(chars)}
    return torch.tensor([index[c] for c in text], dtype=torch.int64), chars


@dataclass(frozen=True)
class CharText:
    """A character-level language over ``text``: windows of ``seq_len`` tokens (BOS first
    when ``bos``); the last ``val_fraction`` of the text is held out."""

    seq_len: int = 64
    bos: bool = True
    val_fraction: float = 0.1

    def __post_init__(self):
        check_int("seq_len", self.seq_len, 3)
        check_bool("bos", self.bos)
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {self.val_fraction!r}")

    def encoded(self) -> tuple[torch.Tensor, tuple[str, ...]]:
        """The corpus as token ids, and the characters (id = index)."""
        return _encoded_corpus()

    @property
    def vocab_size(self) -> int:
        return len(self.encoded()[1])

    @property
    def bos_id(self) -> int:
        return self.vocab_size

    def sample(self, n: int, seed: int, *, split: str = "train") -> torch.Tensor:
        """``n`` random windows of the ``split`` ('train' or 'val') part, as int64 (n, seq_len)."""
        check_int("n", n, 1)
        if split not in ("train", "val"):
            raise ValueError(f"split must be 'train' or 'val', got {split!r}")
        data, _ = self.encoded()
        cut = int(len(data) * (1 - self.val_fraction))
        part = data[:cut] if split == "train" else data[cut:]
        width = self.seq_len - (1 if self.bos else 0)
        g = torch.Generator().manual_seed(seed)
        starts = torch.randint(0, len(part) - width, (n,), generator=g)
        x = part[starts[:, None] + torch.arange(width)]
        if self.bos:
            x = torch.cat([torch.full((n, 1), self.bos_id), x], dim=1)
        return x


# ---- model ----


class GPT(nn.Module):
    """A pre-LN decoder with ``n_layers`` blocks of ``n_heads`` heads and an MLP (4x wide).

    ``forward(x)`` returns next-token logits (batch, seq, vocab) for tokens ``x``; with
    ``return_attn=True`` also each layer's weights (batch, heads, query, key) and values
    (batch, heads, key, d_head).
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
        if d_model % n_heads:
            raise ValueError(f"d_model must be a multiple of n_heads, got d_model={d_model}, n_heads={n_heads}")
        self.rule = get_rule(attention)  # ValueError for an unknown rule
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
        g = torch.Generator().manual_seed(seed)
        self.tok = nn.Embedding(vocab_size + 1, d_model)  # + BOS
        self.pos = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList()
        for _ in range(n_layers):
            block = nn.ModuleDict(
                {
                    "ln1": nn.LayerNorm(d_model),
                    "qkv": nn.Linear(d_model, 3 * d_model, bias=False),
                    "out": nn.Linear(d_model, d_model, bias=False),
                    "ln2": nn.LayerNorm(d_model),
                    "mlp": nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)),
                }
            )
            if attention == "sink_logit":
                block["sink"] = _Param(torch.zeros(n_heads))
            if attention == "gated":
                block["gate"] = nn.Linear(d_model, n_heads)
            self.blocks.append(block)
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size + 1, bias=False)
        with torch.no_grad():  # GPT-2's init, drawn from ``seed`` alone: N(0, 0.02) weights, zero biases
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
                elif name.endswith("bias"):
                    p.zero_()

    def forward(self, x: torch.Tensor, *, return_attn: bool = False):
        B, L = x.shape
        if L > self.config["seq_len"]:
            raise ValueError(f"x has {L} tokens; the model was built for seq_len={self.config['seq_len']}")
        h = self.tok(x) + self.pos(torch.arange(L, device=x.device))
        mask = causal_mask(L, x.device)
        attns, values = [], []
        for block in self.blocks:
            a_in = block["ln1"](h)
            q, k, v = block["qkv"](a_in).view(B, L, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)  # (B, heads, query, key)
            if self.attention == "sink_logit":
                w = self.rule(scores, mask, sink=block["sink"].value)
            else:
                w = self.rule(scores, mask)
            if self.attention == "gated":  # the head's output times sigmoid(gate(x_i)), per query and head
                w = w * torch.sigmoid(block["gate"](a_in)).transpose(1, 2)[..., None]
            o = (w @ v).transpose(1, 2).reshape(B, L, -1)
            h = h + block["out"](o)
            h = h + block["mlp"](block["ln2"](h))
            if return_attn:
                attns.append(w)
                values.append(v)
        logits = self.head(self.ln_f(h))
        return (logits, attns, values) if return_attn else logits


class _Param(nn.Module):
    """A bare learnable tensor that can live in an ``nn.ModuleDict``."""

    def __init__(self, value: torch.Tensor):
        super().__init__()
        self.value = nn.Parameter(value)


def lm_loss(model: GPT, x: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over every position after the first (BOS is never a target)."""
    logits = model(x[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))


# ---- metrics ----


@torch.no_grad()
def head_metrics(model: GPT, x: torch.Tensor, *, eps: float = SINK_EPS) -> dict:
    """Per layer and head, on tokens ``x``: ``first_mass`` (layers, heads, query) the weight on
    token 0 at each query position; ``first_mean`` (layers, heads) its mean over queries
    1..L-1; ``sink`` = ``Sink_1^eps``, the share of heads with ``first_mean > eps``;
    ``value_ratio`` (layers, heads), token 0's value norm over the mean of the others'."""
    was = model.training
    model.eval()
    _, attns, values = model(x.to(_device(model)), return_attn=True)
    model.train(was)
    first = torch.stack([a[..., 0].mean(dim=0) for a in attns]).cpu()  # (layers, heads, query)
    first_mean = first[..., 1:].mean(dim=-1)
    norms = torch.stack([v.norm(dim=-1).mean(dim=0) for v in values]).cpu()  # (layers, heads, key)
    return {
        "first_mass": first,
        "first_mean": first_mean,
        "sink": (first_mean > eps).float().mean().item(),
        "value_ratio": norms[..., 0] / norms[..., 1:].mean(dim=-1),
    }


@dataclass
class LMResult:
    """A trained model and what training recorded every ``every`` steps: the step, the
    training loss, the validation loss and ``Sink_1^eps``, and the per-head mean weight on
    token 0 (steps, layers, heads)."""

    model: GPT
    history: dict


def train_lm(
    model: GPT,
    task,
    *,
    steps: int,
    lr: float = 3e-3,
    batch_size: int = 32,
    weight_decay: float = 0.0,
    every: int = 50,
    n_val: int = 128,
    seed: int = 0,
    progress: bool = False,
) -> LMResult:
    """AdamW on next-token cross-entropy for ``steps`` steps; batches of ``batch_size``
    fresh sequences from ``task`` (a :class:`BigramBackcopy` or :class:`CharText`), on the
    model's device."""
    check_int("steps", steps, 1)
    check_int("batch_size", batch_size, 1)
    check_int("every", every, 1)
    for name, value in (("lr", lr), ("weight_decay", weight_decay)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or (name == "lr" and value == 0):
            raise ValueError(f"{name} must be a number {'> 0' if name == 'lr' else '>= 0'}, got {value!r}")
    device = _device(model)
    val = _val_batch(task, n_val).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=weight_decay)
    history = {"step": [], "loss": [], "val_loss": [], "sink": [], "first_mean": []}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=f"GPT {model.attention}", leave=False)
    for step in range(1, steps + 1):
        x = task.sample(batch_size, seed=seed * 1_000_003 + step).to(device)
        loss = lm_loss(model, x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % every == 0 or step == steps:
            m = head_metrics(model, val)
            with torch.no_grad():
                model.eval()
                val_loss = lm_loss(model, val).item()
                model.train()
            for key, value in (("step", step), ("loss", loss.item()), ("val_loss", val_loss), ("sink", m["sink"])):
                history[key].append(value)
            history["first_mean"].append(m["first_mean"].numpy())
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return LMResult(model, {k: np.asarray(v) for k, v in history.items()})


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _val_batch(task, n: int) -> torch.Tensor:
    if isinstance(task, CharText):
        return task.sample(n, seed=0, split="val")
    return task.sample(n, seed=2**31 - 1)  # a seed the training batches never use


def task_config(task) -> dict:
    """A task's fields with its type, for cache keys and JSON records."""
    return {"task": type(task).__name__, **asdict(task)}


@torch.no_grad()
def backcopy_metrics(model: GPT, task: BigramBackcopy, *, n: int = 256, seed: int = 2**31 - 2) -> dict:
    """How a model trained on Bigram-Backcopy does it, on ``n`` fresh sequences: the loss and
    accuracy at the copy targets (the token after a trigger) and the loss elsewhere; per
    layer and head (lists of lists), the weight on token 0 and the whole row's weight, at
    queries that are triggers and at ordinary queries (the first real token on)."""
    x = task.sample(n, seed=seed).to(_device(model))
    was = model.training
    model.eval()
    logits, attns, _ = model(x[:, :-1], return_attn=True)
    model.train(was)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, x[:, 1:, None])[..., 0]
    copy = task.trigger_targets(x)  # (n, L - 1), aligned with the queries of x[:, :-1]
    start = 1 if task.bos else 0
    ordinary = ~copy
    ordinary[:, :start] = False  # BOS's own row is not an ordinary query
    out = {
        "copy_loss": -logp[copy].mean().item(),
        "copy_acc": (logits.argmax(-1)[copy] == x[:, 1:][copy]).float().mean().item(),
        "other_loss": -logp[~copy].mean().item(),
    }
    for name, rows in (("trigger", copy), ("ordinary", ordinary)):
        w = rows[:, None].float()  # (n, 1, query)
        out[f"first_{name}"] = [((a[..., 0] * w).sum((0, 2)) / w.sum((0, 2))).tolist() for a in attns]
        out[f"row_{name}"] = [((a.sum(-1) * w).sum((0, 2)) / w.sum((0, 2))).tolist() for a in attns]
    return out


HEAD_KEYS = ("first_trigger", "first_ordinary", "row_trigger", "row_ordinary")


def head_rows(runs: list[dict]) -> list[dict]:
    """Records with :func:`backcopy_metrics`' per-head lists (``attention``, ``bos``, ``seed``
    and the metrics) as one row per (run, layer, head)."""
    rows = []
    for r in runs:
        for layer, heads in enumerate(r["first_ordinary"]):
            for head in range(len(heads)):
                base = {"attention": r["attention"], "bos": r["bos"], "seed": r["seed"], "layer": layer, "head": head}
                rows.append({**base, **{k: float(r[k][layer][head]) for k in HEAD_KEYS}})
    return rows


@torch.no_grad()
def head_outputs(model: GPT, x: torch.Tensor) -> dict:
    """What each head writes, on tokens ``x``, per layer (lists over layers): ``weights``
    (batch, heads, query, key); ``out_norm`` (batch, heads, query), the norm of the head's
    contribution to the residual stream (its output through its slice of the output
    projection) at each query; ``key_norm`` (batch, heads, key), the norm of each key's value
    through the same slice (what the head would write if it put all its weight there)."""
    was = model.training
    model.eval()
    _, attns, values = model(x.to(_device(model)), return_attn=True)
    model.train(was)
    out = {"weights": [], "out_norm": [], "key_norm": []}
    d_head = model.d_head
    for block, w, v in zip(model.blocks, attns, values):
        W = block["out"].weight.view(-1, model.n_heads, d_head).permute(1, 0, 2)  # (heads, d_model, d_head)
        projected = torch.einsum("hmd,bhkd->bhkm", W, v)  # each key's value in the residual stream
        out["weights"].append(w.cpu())
        out["out_norm"].append((w @ projected).norm(dim=-1).cpu())
        out["key_norm"].append(projected.norm(dim=-1).cpu())
    return out


def conditional_heads(
    model: GPT,
    x: torch.Tensor,
    *,
    active: float = 0.5,
    coverage: float = 0.25,
    quiet: float = 0.25,
    null: float = 0.25,
    min_count: int = 20,
) -> list[dict]:
    """Which heads are trigger-conditional on tokens ``x``, and where their weight goes when
    they are silent: one dict per (layer, head).

    A query's *class* is its own token. A head's active classes are those whose mean output
    norm is at least ``active`` times the largest class mean (classes with at least
    ``min_count`` queries, from the second position on); its silent queries are the queries
    of the other counted classes. The head is ``conditional`` when its active classes cover
    at most ``coverage`` of the counted queries and its mean output norm at silent queries is
    at most ``quiet`` times that at active ones. At silent and at active queries, the
    record gives the mean weight on token 0 (``first_*``), the mean weight on *null* keys,
    those whose projected value norm is at most ``null`` times the median key's in that
    sequence (``null_*``), the mean row sum (``row_*``), and ``coherence_*``, the mean of
    what the head writes over what its weights would write if no two values cancelled
    (``|sum_j w_j v_j| / sum_j w_j |v_j|``, in [0, 1]; queries where the denominator is zero
    are left out).
    """
    for name, value in (("active", active), ("coverage", coverage), ("quiet", quiet), ("null", null)):
        if not 0 < value <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    check_int("min_count", min_count, 1)
    h = head_outputs(model, x)
    tokens = x[:, 1:].cpu()
    classes, counts = tokens.unique(return_counts=True)
    counted = classes[counts >= min_count]
    if len(counted) == 0:
        raise ValueError(f"no token occurs min_count={min_count} times in x; pass more sequences")
    in_count = torch.isin(tokens, counted)
    records = []
    for layer, (w, norm, key_norm) in enumerate(zip(h["weights"], h["out_norm"], h["key_norm"])):
        median = key_norm.median(dim=-1, keepdim=True).values
        is_null = (key_norm <= null * median).float()  # (batch, heads, key)
        for head in range(w.shape[1]):
            n = norm[:, head, 1:]
            means = torch.stack([n[tokens == c].mean() for c in counted])
            on = counted[means >= active * means.max()]
            act = torch.isin(tokens, on) & in_count
            sil = in_count & ~act
            rec = {"layer": layer, "head": head, "active_tokens": on.tolist()}
            rec["coverage"] = act.sum().item() / in_count.sum().item()
            rec["quiet_ratio"] = (n[sil].mean() / n[act].mean()).item() if sil.any() else float("nan")
            rec["conditional"] = bool(rec["coverage"] <= coverage and rec["quiet_ratio"] <= quiet)
            wq = w[:, head, 1:, :]  # (batch, query, key), queries from position 1
            null_mass = (wq * is_null[:, head, None, :]).sum(-1)
            weighted = (wq * key_norm[:, head, None, :]).sum(-1)  # what the row would write without cancellation
            coherence = torch.where(weighted > 0, n / weighted, torch.nan)
            for name, rows in (("silent", sil), ("active", act)):
                rec[f"first_{name}"] = wq[..., 0][rows].mean().item() if rows.any() else float("nan")
                rec[f"null_{name}"] = null_mass[rows].mean().item() if rows.any() else float("nan")
                rec[f"row_{name}"] = wq.sum(-1)[rows].mean().item() if rows.any() else float("nan")
                rec[f"coherence_{name}"] = coherence[rows].nanmean().item() if rows.any() else float("nan")
            records.append(rec)
    return records
