"""Outputs that appear whole or not at all (the one copy every command uses).

A command writes each output file (and output folder) under a temporary
name beside its destination and renames them all into place only when the
whole command succeeded; on any exception, Ctrl-C included, the temporaries
are removed and no output is created or replaced. A rename within one folder
is atomic on POSIX and Windows, so a reader never sees half a file.

Examples
--------
>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> with AtomicOutputs([d / "a.txt"], dirs=[d / "fw"]) as tmp:
...     _ = tmp[d / "a.txt"].write_text("whole")
...     _ = (tmp[d / "fw"] / "main.c").write_text("int main(void) { return 0; }")
>>> sorted(p.name for p in d.iterdir()), (d / "fw" / "main.c").exists()
(['a.txt', 'fw'], True)
>>> try:
...     with AtomicOutputs([d / "b.txt"]) as tmp:
...         _ = tmp[d / "b.txt"].write_text("half")
...         raise KeyboardInterrupt
... except KeyboardInterrupt:
...     pass
>>> sorted(p.name for p in d.iterdir())
['a.txt', 'fw']
"""

import os
import shutil
from pathlib import Path

__all__ = ["AtomicOutputs"]


class AtomicOutputs:
    """Temporary files (and folders) beside each output, renamed into place on success.

    Parameters
    ----------
    paths : iterable of path or None
        Output files (None entries are skipped, so optional outputs can be passed).
    dirs : iterable of path or None
        Output folders: the temporary folder is created empty; on success it
        is renamed to the destination, or, when the destination folder
        exists, its files are moved into it one by one (files of the same
        name are replaced, other files stay).

    ``tmp[path]`` is the temporary path to write instead of ``path`` (None for None).
    """

    def __init__(self, paths=(), dirs=()):
        self.paths = [Path(p) for p in paths if p is not None]
        self.dirs = [Path(p) for p in dirs if p is not None]
        self.tmp = {}

    def __enter__(self):
        tag = f"{os.getpid()}.partial"
        for p in self.paths + self.dirs:
            parent = p.parent if str(p.parent) else Path(".")
            if not parent.is_dir():
                raise FileNotFoundError(f"cannot write {p}: no directory {parent}")
        for p in self.paths:
            self.tmp[p] = p.with_name(f".{p.name}.{tag}{p.suffix}")
        for p in self.dirs:
            t = p.with_name(f".{p.name}.{tag}")
            if t.exists():
                shutil.rmtree(t)
            t.mkdir()
            self.tmp[p] = t
        return self

    def __getitem__(self, path):
        return None if path is None else self.tmp[Path(path)]

    def _discard(self):
        for t in self.tmp.values():
            if t.is_dir():
                shutil.rmtree(t, ignore_errors=True)
            else:
                try:
                    t.unlink()
                except FileNotFoundError:
                    pass

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._discard()
            return False
        try:
            for p in self.paths:
                if self.tmp[p].exists():
                    os.replace(self.tmp[p], p)
            for p in self.dirs:
                if not p.exists():
                    os.replace(self.tmp[p], p)
                    continue
                # an existing folder is the user's: its other files stay, ours replace
                # theirs file by file (each rename atomic)
                src = self.tmp[p]
                for f in sorted(src.rglob("*")):
                    dest = p / f.relative_to(src)
                    if f.is_dir():
                        dest.mkdir(exist_ok=True)
                    else:
                        os.replace(f, dest)
                shutil.rmtree(src, ignore_errors=True)
        except BaseException:
            self._discard()
            raise
        return False
