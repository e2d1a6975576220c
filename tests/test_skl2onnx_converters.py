"""skl2onnx.to_onnx on pipelines with an ECOCClassifier (issue 13): the graph
reproduces the float model's predict (every learner through skl2onnx's own
converter, Hamming decoding, ties to the lowest class index)."""

import os

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.feature_selection import SelectKBest, f_classif
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import MultinomialNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from edgecode.ecoc.classifier import ECOCClassifier

try:
    import onnxruntime as ort
    from skl2onnx import to_onnx
except ImportError:                                   # pragma: no cover
    if os.environ.get("EDGECODE_CI"):
        raise
    pytest.skip("skl2onnx is not installed (pip install 'edgecode[skl2onnx]')",
                allow_module_level=True)

from export.skl2onnx_converters import register

register()


def _run(model, X):
    onx = to_onnx(model, X[:1].astype(np.float32), target_opset=17)
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: X.astype(np.float32)})


def _digits():
    X, y = load_digits(return_X_y=True)
    return X[:600], y[:600]


@pytest.mark.parametrize("code, N", [("one_vs_all", 2), ("one_vs_one", 2), ("nary", 3),
                                     ("dense_random", 2)])
def test_trees_on_integer_data_equal_predict_and_distances(code, N):
    X, y = _digits()
    clf = ECOCClassifier(DecisionTreeClassifier(max_depth=6, random_state=0), code=code, N=N,
                         n_columns=None if code in ("one_vs_all", "one_vs_one") else 12,
                         random_state=0).fit(X, y)
    label, scores = _run(clf, X)
    assert np.array_equal(label, clf.predict(X))
    # scores = -(doubled distances) = 2 x decision_function (Hamming: -d)
    assert np.array_equal(scores, 2 * clf.decision_function(X))


@pytest.mark.parametrize("learner", [LogisticRegression(max_iter=2000),
                                     LinearSVC(dual=False, random_state=0)])
def test_linear_learners_in_a_pipeline_with_string_labels(learner):
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa, Iris", "versicolor", "virginica"])[y]
    pipe = make_pipeline(StandardScaler(), ECOCClassifier(learner, code="one_vs_one")).fit(X,
                                                                                         names)
    label, _ = _run(pipe, X)
    want = pipe.predict(X.astype(np.float32))
    assert label.dtype.kind in "OU"
    assert np.mean(label == want) >= 0.99          # float32 learners in the graph


def test_feature_selection_per_column_and_a_selector_step():
    X, y = _digits()
    clf = ECOCClassifier(MultinomialNB(), code="one_vs_all", feature_selection=("chi2", 20))
    pipe = make_pipeline(SelectKBest(f_classif, k=40), clf).fit(X, y)
    label, _ = _run(pipe, X)
    assert np.mean(label == pipe.predict(X.astype(np.float32))) >= 0.99


def test_ties_go_to_the_lowest_class_index():
    """Two equal codewords: the first class wins, as in predict."""
    X, y = load_iris(return_X_y=True)
    code = [[0, 1, 0], [0, 1, 0], [1, 0, 1]]
    with pytest.warns(UserWarning):
        clf = ECOCClassifier(DecisionTreeClassifier(max_depth=2, random_state=0),
                             code=code).fit(X, y)
    label, _ = _run(clf, X)
    assert np.array_equal(label, clf.predict(X)) and 1 not in set(label.tolist())


def test_non_hamming_decoding_is_refused():
    X, y = load_iris(return_X_y=True)
    clf = ECOCClassifier(LogisticRegression(max_iter=500), code="one_vs_all",
                         decoding="loss").fit(X, y)
    with pytest.raises(ValueError, match="only Hamming decoding converts"):
        to_onnx(clf, X[:1].astype(np.float32), target_opset=17)


# ------------------------------------------------------------------ hashers
def _hashers():
    from edgecode.hashing import ITQ, SSBC, PCASign, SignRandomProjection
    return [SSBC(16, 64, 40, random_state=0), SSBC(16, 64, 40, center=True, random_state=0),
            SignRandomProjection(24, random_state=0), PCASign(12), ITQ(12, random_state=0)]


@pytest.mark.parametrize("index", range(5))
def test_hashers_in_a_pipeline_equal_transform_in_float64(index):
    hasher = _hashers()[index]
    X, _ = _digits()
    X = X.astype(np.float64)
    pipe = make_pipeline(StandardScaler(), hasher).fit(X)
    onx = to_onnx(pipe, X[:1], target_opset=17)            # float64 input: transform's type
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    (bits,) = sess.run(None, {sess.get_inputs()[0].name: X})
    want = pipe.transform(X)
    assert bits.dtype == np.uint8 and bits.shape == want.shape
    # summation order of the products may differ: a bit exactly at its threshold
    assert np.mean(bits == want) >= 0.9999
    assert 0.05 < bits.mean() < 0.95                        # codes, not constants


def test_packed_hasher_output_is_refused():
    from edgecode.hashing import SignRandomProjection
    X, _ = _digits()
    h = SignRandomProjection(16, output="uint8", random_state=0).fit(X)
    with pytest.raises(NotImplementedError, match="only output='bits' converts"):
        to_onnx(h, X[:1].astype(np.float64), target_opset=17)
