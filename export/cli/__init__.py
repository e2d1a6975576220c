"""The ``edgecode`` command line.

The CLI lives in ``export`` (the bridge) because it is the one layer allowed
to see both sides: it plans and trains with ``edgecode``, writes artifacts,
and runs them on ``firmware_sim``.  ``edgecode`` itself never imports the
other two.

Each model kind has one module here with a ``register(subparsers)`` function
adding its sub-commands (each sets ``func``) and a ``run_demo_stage(out_dir,
stream=...)`` that ``edgecode demo`` runs in order.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from ._args import (OUTPUT_FILE_OPTIONS, HelpFormatter, UsageError, check_output_dir,
                    check_output_file, plain, positive_int)

from . import budget as _budget
from . import campaign as _campaign
from . import codes as _codes
from . import ecoc as _ecoc
from . import firmware as _firmware
from . import forest as _forest
from . import hashing as _hashing
from . import naive_bayes as _nb
from . import protect as _protect      # issue 27: edgecode protect, the demo's protection stage
from .naive_bayes import run_plan, run_simulate

__all__ = ["main", "run_demo", "run_plan", "run_simulate"]

#: Sub-command modules, in the order ``edgecode demo`` runs their stages.
COMMAND_MODULES = (_nb, _codes, _ecoc, _hashing, _campaign, _firmware)
#: issue 27: the protection stage runs after them (it protects stage 3's artifact).
COMMAND_MODULES += (_protect,)


def run_demo(out_dir=None, trials=2000, stream=None):
    """The whole path on bundled data, one stage per model kind.

    ``out_dir`` keeps the artifacts (created if missing, inside an existing
    folder); without it they go to a temporary folder that is removed at the
    end. If the demo fails or is interrupted, nothing it wrote stays (a
    folder it created is removed).
    """
    import shutil

    out = stream or sys.stdout
    if int(trials) < 1:
        raise UsageError(f"--trials must be >= 1; got {trials}")
    t0 = time.perf_counter()
    keep = out_dir is not None
    created, before = False, set()
    if keep:
        out_dir = check_output_dir(out_dir, "--out")
        created = not out_dir.exists()
        out_dir.mkdir(exist_ok=True)
        before = set(out_dir.rglob("*"))
    else:
        out_dir = Path(tempfile.mkdtemp(prefix="edgecode-demo-"))
    results = {}
    from ._warmup import start as start_warmup

    warmup = start_warmup()     # compiles later stages' kernels on the idle core (cold cache)
    ok = False
    try:
        for mod in COMMAND_MODULES:
            results[mod.__name__.rsplit(".", 1)[-1]] = mod.run_demo_stage(out_dir, trials=trials,
                                                                          stream=out)
        ok = True
    finally:
        if warmup is not None and warmup.poll() is None:
            warmup.terminate()
        if not keep or (created and not ok):
            shutil.rmtree(out_dir, ignore_errors=True)
        elif not ok:
            # an existing folder keeps what it had; what this run added goes
            for p in sorted(set(out_dir.rglob("*")) - before, reverse=True):
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)
    where = (f"artifacts in {out_dir}" if keep else
             "artifacts were written to a temporary folder, now removed (--out DIR keeps them)")
    print(f"\n{where}; demo took {time.perf_counter() - t0:.1f}s", file=out)
    nb = results["naive_bayes"]
    return {**nb, "stages": results}


def _build_parser():
    p = argparse.ArgumentParser(
        prog="edgecode", formatter_class=HelpFormatter,
        description="Plan redundancy, train, export and simulate small classifiers for devices "
        "whose bits are unreliable. 'edgecode COMMAND --help' describes each command.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_parser = sub.add_parser

    def add_parser_with_defaults(name, **kw):
        kw.setdefault("formatter_class", HelpFormatter)
        if "description" in kw:
            kw["description"] = plain(kw["description"])
        elif "help" in kw:
            kw["description"] = plain(kw["help"][:1].upper() + kw["help"][1:] + ".")
        return add_parser(name, **kw)

    sub.add_parser = add_parser_with_defaults
    d = sub.add_parser("demo", help="run every model kind end to end on bundled data")
    d.add_argument("--out", help="keep the artifacts in this directory (created inside an "
                   "existing one; default: a temporary directory, removed at the end)")
    d.add_argument("--trials", type=positive_int, default=2000,
                   help="Monte Carlo trials per point")
    d.set_defaults(func=lambda a: run_demo(a.out, trials=a.trials), out_is_dir=True)
    for mod in COMMAND_MODULES:
        mod.register(sub)
    _budget.register(sub)       # not a demo stage
    _forest.register(sub)       # not a demo stage
    return p


def _one_line(exc):
    """An exception's message on one line (the CLI prints ``error: <message>``)."""
    return " ".join(str(exc).splitlines()) or type(exc).__name__


#: Output options whose file is of one format: a name ending in another
#: format's suffix is refused (``plan --out x.onnx`` wrote a container).
_WRONG_SUFFIX = {"out": (".onnx", "an ONNX name; the container goes to --out (.edgc), the "
                          "ONNX graph to --onnx"),
                 "onnx": (".edgc", "a container name; the ONNX graph goes to --onnx (.onnx), "
                                   "the container to --out")}


def _check_outputs(args):
    """Every output path of the command, checked before any work is done."""
    for attr, option in OUTPUT_FILE_OPTIONS:
        value = getattr(args, attr, None)
        if value is None:
            continue
        if getattr(args, "out_is_dir", False) and attr == "out":
            check_output_dir(value, option)
            continue
        check_output_file(value, option)
        bad = _WRONG_SUFFIX.get(attr)
        if bad and str(value).lower().endswith(bad[0]):
            raise UsageError(f"{option} {value}: {bad[1]}")


def main(argv=None):
    """Entry point of the ``edgecode`` console script; returns the exit status.

    0: done; 2: a usage error, bad input or an artifact refused by the loader
    (one ``error:`` line on stderr); 130: interrupted (Ctrl-C).
    """
    args = _build_parser().parse_args(argv)
    # imported after parsing: --help and argument errors need no numerical library
    import warnings

    from firmware_sim.errors import ContainerError

    # warnings read as the CLI's other messages: one "warning: ..." line, no source line
    warnings.formatwarning = lambda message, category, *a, **k: \
        f"warning: {' '.join(str(message).split())} ({category.__name__})\n"

    interrupted = _InterruptFlag()
    try:
        with interrupted:
            _check_outputs(args)
            args.func(args)
    except KeyboardInterrupt:
        return _report_interrupt()
    except BaseException as exc:
        if not interrupted.seen:
            return _report_error(exc, ContainerError)
        # Ctrl-C landed where a library swallows KeyboardInterrupt (numba's
        # compiler callbacks through ctypes) and the library then failed on it:
        # the user asked to stop, so this is an interrupt, not an error
        return _report_interrupt()
    return 0


class _InterruptFlag:
    """Records that SIGINT arrived (and still raises KeyboardInterrupt at once),
    so that an error a library raises because it swallowed the interrupt is
    reported as the interrupt it is. Installed only in the main thread over
    Python's default handler; restored on exit."""

    def __init__(self):
        self.seen = False
        self._old = None

    def _handler(self, signum, frame):
        self.seen = True
        raise KeyboardInterrupt

    def __enter__(self):
        import signal
        import threading
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        if self._old is not None:
            import signal
            signal.signal(signal.SIGINT, self._old)
        return False


def _report_interrupt():
    print("\ninterrupted: stopped cleanly, no output file was written or replaced",
          file=sys.stderr)
    return 130


def _report_error(exc, container_error):
    """One ``error:`` line and status 2 for the errors a user can cause; anything
    else is a bug and keeps its traceback."""
    if isinstance(exc, container_error):
        # a malformed or inconsistent artifact (bytes, schema, consistency rules or
        # metadata types): refused by the loader before anything runs on it
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    if isinstance(exc, (ValueError, TypeError, OSError, RuntimeError)):
        # ValueError includes UsageError; OSError: unreadable inputs, unwritable
        # outputs; RuntimeError: a firmware build or run failed (the compiler's
        # message follows)
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    raise exc


if __name__ == "__main__":
    sys.exit(main())
