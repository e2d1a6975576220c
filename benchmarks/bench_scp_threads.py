"""Batched SCP on one and two threads (issue 14): scp_exact (meet in the middle)
and scp_bounds (certified bounds) over points, split over numba's threads;
the results are the same for any thread count (tests/test_planner.py).

Run:  python benchmarks/bench_scp_threads.py
"""

import sys
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, median_time, print_table  # noqa: E402

from edgecode.datasets import load  # noqa: E402
from edgecode.naive_bayes import BinaryNaiveBayes  # noqa: E402
from edgecode.scp import scp_bounds, scp_exact  # noqa: E402


def timed(fn, threads, repeats=5):
    numba.set_num_threads(threads)
    return median_time(fn, repeats=repeats, warmup=1)


def main():
    print(f"# {machine()}; medians of 5 after a warm-up")
    rng = np.random.default_rng(0)
    D = rng.integers(-50, 50, (2000, 30)).astype(np.float64)
    m = rng.normal(0, 100, 2000)
    d = load("dna")
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    mm, DD = nb.decision_function(d.X), nb.flip_deltas(d.X)
    e = np.full(DD.shape[1], 0.05)
    tasks = [("scp_exact_random_2000x30", lambda: scp_exact(m, D, 0.1)),
             ("scp_bounds_dna_3186x180", lambda: scp_bounds(mm, DD, e))]
    top = max(2, numba.config.NUMBA_NUM_THREADS)
    rows = []
    for name, fn in tasks:
        t1, t2 = timed(fn, 1), timed(fn, 2)
        rows.append([name, t1, t2, t1 / t2])
    numba.set_num_threads(top)
    print_table(["task", "1_thread_s", "2_threads_s", "speedup"], rows)


if __name__ == "__main__":
    main()
