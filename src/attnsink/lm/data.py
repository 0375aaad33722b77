"""The languages the GPTs learn: Bigram-Backcopy, a synthetic language whose triggers are known
(after Guo et al., 2024); English text: the help topics of CPython 3.11.7 (``pydoc_data.topics``);
and Python source: the top-level modules of CPython 3.11.7's standard library, ten times
more text. The library carries both texts so that every Python reads the same ones.
Used in chapters 7 and 8."""

from __future__ import annotations

import gzip
import hashlib
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from .._checks import check_bool, check_int


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

    def best_loss(self, x: torch.Tensor) -> torch.Tensor:
        """(n, seq_len - 1): the loss that the best predictor of this language (the one that knows
        the chain and the triggers) takes at each next-token target of sequences ``x``, given
        everything before it: 0 at a copy (the
        input is a trigger: the target is the token before it), ``-log P[a, b]`` after any
        other token ``a`` (the chain's own randomness; its mean over the targets is the
        chain's entropy rate there), and ``log`` (the number of non-trigger tokens) for the
        first real token, which follows BOS uniformly. This is the loss on the targets that
        occurred; averaged over many sequences drawn from the language it is the least
        expected loss any model can have (on a finite sample another predictor can be luckier)."""
        P, _ = self.chain()
        copy = self.trigger_targets(x).cpu()
        inputs, targets = x[:, :-1].cpu(), x[:, 1:].cpu()
        logP = torch.from_numpy(np.log(P))
        best = -logP[inputs.clamp(max=self.vocab_size - 1), targets.clamp(max=self.vocab_size - 1)]
        if self.bos:
            best[:, 0] = math.log(self.vocab_size - self.n_triggers)
        return torch.where(copy, 0.0, best).to(torch.float64)


CORPUS = Path(__file__).parent / "corpus" / "pydoc_topics.txt.gz"
CORPUS_SHA256 = "71f2ff5d99bdc1f9c48c5c2353ad138201c5ca1c377e0226857ef8fa89b8bcee"
"""The checksum of the text: a model trained on another text is another model."""

SOURCE = Path(__file__).parent / "corpus" / "stdlib_py.txt.gz"
SOURCE_SHA256 = "4cdcd8e30e688a37e6ceb99c607d19fa3f6bcc283510f087879fd58806857b5f"
"""The checksum of the Python source (:func:`source_corpus`)."""


def _read_carried(path: Path, sha256: str) -> str:
    data = gzip.decompress(path.read_bytes())
    if hashlib.sha256(data).hexdigest() != sha256:
        raise RuntimeError(f"{path} is not the book's text (its SHA-256 differs); restore it from the repository")
    return data.decode("utf-8")


@lru_cache(maxsize=1)
def text_corpus() -> str:
    """The English text of CPython 3.11.7's help topics (``pydoc_data.topics``, about 466 KB),
    which the library carries (``lm/corpus/``, see its README): the help topics change from one
    Python release to the next, so reading the running Python's would train another model on
    every Python. ``RuntimeError`` if the file is not the text it should be."""
    return _read_carried(CORPUS, CORPUS_SHA256)


@lru_cache(maxsize=1)
def source_corpus() -> str:
    """Python source: the 168 top-level modules of CPython 3.11.7's standard library
    (``Lib/*.py``, in sorted order, joined by newlines; about 4.7 MB), which the library carries
    (``lm/corpus/``, see its README) for the same reason as :func:`text_corpus`.
    ``RuntimeError`` if the file is not the text it should be."""
    return _read_carried(SOURCE, SOURCE_SHA256)


def _encode(text: str) -> tuple[torch.Tensor, tuple[str, ...]]:
    chars = tuple(sorted(set(text)))
    index = {c: i for i, c in enumerate(chars)}
    return torch.tensor([index[c] for c in text], dtype=torch.int64), chars


@lru_cache(maxsize=1)
def _encoded_corpus() -> tuple[torch.Tensor, tuple[str, ...]]:
    return _encode(text_corpus())


@lru_cache(maxsize=1)
def _encoded_source() -> tuple[torch.Tensor, tuple[str, ...]]:
    return _encode(source_corpus())


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
        part = self._part(split)
        width = self.seq_len - (1 if self.bos else 0)
        g = torch.Generator().manual_seed(seed)
        starts = torch.randint(0, len(part) - width, (n,), generator=g)
        return self._with_bos(part[starts[:, None] + torch.arange(width)])

    def tiles(self, split: str = "val") -> torch.Tensor:
        """The whole ``split`` part cut into windows side by side, in order, without overlap
        (the characters after the last whole window are left out), as int64 (n, seq_len):
        every held-out character once, for a loss over all of them."""
        part = self._part(split)
        width = self.seq_len - (1 if self.bos else 0)
        n = len(part) // width
        return self._with_bos(part[: n * width].reshape(n, width))

    def _part(self, split: str) -> torch.Tensor:
        if split not in ("train", "val"):
            raise ValueError(f"split must be 'train' or 'val', got {split!r}")
        data, _ = self.encoded()
        cut = int(len(data) * (1 - self.val_fraction))
        return self._train_part(data[:cut]) if split == "train" else data[cut:]

    def _with_bos(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.full((len(x), 1), self.bos_id), x], dim=1) if self.bos else x

    def _train_part(self, train: torch.Tensor) -> torch.Tensor:
        """The text the training windows come from, given the training part ``train``."""
        return train


@dataclass(frozen=True)
class PythonSource(CharText):
    """Python source as a character-level language (:func:`source_corpus`, about ten times
    the text of :class:`CharText`), windows as in :class:`CharText`; the last
    ``val_fraction`` of the text is held out. With ``train_chars``, training windows come from
    the first ``train_chars`` characters of the training part only (the amount of data seen, a
    variable of Gu et al., 2025), and validation from the same held-out end."""

    train_chars: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.train_chars is not None:
            check_int("train_chars", self.train_chars, 10 * self.seq_len)
            total = len(self.encoded()[0])
            cut = int(total * (1 - self.val_fraction))
            if self.train_chars > cut:
                raise ValueError(
                    f"train_chars must be at most the training part's {cut} characters, got {self.train_chars}"
                )

    def encoded(self) -> tuple[torch.Tensor, tuple[str, ...]]:
        """The source as token ids, and the characters (id = index)."""
        return _encoded_source()

    def _train_part(self, train: torch.Tensor) -> torch.Tensor:
        return train if self.train_chars is None else train[: self.train_chars]


@dataclass(frozen=True)
class PythonSample(PythonSource):
    """:class:`PythonSource` whose training windows come from ``train_chars`` characters
    taken as ``pieces`` stretches of equal length spread evenly over the whole training part
    (the first at its start, the last ending at its end), not from its first characters: the
    modules are in alphabetical order, so a first cut would be the library's first modules and
    a smaller amount of text would also be other text. The stretches are joined, as the
    modules are; validation is the same held-out end as :class:`PythonSource`'s."""

    train_chars: int = 420_000
    pieces: int = 100

    def __post_init__(self):
        if self.train_chars is None:
            raise ValueError("train_chars must be a number of characters for PythonSample, got None")
        check_int("pieces", self.pieces, 1)
        super().__post_init__()
        if self.train_chars // self.pieces < self.seq_len:
            raise ValueError(
                f"pieces must leave stretches of at least seq_len={self.seq_len} characters: "
                f"{self.train_chars} characters in {self.pieces} pieces are {self.train_chars // self.pieces} each"
            )

    def piece_starts(self, train_length: int) -> list[int]:
        """Where each stretch starts in a training part of ``train_length`` characters."""
        length = self.train_chars // self.pieces
        last = train_length - length
        return [round(i * last / max(self.pieces - 1, 1)) for i in range(self.pieces)]

    def _train_part(self, train: torch.Tensor) -> torch.Tensor:
        length = self.train_chars // self.pieces
        return torch.cat([train[s : s + length] for s in self.piece_starts(len(train))])


def task_config(task) -> dict:
    """A task's fields with its type, for cache keys and JSON records."""
    return {"task": type(task).__name__, **asdict(task)}


def val_batch(task, n: int) -> torch.Tensor:
    """The ``n`` fixed validation sequences of ``task``: held-out text windows for
    :class:`CharText`, sequences from a seed the training batches never use otherwise."""
    if isinstance(task, CharText):
        return task.sample(n, seed=0, split="val")
    return task.sample(n, seed=2**31 - 1)
