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
