"""Accuracy under noisy learner outputs: one-vs-all, random dense, N-ary, annealed (pendigits).

Usage::

    python benchmarks/ecoc_robustness.py [--fast | --full]

Data: ``../shared/datasets/pendigits.csv.gz`` (official split: 7494 train,
3498 test; override the folder with EDGECODE_SHARED_DATA).

Each code trains decision trees (scikit-learn defaults, random_state 0) and
is exported to the device runtime (``firmware_sim.ecoc``, fixed-point
inputs); the device corrupts every learner output independently with
probability eps (binary: bit flip; N-ary: a uniformly random other symbol)
and decodes Hamming-nearest. Prints ``code;N;columns;d_r;eps;accuracy;std``
and writes ``benchmarks/figures/ecoc_robustness.png``.
"""

import argparse
import sys

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from _common import FIGURES, machine, shared_csv

from edgecode.ecoc import make_code, row_distance
from edgecode.ecoc.classifier import ECOCClassifier
from export.ecoc import export_ecoc

EPS = [0.0, 0.02, 0.05, 0.075, 0.1, 0.15, 0.2]
PROFILES = {"fast": dict(trials=3, columns=20), "full": dict(trials=10, columns=30)}


def load_pendigits():
    header, rows = shared_csv("pendigits.csv.gz")
    ci, si = header.index("class"), header.index("split")
    feats = [i for i in range(len(header)) if i not in (ci, si)]
    X = np.array([[float(r[i]) for i in feats] for r in rows])
    y = np.array([int(r[ci]) for r in rows])
    split = np.array([r[si] for r in rows])
    return X[split == "train"], y[split == "train"], X[split == "test"], y[split == "test"]


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true")
    g.add_argument("--full", action="store_true")
    prof = PROFILES["full" if ap.parse_args().full else "fast"]
    Xtr, ytr, Xte, yte = load_pendigits()
    c, n = 10, prof["columns"]
    codes = {
        "one_vs_all": make_code("one_vs_all", c),
        "dense_random": make_code("dense_random", c, n, random_state=0),
        "nary_N2": make_code("nary", c, n, N=2, random_state=0),
        "nary_N3": make_code("nary", c, n, N=3, random_state=0),
        "nary_N5": make_code("nary", c, n, N=5, random_state=0),
        "annealed": make_code("annealed", c, n, random_state=0),
    }
    print(f"# machine: {machine()}; pendigits official split {len(Xtr)}/{len(Xte)}; "
          f"decision trees; {prof['trials']} noisy passes per eps")
    print("code;N;columns;d_r;eps;accuracy;std")
    curves = {}
    for name, M in codes.items():
        clf = ECOCClassifier(DecisionTreeClassifier(random_state=0), code=M).fit(Xtr, ytr)
        dev = export_ecoc(clf, Xtr).device
        q = dev.quantize(Xte)
        sim = dev.simulate(q, np.searchsorted(clf.classes_, yte), EPS,
                           n_trials=prof["trials"], random_state=0)
        dr = row_distance(clf.code_)
        curves[name] = (dr, clf.n_symbols_, M.shape[1], sim)
        for e, a, s in zip(sim.eps, sim.accuracy, sim.accuracy_std):
            print(f"{name};{clf.n_symbols_};{M.shape[1]};{dr:g};{e:g};{a:.4f};{s:.4f}")
        sys.stdout.flush()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        print("# matplotlib missing: no figure")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, (dr, N, m, sim) in curves.items():
        ax.errorbar(sim.eps, sim.accuracy, yerr=sim.accuracy_std, marker="o", ms=3,
                    label=f"{name} (N={N}, n={m}, d_r={dr:g})")
    ax.set_xlabel("learner-output corruption probability eps")
    ax.set_ylabel("test accuracy (device runtime)")
    ax.set_title("pendigits, decision-tree ECOC under noisy learner outputs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURES / "ecoc_robustness.png", dpi=120)
    print(f"# wrote {FIGURES / 'ecoc_robustness.png'}")


if __name__ == "__main__":
    main()
