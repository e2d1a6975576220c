"""Seed 000, Figure 2: error of the approximate SCP (Algorithm 1) vs the number of buckets k.

House votes (bundled), naive Bayes fitted on all 435 rows, 50 random points
(seed 0), eps = 1e-2; mean |SCP_approx - SCP_exact| with and without
Improvement 1 (shift), plus Improvement 2 (hybrid r=2) for reference.
Writes benchmarks/figures/figure2_approx_error.png when matplotlib is installed.

Run:  python benchmarks/figure2_approx_error.py
"""

import numpy as np

from _common import FIGURES, print_table, machine
from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.scp import scp_approx, scp_bounds, scp_exact

KS = [2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100]


def main():
    print(f"# machine: {machine()}")
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    idx = np.random.default_rng(0).choice(len(d.X), 50, replace=False)
    X = d.X[idx]
    margin, deltas = nb.decision_function(X), nb.flip_deltas(X)
    eps = 1e-2
    exact = scp_exact(margin, deltas, eps)
    lo, hi = scp_bounds(margin, deltas, eps)
    print(f"# mean exact 1-SCP {1 - exact.mean():.4e}; bounds gap max {np.max(hi - lo):.2e}")
    rows, series = [], {"no shift": [], "shift": [], "shift + hybrid r=2": []}
    for k in KS:
        e0 = np.abs(scp_approx(margin, deltas, eps, k=k, shift=False) - exact).mean()
        e1 = np.abs(scp_approx(margin, deltas, eps, k=k, shift=True) - exact).mean()
        e2 = np.abs(scp_approx(margin, deltas, eps, k=k, shift=True, hybrid=2) - exact).mean()
        series["no shift"].append(e0)
        series["shift"].append(e1)
        series["shift + hybrid r=2"].append(e2)
        rows.append([k, e0, e1, e2])
    print_table(["k", "mean_abs_err_noshift", "mean_abs_err_shift", "mean_abs_err_shift_hybrid2"],
                rows)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib not installed (pip install '.[plot]'): no figure written")
        return
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, ys in series.items():
        ax.semilogy(KS, np.maximum(ys, 1e-17), marker="o", ms=3, label=name)
    ax.set_xlabel("buckets k")
    ax.set_ylabel("mean |SCP_approx - SCP| (50 points)")
    ax.set_title("house votes, eps = 1e-2 (seed 000, Fig. 2)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = FIGURES / "figure2_approx_error.png"
    fig.savefig(out, dpi=110)
    print(f"# wrote {out.relative_to(FIGURES.parents[1])}")


if __name__ == "__main__":
    main()
