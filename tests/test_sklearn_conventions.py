"""scikit-learn conventions and input guards of ``edgecode`` (issue 13).

* ECOCClassifier: non-classifier base estimators refused; input tags of the
  base estimator (and of chi2 selection) propagated; ``sample_weight`` routed
  to every column's learner (sliced for ternary columns), checked against the
  reference "integer weights = repeated rows"; scikit-learn metadata routing.
* Degenerate explicit codes warn, naming the rows / columns.
* Code designs and hashers price their memory before allocating.
* Hashers name their output columns (``get_feature_names_out``), so
  ``set_output(transform="pandas")`` works.
* NaN / inf parameters refused.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits, load_iris
from sklearn.exceptions import NotFittedError, UnsetMetadataPassedError
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import cross_validate
from sklearn.naive_bayes import MultinomialNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.impute import SimpleImputer
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils._tags import get_tags

import edgecode.ecoc._memory as ecoc_memory
import edgecode.hashing._base as hashing_base
from edgecode.ecoc import annealed, make_code
from edgecode.ecoc.classifier import ECOCClassifier, check_code_matrix
from edgecode.hashing import (ITQ, SSBC, FrequentDirections, PCASign, SignRandomProjection,
                              SpectralHashing, auto_sigma)
from edgecode.naive_bayes import BinaryNaiveBayes


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:400], y[:400]


class _Recorder(ClassifierMixin, BaseEstimator):
    """A classifier that keeps the metadata its fit received (predicts its first class)."""

    def __init__(self, note=None):
        self.note = note

    def fit(self, X, y, sample_weight=None, tag=None):
        self.classes_ = np.unique(y)
        self.n_rows_ = X.shape[0]
        self.sample_weight_ = None if sample_weight is None else np.asarray(sample_weight)
        self.tag_ = None if tag is None else np.asarray(tag)
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])


class _UntaggedCentroid(BaseEstimator):
    """Nearest centroid without ClassifierMixin (no estimator_type tag), with classes_."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.centroids_ = np.array([X[y == c].mean(axis=0) for c in self.classes_])
        return self

    def predict(self, X):
        d = ((X[:, None, :] - self.centroids_[None]) ** 2).sum(axis=2)
        return self.classes_[np.argmin(d, axis=1)]


class _UntaggedNoClasses(BaseEstimator):
    def fit(self, X, y):
        self.mean_ = X.mean()
        return self

    def predict(self, X):
        return np.zeros(X.shape[0])


# ------------------------------------------------------------- base estimator kind
@pytest.mark.parametrize("base, kind", [(LinearRegression(), "regressor"),
                                        (KMeans(n_clusters=2, n_init=1), "clusterer")])
def test_non_classifier_base_is_refused_at_fit(iris, base, kind):
    X, y = iris
    clf = ECOCClassifier(base, code="one_vs_all")
    with pytest.raises(ValueError, match=f"needs a classifier.*{type(base).__name__}.*'{kind}'"):
        clf.fit(X, y)
    with pytest.raises(TypeError, match="needs a classifier"):   # also a TypeError
        clf.fit(X, y)


def test_untagged_classifier_still_works_and_untagged_non_classifier_is_named(iris):
    X, y = iris
    clf = ECOCClassifier(_UntaggedCentroid(), code="one_vs_all").fit(X, y)
    # reference: each learner is a two-centroid classifier on its own split
    for j, e in enumerate(clf.estimators_):
        target = clf.code_[y, j]
        ref = _UntaggedCentroid().fit(X, target)
        assert_array_equal(e.predict(X), ref.predict(X))
    with pytest.raises(TypeError, match=r"code column 0 \(_UntaggedNoClasses\) has no classes_"):
        ECOCClassifier(_UntaggedNoClasses(), code="one_vs_all").fit(X, y)


# ------------------------------------------------------------- input tags
@pytest.mark.parametrize("base, selection, positive", [
    (LogisticRegression(), None, False),
    (MultinomialNB(), None, True),
    (LogisticRegression(), ("chi2", 2), True),
    (LogisticRegression(), ("delta", 2), False),
    (LogisticRegression(), ("ig", 2), False),
])
def test_positive_only_tag_and_its_check(iris, base, selection, positive):
    X, y = iris
    clf = ECOCClassifier(base, code="one_vs_all", feature_selection=selection)
    assert get_tags(clf).input_tags.positive_only is positive
    Xneg = X.copy()
    Xneg[7, 2] = -0.5
    if positive:
        why = "chi2 feature selection" if selection else "MultinomialNB"
        with pytest.raises(ValueError, match=f"Negative values.*{why}"):
            clf.fit(Xneg, y)
        with pytest.raises(ValueError, match="Negative values"):
            clf.fit(sp.csr_matrix(Xneg), y)
    else:
        clf.fit(Xneg, y)


def test_nan_and_sparse_tags_follow_the_base(iris):
    X, y = iris
    tree = ECOCClassifier(DecisionTreeClassifier(random_state=0), code="one_vs_all")
    assert get_tags(tree).input_tags.allow_nan is True
    assert get_tags(ECOCClassifier(LogisticRegression())).input_tags.allow_nan is False
    assert get_tags(ECOCClassifier(LogisticRegression())).input_tags.sparse is True
    # NaN rows: the tree fast path is bypassed, every learner's own predict decides
    Xn = X.copy()
    Xn[::7, 1] = np.nan
    tree.fit(Xn, y)
    words = np.column_stack([e.predict(Xn) for e in tree.estimators_])
    assert_array_equal(tree.predict_codewords(Xn), words)
    assert tree.score(Xn, y) > 0.9
    # finite rows still take the flattened-tree kernel, with the same words
    Xf = X[1::7]
    assert_array_equal(tree.predict_codewords(Xf),
                       np.column_stack([e.predict(Xf) for e in tree.estimators_]))
    # a pipeline takes NaN when its first step does (its own tag does not say so)
    pipe = make_pipeline(SimpleImputer(), LogisticRegression(max_iter=500))
    assert get_tags(ECOCClassifier(pipe)).input_tags.allow_nan is True
    assert ECOCClassifier(pipe, code="one_vs_all").fit(Xn, y).score(Xn, y) > 0.7
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ECOCClassifier(make_pipeline(LogisticRegression())).fit(Xn, y)


# ------------------------------------------------------------- sample_weight
def _weights(y, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 4, y.shape[0])
    for c in np.unique(y):        # every class keeps rows
        w[np.flatnonzero(y == c)[:2]] = 1
    return w


@pytest.mark.parametrize("code", ["one_vs_all", "one_vs_one", "sparse_random", "nary"])
def test_integer_weights_equal_repeated_rows_logistic(iris, code):
    X, y = iris
    X = (X - X.mean(axis=0)) / X.std(axis=0)       # standardised: lbfgs converges fast
    w = _weights(y)
    base = LogisticRegression(tol=1e-10, max_iter=5000)
    kw = dict(code=code, random_state=0, N=3 if code == "nary" else 2)
    a = ECOCClassifier(base, **kw).fit(X, y, sample_weight=w)
    b = ECOCClassifier(base, **kw).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert_array_equal(a.code_, b.code_)
    for ea, eb in zip(a.estimators_, b.estimators_):
        assert_allclose(ea.coef_, eb.coef_, rtol=1e-4, atol=1e-5)
        assert_allclose(ea.intercept_, eb.intercept_, rtol=1e-4, atol=1e-5)
    assert_array_equal(a.predict(X), b.predict(X))
    # and the weights matter: unweighted gives other learners
    c = ECOCClassifier(base, **kw).fit(X, y)
    assert not np.allclose(a.estimators_[0].coef_, c.estimators_[0].coef_, atol=1e-3)


@pytest.mark.parametrize("measure", ["chi2", "ig", "delta"])
def test_integer_weights_equal_repeated_rows_with_selection(digits, measure):
    X, y = digits
    w = _weights(y, seed=1)
    kw = dict(code="dense_random", n_columns=12, random_state=0, feature_selection=(measure, 9))
    a = ECOCClassifier(MultinomialNB(), **kw).fit(X, y, sample_weight=w)
    b = ECOCClassifier(MultinomialNB(), **kw).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    for ia, ib in zip(a.feature_indices_, b.feature_indices_):
        assert_array_equal(ia, ib)
    assert_allclose(a.learner_arrays()["weights"], b.learner_arrays()["weights"], rtol=1e-10)
    assert_array_equal(a.predict(X), b.predict(X))


def test_weights_are_sliced_to_the_rows_a_ternary_column_trains_on(iris):
    X, y = iris
    w = np.arange(1.0, y.shape[0] + 1)
    clf = ECOCClassifier(_Recorder(), code="one_vs_one").fit(X, y, sample_weight=w)
    for j, e in enumerate(clf.estimators_):
        rows = np.flatnonzero(clf.code_[y, j] >= 0)
        assert e.n_rows_ == rows.size == 100
        assert_array_equal(e.sample_weight_, w[rows])


def test_sample_weight_refused_or_validated(iris):
    X, y = iris
    with pytest.raises(ValueError, match="KNeighborsClassifier's fit does not accept "
                                         "sample_weight"):
        ECOCClassifier(KNeighborsClassifier(), code="one_vs_all").fit(X, y,
                                                                      sample_weight=np.ones(150))
    clf = ECOCClassifier(LogisticRegression(), code="one_vs_all")
    with pytest.raises(ValueError, match="Negative values in data passed to `sample_weight`"):
        clf.fit(X, y, sample_weight=-np.ones(150))
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(149,\), expected \(150,\)"):
        clf.fit(X, y, sample_weight=np.ones(149))
    with pytest.raises(ValueError, match="enable_metadata_routing"):
        clf.fit(X, y, tag=np.ones(150))


# ------------------------------------------------------------- metadata routing
def test_metadata_routing_slices_every_requested_metadata(iris):
    X, y = iris
    w = np.arange(150.0)
    tag = np.arange(150) % 7
    with sklearn.config_context(enable_metadata_routing=True):
        base = _Recorder().set_fit_request(sample_weight=True, tag=True)
        clf = ECOCClassifier(base, code="one_vs_one").fit(X, y, sample_weight=w, tag=tag)
        assert clf.get_metadata_routing().consumes("fit", ["sample_weight", "tag", "x"]) == \
            {"sample_weight", "tag"}
    for j, e in enumerate(clf.estimators_):
        rows = np.flatnonzero(clf.code_[y, j] >= 0)
        assert_array_equal(e.sample_weight_, w[rows])
        assert_array_equal(e.tag_, tag[rows])


def test_metadata_routing_refuses_unrequested_and_honours_false(iris):
    X, y = iris
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(UnsetMetadataPassedError, match="sample_weight.*LogisticRegression"):
            ECOCClassifier(LogisticRegression(), code="one_vs_all").fit(
                X, y, sample_weight=np.ones(150))
        # explicitly not requested and nobody else consumes it: refused, as in
        # scikit-learn's own meta-estimators
        base = _Recorder().set_fit_request(sample_weight=False, tag=True)
        with pytest.raises(TypeError, match="sample_weight.*not routed to any object"):
            ECOCClassifier(base, code="one_vs_all").fit(X, y, sample_weight=np.ones(150))
        clf = ECOCClassifier(base, code="one_vs_all").fit(X, y, tag=np.ones(150))
        assert all(e.sample_weight_ is None and e.tag_.shape == (150,)
                   for e in clf.estimators_)


def test_routed_weights_equal_direct_weights_and_reach_through_cross_validate(iris):
    X, y = iris
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    w = _weights(y, seed=2)
    base = LogisticRegression(tol=1e-10, max_iter=5000)
    direct = ECOCClassifier(base, code="one_vs_all").fit(X, y, sample_weight=w)
    with sklearn.config_context(enable_metadata_routing=True):
        routed_base = LogisticRegression(tol=1e-10, max_iter=5000).set_fit_request(
            sample_weight=True)
        routed = ECOCClassifier(routed_base, code="one_vs_all").fit(X, y, sample_weight=w)
        cv = cross_validate(ECOCClassifier(routed_base, code="one_vs_all"), X, y, cv=3,
                            params={"sample_weight": w}, return_estimator=True)
    for a, b in zip(direct.estimators_, routed.estimators_):
        assert_allclose(a.coef_, b.coef_)
    assert len(cv["estimator"]) == 3 and np.all(cv["test_score"] > 0.5)


# ------------------------------------------------------------- degenerate codes
def test_degenerate_explicit_code_warns_naming_rows_and_columns(iris):
    code = [[0, 1, 1, 0], [0, 0, 1, 1], [0, 0, 1, 1]]     # rows 1, 2 equal; cols 0, 2 constant
    with pytest.warns(UserWarning) as rec:
        check_code_matrix(code)
    text = " | ".join(str(r.message) for r in rec)
    assert "identical rows (0-based pairs) [(1, 2)]" in text
    assert "columns [0, 2] give every used class the same symbol" in text
    X, y = iris
    with pytest.warns(UserWarning, match=r"\[\(1, 2\)\]"):
        ECOCClassifier(LogisticRegression(max_iter=500), code=code).fit(X, y)
    # a ternary column is constant on the classes it uses
    with pytest.warns(UserWarning, match=r"columns \[1\]"):
        check_code_matrix([[0, 1], [1, -1], [0, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_code_matrix([[0, 1], [1, 0], [1, 1]])          # clean: silent
        check_code_matrix(code, warn=False)


# ------------------------------------------------------------- memory guards
@pytest.mark.parametrize("design, c, n, kw", [
    ("one_vs_all", 10 ** 6, None, {}),
    ("one_vs_one", 10 ** 5, None, {}),
    ("dense_random", 10 ** 6, None, {}),
    ("dense_random", 40, 10 ** 6, {}),
    ("sparse_random", 30, 10 ** 6, {}),
    ("nary_random", 10 ** 5, None, {"N": 3}),
    ("nary", 10 ** 5, None, {"N": 3}),
    ("hadamard", 10 ** 6, None, {}),
    ("annealed", 10 ** 5, None, {}),
])
def test_code_designs_refuse_huge_sizes_before_allocating(design, c, n, kw):
    with pytest.raises(ValueError, match=rf"{c} x \d+ code needs about [\d,]+ bytes .* above "
                                         r"the limit of 2,147,483,648 bytes"):
        make_code(design, c, n, **kw)


@pytest.mark.parametrize("design, c, n, nbytes", [
    ("one_vs_all", 100, None, 100 * 100),
    ("exhaustive", 12, None, 12 * 2047 + 16 * 2047),
    ("bch", 40, 63, None),
])
def test_memory_limit_is_the_estimate(monkeypatch, design, c, n, nbytes):
    M = make_code(design, c, n, random_state=0)          # fits under the default limit
    if nbytes is None:
        nbytes = M.size                                   # the guard prices more than the result
    monkeypatch.setattr(ecoc_memory, "MAX_CODE_BYTES", nbytes - 1)
    with pytest.raises(ValueError, match=f"{design}: a {c} x {M.shape[1]} code"):
        make_code(design, c, n, random_state=0)


@pytest.mark.parametrize("make, fit_shape, match", [
    (lambda: SSBC(sketch_size=10 ** 9), (50, 4), "SSBC: sketch_size=1000000000"),
    (lambda: SSBC(n_bits=8, n_anchors=10 ** 7), (50, 4), "n_anchors=10000000"),
    (lambda: FrequentDirections(ell=10 ** 9), (50, 4), "ell=1000000000"),
    (lambda: SignRandomProjection(10 ** 9), (50, 4), "a 4 x 1000000000 projection"),
    (lambda: PCASign(2), (3, 30000), "30000 x 30000 scatter matrix"),
    (lambda: ITQ(2), (3, 30000), "30000 x 30000 scatter matrix"),
    (lambda: SpectralHashing(2), (3, 30000), "30000 x 30000 scatter matrix"),
])
def test_hashers_refuse_huge_state_at_fit(make, fit_shape, match):
    X = np.zeros(fit_shape)
    with pytest.raises(ValueError, match=f"{match}.*bytes.*MAX_STATE_BYTES"):
        make().fit(X)


def test_hasher_memory_guard_reads_the_limit(monkeypatch):
    X = np.random.default_rng(0).normal(size=(40, 3))
    SSBC(4, 8, 6, random_state=0).fit(X)
    monkeypatch.setattr(hashing_base, "MAX_STATE_BYTES", 1000)
    with pytest.raises(ValueError, match="above the limit of 1,000 bytes"):
        SSBC(4, 8, 6, random_state=0).fit(X)


# ------------------------------------------------------------- feature names
_HASHERS = [
    (lambda o: SSBC(12, 16, 14, output=o, random_state=0), "ssbc"),
    (lambda o: SignRandomProjection(12, output=o, random_state=0), "signrandomprojection"),
    (lambda o: PCASign(5, output=o), "pcasign"),
    (lambda o: ITQ(5, output=o, random_state=0), "itq"),
    (lambda o: SpectralHashing(12, output=o, random_state=0), "spectralhashing"),
]


@pytest.mark.parametrize("make, prefix", _HASHERS)
@pytest.mark.parametrize("output", ["bits", "uint8", "uint64"])
def test_hashers_name_their_output_columns(make, prefix, output):
    X = np.random.default_rng(0).normal(size=(80, 6))
    h = make(output)
    with pytest.raises(NotFittedError):
        h.get_feature_names_out()
    Z = h.fit(X).transform(X)
    names = h.get_feature_names_out()
    assert names.tolist() == [f"{prefix}{i}" for i in range(Z.shape[1])]
    fd = FrequentDirections(3).fit(X)
    assert fd.get_feature_names_out().tolist() == [f"frequentdirections{i}" for i in range(3)]


@pytest.mark.parametrize("make, prefix", _HASHERS)
def test_set_output_pandas(make, prefix):
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(1).normal(size=(80, 6))
    df_in = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    h = make("bits").set_output(transform="pandas")
    out = h.fit(df_in).transform(df_in)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(h.get_feature_names_out())
    assert_array_equal(out.to_numpy(), make("bits").fit(X).transform(X))
    assert isinstance(h.fit_transform(df_in), pd.DataFrame)


# ------------------------------------------------------------- NaN parameters
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_binary_naive_bayes_refuses_nan_and_inf_binarize(value):
    X = np.array([[0.2, 0.9], [0.7, 0.1]])
    with pytest.raises(ValueError, match="'binarize' parameter.*range \\(-inf, inf\\)"):
        BinaryNaiveBayes(binarize=value).fit(X, [0, 1])


def test_binarize_reference():
    rng = np.random.default_rng(0)
    X = rng.random((60, 5))
    y = (X[:, 0] > 0.5).astype(int)
    a = BinaryNaiveBayes(binarize=0.3).fit(X, y)
    b = BinaryNaiveBayes().fit((X > 0.3).astype(float), y)
    assert_allclose(a.decision_function(X), b.decision_function((X > 0.3).astype(float)))


def test_other_float_parameters_refuse_nan_and_take_numpy_floats():
    with pytest.raises(TypeError, match="neighbor must be an integer; got nan"):
        auto_sigma(np.eye(3), neighbor=math.nan)
    with pytest.raises(ValueError, match="t0 must be a positive finite number; got nan"):
        annealed(5, random_state=0, n_temps=2, t0=math.nan)
    with pytest.raises(ValueError, match="p_add must be in"):
        annealed(5, random_state=0, n_temps=2, p_add=math.nan)
    a = annealed(5, 6, random_state=0, n_temps=3, t0=np.float32(0.2), p_flip=np.float32(0.9))
    b = annealed(5, 6, random_state=0, n_temps=3, t0=0.2, p_flip=float(np.float32(0.9)))
    assert_array_equal(a, b)
    with pytest.raises(ValueError, match="p_unused must be in"):
        make_code("sparse_random", 5, p_unused=math.nan)
    with pytest.raises(ValueError, match=r"K as a fraction must be in \(0, 1\]; got nan"):
        ECOCClassifier(LogisticRegression(), feature_selection=("delta", math.nan)).fit(
            np.eye(4), [0, 1, 0, 1])


def test_exact_decoding_warns_about_identical_rows_by_name():
    from edgecode.ecoc import codeword_decoding_probabilities, decoding_probabilities
    code = [[0, 0, 1], [1, 1, 0], [0, 0, 1], [1, 0, 0]]
    with pytest.warns(UserWarning, match=r"identical rows \(0-based pairs\) \[\(0, 2\)\]"):
        p = codeword_decoding_probabilities(code, 0.1)
    assert p[2] == 0.0            # the later duplicate is never decoded (ties="first")
    with pytest.warns(UserWarning, match=r"\[\(0, 2\)\]"):
        decoding_probabilities(code, 0.1, [[0, 0, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        codeword_decoding_probabilities([[0, 0, 1], [1, 1, 0], [0, 1, 1]], 0.1)


def test_distance_tables_are_priced_before_allocating(monkeypatch):
    from edgecode.ecoc import check_properties, column_distance, pairwise_distances
    wide = np.zeros((2, 20000), np.int8)
    wide[1, ::2] = 1
    for f in (column_distance, check_properties, lambda M: pairwise_distances(M, axis=1)):
        with pytest.raises(ValueError, match=r"the 20000 x 20000 table of pairwise distances "
                                             r"between 20000 columns needs about 6,400,000,000"):
            f(wide)
    M = make_code("dense_random", 6, random_state=0)
    assert pairwise_distances(M).shape == (6, 6)
    monkeypatch.setattr(ecoc_memory, "MAX_CODE_BYTES", 16 * 36 - 1)
    with pytest.raises(ValueError, match="between 6 rows"):
        pairwise_distances(M)
