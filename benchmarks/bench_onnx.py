"""ONNX artifacts (issue 13): ECOC graph speed against scikit-learn, and artifact sizes.

Usage::

    python benchmarks/bench_onnx.py [--fast | --full]

Data: scikit-learn's bundled digits (1797 x 64, pixels / 16); nothing is read
from ../shared. The peer is scikit-learn's ``OutputCodeClassifier`` with a
LinearSVC or LogisticRegression base (code_size 1.5: 15 learners); edgecode
fits ``ECOCClassifier`` on the peer's own code book (same learners, same
columns), exports it with ``export_ecoc`` and runs the default ONNX graph (raw
float32 features in, class labels out, the device's input quantizer inside)
in onnxruntime (CPU). Both sides run on one thread (onnxruntime
``intra_op_num_threads=1``, numpy's BLAS limited by threadpoolctl): the
machine is 2 shared cores, and thread pools fighting other processes made
the timings swing by 10x. Rows, seconds per call
(median over repeats of the mean of many calls, after warm-up; each repeat
times the peer and edgecode back to back and the ratio is the median of the
per-repeat ratios, which keeps it stable on a loaded machine):

* ``onnx_<learner>_batch<n>``: peer ``predict`` vs onnxruntime (``label``
  output only; ``_all`` rows fetch ``symbols`` and ``distance2`` too);
* ``predict_<learner>_batch<n>``: peer vs ``ECOCClassifier.predict``;
* ``onnx_frame_<learner>_batch<n>``: peer vs the int16 device-frame graph;
* ``onnx_vs_numpy_core_<learner>_batch<n>``: the peer's arithmetic alone in
  plain numpy (stacked learner scores, squared Euclidean distance to the code
  book, argmin; no validation, no per-learner calls) vs onnxruntime. Most of
  the peer's time at these sizes is scikit-learn's per-call input validation
  (15 learners, each validating X).

ratio = peer / edgecode (> 1: edgecode faster). Also: how many labels of the
graph equal the device's and the peer's, the exact-MatMul tier chosen, and the
.onnx / container sizes of ECOC (linear, tree) and SSBC models.
"""

import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OutputCodeClassifier
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from threadpoolctl import threadpool_limits

from _common import machine, print_table

from edgecode.ecoc.classifier import ECOCClassifier
from edgecode.hashing import SSBC
from export.ecoc import export_ecoc
from export.ssbc import export_ssbc

PROFILES = {"fast": dict(calls=200, repeats=5), "full": dict(calls=1000, repeats=9)}


def paired(peer, ours, calls_peer, calls_ours, repeats):
    """(peer s/call, ours s/call, ratio): medians over ``repeats`` rounds, each timing the
    peer then ours back to back (mean of many calls each), so that load from other
    processes on a shared machine hits both sides of a ratio alike."""
    for _ in range(3):
        peer(), ours()
    tp, to, ratio = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls_peer):
            peer()
        t1 = time.perf_counter()
        for _ in range(calls_ours):
            ours()
        t2 = time.perf_counter()
        tp.append((t1 - t0) / calls_peer)
        to.append((t2 - t1) / calls_ours)
        ratio.append(tp[-1] / to[-1])
    return statistics.median(tp), statistics.median(to), statistics.median(ratio)


def _session(model):
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true")
    g.add_argument("--full", action="store_true")
    prof = PROFILES["full" if ap.parse_args().full else "fast"]
    with threadpool_limits(1):
        run(prof)


def run(prof):
    calls, reps = prof["calls"], prof["repeats"]
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xtr, ytr = X[:1000], y[:1000]
    X1 = np.ascontiguousarray(X[1500:1501])
    Xb = np.ascontiguousarray(np.vstack([X, X])[:1000])
    print(f"# machine: {machine()}")
    print(f"# onnxruntime {ort.__version__}, one thread each side, digits / 16, batch 1 and "
          "1000 rows")
    rows, sizes = [], []
    for name, base in (("linear_svm", LinearSVC(random_state=0)),
                       ("logistic", LogisticRegression(max_iter=1000)),
                       ("tree", DecisionTreeClassifier(max_depth=10, random_state=0))):
        peer = OutputCodeClassifier(base, code_size=1.5, random_state=0).fit(Xtr, ytr)
        code = (peer.code_book_ > 0).astype(int)
        ours = ECOCClassifier(base, code=code).fit(Xtr, ytr)
        exp = export_ecoc(ours, Xtr)
        frame = export_ecoc(ours, Xtr, onnx_input="frame").onnx_model
        sess, fsess = _session(exp.onnx_model), _session(frame)
        dev = exp.device
        xb32 = Xb.astype(np.float32)
        onnx_labels = sess.run(["label"], {"X": xb32})[0]
        dev_labels = ours.classes_[dev.predict(dev.quantize(xb32.astype(np.float64)))]
        print(f"# {name}: {code.shape[1]} learners, matmul {exp.details.get('linear_matmul', '-')}"
              f", ONNX labels == device labels on {np.mean(onnx_labels == dev_labels):.1%}, "
              f"== peer labels on {np.mean(onnx_labels == peer.predict(Xb)):.1%} of the batch "
              "(Hamming vs the peer's Euclidean decoding)")
        for n, x in ((1, X1), (1000, Xb)):
            c = calls if n == 1 else max(5, calls // 10)
            x32 = x.astype(np.float32)
            q = dev.quantize(x)
            cp = max(5, c // 4)

            def row(task, fn, peer_fn=lambda: peer.predict(x), calls_peer=cp):
                t_p, t_o, r = paired(peer_fn, fn, calls_peer, c, reps)
                rows.append((f"{task}_{name}_batch{n}", n, t_p, t_o, r))
            row("onnx", lambda: sess.run(["label"], {"X": x32}))
            row("onnx_all", lambda: sess.run(None, {"X": x32}))
            row("onnx_frame", lambda: fsess.run(["label"], {"q": q}))
            row("predict", lambda: ours.predict(x))
            if name != "tree":
                # the peer's arithmetic alone in numpy (no input validation, no per-learner
                # calls): stacked scores, Euclidean distance to the code book, argmin
                Wp = np.column_stack([e.coef_.ravel() for e in peer.estimators_])
                bp = np.array([e.intercept_[0] for e in peer.estimators_])
                book = peer.code_book_

                def core(x=x):
                    s = x @ Wp + bp
                    d2 = (s * s).sum(1)[:, None] - 2 * s @ book.T + (book * book).sum(1)
                    return peer.classes_[d2.argmin(axis=1)]
                row("onnx_vs_numpy_core", lambda: sess.run(["label"], {"X": x32}), core, c)
        onnx_bytes = len(exp.onnx_model.SerializeToString())
        sizes.append((f"ecoc_{name}", onnx_bytes, len(exp.container),
                      onnx_bytes / len(exp.container)))
    print_table(["task", "n", "peer_s", "edgecode_s", "ratio"], rows)
    # artifact sizes: SSBC (export_ssbc as it is today; read-only here)
    Xr, yr = load_digits(return_X_y=True)
    for n_bits, m in ((32, 128), (64, 256)):
        h = SSBC(n_bits, m, n_bits + 16, center=True, random_state=0).fit(Xr[:1000])
        ex = export_ssbc(h, X_table=Xr[:1000], y_table=yr[:1000], knn_k=5)
        onnx_bytes = len(ex.onnx_model.SerializeToString())
        sizes.append((f"ssbc_{n_bits}bits_{m}anchors_1000table", onnx_bytes, len(ex.container),
                      onnx_bytes / len(ex.container)))
    print()
    print_table(["artifact", "onnx_bytes", "container_bytes", "onnx_over_container"], sizes)


if __name__ == "__main__":
    main()
