"""export_ecoc on scikit-learn Pipelines: preprocessing folded into the device arrays."""

import numpy as np
import onnxruntime as ort
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer, load_digits, load_iris
from sklearn.decomposition import PCA
from sklearn.feature_selection import SelectFromModel, SelectKBest, VarianceThreshold, f_classif
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import firmware_sim
from edgecode.ecoc.classifier import ECOCClassifier
from export.ecoc import export_ecoc, quantize_ecoc
from export.pipeline import _fold_tree, affine_of_steps, fold_pipeline


def _data(name):
    X, y = {"iris": load_iris, "digits": load_digits,
            "breast_cancer": load_breast_cancer}[name](return_X_y=True)
    return X, y


def _code(c, rng):
    M = rng.integers(0, 2, (c, 8))
    M[:, 0] = np.arange(c) % 2
    M[:, 1] = (np.arange(c) // 2) % 2
    M[:, 2] = np.arange(c) == 0
    return M


def _steps(name):
    """Preprocessing steps (before the ECOCClassifier) for each foldable kind."""
    return {
        "standard": [("sc", StandardScaler())],
        "standard_no_mean": [("sc", StandardScaler(with_mean=False))],
        "minmax": [("sc", MinMaxScaler(feature_range=(-2, 3)))],
        "maxabs": [("sc", MaxAbsScaler())],
        "robust": [("sc", RobustScaler(quantile_range=(10, 90)))],
        "robust_no_center": [("sc", RobustScaler(with_centering=False))],
        "kbest": [("sc", StandardScaler()), ("sel", SelectKBest(f_classif, k=3))],
        "variance": [("sel", VarianceThreshold(0.05)), ("sc", MinMaxScaler())],
        "from_model": [("sc", StandardScaler()),
                       ("sel", SelectFromModel(LogisticRegression(max_iter=300),
                                               max_features=3, threshold=-np.inf))],
        "column_transformer": [("ct", ColumnTransformer(
            [("sc", StandardScaler(), [0, 1]), ("keep", "passthrough", [3]),
             ("gone", "drop", [2])], remainder=MaxAbsScaler()))],
        "passthrough_none_nested": [("a", "passthrough"), ("b", None),
                                    ("inner", make_pipeline(RobustScaler(), MinMaxScaler()))],
    }[name]


_KINDS = ["standard", "standard_no_mean", "minmax", "maxabs", "robust", "robust_no_center",
          "kbest", "variance", "from_model", "column_transformer", "passthrough_none_nested"]


def _learner(kind):
    return LogisticRegression(max_iter=300) if kind == "linear" else \
        DecisionTreeClassifier(max_depth=5, random_state=0)


def _walk(la, X):
    """Naive float walk of learner_arrays trees: symbols (n, m), left iff x <= threshold."""
    out = np.zeros((X.shape[0], la["root"].shape[0]), np.int64)
    for i, x in enumerate(X):
        for j, g in enumerate(la["root"]):
            while la["feature"][g] >= 0:
                g = la["left"][g] if x[la["feature"][g]] <= la["threshold"][g] else la["right"][g]
            out[i, j] = la["leaf"][g]
    return out


def _check_graph_equals_device(out, X, classes):
    dev = firmware_sim.load(out.container)
    inf = dev.infer(dev.encode(X))
    sess = ort.InferenceSession(out.onnx_model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    label, sym, d2 = sess.run(None, {"X": X.astype(np.float32)})
    inf32 = dev.infer(dev.encode(X.astype(np.float32).astype(np.float64)))
    assert_array_equal(label, classes[inf32.labels])
    assert_array_equal(sym, inf32.decision["symbols"])
    assert_array_equal(d2, inf32.decision["distances"])
    return inf


@pytest.mark.parametrize("kind", _KINDS)
def test_each_foldable_step_is_the_affine_map_it_claims(kind):
    X, y = _data("iris")
    pipe = Pipeline(_steps(kind) + [("ecoc", ECOCClassifier(
        _learner("linear"), code=_code(3, np.random.default_rng(0))))]).fit(X, y)
    src, a, b = affine_of_steps(pipe.steps[:-1], 4)
    # independent reference: scikit-learn's own transform
    assert_allclose(X[:, src] * a + b, pipe[:-1].transform(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dataset", ["iris", "digits", "breast_cancer"])
@pytest.mark.parametrize("learner", ["linear", "tree"])
@pytest.mark.parametrize("kind", ["standard", "minmax", "maxabs", "robust", "kbest",
                                  "variance", "from_model", "column_transformer",
                                  "passthrough_none_nested"])
def test_pipeline_device_and_onnx_on_raw_features(dataset, learner, kind):
    X, y = _data(dataset)
    rng = np.random.default_rng(1)
    order = rng.permutation(len(y))[:600]
    X, y = X[order], y[order]
    n = 2 * len(y) // 3
    Xtr, ytr, Xte = X[:n], y[:n], X[n:]
    pipe = Pipeline(_steps(kind) + [("ecoc", ECOCClassifier(
        _learner(learner), code=_code(len(np.unique(y)), rng)))]).fit(Xtr, ytr)
    ecoc, la, d = fold_pipeline(pipe)
    assert d == X.shape[1] and ecoc is pipe[-1]
    inner = ecoc.learner_arrays()
    Xt = pipe[:-1].transform(Xte)
    if learner == "linear":
        # folded scores on raw features == the learners' scores on transformed features
        assert_allclose(Xte @ la["weights"] + la["bias"], Xt @ inner["weights"] + inner["bias"],
                        rtol=1e-9, atol=1e-9)
    else:
        # (a float64 walk: the learners compare float32(x'), so a few splits may differ)
        assert np.mean(_walk(la, Xte) == ecoc.predict_codewords(Xt)) >= 0.99
    out = export_ecoc(pipe, Xtr, X_check=Xte)
    if learner == "tree" and dataset == "digits":
        assert out.label_mismatches == 0, out.report()      # integer pixels: exact
    else:
        assert out.label_mismatches <= 0.01 * out.checked_inputs, out.report()
    inf = _check_graph_equals_device(out, Xte, ecoc.classes_)
    assert np.mean(ecoc.classes_[inf.labels] == pipe.predict(Xte)) >= 0.99


def test_pipeline_refuses_what_does_not_fold():
    X, y = _data("iris")
    code = _code(3, np.random.default_rng(0))
    pca = Pipeline([("sc", StandardScaler()), ("pca", PCA(2)),
                    ("ecoc", ECOCClassifier(_learner("linear"), code=code))]).fit(X, y)
    with pytest.raises(ValueError, match=r"step 'pca' \(PCA\).*StandardScaler.*MinMaxScaler"):
        export_ecoc(pca, X)
    clip = make_pipeline(MinMaxScaler(clip=True),
                         ECOCClassifier(_learner("tree"), code=code)).fit(X, y)
    with pytest.raises(ValueError, match=r"'minmaxscaler' \(MinMaxScaler\) into the device "
                                         r"arrays: clip=True"):
        export_ecoc(clip, X)
    ct = Pipeline([("ct", ColumnTransformer([("p", PCA(1), [0, 1])], remainder="passthrough")),
                   ("ecoc", ECOCClassifier(_learner("linear"), code=code))]).fit(X, y)
    with pytest.raises(ValueError, match=r"step 'ct'/'p' \(PCA\)"):
        quantize_ecoc(ct, X)
    last = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    with pytest.raises(TypeError, match="last step 'logisticregression' must be an "
                                        "ECOCClassifier; got LogisticRegression"):
        export_ecoc(last, X)
    with pytest.raises(TypeError, match="got PCA"):
        fold_pipeline(PCA(2).fit(X))
    with pytest.raises(ValueError, match="X_calib has 3 features; the model expects 4"):
        export_ecoc(make_pipeline(StandardScaler(),
                                  ECOCClassifier(_learner("linear"), code=code)).fit(X, y),
                    X[:, :3])


def test_tree_fold_refuses_a_negative_scale():
    X, y = _data("iris")
    ecoc = ECOCClassifier(_learner("tree"), code=_code(3, np.random.default_rng(0))).fit(X, y)
    la = ecoc.learner_arrays()
    a = np.array([1.0, -2.0, 1.0, 1.0])
    used = set(la["feature"][la["feature"] >= 0].tolist())
    a[1 if 1 in used else sorted(used)[0]] = -2.0
    with pytest.raises(ValueError, match=r"scaled by -2\.0 \(<= 0\).*'x >= t''"):
        _fold_tree(la, np.arange(4), a, np.zeros(4), "'ecoc'")


@pytest.mark.parametrize("decoding", ["loss", "euclidean"])
def test_non_hamming_decoding_is_refused(decoding):
    X, y = _data("iris")
    code = _code(3, np.random.default_rng(0))
    clf = ECOCClassifier(_learner("linear"), code=code, decoding=decoding).fit(X, y)
    with pytest.raises(ValueError, match=rf"decoding='{decoding}', but only Hamming decoding "
                                         r"exports.*Hamming distance.*"
                                         r"set_params\(decoding='hamming'\)"):
        export_ecoc(clf, X)
    pipe = make_pipeline(StandardScaler(), clf).fit(X, y)
    with pytest.raises(ValueError, match=r"pipeline.set_params\(ecocclassifier__decoding="):
        export_ecoc(pipe, X)
    # the refit the message suggests exports
    out = export_ecoc(clf.set_params(decoding="hamming").fit(X, y), X)
    assert out.label_mismatches <= 1
