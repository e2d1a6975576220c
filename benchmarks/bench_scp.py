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
* ``exact_vs_numpy_mitm``: ``scp_exact`` on all 435 house-votes points
  (n = 16, eps = 0.2) vs a plain per-point numpy meet in the middle (subset
  sums and probabilities of each half by numpy doubling, one half sorted,
  ``np.searchsorted`` + cumulative sums), whole call; with numba's default
  thread count, and ``_threads1`` with ``numba.set_num_threads(1)``.  Peer
  and edgecode are timed alternately (a peer call, then the median of a few
  edgecode calls, per round); the ratio is the median of the per-round
  ratios, so that both sides of a ratio saw the same machine state.
  ``exact_vs_numpy_mitm_random``: the same on 435 random Gaussian points
  (n = 16, no two points share a half, so ``scp_exact`` has no work to
  share: the kernel's speed alone).
* ``exact_alloc``: the greedy allocator's workload, 16 steps x 16 candidate
  features of ``scp_exact`` on all 435 house-votes points (peer: '-').
* ``approx_pt`` / ``bounds_pt``: ``scp_approx`` (k=50, shift) and
  ``scp_bounds`` (default resolution) per point, peer ``scp_exact`` where
  n allows it, else '-'.
* ``bounds_synth_pt_threads{1,2}``: ``scp_bounds`` (default resolution,
  rounding "auto") per point on synthetic naive-Bayes data (``synthetic_nb``) at
  eps = 0.2, n = 256, 1024, 4096, with one and two numba threads (peer: '-').
  The mean gaps (upper - lower) of the same points follow the table, for
  directed rounding (the method before nearest rounding existed), nearest
  and auto.

Data: random Gaussian deltas (seeded), the synthetic naive Bayes generator
``_common.synthetic_nb`` (seeded) and the house-votes set bundled with edgecode
(``edgecode.datasets.load_house_votes``, Laplace naive Bayes margins);
nothing is read from ../shared.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np

from _common import median_time, synthetic_nb

from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.scp import scp_approx, scp_bounds, scp_exact, scp_monte_carlo

PROFILES = {
    "fast": dict(repeats=3, n24_points=1, pts_small=20, pts_1000=2, mitm_rounds=7,
                 mitm_ours=15, synth_pts={256: 40, 1024: 20, 4096: 6}),
    "full": dict(repeats=7, n24_points=3, pts_small=100, pts_1000=6, mitm_rounds=21,
                 mitm_ours=21, synth_pts={256: 200, 1024: 100, 4096: 40}),
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


def _numpy_half(d, e):
    """Subset sums and probabilities of one half by numpy doubling (unsorted)."""
    m = 1 << len(d)
    sums = np.zeros(m)
    probs = np.ones(m)
    k = 1
    for dj, ej in zip(d.tolist(), e.tolist()):
        np.add(sums[:k], dj, out=sums[k:2 * k])
        np.multiply(probs[:k], ej, out=probs[k:2 * k])
        probs[:k] *= 1.0 - ej
        k *= 2
    return sums, probs


def numpy_mitm(margin, deltas, eps):
    """Plain per-point numpy meet in the middle; returns the change probability.

    Same conventions as ``scp_exact``: features with eps_j == 0 or D_j == 0 are
    dropped, the first half is the first n' // 2 of the rest; class 1 iff
    S > 0, and a flip set changes the class iff ``((S + A) + B > 0) != (S > 0)``.
    The sign of a float sum is the sign of the exact sum, so for S > 0 the
    changing B are those with ``B <= -(S + A)`` (``searchsorted`` right), for
    S <= 0 those with ``B > -(S + A)``.
    """
    t, n = deltas.shape
    eps = np.broadcast_to(np.asarray(eps, float), (n,))
    out = np.empty(t)
    for p in range(t):
        s = margin[p]
        act = (eps > 0) & (deltas[p] != 0)
        d, e = deltas[p, act], eps[act]
        h = len(d) // 2
        sa, pa = _numpy_half(d[:h], e[:h])
        sb, pb = _numpy_half(d[h:], e[h:])
        order = np.argsort(sb)
        sb = sb[order]
        cum = np.empty(len(sb) + 1)
        cum[0] = 0.0
        np.cumsum(pb[order], out=cum[1:])
        k = np.searchsorted(sb, -(s + sa), side="right")
        out[p] = pa @ cum[k] if s > 0 else pa @ (cum[-1] - cum[k])
    return out


def with_threads(k, fn):
    """fn() run with numba's thread count set to k (restored after)."""
    old = numba.get_num_threads()
    numba.set_num_threads(k)
    try:
        return fn()
    finally:
        numba.set_num_threads(old)


_COMPILE_PROBE = """
import time
import numpy as np

from edgecode.scp import scp_approx, scp_bounds, scp_exact
m, d = np.array([0.5, -0.25]), np.array([[1.0, -2.0, 0.5], [0.5, 0.5, -1.0]])
for f in (scp_exact, scp_approx, scp_bounds):
    t0 = time.perf_counter()
    f(m, d, 0.1)
    print(f"# {f.__name__}: {time.perf_counter() - t0:.3f}")
# large calls run the threaded chunk kernels (several points per call)
rng = np.random.default_rng(0)
m, d = rng.normal(size=64), rng.normal(size=(64, 16))
for f in (scp_exact, scp_bounds):
    t0 = time.perf_counter()
    f(m, d, 0.1)
    print(f"# {f.__name__} (threaded, first large call): "
          f"{time.perf_counter() - t0:.3f}")
"""


def timed(fn, repeats):
    return median_time(fn, repeats=repeats, warmup=0)


def paired(peer_fn, ours_fn, rounds, inner):
    """Peer and edgecode timed alternately, so both see the same machine state.

    Each round times one peer call and the median of ``inner`` edgecode
    calls; returns the median peer time, the median edgecode time and the
    median of the per-round ratios (peer / edgecode).
    """
    peers, ours, ratios = [], [], []
    for _ in range(rounds):
        p = timed(peer_fn, 1)
        o = timed(ours_fn, inner)
        peers.append(p)
        ours.append(o)
        ratios.append(p / o)
    return statistics.median(peers), statistics.median(ours), statistics.median(ratios)


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

    def row(task, n, peer, ours, ratio=None):
        if ratio is None and isinstance(peer, float):
            ratio = peer / ours
        ratio = f"{ratio:.3g}" if ratio is not None else "-"
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

    # ---- exact vs a per-point numpy meet in the middle, house votes, eps 0.2
    S, D = house_margins()
    threads = numba.get_num_threads()
    ref = numpy_mitm(S, D, 0.2)
    assert np.allclose(scp_exact(S, D, 0.2, return_change=True), ref, rtol=1e-12, atol=0)
    mr, dr = random_case(16, 435, 435)                   # no repeated halves
    assert np.allclose(scp_exact(mr, dr, 0.2, return_change=True), numpy_mitm(mr, dr, 0.2),
                       rtol=1e-12, atol=0)
    for (m_, d_), name in [((S, D), "exact_vs_numpy_mitm"),
                           ((mr, dr), "exact_vs_numpy_mitm_random")]:
        for k, task in [(threads, name), (1, name + "_threads1")]:
            scp_exact(m_, d_, 0.2)                       # warm the thread pool
            peer, ours, ratio = with_threads(k, lambda: paired(
                lambda: numpy_mitm(m_, d_, 0.2), lambda: scp_exact(m_, d_, 0.2),
                prof["mitm_rounds"], prof["mitm_ours"]))
            row(task, 16, peer, ours, ratio)

    # ---- the allocator's workload
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

    # ---- bounds per point on synthetic naive Bayes data, 1 and 2 threads
    synth_gaps = []
    for n, t in prof["synth_pts"].items():
        m, d = synthetic_nb(n, t)
        for k in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            ours = with_threads(k, lambda: timed(lambda: scp_bounds(m, d, 0.2), R)) / t
            row(f"bounds_synth_pt_threads{k}", n, "-", ours)
        by_r = {r: scp_bounds(m, d, 0.2, rounding=r) for r in ("directed", "nearest", "auto")}
        synth_gaps.append((n, t, {r: float((up - lo).mean()) for r, (lo, up) in by_r.items()}))

    print(f"# numba threads: {threads} (threading layer {numba.threading_layer()}); "
          "rows without _threads1 use them all")
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
    print("# scp_bounds mean gap on synth(n, t), eps=0.2, default resolution: "
          "directed / nearest / auto rounding")
    for n, t, g in synth_gaps:
        print(f"# synth n={n} t={t}: {g['directed']:.4f} / {g['nearest']:.4f} / {g['auto']:.4f}")


if __name__ == "__main__":
    main()
