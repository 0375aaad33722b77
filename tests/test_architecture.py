"""The library's shape: arrows one way (lazy imports included), no cycles, no giant file."""

import ast
from pathlib import Path

import attnsink
from attnsink.registry import REGISTRY

LIB = Path(attnsink.__file__).parent

# lower layers first; a module may import only modules of a strictly lower layer
LAYERS = [
    ["_checks", "prose", "codehash", "registry"],
    ["attention", "task", "lm.data"],
    ["spec"],
    ["model", "lm.model"],
    ["metrics", "theory", "construct", "training"],
    ["engine", "lm.metrics"],
    ["lm.training"],
    ["lm", "cache", "profiles"],
    ["cluster"],
    ["parallel"],
    ["analysis"],
    ["plots.style"],
    ["plots.maps", "plots.trigger", "plots.language", "plots.grid"],
    ["plots"],
    ["experiments.base"],
    ["experiments.text", "experiments.grid"],  # what the text experiments share; the sweep-spec runner
    [f"experiments.{e.name}" for e in REGISTRY],  # one module per experiment, none imports another
    ["experiments"],
    ["stored"],
    ["book"],  # what the chapters call first (it reads the store's status)
    ["claims.base", "claims.bounds"],  # what a claim is; how the text states a bound
    [
        f"claims.{p.stem}" for p in sorted((LIB / "claims").glob("ch[0-9]*.py"))
    ],  # each chapter's claims, none imports another
    ["claims"],  # the chapters' claims checked, their numbers glued through book
    ["__main__"],
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}
PACKAGE_INIT_MAX = RANK["profiles"]  # attnsink/__init__ imports only the lower layers


def module_name(path: Path) -> str:
    parts = path.relative_to(LIB).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "__init__"


def imports(path: Path) -> set[str]:
    """The attnsink modules ``path`` imports, anywhere in the file (functions included)."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" and name != "__init__" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module and node.module.startswith("attnsink"):
                    base = node.module.split(".")[1:]
                else:
                    continue
            else:
                base = package[: len(package) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            target = ".".join(base)
            for alias in node.names:  # "from . import plots" imports the module plots
                full = f"{target}.{alias.name}" if target else alias.name
                found.add(full if full in RANK else target or "__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("attnsink."):
                    found.add(alias.name.split(".", 1)[1])
                elif alias.name == "attnsink":
                    found.add("__init__")
    return found - {name}


MODULES = {module_name(p): p for p in LIB.rglob("*.py")}


def test_every_module_has_a_layer():
    assert set(MODULES) - {"__init__"} == set(RANK)


def test_arrows_point_down():
    for name, path in MODULES.items():
        limit = PACKAGE_INIT_MAX + 1 if name == "__init__" else RANK[name]
        for target in imports(path):
            assert target in RANK, f"{name} imports {target}, which has no layer"
            assert RANK[target] < limit, f"{name} imports {target}: an arrow upward (or sideways)"


def test_no_import_cycle():
    graph = {name: imports(path) for name, path in MODULES.items()}
    state = {}

    def visit(node, trail):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", f"import cycle: {' -> '.join(trail + [node])}"
        state[node] = "open"
        for nxt in graph.get(node, ()):
            visit(nxt, trail + [node])
        state[node] = "done"

    for name in graph:
        visit(name, [])


def test_the_check_has_teeth(tmp_path):
    bad = tmp_path / "attnsink"
    bad.mkdir()
    (bad / "model.py").write_text("def f():\n    from .experiments import single_layer\n")
    global LIB
    saved, LIB = LIB, bad
    try:
        (target,) = imports(bad / "model.py")
        assert target.startswith("experiments") and RANK[target] > RANK["model"]
    finally:
        LIB = saved


def test_no_file_above_15_percent_of_the_library():
    lines = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    total = sum(lines.values())
    biggest = max(lines, key=lines.get)
    assert lines[biggest] <= 0.15 * total, f"{biggest}: {lines[biggest]} of {total} lines"


def test_package_exports_are_the_lazy_table():
    assert sorted(attnsink.__all__) == sorted(attnsink._EXPORTS)
    for name in attnsink.__all__:
        assert getattr(attnsink, name) is getattr(
            __import__(f"attnsink.{attnsink._EXPORTS[name]}", fromlist=[name]), name
        )


def test_train_is_the_function_and_the_loop_lives_in_training():
    """No module shares a name with an export: ``attnsink.train`` is the plain training loop,
    the function, whatever has been imported before (it lives in ``attnsink.training``)."""
    import importlib

    importlib.import_module("attnsink.training")
    from attnsink import train
    from attnsink.training import train as loop

    assert train is loop and callable(attnsink.train) and attnsink.train is loop
    exported = set(attnsink.__all__)
    assert not exported & {name for name in MODULES if "." not in name}, "an export shares a module's name"


def test_no_function_is_longer_than_80_lines():
    """A function that does not fit on a screen and a half is several functions."""
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 80:
                    long.append(f"{name}.{node.name}: {n} lines")
    assert not long, long


def test_no_forward_pass_compares_rule_names():
    """Each attention rule is one attention.Rule record; the forward passes ask it, not its name."""
    for name in ("model", "engine", "lm.model"):
        source = MODULES[name].read_text()
        for rule in ("sink_logit", "gated", "softmax", "relu"):
            assert f'== "{rule}"' not in source and f"== '{rule}'" not in source, (name, rule)
