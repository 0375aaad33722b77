"""Chapter 2: softmax heads whose weight on BOS is capped, so they cannot sink."""

from __future__ import annotations

from ..cache import memoized
from ..metrics import evaluate, sink_bound_terms
from ..profiles import CAPPED, CAPS, N_TEST
from ..task import TriggerTask
from .base import Context, ExperimentResult, experiment


def _figure(result: ExperimentResult):
    from .. import plots

    return plots.capped_tradeoff(result.runs)


@experiment("capped_bos", CAPPED, figure=_figure, figure_name="capped")
def capped_bos(ctx: Context) -> ExperimentResult:
    """Train softmax heads whose weight on BOS is capped (``softmax_cap{c}``) for the caps of
    :data:`~attnsink.profiles.CAPS`.

    One record per (cap, seed) with the test metrics and, from chapter 2's inequality, the
    mean over non-trigger rows of the squared lower bound
    ``max(0, (1 - a_i0) D_i - |y_hat_0|)^2`` on each row's squared error. Used in chapter 2
    and by ``python -m attnsink reproduce capped_bos``.
    """
    task = TriggerTask()
    caps = CAPS[ctx.profile]
    runs = []
    bound_terms = memoized(sink_bound_terms, cache_dir=ctx.cache_dir)  # certified hull distances: slow, kept
    results = ctx.train_many({cap: ctx.job(task, f"softmax_cap{cap}") for cap in caps})
    for cap in caps:
        for r in results[cap]:
            terms = bound_terms(r.model, task)
            bound = ((terms["mass_off_bos"] * terms["d_lower"] - terms["err_bos"]).clamp(min=0) ** 2).mean().item()
            runs.append(
                {
                    "cap": cap,
                    "seed": r.seed,
                    "steps": r.steps,
                    "stopped_early": r.stopped_early,
                    **evaluate(r.model, task, n=N_TEST).summary(),
                    "sq_err_nontrigger_row": (terms["err_row"] ** 2).mean().item(),
                    "sq_bound_nontrigger_row": bound,
                    "mean_d": terms["d_lower"].mean().item(),  # the distance D_i, averaged over rows
                }
            )
    return ctx.result(runs, task=task, results=results, meta={"caps": list(caps)})
