"""The forest kind (issue 25 item 6, issue 26 item 2): export, device, ONNX, against
slow references on real data.

* the device (numba) equals ``tests/naive_forest.py``'s node-by-node walk and
  vote on every frame (the rows' own, random and extreme int16 values);
* the device's labels equal ``model.predict`` except the rows that
  ``export_forest`` counts, and its ``near_threshold`` count equals a brute
  force count (a float walk of every scikit-learn tree against a walk of the
  container), each such row with a feature within one quantizer step of a
  threshold on its path;
* the ONNX graph (raw float features in) returns the true labels (strings,
  integers that are not 0..k-1), the leaves and the votes of the device;
* pipelines fold; what does not fold, bad models and bad inputs are refused
  with a message naming the problem; random forests on random data
  (hypothesis) keep every property.
"""

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits, load_iris
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.exceptions import NotFittedError
from sklearn.decomposition import PCA
from sklearn.feature_selection import SelectKBest, VarianceThreshold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, MinMaxScaler, \
    RobustScaler, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import firmware_sim
import naive_forest as naive
from edgecode.datasets import load_house_votes
from export.data import load_table
from export.forest import export_forest, quantize_forest
from firmware_sim.kinds.forest import ForestDevice

DATA = Path(__file__).parent / "data"


def _data(name):
    if name == "glass":                      # labels 1, 2, 3, 5, 6, 7
        t = load_table(DATA / "glass.csv")
        return t.X, t.y
    if name == "ecoli":                      # 8 string labels
        t = load_table(DATA / "ecoli.csv")
        return t.X, t.y
    if name == "house_votes":                # 0/1 features, two classes
        d = load_house_votes()
        return d.X.astype(np.float64), np.array(["democrat", "republican"])[d.y]
    X, y = load_digits(return_X_y=True)
    return X, y


ESTIMATORS = {
    "rf": lambda: RandomForestClassifier(12, max_depth=5, random_state=0),
    "extra": lambda: ExtraTreesClassifier(8, max_depth=7, random_state=1),
    "tree": lambda: DecisionTreeClassifier(max_depth=8, random_state=2),
}
CASES = [(d, e, leaf) for d in ("glass", "ecoli", "house_votes", "digits")
         for e in ESTIMATORS for leaf in ("proba", "class")]

_FITS = {}


def _fit(data, est):
    if (data, est) not in _FITS:
        X, y = _data(data)
        rng = np.random.default_rng(0)
        order = rng.permutation(len(y))
        n = int(0.7 * len(y))
        model = ESTIMATORS[est]().fit(X[order[:n]], y[order[:n]])
        _FITS[data, est] = (model, X[order[:n]], X[order[n:]], y[order[n:]])
    return _FITS[data, est]


def _frames(dev, X, rng):
    clean = dev.encode(X)
    rand = rng.integers(-32768, 32768, (60, dev.n_features)).astype(np.int16)
    w = dev.n_features
    extreme = np.array([np.full(w, -32768), np.full(w, 32767), np.zeros(w),
                        np.where(np.arange(w) % 2, -32768, 32767)], np.int16)
    return np.vstack([clean, rand, extreme])


# ---------------------------------------------------------------- device vs references
@pytest.mark.parametrize("data,est,leaf", CASES)
def test_device_equals_the_naive_walk_and_vote(data, est, leaf):
    model, Xtr, Xte, _ = _fit(data, est)
    out = export_forest(model, Xte, leaf=leaf)
    dev = firmware_sim.load(out.container)
    assert isinstance(dev, ForestDevice) and dev.leaf == leaf
    frames = _frames(dev, np.vstack([Xtr[:40], Xte]), np.random.default_rng(3))
    inf = dev.infer(frames)
    labels, leaves, votes = naive.device_infer(dev.container, frames)
    assert np.array_equal(inf.labels, labels)
    assert np.array_equal(inf.decision["leaves"], leaves)
    assert np.array_equal(inf.decision["votes"], votes)
    assert np.array_equal(dev.labels(frames), labels)
    assert np.array_equal(dev.finish(dev.stage(frames)), labels)
    assert naive.layout_ok(dev.container)
    # the host's quantizer, value by value
    assert np.array_equal(dev.encode(Xte), naive.quantize(Xte, dev.in_center, dev.in_shift))


@pytest.mark.parametrize("data,est,leaf", CASES)
def test_labels_equal_predict_except_the_counted_rows(data, est, leaf):
    model, _, Xte, yte = _fit(data, est)
    out = export_forest(model, Xte, leaf=leaf)
    arrays, info = quantize_forest(model, leaf=leaf)
    for k, v in arrays.items():
        assert np.array_equal(out.device.container.arrays[k], v), k
    dev = out.device
    trees = model.estimators_ if hasattr(model, "estimators_") else [model]
    rows, witnesses = naive.near_threshold(trees, lambda k, nd: info["leaf_of_node"][k][nd],
                                           Xte, dev.encode(Xte), dev.container.arrays,
                                           dev.in_shift)
    assert out.near_threshold == len(rows)
    assert all(w is not None for w in witnesses), witnesses
    assert out.checked_inputs == len(Xte)
    assert out.label_mismatches <= out.near_threshold + out.vote_differences
    if est == "tree" or leaf == "proba":
        # a single tree's classes, or 16-bit probabilities: the vote never differs here
        assert out.vote_differences == 0
    # the soft vote by hand equals predict (the reference the counts are against)
    X32 = Xte.astype(np.float32)
    classes = list(model.classes_)
    want = np.array([classes.index(v) for v in model.predict(Xte)])
    assert np.array_equal(naive.soft_vote_label(trees, X32), want)
    got = dev.infer(dev.encode(Xte)).labels
    assert int(np.sum(got != want)) == out.label_mismatches
    # and the model is worth shipping
    acc = np.mean(out.classes[got] == yte)
    assert acc > 0.5, acc


def test_rows_next_to_thresholds_are_counted_and_only_they_differ():
    """Rows built at a threshold plus a fraction of a quantizer step: the float
    model and the device may split differently there, and only there."""
    model, Xtr, Xte, _ = _fit("glass", "rf")
    arrays, info = quantize_forest(model)
    center, shift = arrays["in_center"], arrays["in_shift"]
    rng = np.random.default_rng(5)
    rows = []
    for tr in model.estimators_[:6]:
        t = tr.tree_
        for nd in np.flatnonzero(t.children_left >= 0)[:8]:
            f, th = int(t.feature[nd]), float(t.threshold[nd])
            x = Xte[rng.integers(len(Xte))].copy()
            x[f] = th + rng.choice([-1, 1]) * rng.uniform(0, 1) * 2.0 ** -int(shift[f])
            rows.append(x)
    X = np.vstack(rows)
    out = export_forest(model, X)
    trees = model.estimators_
    near, witnesses = naive.near_threshold(trees, lambda k, nd: info["leaf_of_node"][k][nd], X,
                                           out.device.encode(X), arrays, shift)
    assert out.near_threshold == len(near) > 0
    assert all(w is not None for w in witnesses)
    classes = list(model.classes_)
    want = np.array([classes.index(v) for v in model.predict(X)])
    got = out.device.infer(out.device.encode(X)).labels
    off = set(np.flatnonzero(got != want).tolist())
    assert off <= set(near)                                # every mismatch is counted ...
    assert len(off) <= out.near_threshold + out.vote_differences
    # ... and rows away from every threshold by more than a step agree
    assert out.vote_differences == 0
    assert center.shape == (Xtr.shape[1],)


# ---------------------------------------------------------------- ONNX
@pytest.mark.parametrize("data", ["glass", "ecoli", "digits"])
@pytest.mark.parametrize("leaf", ["proba", "class"])
def test_onnx_returns_the_devices_true_labels_leaves_and_votes(data, leaf, tmp_path):
    model, _, Xte, yte = _fit(data, "rf")
    path = tmp_path / "f.onnx"
    out = export_forest(model, Xte, leaf=leaf, onnx_path=path, container_path=tmp_path / "f.edgc")
    dev = firmware_sim.load(tmp_path / "f.edgc")
    for dtype in ("float32", "float64"):
        onx = out.onnx_model if dtype == "float32" else \
            export_forest(model, leaf=leaf, onnx_input_dtype="float64").onnx_model
        sess = ort.InferenceSession(onx.SerializeToString() if dtype == "float64"
                                    else str(path), providers=["CPUExecutionProvider"])
        Xin = Xte.astype(dtype)
        label, leaves, votes = sess.run(None, {"X": Xin})
        inf = dev.infer(dev.encode(Xin.astype(np.float64)))
        assert np.array_equal(label, out.classes[inf.labels])
        assert np.array_equal(leaves, inf.decision["leaves"])
        assert np.array_equal(votes, inf.decision["votes"])
        assert (label.dtype.kind in "iu") == (yte.dtype.kind in "iu"), (label.dtype, yte.dtype)
    # the device-frame graph: int16 frames in, class indices out
    onx = export_forest(model, leaf=leaf, onnx_input="frame").onnx_model
    q = np.vstack([dev.encode(Xte), _frames(dev, Xte[:1], np.random.default_rng(2))])
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    label, leaves, votes = sess.run(None, {"q": q})
    inf = dev.infer(q)
    assert np.array_equal(label, inf.labels) and np.array_equal(votes, inf.decision["votes"])
    import json
    meta = {p.key: json.loads(p.value) for p in out.onnx_model.metadata_props}
    assert meta["kind"] == "forest" and meta["leaf"] == leaf
    assert meta["classes"] == [v.item() if hasattr(v, "item") else v for v in out.classes]
    assert {o.domain: o.version for o in out.onnx_model.opset_import} == {"": 17,
                                                                          "ai.onnx.ml": 3}


# ---------------------------------------------------------------- pipelines
@pytest.mark.filterwarnings("ignore:Features .* are constant", "ignore:invalid value")
@pytest.mark.parametrize("steps", [
    [StandardScaler(), SelectKBest(k=20)],
    [MinMaxScaler(), VarianceThreshold()],
    [MaxAbsScaler(), "passthrough"],
    [RobustScaler()],
])
def test_pipelines_fold_into_the_thresholds(steps):
    X, y = load_digits(return_X_y=True)
    pipe = make_pipeline(*steps, RandomForestClassifier(8, max_depth=6, random_state=0))
    pipe.fit(X[:1000], y[:1000])
    out = export_forest(pipe, X[1000:])
    # digits are integers: on the quantizer's grid, so the device splits as the pipeline
    assert out.label_mismatches == 0 and out.near_threshold == 0
    assert out.device.n_features == 64


def test_steps_that_do_not_fold_are_refused_by_name():
    X, y = load_iris(return_X_y=True)
    for step, cls in ((PCA(2), "PCA"), (FunctionTransformer(np.log1p), "FunctionTransformer"),
                      (MinMaxScaler(clip=True), "MinMaxScaler")):
        pipe = make_pipeline(step, RandomForestClassifier(3, random_state=0)).fit(X, y)
        with pytest.raises(ValueError, match=rf"cannot fold pipeline step .*\({cls}\)"):
            export_forest(pipe, X)


# ---------------------------------------------------------------- bad input
def test_bad_models_and_inputs_are_refused_with_clear_errors():
    X, y = load_iris(return_X_y=True)
    rf = RandomForestClassifier(3, max_depth=3, random_state=0).fit(X, y)
    with pytest.raises(NotFittedError):
        export_forest(RandomForestClassifier())
    with pytest.raises(TypeError, match="must be a fitted RandomForestClassifier, "
                                        "ExtraTreesClassifier or DecisionTreeClassifier"):
        export_forest(RandomForestRegressor(2).fit(X, y))
    with pytest.raises(TypeError, match="last step 'standardscaler'"):
        export_forest(make_pipeline(StandardScaler()).fit(X))
    with pytest.raises(ValueError, match="fitted on 2 outputs"):
        export_forest(RandomForestClassifier(2).fit(X, np.c_[y, y]))
    bad = X[:5].copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="X_check must be finite.*row 2"):
        export_forest(rf, bad)
    with pytest.raises(ValueError, match=r"X_check must have shape \(n_samples, 4\)"):
        export_forest(rf, X[:, :3])
    with pytest.raises(ValueError, match="leaf must be one of"):
        export_forest(rf, leaf="mean")
    with pytest.raises(ValueError, match="leaf_bits must be one of"):
        export_forest(rf, leaf_bits=12)
    with pytest.raises(ValueError, match="onnx_input must be"):
        export_forest(rf, onnx_input="bits")
    with pytest.raises(ValueError, match="onnx_input_dtype must be"):
        export_forest(rf, onnx_input_dtype="int8")
    with pytest.raises(ValueError, match="must be finite"):
        firmware_sim.load(export_forest(rf).container).encode(bad)


def test_a_tree_deeper_than_the_format_allows_is_refused():
    x = np.arange(300, dtype=np.float64)[:, None]
    deep = DecisionTreeClassifier(random_state=0).fit(x, np.arange(300) % 2)
    assert deep.get_depth() > 64
    with pytest.raises(ValueError, match=r"tree 0 has \d+ decision levels; the forest format "
                                         "stores at most 64"):
        export_forest(deep)
    ok = DecisionTreeClassifier(max_depth=64, random_state=0).fit(x, np.arange(300) % 2)
    out = export_forest(ok, x)
    assert out.device.depth.max() == 64 and out.label_mismatches == 0


def test_one_class_and_stumps_make_single_leaf_trees():
    X, _ = load_iris(return_X_y=True)
    rf = RandomForestClassifier(4, random_state=0).fit(X, np.full(len(X), "only"))
    out = export_forest(rf, X)
    assert out.device.n_nodes == 0 and out.device.n_classes == 1
    assert out.label_mismatches == 0
    sess = ort.InferenceSession(out.onnx_model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    assert set(sess.run(["label"], {"X": X[:5].astype(np.float32)})[0]) == {"only"}


def test_narrow_dtypes_follow_the_model():
    X, y = load_digits(return_X_y=True)
    small = export_forest(RandomForestClassifier(15, max_depth=4, random_state=0).fit(X, y),
                          leaf="class").device.container.arrays
    assert small["node_feature"].dtype == np.uint8 and small["node_left"].dtype == np.uint8
    assert small["node_threshold"].dtype == np.int16 and "leaf_value" not in small
    wide_X = np.hstack([X] * 5)                     # 320 features: uint16 feature ids
    big = export_forest(RandomForestClassifier(3, random_state=0).fit(wide_X, y),
                        leaf_bits=8).device.container.arrays
    assert big["node_feature"].dtype == np.uint16 and big["leaf_value"].dtype == np.uint8
    assert big["leaf_value"].shape[0] == 10       # pure leaves: one row per class, shared
    assert big["node_left"].dtype == np.uint8
    impure = export_forest(RandomForestClassifier(30, max_depth=6, min_samples_leaf=3,
                                                  random_state=0).fit(X, y)).device
    a = impure.container.arrays
    assert impure.n_leaves > 255 and a["node_left"].dtype == np.uint16
    assert a["leaf_value"].dtype == np.uint16 and a["node_feature"].dtype == np.uint8
    assert impure.resources()["bytes_per_node"] == 7.0
    res = export_forest(RandomForestClassifier(15, max_depth=4, random_state=0).fit(X, y),
                        leaf="class").resources
    assert res["bytes_per_node"] == 5.0 and res["ops_per_inference"]["vote_additions"] == 15


# ---------------------------------------------------------------- random cases
_LABELS = {"int": np.array([3, 7, 11, 40]), "str": np.array(["b", "a,x", "ç", "z"]),
           "float": np.array([1.0, 3.0, 7.0, -2.0])}


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 10**6), n=st.integers(8, 60), d=st.integers(1, 5),
       kind=st.sampled_from(["rf", "extra", "tree"]), leaf=st.sampled_from(["proba", "class"]),
       labels=st.sampled_from(sorted(_LABELS)), n_classes=st.integers(1, 4),
       depth=st.integers(1, 7), integral=st.booleans(), bits=st.sampled_from([8, 16]))
def test_random_forests_keep_every_property(seed, n, d, kind, leaf, labels, n_classes, depth,
                                            integral, bits):
    rng = np.random.default_rng(seed)
    X = rng.normal(0, 10.0 ** rng.integers(-3, 4), (n, d))
    if integral:
        X = np.rint(X)
    y = _LABELS[labels][rng.integers(0, n_classes, n)]
    if kind == "rf":
        model = RandomForestClassifier(int(rng.integers(1, 6)), max_depth=depth,
                                       random_state=seed)
    elif kind == "extra":
        model = ExtraTreesClassifier(int(rng.integers(1, 6)), max_depth=depth,
                                     random_state=seed)
    else:
        model = DecisionTreeClassifier(max_depth=depth, random_state=seed)
    model.fit(X, y)
    Xc = np.vstack([X, X + rng.normal(0, 1e-3, X.shape)])
    out = export_forest(model, Xc, leaf=leaf, leaf_bits=bits)
    dev = out.device
    assert naive.layout_ok(dev.container)
    frames = _frames(dev, Xc, rng)
    inf = dev.infer(frames)
    ref = naive.device_infer(dev.container, frames)
    assert np.array_equal(inf.labels, ref[0]) and np.array_equal(inf.decision["votes"], ref[2])
    assert out.label_mismatches <= out.near_threshold + out.vote_differences
    if kind == "tree" and bits == 16:
        assert out.vote_differences == 0
    sess = ort.InferenceSession(out.onnx_model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    label, leaves, votes = sess.run(None, {"X": Xc.astype(np.float32)})
    inf = dev.infer(dev.encode(Xc.astype(np.float32).astype(np.float64)))
    assert np.array_equal(label, out.classes[inf.labels])
    assert np.array_equal(votes, inf.decision["votes"])
