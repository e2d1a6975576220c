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

from firmware_sim.artifact import ContainerError

from . import campaign as _campaign
from . import codes as _codes
from . import ecoc as _ecoc
from . import firmware as _firmware
from . import hashing as _hashing
from . import naive_bayes as _nb
from .naive_bayes import run_plan, run_simulate

__all__ = ["main", "run_demo", "run_plan", "run_simulate"]

#: Sub-command modules, in the order ``edgecode demo`` runs their stages.
COMMAND_MODULES = (_nb, _codes, _ecoc, _hashing, _campaign, _firmware)


def run_demo(out_dir=None, trials=2000, stream=None):
    """The whole path on bundled data, one stage per model kind."""
    out = stream or sys.stdout
    t0 = time.perf_counter()
    out_dir = Path(out_dir or tempfile.mkdtemp(prefix="edgecode-demo-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    for mod in COMMAND_MODULES:
        results[mod.__name__.rsplit(".", 1)[-1]] = mod.run_demo_stage(out_dir, trials=trials,
                                                                      stream=out)
    print(f"\nartifacts in {out_dir}; demo took {time.perf_counter() - t0:.1f}s", file=out)
    nb = results["naive_bayes"]
    return {**nb, "stages": results}


def _build_parser():
    p = argparse.ArgumentParser(prog="edgecode", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="run every model kind end to end on bundled data")
    d.add_argument("--out", help="directory for the artifacts (default: a new temp dir)")
    d.add_argument("--trials", type=int, default=2000, help="Monte Carlo trials per point")
    d.set_defaults(func=lambda a: run_demo(a.out, trials=a.trials))
    for mod in COMMAND_MODULES:
        mod.register(sub)
    return p


def _one_line(exc):
    """An exception's message on one line (the CLI prints ``error: <message>``)."""
    return " ".join(str(exc).splitlines()) or type(exc).__name__


def main(argv=None):
    """Entry point of the ``edgecode`` console script; returns the exit status."""
    args = _build_parser().parse_args(argv)
    try:
        args.func(args)
    except ContainerError as exc:
        # a malformed or inconsistent artifact (bytes, schema, consistency rules or
        # metadata types): refused by the loader before anything runs on it
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, FileNotFoundError, RuntimeError) as exc:
        # RuntimeError: a firmware build or run failed (the compiler's message follows)
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: stopped cleanly, no output file was written or replaced",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
