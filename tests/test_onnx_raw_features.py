"""The ECOC ONNX graph on raw features: bit-exact with the device, two runtimes, metadata."""

import json

import numpy as np
import onnxruntime as ort
import pytest
from numpy.testing import assert_array_equal
from onnx.reference import ReferenceEvaluator
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

import firmware_sim
from edgecode.ecoc.classifier import ECOCClassifier
from export.ecoc import (
    ecoc_to_onnx,
    export_ecoc,
    fit_input_quantizer,
    linear_matmul_dtype,
    onnx_metadata,
)
from firmware_sim.artifact import write_container
from firmware_sim.ecoc import make_ecoc_arrays, quantize_inputs

from naive_ecoc_clf import hamming_bruteforce


def _ort(model, feed):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def _assert_graph_is_device(model, container, X, classes, *, dtype="float32", reference=True):
    """onnxruntime (and the ONNX reference evaluator) == firmware_sim on raw features X."""
    X = np.asarray(X, dtype=dtype)
    dev = firmware_sim.load(container)
    inf = dev.infer(dev.encode(X.astype(np.float64)))    # the host quantizes in float64
    # an independent Hamming decoder checks the device's own distances
    ref_labels, ref_d2 = hamming_bruteforce(inf.decision["symbols"], dev.code)
    assert_array_equal(inf.labels, ref_labels)
    assert_array_equal(inf.decision["distances"], ref_d2)
    runs = [_ort(model, {"X": X})]
    if reference:
        runs.append(ReferenceEvaluator(model).run(None, {"X": X}))
    for label, sym, d2 in runs:
        assert_array_equal(label, np.asarray(classes)[inf.labels])
        assert_array_equal(sym, inf.decision["symbols"])
        assert_array_equal(d2, inf.decision["distances"])
    return inf


def _probe_arrays(center, shift, thresholds):
    """A tree ECOC whose column j is the stump ``q[f_j] <= T_j`` (symbol 0) else 1.

    Its symbols read the quantized input back: q[f] is the number of its
    thresholds below it.
    """
    feat, thr, left, right, leaf, root = [], [], [], [], [], []
    for f, T in thresholds:
        root.append(len(feat))
        g = len(feat)
        feat += [f, -1, -1]
        thr += [T, 0, 0]
        left += [g + 1, -1, -1]
        right += [g + 2, -1, -1]
        leaf += [0, 0, 1]
    m = len(thresholds)
    code = np.zeros((2, m), np.int64)
    code[1] = 1
    return make_ecoc_arrays(code, np.tile([0, 1], m), np.full(m, 2), center, shift,
                            tree={"feature": feat, "threshold": thr, "left": left,
                                  "right": right, "leaf": leaf, "root": root})


def _q_from_probe(sym, thresholds, d, lo):
    q = np.full((sym.shape[0], d), lo, np.int64)
    for j, (f, _) in enumerate(thresholds):
        q[:, f] += sym[:, j]
    return q


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_quantizer_in_graph_rounds_ties_to_even_and_clips_like_the_host(dtype):
    rng = np.random.default_rng(0)
    X_calib = np.array([[0.0, -3.0], [16.0, 5.0]])
    center, shift = fit_input_quantizer(X_calib)
    step = np.exp2(-shift.astype(np.float64))
    # exact grid midpoints (ties), near-midpoints, grid points, random values, and
    # values far outside the calibration range (clipping) -- all float32-representable
    k = rng.integers(-20, 20, size=(400, 2))
    rows = [center + (k + 0.5) * step, center + k * step, center + (k + 0.5) * step * 0.999,
            center + rng.uniform(-20, 20, (400, 2)) * step,
            np.array([[1e6, -1e6], [-1e6, 1e6], [16.0, 5.0], [0.0, -3.0], [-50.0, 70.0]]),
            center + np.array([[32767.5, -32767.5], [32766.5, -32766.5], [-32768.0, 32768.0]]) *
            step]
    X = np.vstack(rows).astype(dtype)
    q_host = quantize_inputs(X.astype(np.float64), center, shift).astype(np.int64)
    probe_lo, probe_hi = -25, 25
    thresholds = [(f, T) for f in range(2) for T in range(probe_lo, probe_hi)]
    thresholds += [(f, T) for f in range(2) for T in (-32767, 32766)]
    arrays = _probe_arrays(center, shift, thresholds)
    model = ecoc_to_onnx(arrays, input_dtype=dtype, classes=[0, 1])
    inside = (np.abs(q_host) < 25).all(axis=1)
    for run in (_ort, lambda m, feed: ReferenceEvaluator(m).run(None, feed)):
        sym = run(model, {"X": X})[1]
        # the stump symbols spell q back out: equal to the host's quantizer
        n_probe = 2 * (probe_hi - probe_lo)
        q = _q_from_probe(sym[:, :n_probe], thresholds[:n_probe], 2, probe_lo)
        assert_array_equal(q[inside], q_host[inside])
        extreme = sym[:, 2 * (probe_hi - probe_lo):].reshape(-1, 2, 2)   # (n, f, T)
        assert_array_equal(extreme[:, :, 0], q_host > -32767)
        assert_array_equal(extreme[:, :, 1], q_host > 32766)
    assert inside.sum() > 1000 and (np.abs(q_host) == 32767).sum() >= 8
    # ties really were ties, and half of them round down (to even)
    ties = (X.astype(np.float64) - center) / step % 1 == 0.5
    assert ties.sum() >= 800
    _assert_graph_is_device(model, write_container(None, "ecoc", arrays),
                            X, [0, 1], dtype=dtype)


_LEARNERS = {"logistic": LogisticRegression(max_iter=300), "svm": LinearSVC(),
             "tree": DecisionTreeClassifier(max_depth=6, random_state=0)}


@pytest.mark.parametrize("learner", list(_LEARNERS))
@pytest.mark.parametrize("code", ["binary", "ternary", "nary3"])
def test_iris_and_digits_graph_equals_device(learner, code):
    rng = np.random.default_rng(3)
    digits = load_digits(return_X_y=True)
    for X, y in (load_iris(return_X_y=True), (digits[0] / 16.0, digits[1])):   # dyadic
        c = len(np.unique(y))
        M = {"binary": rng.integers(0, 2, (c, 9)), "ternary": rng.integers(-1, 2, (c, 9)),
             "nary3": rng.integers(0, 3, (c, 6))}[code]
        M[:2, 0] = [0, 1]
        M[:, -1] = np.arange(c) % 2          # every row used somewhere, no constant column
        clf = ECOCClassifier(_LEARNERS[learner], code=M).fit(X[::2], y[::2])
        out = export_ecoc(clf, X[::2], X_check=X[1::2])
        if learner == "tree" and X.shape[1] == 64:
            assert out.label_mismatches == 0          # pixels / 16: exact thresholds
        assert out.label_mismatches <= 0.02 * len(X), out.report()
        Xt = np.vstack([X[1::2], X[1::2] * 1.7 + 0.3, -X[:20]])       # incl. out of range
        for dtype in ("float32", "float64"):
            model = out.onnx_model if dtype == "float32" else ecoc_to_onnx(
                out.device.container.arrays, input_dtype=dtype, classes=clf.classes_)
            _assert_graph_is_device(model, out.container, Xt, clf.classes_, dtype=dtype,
                                    reference=X.shape[1] == 4)


def test_random_float_data_with_string_labels_and_a_comma_in_a_name():
    rng = np.random.default_rng(11)
    n, d = 600, 7
    y = rng.integers(0, 4, n)
    scale = rng.uniform(0.01, 300, d)
    X = (rng.normal(size=(n, d)) + y[:, None] * rng.normal(size=d)) * scale
    names = np.array(["setosa, Iris", "b", "c \"quoted\"", "d,e,f"])
    for learner in ("logistic", "tree"):
        clf = ECOCClassifier(_LEARNERS[learner], code="dense_random", n_columns=7,
                             random_state=0).fit(X[:400], names[y[:400]])
        out = export_ecoc(clf, X[:400], X_check=X[400:])
        meta = onnx_metadata(out.onnx_model)
        assert meta["classes"] == list(clf.classes_)
        raw = {p.key: p.value for p in out.onnx_model.metadata_props}
        assert json.loads(raw["classes"]) == ["b", "c \"quoted\"", "d,e,f", "setosa, Iris"]
        assert meta["decoding"] == "hamming" and meta["container_format_version"] == 1
        assert meta["quantizer"]["center"] == out.device.in_center.tolist()
        assert meta["quantizer"]["shift"] == out.device.in_shift.tolist()
        assert meta["input"] == "X" and meta["input_dtype"] == "float32"
        assert meta["kind"] == "ecoc" and meta["outputs"] == ["label", "symbols", "distance2"]
        assert all(json.loads(v) is not None for v in raw.values())      # all JSON text
        Xt = np.vstack([X[400:], X[400:] * 50, rng.uniform(-1e4, 1e4, (50, d))])
        for dtype in ("float32", "float64"):
            model = out.onnx_model if dtype == "float32" else ecoc_to_onnx(
                out.device.container.arrays, input_dtype=dtype, classes=clf.classes_)
            _assert_graph_is_device(model, out.container, Xt, clf.classes_, dtype=dtype)
        assert out.onnx_model.graph.output[0].type.tensor_type.elem_type == 8   # STRING


def test_frame_graph_stays_available():
    X, y = load_iris(return_X_y=True)
    clf = ECOCClassifier(LogisticRegression(max_iter=1000), code=[[0, 1], [1, 0], [1, 1]]
                         ).fit(X, y)
    out = export_ecoc(clf, X, onnx_input="frame")
    assert out.onnx_model.graph.input[0].name == "q"
    q = out.device.encode(X)
    label, sym, d2 = _ort(out.onnx_model, {"q": q})
    inf = out.device.infer(q)
    assert_array_equal(label, inf.labels)
    assert_array_equal(sym, inf.decision["symbols"])
    assert_array_equal(d2, inf.decision["distances"])
    assert onnx_metadata(out.onnx_model)["input"] == "q"
    assert onnx_metadata(out.onnx_model)["label"] == "class index"
    with pytest.raises(ValueError, match="input must be 'features' or 'frame'; got 'x'"):
        ecoc_to_onnx(out.device.container.arrays, input="x")
    with pytest.raises(ValueError, match="input_dtype must be 'float32' or 'float64'"):
        ecoc_to_onnx(out.device.container.arrays, input_dtype="int8")
    with pytest.raises(ValueError, match="onnx_input must be 'features' or 'frame'; got 'q'"):
        export_ecoc(clf, X, onnx_input="q")
    with pytest.raises(ValueError, match="onnx_input_dtype must be 'float32' or 'float64'"):
        export_ecoc(clf, X, onnx_input_dtype="float16")
    out64 = export_ecoc(clf, X, onnx_input_dtype="float64")
    assert out64.onnx_model.graph.input[0].type.tensor_type.elem_type == 11     # DOUBLE
    assert onnx_metadata(out64.onnx_model)["input_dtype"] == "float64"
    _assert_graph_is_device(out64.onnx_model, out64.container, X + 1e-9, clf.classes_,
                            dtype="float64")


def test_linear_matmul_tiers_are_exact():
    """float32 / float64 / split-int64 products all equal the device's int64 scores."""
    rng = np.random.default_rng(2)
    d, m = 40, 6
    center, shift = np.zeros(d), np.zeros(d, np.int8)
    code = rng.integers(0, 2, (4, m))
    code[:2, 0] = [0, 1]
    X = np.vstack([rng.integers(-32767, 32768, (300, d)),
                   np.full((1, d), 32767), np.full((1, d), -32767)]).astype(np.float64)
    seen = set()
    for wmax, bmax in ((2, 5), (2**20, 2**40), (2**31 - 1, 2**61), (2**31 - 1, 2**10)):
        W = rng.integers(-wmax, wmax + 1, (d, m))
        W[0] = wmax                       # the worst case is reached
        B = rng.integers(-bmax, bmax + 1, m)
        # scores near 0: a bias making the sign depend on the last bits
        B[1] = -int((X[0] @ W[:, 1]))
        arrays = make_ecoc_arrays(code, np.tile([0, 1], m), np.full(m, 2), center, shift,
                                  linear={"weights": W, "bias": B, "n_out": np.ones(m, np.int64)})
        seen.add(linear_matmul_dtype(arrays))
        model = ecoc_to_onnx(arrays, input_dtype="float64", classes=[0, 1, 2, 3])
        _assert_graph_is_device(model, write_container(None, "ecoc", arrays), X,
                                [0, 1, 2, 3], dtype="float64")
    assert seen == {"float32", "float64", "split64"}


def test_docs_onnx_examples_run(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "onnx.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    ns = {}
    for block in blocks:
        exec(compile(block, "docs/onnx.md", "exec"), ns)
    assert list(ns["label"]) == ["setosa"] * 3


@pytest.mark.filterwarnings("ignore:code columns")
@pytest.mark.parametrize("learner", ["logistic", "tree"])
def test_constant_and_mixed_columns(learner):
    """A constant column (no learner), a 3-symbol learner and two-class ones in one code."""
    X, y = load_iris(return_X_y=True)
    clf = ECOCClassifier(_LEARNERS[learner], code=[[0, 1, 1, 0], [1, 0, 1, 1],
                                                    [1, 1, 1, 2]]).fit(X, y)
    out = export_ecoc(clf, X)
    assert out.label_mismatches <= 1
    Xt = np.vstack([X, X * 3 - 2])
    for dtype in ("float32", "float64"):
        model = out.onnx_model if dtype == "float32" else ecoc_to_onnx(
            out.device.container.arrays, input_dtype=dtype, classes=clf.classes_)
        inf = _assert_graph_is_device(model, out.container, Xt, clf.classes_, dtype=dtype)
        assert (inf.decision["symbols"][:, 2] == 1).all()
