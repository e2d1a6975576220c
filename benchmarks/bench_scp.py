"""Benchmark edgecode.scp against plain references, side by side in one process.

Usage::

    python benchmarks/bench_scp.py [--fast | --full]

Prints the first-call times (numba compile, or load from the on-disk cache)
separately, then a parseable table ``task;n;peer_s;edgecode_s;ratio`` (median
of repeats, seconds per call; ratio = peer / edgecode, '-' where there is no
peer), then the bounds gaps.

Tasks
-----
* ``exact_vs_numpy``: ``scp_exact`` vs a plain numpy 2**n enumeration (subset
  sums by doubling, then one mask-and-sum), random data, per point.
* ``exact_alloc``: the greedy allocator's workload, 16 steps x 16 candidate
  features of ``scp_exact`` on all 435 house-votes points (peer: '-').
* ``approx_pt`` / ``bounds_pt``: ``scp_approx`` (k=50, shift) and
  ``scp_bounds`` (default resolution) per point, peer ``scp_exact`` where
  n allows it, else '-'.

Data: random Gaussian deltas (seeded) and the house-votes set bundled with
edgecode (``edgecode.datasets.load_house_votes``, Laplace naive Bayes margins);
nothing is read from ../shared.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from _common import median_time

from edgecode.datasets import load_house_votes
from edgecode.scp import scp_approx, scp_bounds, scp_exact, scp_monte_carlo

PROFILES = {
    "fast": dict(repeats=3, n24_points=1, pts_small=20, pts_1000=2),
    "full": dict(repeats=7, n24_points=3, pts_small=100, pts_1000=6),
}


def numpy_enumeration(margin, deltas, eps):
    """Plain numpy reference: all 2**n subset sums and probabilities."""
    out = np.empty(len(margin))
    for p in range(len(margin)):
        sums = np.zeros(1)
        probs = np.ones(1)
        for j in range(deltas.shape[1]):
            sums = np.concatenate([sums, sums + deltas[p, j]])
            probs = np.concatenate([probs * (1 - eps), probs * eps])
        s = margin[p] + sums
        out[p] = probs[(s > 0) == (margin[p] > 0)].sum()
    return out


_COMPILE_PROBE = """
import time
import numpy as np

from _common import median_time
from edgecode.scp import scp_approx, scp_bounds, scp_exact
m, d = np.array([0.5, -0.25]), np.array([[1.0, -2.0, 0.5], [0.5, 0.5, -1.0]])
for f in (scp_exact, scp_approx, scp_bounds):
    t0 = time.perf_counter()
    f(m, d, 0.1)
    print(f"# {f.__name__}: {time.perf_counter() - t0:.3f}")
"""


def timed(fn, repeats):
    return median_time(fn, repeats=repeats, warmup=0)


def house_margins():
    d = load_house_votes()
    X, y = d.X.astype(float), d.y
    p1 = (X[y == 1].sum(0) + 1) / ((y == 1).sum() + 2)
    p0 = (X[y == 0].sum(0) + 1) / ((y == 0).sum() + 2)
    w1, w0 = np.log(p1 / p0), np.log((1 - p1) / (1 - p0))
    S = np.log(y.mean() / (1 - y.mean())) + (X * w1 + (1 - X) * w0).sum(1)
    D = np.where(X == 1, w0 - w1, w1 - w0)
    return S, D


def random_case(n, t, seed):
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(t, n)) * rng.uniform(0.1, 1.0, n)
    m = rng.normal(size=t) * np.sqrt(n) * 0.3
    return m, d


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true", help="few repeats (default)")
    g.add_argument("--full", action="store_true", help="more repeats and points")
    args = ap.parse_args()
    prof = PROFILES["full" if args.full else "fast"]
    R = prof["repeats"]
    eps = 0.05

    # ---- JIT compile time, measured apart: a child process with an empty cache
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp)
        out = subprocess.run([sys.executable, "-c", _COMPILE_PROBE], env=env,
                             capture_output=True, text=True, check=True).stdout
    print("# numba compile time (fresh cache, first call), seconds")
    print(out.rstrip())

    # ---- first calls in this process (load from the on-disk cache)
    m, d = random_case(8, 2, 0)
    print("# first call in this process (cache load), seconds")
    for name, fn in [("scp_exact", lambda: scp_exact(m, d, eps)),
                     ("scp_approx", lambda: scp_approx(m, d, eps)),
                     ("scp_bounds", lambda: scp_bounds(m, d, eps)),
                     ("scp_monte_carlo", lambda: scp_monte_carlo(m, d, eps, 100, 0))]:
        t0 = time.perf_counter()
        fn()
        print(f"# {name}: {time.perf_counter() - t0:.3f}")

    rows = []

    def row(task, n, peer, ours):
        ratio = f"{peer / ours:.3g}" if isinstance(peer, float) else "-"
        ps = f"{peer:.3e}" if isinstance(peer, float) else "-"
        rows.append(f"{task};{n};{ps};{ours:.3e};{ratio}")

    # ---- exact vs numpy enumeration
    for n, t in [(16, 8), (24, prof["n24_points"])]:
        m, d = random_case(n, t, n)
        ref = numpy_enumeration(m, d, eps)
        assert np.allclose(scp_exact(m, d, eps), ref, rtol=1e-10)
        peer = timed(lambda: numpy_enumeration(m, d, eps), 1 if n > 16 else R) / t
        ours = timed(lambda: scp_exact(m, d, eps), R) / t
        row("exact_vs_numpy", n, peer, ours)

    # ---- the allocator's workload
    S, D = house_margins()
    ours = timed(lambda: [scp_exact(S, D, 0.2) for _ in range(256)], R)
    row("exact_alloc_16x16_435pts", 16, "-", ours)

    # ---- approx and bounds per point
    gaps = []
    for n in (16, 100, 1000):
        t = prof["pts_1000"] if n == 1000 else prof["pts_small"]
        m, d = random_case(n, t, 100 + n)
        peer = timed(lambda: scp_exact(m, d, eps), R) / t if n <= 16 else "-"
        ours_a = timed(lambda: scp_approx(m, d, eps), 1 if n == 1000 else R) / t
        row("approx_pt", n, peer, ours_a)
        ours_b = timed(lambda: scp_bounds(m, d, eps), R) / t
        row("bounds_pt", n, peer, ours_b)
        lo, up = scp_bounds(m, d, eps)
        gaps.append((f"random n={n} eps={eps}", float((up - lo).max())))
        if n == 1000:
            for res in (2 ** 17,):
                ours_r = timed(lambda: scp_bounds(m, d, eps, resolution=res), 1) / t
                row(f"bounds_pt_res{res}", n, "-", ours_r)
                lo, up = scp_bounds(m, d, eps, resolution=res)
                gaps.append((f"random n={n} eps={eps} resolution={res}",
                             float((up - lo).max())))

    print("task;n;peer_s;edgecode_s;ratio")
    for r in rows:
        print(r)

    # ---- bounds gaps
    print("# max bounds gap (upper - lower)")
    for e in (1e-2, 0.2):
        lo, up = scp_bounds(S, D, e)
        ex = scp_exact(S, D, e)
        ok = bool(np.all((lo <= ex) & (ex <= up)))
        gaps.insert(0, (f"house_votes eps={e} (contains exact: {ok})", float((up - lo).max())))
    for name, gap in gaps:
        print(f"# {name}: {gap:.3e}")


if __name__ == "__main__":
    main()
