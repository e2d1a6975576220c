"""The import rules of docs/architecture.md, checked on the source tree."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ALLOWED = {
    # package: top-level modules it may import besides the standard library
    "firmware_sim": {"numpy", "numba", "firmware_sim"},
    "edgecode": {"numpy", "numba", "scipy", "sklearn", "edgecode", "joblib"},
    "export": {"numpy", "numba", "scipy", "sklearn", "edgecode", "export", "firmware_sim",
               "onnx", "onnxruntime", "matplotlib", "dask", "skl2onnx"},
}
import sys

STDLIB = set(sys.stdlib_module_names)


def _imports(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_import_rules(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for mod, line in _imports(path):
            if mod not in STDLIB and mod not in ALLOWED[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod}")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------- import cycles
#: Packages whose modules must form no import cycle (issue 25). The graph is built
#: over all three packages, so a cycle through another package counts too.
CYCLE_FREE = ("firmware_sim", "export", "edgecode")


def _module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _in_type_checking(node, parents):
    """Under ``if TYPE_CHECKING:`` (never runs) or ``if __name__ == "__main__":``
    (runs only when the module is the script, not when it is imported)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and ("TYPE_CHECKING" in ast.unparse(node.test)
                                         or "__main__" in ast.unparse(node.test)):
            return True
    return False


def _import_graph(packages=tuple(ALLOWED)):
    """Module -> the modules of ``packages`` it imports.

    Every import statement counts, at module level or inside a function: a
    function-level import is a dependency too (when the function runs, it
    closes the cycle, and the two modules can no longer be read, tested or
    moved apart), so it may not be used to hide a cycle. Imports under
    ``if TYPE_CHECKING:`` do not count (they never run), nor those of a script's
    ``if __name__ == "__main__":`` block. ``import a.b`` and
    ``from a.b import c`` point at ``a.b`` (at ``a.b.c`` when that is a
    module); the ``__init__`` of the packages above a module is not an edge
    (a package re-exporting its submodules would otherwise close a cycle with
    every one of them).
    """
    files = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            files[_module_name(path)] = path
    modules = set(files)
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or \
                    _in_type_checking(node, parents):
                continue
            if isinstance(node, ast.Import):
                bases = [(a.name, ()) for a in node.names]
            else:
                base = here[:len(here) - node.level + 1] if node.level else []
                base = ".".join(base + ([node.module] if node.module else []))
                bases = [(base, tuple(a.name for a in node.names))]
            for base, names in bases:
                subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
                if subs:
                    targets.update(subs)
                if len(subs) < len(names) or not names:
                    mod = base
                    while mod and mod not in modules:
                        mod = mod.rpartition(".")[0]
                    if mod:
                        targets.add(mod)
        targets.discard(name)
        graph[name] = sorted(targets)
    return graph


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _a_cycle(graph, comp):
    """One closed path through a component, for the message."""
    start, path, seen = comp[0], [comp[0]], {comp[0]}
    while True:
        nxt = next(w for w in graph[path[-1]] if w in comp and (w == start or w not in seen)
                   ) if any(w in comp for w in graph[path[-1]]) else None
        if nxt is None or nxt == start:
            return " -> ".join(path + [start])
        path.append(nxt)
        seen.add(nxt)


def test_the_import_graph_sees_function_level_imports():
    graph = _import_graph(("firmware_sim",))
    # profiles asks the kind registry at call time (inside a function)
    assert "firmware_sim.contract" in graph["firmware_sim.profiles"]
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]


@pytest.mark.parametrize("package", CYCLE_FREE)
def test_no_import_cycles(package):
    graph = _import_graph()
    bad = [comp for comp in _cycles(graph) if any(m.split(".")[0] == package for m in comp)]
    assert not bad, "import cycles:\n" + "\n".join(
        f"{_a_cycle(graph, c)} (modules in the cycle: {', '.join(c)})" for c in bad)


# ---------------------------------------------------------------- device errors
def test_every_deliberate_device_error_is_a_device_error():
    """firmware_sim raises DeviceError (a ValueError subclass: ContainerError,
    FrameError, ...) on purpose, never a bare ValueError; ``ValueError`` may only
    be caught (``except``) or subclassed."""
    bad = []
    for path in sorted((ROOT / "firmware_sim").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        allowed = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                allowed.update(id(n) for n in ast.walk(node.type))
            elif isinstance(node, ast.ClassDef):
                allowed.update(id(n) for b in node.bases for n in ast.walk(b))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "ValueError" and id(node) not in allowed:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if "raise ValueError(" in path.read_text():
            bad.append(f"{path.relative_to(ROOT)}: raise ValueError(")
    assert not bad, "use DeviceError (firmware_sim.errors):\n" + "\n".join(bad)


# ------------------------------------------------------ the bridge (issue 25)
def test_library_modules_never_import_the_command_line():
    """The CLI parses and prints; the library (every export module outside
    export/cli) never imports it, at any level."""
    graph = _import_graph()
    bad = sorted(f"{m} imports {t}" for m, ts in graph.items()
                 if m.startswith("export") and not m.startswith("export.cli")
                 for t in ts if t == "export.cli" or t.startswith("export.cli."))
    assert not bad, "\n".join(bad)


#: Bridge modules shared by every kind: they loop over export.registry.
SHARED_BRIDGE = ("export/_budget_space.py", "export/budget.py", "export/analytics.py",
                 "export/_closed_forms.py", "export/registry.py", "export/report.py",
                 "export/cli/budget.py", "export/cli/campaign.py", "export/firmware.py",
                 "export/targets.py", "export/cli/firmware.py")


def test_shared_bridge_modules_name_no_kind():
    """No kind name as a string (docstrings aside) and no device class in the shared
    modules: what a kind needs is its spec's (export/kinds/)."""
    import export
    from export.registry import kind_specs
    from firmware_sim import device_kinds

    names = {s.kind for s in kind_specs()} | {s.cli_name for s in kind_specs()}
    classes = {cls.__name__ for cls in device_kinds().values()}
    bad = []
    for rel in SHARED_BRIDGE:
        tree = ast.parse((ROOT / rel).read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
                      and n.body and isinstance(n.body[0], ast.Expr)
                      and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and id(node) not in docstrings \
                    and node.value in names:
                bad.append(f"{rel}:{node.lineno} names kind {node.value!r}")
            if isinstance(node, (ast.Name, ast.Attribute, ast.alias)):
                ident = getattr(node, "id", None) or getattr(node, "attr", None) or node.name
                if ident in classes:
                    bad.append(f"{rel}:{getattr(node, 'lineno', '?')} names {ident}")
    assert export and not bad, "\n".join(bad)


def test_export_uses_one_wilson_interval():
    """Campaigns report firmware_sim's Wilson interval; export computes no other."""
    graph = _import_graph()
    bad = sorted(m for m, ts in graph.items() if m.startswith("export")
                 and "edgecode._stats" in ts)
    assert not bad, bad
