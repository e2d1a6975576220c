"""scikit-learn's multiclass tests, re-stated for ECOCClassifier.

scikit-learn's ``sklearn/tests/test_multiclass.py`` (release 1.9) tests
``OutputCodeClassifier`` and, for the codes ECOCClassifier also builds
(``one_vs_all``, ``one_vs_one``), ``OneVsRestClassifier`` and
``OneVsOneClassifier``.  The tests below re-state, in our own code, every one
whose semantics carry over; the reference is scikit-learn itself wherever an
exact equality holds.

Adapted (scikit-learn test -> test here)
----------------------------------------
* ``test_ecoc_exceptions`` -> ``test_predict_before_fit_raises``.
* ``test_ecoc_fit_predict`` -> ``test_fit_predict_with_scores_or_probabilities``
  (one learner per column, for a ``decision_function`` and a
  ``predict_proba`` learner, with each decoding).
* ``test_ecoc_gridsearch``, ``test_ovr_gridsearch``, ``test_ovo_gridsearch``
  -> ``test_gridsearch_reaches_the_base_estimator``.
* ``test_ecoc_float_y``, ``test_ovo_float_y``, ``test_check_classification_targets``
  -> ``test_continuous_targets_are_refused``.
* ``test_ecoc_delegate_sparse_base_estimator`` -> ``test_sparse_input_is_delegated``.
* ``test_ovr_ovo_regressor`` -> ``test_regressor_base_is_refused`` (inverted:
  OvR/OvO accept regressors and threshold them; ECOCClassifier, like
  ``OutputCodeClassifier``, refuses an estimator tagged as a regressor --
  see issue 13).
* ``test_ovr_pipeline`` -> ``test_pipeline_base_equals_bare_base``.
* ``test_ovo_string_y``, ``test_ovo_fit_on_list`` -> ``test_string_and_list_targets``.
* ``test_ovo_one_class`` -> ``test_one_class_is_refused``.
* ``test_ovo_decision_function`` / ``test_ovo_ties`` (vote recount) ->
  ``test_one_vs_one_hamming_is_the_vote_count``: with the one-vs-one code and
  Hamming decoding, the nearest codeword is the class with most pairwise
  wins; we recount the votes of scikit-learn's own ``OneVsOneClassifier``
  learners by hand.  Ties differ on purpose: OvO breaks them with summed
  confidences, ECOCClassifier by the lowest class index (documented rule).
* ``test_ovr_fit_predict`` (one learner per class, sensible accuracy) ->
  ``test_one_vs_all_loss_decoding_equals_one_vs_rest``: with the identity code
  and loss decoding, the class with the largest learner margin wins, i.e.
  exactly ``OneVsRestClassifier``'s prediction for the same learners.
* ``test_ovr_fit_predict_sparse`` (sparse vs dense) ->
  ``test_sparse_and_dense_fits_agree``.
* ``test_ovo_consistent_binary_classification`` ->
  ``test_two_classes_equal_the_base_classifier``.
* ``test_support_missing_values`` -> ``test_nan_reaches_a_pipeline_that_imputes``.
* ``test_pairwise_n_features_in`` (non-precomputed half) ->
  ``test_n_features_in_of_meta_and_learners``.

Not adapted, and why
--------------------
* Multilabel tests (``test_ovr_multilabel*``, ``test_ovr_fit_predict_svc``,
  ``test_ovr_single_label_*``, ``test_ovr_always_present``,
  ``test_ovr_binary``' multilabel part): ECOCClassifier is a multi-class
  (single label) classifier; a multilabel indicator y is refused (checked in
  ``test_multilabel_targets_are_refused``).
* ``test_constant_int_target``: OvR predicts a constant target; ECOCClassifier
  needs >= 2 classes to have a code (``test_one_class_is_refused``).
* ``predict_proba`` tests: ECOCClassifier has no ``predict_proba`` (decoding
  gives distances, not calibrated probabilities).
* Partial fit tests (``test_ovr_partial_fit*``, ``test_ovo_partial_fit_predict``,
  ``test_multiclass_estimator_attribute_error``): ECOCClassifier has no
  ``partial_fit``.
* Precomputed-kernel tests (``test_pairwise_indices``, ``test_pairwise_tag``,
  ``test_pairwise_cross_val_score``, the kernel half of
  ``test_pairwise_n_features_in``): ternary columns keep the rows of the
  classes they use but would also have to cut the kernel's columns;
  ECOCClassifier does not declare the ``pairwise`` tag and does not support
  precomputed kernels.
* ``test_ovr_ties`` / ``test_ovo_ties2``: depend on OvR's / OvO's own
  tie-breaking by confidence, which ECOCClassifier does not share (its rule:
  lowest class index, tested in ``tests/test_ecoc_classifier.py``).
* ``test_ovo_exceptions``/``test_ovr_exceptions``: same as
  ``test_ecoc_exceptions`` (one adapted test).
* ``check_estimator`` with several base learners (including MultinomialNB
  with chi2 selection) runs in ``tests/test_ecoc_classifier.py``, with no
  opted-out check.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import NotFittedError
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.naive_bayes import MultinomialNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils import check_array
from sklearn.utils._mocking import CheckingClassifier

from edgecode.ecoc.classifier import ECOCClassifier


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


def test_predict_before_fit_raises():
    clf = ECOCClassifier(LinearSVC(random_state=0))
    for method in (clf.predict, clf.decision_function, clf.predict_codewords):
        with pytest.raises(NotFittedError):
            method([[0.0, 1.0]])
    with pytest.raises(NotFittedError):
        clf.decode([[0, 1]])


@pytest.mark.parametrize("base", [LinearSVC(random_state=0), MultinomialNB()])
@pytest.mark.parametrize("decoding", ["hamming", "loss", "euclidean"])
def test_fit_predict_with_scores_or_probabilities(iris, base, decoding):
    X, y = iris
    clf = ECOCClassifier(base, code="sparse_random", n_columns=6, decoding=decoding,
                         random_state=0).fit(X, y)
    assert len(clf.estimators_) == clf.code_.shape[1] == 6
    pred = clf.predict(X)
    assert set(np.unique(pred)) <= {0, 1, 2}
    assert np.mean(pred == y) > 0.6


def test_gridsearch_reaches_the_base_estimator(iris):
    X, y = iris
    Cs = [0.1, 0.5, 0.8]
    cv = GridSearchCV(ECOCClassifier(LinearSVC(random_state=0), code="one_vs_all"),
                      {"estimator__C": Cs}).fit(X, y)
    best_C = cv.best_estimator_.estimators_[0].C
    assert best_C in Cs
    assert best_C == cv.best_params_["estimator__C"]


def test_continuous_targets_are_refused(iris):
    X, _ = iris
    with pytest.raises(ValueError, match="Unknown label type"):
        ECOCClassifier(LinearSVC()).fit(X, X[:, 0])


def test_multilabel_targets_are_refused(iris):
    X, y = iris
    Y = np.column_stack([y == 0, y == 1]).astype(int)
    with pytest.raises(ValueError):
        ECOCClassifier(LogisticRegression()).fit(X, Y)


def test_sparse_input_is_delegated(iris):
    X, y = iris
    Xs = sp.csc_matrix(X)
    dense_only = CheckingClassifier(check_X=check_array,
                                    check_X_params={"ensure_2d": True, "accept_sparse": False})
    clf = ECOCClassifier(dense_only, code="one_vs_all")
    assert clf.__sklearn_tags__().input_tags.sparse is False
    with pytest.raises(TypeError, match="Sparse data was passed"):
        clf.fit(Xs, y)
    clf.fit(X, y)
    with pytest.raises(TypeError, match="Sparse data was passed"):
        clf.predict(Xs)
    # a sparse-capable learner: sparse and dense give the same model
    a = ECOCClassifier(LinearSVC(random_state=0), code="one_vs_all").fit(Xs, y)
    b = ECOCClassifier(LinearSVC(random_state=0), code="one_vs_all").fit(X, y)
    assert len(a.estimators_) == 3
    assert_array_equal(a.predict(Xs), b.predict(X))


@pytest.mark.parametrize("base", [LinearRegression(), DecisionTreeRegressor()])
def test_regressor_base_is_refused(iris, base):
    X, y = iris
    with pytest.raises(ValueError, match="needs a classifier.*'regressor'"):
        ECOCClassifier(base, code="one_vs_all").fit(X, y)


def test_pipeline_base_equals_bare_base(iris):
    X, y = iris
    piped = ECOCClassifier(Pipeline([("tree", DecisionTreeClassifier(random_state=0))]),
                           code="one_vs_one").fit(X, y)
    bare = ECOCClassifier(DecisionTreeClassifier(random_state=0), code="one_vs_one").fit(X, y)
    assert piped.fast_path_ == "generic" and bare.fast_path_ == "tree"
    assert_array_equal(piped.predict(X), bare.predict(X))


def test_string_and_list_targets():
    X = np.eye(4)
    y = np.array(["a", "b", "c", "d"])
    clf = ECOCClassifier(LinearSVC(random_state=0), code="one_vs_one").fit(X, y)
    assert_array_equal(clf.predict(X), y)
    X, yi = load_iris(return_X_y=True)
    a = ECOCClassifier(LinearSVC(random_state=0), code="one_vs_one").fit(X, yi)
    b = ECOCClassifier(LinearSVC(random_state=0), code="one_vs_one").fit(X.tolist(),
                                                                        yi.tolist())
    assert_array_equal(a.predict(X), b.predict(X))


def test_one_class_is_refused():
    with pytest.raises(ValueError, match="only one class"):
        ECOCClassifier(LinearSVC()).fit(np.eye(4), np.array(["a"] * 4))


def test_one_vs_one_hamming_is_the_vote_count(iris):
    X, y = iris
    base = LogisticRegression(max_iter=1000)
    ovo = OneVsOneClassifier(base).fit(X, y)
    ours = ECOCClassifier(base, code="one_vs_one").fit(X, y)
    # the same pairwise problems in the same order: equal learners
    for a, b in zip(ovo.estimators_, ours.estimators_):
        assert_array_equal(a.predict(X) == a.classes_[1], b.predict(X) == 1)
    # recount the votes by hand; the winner is the most-voted class, ties -> lowest index
    votes = np.zeros((X.shape[0], 3), int)
    k = 0
    for i in range(3):
        for j in range(i + 1, 3):
            wins_j = ovo.estimators_[k].predict(X) == ovo.estimators_[k].classes_[1]
            votes[:, j] += wins_j
            votes[:, i] += ~wins_j
            k += 1
    assert_array_equal(ours.predict(X), np.argmax(votes, axis=1))
    # the distances are the votes up to a constant: d = (c - 1) - votes + unused / 2
    assert_array_equal(ours.decision_function(X), votes - 2 - 0.5)


def test_one_vs_all_loss_decoding_equals_one_vs_rest(iris):
    X, y = iris
    base = LogisticRegression(max_iter=1000)
    ovr = OneVsRestClassifier(base).fit(X, y)
    ours = ECOCClassifier(base, code="one_vs_all", decoding="loss").fit(X, y)
    assert_array_equal(ours.predict(X), ovr.predict(X))
    assert np.mean(ours.predict(X) == y) > 0.9


def test_sparse_and_dense_fits_agree(iris):
    X, y = iris
    Xs = sp.csr_matrix(np.round(X))
    a = ECOCClassifier(MultinomialNB(alpha=1), code="dense_random", random_state=0).fit(Xs, y)
    b = ECOCClassifier(MultinomialNB(alpha=1), code="dense_random",
                       random_state=0).fit(Xs.toarray(), y)
    assert_array_equal(a.predict(Xs), b.predict(Xs.toarray()))
    assert_array_equal(a.decision_function(Xs), b.decision_function(Xs.toarray()))


@pytest.mark.parametrize("code", ["one_vs_one", "one_vs_all", [[0], [1]]])
def test_two_classes_equal_the_base_classifier(code):
    X, y = load_breast_cancer(return_X_y=True)
    knn = KNeighborsClassifier(n_neighbors=8, weights="distance")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # one_vs_all: complementary columns
        ours = ECOCClassifier(knn, code=code).fit(X, y)
    assert_array_equal(knn.fit(X, y).predict(X), ours.predict(X))


def test_nan_reaches_a_pipeline_that_imputes(iris):
    rng = np.random.RandomState(42)
    X, y = iris
    X = X.copy()
    X[rng.choice([True, False], X.shape, p=[0.1, 0.9])] = np.nan
    lr = make_pipeline(SimpleImputer(), LogisticRegression(max_iter=1000))
    # dense codes train every learner on all rows: the same imputation as imputing first
    Xi = SimpleImputer().fit_transform(X)
    for code, N in (("one_vs_all", 2), ("nary", 3)):
        piped = ECOCClassifier(lr, code=code, N=N, decoding="loss").fit(X, y)
        ref = ECOCClassifier(LogisticRegression(max_iter=1000), code=code, N=N,
                             decoding="loss").fit(Xi, y)
        assert_array_equal(piped.predict(X), ref.predict(Xi))
    # ternary code: each learner imputes from the rows of its own two classes
    assert ECOCClassifier(lr, code="one_vs_one").fit(X, y).score(X, y) > 0.8


def test_n_features_in_of_meta_and_learners(iris):
    X, y = iris
    X, y = X[:-1], y[:-1]
    for code in ("one_vs_all", "one_vs_one"):
        clf = ECOCClassifier(LinearSVC(random_state=0), code=code).fit(X, y)
        assert clf.n_features_in_ == 4
        assert all(e.n_features_in_ == 4 for e in clf.estimators_)
    sel = ECOCClassifier(LinearSVC(random_state=0), code="one_vs_one",
                         feature_selection=("chi2", 2)).fit(X, y)
    assert sel.n_features_in_ == 4
    assert all(e.n_features_in_ == 2 for e in sel.estimators_)
