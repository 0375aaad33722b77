"""Chapter 9's claims. For now those of its section "The language models' sinks": what the
sinks of every language model chapters 7 and 8 store write, by the chapter's ablation test
(:func:`attnsink.metrics.what_it_writes`), on Bigram-Backcopy
(:func:`attnsink.experiments.backcopy`) and on every text run (``text_lm``, ``text_scale``,
``text_decay``, ``text_control``, ``text_context``), each model once, as chapter 8 reads them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..analysis import backcopy_frame
from ..lm.metrics import SINK_ROW, SINK_ROW_UNIFORM
from ..metrics import SINK_EPS, WRITE_TOL, what_it_writes
from .base import Chapter

CHAPTER = Chapter("ch9")
BOTH = ("quick", "full")

TEXT_EXPERIMENTS = ("text_lm", "text_scale", "text_decay", "text_control", "text_context")
"""The text experiments chapter 8 stores, in the order :func:`measures` takes them."""

STRONG = 0.9
"""A *strong* sink puts more than this on the first token (chapter 8's threshold too)."""

SINK_SETTINGS = ("English, lr 0.01, weight decay 0.5", "English, lr 0.01, weight decay 1", "Python, windows of 256")
"""The settings whose trained runs end with a sink (the text says so)."""
INFORMATIVE_SETTING = "English, lr 0.01, weight decay 0.5"
"""Where the one sink that writes something the model reads formed (the text says so)."""
NEAR_SETTING = "Python, windows of 256"
"""Where the two sinks near the tolerance formed (the text says so)."""
NEAR = 0.5
"""A sink whose larger ablation cost is between this and 1 / this times the tolerance sits
*near* it: the test's label for it rests on a margin its own noise could cross."""

HEAD_FIELDS = ("first_mean", "value_ratio", "sink_rows", "ablate_zero", "ablate_mean")
"""The per-head fields of a text record that the section reads."""


def setting(experiment: str, r: dict) -> str:
    """A short name for the setting a text run trained in, as chapter 8 names it."""
    if experiment == "text_scale":
        return f"Python, {r['train_chars'] / 1e6:.2g}M characters"
    if experiment == "text_context":
        return f"Python, windows of {r['seq_len']}"
    corpus = "Python" if experiment == "text_control" else "English"
    return f"{corpus}, lr {r['lr']:g}, weight decay {r['weight_decay']:g}"


def text_runs(tx, sc, dc, ct, cx) -> tuple[list[tuple[str, dict]], list[tuple[str, dict]]]:
    """Every stored text run once, as ``(experiment, record)``, and the records left out as
    another experiment's model: ``text_decay``'s runs at a rate and weight decay of
    ``text_lm``'s are those runs, and ``text_context``'s runs at its shortest window are
    ``text_scale``'s on all the text (the store and the cache share them)."""
    kept = [("text_lm", r) for r in tx.runs] + [("text_scale", r) for r in sc.runs]
    lm_keys = {(r["attention"], r["lr"], r["weight_decay"], r["seed"]) for r in tx.runs}
    shared = [("text_decay", r) for r in dc.runs if (r["attention"], r["lr"], r["weight_decay"], r["seed"]) in lm_keys]
    kept += [
        ("text_decay", r) for r in dc.runs if (r["attention"], r["lr"], r["weight_decay"], r["seed"]) not in lm_keys
    ]
    kept += [("text_control", r) for r in ct.runs]
    short = min(r["seq_len"] for r in cx.runs)
    kept += [("text_context", r) for r in cx.runs if r["seq_len"] != short]
    shared += [("text_context", r) for r in cx.runs if r["seq_len"] == short]
    return kept, shared


def with_health(result, health: list[dict] | None):
    """``result`` with each run's :func:`attnsink.lm.training_health` from ``health`` (one per
    run, in order) where its record keeps none (``text_context``'s do not)."""
    if health is None:
        return result
    if len(health) != len(result.runs):
        raise ValueError(f"health must have one entry per run ({len(result.runs)}), got {len(health)}")
    return SimpleNamespace(runs=[r if "health" in r else {**r, "health": h} for r, h in zip(result.runs, health)])


def text_heads(runs: list[tuple[str, dict]]) -> pd.DataFrame:
    """One row per (run, layer, head) of ``runs`` (:func:`text_runs`): the experiment,
    setting, corpus, rule, seed, whether the run's training health is known (``measured``)
    and whether it ``collapsed`` (:func:`attnsink.lm.training_health`), the layer and head,
    the fields of :data:`HEAD_FIELDS`, ``sink`` (mean weight on token 0 above
    :data:`~attnsink.metrics.SINK_EPS`) and what the head writes at its sink rows."""
    rows = []
    for experiment, r in runs:
        fields = {k: np.asarray(r[k], dtype=float) for k in HEAD_FIELDS}
        name = setting(experiment, r)
        run = {
            "experiment": experiment,
            "setting": name,
            "corpus": "English text" if name.startswith("English") else "Python source",
            "attention": r["attention"],
            "seed": r["seed"],
            "measured": "health" in r,
            "collapsed": bool(r.get("health", {}).get("collapsed", False)),
        }
        for (layer, head), _ in np.ndenumerate(fields["first_mean"]):
            rows.append({**run, "layer": layer, "head": head, **{k: float(v[layer, head]) for k, v in fields.items()}})
    heads = pd.DataFrame(rows)
    heads["sink"] = heads["first_mean"] > SINK_EPS
    heads["writes"] = what_it_writes(heads["ablate_zero"], heads["ablate_mean"])
    return heads


def backcopy_heads(bb) -> pd.DataFrame:
    """Chapter 7's Bigram-Backcopy heads (:func:`attnsink.analysis.backcopy_frame`), with the
    weight on token 0 at ordinary queries (``first_mean``: where the test reads them),
    ``sink`` and ``writes``."""
    df = backcopy_frame(bb.runs)
    df["first_mean"] = df["first_ordinary"]
    df["sink"] = df["first_mean"] > SINK_EPS
    df["writes"] = what_it_writes(df["ablate_zero"], df["ablate_mean"])
    return df


def _kinds(writes: pd.Series) -> str:
    return ", ".join(f"{k} ×{n}" for k, n in writes.value_counts().items()) or "–"


def overview(text: pd.DataFrame, bb: pd.DataFrame) -> pd.DataFrame:
    """Table 9.5: per group of runs, the models, how many collapsed, the heads, the sinks,
    what the test reads for the sinks and the highest head's weight on token 0. Softmax runs
    by setting; each corpus's ReLU runs, and Bigram-Backcopy's other rules, in one row."""
    rows = []

    def row(corpus, group, heads, keys):
        runs = heads.drop_duplicates(keys)
        collapsed = int(runs["collapsed"].sum()) if "collapsed" in runs else "–"  # no health record
        sinks = heads[heads["sink"]]
        rows.append(
            {
                "corpus": corpus,
                "runs": group,
                "models": len(runs),
                "collapsed": collapsed,
                "heads": len(heads),
                "sinks": len(sinks),
                "what the sinks write": _kinds(sinks["writes"]),
                "highest weight on token 0": float(heads["first_mean"].max()),
            }
        )

    soft = bb["attention"] == "softmax"
    row("Bigram-Backcopy", "softmax", bb[soft & bb["bos"]], ["seed"])
    row("Bigram-Backcopy", "softmax, no BOS", bb[soft & ~bb["bos"]], ["seed"])
    row("Bigram-Backcopy", "four other rules, with and without BOS", bb[~soft], ["attention", "bos", "seed"])
    for corpus in ("English text", "Python source"):
        part = text[text["corpus"] == corpus]
        for name, heads in part[part["attention"] == "softmax"].groupby("setting", sort=False):
            row(corpus, f"softmax, {name.split(', ', 1)[1]}", heads, ["seed"])
        relu = part[part["attention"] == "relu"]
        if len(relu):
            row(corpus, "ReLU, every setting", relu, ["setting", "seed"])
    return pd.DataFrame(rows).set_index(["corpus", "runs"])


def _at_most(frame: pd.DataFrame, column: str) -> float:
    return float(frame[column].max()) if len(frame) else float("nan")


def _what_sinks_write(sinks: pd.DataFrame) -> dict:
    """The counts and numbers of the text sinks of the runs that trained. Besides the test's
    labels: the sinks *near* the tolerance (:data:`NEAR`), and the *quiet* ones, whose
    ablations both move the loss by at most :data:`NEAR` times it."""
    kinds = sinks["writes"]
    informative, constant = sinks[kinds == "informative"], sinks[kinds == "constant"]
    strong = sinks[sinks["first_mean"] > STRONG]
    cost = sinks[["ablate_zero", "ablate_mean"]].abs().max(axis=1)
    near = sinks[(cost > NEAR * WRITE_TOL) & (cost < WRITE_TOL / NEAR)].sort_values("seed")
    quiet = sinks[cost <= NEAR * WRITE_TOL]
    top = informative.iloc[0] if len(informative) else None
    nan = float("nan")
    out = {
        "n_text_sinks": len(sinks),
        "n_sink_runs": int(sinks.drop_duplicates(["setting", "seed"]).shape[0]),
        "n_english_sinks": int((sinks["corpus"] == "English text").sum()),
        "n_python_sinks": int((sinks["corpus"] == "Python source").sum()),
        "n_relu_sinks": int((sinks["attention"] != "softmax").sum()),
        "sink_settings": "; ".join(sorted(set(sinks["setting"]))),
        "n_strong_sinks": len(strong),
        "strong_all_nothing": bool(len(strong)) and bool((strong["writes"] == "nothing").all()),
        "strong_value_max": _at_most(strong, "value_ratio"),
        "n_sinks_nothing": int((kinds == "nothing").sum()),
        "n_sinks_constant": len(constant),
        "n_sinks_informative": len(informative),
        "n_sinks_harmful": int((kinds == "harmful").sum()),
        "n_sinks_unmeasured": int((kinds == "unmeasured").sum()),
        "n_sinks_quiet": len(quiet),
        "quiet_cost_max": float(cost[quiet.index].max()) if len(quiet) else nan,
        "quiet_strong": int((quiet["first_mean"] > STRONG).sum()),
        "n_sinks_near": len(near),
        "near_setting": "; ".join(sorted(set(near["setting"]))) or "–",
        "near_mean_max": _at_most(near, "ablate_mean"),
        "n_writers": len(informative) + len(near),
        "writers_weight_max": _at_most(pd.concat([informative, near]), "first_mean"),
        "informative_setting": "–" if top is None else top["setting"],
        "informative_seed": -1 if top is None else int(top["seed"]),
        "informative_head": "–" if top is None else f"L{top['layer']}H{top['head']}",
        "informative_weight": nan if top is None else float(top["first_mean"]),
        "informative_mean": nan if top is None else float(top["ablate_mean"]),
        "informative_zero": nan if top is None else float(top["ablate_zero"]),
        "informative_rows": nan if top is None else float(top["sink_rows"]),
        "constant_zero": _at_most(constant, "ablate_zero"),
        "constant_mean": _at_most(constant, "ablate_mean"),
        "constant_setting": "; ".join(sorted(set(constant["setting"]))) or "–",
    }
    for i, (_, h) in enumerate(near.head(2).iterrows()):  # the text names two: near_a_*, near_b_*
        key = "near_" + "ab"[i]
        out |= {
            f"{key}_head": f"L{h['layer']}H{h['head']}",
            f"{key}_seed": int(h["seed"]),
            f"{key}_zero": float(h["ablate_zero"]),
            f"{key}_mean": float(h["ablate_mean"]),
        }
    return out


def _collapse(runs: pd.DataFrame, heads: pd.DataFrame) -> dict:
    """The text runs whose attention collapsed, and their heads above ε (``heads``)."""
    soft0 = runs[(runs["attention"] == "softmax") & runs["setting"].str.endswith("weight decay 0")]
    return {
        "n_collapsed_runs": int(runs["collapsed"].sum()),
        "n_softmax_wd0": len(soft0),
        "n_collapsed_softmax_wd0": int(soft0["collapsed"].sum()),
        "n_collapsed_sinks": len(heads),
        "n_collapsed_sinks_constant": int((heads["writes"] == "constant").sum()),
        "collapsed_zero_max": _at_most(heads, "ablate_zero"),
    }


def _backcopy(bb, heads: pd.DataFrame) -> dict:
    """Bigram-Backcopy's sinks at ordinary queries, and how much any head moves the loss there."""
    sinks = heads[heads["sink"]]
    layer_zero = [np.abs(np.asarray(r["layer_zero_ordinary"], dtype=float)).max() for r in bb.runs]
    return {
        "n_bb_heads": len(heads),
        "n_bb_sinks": len(sinks),
        "n_bb_sinks_nothing": int((sinks["writes"] == "nothing").sum()),
        "bb_sinks_softmax_bos": bool(len(sinks)) and bool(((sinks["attention"] == "softmax") & sinks["bos"]).all()),
        "bb_move_max": float(heads[["ablate_zero", "ablate_mean"]].abs().max().max()),
        "bb_layer_max": float(max(layer_zero)),
    }


@CHAPTER.measures
def measures(bb, tx, sc, dc, ct, cx, *, health: list[dict] | None = None) -> dict:
    """The numbers the section "The language models' sinks" quotes, from chapter 7's
    Bigram-Backcopy runs ``bb`` and chapter 8's five text experiments; ``health`` holds
    ``text_context``'s training health, one per run (:func:`with_health`)."""
    kept, shared = text_runs(tx, sc, dc, ct, with_health(cx, health))
    text = text_heads(kept)
    runs = text.drop_duplicates(["setting", "attention", "seed"])
    twins = {(setting(e, r).split(",")[0], r["attention"], r["seed"], r["val_loss"]) for e, r in kept}
    trained, broken = text[~text["collapsed"]], text[text["collapsed"]]
    bbh = backcopy_heads(bb)
    return {
        "lm_tol": f"{WRITE_TOL:g}",  # as the text writes a setting; the claims read the numbers
        "lm_eps": f"{SINK_EPS:g}",
        "lm_sink_row": f"{SINK_ROW:g}",
        "lm_sink_row_uniform": f"{SINK_ROW_UNIFORM:g}",
        "lm_strong": f"{STRONG:g}",
        "_tol": WRITE_TOL,
        "_eps": SINK_EPS,
        "n_stored_runs": len(kept) + len(shared),
        "n_text_runs": len(runs),
        "n_shared_runs": len(shared),
        "n_shared_verified": sum(
            (setting(e, r).split(",")[0], r["attention"], r["seed"], r["val_loss"]) in twins for e, r in shared
        ),
        "n_experiments_read": int(runs["experiment"].nunique()),
        "n_text_heads": len(text),
        "n_health_unmeasured": int((~runs["measured"]).sum()),
        "n_trained_runs": int((~runs["collapsed"]).sum()),
        "n_trained_softmax_runs": int((~runs["collapsed"] & (runs["attention"] == "softmax")).sum()),
        **_what_sinks_write(trained[trained["sink"]]),
        **_collapse(runs, broken[broken["sink"]]),
        "relu_weight_max": _at_most(text[text["attention"] == "relu"], "first_mean"),
        **_backcopy(bb, bbh),
        "_text_heads": text,
        "_backcopy_heads": bbh,
        "_table": overview(text, bbh),
    }


# ---- the section's sentences ----


@CHAPTER.claim(
    "reads-every-text-run",
    "Table 9.5 reads every text run chapter 8 stores, each model once, and knows whether each trained.",
    profiles=BOTH,
)
def _(m):
    every = m["n_experiments_read"] == len(TEXT_EXPERIMENTS)
    once = m["n_text_runs"] == m["n_stored_runs"] - m["n_shared_runs"] and m["n_shared_verified"] == m["n_shared_runs"]
    return every and once and m["n_health_unmeasured"] == 0, (
        f"{m['n_experiments_read']} of {len(TEXT_EXPERIMENTS)} experiments; {m['n_text_runs']} models "
        f"({m['n_shared_verified']} of {m['n_shared_runs']} shared records matched); "
        f"health unknown in {m['n_health_unmeasured']}"
    )


@CHAPTER.claim("sinks-rare", "On text, sinks formed in few of the softmax runs that trained: under a third.")
def _(m):
    holds = 0 < m["n_sink_runs"] and 3 * m["n_sink_runs"] < m["n_trained_softmax_runs"]
    return holds, f"{m['n_sink_runs']} of {m['n_trained_softmax_runs']} runs"


@CHAPTER.claim(
    "sinks-where",
    "In the runs that trained, the sinks are softmax heads on English text at weight decay 0.5 and 1, "
    "and on Python source in windows of 256; nowhere else.",
)
def _(m):
    holds = m["sink_settings"] == "; ".join(SINK_SETTINGS) and m["n_relu_sinks"] == 0
    return holds, f"{m['n_text_sinks']} sinks in {m['n_sink_runs']} runs: {m['sink_settings'] or 'none'}"


@CHAPTER.claim(
    "most-write-nothing",
    "Most of these sinks write nothing the loss notices, every strong one (above 0.9) among them; "
    "none is harmful or untested.",
)
def _(m):
    holds = (
        2 * m["n_sinks_nothing"] > m["n_text_sinks"]
        and m["strong_all_nothing"]
        and m["n_sinks_harmful"] == 0
        and m["n_sinks_unmeasured"] == 0
    )
    return holds, (
        f"nothing {m['n_sinks_nothing']} of {m['n_text_sinks']} (strong: {m['n_strong_sinks']}, all nothing: "
        f"{m['strong_all_nothing']}); harmful {m['n_sinks_harmful']}, untested {m['n_sinks_unmeasured']}"
    )


@CHAPTER.claim(
    "one-informative",
    "One sink, at weight decay 0.5 on English text, writes something the model reads: replacing its "
    "output by its mean costs more than the tolerance.",
)
def _(m):
    where = m["informative_setting"] == INFORMATIVE_SETTING
    holds = m["n_sinks_informative"] == 1 and m["informative_mean"] > m["_tol"] and where
    return holds, (
        f"{m['n_sinks_informative']} informative; {m['informative_setting']}, seed {m['informative_seed']}, "
        f"{m['informative_head']}: mean costs {m['informative_mean']:.3g} nats"
    )


@CHAPTER.claim(
    "two-near-tolerance",
    "Two sinks, both in windows of 256, sit near the tolerance: each moves the loss by between half "
    "and twice the tolerance, and replacing its output by its mean costs less than the tolerance.",
)
def _(m):
    holds = m["n_sinks_near"] == 2 and m["near_setting"] == NEAR_SETTING and m["near_mean_max"] < m["_tol"]
    return holds, (
        f"{m['n_sinks_near']} near ({m['near_setting']}); the mean in place costs at most {m['near_mean_max']:.2g} nats"
    )


@CHAPTER.claim(
    "rest-write-nothing",
    "Every other sink but the informative one moves the loss by at most half the tolerance, every "
    "strong sink among them.",
)
def _(m):
    every = m["n_sinks_quiet"] + m["n_sinks_near"] + m["n_sinks_informative"] == m["n_text_sinks"]
    holds = every and m["quiet_cost_max"] <= m["_tol"] / 2 and m["quiet_strong"] == m["n_strong_sinks"]
    return holds, f"{m['n_sinks_quiet']} of {m['n_text_sinks']}; largest move {m['quiet_cost_max']:.2g} nats"


@CHAPTER.claim(
    "strong-sinks-small-value",
    "Like the trigger task's sinks, the strong text sinks put nearly all their weight on a token whose "
    "value is small: under a tenth of a typical token's.",
)
def _(m):
    holds = m["n_strong_sinks"] > 0 and m["strong_value_max"] < 0.1
    return holds, f"{m['n_strong_sinks']} strong sinks; value ratio at most {m['strong_value_max']:.2g}"


@CHAPTER.claim(
    "writers-are-weak",
    "The three that write something, or may, are weak sinks, under half their weight on token 0.",
)
def _(m):
    return m["n_writers"] == 3 and m["writers_weight_max"] < 0.5, (
        f"{m['n_writers']} heads; highest {m['writers_weight_max']:.3f}"
    )


@CHAPTER.claim(
    "collapsed-runs",
    "Every softmax run at weight decay 0 collapsed onto one key, and no other text run did.",
)
def _(m):
    every = m["n_softmax_wd0"] > 0 and m["n_collapsed_softmax_wd0"] == m["n_softmax_wd0"]
    return every and m["n_collapsed_runs"] == m["n_collapsed_softmax_wd0"], (
        f"{m['n_collapsed_softmax_wd0']} of {m['n_softmax_wd0']} at weight decay 0; {m['n_collapsed_runs']} in all"
    )


@CHAPTER.claim(
    "collapsed-heads-write-constants",
    "In the collapsed runs, most heads above ε write a constant the model needs; zeroing one costs "
    "up to a tenth of a nat per character or more.",
)
def _(m):
    holds = 2 * m["n_collapsed_sinks_constant"] > m["n_collapsed_sinks"] > 0 and m["collapsed_zero_max"] >= 0.1
    return holds, (
        f"{m['n_collapsed_sinks_constant']} of {m['n_collapsed_sinks']} constant; zeroing costs up to "
        f"{m['collapsed_zero_max']:.2f} nats"
    )


@CHAPTER.claim(
    "backcopy-sinks-nothing",
    "On Bigram-Backcopy the sinks are softmax heads trained with BOS, and every one reads nothing at ordinary queries.",
)
def _(m):
    holds = m["n_bb_sinks"] > 0 and m["bb_sinks_softmax_bos"] and m["n_bb_sinks_nothing"] == m["n_bb_sinks"]
    return holds, f"{m['n_bb_sinks_nothing']} of {m['n_bb_sinks']} sinks read nothing"


@CHAPTER.claim(
    "backcopy-test-weak",
    "There no head, sink or not, moves the loss at ordinary queries by more than the tolerance; "
    "nor does zeroing a whole layer.",
    profiles=BOTH,
)
def _(m):
    holds = m["bb_move_max"] <= m["_tol"] and m["bb_layer_max"] <= m["_tol"]
    return holds, (
        f"largest move {m['bb_move_max']:.2g} nats, a whole layer {m['bb_layer_max']:.2g} (tolerance {m['_tol']:g})"
    )


@CHAPTER.claim("relu-far-below", "No ReLU head on text comes near ε.", profiles=BOTH)
def _(m):
    return m["relu_weight_max"] < m["_eps"] / 2, f"highest {m['relu_weight_max']:.2g}"
