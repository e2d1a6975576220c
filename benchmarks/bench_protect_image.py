"""Image protection under upsets (issue 27, image): planned vs SEC-DED vs BCH vs none.

Every stored bit of the image (every array of the model, the protection's
own ``__protect__`` included; the metadata JSON, which the device does not
read, is not) is upset independently at rate ``--eps`` (default 1e-3). Per
kind, side by side in one process:

* ``none``: the image as exported;
* ``secded``: SEC-DED (72,64) on every word of every array (12.5% and more:
  the industry default of ECC flash); a double error in a word the kind has
  no fallback for refuses the image (an ECC trap);
* ``bch``: one BCH code per array (blocks of up to 8191 bits; t the
  smallest whose block fails with probability <= 1e-4 at eps);
* ``planned <= B``: :func:`export.protect_image.protect_image` with
  ``max_overhead`` B (4% and 12.5%), per array none / parity with the kind's
  erasure fallback / SEC-DED / BCH / triplication, or one BCH code over a
  span of consecutive arrays.

Each row: overhead, the planner's prediction (simulated, seed 0) with its 99%
interval, an independent campaign (``run_campaign``, ParameterUpset at the
same rate, another seed) with its 99% interval, whether the prediction lies
inside it, refused images and accuracy.

Sets (``--sets``, default every one whose data is present):

* ``glass`` (the small case, ``tests/data/glass.csv``; 6 classes 1, 2, 3, 5,
  6, 7; 214 rows, fitted and planned on all of them): an ECOC of depth-4 CART
  trees (15 dense random columns, 2.7 KB image) and a random forest (10
  trees, depth 5, 2.8 KB);
* ``satimage`` (the realistic case, ``satimage.csv.gz`` of the shared data:
  6 classes 1, 2, 3, 4, 5, 7; 4,435 train / 2,000 test rows, 36 features):
  the models ``edgecode budget`` recommends on a 256 KB Cortex-M4 part
  (``benchmarks/README.md``, issue 28; bsc 0.05 at the compute site): with
  ``--kinds ecoc`` an ECOC of 63 depth-16 CART trees on the BCH code (62 KB
  image), over every kind a random forest of 24 trees of depth 14 (57 KB);
  fitted on the train rows, planned and measured on 500 test rows (seed 0);
* ``house_votes`` (protected naive Bayes, 16 binary features, 600 B) and
  ``moviereview`` (protected naive Bayes on the 1,000 binary n-gram
  indicators of ``moviereview_binary.csv.gz``, 6.5 KB; fitted on the train
  rows, all 250 test rows): the kind is two-class with one int32 weight and one
  uint16 repetition count per feature, every feature sent once. Before them,
  the arithmetic of the smallest naive Bayes image whose 4% holds the
  ``__protect__`` entry plus a code that beats SEC-DED.

Usage: ``python benchmarks/bench_protect_image.py [--sets glass,satimage,house_votes,moviereview]
[--eps 1e-3] [--trials 200] [--check-trials 100]`` (``EDGECODE_SHARED_DATA``:
the folder of ``satimage.csv.gz`` and ``moviereview_binary.csv.gz``).
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from firmware_sim import load
from firmware_sim.engine.campaign import run_campaign
from firmware_sim.faults import ParameterUpset

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED, machine, shared_csv  # noqa: E402

#: Set -> shared data file it needs (None: in the repository).
SETS = {"glass": None, "satimage": "satimage.csv.gz", "house_votes": None,
        "moviereview": "moviereview_binary.csv.gz"}
#: Points of the large sets' test rows the plans and campaigns run on.
N_POINTS = 500


def _shared(name):
    """(features, labels, split) of a shared CSV: numeric columns, ``class``, ``split``."""
    h, rows = shared_csv(name)
    A = np.array(rows, dtype=object)
    ci, si = h.index("class"), h.index("split")
    feat = [i for i, c in enumerate(h) if i not in (ci, si) and c != "file"]
    return A[:, feat].astype(float), A[:, ci], A[:, si]


def _points(test_rows, seed=0):
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(test_rows)
    return np.sort(rows[rng.choice(rows.size, min(N_POINTS, rows.size), replace=False)])


def models(name):
    """[(label, device, X, y)] of one set."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.naive_bayes import BinaryNaiveBayes
    from export.ecoc import export_ecoc
    from export.forest import export_forest
    from export.naive_bayes import export_protected_nb

    if name == "glass":
        d = np.genfromtxt(ROOT / "tests" / "data" / "glass.csv", delimiter=",", skip_header=1)
        X, y = d[:, :-1], d[:, -1].astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ecoc = ECOCClassifier(DecisionTreeClassifier(max_depth=4, random_state=0),
                                  code="dense_random", n_columns=15, random_state=0).fit(X, y)
            forest = RandomForestClassifier(10, max_depth=5, random_state=0).fit(X, y)
        return [("ECOC trees L=15 d=4 (glass)", export_ecoc(ecoc, X).device, X, y),
                ("forest T=10 d=5 (glass)", export_forest(forest, X).device, X, y)]
    if name == "satimage":
        from export.kinds.ecoc import _code
        X, y, split = _shared("satimage.csv.gz")
        y = y.astype(int)
        tr = split == "train"
        pts = _points(split == "test")
        code = _code({"design": "bch", "N": 2, "n_columns": 63}, 6, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ecoc = ECOCClassifier(DecisionTreeClassifier(max_depth=16, random_state=0),
                                  code=code, random_state=0).fit(X[tr], y[tr])
            forest = RandomForestClassifier(24, max_depth=14, random_state=0).fit(X[tr], y[tr])
        return [("ECOC trees bch L=63 d=16 (satimage)", export_ecoc(ecoc, X[tr]).device,
                 X[pts], y[pts]),
                ("forest T=24 d=14 (satimage)", export_forest(forest, X[tr]).device,
                 X[pts], y[pts])]
    if name == "house_votes":
        from edgecode.datasets import load_house_votes
        hv = load_house_votes()
        nb = BinaryNaiveBayes().fit(hv.X, hv.y)
        return [("naive Bayes n=16 (house votes)",
                 export_protected_nb(nb, np.ones(hv.X.shape[1], int)).device, hv.X,
                 np.asarray(hv.y))]
    X, y, split = _shared("moviereview_binary.csv.gz")
    X, y = X.astype(np.uint8), y.astype(int)
    tr = split == "train"
    pts = _points(split == "test")
    nb = BinaryNaiveBayes().fit(X[tr], y[tr])
    dev = export_protected_nb(nb, np.ones(X.shape[1], int), X_check=X[tr]).device
    return [("naive Bayes n=1000 (movie reviews)", dev, X[pts], y[pts])]


def nb_smallest(eps, budget=0.04):
    """The smallest protected naive Bayes image whose ``budget`` holds the
    ``__protect__`` entry and one BCH code over all its arrays (a) at all (t >=
    1), (b) failing less often than SEC-DED (72,64) on every word fails (a
    double error in some word), both exact binomials at ``eps``; images of n
    features made as the exporter makes them (int32 weights, uint16
    repetitions, classes "0"/"1"). Returns [(what, n, image bytes, t, P_bch,
    P_secded)]."""
    from firmware_sim import ProtectedNBDevice
    from export.protect_image import _bch_m, _cost, _sizer, binomial_tail
    from firmware_sim._bch import T_MAX, bch_layout
    out, need = [], ["any code", "beats SEC-DED"]
    for n in range(8, 4000, 8):
        c = ProtectedNBDevice.from_arrays(np.ones(n, int), 1, np.ones(n, int),
                                          meta={"classes": ["0", "1"]}).container
        size, base = _sizer(c), len(c.tobytes())
        nbytes = sum(a.nbytes for a in c.arrays.values())
        best = None
        for t in range(1, T_MAX + 1):
            m = _bch_m(8 * nbytes, t)
            if m is not None and size(3 + _cost("bch", (m, t), nbytes)) - base <= budget * base:
                best = (m, t)
        if best is None:
            continue
        m, t = best
        r, k, nb = bch_layout(m, t, 8 * nbytes)
        last = 8 * nbytes - (nb - 1) * k
        ok = (1 - binomial_tail(k + r, t, eps)) ** (nb - 1) * (1 - binomial_tail(last + r, t, eps))
        p_bch = 1 - ok
        ok = 1.0
        for a in c.arrays.values():
            bits = 8 * a.nbytes
            for w in range(-(-bits // 64)):
                ok *= 1 - binomial_tail(min(64, bits - 64 * w) + 8, 1, eps)
        p_sec = 1 - ok
        if need and need[0] == "any code":
            out.append(("any code", n, base, t, p_bch, p_sec))
            need.pop(0)
        if need and p_bch <= p_sec:
            out.append(("beats SEC-DED", n, base, t, p_bch, p_sec))
            break
    return out


def _load():
    try:
        return f"load average {os.getloadavg()[0]:.2f}"
    except OSError:
        return "load unknown"


def main(argv=None):
    from export.protect_image import _label_indices, protect_image

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    present = [n for n, f in SETS.items() if f is None or (SHARED / f).is_file()]
    ap.add_argument("--sets", default=",".join(present),
                    help=f"comma list of {list(SETS)} (default: those whose data is "
                         f"present: {','.join(present)})")
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--trials", type=int, default=200, help="images per prediction")
    ap.add_argument("--check-trials", type=int, default=100, help="images per campaign")
    ap.add_argument("--sample-bits", type=int, default=192)
    args = ap.parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    bad = [s for s in sets if s not in SETS]
    if bad:
        ap.error(f"unknown set(s) {bad}; expected some of {list(SETS)}")
    missing = [s for s in sets if SETS[s] and not (SHARED / SETS[s]).is_file()]
    if missing:
        ap.error(f"set(s) {missing} need {[SETS[s] for s in missing]} in {SHARED}; set "
                 "EDGECODE_SHARED_DATA")
    schemes = [("planned <= 4%", "auto", 0.04), ("planned <= 12.5%", "auto", 0.125),
               ("secded (72,64) every word", "secded", 0.0),
               ("bch every array", "bch", 0.0), ("none", "none", 0.0)]
    t_all = time.perf_counter()
    print(f"eps = {args.eps:g} per stored bit; prediction {args.trials} images (seed 0), "
          f"check campaign {args.check_trials} images (seed 7); {machine()}; {_load()}")
    if any(s in ("house_votes", "moviereview") for s in sets):
        print("\nnaive Bayes: smallest image whose 4% holds the __protect__ entry (64 B table "
              "entry, <= 15 B alignment, 3 + 12 + 3 B of table and span) and one BCH code over "
              "every array; P = probability that some block (BCH) or some word (SEC-DED on "
              f"every word) has more errors than it corrects, exact binomials at eps = "
              f"{args.eps:g}")
        for what, n, nbytes, t, pb, ps in nb_smallest(args.eps):
            print(f"  {what:14s}: n = {n} features, {nbytes} B image, BCH t = {t}: "
                  f"P_bch = {pb:.3g}, P_secded = {ps:.3g}")
    hdr = (f"{'model':36s} {'scheme':26s} {'bytes':>6s} {'overhd':>7s} {'predicted [99%]':>22s} "
           f"{'campaign [99%]':>22s} {'in':>3s} {'refused':>7s} {'acc':>5s} {'s':>5s}")
    for name in sets:
        for kind, dev, X, y in models(name):
            n_bits = 8 * sum(a.nbytes for a in dev.container.arrays.values())
            print(f"\n{kind}: image {dev.container.nbytes} B, {n_bits} stored bits of "
                  f"arrays ({args.eps * n_bits:.1f} upsets per image at eps), {len(X)} points; "
                  f"{_load()}")
            print(hdr)
            ranking = None
            y_idx = _label_indices(dev.container, y)
            for label, scheme, budget in schemes:
                t0 = time.perf_counter()
                prot, rep = protect_image(dev, X, y, eps=args.eps, max_overhead=budget,
                                          scheme=scheme, n_trials=args.trials,
                                          sample_bits=args.sample_bits, ranking=ranking,
                                          random_state=0)
                ranking = rep["ranking"]
                camp = run_campaign(load(prot), X, ParameterUpset(rate=args.eps),
                                    n_trials=args.check_trials, random_state=7, y=y_idx)
                pt = camp.points[0]
                lo, hi = 1 - pt.same_ci[1], 1 - pt.same_ci[0]
                pred = rep["predicted_label_change"]
                pi = rep["predicted_interval"]
                # the campaign's interval is over images; a prediction of exactly 0 (no
                # image changed a label) is compared with a tolerance of one image
                inside = "yes" if lo - 1.0 / args.check_trials <= pred <= hi else "NO"
                print(f"{kind:36s} {label:26s} {rep['protected_bytes']:6d} "
                      f"{100 * rep['overhead']:6.1f}% "
                      f"{pred:6.3f} [{pi[0]:.3f},{pi[1]:.3f}] "
                      f"{1 - pt.same_rate:6.3f} [{lo:.3f},{hi:.3f}] {inside:>3s} "
                      f"{rep['refused_rate']:7.2f} {pt.accuracy:5.3f} "
                      f"{time.perf_counter() - t0:5.1f}", flush=True)
                if scheme == "auto":
                    print(f"{'':36s}   plan: {_plan_text(rep)}")
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s; {_load()}")


def _plan_text(rep):
    plan = []
    for a in rep["allocation"]:
        if a["scheme"] == "none" or a["span_of"] not in (None, a["array"]):
            continue
        if a["span_of"]:
            last = [b["array"] for b in rep["allocation"] if b["span_of"] == a["array"]][-1]
            m, t, n = a["bch"]
            plan.append(f"{a['array']}..{last} ({n} arrays):bch(m={m},t={t})")
        else:
            plan.append(f"{a['array']}:{a['scheme']}"
                        + (f"/{a['word_bytes']}" if a["word_bytes"] else "")
                        + (f"(m={a['bch'][0]},t={a['bch'][1]})" if a["bch"] else ""))
    return ", ".join(plan) or "nothing"


if __name__ == "__main__":
    main()
