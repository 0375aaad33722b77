"""Language models (chapter to come): a small GPT trained by next-token prediction on the
Bigram-Backcopy language, whose triggers are known, with softmax and with rules that can
switch a head off."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from .. import lm
from ..cache import cached
from ..profiles import BACKCOPY, BACKCOPY_MODEL, BACKCOPY_RULES, BACKCOPY_TASK
from .base import Context, ExperimentResult, experiment


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.backcopy_heads(result.runs)


def _lm_source() -> str:
    """A hash of the modules that decide a trained GPT's numbers (lm.py and the attention rules)."""
    h = hashlib.sha256()
    for name in ("lm.py", "attention.py"):
        h.update((Path(lm.__file__).parent / name).read_bytes())
    return h.hexdigest()


def train_gpt(ctx: Context, task: lm.BigramBackcopy, attention: str, seed: int) -> tuple[lm.GPT, dict]:
    """One GPT of :data:`~attnsink.profiles.BACKCOPY_MODEL` trained on ``task``, through the cache."""
    s = ctx.settings
    arch = {"vocab_size": task.vocab_size, "seq_len": task.seq_len, **BACKCOPY_MODEL, "attention": attention}
    recipe = {"steps": s.steps, "lr": s.lr, "batch_size": s.batch_size}
    key = {"kind": "gpt", "source": _lm_source(), **lm.task_config(task), **arch, **recipe, "seed": seed}

    def compute() -> dict:
        model = lm.GPT(**arch, seed=seed)
        r = lm.train_lm(model, task, **recipe, seed=seed, progress=ctx.progress)
        return {"state": model.state_dict(), "history": {k: torch.from_numpy(v) for k, v in r.history.items()}}

    payload = cached(ctx.cache_dir, key, compute)
    model = lm.GPT(**arch, seed=seed)
    model.load_state_dict(payload["state"])
    return model, {k: v.numpy() for k, v in payload["history"].items()}


@experiment("backcopy", BACKCOPY, figure=_figure, figure_name="heads")
def backcopy(ctx: Context) -> ExperimentResult:
    """A 2-layer, 4-head GPT trained on Bigram-Backcopy with each rule of
    :data:`~attnsink.profiles.BACKCOPY_RULES`, and softmax on the task without BOS.

    One record per (rule, bos, seed): the validation loss, Sink_1^eps and
    :func:`attnsink.lm.backcopy_metrics` (per head: weight on token 0 and the row's weight,
    at trigger and at ordinary queries). ``results`` maps (rule, bos) to the trained models.
    """
    if ctx.workers not in (None, 1):
        raise ValueError(f"workers: backcopy trains its models one after the other, got workers={ctx.workers}")
    runs, results = [], {}
    for attention, bos in [(rule, True) for rule in BACKCOPY_RULES] + [("softmax", False)]:
        task = lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos)
        results[attention, bos] = []
        for seed in range(ctx.settings.seeds):
            model, history = train_gpt(ctx, task, attention, seed)
            results[attention, bos].append(model)
            runs.append(
                {
                    "attention": attention,
                    "bos": bos,
                    "seed": seed,
                    "val_loss": float(history["val_loss"][-1]),
                    "sink": float(history["sink"][-1]),
                    **lm.backcopy_metrics(model, task),
                }
            )
    return ctx.result(runs, results=results, meta={"task": BACKCOPY_TASK, "model": BACKCOPY_MODEL})
