import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.naive_bayes import BernoulliNB
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes


@parametrize_with_checks([BinaryNaiveBayes(binarize=0.0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_strict_mode_opts_out_only_for_non_binary_input():
    """The default (strict) estimator refuses non-binary X by design.

    scikit-learn's common checks feed continuous features, so every check that
    fails for the strict estimator must fail *because* X was not binary; the
    thresholding variant above passes them all.
    """
    results = check_estimator(BinaryNaiveBayes(), on_fail=None)
    failed = [r for r in results if r["status"] == "failed"]
    assert failed, "strict mode should refuse the checks' continuous data"
    for r in failed:
        assert "must be 0 or 1" in str(r["exception"]), (r["check_name"], r["exception"])


def test_worked_example_literal_numbers():
    # 4 samples, alpha = 1: P(X0=1|C=1) = (2+1)/(2+2) = 3/4, P(X0=1|C=0) = 1/4
    X = np.array([[1, 0], [1, 1], [0, 1], [0, 0]])
    y = np.array([1, 1, 0, 0])
    nb = BinaryNaiveBayes(alpha=1.0).fit(X, y)
    assert_allclose(nb.feature_prob_, [[0.25, 0.5], [0.75, 0.5]])
    assert_allclose(nb.weights_[1], [np.log(3), 0.0], atol=1e-15)
    assert_allclose(nb.weights_[0], [np.log(1 / 3), 0.0], atol=1e-15)
    assert nb.bias_ == 0.0
    assert_allclose(nb.decision_function([[1, 0]]), [np.log(3)])
    assert_allclose(nb.flip_deltas([[1, 0]]), [[-2 * np.log(3), 0.0]], atol=1e-15)


def test_matches_sklearn_bernoulli_nb_on_house_votes():
    d = load_house_votes()
    ours = BinaryNaiveBayes(alpha=1.0).fit(d.X, d.y)
    ref = BernoulliNB(alpha=1.0, binarize=None).fit(d.X, d.y)
    assert_allclose(ours.predict_proba(d.X), ref.predict_proba(d.X), rtol=1e-10, atol=1e-12)
    assert_array_equal(ours.predict(d.X), ref.predict(d.X))
    assert ours.score(d.X, d.y) > 0.88


def test_flip_deltas_equal_log_odds_of_flipped_point():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(60, 7))
    y = rng.integers(0, 2, size=60)
    nb = BinaryNaiveBayes(alpha=0.5).fit(X, y)
    s, D = nb.decision_function(X), nb.flip_deltas(X)
    for j in range(X.shape[1]):
        Xf = X.copy()
        Xf[:, j] ^= 1
        assert_allclose(nb.decision_function(Xf), s + D[:, j], rtol=1e-12, atol=1e-12)


def test_string_labels_and_predict_uses_classes():
    X = np.array([[1, 0], [1, 1], [0, 1], [0, 0]])
    nb = BinaryNaiveBayes().fit(X, np.array(["dem", "rep", "dem", "rep"]))
    assert set(nb.predict(X)) <= {"dem", "rep"}
    assert_array_equal(nb.classes_, ["dem", "rep"])


@pytest.mark.parametrize(
    "X, y, match",
    [
        ([[0, 2], [1, 0]], [0, 1], r"X\[0, 1\] must be 0 or 1"),
        ([[0, np.nan], [1, 0]], [0, 1], "NaN"),
        ([[0, 1], [1, 0], [1, 1]], [0, 1, 2], "Only binary classification"),
        ([[0, 1], [1, 0]], [1, 1], "only one class"),
    ],
)
def test_bad_input_is_named(X, y, match):
    with pytest.raises(ValueError, match=match):
        BinaryNaiveBayes().fit(np.array(X, dtype=float), np.array(y))


def test_predict_checks_binary_and_shape():
    nb = BinaryNaiveBayes().fit([[0, 1], [1, 0]], [0, 1])
    with pytest.raises(ValueError, match=r"X\[0, 0\] must be 0 or 1"):
        nb.flip_deltas([[0.5, 1]])
    with pytest.raises(ValueError, match="features"):
        nb.predict([[0, 1, 1]])


def test_tiny_alpha_warns_and_stays_finite():
    with pytest.warns(UserWarning, match="alpha"):
        nb = BinaryNaiveBayes(alpha=0.0).fit([[0, 1], [1, 0]], [0, 1])
    assert np.isfinite(nb.weights_).all()
