import numpy as np
import onnxruntime as ort
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import (
    LogisticRegression,
    RidgeClassifier,
    RidgeClassifierCV,
    SGDClassifier,
)
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from edgecode.ecoc.classifier import ECOCClassifier
from edgecode.ecoc.learners import linear_params as _linear_params
from export.ecoc import ecoc_to_onnx, export_ecoc, fit_input_quantizer
from firmware_sim.artifact import ContainerError, read_container, write_container
from firmware_sim.ecoc import load_ecoc, quantize_inputs

from naive_ecoc_clf import hamming_bruteforce


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(1)
    order = rng.permutation(len(y))
    X, y = X[order] / 16.0, y[order]
    return X[:500], y[:500], X[500:900], y[500:900]


def _codes():
    rng = np.random.default_rng(5)
    ternary = rng.integers(-1, 2, (10, 12))
    ternary[:, 0] = np.arange(10) % 2
    return {"binary": rng.integers(0, 2, (10, 15)), "ternary": ternary,
            "nary3": rng.integers(0, 3, (10, 8)), "long": rng.integers(0, 2, (10, 70))}


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


_TREE = DecisionTreeClassifier(max_depth=6, random_state=0)


@pytest.mark.parametrize("kind, learner", [
    ("binary", LogisticRegression(max_iter=500)), ("ternary", LogisticRegression(max_iter=500)),
    ("nary3", LogisticRegression(max_iter=500)), ("binary", LinearSVC()),
    ("nary3", LinearSVC()), ("binary", _TREE), ("ternary", _TREE), ("nary3", _TREE),
    ("long", _TREE)])
def test_onnx_device_and_float_model_agree(digits, tmp_path, kind, learner):
    Xtr, ytr, Xte, yte = digits
    clf = ECOCClassifier(learner, code=_codes()[kind]).fit(Xtr, ytr)
    _assert_export_agrees(clf, digits, tmp_path)


def _assert_export_agrees(clf, digits, tmp_path):
    """onnxruntime == device (labels, symbols, distances), device labels == float labels."""
    Xtr, ytr, Xte, yte = digits
    code = clf.code_
    out = export_ecoc(clf, Xtr, X_check=Xte, container_path=tmp_path / "m.edgc",
                      onnx_path=tmp_path / "m.onnx")
    # digits / 16 are dyadic: the fixed-point inputs are exact
    assert out.label_mismatches == 0, out.report()
    dev = load_ecoc(tmp_path / "m.edgc")
    q = dev.quantize(Xte)
    labels = dev.predict(q)
    assert_array_equal(clf.classes_[labels], clf.predict(Xte))
    sym = dev.learner_outputs(q)
    ref_labels, ref_d2 = hamming_bruteforce(sym, code)
    assert_array_equal(sym, clf.predict_codewords(Xte))
    assert_array_equal(labels, ref_labels)
    # the default graph takes raw features (float32 and float64) and gives class labels
    for dtype in ("float32", "float64"):
        model = out.onnx_model if dtype == "float32" else \
            ecoc_to_onnx(dev.container.arrays, input_dtype=dtype, classes=clf.classes_)
        got_label, got_sym, got_d2 = _session(model).run(None, {"X": Xte.astype(dtype)})
        assert_array_equal(got_label, clf.classes_[labels])
        assert_array_equal(got_sym, sym)
        assert_array_equal(got_d2, ref_d2)
    # the device-frame graph takes the int16 frame and gives class indices
    frame = ecoc_to_onnx(dev.container.arrays, input="frame")
    got_label, got_sym, got_d2 = _session(frame).run(None, {"q": q})
    assert_array_equal(got_label, labels)
    assert_array_equal(got_sym, sym)
    assert_array_equal(got_d2, ref_d2)
    # noisy learner outputs decode identically on host and device
    noisy = dev.corrupt(sym, 0.2, random_state=0)
    assert_array_equal(dev.decode(noisy), np.searchsorted(clf.classes_, clf.decode(noisy)))


# Learners whose fitted shapes differ from LogisticRegression's (1, d) / (1,):
# RidgeClassifier(CV) on two classes has a 1-D coef_ (d,); fit_intercept=False
# gives a scalar intercept_ (RidgeClassifier, LinearSVC). Export used to fail
# with a broadcasting error (the bias was broadcast to the 1-D coef_'s length).
@pytest.mark.parametrize("learner, params", [
    (RidgeClassifier(), {"code": "dense_random", "n_columns": 12, "random_state": 0}),
    (RidgeClassifier(), {"code": _codes()["binary"]}),
    (RidgeClassifier(), {"code": _codes()["ternary"]}),
    (RidgeClassifier(), {"code": _codes()["nary3"]}),
    (RidgeClassifier(), {"code": "nary", "N": 3, "n_columns": 8, "random_state": 0}),
    (RidgeClassifier(fit_intercept=False), {"code": _codes()["binary"]}),
    (RidgeClassifier(), {"code": _codes()["binary"], "feature_selection": ("chi2", 20)}),
    (RidgeClassifierCV(), {"code": _codes()["binary"]}),
    (LinearSVC(fit_intercept=False), {"code": _codes()["binary"]}),
    (SGDClassifier(random_state=0), {"code": _codes()["nary3"]}),
], ids=["ridge-dense_random", "ridge-binary", "ridge-ternary", "ridge-nary3", "ridge-nary",
        "ridge-no-intercept", "ridge-selected", "ridgecv-binary", "linearsvc-no-intercept",
        "sgd-nary3"])
def test_linear_learner_shapes_export_and_agree(digits, tmp_path, learner, params):
    Xtr, ytr, Xte, _ = digits
    clf = ECOCClassifier(learner, **params).fit(Xtr, ytr)
    assert clf.fast_path_ == "linear"
    # the stacked fast path predicts what every learner predicts itself
    own = np.column_stack([e.predict(Xte if idx is None else Xte[:, idx])
                           for e, idx in zip(clf.estimators_, clf.feature_indices_)])
    assert_array_equal(clf.predict_codewords(Xte), own)
    _assert_export_agrees(clf, digits, tmp_path)


def test_linear_params_normalises_shapes():
    X = np.array([[0.0, 1], [1, 0], [1, 1], [0, 0], [2, 1], [0, 2]])
    y2, y3 = np.array([0, 1, 1, 0, 1, 0]), np.array([0, 1, 2, 0, 1, 2])
    coef, b = _linear_params(RidgeClassifier(fit_intercept=False).fit(X, y2))
    assert coef.shape == (1, 2) and b.shape == (1,) and b[0] == 0.0
    coef, b = _linear_params(RidgeClassifier().fit(X, y3))
    assert coef.shape == (3, 2) and b.shape == (3,)
    sparse = SGDClassifier(random_state=0).fit(X, y3).sparsify()
    coef, b = _linear_params(sparse)
    assert_array_equal(coef, sparse.coef_.toarray())
    assert b.shape == (3,)


class _BadInterceptRidge(RidgeClassifier):
    """A linear learner whose intercept_ has a shape no scores can use."""

    def fit(self, X, y, sample_weight=None):
        super().fit(X, y, sample_weight)
        self.intercept_ = np.zeros((2, 3))
        return self


class _NaNRidge(RidgeClassifier):
    """A linear learner whose weights diverged."""

    def fit(self, X, y, sample_weight=None):
        super().fit(X, y, sample_weight)
        self.coef_ = np.full_like(self.coef_, np.nan)
        return self


def test_export_names_unsupported_learners(digits):
    Xtr, ytr, _, _ = digits
    clf = ECOCClassifier(KNeighborsClassifier(n_neighbors=1),
                         code=_codes()["binary"][:, :3]).fit(Xtr[:100], ytr[:100])
    with pytest.raises(ValueError, match=r"linear learners.*KNeighborsClassifier"):
        export_ecoc(clf, Xtr)
    bad = ECOCClassifier(_BadInterceptRidge(), code=_codes()["binary"][:, :3]).fit(Xtr, ytr)
    assert bad.fast_path_ == "generic"   # fit works; only the linear arrays are refused
    with pytest.raises(ValueError, match=r"_BadInterceptRidge \(code column 0\) has "
                                         r"intercept_ of shape \(2, 3\)"):
        export_ecoc(bad, Xtr)
    nan = ECOCClassifier(_NaNRidge(), code=_codes()["binary"][:, :3]).fit(Xtr, ytr)
    with pytest.raises(ValueError, match=r"code columns \[0, 1, 2\] have non-finite"):
        export_ecoc(nan, Xtr)


def test_resources_and_channel_statistics(digits):
    Xtr, ytr, Xte, yte = digits
    clf = ECOCClassifier(DecisionTreeClassifier(max_depth=5, random_state=0),
                         code=_codes()["nary3"]).fit(Xtr, ytr)
    dev = export_ecoc(clf, Xtr).device
    r = dev.resources()
    assert r["flash_bytes"] == dev.container.nbytes and r["ram_bytes"] > 0
    assert r["ops_per_inference"]["total"] > 0 and r["learner_kind"] == "tree"
    sym = dev.learner_outputs(dev.quantize(Xte))
    noisy = dev.corrupt(sym, 0.3, random_state=1)
    changed = noisy != sym
    assert abs(changed.mean() - 0.3) < 0.03
    assert noisy.min() >= 0 and noisy.max() <= 2
    y_idx = np.searchsorted(clf.classes_, yte)
    sim = [dev.simulate(Xte, e, 3, random_state=0, y=y_idx) for e in (0.0, 0.1, 0.3)]
    assert sim[0].accuracy == np.mean(dev.predict(dev.quantize(Xte)) == y_idx)
    assert sim[0].mean_same_rate == 1.0
    assert sim[2].accuracy < sim[0].accuracy
    binary = ECOCClassifier(LogisticRegression(max_iter=500),
                            code=_codes()["binary"]).fit(Xtr, ytr)
    bdev = export_ecoc(binary, Xtr).device
    bsym = bdev.learner_outputs(bdev.quantize(Xte))
    flipped = bdev.corrupt(bsym, 0.25, random_state=2)
    assert abs((flipped != bsym).mean() - 0.25) < 0.03
    assert set(np.unique(flipped)) <= {0, 1}


def test_quantizer_is_exact_on_dyadic_grid():
    X = np.array([[0.0, -3.5, 1000.0], [16.0, 2.25, 1001.0], [7.0, 0.0, 1000.5]])
    c, e = fit_input_quantizer(X)
    q = quantize_inputs(X, c, e)
    assert_array_equal(c + q * np.exp2(-e.astype(float)), X)
    assert np.abs(q).max() <= 32767


def test_iris_not_on_grid_still_agrees_with_onnx():
    X, y = load_iris(return_X_y=True)
    clf = ECOCClassifier(LogisticRegression(max_iter=1000),
                         code=[[0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 0]]).fit(X, y)
    out = export_ecoc(clf, X)
    q = out.device.quantize(X)
    assert_array_equal(_session(out.onnx_model).run(["label"], {"X": X.astype(np.float32)})[0],
                       clf.classes_[out.device.predict(out.device.quantize(
                           X.astype(np.float32)))])
    assert_array_equal(_session(out.onnx_model).run(["label"], {"X": X.astype(np.float32)})[0],
                       clf.classes_[out.device.predict(q)])
    assert out.label_mismatches <= 1


def test_export_refuses_other_learners_and_bad_containers(digits):
    Xtr, ytr, _, _ = digits
    clf = ECOCClassifier(GaussianNB(), code=_codes()["binary"]).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="linear learners"):
        export_ecoc(clf, Xtr)
    good = ECOCClassifier(LogisticRegression(max_iter=300), code=_codes()["binary"]).fit(Xtr, ytr)
    c = read_container(export_ecoc(good, Xtr).container)
    arrays = dict(c.arrays)
    del arrays["lin_bias"]
    with pytest.raises(ContainerError, match="'lin_bias' is missing"):
        load_ecoc(write_container(None, "ecoc", arrays))
    arrays = dict(c.arrays)
    arrays["code"] = arrays["code"].astype(np.int32)
    with pytest.raises(ContainerError, match="'code' must have dtype int16"):
        load_ecoc(write_container(None, "ecoc", arrays))
    with pytest.raises(ContainerError, match="kind 'ecoc'"):
        load_ecoc(write_container(None, "ssbc", {"v": np.zeros(2, np.float32)}))
    dev = load_ecoc(c)
    with pytest.raises(TypeError, match="int16"):
        dev.predict(np.zeros((1, 64)))
    with pytest.raises(ValueError, match=r"shape \(n_samples, 64\)"):
        dev.predict(np.zeros((1, 3), np.int16))
    with pytest.raises(ValueError, match="eps must be in"):
        dev.corrupt(np.zeros((1, 15), np.int16), 1.5)


def test_cli_ecoc_subcommand_and_demo_stage(tmp_path, capsys):
    import argparse
    import io

    from export.cli import ecoc as cli_ecoc
    parser = argparse.ArgumentParser()
    cli_ecoc.register(parser.add_subparsers(dest="command"))
    X, y = load_iris(return_X_y=True)
    path = tmp_path / "iris.csv"
    lines = ["a,b,c,d,class"] + [",".join([*map(str, x), f"k{t}"]) for x, t in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    args = parser.parse_args(["ecoc", str(path), "--code", "one_vs_all", "--N", "2",
                              "--learner", "logistic", "--eps", "0,0.1", "--trials", "2",
                              "--out", str(tmp_path / "i.edgc"), "--onnx", str(tmp_path / "i.onnx")])
    args.func(args)
    text = capsys.readouterr().out
    assert "test accuracy" in text and "device (fixed point)" in text and "eps;accuracy" in text
    assert (tmp_path / "i.edgc").exists() and (tmp_path / "i.onnx").exists()
    with pytest.raises(ValueError, match="unknown dataset"):
        cli_ecoc.run_ecoc("no_such_set", quiet=True)
    buf = io.StringIO()
    res = cli_ecoc.run_demo_stage(tmp_path, trials=400, stream=buf)
    assert all(r["onnx_agrees"] for r in res.values())
    assert "onnxruntime labels (from the raw features) == device labels" in buf.getvalue()
