"""ECOC predict latency and throughput: edgecode vs scikit-learn's OutputCodeClassifier.

Usage::

    python benchmarks/bench_ecoc_latency.py [--fast | --full]

Data: scikit-learn's bundled digits (1797 x 64, scaled to [0, 1]); nothing
is read from ../shared. Both sides use the same learners: a binary code of
15 columns (OutputCodeClassifier's own random code book, code_size = 1.5,
copied into ECOCClassifier as an explicit matrix), with LinearSVC and with
DecisionTreeClassifier (max_depth 10). Rows:

* ``<learner>_batch1``: one sample per call (median over many calls);
* ``<learner>_batch1000``: 1000 samples per call;
* ``onnx_*``: onnxruntime on the exported graph (fixed-point input) vs the peer;
* ``device_*``: the firmware_sim integer runtime vs the peer;
* ``peer_learners_only_*``: only the peer's per-learner calls (its Python
  loop over the 15 estimators, without input validation and without the
  pairwise-distance argmin) vs ``ECOCClassifier.predict``.

Prints a parseable table ``task;n;peer_s;edgecode_s;ratio`` (seconds per
call, median of repeats after warm-up, JIT excluded; ratio = peer /
edgecode), plus the numpy-loop reference for the linear learners.
"""

import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort
from sklearn.datasets import load_digits
from sklearn.multiclass import OutputCodeClassifier
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from _common import machine, print_table

from edgecode.ecoc.classifier import ECOCClassifier
from export.ecoc import export_ecoc

PROFILES = {"fast": dict(calls=300, repeats=5), "full": dict(calls=2000, repeats=9)}


def per_call(fn, calls, repeats):
    """Median over ``repeats`` of the mean time of ``calls`` calls (after a warm-up)."""
    for _ in range(3):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true")
    g.add_argument("--full", action="store_true")
    prof = PROFILES["full" if ap.parse_args().full else "fast"]
    calls, reps = prof["calls"], prof["repeats"]
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xtr, ytr = X[:1000], y[:1000]
    X1 = np.ascontiguousarray(X[1500:1501])
    Xb = np.ascontiguousarray(np.vstack([X, X])[:1000])
    rows = []
    print(f"# machine: {machine()}")
    for name, base in (("linear_svm", LinearSVC(random_state=0)),
                       ("tree", DecisionTreeClassifier(max_depth=10, random_state=0))):
        peer = OutputCodeClassifier(base, code_size=1.5, random_state=0).fit(Xtr, ytr)
        code = (peer.code_book_ > 0).astype(int)
        ours = ECOCClassifier(base, code=code).fit(Xtr, ytr)
        exp = export_ecoc(ours, Xtr, onnx_input="frame")   # the int16 device-frame graph
        sess = ort.InferenceSession(exp.onnx_model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        dev = exp.device
        q1, qb = dev.quantize(X1), dev.quantize(Xb)
        agree = np.mean(ours.predict(Xb) == peer.predict(Xb))
        print(f"# {name}: {code.shape[1]} learners, fast path {ours.fast_path_}, labels equal "
              f"to the peer's on {agree:.1%} of the batch (Hamming vs Euclidean decoding)")
        for n, x, q in ((1, X1, q1), (1000, Xb, qb)):
            c = calls if n == 1 else max(3, calls // 100)
            t_peer = per_call(lambda: peer.predict(x), max(10, c // 10), reps)
            t_ours = per_call(lambda: ours.predict(x), c, reps)
            t_onnx = per_call(lambda: sess.run(["label"], {"q": q}), c, reps)
            t_dev = per_call(lambda: dev.predict(q), c, reps)
            rows.append((f"{name}_batch{n}", n, t_peer, t_ours, t_peer / t_ours))
            rows.append((f"onnx_{name}_batch{n}", n, t_peer, t_onnx, t_peer / t_onnx))
            rows.append((f"device_{name}_batch{n}", n, t_peer, t_dev, t_peer / t_dev))
            # the peer's learners alone (no validation, no argmin machinery)
            t_loop = per_call(lambda: [(e.decision_function(x) if hasattr(e, "decision_function")
                                        else e.predict_proba(x)) for e in peer.estimators_],
                              max(10, c // 10), reps)
            rows.append((f"peer_learners_only_vs_{name}_batch{n}", n, t_loop, t_ours,
                         t_loop / t_ours))
        if name == "linear_svm":
            W = np.vstack([e.coef_ for e in peer.estimators_]).T
            b = np.array([e.intercept_[0] for e in peer.estimators_])
            book = peer.code_book_

            def numpy_loop():
                s = X1 @ W + b
                return np.argmin(((s[:, None, :] - book[None]) ** 2).sum(axis=2), axis=1)
            t_np = per_call(numpy_loop, calls, reps)
            rows.append(("numpy_linear_reference_batch1", 1, t_np, ours_t1(rows), t_np /
                         ours_t1(rows)))
    print_table(["task", "n", "peer_s", "edgecode_s", "ratio"], rows)


def ours_t1(rows):
    return [r for r in rows if r[0] == "linear_svm_batch1"][0][3]


if __name__ == "__main__":
    main()
