"""The Python examples of the README and docs/python_api.md run as written."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks(name):
    text = (ROOT / name).read_text()
    return [(f"{name}#{i}", code) for i, code in enumerate(_BLOCK.findall(text))]


BLOCKS = _blocks("README.md") + _blocks("docs/python_api.md")


def test_there_is_an_example_per_kind():
    names = [n for n, _ in BLOCKS if n.startswith("docs/python_api.md")]
    assert len(names) >= 3


@pytest.mark.parametrize("name, code", BLOCKS, ids=[n for n, _ in BLOCKS])
def test_example_runs(name, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, name, "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out.strip()          # every example prints what it shows
