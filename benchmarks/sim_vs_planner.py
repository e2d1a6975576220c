"""The device simulation agrees with the planner.

House votes, naive Bayes, greedy plan (exact SCP) at eps = 0.2 with 2nR bits,
exported to the container, run on firmware_sim with a binary symmetric
channel: the simulated same-classification rate must contain the planner's
predicted mean SCP in its 99% confidence interval. Also times the campaign
against a plain numpy implementation of the same campaign.

Run:  python benchmarks/sim_vs_planner.py [--trials 20000]
"""

import argparse
import time

import numpy as np

from _common import machine, print_table
from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy
from export.cli import run_simulate
from export.naive_bayes import export_protected_nb
from firmware_sim.naive_bayes import load_protected_nb, simulate


def numpy_campaign(device, X, eps, trials, seed):
    """The same campaign in plain numpy: repeat, flip, majority, integer dot, compare."""
    rng = np.random.default_rng(seed)
    r = device.repetitions.astype(np.int64)
    copies = 2 * r + 1
    w = device.weights.astype(np.int64)
    clean = device.bias + X.astype(np.int64) @ w > 0
    bits = np.repeat(X, copies, axis=1)
    owner = np.repeat(np.arange(X.shape[1]), copies)
    same = np.zeros(len(X), np.int64)
    for _ in range(trials):
        flips = rng.random(bits.shape) < eps
        rx = bits ^ flips
        ones = np.zeros(X.shape, np.int64)
        np.add.at(ones.T, owner, rx.T)
        dec = ones > r
        same += (device.bias + dec @ w > 0) == clean
    return same


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20000)
    ap.add_argument("--R", type=int, default=1)
    args = ap.parse_args(argv)
    print(f"# machine: {machine()}")
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    margin, deltas = nb.decision_function(d.X), nb.flip_deltas(d.X)
    plan = allocate_greedy(margin, deltas, 0.2, 32 * args.R, method="exact")
    exp = export_protected_nb(nb, plan.repetitions, X_check=d.X,
                              meta={"dataset": "house_votes", "planned_mean_scp": plan.mean_scp,
                                    "planned_eps": 0.2, "planning_points": len(d.X)})
    print(f"# greedy plan mean SCP {plan.mean_scp:.6f}; bits per feature "
          f"{' '.join(map(str, plan.bits_per_feature))}")
    res = run_simulate(exp.container, 0.2, args.trials, dataset="house_votes", seed=1)
    lo, hi = res["ci"]
    print(f"# planner mean SCP {plan.mean_scp:.6f} inside simulated 99% CI [{lo:.6f}, {hi:.6f}]: "
          f"{lo <= plan.mean_scp <= hi}")
    device = load_protected_nb(exp.container)
    simulate(device, d.X[:5], 0.2, 10, random_state=0)  # warm up (JIT)
    n_peer = max(200, args.trials // 50)
    t0 = time.perf_counter()
    numpy_campaign(device, d.X, 0.2, n_peer, 0)
    peer = (time.perf_counter() - t0) / (n_peer * len(d.X))
    t0 = time.perf_counter()
    simulate(device, d.X, 0.2, args.trials, random_state=0)
    ours = (time.perf_counter() - t0) / (args.trials * len(d.X))
    print_table(["task", "n", "peer_s", "edgecode_s", "ratio"],
                [["campaign_per_point_trial", 16, peer, ours, peer / ours]])


if __name__ == "__main__":
    main()
