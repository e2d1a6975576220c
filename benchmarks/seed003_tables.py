"""Seed 003 as the paper ran it: codeword distances of a 104 x 100 code, the
paper's annealing schedule beside ours, Tables 2 and 3 on R8 and 20 Newsgroups.

Usage::

    python benchmarks/seed003_tables.py distances [--seeds 10]
    python benchmarks/seed003_tables.py text --dataset reuters_r8 --learner NB --table 2
    python benchmarks/seed003_tables.py text --dataset 20newsgroups --learner SVM --table 3 \\
        --k 0.1 [--splits 10] [--max-features 5000] [--max-docs 0]

``distances``: the paper's "matrix of size 100 x 104" has 104 codewords
(classes) of 100 bits.  For each seed a plain random 104 x 100 matrix (bits
i.i.d. equiprobable; a constant column, which has probability 2^-103, would be
redrawn) is the common start of every annealing variant: ``ours`` (default
schedule), ``paper`` (``schedule="paper"``: L0 = 30, N = 100, T0 = E0 / 5,
Tmin = 0.01 absolute, add/remove moves, best state kept) and ablations that
change one thing at a time.  Prints mean / std / min of the 5356 pairwise
codeword distances, the energy, the width and the time.  No data is read.

``text``: Tables 2 and 3.  Data from ``../shared/datasets/``:
``reuters_r8.csv.gz`` and ``20newsgroups_{train,test}.csv.gz`` (train and
test pooled, then re-split).  Binary bag of words (CountVectorizer, English
stop words, min_df 3, the ``--max-features`` most frequent terms, fitted on
each training part).  ``--splits`` random stratified 70/30 splits (the
paper's protocol, 10).  Learners: NB = MultinomialNB on the binary features,
SVM = LinearSVC (liblinear, dual, C = 1).  Codes (63 columns, built once per
dataset with seed 0, as the paper trains all three on the same partition):

* ``RA``  -- plain random: every bit 0/1 with probability 1/2
  (``dense_random(screen=False)`` where codes.py has it, else numpy);
* ``BCH`` -- BCH code, t = 6 (designed distance 13);
* ``SA``  -- ``annealed`` with our schedule, started from the RA matrix;
* ``SA-paper`` -- ``annealed(schedule="paper")`` from the same start.

Table 2 (``--table 2``): the four codes and the monolithic learner, no
selection.  Table 3 (``--table 3``): the SA code with per-dichotomizer
feature selection, chi2 / delta / IG keeping the top ``--k`` fraction(s).
Prints ``dataset;table;code;learner;selection;K;width;d_r;acc_mean;acc_std;
acc_var;seconds`` (over the splits; seconds = fit + predict summed).
"""

import argparse
import sys
import time
import warnings

import numpy as np

from _common import machine, shared_text

from edgecode.ecoc import annealed, code_energy, distance_stats, make_code, row_distance


# --------------------------------------------------------------------------- distances

#: name -> annealed() keywords (on top of the common start)
VARIANTS = {
    "ours": {},
    "paper": {"schedule": "paper"},
    "paper_fixed_width": {"schedule": "paper", "min_columns": 100, "max_columns": 100},
    "paper_no_keep_best": {"schedule": "paper", "keep_best": False},
    "ours_L0=30": {"moves_per_temp": 30},
    "ours_L0=300": {"moves_per_temp": 300},
    "ours_L0=3000": {"moves_per_temp": 3000},
    "ours_add_remove": {"min_columns": 50, "max_columns": 100, "repair": False},
    "paper_L0=100c": {"schedule": "paper", "moves_per_temp": 10400},
}


def plain_random(c, n, seed):
    """Plain i.i.d. random binary c x n matrix (the paper's RA) and where it came from."""
    try:
        return make_code("dense_random", c, n, random_state=seed, screen=False), "dense_random"
    except TypeError:      # codes.py without screen=: the same definition, drawn here
        rng = np.random.default_rng(seed)
        return rng.integers(0, 2, (c, n)).astype(np.int8), "numpy"


def no_constant_columns(M, seed):
    """Redraw constant columns (annealing needs none); counts them."""
    rng = np.random.default_rng(10_000 + seed)
    M = M.copy()
    redrawn = 0
    while True:
        bad = np.flatnonzero((M == M[0]).all(axis=0))
        if bad.size == 0:
            return M, redrawn
        redrawn += bad.size
        M[:, bad] = rng.integers(0, 2, (M.shape[0], bad.size))


def distances(args):
    c, n = 104, 100
    print(f"# machine: {machine()}")
    print(f"# {c} codewords (classes) x {n} bits; {args.seeds} seeds; plain random start "
          f"shared by every variant")
    print("variant;seed;mean;std;min;max;energy;width;accepted;proposed;seconds")
    annealed(8, 10, random_state=0, n_temps=2)          # JIT warm-up
    rows = {}
    for seed in range(args.seeds):
        S, src = plain_random(c, n, seed)
        S, redrawn = no_constant_columns(S, seed)
        mn, mean, std, mx = distance_stats(S)
        print(f"start({src});{seed};{mean:.3f};{std:.3f};{mn:g};{mx:g};{code_energy(S):.5f};"
              f"{n};-;-;-")
        rows.setdefault("start", []).append((mean, std, mn, mx, code_energy(S), n, 0, 0, 0.0))
        for name, kw in VARIANTS.items():
            if args.variants and name not in args.variants.split(","):
                continue
            t0 = time.perf_counter()
            M, info = annealed(c, start=S, random_state=seed, return_info=True, **kw)
            sec = time.perf_counter() - t0
            mn, mean, std, mx = distance_stats(M)
            print(f"{name};{seed};{mean:.3f};{std:.3f};{mn:g};{mx:g};{info['energy']:.5f};"
                  f"{M.shape[1]};{info['accepted']};{info['proposed']};{sec:.3f}", flush=True)
            rows.setdefault(name, []).append((mean, std, mn, mx, info["energy"], M.shape[1],
                                              info["accepted"], info["proposed"], sec))
    print("# summary: variant;mean;std;min (median);energy;width (median);acceptance;"
          "seconds (median)")
    for name, r in rows.items():
        a = np.array(r, dtype=float)
        acc = "-" if name == "start" else f"{a[:, 6].sum() / a[:, 7].sum():.3f}"
        print(f"# {name};{a[:, 0].mean():.2f};{a[:, 1].mean():.2f};{np.median(a[:, 2]):g};"
              f"{a[:, 4].mean():.4f};{np.median(a[:, 5]):g};{acc};{np.median(a[:, 8]):.3f}")


# --------------------------------------------------------------------------- text


def learner(kind):
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.svm import LinearSVC
    return MultinomialNB() if kind == "NB" else LinearSVC(dual=True, random_state=0)


def text_codes(c, seed=0):
    RA, src = plain_random(c, 63, seed)
    start, redrawn = no_constant_columns(RA, seed)
    codes = {"RA": RA,
             "BCH": make_code("bch", c, 63, t=6, random_state=seed),
             "SA": annealed(c, start=start, random_state=seed),
             "SA-paper": annealed(c, start=start, random_state=seed, schedule="paper")}
    note = (f"RA from {src}; SA start = RA with {redrawn} constant column(s) redrawn")
    return codes, note


def text(args):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import train_test_split

    from edgecode.ecoc.classifier import ECOCClassifier

    warnings.filterwarnings("ignore")      # liblinear convergence, degenerate RA columns
    name, kind = args.dataset, args.learner.upper()
    text_, y = shared_text(name, args.max_docs)
    c = int(y.max()) + 1
    codes, note = text_codes(c)
    print(f"# machine: {machine()}")
    print(f"# {name}: {len(y)} documents, {c} classes, {args.splits} random stratified 70/30 "
          f"splits (seeds {args.first_split}..{args.first_split + args.splits - 1}), "
          f"vocabulary {args.max_features}, learner {kind}; {note}")
    print("# codes: " + ", ".join(
        f"{k} {M.shape[1]} cols d_r {row_distance(M):g} mean/std "
        f"{distance_stats(M)[1]:.2f}/{distance_stats(M)[2]:.2f}" for k, M in codes.items()))
    configs = []
    if args.table == 2:
        for code in (args.codes.split(",") if args.codes else ["monolithic", *codes]):
            if code != "monolithic" and code not in codes:
                raise SystemExit(f"unknown code {code!r}; choose from monolithic, "
                                 + ", ".join(codes))
            configs.append((code, None))
    else:
        for measure in args.measures.split(","):
            if measure not in ("chi2", "delta", "ig"):
                raise SystemExit(f"unknown measure {measure!r}; choose from chi2, delta, ig")
            for k in args.k:
                configs.append(("SA", (measure, k)))
    print("dataset;table;code;learner;selection;K;width;d_r;acc_mean;acc_std;acc_var;seconds")
    accs = {cfg: [] for cfg in configs}
    secs = {cfg: 0.0 for cfg in configs}
    for s in range(args.first_split, args.first_split + args.splits):
        tr, te = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=s)
        vec = CountVectorizer(binary=True, stop_words="english", min_df=3,
                              max_features=args.max_features, dtype=np.float64)
        Xtr = vec.fit_transform(text_[tr])
        Xte = vec.transform(text_[te])
        for cfg in configs:
            code, fs = cfg
            t0 = time.perf_counter()
            if code == "monolithic":
                model = learner(kind)
            else:
                model = ECOCClassifier(learner(kind), code=codes[code], feature_selection=fs)
            accs[cfg].append(model.fit(Xtr, y[tr]).score(Xte, y[te]))
            secs[cfg] += time.perf_counter() - t0
        print(f"# split {s} done", file=sys.stderr, flush=True)
    for cfg, a in accs.items():
        code, fs = cfg
        M = codes.get(code)
        width = "-" if M is None else M.shape[1]
        dr = "-" if M is None else f"{row_distance(M):g}"
        sel, kk = ("-", "-") if fs is None else (fs[0], f"{fs[1]:.0%}")
        print(f"{name};{args.table};{code};{kind};{sel};{kk};{width};{dr};{np.mean(a):.4f};"
              f"{np.std(a):.4f};{np.var(a):.2e};{secs[cfg]:.1f}", flush=True)
        print("# per split: " + " ".join(f"{v:.4f}" for v in a))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("distances")
    d.add_argument("--seeds", type=int, default=10)
    d.add_argument("--variants", default="", help="comma list (default: all)")
    t = sub.add_parser("text")
    t.add_argument("--dataset", choices=["reuters_r8", "20newsgroups"], required=True)
    t.add_argument("--learner", choices=["NB", "SVM", "nb", "svm"], required=True)
    t.add_argument("--table", type=int, choices=[2, 3], required=True)
    t.add_argument("--codes", default="",
                   help="table 2: comma list of monolithic,RA,BCH,SA,SA-paper (default: all)")
    t.add_argument("--k", type=float, nargs="+", default=[0.05, 0.10, 0.20, 0.40],
                   help="table 3: fractions of the vocabulary kept per dichotomizer")
    t.add_argument("--measures", default="chi2,delta,ig", help="table 3: comma list")
    t.add_argument("--splits", type=int, default=10)
    t.add_argument("--first-split", type=int, default=0,
                   help="seed of the first split (run a protocol in chunks)")
    t.add_argument("--max-features", type=int, default=5000)
    t.add_argument("--max-docs", type=int, default=0, help="stratified subsample (0: all)")
    args = ap.parse_args()
    distances(args) if args.cmd == "distances" else text(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
