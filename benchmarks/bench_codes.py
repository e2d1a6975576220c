"""Benchmark edgecode.ecoc coding matrices: speed, memory and quality, with peers.

Usage::

    python benchmarks/bench_codes.py [--fast | --full]

Sections (all numbers are medians over repeats; the machine is printed):

1. numba compile time (child process with an empty cache) and cache-load time.
2. ``distances``: d_r and d_c of a 1000 x 2000 13-ary matrix, edgecode's
   kernel vs ``scipy.spatial.distance.pdist(..., "hamming")`` (peer) on rows
   and columns; table ``task;n;peer_s;edgecode_s;ratio``.
3. ``nary`` at c = 1000, n = 2000, N = 13 (top-left and adaptive): time and
   peak memory traced by ``tracemalloc`` (numpy arrays) in a child process.
4. ``annealed`` on 104 classes x 100 columns (seed 003: 104 codewords of 100
   bits): mean and std of the pairwise codeword distances before (the random
   start) and after, time (``seed003_tables.py distances`` also runs the
   paper's schedule).
5. ``bch``: designed distance 2t + 1 vs the measured d_r of c codewords, and
   the exact minimum distance of the whole code (brute force, k <= 16).
6. scikit-learn's random code (``OutputCodeClassifier``, 10 classes, code
   sizes 1.0 and 2.0) over seeds: minimum row distance and constant columns,
   next to ``dense_random`` and ``hadamard`` for the same shapes.
7. ``make_code("nary", ...)`` warm (kernels compiled, adaptive truncation with
   its swap climb) at 10 x 20 N = 3, 26 x 13 N = 2 and 50 x 60 N = 5, with the
   d_r and d_c of the result.

No data is read (codes are data independent).
"""

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from _common import machine, median_time

from edgecode.ecoc import (annealed, bch, check_properties, column_distance, dense_random,
                           distance_stats, hadamard, make_code, nary, row_distance)
from edgecode.ecoc.annealing import _random_binary
from edgecode.ecoc.bch import bch_generator_matrix

PROFILES = {
    "fast": dict(repeats=3, anneal_seeds=3, sk_seeds=20),
    "full": dict(repeats=7, anneal_seeds=10, sk_seeds=200),
}

_COMPILE_PROBE = """
import time
t0 = time.perf_counter()
from edgecode.ecoc import make_code, check_properties
t1 = time.perf_counter()
for d, kw in [("nary", {"N": 3}), ("dense_random", {"n_draws": 2}), ("annealed", {"n_temps": 2}),
              ("bch", {"n_draws": 1})]:
    t = time.perf_counter()
    check_properties(make_code(d, 12, random_state=0, **kw))
    print(f"# {d} (+check_properties): {time.perf_counter() - t:.3f}")
print(f"# import: {t1 - t0:.3f}; total: {time.perf_counter() - t0:.3f}")
"""

_MEM_PROBE = """
import sys, time, tracemalloc
import numpy as np
from edgecode.ecoc import nary, check_properties
nary(20, 40, N=13)
nary(20, 40, N=13, truncation="top_left")
check_properties(np.zeros((3, 3), np.int8))
rule = sys.argv[1]
tracemalloc.start()
t0 = time.perf_counter()
M = nary(1000, 2000, N=13, truncation=rule)
dt = time.perf_counter() - t0
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
p = check_properties(M)
print(f"{dt:.3f};{p.d_r:g};{p.d_c:g};{p.valid};{peak / 2**20:.1f}")
"""


def _child(code, *args, env=None):
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=True, env=env, cwd=os.path.dirname(os.path.abspath(__file__))
                          ).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true", help="few repeats (default)")
    g.add_argument("--full", action="store_true", help="more repeats and seeds")
    args = ap.parse_args()
    prof = PROFILES["full" if args.full else "fast"]
    R = prof["repeats"]
    print(f"# machine: {machine()}; profile {'full' if args.full else 'fast'}")

    # 1. compile time
    with tempfile.TemporaryDirectory() as tmp:
        out = _child(_COMPILE_PROBE, env=dict(os.environ, NUMBA_CACHE_DIR=tmp))
    print("# numba compile time (fresh cache, first calls), seconds")
    print(out.rstrip())
    print("# same, cache warm (load from disk)")
    print(_child(_COMPILE_PROBE).rstrip())

    # 2. distances vs scipy
    from scipy.spatial.distance import pdist
    rng = np.random.default_rng(0)
    M = rng.integers(0, 13, (1000, 2000)).astype(np.int8)
    MT = np.ascontiguousarray(M.T)
    assert row_distance(M) == round(pdist(M, "hamming").min() * M.shape[1])
    print("task;n;peer_s;edgecode_s;ratio")
    peer_r = median_time(lambda: pdist(M, "hamming"), repeats=max(1, R // 2))
    ours_r = median_time(lambda: row_distance(M), repeats=R)
    print(f"d_r_1000x2000_N13;2000;{peer_r:.3e};{ours_r:.3e};{peer_r / ours_r:.3g}")
    peer_c = median_time(lambda: pdist(MT, "hamming"), repeats=max(1, R // 2))
    ours_c = median_time(lambda: column_distance(M), repeats=R)
    print(f"d_c_1000x2000_N13;1000;{peer_c:.3e};{ours_c:.3e};{peer_c / ours_c:.3g}")
    ours_p = median_time(lambda: check_properties(M), repeats=R)
    print(f"check_properties_1000x2000;2000;-;{ours_p:.3e};-")
    Mt = rng.integers(-1, 2, (1000, 2000)).astype(np.int8)
    ours_t = median_time(lambda: row_distance(Mt), repeats=R)
    print(f"d_r_1000x2000_ternary;2000;-;{ours_t:.3e};-")

    # 3. nary 1000 x 2000, N = 13: time and memory
    print("# nary(1000, 2000, N=13): rule;seconds;d_r;d_c;valid;peak traced numpy memory (MiB)")
    for rule in ("top_left", "adaptive"):
        print(f"{rule};{_child(_MEM_PROBE, rule).strip()}")
    print(f"# (output: {1000 * 2000 / 2**20:.1f} MiB int8; M_3(13) would be "
          f"{13**3 * 13**3 / 2**20:.1f} MiB and M_4(13) {13**8 / 2**20:.0f} MiB: never built; "
          "kernel-internal buffers are O(n k) int64)")

    # 4. annealing 104 x 100 (104 codewords of 100 bits, as the seed)
    print("# annealed(104, 100): seed;start mean;start std;start min;after mean;after std;"
          "after min;seconds")
    means, stds, mins, s_means, s_stds, times = [], [], [], [], [], []
    annealed(10, 12, random_state=0, n_temps=2)              # warm
    for seed in range(prof["anneal_seeds"]):
        S = _random_binary(np.random.default_rng(1000 + seed), 104, 100)
        t0 = time.perf_counter()
        A = annealed(104, start=S, random_state=seed)
        dt = time.perf_counter() - t0
        s0, s1 = distance_stats(S), distance_stats(A)
        print(f"{seed};{s0[1]:.2f};{s0[2]:.2f};{s0[0]:g};{s1[1]:.2f};{s1[2]:.2f};{s1[0]:g};"
              f"{dt:.3f}")
        means.append(s1[1]); stds.append(s1[2]); mins.append(s1[0])
        s_means.append(s0[1]); s_stds.append(s0[2]); times.append(dt)
    print(f"# median: random start {statistics.median(s_means):.2f} +- "
          f"{statistics.median(s_stds):.2f}; annealed {statistics.median(means):.2f} +- "
          f"{statistics.median(stds):.2f} (min distance {statistics.median(mins):g}); "
          f"{statistics.median(times):.3f}s per run (seed 003: 49.96 +- 5.9 -> 50.48 +- 2.77)")

    # 5. BCH
    print("# bch: c;n;t;k;designed 2t+1;d_r of the c codewords;code min distance (brute force)")
    for c, n, t in [(10, 15, 3), (20, 31, 3), (40, 31, 5), (100, 63, 6), (100, 63, 11),
                    (100, 127, 10), (500, 255, 21)]:
        M = bch(c, n, t=t, random_state=0)
        G = bch_generator_matrix(n, t)
        k = G.shape[0]
        if k <= 16:
            best = min(int((np.array(m) @ G % 2).sum())
                       for m in itertools.product((0, 1), repeat=k) if any(m))
        else:
            best = "-"
        print(f"{c};{n};{t};{k};{2 * t + 1};{row_distance(M):g};{best}")

    # 6. scikit-learn's random code vs ours
    from sklearn.dummy import DummyClassifier
    from sklearn.multiclass import OutputCodeClassifier
    X = np.zeros((10, 1))
    y = np.arange(10)
    print("# 10 classes: design;code_size;n;min d_r over seeds;median d_r;"
          "share of draws with d_r <= 2;share with a constant column")
    for size in (1.0, 2.0):
        drs, const = [], []
        for seed in range(prof["sk_seeds"]):
            clf = OutputCodeClassifier(DummyClassifier(), code_size=size, random_state=seed)
            code = clf.fit(X, y).code_book_
            code = (code > 0).astype(np.int8)
            p = check_properties(code)
            drs.append(p.d_r)
            const.append(bool(p.constant_columns))
        n = code.shape[1]
        print(f"sklearn_random;{size};{n};{min(drs):g};{statistics.median(drs):g};"
              f"{np.mean(np.array(drs) <= 2):.2f};{np.mean(const):.2f}")
        ours = [row_distance(dense_random(10, n, random_state=s, n_draws=100))
                for s in range(min(prof["sk_seeds"], 20))]
        print(f"dense_random(n_draws=100);{size};{n};{min(ours):g};{statistics.median(ours):g};"
              f"{np.mean(np.array(ours) <= 2):.2f};0.00")
        h = check_properties(hadamard(10, n))
        print(f"hadamard(adaptive);{size};{n};{h.d_r:g};{h.d_r:g};{float(h.d_r <= 2):.2f};"
              f"{float(bool(h.constant_columns)):.2f}")
        a = check_properties(nary(10, n, N=3))
        print(f"nary(N=3,adaptive);{size};{n};{a.d_r:g};{a.d_r:g};{float(a.d_r <= 2):.2f};"
              f"{float(bool(a.constant_columns)):.2f}")

    # 7. make_code warm
    print("# make_code('nary', c, n, N=N) warm: c;n;N;seconds (median);d_r;d_c")
    make_code("nary", 5, 6, N=3)                             # compile
    for c, n, N in [(10, 20, 3), (26, 13, 2), (50, 60, 5)]:
        dt = median_time(lambda: make_code("nary", c, n, N=N), repeats=R)
        p = check_properties(make_code("nary", c, n, N=N))
        print(f"{c};{n};{N};{dt:.3f};{p.d_r:g};{p.d_c:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
