"""The small GPT of attnsink.lm: its data, its shapes, causality, every attention rule,
determinism per seed, a loss that falls, its metrics on heads whose answer is known, and
bad input refused."""

import json

import numpy as np
import pytest
import torch

from attnsink.attention import ATTENTION_RULES
from attnsink.lm import GPT, BigramBackcopy, CharText, head_metrics, lm_loss, text_corpus, train_lm
from attnsink.metrics import SINK_EPS

TASK = BigramBackcopy(vocab_size=16, n_triggers=2, seq_len=24)


def small(attention="softmax", seed=0, vocab=TASK.vocab_size, seq_len=TASK.seq_len, **kw):
    return GPT(vocab, seq_len=seq_len, d_model=16, n_layers=2, n_heads=2, attention=attention, seed=seed, **kw)


def test_backcopy_copies_after_every_trigger_and_follows_the_chain_elsewhere():
    x = TASK.sample(400, seed=1)
    P, triggers = TASK.chain()
    assert x.shape == (400, 24) and (x[:, 0] == TASK.bos_id).all()
    assert not np.isin(x[:, 1].numpy(), triggers).any()  # never starts with a trigger
    body = x[:, 1:].numpy()
    assert body.max() < TASK.vocab_size
    hit = TASK.trigger_targets(x).numpy()  # (n, L - 1): target t + 1 is a copy
    prev_is_trigger = np.isin(x[:, :-1].numpy(), triggers)
    prev_is_trigger[:, :2] = False
    assert np.array_equal(hit, prev_is_trigger) and hit.any()
    n, t = np.nonzero(hit)
    assert np.array_equal(x[n, t + 1].numpy(), x[n, t - 1].numpy())  # the copy of the token before the trigger
    # elsewhere, transitions follow the chain: every observed bigram has positive probability
    n, t = np.nonzero(~hit[:, 1:])
    t = t + 1
    assert (P[x[n, t].numpy(), x[n, t + 1].numpy()] > 0).all()


def test_backcopy_without_bos_and_the_same_draws_per_seed():
    task = BigramBackcopy(vocab_size=16, n_triggers=2, seq_len=24, bos=False)
    x = task.sample(50, seed=3)
    assert (x < 16).all() and x.shape == (50, 24)
    assert torch.equal(x, task.sample(50, seed=3)) and not torch.equal(x, task.sample(50, seed=4))


def test_text_corpus_is_english_and_windows_start_with_bos():
    text = text_corpus()
    assert len(text) > 300_000 and "the" in text
    task = CharText(seq_len=32)
    x = task.sample(8, seed=0)
    assert x.shape == (8, 32) and (x[:, 0] == task.bos_id).all() and (x[:, 1:] < task.vocab_size).all()
    assert not torch.equal(task.sample(8, seed=0, split="val"), x)


@pytest.mark.parametrize("attention", sorted(ATTENTION_RULES) + ["softmax_cap0.5"])
def test_every_rule_runs_and_is_causal(attention):
    model = small(attention)
    x = TASK.sample(3, seed=0)
    logits, attns, values = model(x, return_values=True)
    assert logits.shape == (3, 24, TASK.vocab_size + 1)
    assert len(attns) == 2 and attns[0].shape == (3, 2, 24, 24) and values[0].shape == (3, 2, 24, 16)  # in output space
    assert torch.all(attns[0].triu(1) == 0)  # no weight on the future
    changed = x.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % TASK.vocab_size
    torch.testing.assert_close(model(changed)[:, :10], logits[:, :10])  # the past does not see the future
    lm_loss(model, x).backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_softmax_rows_sum_to_one_and_relu_rows_can_be_zero():
    x = TASK.sample(2, seed=0)
    _, attns, _ = small("softmax")(x, return_values=True)
    torch.testing.assert_close(attns[1].sum(-1), torch.ones(2, 2, 24))
    relu = small("relu")
    with torch.no_grad():
        relu.blocks[0].qkv.weight[:16].zero_()  # queries 0: every score 0, so every ReLU weight 0
    _, attns, _ = relu(x, return_values=True)
    assert torch.all(attns[0] == 0)


def test_same_seed_same_model_and_training():
    a, b, c = small(seed=1), small(seed=1), small(seed=2)
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), name
    assert any(not torch.equal(p, r) for p, r in zip(a.parameters(), c.parameters()))
    ra = train_lm(a, TASK, steps=6, every=3, batch_size=8)
    rb = train_lm(b, TASK, steps=6, every=3, batch_size=8)
    np.testing.assert_array_equal(ra.history["loss"], rb.history["loss"])


def test_loss_falls_on_backcopy():
    model = small()
    r = train_lm(model, TASK, steps=150, lr=3e-3, every=50, batch_size=32)
    assert r.history["step"].tolist() == [50, 100, 150]
    assert r.history["val_loss"][-1] < 0.8 * np.log(TASK.vocab_size + 1)  # well below guessing
    assert r.history["first_mean"].shape == (3, 2, 2)


def test_head_metrics_on_heads_that_attend_to_bos_only():
    model = small()
    with torch.no_grad():  # keys of BOS huge, others 0: every query puts (almost) all weight on BOS
        model.blocks[0].qkv.weight.zero_()
        model.blocks[0].qkv.weight[:16] = torch.eye(16)  # q = LN(x)
        model.tok.weight[TASK.bos_id] = 0
    x = TASK.sample(4, seed=0)[:, :-1]  # the inputs: the positions the model trains on
    m = head_metrics(model, x)
    assert m["first_mass"].shape == (2, 2, 23) and m["first_mean"].shape == (2, 2)
    torch.testing.assert_close(m["first_mass"][:, :, 0], torch.ones(2, 2))  # BOS's own row
    assert 0 <= m["sink"] <= 1
    assert m["sink"] == float((m["first_mean"] > SINK_EPS).float().mean())
    # layer 0: every score 0 (keys are zero), so the weights are uniform: 1 / (i + 1) on BOS
    expected = (1 / torch.arange(1, 24).float())[1:].mean()
    torch.testing.assert_close(m["first_mean"][0], expected.expand(2), rtol=1e-5, atol=1e-6)
    assert m["value_ratio"].shape == (2, 2)
    with pytest.raises(ValueError, match="trained on"):  # a whole window: its last position never trained
        head_metrics(model, TASK.sample(4, seed=0))


@pytest.mark.parametrize(
    "make,named",
    [
        (lambda: BigramBackcopy(vocab_size=2), "vocab_size"),
        (lambda: BigramBackcopy(n_triggers=0), "n_triggers"),
        (lambda: BigramBackcopy(alpha=0), "alpha"),
        (lambda: BigramBackcopy(bos=1), "bos"),
        (lambda: CharText(val_fraction=1.0), "val_fraction"),
        (lambda: GPT(10, seq_len=8, d_model=10, n_heads=3), "d_model"),
        (lambda: GPT(10, seq_len=8, attention="nope"), "attention"),
        (lambda: GPT(10, seq_len=0), "seq_len"),
        (lambda: train_lm(small(), TASK, steps=0), "steps"),
        (lambda: train_lm(small(), TASK, steps=1, lr=0), "lr"),
        (lambda: train_lm(small(), TASK, steps=1, weight_decay=-1), "weight_decay"),
        (lambda: CharText().sample(2, 0, split="test"), "split"),
        (lambda: small()(torch.zeros(1, 30, dtype=torch.long)), "seq_len"),
    ],
)
def test_bad_input_is_refused(make, named):
    with pytest.raises(ValueError, match=named):
        make()


def as_written(runs):
    """Records as the command line writes them to JSON (NaN as null)."""
    import json

    return json.loads(json.dumps(runs).replace("NaN", "null"))


def test_backcopy_experiment_records_every_rule_and_reuses_the_cache(tmp_path, monkeypatch):
    import json

    from attnsink import profiles
    from attnsink.__main__ import main
    from attnsink.experiments import backcopy

    monkeypatch.setitem(profiles.BACKCOPY, "quick", profiles.Settings(seeds=1, steps=20, lr=3e-3, batch_size=8))
    out = tmp_path / "bb.json"
    main(["reproduce", "backcopy", "--profile", "quick", "--cache-dir", str(tmp_path / "c"), "--out", str(out)])
    record = json.loads(out.read_text())
    assert [(r["attention"], r["bos"]) for r in record["runs"]] == [
        *[(rule, True) for rule in profiles.BACKCOPY_RULES],
        *[(rule, False) for rule in profiles.BACKCOPY_NO_BOS],
    ]
    for r in record["runs"]:
        assert np.asarray(r["first_ordinary"]).shape == (2, 4) and 0 <= r["copy_acc"] <= 1
    assert out.with_suffix(".heads.png").stat().st_size > 0

    def refuse(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr("attnsink.lm.training.train_lm", refuse)
    monkeypatch.setattr("attnsink.lm.metrics.ablate_heads", refuse)  # the analysis is kept too
    again = backcopy("quick", cache_dir=tmp_path / "c")
    assert as_written(again.runs) == record["runs"]
    n_models = len(profiles.BACKCOPY_RULES) + len(profiles.BACKCOPY_NO_BOS)
    # one entry per trained model and one per model's analysis
    assert len(list((tmp_path / "c").glob("*.pt"))) == 2 * n_models


def test_backcopy_models_are_the_same_trained_here_or_in_workers(monkeypatch):
    from attnsink import profiles
    from attnsink.experiments import backcopy

    monkeypatch.setitem(profiles.BACKCOPY, "quick", profiles.Settings(seeds=1, steps=15, lr=3e-3, batch_size=8))
    here = backcopy("quick", workers=1, cache_dir=None)
    pooled = backcopy("quick", workers=2, cache_dir=None)
    assert here.runs == pooled.runs
    for key, models in here.results.items():
        for a, b in zip(models, pooled.results[key]):
            for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items()):
                assert torch.equal(p, q), (key, name)


def test_head_outputs_are_each_heads_own_write_to_the_residual_stream():
    from attnsink.lm import head_outputs

    model = small(seed=3)
    x = TASK.sample(4, seed=2)[:, :-1]
    h = head_outputs(model, x)
    block = model.blocks[0]
    a_in = block.ln1(model.tok(x) + model.pos(torch.arange(x.shape[1])))
    for head in range(2):
        # keep only this head's slice of the output projection: the block's attention output is then this head's write
        keep = torch.zeros_like(block.out.weight)
        keep[:, head * model.d_head : (head + 1) * model.d_head] = 1
        q, k, v = block.qkv(a_in).view(4, 23, 3, 2, model.d_head).permute(2, 0, 3, 1, 4)
        w = h["weights"][0]
        o = (w @ v).transpose(1, 2).reshape(4, 23, -1)
        written = o @ (block.out.weight * keep).T
        assert torch.allclose(h["out_norm"][0][:, head], written.norm(dim=-1), atol=1e-5)
        # each key's projected value: what this head writes with all its weight on that key
        assert torch.allclose(
            h["key_norm"][0][:, head],
            (v[:, head] @ (block.out.weight * keep)[:, head * model.d_head : (head + 1) * model.d_head].T).norm(dim=-1),
            atol=1e-5,
        )
    # a head's write is a weighted sum of its keys' projected values: at most the weighted sum of their norms
    for w, norm, key_norm in zip(h["weights"], h["out_norm"], h["key_norm"]):
        assert (norm <= (w * key_norm[:, :, None, :]).sum(-1) + 1e-5).all()


def test_conditional_heads_finds_a_head_that_writes_only_at_one_token(monkeypatch):
    from attnsink import lm

    x = torch.randint(0, 6, (50, 20), generator=torch.Generator().manual_seed(0))
    x[:, 0] = 6  # BOS
    B, L = x.shape
    on = (x == 0).float()  # token 0 is the trigger
    weights = torch.zeros(B, 2, L, L)
    weights[:, 0, :, 0] = 1 - on  # head 0: on BOS when silent ...
    weights[:, 0, :, 1] = on  # ... and on token 1 when it writes
    weights[:, 1] = torch.tril(torch.ones(L, L)) / torch.arange(1, L + 1)[:, None]  # head 1: uniform, always writes
    key_norm = torch.ones(B, 2, L)
    key_norm[:, 0, 0] = 0.0  # BOS's value is null for head 0
    out_norm = torch.stack([on + 0.01 * (1 - on), torch.ones(B, L)], dim=1)
    fake = {"weights": [weights], "out_norm": [out_norm], "key_norm": [key_norm]}
    monkeypatch.setattr(lm.metrics, "head_outputs", lambda model, x: fake)
    trig, busy = lm.conditional_heads(None, x)
    assert trig["conditional"] and trig["active_tokens"] == [0] and 0.1 < trig["coverage"] < 0.25
    assert trig["quiet_ratio"] == pytest.approx(0.01)
    assert trig["first_silent"] == pytest.approx(1) and trig["null_silent"] == pytest.approx(1)
    assert trig["first_active"] == 0 and trig["null_active"] == 0 and trig["row_silent"] == pytest.approx(1)
    assert trig["coherence_active"] == pytest.approx(1)  # one key: nothing to cancel
    assert trig["weighed_active"] == pytest.approx(1) and trig["weighed_silent"] == 0  # w |v| summed over keys
    assert np.isnan(trig["coherence_silent"])  # all weight on a zero value: no ratio to take
    assert not busy["conditional"] and busy["coverage"] == 1 and np.isnan(busy["quiet_ratio"])
    # null keys are judged against the median key of the sequence: BOS at a third of the others' is null at
    # null=0.5 and not at null=0.25; and two keys whose values cancel give a coherence below one
    key_norm[:, 0, 0] = 1 / 3
    out_norm[:, 0] = torch.where(on.bool(), 1.0, 0.5 / 3)  # half of what the weights would write: cancellation
    trig = lm.conditional_heads(None, x, null=0.5)[0]
    assert trig["null_silent"] == pytest.approx(1) and trig["coherence_silent"] == pytest.approx(0.5)
    assert lm.conditional_heads(None, x, null=0.25)[0]["null_silent"] == 0
    # a class with fewer than min_count queries is in neither set
    x2 = torch.where(x == 5, 4, x)
    x2[0, 5] = 5  # token 5 now occurs once
    rec = lm.conditional_heads(None, x2)[0]
    counted = (x2[:, 1:] != 5).sum().item()
    assert rec["coverage"] == pytest.approx(((x2[:, 1:] == 0).sum() / counted).item())
    with pytest.raises(ValueError, match="coverage"):
        lm.conditional_heads(None, x, coverage=0)
    with pytest.raises(ValueError, match="min_count"):
        lm.conditional_heads(None, x, min_count=10_000)


def test_text_lm_experiment_records_history_and_heads_and_reuses_the_cache(tmp_path, monkeypatch):
    import json

    from attnsink import profiles
    from attnsink.__main__ import main
    from attnsink.experiments import text, text_lm

    monkeypatch.setitem(profiles.TEXT, "quick", profiles.Settings(seeds=1, steps=20, lr=3e-3, batch_size=4))
    monkeypatch.setattr(text, "TEXT_EVERY", 10)
    out = tmp_path / "text.json"
    main(["reproduce", "text_lm", "--profile", "quick", "--cache-dir", str(tmp_path / "c"), "--out", str(out)])
    record = json.loads(out.read_text())
    assert [(r["attention"], r["lr"]) for r in record["runs"]] == [
        (rule, lr) for lr in profiles.TEXT_LRS for rule in profiles.TEXT_RULES
    ]
    layers, heads = profiles.TEXT_MODEL["n_layers"], profiles.TEXT_MODEL["n_heads"]
    for r in record["runs"]:
        assert r["history"]["step"] == [10, 20] and np.asarray(r["history"]["first_mean"]).shape == (2, layers, heads)
        assert np.asarray(r["first_mean"]).shape == (layers, heads) and len(r["heads"]) == layers * heads
        assert np.asarray(r["first_share"]).shape == (layers, heads)
        # the analysis uses the windows measured during training: the history ends where the record does
        assert np.allclose(r["history"]["first_mean"][-1], r["first_mean"], atol=1e-6)
        assert {h["layer"] for h in r["heads"]} == set(range(layers)) and all(
            0 <= h["coverage"] <= 1 for h in r["heads"]
        )
        assert 0 <= r["sink"] <= 1 and r["val_loss"] > 0
    assert out.with_suffix(".sinks.png").stat().st_size > 0

    def refuse(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr("attnsink.lm.training.train_lm", refuse)
    monkeypatch.setattr("attnsink.lm.ablate_heads", refuse)  # the analysis is kept too
    again = text_lm("quick", cache_dir=tmp_path / "c")
    assert as_written(again.runs) == record["runs"]


def test_first_share_counts_only_rows_that_carry_weight():
    from attnsink.metrics import ROW_MIN, first_share

    L = 5
    w = torch.zeros(2, 3, L, L)  # (batch, heads, query, key)
    w[:, 0, :, 0] = 0.25  # head 0: a quarter of every row on token 0, the rest on the query itself
    w[:, 0, torch.arange(L), torch.arange(L)] += 0.75
    w[:, 1, :, 0] = ROW_MIN / 10  # head 1: a trace of weight, all on token 0: off everywhere
    w[:, 2, 1:3, 0] = ROW_MIN / 10  # head 2: traces on token 0 at queries 1 and 2 ...
    w[:, 2, 3:, 2] = 0.5  # ... and real rows, with nothing on token 0, at queries 3 and 4
    share = first_share(w)
    assert share[0] == pytest.approx(0.25)
    assert np.isnan(share[1])  # no row to measure: not a share of 1 from noise
    assert share[2] == 0.0  # the near-empty rows do not count
    assert first_share(w, row_min=ROW_MIN / 100)[2] == pytest.approx(0.5)  # with a lower bar they do
    for bad in (0, -1.0, True, "0.01"):
        with pytest.raises(ValueError, match="row_min"):
            first_share(w, row_min=bad)


def test_the_text_is_the_carried_corpus_on_every_python(tmp_path, monkeypatch):
    """Chapter 8's text is the file the library carries (CPython 3.11.7's help topics), never
    the running Python's help topics, which differ from release to release."""
    import gzip
    import hashlib

    from attnsink.lm import data

    text = data.text_corpus()
    assert hashlib.sha256(text.encode()).hexdigest() == data.CORPUS_SHA256
    assert len(text) == 465_126 and len(set(text)) == 103 and CharText().vocab_size == 103
    bad = tmp_path / "other.txt.gz"
    bad.write_bytes(gzip.compress(text.encode()[:-1]))
    monkeypatch.setattr(data, "CORPUS", bad)
    data.text_corpus.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="SHA-256"):
            data.text_corpus()
    finally:
        monkeypatch.undo()
        data.text_corpus.cache_clear()


def test_best_loss_is_zero_at_copies_and_the_chain_elsewhere():
    for bos in (True, False):
        task = BigramBackcopy(vocab_size=16, n_triggers=2, seq_len=24, bos=bos)
        P, _ = task.chain()
        x = task.sample(200, seed=4)
        best = task.best_loss(x)
        copy = task.trigger_targets(x)
        assert best.shape == (200, 23) and copy.any()
        assert (best[copy] == 0).all()
        a, b = x[:, :-1], x[:, 1:]
        chain = torch.from_numpy(-np.log(P))[a.clamp(max=15), b.clamp(max=15)]
        start = 1 if bos else 0
        assert torch.allclose(best[:, start:][~copy[:, start:]], chain[:, start:][~copy[:, start:]].double())
        if bos:  # the first real token is uniform over the 14 non-triggers
            assert torch.allclose(best[:, 0], torch.full((200,), np.log(14), dtype=torch.float64))
        assert best.mean() > 0


def test_ablate_heads_on_heads_whose_answer_is_known():
    from attnsink.lm.metrics import ablate_heads
    from attnsink.metrics import what_it_writes

    model = small(seed=5)
    x = TASK.sample(16, seed=3)
    rows = torch.zeros(16, 23, dtype=torch.bool)
    rows[:, 5:] = True
    with torch.no_grad():
        # layer 0, head 1 writes nothing: its slice of the output map is zero
        model.blocks[0].out.weight[:, model.d_head :] = 0
        # layer 1: every token reads the same LayerNorm output (gain 0, bias b), so each head writes a constant
        model.blocks[1].ln1.weight.zero_()
        model.blocks[1].ln1.bias.normal_(generator=torch.Generator().manual_seed(0))
        model.blocks[1].qkv.weight[2 * 16 :].mul_(30)  # values, and so a constant, large enough to matter
        model.blocks[1].out.weight.mul_(30)
    res = ablate_heads(model, x, rows)
    assert res["zero"].shape == (2, 2)
    assert res["zero"][0, 1] == 0 and res["mean"][0, 1] == 0  # a head with no output map: nothing to take away
    assert torch.allclose(res["mean"][1], torch.zeros(2), atol=1e-6)  # replacing a constant by its mean: no change
    assert (res["zero"][1].abs() > 5e-5).all()  # ... replacing it by zero changes the loss
    # zero at every query is the same as cutting the head's slice of the output map
    everywhere = torch.ones(16, 23, dtype=torch.bool)
    cut = ablate_heads(model, x, everywhere)["zero"][0, 0]
    with torch.no_grad():
        model.blocks[0].out.weight[:, : model.d_head] = 0
    assert cut == pytest.approx(lm_loss(model.eval(), x).item() - res["loss"], abs=1e-5)
    # at query 0 a causal head sees only token 0: taking away token 0's part is taking away everything
    first_only = torch.zeros(16, 23, dtype=torch.bool)
    first_only[:, 0] = True
    at0 = ablate_heads(small(seed=5), x, first_only)
    assert torch.allclose(at0["first"], at0["zero"], atol=1e-6) and at0["zero"].abs().max() > 0
    # per-head rows, and a head with no row is unmeasured
    per_head = torch.zeros(2, 2, 16, 23, dtype=torch.bool)
    per_head[1, 0] = rows
    res2 = ablate_heads(model, x, per_head)
    assert torch.isnan(res2["zero"][0]).all() and not torch.isnan(res2["zero"][1, 0])
    with pytest.raises(ValueError, match="rows"):
        ablate_heads(model, x, rows[:, :-1])
    with pytest.raises(ValueError, match="rows"):
        ablate_heads(model, x, rows.float())
    with pytest.raises(ValueError, match="layers, heads"):
        ablate_heads(model, x, torch.zeros(3, 2, 16, 23, dtype=torch.bool))
    # the transplant: the head's outputs at donor queries drawn at random, written at rows
    donor = torch.zeros(16, 23, dtype=torch.bool)
    donor[:, :3] = True
    moved = ablate_heads(model, x, rows, kinds=("transplant",), donor=donor)["transplant"]
    assert (moved[0] == 0).all()  # heads whose output map was cut above: nothing to move
    assert torch.allclose(moved[1], torch.zeros(2), atol=1e-6)  # a constant is the same everywhere
    fresh = ablate_heads(small(seed=5), x, rows, kinds=("transplant",), donor=donor)["transplant"]
    assert fresh[0].abs().min() > 1e-4  # input-dependent heads, given other queries' outputs
    for kw, name in (({"kinds": ("transplant",)}, "donor"), ({"donor": donor}, "donor")):
        with pytest.raises(ValueError, match=name):
            ablate_heads(model, x, rows, **kw)
    with pytest.raises(ValueError, match="donor"):
        ablate_heads(model, x, rows, kinds=("transplant",), donor=donor[:, :-1])
    # the reading of the two ablations
    assert what_it_writes(0.001, -0.002) == "nothing"
    assert what_it_writes(-0.05, 0.0) == "harmful" and what_it_writes(0.05, -0.01) == "harmful"
    assert what_it_writes(0.05, 0.001) == "constant"
    assert what_it_writes(0.05, 0.04) == "informative"
    assert what_it_writes(-0.05, 0.04) == "informative"  # its input-dependence is used, whatever zeroing does
    assert what_it_writes(float("nan"), 0.0) == "unmeasured"
    assert list(what_it_writes([0.0, 0.1], [0.0, 0.1])) == ["nothing", "informative"]
    with pytest.raises(ValueError, match="tol"):
        what_it_writes(0.0, 0.0, tol=-1)
    with pytest.raises(ValueError, match="same shape"):
        what_it_writes([0.0], [0.0, 0.1])


def test_backcopy_metrics_measure_entropy_and_what_heads_write():
    from attnsink.lm import backcopy_metrics
    from attnsink.lm.metrics import _entropy

    w = torch.tensor([[[[1.0, 0, 0], [0.5, 0.5, 0], [1, 0, 0]], [[1.0, 0, 0], [0, 0, 0], [1 / 3, 1 / 3, 1 / 3]]]])
    e = _entropy(w)
    assert torch.isnan(e[0, :, 0]).all()  # query 0 sees one key
    assert e[0, 0, 1] == pytest.approx(1) and e[0, 0, 2] == 0  # spread evenly / on one key
    assert torch.isnan(e[0, 1, 1]) and e[0, 1, 2] == pytest.approx(1)  # an empty row has no entropy
    m = backcopy_metrics(small(seed=1), TASK, n=32)
    for key in ("entropy_ordinary", "out_ordinary", "out_ratio", "first_value", "ablate_zero", "ablate_trigger_mean"):
        assert np.asarray(m[key]).shape == (2, 2)
    # the ratio is the ordinary norm over the trigger norm: both positive, so it divides back
    ordinary, ratio = np.asarray(m["out_ordinary"]), np.asarray(m["out_ratio"])
    assert (ordinary > 0).all() and (ordinary / ratio > 0).all()
    assert m["best_loss"] < m["loss"] and m["best_copy_loss"] == 0 and m["best_other_loss"] > 0


def test_sink_rows_are_the_queries_with_most_weight_on_token_0():
    from attnsink.lm import sink_rows

    w = torch.zeros(2, 1, 4, 4)
    w[:, 0, :, 0] = torch.tensor([1.0, 0.6, 0.5, 0.2])
    rows = sink_rows([w, w], uniform=0.0)
    assert rows.shape == (2, 1, 2, 4)
    assert rows[0, 0, 0].tolist() == [False, True, False, False]  # query 0 never; 0.5 is not more than half
    assert sink_rows([w], at=0.1, uniform=0.0)[0, 0, 0].tolist() == [False, True, True, True]
    # by default a row must also hold twice an even spread's weight on token 0, 2 / (i + 1)
    assert sink_rows([w])[0, 0, 0].tolist() == [False, False, False, False]
    w[:, 0, :, 0] = torch.tensor([1.0, 0.9, 0.7, 0.6])
    assert sink_rows([w])[0, 0, 0].tolist() == [False, False, True, True]
    with pytest.raises(ValueError, match="at"):
        sink_rows([w], at=1.0)
    with pytest.raises(ValueError, match="uniform"):
        sink_rows([w], uniform=-1)


def test_ablate_layers_silences_every_head_of_a_layer_at_once():
    from attnsink.lm.metrics import ablate_heads, ablate_layers

    model = small(seed=6)
    x = TASK.sample(16, seed=4)
    everywhere = torch.ones(16, 23, dtype=torch.bool)
    joint = ablate_layers(model, x, everywhere)
    assert len(joint) == 2
    with torch.no_grad():  # zeroing a layer's output map at every query is the same
        model.blocks[1].out.weight.zero_()
    base = ablate_heads(small(seed=6), x, everywhere)["loss"]
    assert joint[1] == pytest.approx(lm_loss(model.eval(), x).item() - base, abs=1e-5)
    assert ablate_layers(small(seed=6), x, torch.zeros(16, 23, dtype=torch.bool)) == [0.0, 0.0]
    with pytest.raises(ValueError, match="rows"):
        ablate_layers(model, x, everywhere[:, 1:])


def test_transplant_layer_moves_every_head_of_a_layer_at_once():
    from attnsink.lm import GPT
    from attnsink.lm.metrics import ablate_heads, ablate_layers, transplant_layer

    x = TASK.sample(16, seed=4)
    donor = TASK.trigger_targets(x)
    rows = ~donor
    rows[:, 0] = False
    # with one head per layer, the layer's transplant is that head's, drawn alike
    one = GPT(TASK.vocab_size, seq_len=TASK.seq_len, d_model=16, n_layers=2, n_heads=1, seed=3)
    per_head = ablate_heads(one, x, rows, kinds=("transplant",), donor=donor)["transplant"]
    for layer in range(2):
        assert transplant_layer(one, x, rows, donor, layer) == pytest.approx(float(per_head[layer, 0]), abs=1e-6)
    model = small(seed=6)
    moved = transplant_layer(model, x, rows, donor, 0)
    assert moved != 0  # the heads write something else at triggers
    # scale 0 writes nothing there: the same as zeroing the layer at those queries
    assert transplant_layer(model, x, rows, donor, 0, scale=0.0) == pytest.approx(
        ablate_layers(model, x, rows)[0], abs=1e-6
    )
    assert transplant_layer(model, x, rows, donor, 0, scale=3.0) != pytest.approx(moved, abs=1e-6)
    with pytest.raises(ValueError, match="scale"):
        transplant_layer(model, x, rows, donor, 0, scale=-1.0)
    # a layer whose output map is zero changes nothing, whatever its heads are given
    with torch.no_grad():
        model.blocks[0].out.weight.zero_()
    assert transplant_layer(model, x, rows, donor, 0) == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="donor"):
        transplant_layer(model, x, rows, donor[:, 1:], 0)
    with pytest.raises(ValueError, match="layer"):
        transplant_layer(model, x, rows, donor, 2)
    with pytest.raises(ValueError, match="at least one"):
        transplant_layer(model, x, rows & False, donor, 0)


def test_ablate_heads_computes_the_kinds_asked_for():
    from attnsink.lm.metrics import ablate_heads

    model, x = small(seed=2), TASK.sample(8, seed=1)
    rows = torch.ones(8, 23, dtype=torch.bool)
    some = ablate_heads(model, x, rows, kinds=("zero",))
    assert set(some) == {"loss", "zero"}
    assert torch.equal(some["zero"], ablate_heads(model, x, rows)["zero"])
    with pytest.raises(ValueError, match="kinds"):
        ablate_heads(model, x, rows, kinds=("half",))


def test_learning_rate_warms_up_then_stays_or_falls_along_a_cosine():
    from attnsink.lm.training import learning_rate

    assert [learning_rate(s, 100, 1.0, warmup=4) for s in (1, 2, 4, 5, 100)] == [0.25, 0.5, 1.0, 1.0, 1.0]
    cos = [learning_rate(s, 104, 1.0, warmup=4, schedule="cosine") for s in (4, 54, 104)]
    assert cos[0] == 1.0 and cos[1] == pytest.approx(0.55) and cos[2] == pytest.approx(0.1)
    falling = [learning_rate(s, 104, 1.0, warmup=4, schedule="cosine") for s in range(4, 105)]
    assert all(a >= b for a, b in zip(falling, falling[1:]))


def test_a_schedule_changes_training_and_its_absence_keeps_the_old_recipe():
    task = BigramBackcopy(vocab_size=8, n_triggers=2, seq_len=12)

    def run(**kw):
        model = GPT(task.vocab_size, seq_len=12, d_model=16, n_layers=1, n_heads=2, seed=0)
        return train_lm(model, task, steps=6, lr=3e-3, batch_size=4, every=6, n_val=4, **kw).history["val_loss"][-1]

    plain = run()
    assert run(warmup=0, schedule="constant") == plain  # the defaults are the old recipe exactly
    assert run(warmup=3, schedule="cosine") != plain
    for kw, name in (({"warmup": 6}, "warmup"), ({"warmup": -1}, "warmup"), ({"schedule": "linear"}, "schedule")):
        with pytest.raises(ValueError, match=name):
            run(**kw)


def test_python_source_is_the_carried_standard_library_and_can_be_cut():
    import hashlib

    from attnsink.lm import PythonSource, data, source_corpus

    text = source_corpus()
    assert hashlib.sha256(text.encode()).hexdigest() == data.SOURCE_SHA256
    assert len(text) == 4_698_447 and "def " in text and "import" in text
    full, cut = PythonSource(seq_len=32), PythonSource(seq_len=32, train_chars=10_000)
    assert full.vocab_size == cut.vocab_size == len(set(text))
    ids = data._encoded_source()[0]
    x = cut.sample(200, seed=1)
    assert (x[:, 0] == cut.bos_id).all()
    # every training window of the cut task lies in the first 10,000 characters
    head = ids[:10_000].tolist()
    windows = {tuple(head[i : i + 31]) for i in range(10_000 - 31 + 1)}
    assert all(tuple(row) in windows for row in x[:, 1:].tolist())
    assert torch.equal(cut.sample(8, seed=0, split="val"), full.sample(8, seed=0, split="val"))  # same held-out end
    for kw in ({"train_chars": 10}, {"train_chars": len(text)}):
        with pytest.raises(ValueError, match="train_chars"):
            PythonSource(seq_len=32, **kw)


def test_python_sample_spreads_its_characters_over_the_whole_training_part():
    from attnsink.lm import PythonSample, PythonSource, data

    ids = data._encoded_source()[0]
    task = PythonSample(seq_len=32, train_chars=20_000, pieces=10)
    train = ids[: int(len(ids) * (1 - task.val_fraction))]
    starts = task.piece_starts(len(train))
    assert starts[0] == 0 and starts[-1] == len(train) - 2_000 and len(starts) == 10
    assert all(b - a > 2_000 for a, b in zip(starts, starts[1:]))  # apart, not overlapping
    part = task._train_part(train)
    assert len(part) == 20_000 and torch.equal(part[-2_000:], train[-2_000:])
    # every training window lies in the joined stretches; validation is PythonSource's
    x = task.sample(300, seed=3)
    joined = part.tolist()
    windows = {tuple(joined[i : i + 31]) for i in range(len(joined) - 31 + 1)}
    assert all(tuple(row) in windows for row in x[:, 1:].tolist())
    assert torch.equal(task.sample(8, seed=0, split="val"), PythonSource(seq_len=32).sample(8, seed=0, split="val"))
    assert lm_task_name(task) != lm_task_name(PythonSource(seq_len=32, train_chars=20_000))
    for kw, name in (
        ({"train_chars": None}, "train_chars"),
        ({"pieces": 0}, "pieces"),
        ({"train_chars": 640, "pieces": 40}, "pieces"),
    ):
        with pytest.raises(ValueError, match=name):
            PythonSample(seq_len=32, **kw)


def lm_task_name(task) -> str:
    from attnsink.lm import task_config

    return json.dumps(task_config(task), sort_keys=True)


def test_text_scale_experiment_records_what_its_heads_write_and_reuses_the_cache(tmp_path, monkeypatch):
    from attnsink import profiles
    from attnsink.experiments import text, text_scale

    monkeypatch.setitem(profiles.TEXT_SCALE, "quick", profiles.Settings(seeds=1, steps=20, lr=3e-3, batch_size=4))
    monkeypatch.setattr(text, "TEXT_EVERY", 10)
    result = text_scale("quick", cache_dir=tmp_path / "c")
    layers, heads = profiles.TEXT_MODEL["n_layers"], profiles.TEXT_MODEL["n_heads"]
    assert len(result.runs) == len(profiles.SCALE_CHARS)
    for r in result.runs:
        assert np.asarray(r["first_mean"]).shape == (layers, heads)
        assert np.asarray(r["ablate_zero"]).shape == (layers, heads) and len(r["heads"]) == layers * heads
        assert "sink" in r and r["history"]["step"][-1] == 20

    def refuse(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr("attnsink.lm.training.train_lm", refuse)
    monkeypatch.setattr("attnsink.lm.ablate_heads", refuse)  # the analysis is kept too
    again = text_scale("quick", cache_dir=tmp_path / "c")
    assert as_written(again.runs) == as_written(result.runs)


def test_text_decay_experiment_varies_the_weight_decay_and_shares_text_lms_runs(tmp_path, monkeypatch):
    from attnsink import profiles
    from attnsink.analysis import sink_history_frame
    from attnsink.experiments import text, text_decay, text_lm

    tiny = profiles.Settings(seeds=1, steps=20, lr=profiles.TEXT_LRS[1], batch_size=4)
    monkeypatch.setitem(profiles.TEXT, "quick", tiny)
    monkeypatch.setitem(profiles.TEXT_DECAY, "quick", tiny)
    monkeypatch.setattr(text, "TEXT_EVERY", 10)
    cache = tmp_path / "c"
    text_lm("quick", cache_dir=cache, workers=1)
    before = {p.name for p in cache.rglob("*.pt")}
    result = text_decay("quick", cache_dir=cache, workers=1)
    new = {p.name for p in cache.rglob("*.pt")} - before
    # text_lm's runs at its weight decay and this rate are these runs (and their analyses): only
    # the other decays train, each model kept with its analysis
    assert len(new) == 2 * (len(profiles.DECAY_RATES) - 1) * len(profiles.TEXT_RULES)
    assert [(r["attention"], r["weight_decay"]) for r in result.runs] == [
        (rule, wd) for wd in profiles.DECAY_RATES for rule in profiles.TEXT_RULES
    ]
    layers, heads = profiles.TEXT_MODEL["n_layers"], profiles.TEXT_MODEL["n_heads"]
    for r in result.runs:
        assert r["lr"] == profiles.TEXT_LRS[1] and np.asarray(r["first_mean"]).shape == (layers, heads)
        assert np.asarray(r["ablate_zero"]).shape == (layers, heads) and r["history"]["step"] == [10, 20]
    # the models differ with the weight decay, so the records do too
    assert len({round(r["val_loss"], 6) for r in result.runs}) == len(result.runs)
    panels = set(sink_history_frame(result.runs)["panel"])
    assert panels == {
        f"{rule}, lr {tiny.lr:g}, wd {wd:g}" for wd in profiles.DECAY_RATES for rule in profiles.TEXT_RULES
    }


def test_text_control_trains_both_rules_on_the_python_source_at_its_weight_decay(tmp_path, monkeypatch):
    from attnsink import lm, profiles
    from attnsink.analysis import text_heads_frame
    from attnsink.experiments import text, text_control
    from attnsink.experiments.text import scale_recipe

    tiny = profiles.Settings(seeds=2, steps=20, lr=1e-2, batch_size=4)
    monkeypatch.setitem(profiles.TEXT_CONTROL, "quick", tiny)
    monkeypatch.setattr(text, "TEXT_EVERY", 10)
    result = text_control("quick", cache_dir=tmp_path / "c", workers=1)
    assert [(r["attention"], r["seed"]) for r in result.runs] == [
        (rule, seed) for rule in profiles.TEXT_RULES for seed in range(tiny.seeds)
    ]
    assert result.meta["recipe"] == scale_recipe(tiny, profiles.CONTROL_WEIGHT_DECAY).given()
    assert result.meta["recipe"]["weight_decay"] == 0.5 and result.meta["recipe"]["schedule"] == "cosine"
    assert isinstance(result.results["softmax"][0], lm.GPT) and len(result.results["relu"]) == tiny.seeds
    layers, heads = profiles.TEXT_MODEL["n_layers"], profiles.TEXT_MODEL["n_heads"]
    frame = text_heads_frame(result.runs)  # the records are text_lm's, so its tools read them
    assert len(frame) == len(result.runs) * layers * heads
    assert set(frame["weight_decay"]) == {profiles.CONTROL_WEIGHT_DECAY}
    for r in result.runs:
        assert r["history"]["step"] == [10, 20] and np.asarray(r["ablate_zero"]).shape == (layers, heads)
    assert len({round(r["val_loss"], 6) for r in result.runs}) == len(result.runs)  # seeds and rules differ


def test_tiles_cover_the_held_out_text_once_in_order():
    from attnsink.lm import CharText, PythonSource

    for task in (CharText(seq_len=16), CharText(seq_len=16, bos=False), PythonSource(seq_len=32, val_fraction=0.01)):
        data, _ = task.encoded()
        held = data[int(len(data) * (1 - task.val_fraction)) :]
        x = task.tiles("val")
        width = task.seq_len - task.bos
        assert x.shape == (len(held) // width, task.seq_len) and x.dtype == torch.int64
        text = x[:, 1:] if task.bos else x
        assert torch.equal(text.reshape(-1), held[: len(x) * width])  # every character once, in order
        if task.bos:
            assert (x[:, 0] == task.bos_id).all()
    with pytest.raises(ValueError, match="split"):
        CharText().tiles("test")


def test_window_losses_average_to_lm_loss_and_reject_bad_input():
    from attnsink.lm import GPT, CharText, lm_loss, window_losses

    task = CharText(seq_len=16)
    torch.manual_seed(0)
    model = GPT(vocab_size=task.vocab_size, seq_len=task.seq_len, d_model=16, n_layers=1, n_heads=2)
    x = task.tiles("val")[:50]
    losses = window_losses(model, x, batch=7)  # batches that do not divide the windows
    assert losses.shape == (50,) and losses.dtype == torch.float64
    assert losses.mean().item() == pytest.approx(lm_loss(model, x).item(), rel=1e-5)
    assert losses[3].item() == pytest.approx(lm_loss(model, x[3:4]).item(), rel=1e-5)
    with pytest.raises(ValueError, match="batch"):
        window_losses(model, x, batch=0)
    with pytest.raises(ValueError, match="x must be"):
        window_losses(model, x[:, :1])


def test_training_health_tells_a_collapsed_model_from_one_that_spreads():
    """Rows on one key have zero entropy; an even spread has ln(keys seen); a head with no
    weight anywhere (ReLU with its query map zero) is not counted."""
    from attnsink.lm.metrics import COLLAPSE_NATS, HEALTH_QUERY, training_health

    x = torch.randint(0, 10, (4, 15))
    model = small(attention="softmax", vocab=10, seq_len=16)
    d = model.config["d_model"]
    with torch.no_grad():
        for b in model.blocks:
            b.qkv.weight[: 2 * d] = 0  # scores all zero: every row uniform
    h = training_health(model, x)
    uniform = np.mean([np.log(i + 1) for i in range(HEALTH_QUERY, 15)])
    assert np.allclose(h["entropy"], uniform, atol=1e-4) and not h["collapsed"] and h["collapsed_share"] == 0
    assert np.allclose(h["query_norm"], 0)
    with torch.no_grad():  # huge logits: every row on one key (its own, mostly)
        for b in model.blocks:
            b.qkv.weight[:d] = torch.eye(d) * 10
            b.qkv.weight[d : 2 * d] = torch.eye(d) * 10
    h = training_health(model, x)
    assert h["collapsed"] and h["collapsed_share"] >= 0.5 and min(map(min, h["entropy"])) < COLLAPSE_NATS
    relu = small(attention="relu", vocab=10, seq_len=16)
    with torch.no_grad():
        relu.blocks[0].qkv.weight[:d] = 0  # layer 0 off everywhere
    h = training_health(relu, x)
    assert all(np.isnan(h["entropy"][0])) and not np.isnan(h["entropy"][1]).any()
    with pytest.raises(ValueError, match="more than"):
        training_health(model, x[:, :HEALTH_QUERY])


def test_context_heads_reads_near_and_far_queries_and_what_each_head_writes():
    from attnsink.experiments.text_context import context_heads

    torch.manual_seed(0)
    model = small(seq_len=16)
    windows = TASK.sample(8, seed=1)[:, :16]
    out = context_heads(model, windows, near=6)
    first = head_metrics(model, windows[:, :-1])["first_mass"]  # (layers, heads, query)
    assert np.allclose(out["first_near"], first[:, :, 1:6].mean(-1).numpy(), atol=1e-6)
    assert np.allclose(out["first_mean"], head_metrics(model, windows[:, :-1])["first_mean"].numpy(), atol=1e-6)
    for key in ("ablate_zero", "ablate_mean", "ablate_first", "sink_rows", "value_ratio"):
        assert np.asarray(out[key]).shape == (2, 2), key
    rows = np.asarray(out["sink_rows"])
    assert ((rows >= 0) & (rows <= 1)).all()
    # a head with no sink rows is not read: what it writes there is unmeasured (NaN)
    z = np.asarray(out["ablate_zero"])
    assert np.isnan(z[rows == 0]).all() and not np.isnan(z[rows > 0]).any()


def test_a_gpt_recipe_is_typed_and_keeps_the_keys_of_the_stored_models():
    from attnsink.lm import GPTSpec, LMRecipe
    from attnsink.lm.data import task_config

    arch = {"vocab_size": 16, "seq_len": 24, "d_model": 32, "n_layers": 2, "n_heads": 2, "attention": "softmax"}
    typed = GPTSpec(TASK, arch, LMRecipe(steps=10, lr=0.003, batch_size=8))
    from_dict = GPTSpec(TASK, arch, {"steps": 10, "lr": 0.003, "batch_size": 8})
    assert from_dict.recipe == typed.recipe and from_dict.config(3) == typed.config(3)
    # the key is exactly the one a dict recipe gave before the type: the fields given, no None, no stop_linf
    assert typed.config(3) == {
        "kind": "gpt",
        **task_config(TASK),
        **arch,
        "steps": 10,
        "lr": 0.003,
        "batch_size": 8,
        "seed": 3,
    }
    assert typed.options()["recipe"] == {"steps": 10, "lr": 0.003, "batch_size": 8}
    assert LMRecipe(steps=5, schedule="cosine", warmup=1).given() == {"steps": 5, "warmup": 1, "schedule": "cosine"}
    for recipe, match in (
        ({"lr": 0.003}, "steps at least"),
        ({"steps": 10, "stop_linf": 0.005}, "recipe takes"),
        (7, "recipe must be an LMRecipe"),
    ):
        with pytest.raises(ValueError, match=match):
            GPTSpec(TASK, arch, recipe)
    with pytest.raises(ValueError, match="steps"):
        LMRecipe(steps=0)
    with pytest.raises(ValueError, match="arch with exactly"):
        GPTSpec(TASK, {**arch, "mlp": True}, typed.recipe)
