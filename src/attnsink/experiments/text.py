"""What the text experiments share: training GPTs through the store and the cache
(:func:`train_gpts`), the per-head analysis of a trained text GPT (:func:`text_heads`), a text
run's record (:func:`text_record`) and the recipe with a warmup and a cosine decay
(:func:`scale_recipe`)."""

from __future__ import annotations

from .. import lm
from ..metrics import first_share
from ..parallel import Job
from ..profiles import SCALE_WARMUP
from .base import Context

TEXT_EVERY = 100  # steps between two measurements of the heads during training
N_ANALYSIS = 128  # validation windows for the per-head analysis: the ones measured during training


def train_gpts(ctx: Context, runs: list[tuple], shape: dict) -> list[tuple[lm.GPT, dict]]:
    """GPTs of ``shape`` (``d_model``, ``n_layers``, ``n_heads``), one per (task, rule, seed,
    recipe) of ``runs``, where ``recipe`` is an :class:`~attnsink.lm.LMRecipe`: through the shared training path
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


def scale_recipe(settings, weight_decay: float) -> lm.LMRecipe:
    """The :class:`~attnsink.lm.LMRecipe` of :func:`~attnsink.experiments.text_scale`'s recipe: the
    ``settings``' steps, rate and batch, AdamW's ``weight_decay`` on the matrices, a linear
    warmup over :data:`~attnsink.profiles.SCALE_WARMUP` of the steps and a cosine decay."""
    return lm.LMRecipe(
        steps=settings.steps,
        lr=settings.lr,
        batch_size=settings.batch_size,
        weight_decay=weight_decay,
        every=TEXT_EVERY,
        warmup=max(1, round(SCALE_WARMUP * settings.steps)),
        schedule="cosine",
    )


TEXT_HISTORY = ("step", "val_loss", "sink", "first_mean")  # what a text run's record keeps of its history


def text_record(fields: dict, history: dict, heads: dict) -> dict:
    """One text run's record, as :func:`~attnsink.experiments.text_lm` and the experiments built on it keep it: the
    run's ``fields`` (rule, rate, weight decay, seed), its final validation loss, the per-head
    record ``heads`` (:func:`text_heads`) and the :data:`TEXT_HISTORY` part of its ``history``."""
    return {
        **fields,
        "val_loss": float(history["val_loss"][-1]),
        **heads,
        "history": {k: history[k].tolist() for k in TEXT_HISTORY},
    }


def text_heads(model: lm.GPT, windows) -> dict:
    """:func:`~attnsink.experiments.text_lm`'s per-head record of one model on the validation ``windows``, read on
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
