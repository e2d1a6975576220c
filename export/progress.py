"""One progress reporter for every long command (the only copy in the project).

Library functions that run long (``allocate_greedy``, ``run_campaign``,
``simulate``, ``single_upset_table``, ``budget.search``, ...) take a
``progress`` callable and call it between batches as ``progress(done,
total)`` or ``progress(done, total, text)``; they never print. The command
line passes a :class:`Progress`, which writes to stderr:

* on a terminal, one line redrawn in place: a bar, ``done/total``, the
  caller's text, the elapsed time and an ETA;
* otherwise (a log, a pipe, CI), a plain line when the stage starts, then
  one every ``every`` seconds, and one at the end (so a log shows a line per
  stage, not thousands).

A :class:`Progress` is also a context manager: leaving it (normally or on
Ctrl-C) ends the redrawn line, so the next message starts on a fresh line.

Examples
--------
>>> import io
>>> out = io.StringIO()
>>> with Progress("simulate", stream=out, tty=False) as p:
...     for done in (250, 500, 1000):
...         p(done, 1000, "trials")
>>> print(out.getvalue().splitlines()[-1].split(" (")[0])
simulate: 1,000/1,000
"""

import sys
import time

__all__ = ["Progress", "format_seconds"]


def format_seconds(s):
    """A duration for people: ``'8.2 s'``, ``'3 min 20 s'``, ``'2 h 05 min'``, ``'3.1 days'``.

    >>> format_seconds(8.24), format_seconds(200), format_seconds(7500), format_seconds(3e5)
    ('8.2 s', '3 min 20 s', '2 h 05 min', '3.5 days')
    """
    s = float(s)
    if s != s or s == float("inf"):
        return "?"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    if s < 86400 * 2:
        return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
    return f"{s / 86400:.1f} days"


class Progress:
    """Report ``done / total`` of one stage on a stream (default stderr).

    Parameters
    ----------
    label : str
        The stage's name, first on every line (``"simulate"``, ``"greedy plan"``).
    stream : text stream, optional
        Default ``sys.stderr``.
    every : float
        Seconds between lines when the stream is not a terminal.
    tty : bool, optional
        Force terminal (redrawn line) or plain mode; default: ``stream.isatty()``.
    enabled : bool
        ``False`` makes every call a no-op (``--quiet``).
    """

    def __init__(self, label, stream=None, every=10.0, tty=None, enabled=True):
        self.label = str(label)
        self.stream = stream if stream is not None else sys.stderr
        try:
            isatty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            isatty = False
        self.tty = isatty if tty is None else bool(tty)
        self.every = float(every)
        self.enabled = bool(enabled)
        self.t0 = time.perf_counter()
        self.last = None          # time of the last plain line (None: none yet)
        self._open = False        # a redrawn line is on the terminal

    def __call__(self, done, total, text=""):
        if not self.enabled:
            return
        done, total = int(done), max(int(total), 1)
        now = time.perf_counter()
        elapsed = now - self.t0
        eta = elapsed / done * (total - done) if done else float("nan")
        extra = f" {text}" if text else ""
        if self.tty:
            width = 24
            filled = min(width, int(width * done / total))
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] "
                              f"{done:,}/{total:,}{extra} {format_seconds(elapsed)} "
                              f"ETA {format_seconds(eta)}  ")
            self._open = True
            if done >= total:
                self.stream.write("\n")
                self._open = False
            self.stream.flush()
            return
        if self.last is None or now - self.last >= self.every or done >= total:
            self.last = now
            print(f"{self.label}: {done:,}/{total:,} ({100.0 * done / total:.0f}%){extra}, "
                  f"{format_seconds(elapsed)} elapsed, ETA {format_seconds(eta)}",
                  file=self.stream, flush=True)

    def note(self, text):
        """A one-off line (a stage starts, a planner stops early), on a fresh line."""
        if not self.enabled:
            return
        self.close()
        print(f"{self.label}: {text}", file=self.stream, flush=True)

    def close(self):
        """End a redrawn terminal line (idempotent)."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
