"""Sentences the chapters build from their numbers, written once and tested here.

A chapter's text quotes its own measurements ("3 of 16 heads over 1 run are sinks"), so
some of its sentences are computed, and each must read right for one, for several and for
none. The first part of this module holds the plural-aware phrases every such sentence is
made of; the second the sentences of chapter 8 (a character-level GPT on English text),
which take the chapter's tables and its sink threshold as arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

# ---- phrases ----


SUPERSCRIPTS = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def number(x, precision: int = 3) -> str:
    """A number as a reader writes it: ``precision`` decimals from 10^(1 - precision) up to
    10^5 (``number(0.0123)`` is '0.012'), otherwise two significant digits times a power
    of ten in superscript ('3.2 × 10⁻⁵', '1.5 × 10⁶'); '0' for zero and '–' for a missing
    value (None or NaN). Used by :func:`attnsink.book.table` and for numbers glued into the text."""
    import math

    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "\u2013"
    x = float(x)
    if x == 0:
        return "0"
    if math.isinf(x):
        return "\u221e" if x > 0 else "\u2212\u221e"
    if 10 ** (1 - precision) <= abs(x) < 1e5:
        return f"{x:.{precision}f}".replace("-", "\u2212")
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa.replace('-', chr(0x2212))} \u00d7 10{str(int(exponent)).translate(SUPERSCRIPTS)}"


def readable(x, digits: int = 2) -> str:
    """A measured number as the text quotes it: an integer with thousands separated
    ('12,000'); a float to ``digits`` significant figures, more where rounding would carry
    it up to the next power of ten ('0.998', not '1.0'; '0.12'; '4.7'; '1,200'); below 10⁻³ or
    from 10⁶ on as a mantissa times a power of ten ('3.2 × 10⁻⁵'). A number that carries more
    precision than this is not a number a reader needs. Used by :func:`attnsink.claims.check_claims`."""
    import math
    import numbers

    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"x must be a real number, got {x!r}")
    check_digits = isinstance(digits, int) and not isinstance(digits, bool) and digits >= 1
    if not check_digits:
        raise ValueError(f"digits must be an integer >= 1, got {digits!r}")
    if isinstance(x, numbers.Integral):
        return f"{int(x):,}".replace("-", "\u2212")
    x = float(x)
    if math.isnan(x):
        return "\u2013"
    if math.isinf(x):
        return "\u221e" if x > 0 else "\u2212\u221e"
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    sig = digits
    while sig < 6 and round(abs(x), sig - 1 - exponent) >= 10 ** (exponent + 1) and abs(x) < 10 ** (exponent + 1):
        sig += 1  # 0.9987 -> '0.999', not '1.0': keep the digits that say it is below 1
    if abs(x) < 1e-3 or abs(x) >= 1e6:
        mantissa, power = f"{x:.{sig - 1}e}".split("e")
        return f"{mantissa.replace('-', chr(0x2212))} \u00d7 10{str(int(power)).translate(SUPERSCRIPTS)}"
    places = sig - 1 - exponent  # negative for large numbers: 1234.5 -> 1,200
    return f"{round(x, places):,.{max(0, places)}f}".replace("-", "\u2212")


def span(values, digits: int = 2) -> str:
    """The smallest and largest of ``values`` as a reader writes a range: '0.12 to 0.34'; one
    number when both round alike ('0.12'); a value that rounds to zero but is not zero as
    'under 0.005' (for two decimals), so that a range never reads '0.00 to 0.00'."""
    v = np.asarray(values, dtype=float)
    if not v.size:
        raise ValueError("span needs at least one value")
    floor = 0.5 * 10.0**-digits

    def fmt(x: float) -> str:
        if x != 0 and abs(x) < floor:
            return f"under {floor:g}" if x > 0 else f"between \u2212{floor:g} and 0"
        return f"{x:.{digits}f}".replace("-", "\u2212")

    lo, hi = fmt(float(v.min())), fmt(float(v.max()))
    return lo if lo == hi else f"{lo} to {hi}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` agreeing with it: ``plural(1, "run")`` is '1 run', ``plural(0,
    "run")`` '0 runs', ``plural(2, "head", "heads")`` '2 heads' (``many`` for an irregular
    plural; the default adds an s)."""
    return f"{n} {agree(n, word, word + 's' if many is None else many)}"


def agree(n: int, one: str, many: str) -> str:
    """``one`` when ``n`` is 1, else ``many``: ``agree(n, "is a sink", "are sinks")``."""
    return one if n == 1 else many


def count_phrase(n: int, word: str) -> str:
    """'one seed' for 1, else '3 seeds' (and '0 seeds'): a count written as a reader would."""
    return f"one {word}" if n == 1 else f"{n} {word}s"


def and_list(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'; ``ValueError`` for no items."""
    items = [str(item) for item in items]
    if not items:
        raise ValueError("and_list needs at least one item")
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def millions(n: float) -> str:
    """A count as a reader writes it: '20.2 million' from a million up, else with thousands
    separators ('420,000')."""
    return f"{n / 1e6:.1f} million" if abs(n) >= 1e6 else f"{round(n):,}"


def values_phrase(word: str, values: Iterable[float]) -> str:
    """'cap 0.9' for one value, 'caps 0.9 and 0.97' or 'caps 0, 0.25 and 0.5' for several
    (each value written with ``:g``)."""
    names = [f"{v:g}" for v in values]
    return f"{agree(len(names), word, word + 's')} {and_list(names)}"


def value_span(values: Sequence[float], what: str = "") -> str:
    """'weight 0.41' for one value, 'weights 0.39 to 0.57' for several (smallest to largest,
    two decimals); with no ``what``, '0.41' and '0.39 to 0.57'."""
    values = np.asarray(values, dtype=float)
    if not values.size:
        raise ValueError("value_span needs at least one value")
    one = values.size == 1
    label = (what + ("" if one else "s") + " ") if what else ""
    lo, hi = values.min(), values.max()
    return f"{label}{lo:.2f}" if one else f"{label}{lo:.2f} to {hi:.2f}"


def difference_phrase(diff: float, unit: str) -> str:
    """How a value compares with another, given ``diff`` = value - other, to be followed by
    the other: '0.012 bits per character lower than', 'the same to three decimals as', or
    'not comparable (a model's loss is not finite)'."""
    if not np.isfinite(diff):
        return "not comparable (a model's loss is not finite)"
    if round(diff, 3) == 0:
        return "the same to three decimals as"
    return f"{abs(diff):.3f} {unit} {'lower' if diff < 0 else 'higher'} than"


def paired_sentence(diffs, ses, unit: str = "bits per character") -> str:
    """Paired differences (one model minus another from the same seed) and their standard
    errors, as a clause: 'seed by seed the difference is +0.015 to +0.045 bits per character,
    each more than two standard errors above zero', '..., 2 of 3 more than two standard errors
    above zero', or, for one seed, 'from the one seed it is +0.021 ± 0.016 (two standard
    errors)'."""
    d, se = np.asarray(diffs, dtype=float), np.asarray(ses, dtype=float)
    if d.shape != se.shape or d.ndim != 1 or not d.size:
        raise ValueError(f"diffs and ses must be two sequences of one length, got {d.shape} and {se.shape}")
    if d.size == 1:
        return f"from the one seed it is {d[0]:+.3f} ± {2 * se[0]:.3f} {unit} (two standard errors)"
    above, below = int((d > 2 * se).sum()), int((d < -2 * se).sum())
    head = f"seed by seed the difference is {d.min():+.3f} to {d.max():+.3f} {unit}"
    parts = []
    for n, side in ((above, "above"), (below, "below")):
        if n == d.size:
            parts.append(f"each more than two standard errors {side} zero")
        elif n:
            parts.append(f"{n} of {d.size} more than two standard errors {side} zero")
    within = d.size - above - below
    if within == d.size:
        parts.append("each within two standard errors of zero")
    elif within:
        parts.append(f"{within} of {d.size} within two standard errors of zero")
    return head + ", " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1])


def settings_phrase(settings) -> str:
    """'one seed of 2,000 steps per model', '3 seeds of 20,000 steps per model', from a
    :class:`~attnsink.profiles.Settings` (its ``seeds`` and ``steps``)."""
    return f"{count_phrase(settings.seeds, 'seed')} of {settings.steps:,} steps per model"


# ---- chapter 8: when a head crosses the sink threshold during training ----


def first_crossing(history: dict, eps: float) -> tuple[int, int] | None:
    """The first measured step at which some head's mean weight on the first token exceeds
    ``eps``, and that head's layer; None when no head ever does. ``history`` holds
    ``step`` (one per measurement) and ``first_mean`` (measurements x layers x heads)."""
    first = np.asarray(history["first_mean"])
    hit = np.nonzero(first.max(axis=(1, 2)) > eps)[0]
    if not len(hit):
        return None
    layer = int(np.unravel_index(first[hit[0]].argmax(), first[hit[0]].shape)[0])
    return int(history["step"][hit[0]]), layer


def last_crossing(history: dict, eps: float) -> int | None:
    """The last measured step at which some head's mean weight on the first token exceeds
    ``eps`` (None: never); ``history`` as for :func:`first_crossing`."""
    first = np.asarray(history["first_mean"])
    hit = np.nonzero(first.max(axis=(1, 2)) > eps)[0]
    return int(history["step"][hit[-1]]) if len(hit) else None


# ---- chapter 8's sentences ----
# ``heads``: one row per head of every run (attention, lr, seed, layer, head, first_mean,
# first_share, value_ratio), its weights measured at the end of training; ``runs``: the
# experiment's records (attention, lr, history); ``cond``: one row per head with the columns
# of attnsink.lm.conditional_heads.


LATE = 0.25
"""The share of a run's measurements, at its end, over which :func:`late_first` averages: one
checkpoint's weight on the first token moves by several hundredths between measurements."""


def late_first(history: dict, eps: float, share: float = LATE) -> tuple[np.ndarray, np.ndarray]:
    """Per head (layers, heads), over the last ``share`` of the measurements of ``history``
    (``first_mean``: (measurements, layers, heads)): the mean weight on the first token, and
    the share of those measurements at which it is above ``eps``."""
    first = np.asarray(history["first_mean"])
    k = max(1, int(round(share * len(first))))
    late = first[-k:]
    return late.mean(axis=0), (late > eps).mean(axis=0)


def gu_measure(weight: float, queries: int) -> float:
    """A head's mean weight on the first token counted as Gu et al. (2025) count it, with the
    first token's own row (weight 1) among the ``queries + 1`` rows, from the book's mean over
    the ``queries`` rows after it (:func:`attnsink.metrics.first_mean`)."""
    return (1.0 + queries * weight) / (queries + 1)


def _late_clause(runs: list[dict], eps: float) -> str:
    """Where the head with the highest late mean (:func:`late_first`) of ``runs`` sits."""
    best, share = -1.0, 0.0
    for r in runs:
        late, above = late_first(r["history"], eps)
        i = np.unravel_index(late.argmax(), late.shape)
        if late[i] > best:
            best, share = float(late[i]), float(above[i])
    text = (
        f"over the last {LATE:.0%} of the measurements the highest head averages {best:.3f}, above {eps:g} at "
        f"{share:.0%} of them"
    )
    if best > eps + 0.02 and share >= 0.75:
        text += ": it stays above the threshold to the end"
    elif share >= 0.25 or best >= eps - 0.01:
        text += ": the highest head late in training sits on the threshold"
    elif any(last_crossing(r["history"], eps) is not None for r in runs):
        text += ": the first-token heads that rose above it did not stay"
    return text + _fell_back(runs, eps)


def _fell_back(runs: list[dict], eps: float, by: float = 0.1) -> str:
    """A clause on the head of ``runs`` that rose highest above ``eps`` (by more than ``by``)
    during training and ends below it, if any: '; another head rose to 0.57 (layer 0) and
    ends at 0.08'."""
    peak = None
    for r in runs:
        first = np.asarray(r["history"]["first_mean"])  # (measurements, layers, heads)
        top, end = first.max(axis=0), first[-1]
        fell = (top > eps + by) & (end < eps)
        if fell.any():
            i = np.unravel_index(np.where(fell, top, -1.0).argmax(), top.shape)
            if peak is None or top[i] > peak[0]:
                peak = (float(top[i]), int(i[0]), float(end[i]))
    if peak is None:
        return ""
    return (
        f"; earlier, first-token heads rose well above it and fell back: the highest peaked at {peak[0]:.2f} "
        f"(layer {peak[1]}) and ends at {peak[2]:.2f}"
    )


def sink_sentence(
    heads: pd.DataFrame, runs: list[dict], rule: str, lr: float, *, eps: float, every: int, queries: int | None = None
) -> str:
    """Which heads of ``rule`` at learning rate ``lr`` end as sinks (mean weight on the first
    token above ``eps``), in which layers, and when one first crossed ``eps`` during
    training (measured every ``every`` steps); or, with none at the end, the largest weight
    (and, with ``queries``, the same counted as Gu et al. count it, :func:`gu_measure`) and
    where the highest head sits late in training (:func:`late_first`)."""
    part = heads[(heads["attention"] == rule) & (heads["lr"] == lr)]
    sinks = part[part["first_mean"] > eps]
    mine = [r for r in runs if r["attention"] == rule and r["lr"] == lr]
    crossed = [c for r in mine if (c := first_crossing(r["history"], eps)) is not None]
    seeds = part["seed"].nunique()
    during = f"{len(crossed)} of {plural(seeds, 'run')} had a head above {eps:g} at some measured step" + (
        f", first at step {min(crossed)[0]:,} in layer {min(crossed)[1]}" if crossed else ""
    )
    if sinks.empty:
        top = float(part["first_mean"].max())
        gu = (
            f"; {gu_measure(top, queries):.3f} counted with the first token's own row, as Gu et al. count it"
            if queries
            else ""
        )
        return (
            "no head is above the threshold at the last measurement (the largest mean weight on the first token "
            f"is {top:.3f}{gu}); {during}; {_late_clause(mine, eps)}"
        )
    layers = ", ".join(str(v) for v in sorted(sinks["layer"].unique()))
    return (
        f"{len(sinks)} of {len(part)} heads over {plural(seeds, 'run')} {agree(len(sinks), 'is a sink', 'are sinks')} "
        f"at the end ({value_span(sinks['first_mean'], 'weight')}), "
        f"in {agree(sinks['layer'].nunique(), 'layer', 'layers')} {layers}; {during} "
        f"(the heads are measured every {every} steps)"
    )


WRITES = {
    "nothing": "nothing that matters",
    "constant": "a constant",
    "informative": "something that depends on the input",
    "harmful": "something the model does better without, or with a constant in its place",
    "unmeasured": "something the test cannot read (it has too few sink rows)",
}
"""What a head writes, by :func:`attnsink.metrics.what_it_writes`' labels, in words."""


def sink_writes_sentence(heads: pd.DataFrame, *, eps: float) -> str:
    """What the softmax heads that end as sinks (``first_mean`` above ``eps``) write at their
    sink rows, by ablation: how many write nothing, a constant or something that depends on
    the input (``writes``, the labels of :func:`attnsink.metrics.what_it_writes`), what zeroing
    and mean-replacing their output there costs (``ablate_zero``, ``ablate_mean``), and taking
    away the first token's part of it (``ablate_first``), and the first token's value norm over
    the median other token's (``value_ratio``)."""
    sinks = heads[(heads["attention"] == "softmax") & (heads["first_mean"] > eps)]
    if sinks.empty:
        return "No softmax head ended as a sink, so there is no sink's output to test."
    kinds = sinks["writes"]
    n = len(sinks)
    words = WRITES
    counts = [f"{count_phrase(int((kinds == k).sum()), 'head')} {words[k]}" for k in words if (kinds == k).any()]
    if n == 1:
        what = f"the head that ended as a sink writes {words[kinds.iloc[0]]}"
    elif kinds.nunique() == 1:
        what = f"the {n} heads that ended as sinks all write {words[kinds.iloc[0]]}"
    else:
        what = f"the {n} heads that ended as sinks write: {', '.join(counts)}"
    text = (
        f"At their sink rows (the queries where more than half of a head's weight is on the first token), {what}. "
        "Replacing the output there by zero costs "
        f"{_nats(sinks['ablate_zero'])} nats per character, replacing it by its mean "
        f"{_nats(sinks['ablate_mean'])}, and taking away only the first token's part of it (the head's weight on "
        f"the first token times that token's value) {_nats(sinks['ablate_first'])}; the first token's value norm is "
        f"{value_span(sinks['value_ratio'])} times the median other token's"
    )
    if (kinds == "constant").all():
        text += (
            f". What {'this head writes' if n == 1 else 'these heads write'} at the sink rows matters to the model, "
            "but only as a constant: not the trigger task's do-nothing sink, which must write zero"
        )
    return text + "."


def _nats(values) -> str:
    """'0.0123' or '−0.0012 to 0.3456': a change in loss, four decimals (:func:`number`, so a
    change below 10⁻³ in size is written in powers of ten, never as '-0.0000')."""
    v = np.asarray(values, dtype=float)
    return number(v.min(), 4) if v.size == 1 else f"{number(v.min(), 4)} to {number(v.max(), 4)}"


def course_sentence(heads: pd.DataFrame, runs: list[dict], settings, *, eps: float, full=None) -> str:
    """How many softmax heads end on the first token at each of the two learning rates (there
    must be two), said as counts out of the heads trained at each rate, with no trend read
    into fewer than :data:`FEW` heads; and by which step every run that had one had it;
    ``settings`` are the profile's (its seeds and steps), ``full`` the full profile's when this
    one is quick (the sentence then points to it)."""
    soft = heads[heads["attention"] == "softmax"]
    lrs = sorted(soft["lr"].unique())
    if len(lrs) != 2:
        raise ValueError(f"course_sentence compares two learning rates, got {lrs}")
    count = {lr: int((soft[soft["lr"] == lr]["first_mean"] > eps).sum()) for lr in lrs}
    total = {lr: int((soft["lr"] == lr).sum()) for lr in lrs}
    (lo, n_lo), (hi, n_hi) = sorted(count.items())
    runs_per = f"over {plural(settings.seeds, 'run')} at each rate"
    if n_lo == n_hi == 0:
        text = "Here neither learning rate ends with a first-token head"
    else:
        text = (
            f"Here {n_hi} of the {total[hi]} softmax heads trained at {hi:g} end on the first token, and {n_lo} of "
            f"the {total[lo]} trained at {lo:g} ({runs_per})"
        )
        if max(n_lo, n_hi) < FEW:
            text += ": too few to say which way the learning rate moves them"
    first = [c[0] for r in runs if r["attention"] == "softmax" if (c := first_crossing(r["history"], eps)) is not None]
    if first:
        text += (
            f"; every softmax run in which some head goes above {eps:g} at a measured step has one there by step "
            f"{max(first):,} of {settings.steps:,} (see the figure)"
        )
    if full is not None:
        text += (
            ". What a longer training run does to them is for the full profile "
            f"({full.seeds} seeds, {full.steps:,} steps)"
        )
    return text + "."


FEW = 5
"""Fewer first-token heads than this at both learning rates are too few to read a trend from
(:func:`course_sentence`)."""


def scope_phrase(profile: str, settings, full=None) -> str:
    """'in the full profile (3 seeds of 20,000 steps per model)'; ``full``: the full
    profile's settings, named beside a quick profile's."""
    also = f"; the full profile trains {settings_phrase(full)}" if full is not None else ""
    return f"in the {profile} profile ({settings_phrase(settings)}{also})"


def off_heads_phrase(n: int, row_min: float, rule: str = "ReLU") -> str:
    """'' for no head, else ' (1 ReLU head carries less than 0.01 of weight in every row: off
    at every query)' or ' (3 ReLU heads carry ...)': the heads with no row of weight above
    the row threshold ``row_min``."""
    if n == 0:
        return ""
    who = f"{plural(n, rule + ' head')} {agree(n, 'carries', 'carry')}"
    return f" ({who} less than {row_min:g} of weight in every row: off at every query)"


RARE = 0.03
"""A conditional head active on fewer queries than this is on a rare class, or almost never used."""


NEAR_OFF = 0.05
"""A row weight below which a head is nearly off (:func:`conditional_sentence`)."""


def conditional_sentence(cond: pd.DataFrame, rule: str, uniform: float | None = None) -> str:
    """How many of ``rule``'s heads (over all runs) are trigger-conditional, how many of those
    are rare (:data:`RARE`), and where their weight goes at their silent queries (beside
    ``uniform``, the weight an even spread puts on the first token, when given)."""
    part = cond[cond["attention"] == rule]
    c = part[part["conditional"]]
    if c.empty:
        return f"none of the {len(part)} {rule} heads (over all runs) is conditional"
    rare = int((c["coverage"] < RARE).sum())
    why = "(a rare character, or a head that is almost never used)"
    if len(c) == 1:
        head = f"1 of {len(part)} heads (over all runs) is conditional" + (
            f", active on fewer than {RARE:.0%} of the queries {why}" if rare else ""
        )
        own = "its"
    else:
        head = (
            f"{len(c)} of {len(part)} heads (over all runs) are conditional, {rare} of them active on fewer "
            f"than {RARE:.0%} of the queries {why}"
        )
        own = "their"
    off = c[c["row_active"] < NEAR_OFF]  # heads that carry almost no weight even where they write most
    if len(off):
        head += (
            f"; {len(off)} of {'it' if len(c) == 1 else 'them'} {agree(len(off), 'carries', 'carry')} a row weight "
            f"of at most {off['row_active'].max():.3f} even at {agree(len(off), 'its', 'their')} active queries, "
            "nearly off everywhere and conditional only against their own small output"
        )
    return (
        f"{head}; at {own} silent queries {own} rows carry a total weight of {c['row_silent'].mean():.2f} on average "
        f"({c['row_silent'].max():.2f} at most), with a weight of {c['first_silent'].mean():.2f} on the first token"
        + (
            f" (an even spread over the keys puts {uniform:.2f} there: "
            + (
                "no more than that, so they do not park on it)"
                if c["first_silent"].mean() <= uniform
                else "about that, so they do not park on it)"
                if c["first_silent"].mean() <= 1.5 * uniform
                else "more)"
            )
            if uniform is not None
            else ""
        )
    )


def softmax_silence_sentence(cond: pd.DataFrame, *, quiet: float = 0.25) -> str:
    """How the conditional softmax heads go silent: by parking on null keys (at least half
    of their silent rows' weight), by cancelling values (what they write at most half of
    what their weights would write uncancelled), or neither; with none, the quietest head
    (``quiet``: :func:`attnsink.lm.conditional_heads`' threshold on the silent/active ratio)."""
    soft = cond[cond["attention"] == "softmax"]
    c = soft[soft["conditional"]]
    if c.empty:
        least = soft["quiet_ratio"].min()
        if least > quiet:
            return (
                "So no softmax head is silent anywhere in the sense of this test, and the argument above has no "
                f"head to be checked on: the quietest softmax head still writes {least:.2f} as much at its silent "
                "classes as at its active ones."
            )
        return (
            f"So no softmax head is conditional by this test; the quietest writes {least:.2f} as much at its silent "
            "classes as at its active ones, but is active on too many of the queries to count as conditional."
        )
    parked = c["null_silent"] >= 0.5
    n_park = int(parked.sum())
    heads = "this one softmax head" if len(c) == 1 else f"these {len(c)} softmax heads"
    park = f"{n_park} {agree(n_park, 'puts', 'put')} at least half of {agree(n_park, 'its', 'their')} silent rows"
    park += " on null keys"
    if n_park:
        park += f" (the first token takes {c.loc[parked, 'first_silent'].mean():.2f} of the weight on average in those)"
    drop = 1 / c["quiet_ratio"]  # how many times less they write at silent queries
    cancel = c["coherence_active"] / c["coherence_silent"]  # the part of that cancellation explains
    shorter = c["weighed_active"] / c["weighed_silent"]  # the part the values' lengths explain
    one = len(c) == 1
    their, they = ("its", "it") if one else ("their", "they")

    def span(v, fmt):
        lo, hi = format(v.min(), fmt), format(v.max(), fmt)
        return lo if lo == hi else f"{lo} to {hi}"

    return (
        f"Of {heads}, {park}. At {their} silent queries the values {they} {agree(len(c), 'reads', 'read')} partly "
        f"cancel (coherence {span(c['coherence_silent'], '.2f')}, against {span(c['coherence_active'], '.2f')} at "
        f"active ones, a factor of {span(cancel, '.1f')}), and "
        + (
            f"the values {they} {agree(len(c), 'weighs', 'weigh')} there are also shorter (what {their} weights would "
            f"write if nothing cancelled is {span(shorter, '.1f')} times less than at active queries): together the two "
            f"make the {span(drop, '.1f')} times less {they} {agree(len(c), 'writes', 'write')} there. "
            if (shorter > 1).all()
            else f"what {their} weights would write if nothing cancelled is {span(1 / shorter, '.2f')} of what it is at "
            f"active queries (not shorter in every head): together these make the {span(drop, '.1f')} times less "
            f"{they} {agree(len(c), 'writes', 'write')} there. "
        )
        + "Each factor is a mean over other queries, so they do not multiply to the drop, and we do not split it "
        f"between them; {'the head is not' if one else 'none of them is'} near zero."
    )


__all__ = [
    "plural",
    "agree",
    "count_phrase",
    "and_list",
    "values_phrase",
    "value_span",
    "difference_phrase",
    "settings_phrase",
    "first_crossing",
    "last_crossing",
    "LATE",
    "late_first",
    "gu_measure",
    "sink_sentence",
    "sink_writes_sentence",
    "course_sentence",
    "scope_phrase",
    "off_heads_phrase",
    "RARE",
    "conditional_sentence",
    "softmax_silence_sentence",
]


def scale_sentence(runs: list[dict], *, eps: float, queries: int | None = None) -> str:
    """What :func:`attnsink.experiments.text_scale` measured, for each amount of text: how
    many heads end as sinks (mean weight on token 0 above ``eps``) over how many runs, the
    largest final weight on token 0 of any head (with ``queries``, also as Gu et al. count
    it, :func:`gu_measure`), the largest at any measured step, and where the highest head
    sits late in training (:func:`late_first`). One clause per amount, largest amount
    first, joined by semicolons."""
    if not runs:
        raise ValueError("runs must hold at least one run")
    clauses = []
    for chars in sorted({r["train_chars"] for r in runs}, reverse=True):
        part = [r for r in runs if r["train_chars"] == chars]
        final = [np.asarray(r["first_mean"]) for r in part]
        ever = max(float(np.max(r["history"]["first_mean"])) for r in part)
        heads = sum(f.size for f in final)
        sinks = sum(int((f > eps).sum()) for f in final)
        top = max(float(f.max()) for f in final)
        gu = f" ({gu_measure(top, queries):.3f} with the first token's own row)" if queries else ""
        clauses.append(
            f"on {chars / 1e6:.2g} million characters, {plural(sinks, 'head')} of {heads} over "
            f"{plural(len(part), 'run')} {agree(sinks, 'ends', 'end')} above it; the largest final weight on the "
            f"first token of any head is {top:.3f}{gu}, and {ever:.3f} at any measured step; {_late_clause(part, eps)}"
        )
    return "; ".join(clauses)
