"""ONNX graphs users can feed (issue 13): raw features in float32/float64 (and
bool/uint8 for naive Bayes), class labels out, JSON metadata, compact SSBC
files; every graph checked against the device (firmware_sim.load -> encode ->
infer) with onnxruntime and onnx's ReferenceEvaluator as two runtimes."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from numpy.testing import assert_array_equal
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from sklearn.datasets import load_digits

import firmware_sim
from edgecode.datasets import load
from edgecode.hashing import SSBC
from edgecode.naive_bayes import BinaryNaiveBayes
from export.onnx_utils import narrow_int_dtype
from export.naive_bayes import export_protected_nb, protected_nb_to_onnx
from export.ssbc import export_ssbc, ssbc_arrays, ssbc_to_onnx
from firmware_sim.channel import bsc

#: Names of the digits with a comma in one of them (it must round-trip).
DIGIT_NAMES = np.array(["zero, 0", "one", "two", "three", "four", "five", "six", "seven",
                        "eight", "nine"])


def _runtimes(model):
    """Run ``model`` with onnxruntime and with the ReferenceEvaluator."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = ReferenceEvaluator(model)
    names = [o.name for o in model.graph.output]
    return names, (lambda feed: sess.run(None, feed)), (lambda feed: ref.run(None, feed))


def _meta(model):
    return {p.key: json.loads(p.value) for p in model.metadata_props}


def _wide_tables(model, small=32):
    """Integer initializers of more than ``small`` values not stored in the
    narrowest integer dtype that holds them, and large float64 ones."""
    out = []
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.size <= small:
            continue
        if a.dtype == np.float64 or (np.issubdtype(a.dtype, np.integer)
                                     and a.dtype != narrow_int_dtype(a)):
            out.append((t.name, a.dtype.name))
    return out


def _unused_initializers(model):
    used = {i for n in model.graph.node for i in n.input}
    return [t.name for t in model.graph.initializer if t.name not in used]


# -- SSBC ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X, y


@pytest.fixture(scope="module")
def ssbc(digits):
    X, y = digits
    return SSBC(32, 128, 48, center=True, random_state=0).fit(X[:1000])


def _ssbc_queries(X, rng):
    """Held-out digits plus random and extreme points (clipping, half steps,
    float64 values that are not float32, signed zeros, near float32 max)."""
    q = X[1000:1400]
    extra = np.vstack([
        rng.uniform(-40, 60, (40, 64)),
        rng.normal(8, 30, (40, 64)),
        np.full((1, 64), 1e6), np.full((1, 64), -1e6), np.full((1, 64), 3e38),
        np.full((1, 64), -0.0), np.zeros((1, 64)),
        X[1000:1010] + 0.5, X[1010:1020] + 1e-9, X[1020:1030] * (1 + 2.0**-30),
    ])
    return np.vstack([q, extra])


def _device_out(container, Xin, classes):
    dev = firmware_sim.load(container)
    inf = dev.infer(dev.encode(Xin))
    labels = None if inf.labels is None else np.asarray(classes)[inf.labels]
    return labels, inf.decision["code_bits"], inf.decision.get("nearest_distance")


@pytest.mark.parametrize("input_dtype", ["float32", "float64"])
def test_ssbc_labels_graph_equals_device_on_both_runtimes(ssbc, digits, input_dtype):
    X, y = digits
    names = DIGIT_NAMES[y[:1000]]
    ex = export_ssbc(ssbc, X_table=X[:1000], y_table=names, knn_k=5,
                     onnx_input_dtype=input_dtype, onnx_outputs="labels")
    model = ex.onnx_model
    onnx.checker.check_model(model, full_check=True)
    out_names, run_ort, run_ref = _runtimes(model)
    assert out_names == ["label", "bits", "nearest_distance"]
    assert model.graph.input[0].name == "X"
    Xq = _ssbc_queries(X, np.random.default_rng(1)).astype(input_dtype)
    want_label, want_bits, want_dist = _device_out(ex.container, Xq, ex.classes)
    assert want_label.dtype.kind == "U" and "zero, 0" in set(want_label)
    for run, rows in ((run_ort, slice(None)), (run_ref, slice(0, 120))):
        label, bits, dist = run({"X": Xq[rows]})
        assert bits.dtype == np.uint8 and dist.dtype == np.int64
        assert_array_equal(bits, want_bits[rows])
        assert_array_equal(label.astype(str), want_label[rows])
        assert_array_equal(dist, want_dist[rows])
    meta = _meta(model)
    assert meta["classes"] == sorted(DIGIT_NAMES.tolist())  # the comma survives
    assert meta["bit_order"] == "lsb_first" and meta["n_bits"] == 32
    assert meta["format_version"] == 2 and meta["input_dtype"] == input_dtype
    assert meta["outputs"] == out_names


def _tie_points(X, dev, n, rng):
    """float64 points whose every coordinate lies just above a tie of the device's
    fixed-point grid, on the side float32 loses: the device (which casts to
    float32 first) rounds them half to even, a float64 quantizer rounds them up.
    Returns the points and the device's frames a float64 quantizer would give."""
    s = dev.input_shift
    pick = rng.integers(0, len(X), (n, 2))
    lam = rng.uniform(0, 1, (n, 1))
    mix = lam * X[pick[:, 0]] + (1 - lam) * X[pick[:, 1]]
    Xq = (2 * np.round(mix * 2.0**s / 2) + 0.5) * 2.0**-s * (1 + 2.0**-40)
    return Xq, np.rint(np.clip(Xq * 2.0**s, -32767, 32767)).astype(np.int16)


def test_ssbc_float64_rounding_is_the_devices(ssbc, digits):
    """float64 inputs are quantized as the device quantizes them (cast to float32,
    then scale and round half to even), not in float64: rows where the two
    differ in the code bits are found, and the graph gives the device's bits."""
    X, y = digits
    ex = export_ssbc(ssbc, X_table=X[:1000], y_table=y[:1000], knn_k=3,
                     onnx_input_dtype="float64", onnx_outputs="labels")
    dev = firmware_sim.load(ex.container)
    Xq, frames64 = _tie_points(X, dev, 30000, np.random.default_rng(7))
    want = dev.infer(dev.encode(Xq))
    differs = (want.decision["code_bits"] != dev.infer(frames64).decision["code_bits"]).any(1)
    assert differs.sum() >= 20                          # the check below can see the difference
    Xs = np.vstack([Xq[differs], Xq[:200]])
    rows = np.concatenate([np.flatnonzero(differs), np.arange(200)])
    _, run_ort, run_ref = _runtimes(ex.onnx_model)
    for run in (run_ort, run_ref):
        label, bits, dist = run({"X": Xs})
        assert_array_equal(bits, want.decision["code_bits"][rows])
        assert_array_equal(label, ex.classes[want.labels[rows]])
        assert_array_equal(dist, want.decision["nearest_distance"][rows])
        assert label.dtype == np.int64                  # integer classes stay integers


def test_ssbc_without_table_outputs_bits_only(ssbc, digits):
    X, _ = digits
    ex = export_ssbc(ssbc, onnx_input_dtype="float64", onnx_outputs="labels")
    names, run_ort, run_ref = _runtimes(ex.onnx_model)
    assert names == ["bits"] and "classes" not in _meta(ex.onnx_model)
    Xq = _ssbc_queries(X, np.random.default_rng(2))
    dev = firmware_sim.load(ex.container)
    want = dev.infer(dev.encode(Xq))
    assert want.labels is None
    assert_array_equal(run_ort({"X": Xq})[0], want.decision["code_bits"])
    assert_array_equal(run_ref({"X": Xq[:50]})[0], want.decision["code_bits"][:50])


def test_ssbc_legacy_layout_is_kept(ssbc, digits):
    """``onnx_outputs="legacy"``: ``bits`` then the class index ``label`` (what
    ``bits, label = sess.run(None, {"X": float32})`` callers unpack)."""
    X, y = digits
    ex = export_ssbc(ssbc, X_table=X[:1000], y_table=DIGIT_NAMES[y[:1000]], knn_k=5,
                     onnx_outputs="legacy")
    names, run_ort, _ = _runtimes(ex.onnx_model)
    assert names == ["bits", "label"]
    assert ex.onnx_model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    Xq = X[1000:1300].astype(np.float32)
    bits, label = run_ort({"X": Xq})
    dev = firmware_sim.load(ex.container)
    assert_array_equal(bits, dev.bits(Xq))
    assert_array_equal(label, dev.predict(Xq))
    assert _meta(ex.onnx_model)["classes"] == sorted(DIGIT_NAMES.tolist())


@pytest.mark.parametrize("n_bits, m, table", [(32, 256, True), (64, 128, True),
                                              (32, 256, False), (16, 64, True)])
def test_ssbc_onnx_at_most_1_5x_container(digits, n_bits, m, table):
    """The colleague's case (32 bits, 256 anchors, table of 1437 digits) was 950,892
    bytes of ONNX for 62,659 bytes of container (15x)."""
    X, y = digits
    h = SSBC(n_bits, m, n_bits + 16, center=True, random_state=0).fit(X[:1437])
    kw = dict(X_table=X[:1437], y_table=y[:1437]) if table else {}
    for outputs in ("labels", "legacy"):
        ex = export_ssbc(h, onnx_outputs=outputs, **kw)
        size = len(ex.onnx_model.SerializeToString())
        assert size <= 1.5 * len(ex.container), (size, len(ex.container))
        assert _wide_tables(ex.onnx_model) == []      # no wide copies of big tables
        assert _unused_initializers(ex.onnx_model) == []
        stored = {t.name for t in ex.onnx_model.graph.initializer}
        assert "anchors_T" not in stored and "table_not_T" not in stored
    # still bit-exact after the compaction
    dev = firmware_sim.load(ex.container)
    Xq = X[1437:].astype(np.float32)
    out = ort.InferenceSession(ex.onnx_model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"X": Xq})
    assert_array_equal(out[0], dev.bits(Xq))
    if table:
        assert_array_equal(out[1], dev.predict(Xq))


def test_ssbc_random_models_and_inputs():
    """Random small models (narrow and wide value ranges) through both runtimes."""
    rng = np.random.default_rng(11)
    for trial in range(6):
        d = int(rng.integers(1, 6))
        scale = 10.0 ** rng.uniform(-3, 4)
        Xtr = rng.normal(0, scale, (60, d))
        h = SSBC(int(rng.integers(1, 20)), 20, 24, random_state=trial).fit(Xtr)
        y = rng.integers(-3, 2, 60)
        ex = export_ssbc(h, X_table=Xtr, y_table=y, knn_k=int(rng.integers(1, 8)),
                         onnx_input_dtype="float64", onnx_outputs="labels")
        Xq = np.vstack([rng.normal(0, scale, (30, d)), rng.normal(0, 40 * scale, (10, d)),
                        np.full((1, d), 1e30), np.full((1, d), -1e30), np.zeros((1, d))])
        want_label, want_bits, want_dist = _device_out(ex.container, Xq, ex.classes)
        _, run_ort, run_ref = _runtimes(ex.onnx_model)
        for run in (run_ort, run_ref):
            label, bits, dist = run({"X": Xq})
            assert_array_equal(bits, want_bits)
            assert_array_equal(label, want_label)
            assert_array_equal(dist, want_dist)


def test_ssbc_direct_graph_default_classes_and_errors(ssbc, digits):
    X, y = digits
    arrays, classes = ssbc_arrays(ssbc, X_table=X[:300], y_table=y[:300], knn_k=3)
    model = ssbc_to_onnx(arrays)                        # labels layout, index labels
    assert [o.name for o in model.graph.output] == ["label", "bits", "nearest_distance"]
    assert _meta(model)["classes"] == list(range(10))
    with pytest.raises(ValueError, match="input_dtype must be 'float32' or 'float64'; got "
                       "'int32'"):
        ssbc_to_onnx(arrays, input_dtype="int32")
    with pytest.raises(ValueError, match="outputs must be 'labels' or 'legacy'"):
        ssbc_to_onnx(arrays, outputs="both")
    with pytest.raises(ValueError, match="classes must name the 10 classes"):
        ssbc_to_onnx(arrays, classes=["a", "b"])
    with pytest.raises(ValueError, match="onnx_outputs must be"):
        export_ssbc(ssbc, onnx_outputs="indices")


@pytest.mark.parametrize("y_bad, where", [
    (lambda y: np.where(np.arange(len(y)) == 7, np.nan, y.astype(float)), r"y_table\[7\]"),
    (lambda y: np.array([None if i == 3 else str(v) for i, v in enumerate(y)], dtype=object),
     r"y_table\[3\] is None"),
    (lambda y: np.array([float("nan") if i == 0 else int(v) for i, v in enumerate(y)],
                        dtype=object), r"y_table\[0\]"),
])
def test_ssbc_refuses_missing_labels(ssbc, digits, y_bad, where):
    X, y = digits
    with pytest.raises(ValueError, match="y_table must not hold missing labels: " + where):
        export_ssbc(ssbc, X_table=X[:50], y_table=y_bad(y[:50]))


def test_ssbc_refuses_mismatched_table(ssbc, digits):
    X, y = digits
    with pytest.raises(ValueError, match=r"one row per label of y_table \(49\)"):
        export_ssbc(ssbc, X_table=X[:50], y_table=y[:49])


# -- naive Bayes -----------------------------------------------------------------

@pytest.fixture(scope="module")
def votes():
    d = load("house_votes")
    return d, BinaryNaiveBayes().fit(d.X, d.y)


def _all_inputs(n):
    i = np.arange(2**n)
    return ((i[:, None] >> np.arange(n)) & 1).astype(np.uint8)


@pytest.mark.parametrize("input_dtype", ["float32", "float64", "bool", "uint8"])
def test_nb_features_graph_equals_device(votes, input_dtype):
    d, nb = votes
    r = np.random.default_rng(0).integers(0, 3, 16)
    ex = export_protected_nb(nb, r, X_check=d.X, onnx_input="features",
                             onnx_input_dtype=input_dtype)
    model = ex.onnx_model
    onnx.checker.check_model(model, full_check=True)
    names, run_ort, run_ref = _runtimes(model)
    assert names == ["label", "decision"] and model.graph.input[0].name == "X"
    dev = firmware_sim.load(ex.container)
    X01 = np.vstack([d.X, _all_inputs(16)[::37]])      # real rows and a spread of all inputs
    inf = dev.infer(dev.encode(X01))
    want_label = nb.classes_[inf.labels]
    Xin = X01.astype(input_dtype)
    for run, rows in ((run_ort, slice(None)), (run_ref, slice(0, 300))):
        label, decision = run({"X": Xin[rows]})
        assert label.dtype == np.int64 and decision.dtype == np.int32
        assert_array_equal(label, want_label[rows])
        assert_array_equal(decision, inf.decision["accumulator"][rows])
    assert_array_equal(want_label[:len(d.X)], nb.predict(d.X))
    assert _unused_initializers(model) == []
    meta = _meta(model)
    assert meta["classes"] == nb.classes_.tolist() and meta["input_dtype"] == input_dtype
    assert meta["format_version"] == 2 and meta["threshold"] == 0.5


def test_nb_string_labels_with_comma_and_binarize(votes):
    """String classes (one with a comma) and a model that binarizes real inputs:
    the graph applies the model's threshold, the device gets the binarized bits."""
    d, _ = votes
    rng = np.random.default_rng(3)
    Xr = d.X + rng.normal(0, 0.3, d.X.shape)          # real-valued sensor readings
    y = np.array(["democrat, blue", "republican"])[d.y]
    nb = BinaryNaiveBayes(binarize=0.4).fit(Xr, y)
    ex = export_protected_nb(nb, np.ones(16, int), X_check=(Xr > 0.4).astype(np.uint8),
                             onnx_input="features", onnx_input_dtype="float64")
    dev = firmware_sim.load(ex.container)
    assert dev.meta["binarize"] == 0.4
    Xq = np.vstack([Xr, [[0.4] * 16, [np.nextafter(0.4, 1)] * 16, [-1e300] * 16,
                         [1e300] * 16]])
    inf = dev.infer(dev.encode((Xq > 0.4).astype(np.uint8)))
    _, run_ort, run_ref = _runtimes(ex.onnx_model)
    for run in (run_ort, run_ref):
        label, decision = run({"X": Xq})
        assert_array_equal(label.astype(str), nb.classes_[inf.labels])
        assert_array_equal(decision, inf.decision["accumulator"])
    assert_array_equal(run_ort({"X": Xr})[0], nb.predict(Xr))
    meta = _meta(ex.onnx_model)
    assert meta["classes"] == ["democrat, blue", "republican"] and meta["binarize"] == 0.4


def test_nb_bits_graph_still_available(votes):
    """The received-bits graph (``onnx_input="bits"``): majority decoding of noisy
    frames, now with the model's labels."""
    d, nb = votes
    r = np.random.default_rng(1).integers(0, 4, 16)
    ex = export_protected_nb(nb, r, X_check=d.X, onnx_input="bits")
    names, run_ort, run_ref = _runtimes(ex.onnx_model)
    assert [i.name for i in ex.onnx_model.graph.input] == ["bits"]
    dev = firmware_sim.load(ex.container)
    frames = dev.encode(d.X)
    rng = np.random.default_rng(2)
    for eps in (0.0, 0.2, 0.5):
        rx = bsc(frames, eps, random_state=rng)
        inf = dev.infer(rx)
        for run in (run_ort, run_ref):
            label, decision = run({"bits": rx})
            assert_array_equal(label, nb.classes_[inf.labels])
            assert_array_equal(decision, inf.decision["accumulator"])
    assert _wide_tables(ex.onnx_model) == []
    assert _unused_initializers(ex.onnx_model) == []


def test_nb_random_models():
    rng = np.random.default_rng(5)
    for _ in range(5):
        n = int(rng.integers(1, 9))
        w = rng.integers(-2**20, 2**20, n)
        b = int(rng.integers(-2**20, 2**20))
        r = rng.integers(0, 3, n)
        X = _all_inputs(n)
        acc = b + X.astype(np.int64) @ w
        feat = protected_nb_to_onnx(w, b, classes=[-7, 9], input_dtype="float32")
        bits = protected_nb_to_onnx(w, b, r, input="bits")
        for model, feed in ((feat, {"X": X.astype(np.float32)}),
                            (bits, {"bits": np.repeat(X, 2 * r + 1, axis=1)})):
            _, run_ort, run_ref = _runtimes(model)
            for run in (run_ort, run_ref):
                label, decision = run(feed)
                assert_array_equal(decision, acc)
                want = np.where(acc > 0, 9, -7) if model is feat else (acc > 0).astype(int)
                assert_array_equal(label, want)


@pytest.mark.parametrize("kwargs, match", [
    ({"input": "raw"}, "input must be 'features' or 'bits'; got 'raw'"),
    ({"input": "bits"}, "input='bits' needs repetitions"),
    ({"input_dtype": "int64"}, "input_dtype must be one of"),
    ({"classes": [0, 1, 2]}, "classes must hold the 2 class labels"),
    ({"binarize": float("nan")}, "binarize must be a finite number"),
])
def test_nb_graph_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        protected_nb_to_onnx([1, -2], 0, **kwargs)


def test_nb_export_option_errors(votes):
    d, nb = votes
    with pytest.raises(ValueError, match="onnx_input must be 'bits' or 'features'"):
        export_protected_nb(nb, [0] * 16, onnx_input="X")
    with pytest.raises(ValueError, match="input_dtype must be one of"):
        export_protected_nb(nb, [0] * 16, onnx_input="features", onnx_input_dtype="int16")


def test_export_defaults_take_features_and_give_labels_first(ssbc, digits, votes):
    """What a user gets without options: raw features in, class labels first out."""
    X, y = digits
    ex = export_ssbc(ssbc, X_table=X[:500], y_table=DIGIT_NAMES[y[:500]], knn_k=3)
    assert [o.name for o in ex.onnx_model.graph.output][0] == "label"
    assert [i.name for i in ex.onnx_model.graph.input] == ["X"]
    d, nb = votes
    ex = export_protected_nb(nb, [1] * 16, X_check=d.X)
    assert [i.name for i in ex.onnx_model.graph.input] == ["X"]
    assert [o.name for o in ex.onnx_model.graph.output] == ["label", "decision"]
