"""Test helper (issue 24): run a call in a child process and press Ctrl-C.

The child runs ``setup`` (which compiles or loads the numba kernels), prints
``started``, then runs ``body``; the test sends SIGINT ``wait`` seconds later
and gives the child ``timeout`` seconds (generous: the bounded batches answer
in well under a second) to end.  Without the batching the calls these tests
make run for minutes or forever: a running numba kernel cannot be interrupted.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: a setup most children share
SETUP_RNG = """
import numpy as np
rng = np.random.default_rng(0)
"""


def child_env():
    """The environment of a child that imports this checkout's packages."""
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_and_interrupt(body=None, setup="", wait=1.0, timeout=20.0, argv=None,
                      marker="started"):
    """Start the child, SIGINT it ``wait`` s after it printed a line with ``marker``.

    Returns ``(returncode, stderr)``; fails the test if the child ends before
    the signal or does not end within ``timeout`` s of it.  ``argv`` replaces
    the ``setup``/``body`` script (its output must contain ``marker``).
    """
    if argv is None:
        code = (textwrap.dedent(setup) + "\nprint('started', flush=True)\n"
                + textwrap.dedent(body) + "\nprint('finished', flush=True)\n")
        argv = [sys.executable, "-c", code]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(), cwd=ROOT)
    try:
        line, t_start = "", time.monotonic()
        while marker not in line:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                pytest.fail(f"child ended before starting: {proc.stderr.read()}")
            if time.monotonic() - t_start > 240:
                pytest.fail("child did not start within 240 s")
        time.sleep(wait)
        assert proc.poll() is None, "the call ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit within {timeout} s of SIGINT: the call ignores Ctrl-C")
        return proc.returncode, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
