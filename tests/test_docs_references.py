"""Every ``package.module.name`` and repository path the docs name exists.

Sources: every ``*.md`` file of the repository (README, docs/,
benchmarks/README.md and the results files, firmware_sim/c/README.md, ...)
and every docstring (module, class, function) of ``edgecode``, ``export``,
``firmware_sim`` and the ``benchmarks`` scripts.

* A dotted name that starts with ``edgecode.``, ``export.`` or
  ``firmware_sim.`` must import (its longest module prefix) and resolve
  attribute by attribute (a class's dataclass fields, annotations and
  ``self.<name>`` assignments count as its attributes).
* A path that starts with ``edgecode/``, ``export/``, ``firmware_sim/``,
  ``tests/``, ``benchmarks/`` or ``docs/`` must exist in the repository
  (placeholders such as ``export/<kind>.py`` and globs are skipped).

Run it as a script to list every unresolved reference at once::

    python tests/test_docs_references.py

Each failure names the file and line, the reference and the part that does
not resolve (the missing module, attribute or path).
"""

import ast
import dataclasses
import importlib
import inspect
import re
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("edgecode", "export", "firmware_sim")
PATH_ROOTS = PACKAGES + ("tests", "benchmarks", "docs")
SKIP_DIRS = {".git", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis"}

_NAME = re.compile(r"(?<![\w./-])(?:%s)(?:\.[A-Za-z_]\w*)+" % "|".join(PACKAGES))
_PATH = re.compile(r"(?<![\w./-])(?:%s)/[\w./-]*" % "|".join(PATH_ROOTS))
#: a path followed by one of these is a pattern, not a file (``export/<kind>.py``)
_PLACEHOLDER = ("<", "{", "*", "[")
#: (file, reference) -> why the reference may name something that is gone: recorded
#: measurements keep the names they had when they were taken
HISTORICAL = {
    ("benchmarks/README.md", "edgecode.redundancy._kernels._exact_point"):
        "a compile-time table recorded on 2026-12-01, before the kernel was merged into "
        "_exact_influences",
}


def _skip_dir(path):
    return any(part in SKIP_DIRS or part.endswith(".egg-info") for part in path.parts)


def markdown_files():
    return sorted(p for p in ROOT.rglob("*.md")
                  if not _skip_dir(p.relative_to(ROOT)))


def python_files():
    files = []
    for top in PACKAGES + ("benchmarks",):
        files += [p for p in (ROOT / top).rglob("*.py") if not _skip_dir(p.relative_to(ROOT))]
    return sorted(files)


def _docstrings(path):
    """(line, text) of every docstring of a Python file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                yield body[0].lineno, body[0].value.value


def _texts(path):
    """(first line, text) pieces of a source: a markdown file whole, a Python
    file's docstrings."""
    if path.suffix == ".md":
        return [(1, path.read_text())]
    return list(_docstrings(path))


def references(path):
    """(line, kind, reference) of every dotted name and repository path in ``path``."""
    out = []
    for first, text in _texts(path):
        for kind, pattern in (("name", _NAME), ("path", _PATH)):
            for m in pattern.finditer(text):
                ref = m.group(0).rstrip(".")
                if kind == "path":
                    after = text[m.end():m.end() + 1]
                    if after and after in _PLACEHOLDER or ref.endswith(("-", "_")):
                        continue
                line = first + text.count("\n", 0, m.start())
                out.append((line, kind, ref))
    return out


@lru_cache(maxsize=None)
def _import(name):
    try:
        return importlib.import_module(name), None
    except ModuleNotFoundError as exc:
        return None, exc
    except Exception as exc:  # pragma: no cover - a module that fails to import
        return None, exc


def _class_attributes(cls):
    """What a class documents as attributes besides ``dir(cls)``: dataclass fields,
    annotations and ``self.<name> = ...`` assignments in its source (MRO included)."""
    names = set()
    for klass in inspect.getmro(cls):
        if klass is object:
            continue
        if dataclasses.is_dataclass(klass):
            names.update(f.name for f in dataclasses.fields(klass))
        names.update(getattr(klass, "__annotations__", {}))
        try:
            src = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        names.update(re.findall(r"self\.([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)", src))
    return names


def resolve_name(ref):
    """None if ``ref`` (``package.module.attr...``) resolves, else why not."""
    parts = ref.split(".")
    module, k = None, 0
    for i in range(len(parts), 0, -1):
        mod, exc = _import(".".join(parts[:i]))
        if mod is not None:
            module, k = mod, i
            break
        if exc is not None and not isinstance(exc, ModuleNotFoundError):
            return f"module {'.'.join(parts[:i])} fails to import: {exc!r}"
    if module is None:
        return f"no module {parts[0]}"
    obj = module
    for j in range(k, len(parts)):
        name = parts[j]
        if hasattr(obj, name):
            obj = getattr(obj, name)
            continue
        if inspect.isclass(obj) and name in _class_attributes(obj) and j == len(parts) - 1:
            return None
        where = ".".join(parts[:j])
        if j == k:
            return (f"module {where} has no attribute {name!r} (and no submodule "
                    f"{where}.{name})")
        return f"{where} has no attribute {name!r}"
    return None


def resolve_path(ref):
    """None if the repository path ``ref`` exists, else why not."""
    p = ROOT / ref
    if p.exists():
        return None
    parent = p
    while not parent.exists():
        parent = parent.parent
    return f"no such file or directory (the nearest existing folder is " \
           f"{parent.relative_to(ROOT).as_posix() or '.'}/)"


def problems(path):
    """Messages ``file:line: reference: why`` for every unresolved reference."""
    rel = path.relative_to(ROOT).as_posix()
    out = []
    for line, kind, ref in references(path):
        if (rel, ref) in HISTORICAL:
            continue
        why = resolve_name(ref) if kind == "name" else resolve_path(ref)
        if why:
            out.append(f"{rel}:{line}: {kind} {ref}: {why}")
    return out


SOURCES = markdown_files() + python_files()


def test_the_sources_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in SOURCES}
    assert {"README.md", "docs/architecture.md", "benchmarks/README.md",
            "firmware_sim/c/README.md", "export/data.py"} <= names


def test_the_checker_finds_stale_references(tmp_path):
    assert resolve_name("export.data.load_table") is None
    assert resolve_name("export.result.ExportResult.device") is None      # a dataclass field
    assert resolve_name("export.campaign.run_demo_stage") == \
        "module export has no attribute 'campaign' (and no submodule export.campaign)"
    assert resolve_name("export.data.load_tabel") == \
        "module export.data has no attribute 'load_tabel' (and no submodule export.data.load_tabel)"
    assert resolve_name("export.data.Table.nope") == "export.data.Table has no attribute 'nope'"
    assert "no attribute 'Dataset'" in resolve_name("edgecode.datasets.Dataset")
    assert resolve_path("export/data.py") is None
    assert "no such file" in resolve_path("export/cli.py")
    assert "nearest existing folder is tests/" in resolve_path("tests/test_nothing_here.py")
    doc = tmp_path / "x.md"
    doc.write_text("See `export/<kind>.py`, export/data.py and\nedgecode.datasets.NAMES.\n")
    assert sorted(references(doc)) == [(1, "path", "export/data.py"),
                                       (2, "name", "edgecode.datasets.NAMES")]


@pytest.mark.parametrize("path", SOURCES, ids=[p.relative_to(ROOT).as_posix() for p in SOURCES])
def test_every_reference_resolves(path):
    bad = problems(path)
    assert not bad, "\n".join(bad)


if __name__ == "__main__":
    found = [m for p in SOURCES for m in problems(p)]
    print("\n".join(found) or "every reference resolves")
    sys.exit(1 if found else 0)
