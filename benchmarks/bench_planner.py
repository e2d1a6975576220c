"""Redundancy planning at scale: edgecode's planner beside a numpy normal-approximation greedy.

Usage::

    python bench_planner.py [--fast | --full] [--real] [--compile]

Scale table (``--fast``: n = 16 .. 1024, ``--full``: .. 4096): synthetic naive
Bayes models (class-conditional feature probabilities p0 ~ Beta(1, 3),
p1 = p0 + N(0, 0.08), fitted on 1500 generated rows), t = 500 planning points,
eps = 0.2, a budget of n units (2n bits).  For each n, in one process:

* ``edgecode_s``: ``allocate_greedy(method="auto")`` wall time without the
  certificate, ``certify_s`` the certificate (``scp_exact`` up to 24
  features, ``scp_bounds`` above);
* ``peer_s``: the normal-approximation greedy below (numpy, vectorised over
  points and features; the "dozen lines" a user would write);
* ``ratio`` = peer_s / edgecode_s (< 1: the peer is faster);
* plan quality by an independent numpy Monte Carlo (4000 flip patterns per
  point, same draws for every plan): mean 1-SCP of the uniform split, of the
  peer's plan and of edgecode's; where the change rates are too small for
  the Monte Carlo, the certified interval of both plans (``cert_*``,
  ``peer_cert_*``) and both plans' 1-SCP on one fine grid (8192 cells,
  ``fine_grid_*``); ``gain_*`` = uniform / planned 1-SCP on that fine grid;
* ``alg2_s``: Algorithm 2 as written (every candidate scored by a full SCP
  evaluation, exact up to 20 features, the certified bound above), timed on
  one step and multiplied by the number of steps (n <= 64 only);
* the growth exponent of edgecode_s (least squares on log-log, n >= 256).

``--real`` runs ``edgecode plan`` end to end (the command line, in process) on
the DNA set (180 features, all 3186 points, class "n" against the rest,
budget 60 bits at eps 0.2, and R = 1 at eps 0.01) and the movie-review set
(1000 word features, fitted on the train split, planned on its 250 test
points, R = 1, eps 0.2), both read from ``../shared/datasets/``, and compares
the plans with the peer's (Monte Carlo and certified intervals of both).

``--compile`` measures the planner's numba compile time in a child process
with an empty cache.

``--estimate`` checks ``edgecode plan``'s expected-time line
(``estimate_plan_seconds``, issue 24): the command runs in process on the
bundled sets (house votes, NLTCS, DNA) and on a synthetic wide CSV (1000
features, 300 planning points), budgets from 32 bits to 10**9 (plans that
stop early), and the estimate is set beside the measured time of planning
and scoring (what the line predicts): medians of ``--repeats`` runs (one
run for the cases over a minute), ratio = estimate / actual.
"""

import argparse
import contextlib
import io
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.special import ndtr

from _common import SHARED, machine, print_table, synthetic_nb
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import (allocate_greedy, allocate_uniform, certify_plan,
                                 repetition_error)
from edgecode.redundancy.greedy import SCP_METHODS, _greedy_by_evaluation
from edgecode.redundancy.influence import GridEngine

PROFILES = {"fast": [16, 32, 64, 128, 256, 512, 1024],
            "full": [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]}


def synthetic(n, t, seed=0):
    return synthetic_nb(n, t, seed, n_fit=1500)


def normal_greedy(margin, deltas, eps, units):
    """Peer: greedy on a normal approximation of each point's flip sum (numpy)."""
    sgn = np.where(margin > 0, 1.0, -1.0)
    thr = -sgn * margin                       # change iff sum of flipped D' <= thr
    D = sgn[:, None] * deltas
    r = np.zeros(deltas.shape[1], np.int64)
    e = np.array(eps, dtype=float)
    for _ in range(units):
        mu, var = D @ e, (D * D) @ (e * (1 - e))
        mq = mu[:, None] - e * D                              # without feature j
        sq = np.sqrt(np.maximum(var[:, None] - e * (1 - e) * D * D, 1e-12))
        infl = ndtr((thr[:, None] - D - mq) / sq) - ndtr((thr[:, None] - mq) / sq)
        drop = e - repetition_error(eps, r + 1)
        j = int(np.argmax(drop * infl.mean(axis=0)))
        r[j] += 1
        e[j] = repetition_error(eps[j], r[j])
    return r


def monte_carlo_change(margin, deltas, eff, trials, seed):
    """Independent check: mean 1-SCP by sampling flip patterns (numpy, fixed seed)."""
    rng = np.random.default_rng(seed)
    pos = margin > 0
    changed = 0
    for a in range(0, trials, 500):
        k = min(500, trials - a)
        flips = (rng.random((k, deltas.shape[1])) < eff).astype(np.float64)
        changed += int(((margin + flips @ deltas.T > 0) != pos).sum())
    p = changed / (trials * len(margin))
    return p, 2.576 * math.sqrt(max(p * (1 - p), 1e-300) / (trials * len(margin)))


def scale_table(sizes, t=500, eps=0.2, trials=4000):
    rows, times = [], []
    for n in sizes:
        margin, deltas = synthetic(n, t)
        e = np.full(n, eps)
        t0 = time.perf_counter()
        plan = allocate_greedy(margin, deltas, eps, 2 * n, certify=False)
        ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        lo, up, how = certify_plan(margin, deltas, plan.effective_eps)
        cert = time.perf_counter() - t0
        t0 = time.perf_counter()
        r_peer = normal_greedy(margin, deltas, e, n)
        peer = time.perf_counter() - t0
        alg2 = "-"
        if n <= 64:
            name = "exact" if n <= 20 else "bounds"
            t0 = time.perf_counter()
            _greedy_by_evaluation(margin, deltas, e, 1, None, SCP_METHODS[name], {})
            alg2 = f"{(time.perf_counter() - t0) * n:.3g}"
        uni = repetition_error(e, allocate_uniform(n, 2 * n))
        eff_peer = repetition_error(e, r_peer)
        mc_u, ci = monte_carlo_change(margin, deltas, uni, trials, 1)
        mc_p, _ = monte_carlo_change(margin, deltas, eff_peer, trials, 1)
        mc_o, _ = monte_carlo_change(margin, deltas, plan.effective_eps, trials, 1)
        # deterministic comparison where the Monte Carlo cannot resolve small
        # change rates: both plans on the same fine grid (8192 cells), and the
        # peer's plan certified like ours
        fine_u = GridEngine(margin, deltas, uni, 8192).change.mean()
        fine_p = GridEngine(margin, deltas, eff_peer, 8192).change.mean()
        fine_o = GridEngine(margin, deltas, plan.effective_eps, 8192).change.mean()
        lo_p, up_p, _ = certify_plan(margin, deltas, eff_peer)
        st = plan.stats
        cells = st.get("grid_cells", 0)
        mem_mb = (cells * 8 * 2 + t * n * 8) / 2 ** 20   # CDFs + spectra (complex, half) + deltas
        rows.append([n, t, plan.method, f"{peer:.3g}", f"{ours:.3g}", f"{peer / ours:.3g}",
                     f"{cert:.3g}", alg2, f"{mc_u:.4e}", f"{mc_p:.4e}", f"{mc_o:.4e}",
                     f"{ci:.1e}", f"{fine_u / fine_p:.3f}", f"{fine_u / fine_o:.3f}",
                     f"{1 - up:.4e}", f"{1 - lo:.4e}", how, f"{1 - up_p:.4e}",
                     f"{1 - lo_p:.4e}", f"{fine_p:.4e}", f"{fine_o:.4e}",
                     f"{st['influence_columns'] / st['eager_columns']:.2f}", f"{mem_mb:.0f}"])
        times.append((n, ours))
        print(";".join(str(v) for v in rows[-1]), file=sys.stderr, flush=True)
    print_table(["n", "t", "method", "peer_s", "edgecode_s", "ratio", "certify_s", "alg2_s",
                 "mc_1-SCP_uniform", "mc_1-SCP_peer", "mc_1-SCP_edgecode", "mc_ci99",
                 "gain_peer", "gain_edgecode", "cert_1-SCP_lo", "cert_1-SCP_hi", "certified_by",
                 "peer_cert_lo", "peer_cert_hi", "fine_grid_peer", "fine_grid_edgecode",
                 "lazy_fraction", "state_MiB"], rows)
    big = [(n, s) for n, s in times if n >= 256]
    if len(big) >= 2:
        x, y = np.log([b[0] for b in big]), np.log([b[1] for b in big])
        slope = np.polyfit(x, y, 1)[0]
        print(f"# growth exponent of edgecode_s for n >= 256 (budget n units): n^{slope:.2f}")
    print(f"# peak RSS of this process: "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def real_data():
    from export.cli import main
    cases = [
        ("dna", [str(SHARED / "dna_statlog.csv.gz"), "--positive", "n", "--eps", "0.2",
                 "--budget", "60"]),
        ("moviereview", [str(SHARED / "moviereview_binary.csv.gz"), "--ignore", "file",
                         "--eps", "0.2", "--R", "1"]),
        ("dna_eps0.01", [str(SHARED / "dna_statlog.csv.gz"), "--positive", "n", "--eps",
                         "0.01", "--R", "1"]),
    ]
    from export.data import load_binary
    rows = []
    for name, argv in cases:
        buf = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            code = main(["plan", *argv])
        wall = time.perf_counter() - t0
        text = buf.getvalue()
        print(text, file=sys.stderr)
        assert code == 0, text
        ratio_line = [ln for ln in text.splitlines() if ln.startswith("ratio")][0]
        # the peer on the same planning points
        opts = {"positive": "n"} if name.startswith("dna") else {"ignore": ["file"]}
        d = load_binary(argv[0], **opts)
        fit, pl = (d, d) if d.split is None else (d.subset("train"), d.subset("test"))
        nb = BinaryNaiveBayes().fit(fit.X, fit.y)
        m, D = nb.decision_function(pl.X), nb.flip_deltas(pl.X)
        n = D.shape[1]
        units = 30 if name == "dna" else n
        eps = float(argv[argv.index("--eps") + 1])
        e = np.full(n, eps)
        t0 = time.perf_counter()
        r_peer = normal_greedy(m, D, e, units)
        peer = time.perf_counter() - t0
        t0 = time.perf_counter()
        ours = allocate_greedy(m, D, eps, 2 * units, certify=False)
        plan_s = time.perf_counter() - t0
        ref = repetition_error(e, allocate_uniform(n, 2 * units)) if 2 * units >= 2 * n \
            else e
        mc_ref, ci = monte_carlo_change(m, D, ref, 4000, 2)
        mc_p, _ = monte_carlo_change(m, D, repetition_error(e, r_peer), 4000, 2)
        mc_o, _ = monte_carlo_change(m, D, ours.effective_eps, 4000, 2)
        lo_p, up_p, _ = certify_plan(m, D, repetition_error(e, r_peer))
        lo_o, up_o, _ = certify_plan(m, D, ours.effective_eps)
        rows.append([name, n, len(m), f"{wall:.1f}", f"{peer:.3g}", f"{plan_s:.3g}",
                     f"{mc_ref:.4e}", f"{mc_p:.4e}", f"{mc_o:.4e}", f"{ci:.1e}",
                     f"[{1 - up_p:.4e},{1 - lo_p:.4e}]", f"[{1 - up_o:.4e},{1 - lo_o:.4e}]",
                     f"{mc_ref / max(mc_p, 1e-300):.3f}", f"{mc_ref / max(mc_o, 1e-300):.3f}",
                     ratio_line])
    print_table(["data", "n", "t", "cli_wall_s", "peer_s", "edgecode_plan_s",
                 "mc_1-SCP_reference", "mc_1-SCP_peer", "mc_1-SCP_edgecode", "mc_ci99",
                 "cert_1-SCP_peer", "cert_1-SCP_edgecode", "gain_peer", "gain_edgecode",
                 "cli_ratio_line"], rows)


_COMPILE_PROBE = """
import time
import numpy as np
from edgecode.redundancy import allocate_greedy
m, d = np.array([0.5, -0.25, 0.1]), np.array([[1.0, -2.0, 0.5], [0.5, 0.5, -1.0], [0.2, -0.3, 0.1]])
for method in ("exact", "grid"):
    t0 = time.perf_counter()
    allocate_greedy(m, d, 0.1, 4, method=method, certify=False)
    print(f"# allocate_greedy method={method}: {time.perf_counter() - t0:.2f}")
"""


def compile_time():
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp)
        for label in ("empty cache", "warm cache"):
            out = subprocess.run([sys.executable, "-c", _COMPILE_PROBE], env=env,
                                 capture_output=True, text=True, check=True).stdout
            print(f"# first call in a new process, {label} (seconds)")
            print(out.rstrip())


#: ``--estimate`` cases: (label, edgecode plan arguments); "{wide}" is the synthetic CSV
ESTIMATE_CASES = [
    ("house_votes 32 bits", ["house_votes", "--eps", "0.2", "--budget", "32"]),
    ("house_votes 1e9 bits", ["house_votes", "--eps", "0.2", "--budget", "1000000000"]),
    ("nltcs R=1", ["nltcs", "--eps", "0.2", "--R", "1"]),
    ("nltcs 1e9 bits", ["nltcs", "--eps", "0.2", "--budget", "1000000000"]),
    ("dna 60 bits", ["dna", "--eps", "0.2", "--budget", "60"]),
    ("dna R=1", ["dna", "--eps", "0.2", "--R", "1"]),
    ("wide n=1000 R=1", ["{wide}", "--eps", "0.2", "--R", "1"]),
    ("dna 1e9 bits", ["dna", "--eps", "0.2", "--budget", "1000000000"]),
]


def _wide_csv(path, n=1000, n_fit=1500, t=300, seed=0):
    """A synthetic wide binary CSV (the generator of ``_common.synthetic_nb``)."""
    import csv
    import gzip
    rng = np.random.default_rng(seed)
    p0 = rng.beta(1, 3, n)
    p1 = np.clip(p0 + rng.normal(0, 0.08, n), 0.01, 0.99)
    y = rng.integers(0, 2, n_fit + t)
    X = (rng.random((len(y), n)) < np.where(y[:, None] == 1, p1, p0)).astype(np.uint8)
    with gzip.open(path, "wt", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{j}" for j in range(n)] + ["class", "split"])
        for i in range(len(y)):
            w.writerow([*X[i], int(y[i]), "train" if i < n_fit else "test"])


def estimate_table(repeats=3, skip_long=False, only=None):
    """edgecode plan: expected time (the estimate it prints) against the measured time."""
    from export.data import load_binary
    from export.cli.naive_bayes import _parse_eps, run_plan
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        wide = os.path.join(tmp, "wide.csv.gz")
        _wide_csv(wide)
        for label, argv in ESTIMATE_CASES:
            if only and not any(o in label for o in only):
                continue
            argv = [a.replace("{wide}", wide) for a in argv]
            data = load_binary(argv[0])
            n = data.X.shape[1]
            eps = _parse_eps(argv[argv.index("--eps") + 1], n)
            budget = int(argv[argv.index("--budget") + 1]) if "--budget" in argv else \
                2 * n * int(argv[argv.index("--R") + 1])
            est, actual, steps = None, [], None
            load = os.getloadavg()[0]
            for _ in range(repeats):
                res = run_plan(data, eps, budget, stream=io.StringIO(), quiet=True)
                est = res["expected_seconds"]
                actual.append(res["elapsed_seconds"])
                steps = len(res["plan"].history)
                if actual[-1] > 60 or (skip_long and est > 120):
                    break
            med = float(np.median(actual))
            shown = " ".join("wide.csv.gz" if a == wide else a for a in argv)
            rows.append([label, f"{est:.3g}", f"{med:.3g}", f"{est / med:.2f}", len(actual),
                         steps, budget // 2, f"{load:.1f}", f"edgecode plan {shown}"])
            print(f"# {label}: estimate {est:.3g} s, actual {med:.3g} s", flush=True)
    print_table(["case", "estimate_s", "actual_s", "ratio", "runs", "steps", "units",
                 "load_avg", "command"], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true", help="n up to 1024 (default)")
    g.add_argument("--full", action="store_true", help="n up to 4096")
    ap.add_argument("--real", action="store_true", help="DNA and movie review end to end")
    ap.add_argument("--compile", action="store_true", help="numba compile time")
    ap.add_argument("--sizes", help="comma list of n (overrides the profile)")
    ap.add_argument("--estimate", action="store_true",
                    help="only the expected-time check of edgecode plan (issue 24)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per --estimate case")
    ap.add_argument("--cases", help="--estimate: comma list of case labels to run (substrings)")
    args = ap.parse_args()
    import numba
    print(f"# machine: {machine()}, numba threads {numba.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    if args.estimate:
        allocate_greedy(*synthetic(30, 5), 0.2, 4)   # load or compile the kernels first
        allocate_greedy(*synthetic(10, 5), 0.2, 4)
        estimate_table(args.repeats, only=args.cases.split(",") if args.cases else None)
        print(f"# load average at the end {os.getloadavg()[0]:.2f}")
        return
    if args.compile:
        compile_time()
    sizes = [int(v) for v in args.sizes.split(",")] if args.sizes else \
        PROFILES["full" if args.full else "fast"]
    allocate_greedy(*synthetic(30, 5), 0.2, 4)   # load or compile the kernels first
    scale_table(sizes)
    if args.real:
        real_data()


if __name__ == "__main__":
    main()
