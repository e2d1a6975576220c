"""Seed 000, Table II: uniform vs greedy redundancy allocation (1 - SCP and ratio).

Data: house votes (bundled), movie-review binary features and NLTCS (read from
../shared/datasets/). Run:  python benchmarks/table2_allocation.py [--fast]
"""

import argparse
import sys
import time

import numpy as np

from _common import print_table, shared_csv, machine
from edgecode.datasets import load_house_votes, load_nltcs
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy, allocate_uniform, mean_scp


def moviereview_sets():
    """Two n=20 feature sets from the 1000 movie-review word indicators.

    Features are ranked by mutual information with the class on the train
    split. "similar": the 20 features ranked 41..60 (neighbours in the ranking,
    so similarly informative); "mixed": 5 of the top 10 (ranks 1, 3, 5, 7, 9)
    and 15 spread evenly over ranks 100..800 (weakly informative).
    """
    header, rows = shared_csv("moviereview_binary.csv.gz")
    ci, si = header.index("class"), header.index("split")
    feat = [j for j, h in enumerate(header) if h.startswith("w_")]
    X = np.array([[int(r[j]) for j in feat] for r in rows], dtype=np.uint8)
    y = np.array([int(r[ci]) for r in rows])
    split = np.array([r[si] for r in rows])
    tr, te = split == "train", split == "test"
    Xt, yt = X[tr].astype(float), y[tr]
    mi = np.zeros(X.shape[1])
    for v in (0, 1):
        for c in (0, 1):
            pxy = ((Xt == v) & (yt[:, None] == c)).mean(0) + 1e-12
            px = (Xt == v).mean(0) + 1e-12
            py = (yt == c).mean()
            mi += pxy * np.log(pxy / (px * py))
    order = np.argsort(-mi, kind="stable")
    similar = order[40:60]
    mixed = np.concatenate([order[[0, 2, 4, 6, 8]], order[np.linspace(100, 800, 15).astype(int)]])
    names = [header[feat[j]] for j in range(len(feat))]
    return {"similar": (X[tr][:, similar], y[tr], X[te][:, similar], [names[j] for j in similar]),
            "mixed": (X[tr][:, mixed], y[tr], X[te][:, mixed], [names[j] for j in mixed])}


def run_case(name, Xfit, yfit, Xplan, eps, budgets, method="exact"):
    nb = BinaryNaiveBayes().fit(Xfit, yfit)
    margin, deltas = nb.decision_function(Xplan), nb.flip_deltas(Xplan)
    n = deltas.shape[1]
    rows = []
    none = 1 - mean_scp(margin, deltas, eps, None, method)
    for label, bits in budgets:
        t0 = time.perf_counter()
        plan = allocate_greedy(margin, deltas, eps, bits, method=method)
        secs = time.perf_counter() - t0
        g = 1 - plan.mean_scp
        if bits % (2 * n) == 0:
            u = 1 - mean_scp(margin, deltas, eps, allocate_uniform(n, bits), method)
            ref = u
        else:
            u, ref = float("nan"), none
        rows.append([name, n, len(Xplan), eps, label, bits, none, u, g, ref / g if g > 0 else
                     float("inf"), " ".join(map(str, 2 * plan.repetitions + 1)), secs])
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fast", action="store_true", help="house votes only")
    args = ap.parse_args(argv)
    print(f"# machine: {machine()}")
    header = ["dataset", "n", "t", "eps", "budget", "bits", "1-SCP_none", "1-SCP_uniform",
              "1-SCP_greedy", "ratio", "bits_per_feature_greedy", "plan_s"]
    rows = []
    hv = load_house_votes()
    rows += run_case("house_votes", hv.X, hv.y, hv.X, 0.2,
                     [(f"R={R}", 2 * 16 * R) for R in (1, 2, 3)])
    if not args.fast:
        for setname, (Xf, yf, Xp, names) in moviereview_sets().items():
            print(f"# moviereview {setname}: {' '.join(names)}", file=sys.stderr)
            rows += run_case(f"moviereview_{setname}", Xf, yf, Xp, 0.2,
                             [(f"R={R}", 2 * 20 * R) for R in (1, 2, 3)])
        nl = load_nltcs()
        tr, te = nl.subset("train"), nl.subset("test")
        for eps in (0.1, 0.2):
            rows += run_case("nltcs", tr.X, tr.y, te.X, eps,
                             [(f"units={u}", 2 * u) for u in (1, 3, 5, 10, 15)])
    print_table(header, rows)


if __name__ == "__main__":
    main()
