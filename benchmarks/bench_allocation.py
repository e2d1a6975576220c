"""Greedy allocation (seed 000, Algorithm 2) on house votes, t = 435, R = 1 (32 bits).

Side by side in one process: our planner with exact influences (meet in the
middle; what ``auto`` picks at n = 16), with the grid engine, with the
paper's own choice (approximate SCP, k = 50, shift, every candidate
evaluated) and with the certified lower bound (every candidate evaluated);
the peer is the same greedy loop with a plain numpy 2^n enumeration of the
SCP (timed on one step, 16 candidate evaluations, and multiplied by the 16
steps). Planning times exclude the certificate; every plan is scored by
exact SCP afterwards.

Run:  python benchmarks/bench_allocation.py
"""

import time

import numpy as np

from _common import machine, median_time, print_table
from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy, mean_scp, repetition_error


def numpy_scp(margin, deltas, eps):
    n = deltas.shape[1]
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    prob = np.prod(np.where(masks, eps, 1 - eps), axis=1)
    sums = margin[:, None] + deltas @ masks.T.astype(float)
    same = (sums > 0) == (margin[:, None] > 0)
    return same.astype(float) @ prob


def main():
    print(f"# machine: {machine()}")
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    margin, deltas = nb.decision_function(d.X), nb.flip_deltas(d.X)
    t0 = time.perf_counter()
    for method in ("exact", "grid", "approx", "bounds"):
        allocate_greedy(margin, deltas, 0.2, 2, method=method)
    print(f"# first calls (JIT compile or cache load): {time.perf_counter() - t0:.2f}s")
    eps = np.full(16, 0.2)
    t0 = time.perf_counter()
    for j in range(16):
        trial = eps.copy()
        trial[j] = repetition_error(0.2, 1)
        numpy_scp(margin, deltas, trial)
    peer = (time.perf_counter() - t0) * 16
    rows = []
    for method in ("exact", "grid", "approx", "bounds"):
        secs = median_time(lambda: allocate_greedy(margin, deltas, 0.2, 32, method=method,
                                                   certify=False), repeats=3)
        plan = allocate_greedy(margin, deltas, 0.2, 32, method=method, certify=False)
        change = 1 - mean_scp(margin, deltas, 0.2, plan.repetitions, "exact")
        rows.append([f"greedy_{method}", 16, peer, secs, peer / secs, f"{change:.5e}"])
    print_table(["task", "n", "peer_s", "edgecode_s", "ratio", "exact_1-SCP_of_plan"], rows)


if __name__ == "__main__":
    main()
