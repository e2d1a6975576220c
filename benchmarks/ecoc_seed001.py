"""Seed 001 experiment: deterministic N-ary Sylvester codes vs best-of-1000 random N-ary codes.

Usage::

    python benchmarks/ecoc_seed001.py [--datasets pendigits,vowel,...] [--learners dt,svc]
                                     [--svc-max-train 2000] [--out results.csv]

Data: ``../shared/datasets/{pendigits,usps,vowel,optdigits}`` with their
**official train/test splits** (not 10-fold CV: the full grid with 10 folds
is about 10x the time on the 2 shared cores), and ``glass``, ``ecoli``
(no split: stratified 10-fold CV, mean and std over folds).

Grid: N in {2, 3, 5, 7, 11, 13}, n in {c/2, c, 2c} (rounded up), base
learner DecisionTreeClassifier or SVC (scikit-learn defaults; features
standardised for SVC; SVC trains on at most ``--svc-max-train`` rows,
stratified, on the large sets -- stated in the output). Codes: ``nary``
(deterministic, truncated N-ary Sylvester matrix) vs ``nary_random`` (best
d_T of 1000 random draws). Peers on the same split: scikit-learn's
OutputCodeClassifier (code_size = n/c, so the same number of learners) and
OneVsRestClassifier. Prints ``dataset;learner;N;n;method;acc_mean;acc_std;
d_r`` (std is over folds for CV sets, '-' for a single split).
"""

import argparse
import sys
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.multiclass import OneVsRestClassifier, OutputCodeClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from _common import machine, shared_csv

from edgecode.ecoc import make_code, row_distance
from edgecode.ecoc.classifier import ECOCClassifier

FILES = {"pendigits": "pendigits.csv.gz", "usps": "usps.csv.gz", "vowel": "vowel.csv",
         "optdigits": "optdigits.csv.gz", "glass": "glass.csv", "ecoli": "ecoli.csv"}
NS = [2, 3, 5, 7, 11, 13]


def load(name):
    header, rows = shared_csv(FILES[name])
    drop = {"class", "split", "speaker", "sex"}
    feats = [i for i, h in enumerate(header) if h not in drop]
    X = np.array([[float(r[i]) for i in feats] for r in rows])
    _, y = np.unique([r[header.index("class")] for r in rows], return_inverse=True)
    split = np.array([r[header.index("split")] for r in rows]) if "split" in header else None
    return X, y, split


def folds(X, y, split):
    if split is not None:
        yield np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    else:
        yield from StratifiedKFold(10, shuffle=True, random_state=0).split(X, y)


def learner(kind):
    if kind == "dt":
        return DecisionTreeClassifier(random_state=0)
    return make_pipeline(StandardScaler(), SVC())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", default="vowel,pendigits,optdigits,usps,glass,ecoli")
    ap.add_argument("--learners", default="dt,svc")
    ap.add_argument("--Ns", default=",".join(map(str, NS)))
    ap.add_argument("--svc-max-train", type=int, default=2000)
    args = ap.parse_args()
    print(f"# machine: {machine()}")
    print("dataset;learner;N;n;method;acc_mean;acc_std;d_r;seconds")
    for name in args.datasets.split(","):
        X, y, split = load(name)
        c = int(y.max()) + 1
        splits = list(folds(X, y, split))
        how = "official split" if split is not None else "10-fold CV"
        for kind in args.learners.split(","):
            note = ""
            if kind == "svc" and split is not None and len(splits[0][0]) > args.svc_max_train:
                tr = splits[0][0]
                keep, _ = train_test_split(tr, train_size=args.svc_max_train, stratify=y[tr],
                                           random_state=0)
                run_splits = [(np.sort(keep), splits[0][1])]
                note = f" (SVC on {args.svc_max_train} of {len(tr)} training rows)"
            else:
                run_splits = splits
            print(f"# {name}: c={c}, {X.shape[1]} features, {how}{note}")

            def evaluate(make):
                t0 = time.perf_counter()
                accs = []
                for tr, te in run_splits:
                    accs.append(make().fit(X[tr], y[tr]).score(X[te], y[te]))
                return np.mean(accs), (np.std(accs) if len(accs) > 1 else None), \
                    time.perf_counter() - t0

            def emit(N, n, method, res, dr="-"):
                m, s, secs = res
                sd = "-" if s is None else f"{s:.4f}"
                print(f"{name};{kind};{N};{n};{method};{m:.4f};{sd};{dr};{secs:.1f}")
                sys.stdout.flush()

            emit("-", c, "OneVsRest", evaluate(lambda: OneVsRestClassifier(learner(kind))))
            for n in sorted({int(np.ceil(c / 2)), c, 2 * c}):
                emit(2, n, "OutputCode", evaluate(lambda: OutputCodeClassifier(
                    learner(kind), code_size=n / c, random_state=0)))
                for N in map(int, args.Ns.split(",")):
                    for design in ("nary", "nary_random"):
                        try:
                            M = make_code(design, c, n, N=N, random_state=0)
                        except ValueError as exc:
                            print(f"# {design} N={N} n={n}: {exc}")
                            continue
                        res = evaluate(lambda: ECOCClassifier(learner(kind), code=M))
                        emit(N, n, design, res, f"{row_distance(M):g}")


if __name__ == "__main__":
    main()
