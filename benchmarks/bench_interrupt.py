"""Peak memory and time-to-exit after Ctrl-C of the long device-side commands (issue 24).

Runs one ``edgecode`` command as a child process (under an address-space cap,
so a run that grows without bound stops at the cap instead of taking the
machine), sends SIGINT ``--after`` seconds after the start (or once a
progress line appeared on stderr, ``--after-progress``), and prints one line:

``task;exit;peak_rss_mb;wall_s;sigint_to_exit_s;last_stderr_line``

Examples (from a folder holding ``hv.edgc``, made by
``edgecode plan house_votes --eps 0.2 --R 1 --out hv.edgc``)::

    python benchmarks/bench_interrupt.py --after 20 -- simulate hv.edgc --eps 0.2 --trials 1000000000000
    python benchmarks/bench_interrupt.py --after 5 -- simulate hv.edgc --eps 0.2 --trials 200000
    python benchmarks/bench_interrupt.py --repeat 5 --after 5 -- campaign hv.edgc --fault bsc --set eps=0.1 --trials 1000000000000

``--after 0`` lets the command run to its end (or to the cap). The machine is
shared (2 cores): take the median of ``--repeat`` runs.

``--api NAME`` runs one of the library calls of :data:`API` instead of a
command (a ``KeyboardInterrupt`` traceback then ends the child, exit 1)::

    python benchmarks/bench_interrupt.py --api simulate --after 10

To measure the code of another checkout, put it first on ``PYTHONPATH``.
"""

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time


#: ``edgecode`` in this interpreter (export.cli is a package without ``__main__``)
EDGECODE = [sys.executable, "-c", "import sys; from export.cli import main; sys.exit(main())"]

_SETUP = """
import sys
import numpy as np
import firmware_sim
from edgecode import datasets
from edgecode.naive_bayes import BinaryNaiveBayes
from export.naive_bayes import export_protected_nb
from firmware_sim.campaign import run_campaign
from firmware_sim.faults import BSC, ParameterUpset
d = datasets.load("house_votes")
device = firmware_sim.load(export_protected_nb(BinaryNaiveBayes().fit(d.X, d.y),
                                               np.ones(16, int)).container)
X, y = d.X, d.y
sys.stderr.write("ready: ETA\\n"); sys.stderr.flush()
"""

#: The users' library calls (issue 24), on house votes with 48 wire bits per point.
API = {
    "simulate": "firmware_sim.simulate(device, X, 0.2, n_trials=10**12)",
    "campaign-bsc": "run_campaign(device, X, BSC(0.1), n_trials=10**12)",
    "campaign-seu": "run_campaign(device, X, ParameterUpset(count=1), n_trials=10**7)",
}


def run_once(cmd, after, after_progress, cap_bytes, timeout):
    def limit():
        if cap_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=limit)
    lines = []
    seen = threading.Event()

    def reader():
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if ":" in line and ("ETA" in line or "/" in line):
                seen.set()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    sent = None
    deadline = t0 + timeout
    while proc.poll() is None and time.perf_counter() < deadline:
        now = time.perf_counter()
        if sent is None and ((after and now - t0 >= after and not after_progress)
                             or (after_progress and seen.is_set())):
            proc.send_signal(signal.SIGINT)
            sent = time.perf_counter()
        time.sleep(0.01)
    if proc.poll() is None:
        proc.kill()
    rc = proc.wait()
    end = time.perf_counter()
    th.join(timeout=5)
    # the children's peak RSS so far (this process's children only: one at a time)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"exit": rc, "peak_mb": peak_kb / 1024, "wall": end - t0,
            "to_exit": None if sent is None else end - sent,
            "last": lines[-1] if lines else ""}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--after", type=float, default=5.0, help="seconds before SIGINT (0: none)")
    p.add_argument("--after-progress", action="store_true",
                   help="send SIGINT once a progress line appeared on stderr")
    p.add_argument("--cap-gb", type=float, default=6.0, help="address-space cap of the child")
    p.add_argument("--timeout", type=float, default=300.0, help="kill the child after this")
    p.add_argument("--repeat", type=int, default=1, help="runs, each measured from a fresh "
                   "interpreter (the children's peak RSS is then per run); prints the medians")
    p.add_argument("--api", choices=sorted(API), help="run this library call instead")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- edgecode arguments")
    a = p.parse_args(argv)
    args = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if a.repeat <= 1:
        cmd = [sys.executable, "-c", _SETUP + API[a.api]] if a.api else [*EDGECODE, *args]
        args = [API[a.api]] if a.api else args
        r = run_once(cmd, a.after, a.after_progress, int(a.cap_gb * 2 ** 30), a.timeout)
        to_exit = "-" if r["to_exit"] is None else f"{r['to_exit']:.2f}"
        print(f"{' '.join(args)};{r['exit']};{r['peak_mb']:.0f};{r['wall']:.2f};{to_exit};"
              f"{r['last'][:120]}", flush=True)
        return
    one = [sys.executable, __file__, "--after", str(a.after), "--cap-gb", str(a.cap_gb),
           "--timeout", str(a.timeout), *(["--after-progress"] if a.after_progress else []),
           *(["--api", a.api] if a.api else []), "--", *args]
    cols = []
    for _ in range(a.repeat):
        line = subprocess.run(one, capture_output=True, text=True).stdout.strip()
        print(line, flush=True)
        cols.append(line.split(";"))

    def med(i):
        vals = [float(c[i]) for c in cols if len(c) > i and c[i] not in ("-", "")]
        return statistics.median(vals) if vals else float("nan")

    print(f"# median of {len(cols)}: peak RSS {med(2):.0f} MB, wall {med(3):.2f} s, "
          f"SIGINT to exit {med(4):.2f} s")


if __name__ == "__main__":
    main()
