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


# -- import cycles -------------------------------------------------------------

PACKAGES = ("edgecode", "export", "firmware_sim")


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _under_main_guard(tree):
    """Line numbers of the bodies of ``if __name__ == "__main__":`` blocks: a
    module run as a script is ``__main__``, another module object, so what it
    imports there makes no cycle."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) \
                and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__":
            for sub in node.body:
                lines.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return lines


def import_graph():
    """module -> set of modules of the three packages it imports, at the top or
    inside a function (a deferred import still ties the two modules together).
    ``from pkg import name`` is an edge to ``pkg.name`` when that is a module,
    else to ``pkg`` (whose ``__init__`` runs)."""
    paths = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph = {}
    for mod, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _under_main_guard(tree)
        is_pkg = path.name == "__init__.py"
        deps = set()
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in paths)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module
                for a in node.names:
                    name = f"{base}.{a.name}"
                    deps.add(name if name in paths else base)
        deps.discard(mod)
        graph[mod] = {d for d in deps if d in paths}
    return graph


def import_cycles(graph):
    """Strongly connected components of more than one module (Tarjan), sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_cycle_finder_on_a_toy_graph():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(g) == [["a", "b", "c"]]


#: the device side's cycle (campaign <-> device <-> distributed <-> kinds) is removed by
#: issue 25's engine redesign, on another branch; drop this mark once it is merged
_FIRMWARE_CYCLE = pytest.mark.xfail(reason="firmware_sim's campaign/device cycle: issue 25's "
                                    "engine redesign removes it", strict=False)


@pytest.mark.parametrize("package", ["edgecode", "export",
                                     pytest.param("firmware_sim", marks=_FIRMWARE_CYCLE)])
def test_no_import_cycles(package):
    graph = import_graph()
    cycles = [c for c in import_cycles(graph) if any(m.split(".")[0] == package for m in c)]
    detail = []
    for comp in cycles:
        edges = [f"  {a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
        detail.append(f"cycle through {', '.join(comp)}:\n" + "\n".join(edges))
    assert not cycles, "\n".join(detail)


def test_library_modules_do_not_import_the_cli():
    """The command line parses and prints over library functions; the library
    never imports ``export.cli`` (only ``export/cli/`` itself does)."""
    graph = import_graph()
    bad = [f"{m} imports {d}" for m, deps in sorted(graph.items())
           if not m.startswith("export.cli") for d in sorted(deps)
           if d == "export.cli" or d.startswith("export.cli.")]
    assert not bad, "\n".join(bad)
