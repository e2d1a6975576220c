"""Seed 000, Figures 3 and 4: SCP and improvement ratio vs the redundancy R.

The "mixed" movie-review feature set of Table II (n = 20 features: 5 of the
top-10 by mutual information with the class, 15 weakly informative ones; built
by ``table2_allocation.moviereview_sets``), naive Bayes fitted on the 1600
train rows, planned and scored on the 250 test rows, eps = 0.2, budgets of
2nR redundancy bits for R = 0..6.  For each R: the mean SCP of the uniform
plan (every feature sent 2R + 1 times) and of the greedy plan (seed 000,
Algorithm 2, planned and scored with the exact SCP), and the improvement
ratio (1 - SCP_uniform) / (1 - SCP_greedy).

Writes benchmarks/figures/figure3_scp_vs_R.png (SCP vs R, uniform vs
optimized) and benchmarks/figures/figure4_ratio_vs_R.png (ratio vs R) and
prints the numbers as a ';'-separated table.

Data: ../shared/datasets/moviereview_binary.csv.gz (override the folder with
EDGECODE_SHARED_DATA).  Run:  python benchmarks/figure3_4_allocation.py
"""

import argparse
import time

import numpy as np

from _common import FIGURES, machine, print_table
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy, allocate_uniform, mean_scp
from table2_allocation import moviereview_sets

EPS = 0.2


def compute(R_values, eps=EPS):
    """Rows ``[R, bits, SCP_u, SCP_g, 1-SCP_u, 1-SCP_g, ratio, plan, plan_s]``."""
    Xf, yf, Xp, _ = moviereview_sets()["mixed"]
    nb = BinaryNaiveBayes().fit(Xf, yf)
    margin, deltas = nb.decision_function(Xp), nb.flip_deltas(Xp)
    n = deltas.shape[1]
    rows = []
    for R in R_values:
        bits = 2 * n * R
        if R == 0:                      # nothing to plan: both are "no protection"
            greedy_r = np.zeros(n, np.int64)
            scp_g = mean_scp(margin, deltas, eps, greedy_r, "exact")
            secs = float("nan")
        else:
            t0 = time.perf_counter()
            plan = allocate_greedy(margin, deltas, eps, bits, method="exact")
            secs = time.perf_counter() - t0
            greedy_r, scp_g = plan.repetitions, plan.mean_scp
        scp_u = mean_scp(margin, deltas, eps, allocate_uniform(n, bits), "exact")
        cu, cg = 1 - scp_u, 1 - scp_g
        rows.append([R, bits, scp_u, scp_g, cu, cg, cu / cg if cg > 0 else float("inf"),
                     " ".join(map(str, 2 * np.asarray(greedy_r) + 1)), secs])
    return rows, len(Xp), n


def plot(rows, t, n, eps=EPS):
    """Write the two figures; returns their paths (None if matplotlib is missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib not installed (pip install '.[plot]'): no figures written")
        return None
    FIGURES.mkdir(parents=True, exist_ok=True)
    R = [r[0] for r in rows]
    title = f"movie review 'mixed', n = {n}, t = {t}, eps = {eps}"
    out = []

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(R, [r[2] for r in rows], marker="s", label="uniform (2R + 1 copies each)")
    ax.plot(R, [r[3] for r in rows], marker="o", label="optimized (greedy, exact SCP)")
    ax.set_xlabel("R (budget 2nR redundancy bits)")
    ax.set_ylabel("mean SCP over the t points")
    ax.set_title(f"{title}\n(seed 000, Fig. 3)", fontsize=10)
    ax.set_xticks(R)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = FIGURES / "figure3_scp_vs_R.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    out.append(path)

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(R, [r[6] for r in rows], marker="o", color="C2")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("R (budget 2nR redundancy bits)")
    ax.set_ylabel("(1 - SCP) uniform / (1 - SCP) optimized")
    ax.set_title(f"{title}\n(seed 000, Fig. 4)", fontsize=10)
    ax.set_xticks(R)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path = FIGURES / "figure4_ratio_vs_R.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    out.append(path)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-R", type=int, default=6, help="largest R (default 6)")
    ap.add_argument("--no-plot", action="store_true", help="print the table only")
    args = ap.parse_args(argv)
    if args.max_R < 0:
        ap.error(f"--max-R must be >= 0; got {args.max_R}")
    print(f"# machine: {machine()}")
    t0 = time.perf_counter()
    rows, t, n = compute(range(args.max_R + 1))
    print(f"# moviereview mixed: n = {n}, t = {t}, eps = {EPS}, budget = 2nR bits; "
          "greedy planned and scored with the exact SCP")
    print_table(["R", "bits", "SCP_uniform", "SCP_greedy", "1-SCP_uniform", "1-SCP_greedy",
                 "ratio", "bits_per_feature_greedy", "plan_s"], rows)
    print(f"# total {time.perf_counter() - t0:.1f} s")
    if not args.no_plot:
        for path in plot(rows, t, n) or []:
            print(f"# wrote {path.relative_to(FIGURES.parents[1])}")


if __name__ == "__main__":
    main()
