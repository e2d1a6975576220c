"""Argument types, help formatting and early checks shared by every sub-command.

One rule for the whole CLI: a usage error (a bad option value, an output
path that cannot be written, data that does not fit the artifact) is
reported as one ``error: ...`` line on stderr with exit status 2, before any
computation where it can be known up front. :class:`UsageError` carries
such errors from the sub-command modules to :func:`export.cli.main`.
"""

import argparse
import math
import os
from pathlib import Path

__all__ = ["UsageError", "HelpFormatter", "jobs", "positive_int", "nonnegative_int", "probability",
           "open_unit", "flip_probability", "check_output_file", "check_output_dir",
           "OUTPUT_FILE_OPTIONS", "plain"]


class UsageError(ValueError):
    """A usage error found by a sub-command (exit status 2, one ``error:`` line)."""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` that shows every option's default (except None and False,
    which mean "not given") and keeps the description's paragraphs."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "%(default)" in text or "default" in text.lower():
            return text
        if action.default is None or action.default is False or action.required or \
                action.default == argparse.SUPPRESS:
            return text
        if not action.option_strings and action.nargs not in (argparse.OPTIONAL,
                                                              argparse.ZERO_OR_MORE):
            return text
        return text + " (default: %(default)s)"


def plain(text):
    """Help text without reStructuredText markup (double back-quotes)."""
    return str(text).replace("``", "'")


def _number(text, what, conv):
    try:
        value = conv(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}")
    return value


def _integer(text):
    """An integer written as one (``200000``) or in float notation (``1e12``, ``2.0e5``)."""
    try:
        return int(text)
    except ValueError:
        v = float(text)
        if not math.isfinite(v) or v != int(v):
            raise ValueError(text) from None
        return int(v)


def positive_int(text):
    """An int >= 1 (argparse type; ``1e6`` is read as 1000000)."""
    v = _number(text, "an integer >= 1", _integer)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {text!r}")
    return v


def nonnegative_int(text):
    """An int >= 0 (argparse type; ``1e9`` is read as 1000000000)."""
    v = _number(text, "an integer >= 0", _integer)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0; got {text!r}")
    return v


def jobs(text):
    """``--jobs``: -1 (every CPU) or an int >= 1 (argparse type)."""
    v = _number(text, "-1 or an integer >= 1", int)
    if v == 0 or v < -1:
        raise argparse.ArgumentTypeError(f"must be -1 (every CPU) or an integer >= 1; "
                                         f"got {text!r}")
    return v


def probability(text):
    """A float in [0, 1] (argparse type)."""
    v = _number(text, "a number in [0, 1]", float)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1]; got {text!r}")
    return v


def open_unit(text):
    """A float in (0, 1) (argparse type: confidence levels, fractions)."""
    v = _number(text, "a number in (0, 1)", float)
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1); got {text!r}")
    return v


def flip_probability(value, what="--eps"):
    """Check one channel flip probability: a finite float in [0, 1/2)."""
    v = float(value)
    if not (math.isfinite(v) and 0.0 <= v < 0.5):
        raise UsageError(f"{what} must be in [0, 0.5) (a flip probability; 0.5 carries no "
                         f"information); got {value!r}")
    return v


#: (attribute, option) of every sub-command option that names an output file.
OUTPUT_FILE_OPTIONS = (("out", "--out"), ("onnx", "--onnx"), ("plan_out", "--plan-out"),
                       ("json_path", "--json"), ("plot_path", "--plot"))


def check_output_file(path, option):
    """Refuse an output file that cannot be written, before any work is done:
    its folder must exist and be writable, and the path must not be a folder."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{option} {path!s} is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option} {path!s}: no directory {parent!s} (create it first)")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UsageError(f"{option} {path!s}: not writable")
    return p


def check_output_dir(path, option):
    """An output folder: it may exist (then it must be a writable folder) or be
    created, but only inside an existing folder (no silent ``mkdir -p``)."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise UsageError(f"{option} {path!s} exists and is not a directory")
        if not os.access(p, os.W_OK):
            raise UsageError(f"{option} {path!s}: not writable")
        return p
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option} {path!s}: its parent {parent!s} does not exist (create "
                         "it first)")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{option} {path!s}: cannot create it in {parent!s} (not writable)")
    return p


def parse_value(text):
    """One ``--set``/``--grid`` value: a bool, None, an int, a float, else the text."""
    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_sets(items):
    """Fault parameters from repeated ``--set NAME=VALUE`` (lists comma separated for
    ``stuck0``, ``stuck1`` and ``arrays``)."""
    params = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set takes name=value; got {item!r}")
        key = key.strip()
        if key in ("stuck0", "stuck1", "arrays"):
            params[key] = [parse_value(v) for v in value.split(",") if v.strip()]
        else:
            params[key] = parse_value(value)
    return params


def parse_grid(text):
    """The values of ``--grid`` (a comma list)."""
    vals = [parse_value(v) for v in str(text).split(",") if v.strip()]
    if not vals:
        raise ValueError(f"--grid must be a comma list of values; got {text!r}")
    return vals
