"""Language models: a small GPT trained by next-token prediction, with softmax and with
rules that can switch a head off, on the Bigram-Backcopy language, whose triggers are known
(:func:`backcopy`), and on English text (:func:`text_lm`)."""

from __future__ import annotations

import torch

from .. import lm
from ..cache import entry_meta, load, store
from ..parallel import in_processes, resolve_workers
from ..profiles import (
    BACKCOPY,
    BACKCOPY_MODEL,
    BACKCOPY_RULES,
    BACKCOPY_TASK,
    TEXT,
    TEXT_LRS,
    TEXT_MODEL,
    TEXT_RULES,
    TEXT_TASK,
    TEXT_WEIGHT_DECAY,
)
from ..train import resolve_device
from .base import Context, ExperimentResult, Planned, experiment


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.backcopy_heads(result.runs)


def _text_figure(result: ExperimentResult):
    from .. import plots

    return plots.sink_over_training(result.runs)


def _train_gpt(task, arch: dict, recipe: dict, seed: int, device: str, progress=False) -> dict:
    """Train one GPT (here or in a worker process); its weights and history as plain tensors.

    On the CPU it trains with one thread wherever it runs: a GPT's matrix products sum in
    an order that depends on the thread count, and 600 steps of AdamW turn that last-bit
    difference into a different model, so one thread keeps the numbers the same whether the
    model was trained here or in a worker (``tests/test_lm.py`` checks it)."""
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)
    try:
        model = lm.GPT(**arch, seed=seed).to(device)
        r = lm.train_lm(model, task, **recipe, seed=seed, progress=progress)
    finally:
        torch.set_num_threads(threads)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {"state": state, "history": {k: torch.from_numpy(v) for k, v in r.history.items()}}


def gpt_key(task, arch: dict, recipe: dict, seed: int) -> dict:
    """The results-cache config of one GPT: its task, shape, rule, recipe and seed."""
    return {"kind": "gpt", **lm.task_config(task), **arch, **recipe, "seed": seed}


def train_gpts(ctx: Context, runs: list[tuple], shape: dict) -> list[tuple[lm.GPT, dict]]:
    """GPTs of ``shape`` (``d_model``, ``n_layers``, ``n_heads``), one per (task, rule, seed,
    recipe) of ``runs``, where ``recipe`` holds :func:`attnsink.lm.train_lm`'s arguments
    (``steps``, ``lr``, ``batch_size``, ...); through the results cache, the missing ones side
    by side in worker processes (:func:`attnsink.parallel.in_processes`), one after the
    other on a GPU."""
    archs = [{"vocab_size": t.vocab_size, "seq_len": t.seq_len, **shape, "attention": rule} for t, rule, _, _ in runs]
    keys = [gpt_key(task, arch, recipe, seed) for (task, _, seed, recipe), arch in zip(runs, archs)]
    if ctx.plan is not None:
        ctx.plan.extend(keys)
        raise Planned
    device = resolve_device(ctx.device)
    calls, payloads = [], {}
    for i, (task, attention, seed, recipe) in enumerate(runs):
        arch = {"vocab_size": task.vocab_size, "seq_len": task.seq_len, **shape, "attention": attention}
        payload = load(ctx.cache_dir, keys[i])
        if payload is None:
            calls.append((i, (task, arch, recipe, seed, device.type)))
        else:
            payloads[i] = payload

    if calls and not ctx.train:
        raise ctx.missing(f"{len(calls)} of {len(runs)} models")

    def keep(k: int, payload: dict) -> None:
        i = calls[k][0]
        payloads[i] = payload
        if ctx.cache_dir is not None:
            store(ctx.cache_dir, keys[i], payload, entry_meta(device))

    workers = min(resolve_workers(ctx.workers, device), len(calls))
    if workers <= 1:
        for k, (_, args) in enumerate(calls):
            keep(k, _train_gpt(*args, progress=ctx.progress))
    else:
        in_processes(_train_gpt, [args for _, args in calls], workers=workers, on_result=keep, progress=ctx.progress)
    out = []
    for i, (task, attention, seed, _) in enumerate(runs):
        model = lm.GPT(task.vocab_size, seq_len=task.seq_len, **shape, attention=attention, seed=seed)
        model.load_state_dict(payloads[i]["state"])
        out.append((model.to(device), {k: v.numpy() for k, v in payloads[i]["history"].items()}))
    return out


@experiment("backcopy", BACKCOPY, figure=_figure, figure_name="heads")
def backcopy(ctx: Context) -> ExperimentResult:
    """A 2-layer, 4-head GPT trained on Bigram-Backcopy with each rule of
    :data:`~attnsink.profiles.BACKCOPY_RULES`, and softmax on the task without BOS.

    One record per (rule, bos, seed): the validation loss, Sink_1^eps and
    :func:`attnsink.lm.backcopy_metrics` (per head: weight on token 0 and the row's weight,
    at trigger and at ordinary queries). ``results`` maps (rule, bos) to the trained models.
    """
    models = [(rule, True) for rule in BACKCOPY_RULES] + [("softmax", False)]
    tasks = {bos: lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos) for bos in (True, False)}
    recipe = {"steps": ctx.settings.steps, "lr": ctx.settings.lr, "batch_size": ctx.settings.batch_size}
    wanted = [(tasks[bos], rule, seed, recipe) for rule, bos in models for seed in range(ctx.settings.seeds)]
    trained = iter(train_gpts(ctx, wanted, BACKCOPY_MODEL))
    runs, results = [], {}
    for attention, bos in models:
        results[attention, bos] = []
        for seed in range(ctx.settings.seeds):
            model, history = next(trained)
            results[attention, bos].append(model)
            runs.append(
                {
                    "attention": attention,
                    "bos": bos,
                    "seed": seed,
                    "val_loss": float(history["val_loss"][-1]),
                    "sink": float(history["sink"][-1]),
                    **lm.backcopy_metrics(model, tasks[bos]),
                }
            )
    return ctx.result(runs, results=results, meta={"task": BACKCOPY_TASK, "model": BACKCOPY_MODEL})


TEXT_EVERY = 100  # steps between two measurements of the heads during training
N_ANALYSIS = 128  # validation windows for the per-head analysis: the ones measured during training
ROW_MIN = 0.01  # a row carrying less weight than this in all says nothing about where its head looks


def first_share(weights: torch.Tensor, row_min: float = ROW_MIN) -> list[float]:
    """Per head, the first token's share of the row, averaged over the rows (queries 1 on) of
    ``weights`` (batch, heads, query, key) that carry at least ``row_min`` of weight in all; NaN
    for a head with no such row (off at every query). A ReLU row need not sum to one, and the
    share of a nearly empty row is noise: a head that is off almost everywhere could otherwise
    show any share at all from the few rows with a trace of weight."""
    if not (isinstance(row_min, (int, float)) and not isinstance(row_min, bool) and row_min > 0):
        raise ValueError(f"row_min must be a number > 0, got {row_min!r}")
    rows = weights[..., 1:, :].sum(-1)
    keep = rows >= row_min
    share = torch.where(keep, weights[..., 1:, 0] / rows.clamp_min(row_min), torch.nan)
    return share.nanmean(dim=(0, 2)).tolist()


@experiment("text_lm", TEXT, figure=_text_figure, figure_name="sinks")
def text_lm(ctx: Context) -> ExperimentResult:
    """A character-level GPT of :data:`~attnsink.profiles.TEXT_MODEL` on English text
    (:class:`attnsink.lm.CharText`), with each rule of :data:`~attnsink.profiles.TEXT_RULES`
    at each learning rate of :data:`~attnsink.profiles.TEXT_LRS`.

    One record per (rule, lr, seed): the final validation loss and Sink_1^eps; the history
    of both and of every head's mean weight on the first token (``history``, measured every
    :data:`TEXT_EVERY` steps on fixed validation windows); per head, on the same windows at
    the end, the first-token weight and the first token's value-norm ratio (``first_mean``,
    ``value_ratio``), and its share of the rows that carry weight (``first_share``, see
    :func:`first_share`; a ReLU row need not sum to one); and
    :func:`attnsink.lm.conditional_heads` on :data:`N_ANALYSIS` validation windows
    (``heads``). ``results`` maps (rule, lr) to the trained models.
    """
    task = lm.CharText(**TEXT_TASK)
    s = ctx.settings
    recipes = {
        lr: {
            "steps": s.steps,
            "lr": lr,
            "batch_size": s.batch_size,
            "weight_decay": TEXT_WEIGHT_DECAY,
            "every": TEXT_EVERY,
        }
        for lr in TEXT_LRS
    }
    points = [(rule, lr) for lr in TEXT_LRS for rule in TEXT_RULES]
    wanted = [(task, rule, seed, recipes[lr]) for rule, lr in points for seed in range(s.seeds)]
    trained = iter(train_gpts(ctx, wanted, TEXT_MODEL))
    x = task.sample(N_ANALYSIS, seed=0, split="val")  # train_lm's validation windows: the history ends here
    runs, results = [], {}
    for attention, lr in points:
        results[attention, lr] = []
        for seed in range(s.seeds):
            model, history = next(trained)
            results[attention, lr].append(model)
            m = lm.head_metrics(model, x)
            share = [first_share(w) for w in lm.head_outputs(model, x)["weights"]]
            runs.append(
                {
                    "attention": attention,
                    "lr": lr,
                    "weight_decay": TEXT_WEIGHT_DECAY,
                    "seed": seed,
                    "val_loss": float(history["val_loss"][-1]),
                    "sink": m["sink"],
                    "first_mean": m["first_mean"].tolist(),
                    "value_ratio": m["value_ratio"].tolist(),
                    "first_share": share,
                    "history": {
                        "step": history["step"].tolist(),
                        "val_loss": history["val_loss"].tolist(),
                        "sink": history["sink"].tolist(),
                        "first_mean": history["first_mean"].tolist(),
                    },
                    "heads": lm.conditional_heads(model, x),
                }
            )
    meta = {"task": TEXT_TASK, "model": TEXT_MODEL, "weight_decay": TEXT_WEIGHT_DECAY, "lrs": list(TEXT_LRS)}
    return ctx.result(runs, results=results, meta=meta)
