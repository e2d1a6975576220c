"""Seed 001 experiments: N-ary Sylvester codes ("Det") vs best-of-1000 random N-ary codes ("Rand").

Usage::

    python benchmarks/ecoc_seed001.py accuracy --datasets vowel --learners dt [--folds 10]
        [--Ns 2,3,5,7,11,13] [--lengths half,square,double]
        [--methods det_paper,det_adaptive,rand_paper] [--max-rows R] [--peers]
    python benchmarks/ecoc_seed001.py orientation [--no-aloi]   # equal rows / distances, paper's grid
    python benchmarks/ecoc_seed001.py composite       # the composite-N failure (N = 4, k = 2)
    python benchmarks/ecoc_seed001.py table LOG [LOG ...] [--status TEXT]
        # merge the output of several ``accuracy`` runs (split by --Ns or --lengths) into the
        # results_seed001.md tables: bold best cell, means, head to head, OneVsRest

Data: ``../shared/datasets/{pendigits,usps,vowel,soybean,optdigits,glass,ecoli}``
(set ``EDGECODE_SHARED_DATA`` to move it).  As the paper: **stratified
10-fold cross-validation over the whole set** (train and test splits
pooled), mean and std of the accuracy over the folds; ``--folds`` and
``--max-rows`` (a stratified subsample of R rows *before* the folds) cut the
cost and are printed in the output header.

Grid: N in {2, 3, 5, 7, 11, 13}; n in {floor(c/2), c, 2c} (half, square,
double, as the paper: vowel's 11 classes give 5, 11, 22 columns).  Base
learners with scikit-learn defaults: ``DecisionTreeClassifier(random_state=0)``
on raw features, or ``SVC()`` after ``StandardScaler``; soybean's missing
cells are imputed with the most frequent value of the training fold (and its
categorical codes one-hot encoded for SVC).

Methods (one code per (N, n), shared by all folds):

* ``det_paper``     -- "Det (paper)": the paper's M_k(N) (``orientation=
  "paper"``) truncated from the top left (``truncation="top_left"``), two
  equal rows repaired by changing the first entry of the later one, as the
  seed.
* ``det_topleft_ours`` -- top-left rule on our M_1 (``orientation="ours"``).
* ``det_adaptive``  -- "Det-adaptive (ours)": our adaptive choice of rows and
  columns of M_k(N) (``nary(...)``, the library default); not the paper's.
* ``rand_paper``    -- "Rand (paper)": best d_T = d_r + d_c among 1000 plain
  i.i.d. random N-ary matrices (``nary_random(..., screen=False,
  n_draws=1000)``), nothing rejected.
* ``rand_screened`` -- "Rand-screened (ours)": our default ``nary_random``
  (best of 1000 draws that have distinct rows and no constant or
  relabel-equivalent column).
* ``rand_dr``       -- appendix: best of 1000 plain draws by d_r.
* ``rand_abs``      -- appendix: best of 1000 plain draws by d_T under the
  absolute-value distance sum |a - b| (the seed's formula (7)).

Prints ``dataset;learner;N;n;method;acc_mean;acc_std;d_r;d_T;seconds``, the
wall time, and at the end a markdown table per learner.  ``table`` reads
such outputs back (several runs of one grid may be merged; a cell measured
twice keeps the last log's value) and prints the tables of
``results_seed001.md``.
"""

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from _common import machine, shared_csv

from edgecode.ecoc import check_properties, distance_stats, nary, nary_random
from edgecode.ecoc.classifier import ECOCClassifier
from edgecode.ecoc.sylvester import ORIENTATIONS, sylvester_entries, truncate

FILES = {"pendigits": "pendigits.csv.gz", "usps": "usps.csv.gz", "vowel": "vowel.csv",
         "soybean": "soybean.csv", "optdigits": "optdigits.csv.gz", "glass": "glass.csv",
         "ecoli": "ecoli.csv"}
NS = [2, 3, 5, 7, 11, 13]
LABELS = {"det_paper": "Det (paper)", "det_adaptive": "Det-adaptive (ours)",
          "rand_paper": "Rand (paper)", "rand_screened": "Rand-screened (ours)",
          "rand_dr": "Rand by d_r (appendix)", "rand_abs": "Rand by absolute d_T (appendix)",
          "det_topleft_ours": "Det top-left, our M_1"}


def load(name):
    """(X float with NaN for missing cells, y in 0..c-1, categorical?) of a shared set."""
    header, rows = shared_csv(FILES[name])
    drop = {"class", "split", "speaker", "sex"}
    feats = [i for i, h in enumerate(header) if h not in drop]
    X = np.array([[float(r[i]) if r[i] not in ("", "NA", "?") else np.nan for i in feats]
                  for r in rows])
    _, y = np.unique([r[header.index("class")] for r in rows], return_inverse=True)
    return X, y, name == "soybean"


def learner(kind, categorical):
    if kind == "dt":
        base = DecisionTreeClassifier(random_state=0)
        return make_pipeline(SimpleImputer(strategy="most_frequent"), base) if categorical \
            else base
    if categorical:
        return make_pipeline(SimpleImputer(strategy="most_frequent"),
                             OneHotEncoder(handle_unknown="ignore"), SVC())
    return make_pipeline(StandardScaler(), SVC())


def lengths(c, which):
    table = {"half": c // 2, "square": c, "double": 2 * c}
    return [table[w] for w in which]


def make_method(method, c, n, N):
    """The c x n code of ``method`` (deterministic; random ones with random_state=0)."""
    if method == "det_paper":
        return nary(c, n, N=N, truncation="top_left", orientation="paper")
    if method == "det_topleft_ours":
        return nary(c, n, N=N, truncation="top_left")
    if method == "det_adaptive":
        return nary(c, n, N=N)
    if method == "rand_paper":
        return nary_random(c, n, N=N, screen=False, n_draws=1000, criterion="total",
                           random_state=0)
    if method == "rand_screened":
        return nary_random(c, n, N=N, n_draws=1000, criterion="total", random_state=0)
    if method == "rand_dr":
        return nary_random(c, n, N=N, screen=False, n_draws=1000, criterion="row",
                           random_state=0)
    if method == "rand_abs":
        return nary_random(c, n, N=N, screen=False, n_draws=1000, criterion="total",
                           metric="absolute", random_state=0)
    raise SystemExit(f"unknown method {method!r}; one of {', '.join(LABELS)}")


def cmd_accuracy(args):
    t_start = time.perf_counter()
    print(f"# machine: {machine()}")
    print("dataset;learner;N;n;method;acc_mean;acc_std;d_r;d_T;seconds")
    results = []
    for name in args.datasets.split(","):
        X, y, categorical = load(name)
        c = int(y.max()) + 1
        note = ""
        if args.max_rows and len(y) > args.max_rows:
            keep, _ = train_test_split(np.arange(len(y)), train_size=args.max_rows, stratify=y,
                                       random_state=0)
            keep = np.sort(keep)
            note = f", stratified subsample of {args.max_rows} of {len(y)} rows"
            X, y = X[keep], y[keep]
        folds = list(StratifiedKFold(args.folds, shuffle=True, random_state=0).split(X, y))
        for kind in args.learners.split(","):
            print(f"# {name}: c={c}, {len(y)} rows, {X.shape[1]} features, stratified "
                  f"{args.folds}-fold CV{note}, learner {kind}")

            def evaluate(make):
                t0 = time.perf_counter()
                accs = []
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for tr, te in folds:
                        accs.append(make().fit(X[tr], y[tr]).score(X[te], y[te]))
                return float(np.mean(accs)), float(np.std(accs)), time.perf_counter() - t0

            def emit(N, n, method, res, M=None):
                m, s, secs = res
                dr = dT = "-"
                if M is not None:
                    p = check_properties(M)
                    dr, dT = f"{p.d_r:g}", f"{p.d_T:g}"
                print(f"{name};{kind};{N};{n};{method};{m:.4f};{s:.4f};{dr};{dT};{secs:.1f}")
                sys.stdout.flush()
                results.append((name, kind, N, n, method, m, s, dr, dT))

            if args.peers:
                emit("-", c, "OneVsRest", evaluate(
                    lambda: OneVsRestClassifier(learner(kind, categorical))))
            for n in lengths(c, args.lengths.split(",")):
                for N in map(int, args.Ns.split(",")):
                    for method in args.methods.split(","):
                        try:
                            M = make_method(method, c, n, N)
                        except ValueError as exc:
                            print(f"# {method} N={N} n={n}: {exc}")
                            continue
                        res = evaluate(lambda: ECOCClassifier(learner(kind, categorical),
                                                              code=M))
                        emit(N, n, method, res, M)
    print(f"# wall time {(time.perf_counter() - t_start) / 60:.1f} min")
    markdown(results, args.methods.split(","))


def markdown(results, methods):
    """One table per (dataset, learner): rows (n, N), a column per method."""
    keys = sorted({(r[0], r[1]) for r in results})
    for name, kind in keys:
        rows = [r for r in results if r[0] == name and r[1] == kind]
        print(f"\n{name}, {kind}:\n")
        print("| n | N | " + " | ".join(LABELS.get(m, m) for m in methods) + " |")
        print("|---|---|" + "---|" * len(methods))
        cells = {}
        for r in rows:
            cells[(r[3], r[2], r[4])] = r
        for n in sorted({r[3] for r in rows if r[2] != "-"}):
            for N in sorted({r[2] for r in rows if r[3] == n and r[2] != "-"}):
                vals = []
                for m in methods:
                    r = cells.get((n, N, m))
                    vals.append("-" if r is None else
                                f"{r[5]:.3f}±{r[6]:.3f} (d_r {r[7]}, d_T {r[8]})")
                print(f"| {n} | {N} | " + " | ".join(vals) + " |")
        peer = [r for r in rows if r[4] == "OneVsRest"]
        if peer:
            print(f"\nOneVsRest: {peer[0][5]:.3f}±{peer[0][6]:.3f}")


def read_logs(paths):
    """Cells, header notes and wall times of ``accuracy`` outputs.

    Returns ``(cells, notes, walls)``: ``cells[(dataset, learner)][(n, N, method)] =
    (mean, std, d_r, d_T, seconds)`` (``N = "-"`` for OneVsRest), ``notes[(dataset,
    learner)]`` the run's ``# dataset: ...`` header line and ``walls[(dataset, learner)]``
    the summed wall times (minutes) of the logs that hold that grid, or the summed cell
    times when a log has no wall-time line (an interrupted run).
    """
    cells, notes, walls, machines = {}, {}, {}, set()
    for path in paths:
        keys, wall, secs = set(), None, 0.0
        with open(path) as fh:
            for line in fh:
                line = line.strip()
                if line.startswith("# machine: "):
                    machines.add(line[len("# machine: "):])
                elif line.startswith("# wall time "):
                    wall = float(line.split()[3])
                elif line.startswith("# ") and ": c=" in line and ", learner " in line:
                    name = line[2:].split(":")[0]
                    notes[(name, line.rsplit(", learner ", 1)[1])] = line[2:]
                elif line.count(";") == 9 and not line.startswith("dataset;"):
                    name, kind, N, n, method, m, sd, dr, dT, sec = line.split(";")
                    N = N if N == "-" else int(N)
                    cells.setdefault((name, kind), {})[(int(n), N, method)] = (
                        float(m), float(sd), dr, dT, float(sec))
                    keys.add((name, kind))
                    secs += float(sec)
        for key in keys:
            w = wall if wall is not None else secs / 60
            walls[key] = walls.get(key, 0.0) + w
    return cells, notes, walls, machines


def cmd_table(args):
    """Markdown tables of results_seed001.md from one or more ``accuracy`` logs."""
    cells, notes, walls, machines = read_logs(args.logs)
    methods = args.methods.split(",")
    short = {m: LABELS.get(m, m).replace(" (ours)", "") if m == "det_adaptive"
             else LABELS.get(m, m) for m in methods}
    for key in sorted(cells):
        name, kind = key
        grid = cells[key]
        print(f"\n### {name}, {kind}\n")
        for mach in sorted(machines):
            print(f"- machine: {mach}")
        if key in notes:
            print(f"- {notes[key]}")
        print(f"- wall time {walls[key]:.1f} min (nice 19, shared machine)\n")
        print("| n | N | " + " | ".join(LABELS.get(m, m) for m in methods)
              + " | paper | status |")
        print("|---|---|" + "---|" * (len(methods) + 2))
        shown = {}
        for n, N in sorted({(n, N) for n, N, _ in grid if N != "-"}):
            vals = {m: grid.get((n, N, m)) for m in methods}
            best = max((round(v[0], 3) for v in vals.values() if v), default=None)
            out = []
            for m in methods:
                v = vals[m]
                if v is None:
                    out.append("-")
                    continue
                shown[(n, N, m)] = round(v[0], 3)
                txt = f"{v[0]:.3f} ± {v[1]:.3f}"
                txt = f"**{txt}**" if round(v[0], 3) == best else txt
                out.append(f"{txt} ({v[2]}/{v[3]})")
            print(f"| {n} | {N} | " + " | ".join(out) + f" | n/a | {args.status} |")
        parts = []
        for m in methods:
            got = [v for (n, N, mm), v in grid.items() if mm == m and N != "-"]
            if got:
                parts.append(f"{LABELS.get(m, m)} {np.mean([g[0] for g in got]):.4f} "
                             f"(mean d_r {np.mean([float(g[2]) for g in got]):.2f}, "
                             f"mean d_T {np.mean([float(g[3]) for g in got]):.2f}; "
                             f"{len(got)} cells)")
        print("\nMean over the cells: " + "; ".join(parts))
        common = sorted({(n, N) for n, N, _ in grid if N != "-"
                         and all((n, N, m) in grid for m in methods)})
        if len(common) < len({(n, N) for n, N, _ in grid if N != "-"}):
            sub = "; ".join(
                f"{LABELS.get(m, m)} {np.mean([grid[(n, N, m)][0] for n, N in common]):.4f}"
                for m in methods)
            print(f"\nMean over the {len(common)} cells every method has: {sub}")
        peer = [v for (n, N, m), v in grid.items() if m == "OneVsRest"]
        if peer:
            print(f"\nOneVsRestClassifier (same learner, same folds): "
                  f"{peer[0][0]:.3f} ± {peer[0][1]:.3f}")
        h2h = []
        ref = methods[-1]
        for m in methods[:-1]:
            pairs = [(shown[(n, N, m)], shown[(n, N, ref)]) for n, N in common]
            eq = sum(a == b for a, b in pairs)
            win = sum(a > b for a, b in pairs)
            lose = sum(a < b for a, b in pairs)
            h2h += [(f"{short[m]} = {short[ref]}", eq), (f"{short[m]} > {short[ref]}", win),
                    (f"{short[ref]} > {short[m]}", lose)]
        h2h.sort()
        print("\nHead to head: " + "; ".join(f"{k}: {v}" for k, v in h2h if v))


#: The paper's datasets (Table I) by number of classes: Pendigits, Usps (10), Vowel (11),
#: Letters (26), Auslan (95), Aloi (1000; no double length in the paper).
PAPER_GRID = [("pendigits/usps", 10), ("vowel", 11), ("letters", 26), ("auslan", 95),
              ("aloi", 1000)]


def paper_shapes(include_aloi=True):
    for name, c in PAPER_GRID:
        if c == 1000 and not include_aloi:
            continue
        for n in lengths(c, ["half", "square"] + ([] if c == 1000 else ["double"])):
            yield name, c, n


def cmd_orientation(args):
    """Equal rows of the top-left piece, and d_r / mean row distance / d_T per orientation."""
    print(f"# machine: {machine()}")
    print("# grid: the paper's class counts c in {10, 11, 26, 95, 1000}, n in {floor(c/2), c, 2c}"
          " (aloi: no 2c), N in {2, 3, 5, 7, 11, 13}")
    print("orientation;truncation;N;c;n;k;equal_row_pairs_before_repair;d_r;row_mean;d_c;d_T;"
          "valid;seconds")
    summary = {}
    for orientation in args.orientations.split(","):
        for rule in args.truncations.split(","):
            for N in map(int, args.Ns.split(",")):
                for _, c, n in paper_shapes(include_aloi=not args.no_aloi):
                    t0 = time.perf_counter()
                    pairs = "-"
                    if rule == "top_left":
                        rows, cols, k = truncate(c, n, N, rule="top_left", orientation=orientation)
                        raw = sylvester_entries(rows, cols, N, k, orientation)
                        _, counts = np.unique(raw, axis=0, return_counts=True)
                        pairs = int((counts * (counts - 1) // 2).sum())
                    else:
                        k = "-"
                    M = nary(c, n, N=N, truncation=rule, orientation=orientation)
                    p = check_properties(M)
                    mean = distance_stats(M)[1]
                    secs = time.perf_counter() - t0
                    print(f"{orientation};{rule};{N};{c};{n};{k};{pairs};{p.d_r:g};{mean:.3f};"
                          f"{p.d_c:g};{p.d_T:g};{p.valid};{secs:.2f}")
                    sys.stdout.flush()
                    summary.setdefault((orientation, rule), []).append(
                        (N, c, n, pairs, p.d_r, mean, p.d_T, p.valid))
    print("\n| orientation | truncation | cells with equal rows (before repair) | mean d_r | "
          "mean row distance | mean d_T | valid cells |")
    print("|---|---|---|---|---|---|---|")
    for (orientation, rule), cells in summary.items():
        eq = [f"N={N} {c}x{n}" for N, c, n, pairs, *_ in cells if pairs not in ("-", 0)]
        eqs = "-" if rule != "top_left" else (", ".join(eq) if eq else "none")
        print(f"| {orientation} | {rule} | {eqs} | {np.mean([x[4] for x in cells]):.3f} | "
              f"{np.mean([x[5] for x in cells]):.3f} | {np.mean([x[6] for x in cells]):.3f} | "
              f"{sum(x[7] for x in cells)}/{len(cells)} |")


def cmd_composite(args):
    """Seed 001's composite-N remark: M_2(4) from i j mod 4 has d_T = 16, not 2 (N-1) N^(k-1)."""
    print(f"# machine: {machine()}")
    print("| N | k | prime | d_r | d_c | d_T | formula 2 (N-1) N^(k-1) | row distances (count) |")
    print("|---|---|---|---|---|---|---|---|")
    for N, k in [(4, 2), (6, 2), (3, 2), (5, 2), (4, 1), (9, 2)]:
        K = N ** k
        M = sylvester_entries(np.arange(K), np.arange(K), N, k, "product")
        p = check_properties(M)
        from edgecode.ecoc import pairwise_distances
        D = pairwise_distances(M)[np.triu_indices(K, 1)]
        vals, cnt = np.unique(D, return_counts=True)
        hist = ", ".join(f"{v:g} ({c})" for v, c in zip(vals, cnt))
        prime = all(N % q for q in range(2, N))
        print(f"| {N} | {k} | {prime} | {p.d_r:g} | {p.d_c:g} | {p.d_T:g} | "
              f"{2 * (N - 1) * N ** (k - 1)} | {hist} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    acc = sub.add_parser("accuracy", help="10-fold CV accuracy grid")
    acc.add_argument("--datasets", default="vowel")
    acc.add_argument("--learners", default="dt,svc")
    acc.add_argument("--Ns", default=",".join(map(str, NS)))
    acc.add_argument("--lengths", default="half,square,double")
    acc.add_argument("--methods", default="det_paper,det_adaptive,rand_paper")
    acc.add_argument("--folds", type=int, default=10)
    acc.add_argument("--max-rows", type=int, default=0)
    acc.add_argument("--peers", action="store_true", help="also OneVsRestClassifier")
    ori = sub.add_parser("orientation", help="equal rows and distances per orientation")
    ori.add_argument("--orientations", default=",".join(ORIENTATIONS))
    ori.add_argument("--truncations", default="top_left,adaptive")
    ori.add_argument("--Ns", default=",".join(map(str, NS)))
    ori.add_argument("--no-aloi", action="store_true", help="skip c = 1000")
    sub.add_parser("composite", help="composite N: M_2(4) loses the distance property")
    tab = sub.add_parser("table", help="results_seed001.md tables from accuracy logs")
    tab.add_argument("logs", nargs="+", help="stdout of one or more accuracy runs")
    tab.add_argument("--methods", default="det_paper,det_adaptive,rand_paper",
                     help="columns; the last one is the reference of the head to head")
    tab.add_argument("--status", default="faithful", help="text of the status column")
    args = ap.parse_args()
    {"accuracy": cmd_accuracy, "orientation": cmd_orientation,
     "composite": cmd_composite, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    main()
