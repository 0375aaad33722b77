"""What a memoized analysis computes from, as a hash: the key that keeps a stored analysis in
place until a number it returns could move.

:func:`function_code` hashes a function's own code and every definition of the package it
reaches by name, transitively, across modules: a name defined in its module, a name imported
from another module of the package (``from .metrics import sink_rate``), or a module's
attribute (``lm.sink_rows`` after ``from .. import lm``). A definition counts whole (a class
with all its methods); a module used other than through one of its names counts whole; in
every module reached, the top-level statements that bind no name count too (they run on
import). Code is compared as its syntax tree with docstrings and bare strings removed, so
comments, docstrings and formatting change nothing, and neither does an edit to a definition
the function does not reach (another analysis, the figures, the command line). The tree is
written out by :func:`canonical`, field by field with empty fields left out, so that the hash
is the same on every Python from 3.10 on (``ast.dump``'s text is not: 3.13 changed it).

What it cannot see: code reached only through a string (``importlib.import_module``,
``getattr`` by name) or through an object handed in from outside the package. The library's
analyses reach their code by name; ``tests/test_store.py`` edits a copy of the library to
show which edits set which analyses aside.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from functools import cache
from pathlib import Path

_SKIP_FIELDS = {"ctx", "type_comment", "kind"}  # no bearing on what the code computes


def canonical(node) -> str:
    """A syntax tree as text: node types and their non-empty fields, in order."""
    if isinstance(node, ast.AST):
        parts = []
        for name in node._fields:
            if name in _SKIP_FIELDS:
                continue
            value = getattr(node, name, None)
            if value is None or (isinstance(value, list) and not value):
                continue
            parts.append(f"{name}={canonical(value)}")
        return f"{type(node).__name__}({','.join(parts)})"
    if isinstance(node, list):
        return "[" + ",".join(canonical(v) for v in node) + "]"
    return f"{type(node).__name__}:{node!r}"


def _strip_strings(tree: ast.AST) -> ast.AST:
    """``tree`` without its bare string statements (docstrings, attribute notes)."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body:
                kept = [
                    s
                    for s in body
                    if not (
                        isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
                    )
                ]
                setattr(node, name, kept or [ast.Pass()])
    return tree


class Package:
    """The modules of one package on disk (``root``: its folder, ``name``: its import name)."""

    def __init__(self, root: str | Path, name: str):
        self.root, self.name = Path(root), name
        self._trees: dict[str, ast.Module] = {}
        self._indexes: dict[str, _Index] = {}

    def path(self, module: str) -> Path | None:
        """The file of ``module`` (a dotted name inside the package, "" for the package)."""
        rel = Path(*module.split(".")) if module else Path()
        for p in (self.root / rel / "__init__.py", (self.root / rel).with_suffix(".py")):
            if p.is_file():
                return p
        return None

    def tree(self, module: str) -> ast.Module:
        """``module``'s syntax tree without its bare strings (read afresh on each call)."""
        return _strip_strings(ast.parse(self.path(module).read_text()))

    def _index(self, module: str) -> _Index:
        if module not in self._indexes:
            self._indexes[module] = _Index(self, module)
        return self._indexes[module]

    def _is_package(self, module: str) -> bool:
        return (self.root / Path(*module.split("."))).joinpath("__init__.py").is_file() if module else True

    def refs(self, module: str, node: ast.Import | ast.ImportFrom) -> dict[str, tuple[str, str | None]]:
        """What each name an import statement in ``module`` binds refers to inside the package:
        ``(other_module, name)`` for a definition, ``(other_module, None)`` for a whole module.
        Names from outside the package are left out."""
        found: dict[str, tuple[str, str | None]] = {}
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == self.name and self.path(".".join(parts[1:])) is not None:
                    found[alias.asname or parts[0]] = (".".join(parts[1:]), None)
            return found
        here = module.split(".") if self._is_package(module) else module.split(".")[:-1]
        here = [p for p in here if p]
        if node.level:
            base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            target = base + (node.module.split(".") if node.module else [])
        elif node.module and node.module.split(".")[0] == self.name:
            target = node.module.split(".")[1:]
        else:
            return found
        source = ".".join(target)
        if self.path(source) is None:
            return found
        for alias in node.names:
            sub = ".".join([*target, alias.name])
            if alias.name == "*":
                found.update({n: (source, n) for n in self._index(source).top if not n.startswith("_")})
            elif self.path(sub) is not None:  # ``from . import metrics``: a module, not a name
                found[alias.asname or alias.name] = (sub, None)
            else:
                found[alias.asname or alias.name] = (source, alias.name)
        return found

    def function_code(self, module: str, qualname: str) -> str:
        """The hash of what ``module.qualname`` computes from (see the module's docstring)."""
        h = hashlib.sha256()
        for m, stmts in sorted(self.function_deps(module, qualname).items()):
            h.update(m.encode() + b"\0")
            for stmt in stmts:
                h.update(canonical(stmt).encode() + b"\0")
        return h.hexdigest()[:16]

    def function_deps(self, module: str, qualname: str) -> dict[str, list[ast.stmt]]:
        """What ``module.qualname`` computes from, by module: the top-level statements it
        names, transitively through the package's modules (a definition counts whole, a
        module used other than through ``module.name`` counts whole), and in each module it
        reaches, the statements that bind no name (they run on import)."""
        self._indexes.clear()  # read the files afresh: they may have changed since the last call
        first = qualname.split(".")[0]
        if first not in self._index(module).top:
            raise ValueError(f"qualname {qualname!r} is not defined at the top of {self.name}.{module}")
        todo: list[tuple[str, str | None]] = [(module, first)]
        seen: set[tuple[str, str | None]] = set()
        kept: dict[str, dict[int, ast.stmt]] = {}

        def keep(m: str, stmt: ast.stmt) -> None:
            if id(stmt) in kept.setdefault(m, {}):
                return
            kept[m][id(stmt)] = stmt
            index, local = self._index(m), {}
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    local.update(self.refs(m, node))
            bases = set()
            for node in ast.walk(stmt):  # ``metrics.sink_rate``: that definition, not the module
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    ref = local.get(node.value.id) or index.imports.get(node.value.id)
                    if ref is not None and ref[1] is None:
                        todo.append((ref[0], node.attr))
                        bases.add(id(node.value))
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and id(node) not in bases:
                    ref = local.get(node.id)
                    todo.append(ref if ref is not None else (m, node.id))
            todo.extend(ref for ref in local.values() if ref[1] is not None)

        while todo:
            m, name = todo.pop()
            if (m, name) in seen:
                continue
            seen.add((m, name))
            index = self._index(m)
            if m not in kept:
                kept[m] = {}
                for stmt in index.free:
                    keep(m, stmt)
            if name is None:  # a whole module
                todo.extend((m, n) for n in index.top)
                continue
            if name not in index.top:
                sub = f"{m}.{name}" if m else name
                if self.path(sub) is not None:  # ``attnsink.lm``'s submodule, as an attribute
                    todo.append((sub, None))
                continue  # a builtin, a local variable or an outside name
            if name in index.imports:  # imported at the top: follow it to its definition
                todo.append(index.imports[name])
                continue
            for stmt in index.top[name]:
                if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    keep(m, stmt)
        return {m: sorted(stmts.values(), key=lambda s: s.lineno) for m, stmts in kept.items() if stmts}


class _Index:
    """One module's top level: the statements that bind each name, those that bind none (they
    run whenever the module is imported), and what each name imported at the top refers to."""

    def __init__(self, package: Package, module: str):
        self.top: dict[str, list[ast.stmt]] = {}
        self.free: list[ast.stmt] = []
        self.imports: dict[str, tuple[str, str | None]] = {}
        for stmt in package.tree(module).body:
            names = _bound_names(stmt)
            for name in names:
                self.top.setdefault(name, []).append(stmt)
            if not names:
                self.free.append(stmt)
            todo = [stmt]
            while todo:
                inner = todo.pop()
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    self.imports.update(package.refs(module, inner))
                todo += _blocks(inner)


def _bound_names(stmt: ast.stmt) -> list[str]:
    """The names a top-level statement binds (inside ``if``, ``try`` and ``with`` blocks too:
    ``if TYPE_CHECKING: from .model import AttentionModel`` binds ``AttentionModel``)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"]
    targets = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    names = []
    for t in targets:
        names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    for inner in _blocks(stmt):
        names += _bound_names(inner)
    return names


def _blocks(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements inside a compound statement that runs at import (not a def's body)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return []
    inner = []
    for name in ("body", "orelse", "finalbody"):
        inner += getattr(stmt, name, None) or []
    for handler in getattr(stmt, "handlers", None) or []:
        inner += handler.body
    return inner


@cache
def function_code(module: str, qualname: str) -> str:
    """:meth:`Package.function_code` for a function of an imported package (``module``: its
    full dotted name), computed once per process. A function outside a package on disk (a
    test's, a notebook's) is keyed by its module's whole source."""
    top, _, rest = module.partition(".")
    pkg = sys.modules.get(top)
    root = Path(pkg.__file__).parent if pkg is not None and getattr(pkg, "__file__", None) else None
    if root is not None and root.name != "__init__.py" and Path(pkg.__file__).name == "__init__.py":
        return Package(root, top).function_code(rest, qualname)
    file = getattr(sys.modules.get(module), "__file__", None)
    if file is None:
        raise ValueError(f"cannot find the source of {module}.{qualname}")
    return hashlib.sha256(canonical(_strip_strings(ast.parse(Path(file).read_text()))).encode()).hexdigest()[:16]
