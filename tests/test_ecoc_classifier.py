import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import chi2_contingency
from sklearn.datasets import load_digits, load_iris
from sklearn.feature_selection import mutual_info_classif
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OutputCodeClassifier
from sklearn.naive_bayes import GaussianNB, MultinomialNB
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from edgecode.ecoc.classifier import ECOCClassifier, check_code_matrix
from edgecode.ecoc.feature_selection import feature_scores, select_top_k

from naive_ecoc_clf import codewords_loop, delta_scores, hamming_bruteforce


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    X, y = X[order] / 16.0, y[order]        # scaled: lbfgs converges fast
    return X[:500], y[:500], X[500:800], y[500:800]


def _codes(n_classes, seed=0):
    rng = np.random.default_rng(seed)
    binary = rng.integers(0, 2, (n_classes, 12))
    ternary = rng.integers(-1, 2, (n_classes, 14))
    ternary[:, 0] = np.arange(n_classes) % 2          # every row uses a column
    nary = rng.integers(0, 5, (n_classes, 9))
    return {"binary": binary, "ternary": ternary, "nary5": nary}


# ---------------------------------------------------------------- sklearn checks
# LinearSVC as scikit-learn checks it for sample weights: the primal solver with a
# tight tolerance (its default dual solver is stochastic). Every check runs; none
# is opted out (see tests/test_sklearn_multiclass_adapted.py for the rationale of
# what is and is not adapted from scikit-learn's own multiclass tests).
_CHECKED = [ECOCClassifier(LogisticRegression(), code="one_vs_all"),
            ECOCClassifier(DecisionTreeClassifier(), code="nary", N=3, random_state=0),
            ECOCClassifier(LinearSVC(dual=False, tol=1e-12), code="one_vs_one",
                           decoding="loss"),
            ECOCClassifier(GaussianNB(), code="nary", N=3, decoding="euclidean"),
            ECOCClassifier(MultinomialNB(), code="one_vs_all", feature_selection=("chi2", 2)),
            ECOCClassifier(MultinomialNB(), code="dense_random",
                           feature_selection=("delta", 0.5), random_state=0),
            ECOCClassifier(LogisticRegression(), code="sparse_random", random_state=0)]


@parametrize_with_checks(_CHECKED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # constant columns on tiny data
        check(estimator)


# ----------------------------------------------------- fast path vs references
@pytest.mark.parametrize("kind", ["binary", "ternary", "nary5"])
@pytest.mark.parametrize("learner, path", [
    (LogisticRegression(max_iter=200), "linear"),
    (MultinomialNB(), "linear"),
    (DecisionTreeClassifier(random_state=0, max_depth=8), "tree"),
    (GaussianNB(), "generic"),
])
def test_fast_predict_equals_per_sample_loop(digits, kind, learner, path):
    Xtr, ytr, Xte, _ = digits
    code = _codes(10)[kind]
    clf = ECOCClassifier(learner, code=code).fit(Xtr, ytr)
    assert clf.fast_path_ == path
    Xs = Xte[:60]
    words = codewords_loop(clf, Xs)
    assert_array_equal(clf.predict_codewords(Xs), words)
    labels, dist2 = hamming_bruteforce(words, code)
    assert_array_equal(clf.predict(Xs), clf.classes_[labels])
    dec = clf.decision_function(Xs)
    assert_allclose(dec, -dist2 / 2.0)
    # decoding after a channel uses the same rule
    assert_array_equal(clf.decode(words), clf.classes_[labels])


def test_binary_codes_longer_than_one_word(digits):
    Xtr, ytr, Xte, _ = digits
    code = np.random.default_rng(3).integers(0, 2, (10, 150))
    clf = ECOCClassifier(DecisionTreeClassifier(max_depth=3, random_state=0),
                         code=code).fit(Xtr, ytr)
    words = clf.predict_codewords(Xte[:40])
    labels, dist2 = hamming_bruteforce(words, code)
    assert_array_equal(clf.predict(Xte[:40]), clf.classes_[labels])
    assert_allclose(clf.decision_function(Xte[:40]), -dist2 / 2.0)


def test_ties_go_to_the_lowest_class_index():
    # words at equal distance from several codewords
    code = np.array([[0, 0, 1, 1], [1, 1, 0, 0], [0, 1, 0, 1], [0, 1, 1, 0]])
    X = np.repeat(np.eye(4), 5, axis=0)
    y = np.repeat(np.arange(4), 5)
    clf = ECOCClassifier(DecisionTreeClassifier(), code=code).fit(X, y)
    words = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 1, 0], [1, 1, 0, 1]])
    labels, dist2 = hamming_bruteforce(words, code)
    assert_array_equal(clf.decode(words), labels)
    # 0000 is at distance 2 from every row -> class 0; 1101 ties rows 1 and 2 -> 1
    assert labels.tolist() == [0, 0, 0, 1]
    assert (dist2[0] == 4).all()


def test_euclidean_decoding_equals_output_code_classifier(digits):
    Xtr, ytr, Xte, _ = digits
    ref = OutputCodeClassifier(LinearSVC(random_state=0), code_size=1.5,
                               random_state=0).fit(Xtr, ytr)
    code = (ref.code_book_ > 0).astype(int)
    ours = ECOCClassifier(LinearSVC(random_state=0), code=code,
                          decoding="euclidean").fit(Xtr, ytr)
    assert_array_equal(ours.predict(Xte), ref.predict(Xte))


def test_loss_decoding_with_probabilities_and_scores(digits):
    Xtr, ytr, Xte, yte = digits
    code = _codes(10)["nary5"]
    for learner in (GaussianNB(), LinearSVC(random_state=0)):
        clf = ECOCClassifier(learner, code=code, decoding="loss").fit(Xtr, ytr)
        dec = clf.decision_function(Xte)
        assert_array_equal(clf.classes_[np.argmax(dec, axis=1)], clf.predict(Xte))
        assert clf.score(Xte, yte) > 0.6


def test_one_vs_all_code_matches_one_vs_rest_labels_on_iris():
    X, y = load_iris(return_X_y=True)
    code = np.eye(3, dtype=int)
    clf = ECOCClassifier(LogisticRegression(max_iter=2000), code=code).fit(X, y)
    assert clf.score(X, y) > 0.7        # hard one-vs-all words are often all-zero (ties)
    loss = ECOCClassifier(LogisticRegression(max_iter=2000), code=code, decoding="loss")
    assert loss.fit(X, y).score(X, y) > 0.9
    assert clf.code_.dtype == np.int16 and clf.n_symbols_ == 2


def test_two_classes_decision_function_is_one_dimensional():
    X, y = load_iris(return_X_y=True)
    keep = y < 2
    clf = ECOCClassifier(LogisticRegression(), code=[[0, 1, 0], [1, 0, 1]]).fit(X[keep], y[keep])
    dec = clf.decision_function(X[keep])
    assert dec.shape == (keep.sum(),)
    assert_array_equal((dec > 0).astype(int), clf.predict(X[keep]))


def test_n_jobs_and_seed_give_equal_fits(digits):
    Xtr, ytr, Xte, _ = digits
    code = _codes(10)["ternary"]
    base = DecisionTreeClassifier(max_features=0.5)
    a = ECOCClassifier(base, code=code, random_state=1).fit(Xtr, ytr)
    b = ECOCClassifier(base, code=code, random_state=1, n_jobs=2).fit(Xtr, ytr)
    assert_array_equal(a.predict_codewords(Xte), b.predict_codewords(Xte))


@pytest.mark.parametrize("design, N", [("one_vs_all", 2), ("dense_random", 2), ("nary", 3),
                                       ("nary", 5), ("sparse_random", 2), ("one_vs_one", 2)])
def test_string_designs(digits, design, N):
    Xtr, ytr, Xte, yte = digits
    kw = {} if design in ("one_vs_all", "one_vs_one") else {"n_columns": 12}
    base = DecisionTreeClassifier(max_depth=8)
    clf = ECOCClassifier(base, code=design, N=N, random_state=0, **kw).fit(Xtr, ytr)
    assert clf.code_.shape[0] == 10
    assert clf.score(Xte, yte) > 0.5
    again = ECOCClassifier(base, code=design, N=N, random_state=0, **kw).fit(Xtr, ytr)
    assert_array_equal(clf.code_, again.code_)
    assert_array_equal(clf.predict(Xte), again.predict(Xte))


# -------------------------------------------------------- feature selection
def test_selection_measures_against_references():
    rng = np.random.default_rng(0)
    X = (rng.random((120, 15)) < 0.1 + 0.8 * rng.random(15)).astype(float)
    t = rng.integers(0, 2, 120)
    X[t == 1, 3] = 1.0
    assert_allclose(feature_scores(X, t, "delta"), delta_scores(X, t))
    chi = [chi2_contingency(np.array([[np.sum((X[:, f] > 0) & (t == s)) for s in (0, 1)],
                                      [np.sum((X[:, f] == 0) & (t == s)) for s in (0, 1)]]),
                            correction=False)[0] for f in range(15)]
    assert_allclose(feature_scores(X, t, "chi2"), chi, rtol=1e-10)
    mi = mutual_info_classif(X, t, discrete_features=True)
    assert_allclose(feature_scores(X, t, "ig"), mi, rtol=1e-10, atol=1e-12)
    assert select_top_k(X, t, "chi2", 1).tolist() == [3]


def test_per_column_selection_sparse_equals_dense(digits):
    Xtr, ytr, Xte, _ = digits
    Xb = (Xtr > 0.25).astype(float)
    code = _codes(10)["binary"]
    dense = ECOCClassifier(MultinomialNB(), code=code,
                           feature_selection=("delta", 0.2)).fit(Xb, ytr)
    sparse = ECOCClassifier(MultinomialNB(), code=code,
                            feature_selection=("delta", 0.2)).fit(sp.csr_matrix(Xb), ytr)
    k = int(np.ceil(0.2 * 64))
    assert all(len(i) == k for i in dense.feature_indices_)
    assert len({tuple(i) for i in dense.feature_indices_}) > 1   # each column its own
    for i, j in zip(dense.feature_indices_, sparse.feature_indices_):
        assert_array_equal(i, j)
    # column 0's selection equals the ranking of its own superclass split
    target = code[ytr, 0]
    assert_array_equal(dense.feature_indices_[0], select_top_k(Xb, target, "delta", k))
    Xq = (Xte > 0.25).astype(float)
    assert_array_equal(dense.predict(Xq), sparse.predict(sp.csr_matrix(Xq)))
    assert_array_equal(dense.predict_codewords(Xq[:30]), codewords_loop(dense, Xq[:30]))


@pytest.mark.parametrize("learner", [LinearSVC(random_state=0),
                                     DecisionTreeClassifier(random_state=0)])
def test_selection_with_fast_paths(digits, learner):
    Xtr, ytr, Xte, yte = digits
    code = _codes(10)["nary5"]
    clf = ECOCClassifier(learner, code=code, feature_selection=("chi2", 20)).fit(Xtr, ytr)
    assert clf.fast_path_ in ("linear", "tree")
    assert_array_equal(clf.predict_codewords(Xte[:50]), codewords_loop(clf, Xte[:50]))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, match", [
    ({"code": [[0, 1], [1, 0]]}, "rows but y has 3 classes"),
    ({"code": [[0, 1], [1, -2], [1, 1]]}, r"code\[1, 1\] must be -1"),
    ({"code": [[0, 1], [-1, -1], [1, 1]]}, "row 1 uses no column"),
    ({"code": [[0.5, 1], [1, 0], [1, 1]]}, "must be integers"),
    ({"code": [0, 1, 1]}, "must be a matrix"),
    ({"code": [[0, 1], [1, 0], [1, 1]], "feature_selection": ("gini", 3)}, "measure must be"),
    ({"code": [[0, 1], [1, 0], [1, 1]], "feature_selection": ("chi2", 0)}, "K must be >= 1"),
    ({"code": [[0, 1], [1, 0], [1, 1]], "feature_selection": ("chi2", 1.5)}, r"in \(0, 1\]"),
    ({"code": [[0, 1], [1, 0], [1, 1]], "feature_selection": ("chi2",)}, "pair"),
    ({"code": [[0, 1], [1, 0], [1, 1]], "decoding": "manhattan"}, "decoding"),
    ({"code": [[0, 1], [1, 0], [1, 1]], "N": 1}, "'N' parameter"),
])
def test_bad_parameters_are_named(kwargs, match):
    X, y = load_iris(return_X_y=True)
    with pytest.raises((ValueError, TypeError), match=match):
        ECOCClassifier(LogisticRegression(), **kwargs).fit(X, y)


def test_bad_data_and_decode_input():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="only one class"):
        ECOCClassifier(LogisticRegression(), code=[[0], [1]]).fit(X, np.zeros(len(y)))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ECOCClassifier(LogisticRegression(), code=np.eye(3, dtype=int)).fit(Xn, y)
    clf = ECOCClassifier(LogisticRegression(max_iter=500), code=np.eye(3, dtype=int)).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(Xn)
    with pytest.raises(ValueError, match="4 features"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError, match=r"shape \(n_samples, 3\)"):
        clf.decode([[0, 1]])
    with pytest.raises(ValueError, match="symbols in 0..1"):
        clf.decode([[0, 1, 2]])


def test_constant_column_warns_and_duplicate_rows_warn():
    X, y = load_iris(return_X_y=True)
    with pytest.warns(UserWarning, match="same symbol"):
        ECOCClassifier(LogisticRegression(max_iter=500),
                       code=[[0, 1, 0], [0, 0, 1], [0, 1, 1]]).fit(X, y)
    with pytest.warns(UserWarning, match="identical rows"):
        ECOCClassifier(LogisticRegression(max_iter=500),
                       code=[[0, 1], [0, 1], [1, 0]]).fit(X, y)


def test_check_code_matrix_alphabet():
    code, n = check_code_matrix([[0, 4], [1, -1]])
    assert n == 5 and code.dtype == np.int16
