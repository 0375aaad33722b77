"""The sentences chapters build from their numbers: agreement for none, one and many, and
the numbers written as the text writes them."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from attnsink import prose

EPS = 0.3


def test_plural_and_agreement():
    assert [prose.plural(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]
    assert prose.plural(3, "ReLU head") == "3 ReLU heads"
    assert prose.plural(1, "query", "queries") == "1 query" and prose.plural(2, "query", "queries") == "2 queries"
    assert [prose.agree(n, "is a sink", "are sinks") for n in (0, 1, 5)] == ["are sinks", "is a sink", "are sinks"]
    assert [prose.count_phrase(n, "seed") for n in (0, 1, 3)] == ["0 seeds", "one seed", "3 seeds"]


def test_lists_of_values():
    assert prose.and_list(["a"]) == "a"
    assert prose.and_list(["a", "b"]) == "a and b"
    assert prose.and_list([1, 2, 3]) == "1, 2 and 3"
    with pytest.raises(ValueError):
        prose.and_list([])
    assert prose.values_phrase("cap", [0.9]) == "cap 0.9"
    assert prose.values_phrase("cap", pd.Index([0.9, 0.97])) == "caps 0.9 and 0.97"
    assert prose.values_phrase("cap", [0.0, 0.25, 1e-4]) == "caps 0, 0.25 and 0.0001"


def test_value_span():
    assert prose.value_span([0.414], "weight") == "weight 0.41"
    assert prose.value_span(pd.Series([0.571, 0.386, 0.45]), "weight") == "weights 0.39 to 0.57"
    assert prose.value_span([1.0]) == "1.00" and prose.value_span([2.5, 0.125]) == "0.12 to 2.50"
    with pytest.raises(ValueError):
        prose.value_span([], "weight")


def test_difference_phrase():
    assert prose.difference_phrase(-0.01234, "bits per character") == "0.012 bits per character lower than"
    assert prose.difference_phrase(0.2, "nats") == "0.200 nats higher than"
    assert prose.difference_phrase(0.0004, "nats") == "the same to three decimals as"
    assert prose.difference_phrase(-0.0004, "nats") == "the same to three decimals as"
    assert prose.difference_phrase(math.nan, "nats").startswith("not comparable")
    assert prose.difference_phrase(math.inf, "nats").startswith("not comparable")


def test_settings_and_scope():
    quick, full = SimpleNamespace(seeds=1, steps=2000), SimpleNamespace(seeds=3, steps=20000)
    assert prose.settings_phrase(quick) == "one seed of 2,000 steps per model"
    assert prose.settings_phrase(full) == "3 seeds of 20,000 steps per model"
    assert prose.scope_phrase("full", full) == "in the full profile (3 seeds of 20,000 steps per model)"
    assert prose.scope_phrase("quick", quick, full) == (
        "in the quick profile (one seed of 2,000 steps per model; the full profile trains 3 seeds of 20,000 steps "
        "per model)"
    )


def test_off_heads_phrase():
    assert prose.off_heads_phrase(0, 0.01) == ""
    assert prose.off_heads_phrase(1, 0.01) == (
        " (1 ReLU head carries less than 0.01 of weight in every row: off at every query)"
    )
    assert prose.off_heads_phrase(2, 0.01) == (
        " (2 ReLU heads carry less than 0.01 of weight in every row: off at every query)"
    )


def history(first_means, every=100):
    """A training history: ``first_means`` is measurements x layers x heads."""
    first = np.asarray(first_means, dtype=float)
    return {"step": np.arange(len(first)) * every, "first_mean": first}


def test_crossings():
    quiet = [[0.1, 0.1], [0.1, 0.1]]
    h = history([[[0.1, 0.2], [0.1, 0.1]], [[0.1, 0.1], [0.5, 0.1]], [[0.4, 0.1], [0.1, 0.1]], quiet])
    assert prose.first_crossing(h, EPS) == (100, 1)  # layer 1 crosses first
    assert prose.last_crossing(h, EPS) == 200
    assert prose.first_crossing(h, 0.6) is None and prose.last_crossing(h, 0.6) is None
    assert prose.first_crossing(h, 0.4) == (100, 1)  # strictly above: 0.4 itself does not count


def heads_table(rule, lr, first_means, value_ratio=0.1):
    """One row per head: ``first_means[seed][layer][head]``."""
    return pd.DataFrame(
        [
            {"attention": rule, "lr": lr, "seed": seed, "layer": layer, "head": head,
             "first_mean": w, "value_ratio": value_ratio}
            for seed, layers in enumerate(first_means)
            for layer, ws in enumerate(layers)
            for head, w in enumerate(ws)
        ]
    )  # fmt: skip


def run(rule, lr, first_means):
    return {"attention": rule, "lr": lr, "history": history(first_means, every=500)}


def test_sink_sentence_one_and_many():
    heads = heads_table("softmax", 0.01, [[[0.5, 0.1], [0.1, 0.1]]])
    runs = [run("softmax", 0.01, [[[0.1, 0.1], [0.1, 0.1]], [[0.5, 0.1], [0.1, 0.1]]])]
    assert prose.sink_sentence(heads, runs, "softmax", 0.01, eps=EPS, every=500) == (
        "1 of 4 heads over 1 run is a sink at the end (weight 0.50), in layer 0; 1 of 1 run had a head above 0.3 "
        "at some measured step, first at step 500 in layer 0 (the heads are measured every 500 steps)"
    )
    heads = heads_table("softmax", 0.01, [[[0.5, 0.1], [0.1, 0.7]], [[0.1, 0.1], [0.1, 0.1]]])
    runs = [
        run("softmax", 0.01, [[[0.1, 0.1], [0.1, 0.4]], [[0.5, 0.1], [0.1, 0.7]]]),
        run("softmax", 0.01, [[[0.1, 0.1], [0.1, 0.1]]] * 2),
        run("relu", 0.01, [[[0.9, 0.9], [0.9, 0.9]]] * 2),  # another rule: not counted
    ]
    assert prose.sink_sentence(heads, runs, "softmax", 0.01, eps=EPS, every=500) == (
        "2 of 8 heads over 2 runs are sinks at the end (weights 0.50 to 0.70), in layers 0, 1; 1 of 2 runs had a "
        "head above 0.3 at some measured step, first at step 0 in layer 1 (the heads are measured every 500 steps)"
    )


def test_sink_sentence_none_at_the_end():
    heads = heads_table("softmax", 0.003, [[[0.2, 0.1]], [[0.1, 0.25]]])
    never = [run("softmax", 0.003, [[[0.1, 0.1]]] * 3)] * 2
    assert prose.sink_sentence(heads, never, "softmax", 0.003, eps=EPS, every=500) == (
        "no head is above the threshold at the last measurement (the largest mean weight on the first token is "
        "0.250); 0 of 2 runs had a head above 0.3 at some measured step; over the last 25% of the measurements the "
        "highest head averages 0.100, above 0.3 at 0% of them"
    )
    dissolved = [never[0], run("softmax", 0.003, [[[0.1, 0.1]], [[0.4, 0.1]], [[0.1, 0.35]], [[0.1, 0.1]]]), never[0]]
    assert prose.sink_sentence(heads, dissolved, "softmax", 0.003, eps=EPS, every=500, queries=62) == (
        "no head is above the threshold at the last measurement (the largest mean weight on the first token is "
        "0.250; 0.262 counted with the first token's own row, as Gu et al. count it); 1 of 2 runs had a head above "
        "0.3 at some measured step, first at step 500 in layer 0; over the last 25% of the measurements the highest "
        "head averages 0.100, above 0.3 at 0% of them: the first-token heads that rose above it did not stay"
    )
    # a head that hovers at the threshold late in training is on it, not gone
    hover = [run("softmax", 0.003, [[[0.1, 0.1]], [[0.1, 0.1]], [[0.1, 0.1]], [[0.1, 0.32]]])]
    assert prose.sink_sentence(heads, hover, "softmax", 0.003, eps=EPS, every=500).endswith(
        "averages 0.320, above 0.3 at 100% of them: the highest head late in training sits on the threshold"
    )
    # ... and a head that rose well above it earlier and fell back is said too, beside it
    both = hover + [run("softmax", 0.003, [[[0.57, 0.1]], [[0.2, 0.1]], [[0.1, 0.1]], [[0.08, 0.1]]])]
    assert prose.sink_sentence(heads, both, "softmax", 0.003, eps=EPS, every=500).endswith(
        "sits on the threshold; earlier, first-token heads rose well above it and fell back: the highest peaked at "
        "0.57 (layer 0) and ends at 0.08"
    )
    assert prose.gu_measure(0.2961, 62) == pytest.approx(0.3072, abs=1e-4)


def test_sink_writes_sentence():
    none = heads_table("softmax", 0.01, [[[0.1, 0.1]]])
    assert prose.sink_writes_sentence(none, eps=EPS).startswith("No softmax head ended as a sink")
    one = heads_table("softmax", 0.01, [[[0.6, 0.1]]], value_ratio=0.9)
    one["ablate_zero"], one["ablate_mean"], one["writes"] = [0.25, 0.0], [0.0001, 0.0], ["constant", "nothing"]
    one["ablate_first"] = [0.2, 0.0]
    assert prose.sink_writes_sentence(one, eps=EPS) == (
        "At their sink rows (the queries where more than half of a head's weight is on the first token), the head "
        "that ended as a sink writes a constant. Replacing the output there by zero costs 0.2500 nats per "
        "character, replacing it by its mean 1.0 × 10⁻⁴, and taking away only the first token's part of it (the head's "
        "weight on the first token times that token's value) 0.2000; the first token's value norm is 0.90 times the "
        "median other token's. "
        "What this head writes at the sink rows matters to the model, but only as a constant: not the trigger "
        "task's do-nothing sink, which must write zero."
    )
    two = heads_table("softmax", 0.01, [[[0.6, 0.8]]], value_ratio=0.9)
    two["ablate_zero"], two["ablate_mean"] = [0.001, 0.3], [0.0, 0.2]
    two["writes"] = ["nothing", "informative"]
    two["ablate_first"] = [0.0, 0.1]
    text = prose.sink_writes_sentence(two, eps=EPS)
    assert (
        "the 2 heads that ended as sinks write: one head nothing that matters, one head something that depends" in text
    )
    assert "only as a constant" not in text and "zero costs 0.0010 to 0.3000 nats" in text
    two["ablate_zero"], two["ablate_mean"], two["writes"] = [0.1, 0.3], [0.0, 0.0], ["constant", "constant"]
    assert "the 2 heads that ended as sinks all write a constant" in prose.sink_writes_sentence(two, eps=EPS)
    two["writes"] = ["harmful", "constant"]
    assert "one head something the model does better without" in prose.sink_writes_sentence(two, eps=EPS)
    relu = heads_table("relu", 0.01, [[[0.6, 0.8]]])
    assert prose.sink_writes_sentence(relu, eps=EPS).startswith("No softmax head")  # softmax heads only


@pytest.mark.parametrize(
    ("low", "high", "start"),
    [
        ([0.1, 0.1], [0.1, 0.1], "Here neither learning rate ends with a first-token head"),
        ([0.1, 0.1], [0.5, 0.6], "Here 2 of the 2 softmax heads trained at 0.01 end on the first token, and 0 of"),
        ([0.5, 0.1], [0.1, 0.1], "Here 0 of the 2 softmax heads trained at 0.01 end on the first token, and 1 of"),
        ([0.5, 0.1], [0.1, 0.5], "Here 1 of the 2 softmax heads trained at 0.01 end on the first token, and 1 of"),
    ],
)
def test_course_sentence(low, high, start):
    heads = pd.concat([heads_table("softmax", 0.003, [[low]]), heads_table("softmax", 0.01, [[high]])])
    settings, full = SimpleNamespace(seeds=1, steps=2000), SimpleNamespace(seeds=3, steps=20000)
    runs = [run("softmax", 0.003, [[[0.1, 0.1]], [low]]), run("softmax", 0.01, [[[0.1, 0.1]], [high]])]
    text = prose.course_sentence(heads, runs, settings, eps=EPS)
    assert text.startswith(start) and text.endswith(".")
    assert ("too few to say" in text) == (max(low + high) > EPS)  # at most 2 heads: fewer than prose.FEW
    assert ("over 1 run at each rate" in text) == (max(low + high) > EPS)  # "neither" needs no count
    crossed = max(low + high) > EPS
    assert ("by step 500 of 2,000 (see the figure)" in text) == crossed
    assert ("every softmax run in which" in text) == crossed
    assert "full profile" not in text
    assert prose.course_sentence(heads, runs, settings, eps=EPS, full=full).endswith(
        "What a longer training run does to them is for the full profile (3 seeds, 20,000 steps)."
    )
    with pytest.raises(ValueError, match="two learning rates"):
        prose.course_sentence(heads[heads["lr"] == 0.01], runs, settings, eps=EPS)


def cond_table(rule, rows, row_active=0.5):
    keys = ("conditional", "coverage", "row_silent", "first_silent", "null_silent", "coherence_silent", "quiet_ratio")
    return pd.DataFrame([{"attention": rule, "row_active": row_active, **dict(zip(keys, r))} for r in rows])


def test_conditional_sentence():
    cond = cond_table("relu", [(False, 0.5, 0.9, 0.1, 0, 0, 0.8), (False, 0.5, 0.9, 0.1, 0, 0, 0.9)])
    assert prose.conditional_sentence(cond, "relu") == "none of the 2 relu heads (over all runs) is conditional"
    cond = cond_table("relu", [(True, 0.01, 0.1, 0.01, 0, 0, 0.1), (True, 0.2, 0.3, 0.03, 0, 0, 0.1), (False,) * 7])
    assert prose.conditional_sentence(cond, "relu") == (
        "2 of 3 heads (over all runs) are conditional, 1 of them active on fewer than 3% of the queries (a rare "
        "character, or a head that is almost never used); at their silent queries their rows carry a total weight "
        "of 0.20 on average (0.30 at most), with a weight of 0.02 on the first token"
    )
    one = cond.iloc[[0, 2]]
    assert prose.conditional_sentence(one, "relu") == (
        "1 of 2 heads (over all runs) is conditional, active on fewer than 3% of the queries (a rare character, or "
        "a head that is almost never used); at its silent queries its rows carry a total weight of 0.10 on average "
        "(0.10 at most), with a weight of 0.01 on the first token"
    )
    assert prose.conditional_sentence(cond, "relu", uniform=0.06).endswith(
        "with a weight of 0.02 on the first token (an even spread over the keys puts 0.06 there: no more than that, "
        "so they do not park on it)"
    )
    assert prose.conditional_sentence(cond, "relu", uniform=0.01).endswith("puts 0.01 there: more)")
    # a little above an even spread's share (up to 1.5 times) is "about that", not "no more"
    assert prose.conditional_sentence(cond, "relu", uniform=0.015).endswith(
        "puts 0.01 there: about that, so they do not park on it)"
    )
    assert prose.conditional_sentence(cond.iloc[[1, 2]], "relu").startswith(
        "1 of 2 heads (over all runs) is conditional; at its silent queries its rows carry"
    )
    # heads that carry almost no weight even at their active queries are named
    off = cond.assign(row_active=[0.01, 0.5, 0.5])
    assert prose.conditional_sentence(off, "relu").startswith(
        "2 of 3 heads (over all runs) are conditional, 1 of them active on fewer than 3% of the queries (a rare "
        "character, or a head that is almost never used); 1 of them carries a row weight of at most 0.010 even at "
        "its active queries, nearly off everywhere and conditional only against their own small output; at their"
    )


def test_softmax_silence_sentence():
    cond = cond_table("softmax", [(False, 0.5, 1, 0.5, 0, 0, 0.734), (False, 0.5, 1, 0.5, 0, 0, 0.9)])
    assert prose.softmax_silence_sentence(cond).endswith(
        "the quietest softmax head still writes 0.73 as much at its silent classes as at its active ones."
    )
    busy_but_quiet = cond_table("softmax", [(False, 0.5, 1, 0.5, 0, 0, 0.2)])  # quiet, but active on half the queries
    assert "is active on too many of the queries to count as conditional" in prose.softmax_silence_sentence(
        busy_but_quiet
    )
    # one parks on null keys; cancellation explains part of how much less each writes
    cond = cond_table("softmax", [(True, 0.1, 1, 0.8, 0.9, 0.5, 0.2), (True, 0.1, 1, 0.1, 0.2, 0.25, 0.25),
                                  (False, 0.1, 1, 0.1, 0.2, 0.9, 0.9)]).assign(coherence_active=1.0)  # fmt: skip
    cond = cond.assign(weighed_active=2.0, weighed_silent=[1.0, 0.5, 1.0])
    assert prose.softmax_silence_sentence(cond) == (
        "Of these 2 softmax heads, 1 puts at least half of its silent rows on null keys (the first token takes "
        "0.80 of the weight on average in those). At their silent queries the values they read partly cancel "
        "(coherence 0.25 to 0.50, against 1.00 at active ones, a factor of 2.0 to 4.0), and the values they weigh "
        "there are also shorter (what their weights would write if nothing cancelled is 2.0 to 4.0 times less than "
        "at active queries): together the two make the 4.0 to 5.0 times less they write there. Each factor is "
        "a mean over other queries, so they do not multiply to the drop, and we do not split it between them; none "
        "of them is near zero."
    )
    # where a head's weighed values are not shorter at silent queries, the sentence does not say they are
    longer = prose.softmax_silence_sentence(cond.assign(weighed_silent=[2.5, 0.5, 1.0]))
    assert "also shorter" not in longer and "is 0.25 to 1.25 of what it is at active queries" in longer
    none_parked = cond.assign(null_silent=0.0)  # no head to average over: no "nan" in the text
    text = prose.softmax_silence_sentence(none_parked)
    assert text.startswith("Of these 2 softmax heads, 0 put at least half of their silent rows on null keys. At")
    assert "nan" not in text
    one = cond.iloc[[0, 2]]
    assert prose.softmax_silence_sentence(one).startswith(
        "Of this one softmax head, 1 puts at least half of its silent rows on null keys (the first token takes "
        "0.80 of the weight on average in those). At its silent queries the values it reads partly cancel "
        "(coherence 0.50, against 1.00 at active ones, a factor of 2.0), and the values it weighs there are also"
    )


def test_scale_sentence_counts_sinks_per_amount_of_text():
    from attnsink.prose import scale_sentence

    def run(chars, final, ever):
        return {"train_chars": chars, "first_mean": final, "history": {"first_mean": [final, ever]}}

    runs = [
        run(420_000, [[0.1, 0.35]], [[0.1, 0.5]]),
        run(4_200_000, [[0.1, 0.12]], [[0.1, 0.2]]),
        run(4_200_000, [[0.11, 0.13]], [[0.1, 0.14]]),
    ]
    text = scale_sentence(runs, eps=0.3, queries=62)
    big, small = text.split("; on ")
    assert big.startswith("on 4.2 million characters, 0 heads of 4 over 2 runs end above it")
    assert "largest final weight on the first token of any head is 0.130 (0.144 with the first token's own row)" in big
    assert (
        "and 0.200 at any measured step; over the last 25% of the measurements the highest head averages 0.200" in big
    )
    assert small.startswith("0.42 million characters, 1 head of 2 over 1 run ends above it")
    assert "is 0.350 (0.360 with the first token's own row), and 0.500 at any measured step" in small
    assert small.endswith("averages 0.500, above 0.3 at 100% of them: it stays above the threshold to the end")
    with pytest.raises(ValueError, match="runs"):
        scale_sentence([], eps=0.3)


def test_millions_reads_as_a_reader_writes_counts():
    from attnsink.prose import millions

    assert millions(20_160_000) == "20.2 million" and millions(4_228_602) == "4.2 million"
    assert millions(420_000) == "420,000" and millions(999_999.6) == "1,000,000"


def test_paired_sentence_counts_the_seeds_on_each_side_of_zero():
    from attnsink.prose import paired_sentence

    assert paired_sentence([0.02, 0.04], [0.005, 0.005]) == (
        "seed by seed the difference is +0.020 to +0.040 bits per character, "
        "each more than two standard errors above zero"
    )
    assert paired_sentence([0.02, 0.001, -0.03], [0.005, 0.005, 0.01]) == (
        "seed by seed the difference is -0.030 to +0.020 bits per character, "
        "1 of 3 more than two standard errors above zero, 1 of 3 more than two standard "
        "errors below zero and 1 of 3 within two standard errors of zero"
    )
    assert paired_sentence([0.0, 0.001], [0.01, 0.01], "nats") == (
        "seed by seed the difference is +0.000 to +0.001 nats, each within two standard errors of zero"
    )
    assert (
        paired_sentence([0.021], [0.008])
        == "from the one seed it is +0.021 ± 0.016 bits per character (two standard errors)"
    )
    with pytest.raises(ValueError, match="diffs and ses"):
        paired_sentence([0.1, 0.2], [0.1])


def test_span_never_writes_a_range_of_zeros():
    from attnsink.prose import span

    assert span([0.12, 0.34]) == "0.12 to 0.34"
    assert span([0.121, 0.119]) == "0.12"
    assert span([0.001, 0.002]) == "under 0.005"
    assert span([0.0, 0.002]) == "0.00 to under 0.005"
    assert span([0.001, 0.3]) == "under 0.005 to 0.30"
    assert span([-0.2, 0.1], digits=1) == "\u22120.2 to 0.1"
    assert span([-0.001, 0.001]) == "between \u22120.005 and 0 to under 0.005"
    with pytest.raises(ValueError, match="at least one"):
        span([])
