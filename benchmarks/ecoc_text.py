"""Seed 003 experiment on text: annealed vs random vs BCH codes, per-column feature selection.

Usage::

    python benchmarks/ecoc_text.py [--datasets reuters_r8,20newsgroups] [--splits 10]
                                  [--max-features 5000] [--max-docs 0]

Data: ``../shared/datasets/reuters_r8.csv.gz`` and
``20newsgroups_{train,test}.csv.gz`` (train and test pooled, then re-split).
Binary bag of words (scikit-learn CountVectorizer, English stop words
removed, ``binary=True``, ``min_df=3``, the ``--max-features`` most frequent
terms; the vocabulary is fitted on each training part). For each of
``--splits`` random stratified 70/30 splits:

* codes of 63 columns: ``annealed`` (seed 003's simulated annealing),
  ``dense_random`` (best of 100 random), ``bch`` (t = 6); base learners
  MultinomialNB ("NB") and LinearSVC ("SVM"); plus the monolithic NB and SVM;
* per-dichotomizer selection on the annealed code with NB: chi2, ig, delta at
  K = 5%, 10%, 20%, 40% of the vocabulary.

Prints ``dataset;method;learner;selection;K;acc_mean;acc_std;d_r;seconds``
(mean and standard deviation over the splits).

This is our variant of the experiment (best-of-100 random baseline, NB-only
selection).  ``seed003_tables.py text`` runs the paper's protocol (Tables 2
and 3: plain random RA, BCH, SA with our and the paper's schedule, selection
with NB and SVM dichotomizers); see ``results_seed003.md``.
"""

import argparse
import sys
import time

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import MultinomialNB
from sklearn.svm import LinearSVC

from _common import machine, shared_text

from edgecode.ecoc import make_code, row_distance
from edgecode.ecoc.classifier import ECOCClassifier



def learner(kind):
    return MultinomialNB() if kind == "NB" else LinearSVC(random_state=0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", default="reuters_r8,20newsgroups")
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--max-features", type=int, default=5000)
    ap.add_argument("--max-docs", type=int, default=0, help="subsample (0: all documents)")
    ap.add_argument("--skip-svm-codes", action="store_true")
    ap.add_argument("--learners", default="NB,SVM", help="base learners to run (NB, SVM)")
    args = ap.parse_args()
    print(f"# machine: {machine()}")
    print("dataset;method;learner;selection;K;acc_mean;acc_std;d_r;seconds")
    for name in args.datasets.split(","):
        text, y = shared_text(name, args.max_docs)
        c = int(y.max()) + 1
        codes = {"annealed": make_code("annealed", c, 63, random_state=0),
                 "dense_random": make_code("dense_random", c, 63, random_state=0),
                 "bch": make_code("bch", c, 63, t=6, random_state=0)}
        print(f"# {name}: {len(y)} documents, {c} classes, {args.splits} random 70/30 splits, "
              f"vocabulary {args.max_features}; d_r: "
              + ", ".join(f"{k} {row_distance(M):g}" for k, M in codes.items()))
        configs = []
        for kind in [k.strip().upper() for k in args.learners.split(",") if k.strip()]:
            configs.append(("monolithic", kind, "-", "-", None))
            for code in codes:
                if kind == "SVM" and args.skip_svm_codes and code != "annealed":
                    continue
                configs.append((code, kind, "-", "-", None))
        for measure in ("chi2", "ig", "delta"):
            for k in (0.05, 0.10, 0.20, 0.40):
                configs.append(("annealed", "NB", measure, k, (measure, k)))
        accs = {cfg[:4]: [] for cfg in configs}
        secs = {cfg[:4]: 0.0 for cfg in configs}
        for s in range(args.splits):
            tr, te = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y,
                                      random_state=s)
            vec = CountVectorizer(binary=True, stop_words="english", min_df=3,
                                  max_features=args.max_features, dtype=np.float64)
            Xtr = vec.fit_transform(text[tr])
            Xte = vec.transform(text[te])
            for method, kind, sel, k, fs in configs:
                t0 = time.perf_counter()
                if method == "monolithic":
                    model = learner(kind)
                else:
                    model = ECOCClassifier(learner(kind), code=codes[method],
                                           feature_selection=fs)
                acc = model.fit(Xtr, y[tr]).score(Xte, y[te])
                accs[(method, kind, sel, k)].append(acc)
                secs[(method, kind, sel, k)] += time.perf_counter() - t0
        for key, a in accs.items():
            method, kind, sel, k = key
            dr = f"{row_distance(codes[method]):g}" if method in codes else "-"
            kk = "-" if k == "-" else f"{k:.0%}"
            print(f"{name};{method};{kind};{sel};{kk};{np.mean(a):.4f};{np.std(a):.4f};{dr};"
                  f"{secs[key]:.1f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
