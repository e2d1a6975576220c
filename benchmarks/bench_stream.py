"""SSBC stream throughput (points per second) and peak memory.

Usage::

    python benchmarks/bench_stream.py [--fast]

Synthetic stream (seeded, generated batch by batch, nothing read from
../shared): a 128-d mixture of 32 Gaussians (centres N(0, 4^2 I), unit
within-cluster noise).  Full profile: 1e6 points; --fast: 1e5.  Grid: anchors
m in {256, 1024} x sketch ell in {32, 64, 128} (--fast: ell in {32, 64}),
n_bits = ell / 2, batches of 10 000 points, mode="streaming".

Per configuration: points/s of ``partial_fit`` (median over the batches after
the warm-up batch, and overall), the fraction of the time spent computing
affinities, the SSBC state size (``state_nbytes``) and the peak of memory
allocated during ``partial_fit`` calls (tracemalloc, numpy buffers included;
it is dominated by the batch x m affinity block, independent of the stream
length).  Output: ``m;ell;bits;n;pts_per_s_median;pts_per_s_total;
affinity_share;state_MB;peak_MB``.

``--fidelity`` (seed 002, issue 15): the cost of the paper's choices on the
same stream, 20 000 points (--fast: 10 000), m in {256, 1024} x ell in
{32, 64}, n_bits = ell / 2: points/s of ``partial_fit`` with our doubled
Frequent Directions buffer (``update="compaction"``) and with the paper's
ell-row sketch, one SVD per point (``update="every_point"``), both in online
mode with ``partial_fit_transform``; and the state with
``store_affinities=True`` (the paper's streaming setting, O(n m)).  Output:
``m;ell;bits;n;update;pts_per_s;state_MB;state_MB_stored``.
"""

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, print_table  # noqa: E402

from edgecode.hashing import SSBC, gaussian_affinity  # noqa: E402


def stream(n, batch, d=128, k=32, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 4.0, (k, d))
    for s in range(0, n, batch):
        b = min(batch, n - s)
        yield centers[rng.integers(0, k, b)] + rng.normal(size=(b, d))


def run(m, ell, n, batch):
    h = SSBC(ell // 2, m, ell, random_state=0)
    rates, total, peak, aff = [], 0.0, 0, 0.0
    for i, X in enumerate(stream(n, batch)):
        tracemalloc.start()
        t0 = time.perf_counter()
        h.partial_fit(X)
        dt = time.perf_counter() - t0
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        total += dt
        if i > 0:
            rates.append(X.shape[0] / dt)
        if i == 3:   # affinity share, measured on one batch
            t0 = time.perf_counter()
            gaussian_affinity(X, h.anchors_, h.sigma_)
            aff = (time.perf_counter() - t0) / dt
    return (m, ell, ell // 2, n, statistics.median(rates), n / total, aff,
            h.state_nbytes() / 2**20, peak / 2**20)


def fidelity(n, batch=2_000):
    rows = []
    for m in (256, 1024):
        for ell in (32, 64):
            for update in ("compaction", "every_point"):
                h = SSBC(ell // 2, m, ell, mode="online", update=update, random_state=0)
                hs = SSBC(ell // 2, m, ell, update=update, store_affinities=True,
                          random_state=0)
                total = 0.0
                for X in stream(n, batch):
                    t0 = time.perf_counter()
                    h.partial_fit_transform(X)
                    total += time.perf_counter() - t0
                    hs.partial_fit(X)
                rows.append((m, ell, ell // 2, n, update, n / total, h.state_nbytes() / 2**20,
                             hs.state_nbytes() / 2**20))
                print("# row " + ";".join(f"{v:.4g}" if isinstance(v, float) else str(v)
                                          for v in rows[-1]), flush=True)
    print_table(["m", "ell", "bits", "n", "update", "pts_per_s", "state_MB",
                 "state_MB_stored"], rows)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--fidelity", action="store_true")
    args = ap.parse_args(argv)
    if args.fidelity:
        print(f"# {machine()}")
        return fidelity(10_000 if args.fast else 20_000)
    n = 100_000 if args.fast else 1_000_000
    ells = (32, 64) if args.fast else (32, 64, 128)
    print(f"# {machine()}")
    # JIT compile / cache load outside the timings
    t0 = time.perf_counter()
    SSBC(4, 16, 8, random_state=0).fit(np.random.default_rng(0).normal(size=(100, 4)))
    print(f"# first fit (compile or cache load) {time.perf_counter() - t0:.2f}s")
    rows = []
    for m in (256, 1024):
        for ell in ells:
            rows.append(run(m, ell, n, 10_000))
            print("# row " + ";".join(f"{v:.4g}" if isinstance(v, float) else str(v)
                                      for v in rows[-1]), flush=True)
    print_table(["m", "ell", "bits", "n", "pts_per_s_median", "pts_per_s_total",
                 "affinity_share", "state_MB", "peak_MB"], rows)


if __name__ == "__main__":
    main()
