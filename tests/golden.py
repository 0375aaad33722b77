"""The golden numbers of the training code: short runs over every code path that trains a
stored model, whose results ``tests/golden_training.json`` keeps.

The results store (``store/``) keys a model by its config and a declared training version
(``attnsink.cache.TRAINING_VERSIONS``), not by the source: so that a refactor keeps the
store, these runs pin what the training code computes. ``tests/test_golden.py`` reruns them
and compares; a change that moves a number fails there until the version of its kind is
bumped (which marks that kind's stored models stale) and the file is rewritten:

    python tests/golden.py --write

Every run is on the CPU with the thread count given (the test runs 1 and 2 threads: the
numbers must not depend on it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from attnsink import TriggerTask, lm
from attnsink.attention import ATTENTION_RULES
from attnsink.cache import RULE_VERSIONS, TRAINING_VERSIONS
from attnsink.engine import train_seeds
from attnsink.model import AttentionModel
from attnsink.training import train

FILE = Path(__file__).with_name("golden_training.json")
RTOL, ATOL = 1e-4, 1e-7
"""How close a rerun must come. Measured: 1 and 2 threads give identical numbers on the
machine that wrote the file; the tolerance leaves room for another processor's last bits
over 30 steps, and is far below what a changed constant moves (the test on a copy shows it)."""

ONE_LAYER = sorted(ATTENTION_RULES) + ["softmax_cap0.5"]
RECIPE = {"steps": 30, "lr": 1e-2, "batch_size": 32, "stop_linf": None, "progress": False}
SMALL = TriggerTask(d_model=8, seq_len=8)


def _summary(results) -> list[dict]:
    out = []
    for r in results:
        out.append(
            {
                "steps": int(r.steps),
                "stopped_early": bool(r.stopped_early),
                "loss": [float(r.history["loss"][i]) for i in (0, len(r.history["loss"]) // 2, -1)],
                "bos_mass": float(r.history["bos_mass"][-1].mean()),
                "params": {k: float(v.abs().sum()) for k, v in sorted(r.model.state_dict().items())},
            }
        )
    return out


def trigger_runs() -> dict[str, list[dict]]:
    """The trigger-task trainers: every rule, with and without BOS, residual stacks with MLP
    and LayerNorm, the stopping rule, and the plain loop."""
    runs = {}
    for rule in ONE_LAYER:
        runs[f"one_layer/{rule}"] = _summary(train_seeds(SMALL, [0, 1], attention=rule, **RECIPE))
    no_bos = TriggerTask(d_model=8, seq_len=8, bos=False)
    for rule in ("softmax", "relu", "sigmoid"):
        runs[f"no_bos/{rule}"] = _summary(train_seeds(no_bos, [0], attention=rule, **RECIPE))
    deep = TriggerTask(d_model=8, seq_len=8, residual=True)
    for rule in ("softmax", "relu"):
        trained = train_seeds(deep, [0, 1], attention=rule, n_layers=2, n_heads=2, **RECIPE)
        runs[f"residual_2x2/{rule}"] = _summary(trained)
    blocks = {"mlp": {"mlp": True}, "layer_norm": {"layer_norm": True}, "both": {"mlp": True, "layer_norm": True}}
    for name, arch in blocks.items():
        runs[f"blocks/{name}"] = _summary(train_seeds(deep, [0], n_layers=2, n_heads=2, **arch, **RECIPE))
    paper = TriggerTask()  # the paper's one-layer setting, to its stopping rule
    trained = train_seeds(paper, [0], attention="relu", steps=3000, lr=1e-3, progress=False)
    runs["stopping_rule/relu"] = _summary(trained)
    model = AttentionModel(8, attention="softmax", seed=0)
    runs["plain/softmax"] = _summary([train(model, SMALL, seed=0, **RECIPE)])
    return runs


def gpt_runs() -> dict[str, list[dict]]:
    """The language models' trainer: every rule on Bigram-Backcopy, and English text."""
    runs = {}
    task = lm.BigramBackcopy(vocab_size=8, n_triggers=2, seq_len=12)
    for rule in ("softmax", "relu", "softmax1", "sigmoid"):
        model = lm.GPT(task.vocab_size, seq_len=task.seq_len, d_model=16, n_layers=2, n_heads=2, attention=rule, seed=0)
        r = lm.train_lm(model, task, steps=20, lr=3e-3, batch_size=8, every=10, n_val=16, seed=0)
        runs[f"backcopy/{rule}"] = [_gpt_summary(r)]
    text = lm.CharText(seq_len=16)
    model = lm.GPT(text.vocab_size, seq_len=text.seq_len, d_model=16, n_layers=1, n_heads=2, seed=0)
    r = lm.train_lm(model, text, steps=10, lr=3e-3, batch_size=4, weight_decay=0.1, every=5, n_val=8, seed=0)
    runs["text/softmax"] = [_gpt_summary(r)]
    return runs


def _gpt_summary(r) -> dict:
    return {
        "loss": [float(v) for v in r.history["loss"]],
        "val_loss": [float(v) for v in r.history["val_loss"]],
        "sink": [float(v) for v in r.history["sink"]],
        "params": {k: float(v.abs().sum()) for k, v in sorted(r.model.state_dict().items())},
    }


KINDS = ("train_seeds", "gpt")


def compute(threads: int = 1, kinds: tuple[str, ...] = KINDS) -> dict:
    """The golden runs of ``kinds``, the trigger task's with ``threads`` CPU threads and the
    GPTs' with one (as the experiments train them on a CPU: their sums' order, so their last
    bits, depend on the thread count): ``{"versions": ..., "train_seeds": ..., "gpt": ...}``."""
    saved = torch.get_num_threads()
    out = {"versions": dict(TRAINING_VERSIONS), "rule_versions": rule_versions()}
    try:
        if "train_seeds" in kinds:
            torch.set_num_threads(threads)
            out["train_seeds"] = trigger_runs()
        if "gpt" in kinds:
            torch.set_num_threads(1)
            out["gpt"] = gpt_runs()
    finally:
        torch.set_num_threads(saved)
    return out


def rule_versions() -> dict[str, int]:
    """:data:`attnsink.cache.RULE_VERSIONS` as the file keeps it: ``{"kind/rule": version}``."""
    return {f"{kind}/{rule}": v for (kind, rule), v in sorted(RULE_VERSIONS.items())}


def rule_of(run: str) -> str | None:
    """The attention rule a golden run trains (the last part of its name), None when the name
    does not say (the runs of ``blocks/``)."""
    rule = run.rsplit("/", 1)[-1]
    return rule if rule in ATTENTION_RULES or rule.startswith("softmax_cap") else None


def advice(expected: dict, got: dict, *, rtol: float = RTOL, atol: float = ATOL) -> dict[str, str]:
    """Per kind whose golden runs differ, what to do, in one message: add the new runs (a new
    configuration: no version, nothing stale), or bump the version of the one rule whose runs
    moved, or the kind's when runs of several rules (or of no single rule) moved."""
    out = {}
    for kind in (k for k in KINDS if k in got):
        old, new = expected.get(kind, {}), got[kind]
        added, gone = sorted(set(new) - set(old)), sorted(set(old) - set(new))
        moved = {run: bad for run in sorted(set(old) & set(new)) if (bad := _walk(old[run], new[run], run, rtol, atol))}
        lines = []
        if moved:
            rules = {rule_of(run) for run in moved}
            what = f"{len(moved)} golden runs moved ({', '.join(moved)}; e.g. {next(iter(moved.values()))[0]}): "
            if len(rules) == 1 and None not in rules:
                (rule,) = rules
                version = RULE_VERSIONS.get((kind, rule), 1) + 1
                lines.append(
                    what + f"only {rule}'s numbers moved: set attnsink.cache.RULE_VERSIONS[({kind!r}, {rule!r})] = "
                    f"{version} (only {rule}'s stored {kind} models go stale) and run `python tests/golden.py --write`"
                )
            else:
                lines.append(
                    what + f"bump attnsink.cache.TRAINING_VERSIONS[{kind!r}] (every stored {kind} model goes stale) "
                    "and run `python tests/golden.py --write`"
                )
        if added:
            lines.append(
                f"{len(added)} new golden runs ({', '.join(added)}): a new configuration, nothing stored moves: "
                "add them with `python tests/golden.py --add` (no version changes, nothing goes stale)"
            )
        if gone:
            lines.append(f"golden runs no longer made ({', '.join(gone)}): if meant, `python tests/golden.py --write`")
        if lines:
            out[kind] = "; ".join(lines)
    return out


def differences(
    expected: dict, got: dict, *, rtol: float = RTOL, atol: float = ATOL, only_shared: bool = False
) -> dict[str, list[str]]:
    """Per kind (``train_seeds``, ``gpt``), the numbers of ``got`` that differ from ``expected``
    (``only_shared``: of the runs both have, leaving out added and removed runs)."""
    out = {}
    for kind in (k for k in KINDS if k in got):
        a, b = expected[kind], got[kind]
        if only_shared:
            a, b = ({k: d[k] for k in set(a) & set(b)} for d in (a, b))
        out[kind] = _walk(a, b, kind, rtol, atol)
    return out


def _walk(a, b, where: str, rtol: float, atol: float) -> list[str]:
    if isinstance(a, dict):
        bad = [f"{where}: keys {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
        return bad + [x for k in sorted(set(a) & set(b)) for x in _walk(a[k], b[k], f"{where}/{k}", rtol, atol)]
    if isinstance(a, list):
        bad = [f"{where}: length {len(a)} != {len(b)}"] if len(a) != len(b) else []
        return bad + [x for i, (p, q) in enumerate(zip(a, b)) for x in _walk(p, q, f"{where}[{i}]", rtol, atol)]
    if isinstance(a, (bool, int)):
        return [] if a == b else [f"{where}: {a} != {b}"]
    return [] if abs(a - b) <= atol + rtol * abs(a) else [f"{where}: {a!r} != {b!r}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {FILE.name}")
    parser.add_argument(
        "--add", action="store_true", help=f"add the golden runs {FILE.name} lacks; refused if any other run moved"
    )
    parser.add_argument("--check", action="store_true", help=f"compare with {FILE.name}; exit 1 on a difference")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", choices=KINDS, default=None, help="run the golden runs of one kind")
    args = parser.parse_args(argv)
    if (args.write or args.add) and args.only:
        parser.error("--write and --add read every kind: not with --only")
    if args.write and args.add:
        parser.error("--write rewrites the file, --add adds to it: one of them")
    got = compute(args.threads, (args.only,) if args.only else KINDS)
    if args.add:
        expected = json.loads(FILE.read_text())
        moved = {k: v for k, v in differences(expected, got, only_shared=True).items() if v}
        if moved or expected["versions"] != got["versions"]:
            print("error: numbers moved or versions changed; --add only adds runs:", advice(expected, got))
            return 1
        for kind in KINDS:
            expected[kind] = {**got[kind], **expected[kind]}
        FILE.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
        print(f"added to {FILE}")
        return 0
    if args.write:
        FILE.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {FILE}")
        return 0
    expected = json.loads(FILE.read_text())
    diff = differences(expected, got)
    for kind, bad in diff.items():
        print(f"{kind}: {len(bad)} numbers differ" + "".join(f"\n  {b}" for b in bad[:5]))
    for kind, message in advice(expected, got).items():
        print(f"{kind}: {message}")
    return 1 if args.check and any(diff.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
