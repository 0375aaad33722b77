"""Language models: a small GPT trained by next-token prediction, with softmax and with
rules that can switch a head off, on the Bigram-Backcopy language, whose triggers are known
(:func:`backcopy`), and on English text (:func:`text_lm`)."""

from __future__ import annotations

from .. import lm
from ..cache import memoized
from ..metrics import first_share
from ..parallel import Job
from ..profiles import (
    BACKCOPY,
    BACKCOPY_MODEL,
    BACKCOPY_NO_BOS,
    BACKCOPY_RULES,
    BACKCOPY_TASK,
    TEXT,
    TEXT_LRS,
    TEXT_MODEL,
    TEXT_RULES,
    TEXT_TASK,
    TEXT_WEIGHT_DECAY,
)
from .base import Context, ExperimentResult, experiment


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.backcopy_heads(result.runs)


def _text_figure(result: ExperimentResult):
    from .. import plots

    return plots.sink_over_training(result.runs)


def train_gpts(ctx: Context, runs: list[tuple], shape: dict) -> list[tuple[lm.GPT, dict]]:
    """GPTs of ``shape`` (``d_model``, ``n_layers``, ``n_heads``), one per (task, rule, seed,
    recipe) of ``runs``, where ``recipe`` holds :func:`attnsink.lm.train_lm`'s arguments
    (``steps``, ``lr``, ``batch_size``, ...): through the shared training path
    (:meth:`Context.train_many`: the store, the results cache, the missing ones side by side
    in worker processes, one after the other on a GPU). Each comes with its training history."""
    jobs = {
        i: Job(
            lm.GPTSpec(
                task, {"vocab_size": task.vocab_size, "seq_len": task.seq_len, **shape, "attention": rule}, recipe
            ),
            (seed,),
        )
        for i, (task, rule, seed, recipe) in enumerate(runs)
    }
    trained = ctx.train_many(jobs)
    return [trained[i][0] for i in range(len(runs))]


@experiment("backcopy", BACKCOPY, figure=_figure, figure_name="heads", chapters=(7, 9))
def backcopy(ctx: Context) -> ExperimentResult:
    """A 2-layer, 4-head GPT trained on Bigram-Backcopy with each rule of
    :data:`~attnsink.profiles.BACKCOPY_RULES`, and each rule of
    :data:`~attnsink.profiles.BACKCOPY_NO_BOS` on the task without BOS.

    One record per (rule, bos, seed): the validation loss, Sink_1^eps and
    :func:`attnsink.lm.backcopy_metrics` (per head: weight on token 0 and the row's weight,
    at trigger and at ordinary queries). ``results`` maps (rule, bos) to the trained models.
    """
    models = [(rule, True) for rule in BACKCOPY_RULES] + [(rule, False) for rule in BACKCOPY_NO_BOS]
    tasks = {bos: lm.BigramBackcopy(**BACKCOPY_TASK, bos=bos) for bos in (True, False)}
    recipe = {"steps": ctx.settings.steps, "lr": ctx.settings.lr, "batch_size": ctx.settings.batch_size}
    wanted = [(tasks[bos], rule, seed, recipe) for rule, bos in models for seed in range(ctx.settings.seeds)]
    trained = iter(train_gpts(ctx, wanted, BACKCOPY_MODEL))
    metrics = memoized(lm.backcopy_metrics, cache_dir=ctx.cache_dir)  # minutes for the full profile: kept
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
                    **metrics(model, tasks[bos]),
                }
            )
    return ctx.result(runs, results=results, meta={"task": BACKCOPY_TASK, "model": BACKCOPY_MODEL})


TEXT_EVERY = 100  # steps between two measurements of the heads during training
N_ANALYSIS = 128  # validation windows for the per-head analysis: the ones measured during training


@experiment("text_lm", TEXT, figure=_text_figure, figure_name="sinks", chapters=(8, 9))
def text_lm(ctx: Context) -> ExperimentResult:
    """A character-level GPT of :data:`~attnsink.profiles.TEXT_MODEL` on English text
    (:class:`attnsink.lm.CharText`), with each rule of :data:`~attnsink.profiles.TEXT_RULES`
    at each learning rate of :data:`~attnsink.profiles.TEXT_LRS`.

    One record per (rule, lr, seed): the final validation loss and Sink_1^eps; the history
    of both and of every head's mean weight on the first token (``history``, measured every
    :data:`TEXT_EVERY` steps on fixed validation windows); per head, on the same windows at
    the end, the first-token weight and the first token's value-norm ratio (``first_mean``,
    ``value_ratio``), and its share of the rows that carry weight (``first_share``, see
    :func:`attnsink.metrics.first_share`; a ReLU row need not sum to one); the share of its
    queries that are sink rows (``sink_rows``, :func:`attnsink.lm.sink_rows`) and what its
    output there is worth (``ablate_zero``, ``ablate_mean``, ``ablate_first``: :func:`attnsink.lm.ablate_heads`,
    NaN for a head with no sink row);
    :func:`attnsink.lm.conditional_heads` on :data:`N_ANALYSIS` validation windows
    (``heads``); and whether training collapsed (``health``, :func:`attnsink.lm.training_health`). ``results`` maps (rule, lr) to the trained models.
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
    # train_lm's validation windows (the history ends here), read on the positions the models trained on
    windows = lm.val_batch(task, N_ANALYSIS)
    analysis = memoized(text_heads, cache_dir=ctx.cache_dir)  # the ablations take a while: kept
    runs, results = [], {}
    for attention, lr in points:
        results[attention, lr] = []
        for seed in range(s.seeds):
            model, history = next(trained)
            results[attention, lr].append(model)
            fields = {"attention": attention, "lr": lr, "weight_decay": TEXT_WEIGHT_DECAY, "seed": seed}
            runs.append(text_record(fields, history, analysis(model, windows)))
    meta = {"task": TEXT_TASK, "model": TEXT_MODEL, "weight_decay": TEXT_WEIGHT_DECAY, "lrs": list(TEXT_LRS)}
    return ctx.result(runs, results=results, meta=meta)


TEXT_HISTORY = ("step", "val_loss", "sink", "first_mean")  # what a text run's record keeps of its history


def text_record(fields: dict, history: dict, heads: dict) -> dict:
    """One text run's record, as :func:`text_lm` and the experiments built on it keep it: the
    run's ``fields`` (rule, rate, weight decay, seed), its final validation loss, the per-head
    record ``heads`` (:func:`text_heads`) and the :data:`TEXT_HISTORY` part of its ``history``."""
    return {
        **fields,
        "val_loss": float(history["val_loss"][-1]),
        **heads,
        "history": {k: history[k].tolist() for k in TEXT_HISTORY},
    }


def text_heads(model: lm.GPT, windows) -> dict:
    """:func:`text_lm`'s per-head record of one model on the validation ``windows``, read on
    the positions the models trained on (every token but the last)."""
    x = windows[:, :-1]
    m = lm.head_metrics(model, x)
    weights = lm.head_outputs(model, x)["weights"]
    rows = lm.sink_rows(weights)
    ablation = lm.ablate_heads(model, windows, rows)
    return {
        "sink": m["sink"],
        "first_mean": m["first_mean"].tolist(),
        "value_ratio": m["value_ratio"].tolist(),
        "first_share": [first_share(w) for w in weights],
        "sink_rows": rows.float().mean((2, 3)).tolist(),
        "ablate_zero": ablation["zero"].tolist(),
        "ablate_mean": ablation["mean"].tolist(),
        "ablate_first": ablation["first"].tolist(),
        "heads": lm.conditional_heads(model, x),
        "health": lm.training_health(model, x),
    }
