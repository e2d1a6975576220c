"""edgecode budget (issue 16) against the obvious choices, at equal flash.

Usage::

    python benchmarks/bench_budget.py [--datasets pendigits,optdigits,reuters_r8]
                                      [--profile cortex-m4] [--eps 0.05]
                                      [--max-points 1000] [--fast]

Data (read from ``../shared/datasets``, see ``benchmarks/_common.py``):
``pendigits.csv.gz`` (16 features, 10 classes, official split),
``optdigits.csv.gz`` (the satimage-like set: 64 pixel counts, 10 classes,
official split) and ``reuters_r8.csv.gz`` (8 topics; text turned into the
300 most frequent terms as binary indicators, scikit-learn CountVectorizer,
English stop words removed, vocabulary fitted on the training part; the
first 2000 training and 1000 test documents in file order: a subset, to keep
one run under ten minutes on two shared cores). ``--max-points`` keeps a
seeded stratified subset of the test rows for the measurements.

For each set, :func:`export.budget.search` runs its default space on the
profile (BSC with ``eps`` on each kind's own site: ECOC learner outputs,
SSBC code bits); then the obvious choices are trained, exported and
measured the same way (flash and RAM with the profile's runtime bytes,
exact predicted accuracy under noise, checked by a campaign):

* one-vs-all with a linear (ridge) learner and with trees of depth 3 and 6;
* scikit-learn's random code: the ``code_book_`` of
  ``OutputCodeClassifier(code_size=1.5)`` (a plain i.i.d. binary matrix of
  ``int(1.5 c)`` columns), same learners.

Each baseline is compared with the best front point whose flash is at most
the baseline's ("at equal flash"). Prints
``dataset;baseline;flash;acc_noise;front_point;front_flash;front_acc_noise;gain``
and the recommendation of the whole profile.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, shared_csv  # noqa: E402


def _table(name):
    header, rows = shared_csv(name)
    ci, si = header.index("class"), header.index("split")
    feats = [i for i in range(len(header)) if i not in (ci, si)]
    X = np.array([[float(r[i]) for i in feats] for r in rows])
    y = np.array([r[ci] for r in rows])
    split = np.array([r[si] for r in rows])
    return X, y, split


def _reuters(n_terms=300, n_train=2000, n_test=1000):
    from sklearn.feature_extraction.text import CountVectorizer
    header, rows = shared_csv("reuters_r8.csv.gz")
    ti, ci, si = header.index("text"), header.index("class"), header.index("split")
    tr = [r for r in rows if r[si] == "train"][:n_train]
    te = [r for r in rows if r[si] == "test"][:n_test]
    vec = CountVectorizer(stop_words="english", binary=True, max_features=n_terms)
    Xtr = vec.fit_transform([r[ti] for r in tr]).toarray().astype(float)
    Xte = vec.transform([r[ti] for r in te]).toarray().astype(float)
    keep_classes = sorted({r[ci] for r in tr})
    mask = np.array([r[ci] in keep_classes for r in te])
    X = np.vstack([Xtr, Xte[mask]])
    y = np.array([r[ci] for r in tr] + [r[ci] for r, m in zip(te, mask) if m])
    split = np.array(["train"] * len(tr) + ["test"] * int(mask.sum()))
    return X, y, split


LOADERS = {"pendigits": lambda: _table("pendigits.csv.gz"),
           "optdigits": lambda: _table("optdigits.csv.gz"),
           "reuters_r8": _reuters}


def _baseline(task, code, learner, prof, flt, seed, sim_samples):
    """Train, export and measure one explicit code as the search does."""
    import warnings

    from edgecode.ecoc.classifier import ECOCClassifier
    from export._budget_space import Fitted
    from export.kinds.ecoc import learner as _learner
    from export.budget import _memory, _predict, _simulate
    from export.ecoc import export_ecoc
    from firmware_sim.profiles import estimate

    cfg = {"learner": learner[0], "max_depth": learner[1]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = ECOCClassifier(_learner(cfg, seed), code=code,
                             random_state=seed).fit(task.X_train, task.y_train)
    ex = export_ecoc(clf, task.X_train, meta={"dataset": task.name})   # as the search
    acc = float(np.mean(ex.device.predict(ex.device.quantize(task.X_test)) == task.y_test))
    fitted = Fitted(ex, task.X_test, task.y_test, acc)
    flash, ram, _ = _memory(ex, prof, None)
    pred, _ = _predict(ex.device, task.X_test, task.y_test, flt, None)
    sim, ci, _ = _simulate(fitted, flt, None, sim_samples, 0.99, seed)
    return {"flash": flash, "ram": ram, "clean": acc, "pred": pred, "sim": sim, "ci": ci,
            "cycles": estimate(prof, ex.resources)["cycles"],
            "noise": pred if pred is not None else sim}


def run(name, args):
    from sklearn.linear_model import RidgeClassifier
    from sklearn.multiclass import OutputCodeClassifier

    from export._budget_space import SearchSpace, load_task
    from export.budget import make_budget_fault, search
    from firmware_sim.profiles import get_profile

    X, y, split = LOADERS[name]()
    data = (X, y, split)
    space = SearchSpace() if not args.fast else SearchSpace(
        designs=("one_vs_all", "dense_random", "nary"), nary_N=(3,), tree_depths=(4,),
        ssbc_bits=(32,))
    t0 = time.perf_counter()
    res = search(data, args.profile, args.eps, space=space, random_state=args.seed,
                 max_points=args.max_points, sim_samples=args.sim_samples,
                 progress=sys.stderr if args.progress else None)
    search_s = time.perf_counter() - t0
    res.settings["data"] = name
    print(res.table())
    print(f"search took {search_s:.1f}s")
    task = load_task(data, random_state=args.seed, max_points=args.max_points)
    prof = get_profile(args.profile)
    flt = make_budget_fault("bsc", args.eps)
    c = task.n_classes
    sk = OutputCodeClassifier(RidgeClassifier(), code_size=1.5,
                              random_state=args.seed).fit(task.X_train, task.y_train)
    sk_code = (np.asarray(sk.code_book_) > 0).astype(np.int16)
    # rows follow sorted class labels, as ECOCClassifier's classes_ (indices 0..c-1)
    ova = np.eye(c, dtype=np.int16)
    learners = [("linear", None), ("tree", 3), ("tree", 6)]
    rows = []
    for code_name, code in (("one_vs_all", ova), ("sklearn_random_1.5c", sk_code)):
        for lrn in learners:
            label = f"{code_name} {lrn[0]}" + (f"(d={lrn[1]})" if lrn[1] else "")
            b = _baseline(task, code, lrn, prof, flt, args.seed, args.sim_samples)
            within = [e for e in res.pareto if e["flash_bytes"] <= b["flash"]]
            if within:
                best = max(within, key=lambda e: e["accuracy_under_noise"])
                rows.append([name, label, b["flash"], b["noise"], best["label"],
                             best["flash_bytes"], best["accuracy_under_noise"],
                             best["accuracy_under_noise"] - b["noise"]])
            else:
                rows.append([name, label, b["flash"], b["noise"], "none", "", "", ""])
            print(f"  baseline {label}: {b['flash']} B flash, clean {b['clean']:.4f}, "
                  f"predicted {b['pred']:.4f}, simulated {b['sim']:.4f} "
                  f"[{b['ci'][0]:.4f}, {b['ci'][1]:.4f}]", file=sys.stderr)
    rec = res.recommended
    return rows, [name, rec["label"], rec["flash_bytes"], rec["ram_bytes"],
                  rec["accuracy_under_noise"], rec["clean_accuracy"], len(res.entries),
                  round(search_s, 1)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="pendigits,optdigits,reuters_r8")
    ap.add_argument("--profile", default="cortex-m4")
    ap.add_argument("--eps", type=float, default=0.05)
    ap.add_argument("--max-points", type=int, default=1000)
    ap.add_argument("--sim-samples", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fast", action="store_true", help="a small space (CI smoke run)")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    all_rows, recs = [], []
    for name in args.datasets.split(","):
        rows, rec = run(name.strip(), args)
        all_rows += rows
        recs.append(rec)
    print()
    print_table(["dataset", "baseline", "flash", "acc_noise", "front_point", "front_flash",
                 "front_acc_noise", "gain"], all_rows)
    print()
    print_table(["dataset", "recommended", "flash", "ram", "acc_noise", "clean", "configs",
                 "search_s"], recs)


if __name__ == "__main__":
    main()
