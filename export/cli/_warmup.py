"""Compile the numba kernels of ``edgecode demo`` on the idle core.

On an empty numba cache most of a first demo is compilation (about 30 of 42
CPU seconds on the 2-core reference machine), one kernel after the other,
while the second core idles. ``edgecode demo`` therefore starts this module
in a background process that compiles the demo's kernels **in the reverse of
the order the demo first calls them**: the demo walks the list forward
(compiling what is not cached yet, loading what is), this process walks it
backward, so the two meet in the middle having split the work, each kernel
compiled once, whatever the relative speed of the two processes. Numba writes
its cache files atomically, so a kernel is either loaded whole or compiled.

The list (:data:`export.cli._warmup_kernels.KERNELS`) holds the kernels the
demo calls from Python with their exact numba signatures, recorded from a
cold demo: ``python -m export.cli._warmup --record`` rewrites it (run it after
changing what the demo runs; ``tests/test_cli.py`` fails when the demo calls
a kernel signature the list does not hold). This process imports only numpy,
numba and the kernel modules (no scikit-learn, no onnxruntime) and runs
nothing but the compiler. Nothing is started when the cache already holds the
kernels (:func:`cache_is_warm`), and the process is stopped when the demo
ends.

Run by hand: ``python -m export.cli._warmup`` (compiles every listed kernel
into the numba cache).
"""

import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["cache_is_warm", "kernel_signatures", "record", "start", "used_signatures",
           "warm_up"]

_PACKAGES = ("edgecode.", "firmware_sim.", "export.")


def _type_namespace():
    from numba.core import types
    return {name: getattr(types, name) for name in dir(types) if not name.startswith("_")}


def _bare_parents(module):
    """Register the packages above ``module`` that are not imported yet as
    bare package objects (their ``__init__`` not run), so that importing a
    kernel module does not import what the package imports (scikit-learn,
    onnx). Only for the warm-up's own process: the kernel modules import
    nothing but numpy, numba and each other."""
    import importlib.util
    import types as pytypes
    parts = module.split(".")[:-1]
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            return
        pkg = pytypes.ModuleType(name)
        pkg.__path__ = list(spec.submodule_search_locations)
        pkg.__package__ = name
        pkg.__spec__ = spec
        sys.modules[name] = pkg


def kernel_signatures(entries=None, bare_packages=False):
    """Resolve the list's kernels called from Python: ``[(dispatcher, signature)]``.

    ``entries`` defaults to :data:`export.cli._warmup_kernels.KERNELS`, rows of
    ``(module, function, signature source, called from Python)``; the signature
    source is a tuple expression over numba's type names (``Array(float64, 1,
    'C', False)``), evaluated with no builtins in a namespace of those names
    only. A row whose module or function no longer exists raises
    ``LookupError``. ``bare_packages`` imports the kernel modules without
    running their packages' ``__init__`` (the warm-up process only).
    """
    if entries is None:
        from ._warmup_kernels import KERNELS as entries
    ns = {"__builtins__": {}, **_type_namespace()}
    out = []
    for module, name, sig_src, top in entries:
        if not top:
            continue
        try:
            if bare_packages:
                _bare_parents(module)
            disp = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise LookupError(f"warm-up list names {module}.{name}, which does not exist "
                              f"({exc}); rerun python -m export.cli._warmup --record") from None
        out.append((disp, eval(sig_src, ns)))   # noqa: S307 (our own list, no builtins)
    return out


def used_signatures():
    """``{(module, function, signature source)}`` of every edgecode,
    firmware_sim and export kernel this process has compiled or loaded so far
    (called from Python or from another kernel)."""
    from numba.core.dispatcher import Dispatcher
    seen = set()
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith(_PACKAGES) or mod is None:
            continue
        for obj in list(vars(mod).values()):
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == mod_name:
                for sig in list(obj._cache_hits) + list(obj._cache_misses):
                    seen.add((mod_name, obj.py_func.__name__, _signature_source(sig)))
    return seen


def _index_path(disp):
    return Path(disp._cache._cache_file._index_path)


def cache_is_warm():
    """Whether the numba cache already holds the demo's kernels: the first and
    the last kernel of the list (any doubt counts as cold)."""
    try:
        sigs = [d for d, _ in kernel_signatures()]
        return all(_index_path(d).exists() for d in (sigs[0], sigs[len(sigs) // 2], sigs[-1]))
    except Exception:       # numba internals moved or a stale list: warming is harmless
        return False


def warm_up(reverse=True, entries=None, bare_packages=False):
    """Compile (or load) every kernel of the list called from Python, last first.

    Returns the number of kernels that could not be compiled (a signature
    the kernel refuses is skipped, not fatal: the demo then compiles that
    kernel itself)."""
    failed = 0
    rows = kernel_signatures(entries, bare_packages)
    for disp, sig in (reversed(rows) if reverse else rows):
        try:
            disp.compile(sig)
        except Exception:
            failed += 1
    return failed


def start():
    """Start :func:`warm_up` in a background process unless the cache is warm;
    returns the process (or None). Its output is discarded."""
    if os.environ.get("EDGECODE_NO_WARMUP") or cache_is_warm():
        return None
    try:
        return subprocess.Popen([sys.executable, "-m", "export.cli._warmup"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL)
    except OSError:
        return None


# ---------------------------------------------------------------------------
# recording the list
# ---------------------------------------------------------------------------

def _type_source(t):
    """Python source of a numba type, over the names of ``numba.core.types``."""
    from numba.core import types
    if isinstance(t, types.Array):
        return (f"Array({_type_source(t.dtype)}, {t.ndim}, {t.layout!r}, "
                f"{bool(not t.mutable)})")
    if isinstance(t, types.UniTuple):
        return f"UniTuple({_type_source(t.dtype)}, {t.count})"
    if isinstance(t, types.Tuple):
        return "Tuple((" + "".join(_type_source(x) + ", " for x in t.types) + "))"
    if isinstance(t, types.Literal):      # inside kernels only (never called from Python)
        return str(t)
    if isinstance(t, types.Boolean):
        return "boolean"
    if isinstance(t, (types.Integer, types.Float, types.Complex)):
        return str(t)
    if isinstance(t, types.NoneType):
        return "none"
    if isinstance(t, types.Optional):
        return f"Optional({_type_source(t.type)})"
    if isinstance(t, types.Omitted):
        if t.value is None or isinstance(t.value, (bool, int, float, str)):
            return f"Omitted({t.value!r})"
    raise TypeError(f"cannot record numba type {t!r}")


def _signature_source(args):
    return "(" + "".join(_type_source(a) + ", " for a in args) + ")"


def _record_here(run_demo):
    """Run the demo (``export.cli.run_demo``, passed in by this module's script
    entry: the warm-up itself never imports the command line) in this process
    with compile events recorded (the cache must be empty); return the list's
    rows in first-call order."""
    import io

    from numba.core import event as ev

    rows, seen, depth = [], set(), [0]

    class Recorder(ev.Listener):
        def on_start(self, event):
            d = event.data["dispatcher"]
            mod = d.py_func.__module__
            if mod.startswith(_PACKAGES):
                key = (mod, d.py_func.__name__, tuple(event.data["args"]))
                if key not in seen:
                    seen.add(key)
                    src = _signature_source(event.data["args"])
                    rows.append((mod, d.py_func.__name__, src, depth[0] == 0))
            depth[0] += 1

        def on_end(self, event):
            depth[0] -= 1

    ev.register("numba:compile", Recorder())
    os.environ["EDGECODE_NO_WARMUP"] = "1"
    run_demo(None, trials=50, stream=io.StringIO())
    return rows


def record(path=None):
    """Record the list from a demo on an empty numba cache (in a subprocess)
    and write it to ``path`` (default: ``_warmup_kernels.py`` beside this file)."""
    path = Path(path or Path(__file__).with_name("_warmup_kernels.py"))
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "EDGECODE_NO_WARMUP": "1"}
        subprocess.run([sys.executable, "-m", "export.cli._warmup", "--record-here", str(path)],
                       env=env, check=True, stdout=subprocess.DEVNULL)
    return path


def _module_source(rows):
    lines = ['"""The numba kernels ``edgecode demo`` calls, with their signatures, in',
             "first-call order (generated by ``python -m export.cli._warmup --record``;",
             'do not edit). Rows: (module, function, signature, called from Python)."""',
             "", "KERNELS = ["]
    lines += [f"    ({m!r}, {f!r}, {s!r}, {top})," for m, f, s, top in rows]
    lines.append("]")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--record-here"] and len(sys.argv) == 3:
        from export.cli import run_demo
        Path(sys.argv[2]).write_text(_module_source(_record_here(run_demo)))
    elif sys.argv[1:] == ["--record"]:
        print(f"wrote {record()}")
    else:
        warm_up(bare_packages=True)
