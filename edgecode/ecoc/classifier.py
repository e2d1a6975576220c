"""Error-correcting output codes over an alphabet of N symbols (seeds 001, 003).

:class:`ECOCClassifier` trains one base learner per column of a coding matrix
``M`` (c classes x n columns).  Entries are symbols ``0 .. N-1`` (binary codes
use ``{0, 1}``); ``-1`` marks a class the column's learner does not see
(ternary / sparse codes).  Column j merges the classes with equal symbol into
superclasses: a binary column trains a two-class learner, an N-ary column an
N-class learner on the superclasses, and a ternary column only on the rows
of the classes it uses.

Prediction runs every learner, giving a word of n symbols, and decodes it to
the class whose codeword (row of ``M``) is nearest:

* ``"hamming"`` -- hard symbols; the distance counts the used positions
  where the symbols differ, plus 1/2 for every position the class does not
  use (Allwein, Schapire & Singer 2000), so ``d(x, r) = #{j : M[r, j] >= 0,
  s_j(x) != M[r, j]} + #{j : M[r, j] = -1} / 2``.  **Ties go to the lowest
  class index** (the first row of ``M``, i.e. ``classes_[0]`` before
  ``classes_[1]``).
* ``"loss"`` -- loss-based decoding with the exponential loss on learner
  margins: for a column whose learner gives scores ``z_s(x)`` over its
  symbols (``decision_function``; else ``log predict_proba``; else the
  one-hot of ``predict``), the margin of symbol s is ``z_s - max_{t != s}
  z_t`` (a binary ``decision_function`` z gives margins ``+z`` for the
  positive and ``-z`` for the negative symbol), clipped to [-30, 30], and
  ``d(x, r) = sum_j exp(-margin_{M[r, j]})`` with ``exp(0) = 1`` for unused
  entries.
* ``"euclidean"`` -- as scikit-learn's ``OutputCodeClassifier``: a two-class
  learner contributes its ``decision_function`` against codes ``-1 / +1``
  (or ``predict_proba[:, 1]`` against ``0 / 1``), unused entries sit at the
  midpoint (0, resp. 1/2); a learner with more classes contributes its
  probability vector (or the one-hot of ``predict``) against the one-hot of
  the symbol (unused: the uniform vector).

Fast predict path (Hamming decoding): the learners are flattened once, after
``fit``, by :mod:`edgecode.ecoc.learners` (the table of supported learner
families, which the exporters read too): when every learner is linear
(``LinearClassifierMixin``: logistic regression, linear SVM, SGD, ridge,
perceptron; or ``MultinomialNB``), all of them are evaluated by **one stacked
matrix product** ``X W + b``; when every learner is a decision tree, the trees
become node arrays walked by a numba kernel.  The symbols of
a binary code are packed into uint64 words and decoded by popcount; N-ary
symbols are compared directly.  Other learners are called once per batch.
"""

import sys
import time
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state
from sklearn.utils._metadata_requests import _routing_enabled
from sklearn.utils._param_validation import (HasMethods, Interval, InvalidParameterError,
                                             StrOptions)
from sklearn.utils._tags import get_tags
from sklearn.utils.metadata_routing import (MetadataRouter, MethodMapping, _raise_for_params,
                                            process_routing)
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (_check_method_params, _check_sample_weight,
                                      check_is_fitted, check_non_negative, has_fit_parameter,
                                      validate_data)

from . import feature_selection as _fs
from .quality import warn_degenerate
from ._kernels.predict import _hamming_packed, _hamming_symbols, _pack_bits
from .learners import ConstantSymbol, flatten_learners

__all__ = ["ECOCClassifier", "check_code_matrix"]

#: Margins of loss-based decoding are clipped to [-MARGIN_CLIP, MARGIN_CLIP].
MARGIN_CLIP = 30.0


def check_code_matrix(code, n_classes=None, *, name="code", warn=True):
    """Validate an explicit coding matrix; return it as int16 and its alphabet size.

    Parameters
    ----------
    code : array-like of int, shape (n_classes, n_columns)
        Entries ``-1`` (class unused by the column) or symbols ``0 .. N-1``.
    n_classes : int, optional
        Required number of rows.
    name : str, default="code"
        How messages call the matrix.
    warn : bool, default=True
        Warn (``UserWarning``) about a degenerate but usable matrix: identical
        rows (those classes cannot be told apart; the message names the row
        pairs) and columns whose used entries all hold one symbol (their
        learners are constant; the message names the columns).

    Returns
    -------
    code : ndarray of int16, C-contiguous
    n_symbols : int
        ``max(2, code.max() + 1)``.

    Raises
    ------
    ValueError
        Wrong shape, non-integer entries, entries below -1 or above 32766, a
        row that uses no column.

    Warns
    -----
    UserWarning
        Identical rows or constant columns (when ``warn``).

    Examples
    --------
    >>> check_code_matrix([[0, 1], [1, -1], [2, 0]])[1]
    3
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     _ = check_code_matrix([[0, 1, 1], [0, 1, 0], [0, 1, 0]])
    >>> for m in w: print(m.message)
    code has identical rows (0-based pairs) [(1, 2)]: those classes cannot be told apart and the lowest class index wins
    code columns [0, 1] give every used class the same symbol: their learners are constant (they carry no information)
    """
    try:
        arr = np.asarray(code)
    except Exception as exc:
        raise TypeError(f"{name} must be a design name or an integer matrix; got "
                        f"{type(code).__name__}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be a design name or an integer matrix; got dtype "
                        f"{arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be a matrix of shape (n_classes >= 2, n_columns >= 1); "
                         f"got shape {arr.shape}")
    if n_classes is not None and arr.shape[0] != n_classes:
        raise ValueError(f"{name} has {arr.shape[0]} rows but y has {n_classes} classes; "
                         "one codeword (row) per class is needed")
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ValueError(f"{name} entries must be integers (-1 = unused, 0..N-1 = symbols)")
    bad = (arr < -1) | (arr > 32766)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"{name}[{i}, {j}] must be -1 (unused) or a symbol in 0..32766; "
                         f"got {arr[i, j]}")
    out = np.ascontiguousarray(arr, dtype=np.int16)
    empty = np.flatnonzero((out < 0).all(axis=1))
    if empty.size:
        raise ValueError(f"{name} row {empty[0]} uses no column (all -1): that class could "
                         "never be predicted")
    if warn:
        warn_degenerate(out, name=name, stacklevel=3)
    return out, max(2, int(out.max()) + 1)


def _fit_column(estimator, X, y_idx, column, measure, k, params, j, pairwise=False):
    """Train the learner of one column; returns (learner, selected features or None).

    ``params`` (fit metadata such as ``sample_weight``) are sliced to the rows
    the column trains on, like X. With a ``pairwise`` learner (a precomputed
    kernel: X is samples x training samples) a ternary column trains on the
    kernel of its rows against its rows, and the rows are returned as the
    columns of X it reads, so prediction gives it the kernel against them.
    """
    target = column[y_idx]
    rows = np.flatnonzero(target >= 0)
    idx = None
    if rows.size != target.shape[0]:
        params = _check_method_params(X, params, indices=rows)
        X = X[rows][:, rows] if pairwise else X[rows]
        target = target[rows]
        if pairwise:
            idx = rows
    symbols = np.unique(target)
    if measure is not None:
        idx = _fs.select_top_k(X, target, measure, k, sample_weight=params.get("sample_weight"))
        X = X[:, idx]
    if symbols.shape[0] == 1:
        return ConstantSymbol(symbols[0]), idx
    fitted = estimator.fit(X, target, **params)
    if fitted is None:
        fitted = estimator
    if not hasattr(fitted, "classes_"):
        raise TypeError(f"the learner of code column {j} ({type(estimator).__name__}) has no "
                        "classes_ after fit: ECOCClassifier needs a classifier as its "
                        "estimator")
    return fitted, idx


def _takes_nan(estimator):
    """The base learner's ``allow_nan`` tag; for a Pipeline, also its first step's.

    scikit-learn's Pipeline does not pass its first step's ``allow_nan`` on,
    yet the data (NaN included) goes to that step: ``make_pipeline(SimpleImputer(),
    LogisticRegression())`` takes NaN.
    """
    try:
        if isinstance(estimator, Pipeline):
            first = next((e for _, e in estimator.steps if e not in (None, "passthrough")),
                         None)
            if first is not None and get_tags(first).input_tags.allow_nan:
                return True
        return bool(get_tags(estimator).input_tags.allow_nan)
    except Exception:
        return False


def _check_classifier(estimator):
    """Refuse a base estimator that declares itself a regressor, clusterer, transformer...

    scikit-learn's ``estimator_type`` tag decides; an estimator that declares no
    type (``None``) is accepted and must show ``classes_`` after fit.
    """
    try:
        kind = get_tags(estimator).estimator_type
    except Exception:  # no tags at all (not a scikit-learn estimator)
        kind = None
    if kind not in (None, "classifier"):
        raise InvalidParameterError(
            f"ECOCClassifier needs a classifier as its estimator (each column's learner "
            f"predicts symbols); got {type(estimator).__name__}, whose estimator_type tag is "
            f"{kind!r}")


def _column_X(X, idx):
    return X if idx is None else X[:, idx]


class ECOCClassifier(ClassifierMixin, BaseEstimator):
    """Multi-class classifier from binary, ternary or N-ary error-correcting output codes.

    Parameters
    ----------
    estimator : estimator object
        Base learner with ``fit`` and ``predict``, cloned once per column.
        Binary columns train it on two superclasses, N-ary columns on N.
    code : str or array-like of shape (n_classes, n_columns), default="nary"
        A design name of :func:`edgecode.ecoc.make_code` (``"one_vs_all"``,
        ``"one_vs_one"``, ``"exhaustive"``, ``"dense_random"``,
        ``"sparse_random"``, ``"hadamard"``, ``"nary"``, ``"nary_random"``,
        ``"bch"``, ``"annealed"``) or an explicit matrix: row r is the
        codeword of ``classes_[r]``, entries ``0 .. N-1`` or ``-1`` (unused).
    n_columns : int or None, default=None
        Code length for a design name (``None``: the design's default).
        Ignored for an explicit matrix.
    N : int, default=2
        Alphabet size for a design name. For an explicit matrix the alphabet
        is ``max(2, code.max() + 1)`` and ``N`` is ignored.
    decoding : {"hamming", "loss", "euclidean"}, default="hamming"
        How a word of learner outputs is mapped to a class (see Notes).
    feature_selection : None or tuple (measure, K), default=None
        Per-column feature selection (seed 003): ``measure`` in ``"chi2"``,
        ``"ig"``, ``"delta"``; ``K`` an int (features kept) or a float in
        (0, 1] (fraction of the features, rounded up). Each column keeps its
        own top-K terms for its superclass split, scored on term presence
        (``x != 0``), weighted by ``sample_weight`` when given; see
        :mod:`edgecode.ecoc.feature_selection`. ``"chi2"`` is a test on term
        counts and, like :func:`sklearn.feature_selection.chi2`, needs
        non-negative X (fit refuses negative values).
    n_jobs : int or None, default=None
        Columns trained in parallel through joblib (``None``: 1, ``-1``: all
        cores, or any joblib backend in a ``parallel_config`` context).
    random_state : int, RandomState instance or None, default=None
        Seeds the code design and, for base learners with a ``random_state``
        left at ``None``, one derived seed per column.
    verbose : int, default=0
        Progress of :meth:`fit` on stderr: a line per trained column with the
        elapsed time and an ETA (with ``n_jobs`` > 1, joblib's progress lines).
        A pairwise base estimator (a precomputed kernel, e.g.
        ``SVC(kernel="precomputed")``) is supported: ``fit`` takes the
        square kernel of the training rows, ``predict`` the kernel of the
        test rows against them, and a ternary column's learner sees only the
        kernel of the rows it trains on.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    code_ : ndarray of int16, shape (n_classes, n_columns)
        The coding matrix used (row r = codeword of ``classes_[r]``).
    n_symbols_ : int
        Alphabet size N of ``code_``.
    estimators_ : list of n_columns fitted learners
        Learner j predicts the symbol of column j (its ``classes_`` are the
        symbols the column uses). A column whose used classes share one
        symbol gets a constant learner (with a warning).
    feature_indices_ : list of ndarray or None
        Per column, the sorted feature indices its learner sees
        (``None`` without feature selection).
    fast_path_ : {"linear", "tree", "generic"}
        How :meth:`predict` evaluates the learners (see Notes).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when fitted on a DataFrame with string column names.

    See Also
    --------
    sklearn.multiclass.OutputCodeClassifier : random binary codes, Euclidean decoding.
    edgecode.ecoc.feature_selection : the three selection measures.

    Notes
    -----
    Seed 001 (N-ary ECOC, optimal N-ary Sylvester matrices) and seed 003
    (ECOC for text with simulated-annealing codes and per-dichotomizer
    feature selection). Decoding rules, including the tie rule (lowest class
    index wins), are in the module docstring of
    :mod:`edgecode.ecoc.classifier`.

    With Hamming decoding :meth:`decision_function` returns ``-d(x, r)``
    (negative distances, shape (n_samples, n_classes)); for two classes it
    returns ``d(x, 0) - d(x, 1)`` (positive means ``classes_[1]``), as
    scikit-learn expects of binary classifiers.

    References
    ----------
    Dietterich & Bakiri, JAIR 2 (1995); Allwein, Schapire & Singer, JMLR 1
    (2000).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from edgecode.ecoc.classifier import ECOCClassifier
    >>> X = np.array([[0., 0], [0, 1], [5, 0], [5, 1], [0, 9], [1, 9]])
    >>> y = np.array([0, 0, 1, 1, 2, 2])
    >>> code = [[0, 0, 1], [1, 0, 0], [0, 1, 0]]      # one-vs-all, 3 columns
    >>> clf = ECOCClassifier(LogisticRegression(), code=code).fit(X, y)
    >>> clf.predict([[5, 0.5], [0.5, 8]]).tolist(), clf.fast_path_
    ([1, 2], 'linear')
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "code": [str, "array-like"],
        "n_columns": [None, Interval(Integral, 1, None, closed="left")],
        "N": [Interval(Integral, 2, None, closed="left")],
        "decoding": [StrOptions({"hamming", "loss", "euclidean"})],
        "feature_selection": [None, tuple, list],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, estimator, *, code="nary", n_columns=None, N=2, decoding="hamming",
                 feature_selection=None, n_jobs=None, random_state=None, verbose=0):
        self.estimator = estimator
        self.code = code
        self.n_columns = n_columns
        self.N = N
        self.decoding = decoding
        self.feature_selection = feature_selection
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base = get_tags(self.estimator)
        tags.input_tags.sparse = base.input_tags.sparse
        # NaN only reaches learners that take it (e.g. a pipeline with an imputer,
        # scikit-learn's trees); predict then uses the learners' own predict
        tags.input_tags.allow_nan = _takes_nan(self.estimator)
        # a precomputed kernel (SVC(kernel="precomputed")): X is samples x training samples
        tags.input_tags.pairwise = base.input_tags.pairwise
        tags.input_tags.positive_only = self._needs_positive(base)
        if base.classifier_tags is not None:   # a weak learner makes a weak ensemble
            tags.classifier_tags.poor_score = base.classifier_tags.poor_score
        return tags

    def _pairwise(self):
        try:
            return bool(get_tags(self.estimator).input_tags.pairwise)
        except Exception:
            return False

    def _needs_positive(self, base_tags=None):
        """Non-negative X needed: the base learner says so, or chi2 selection."""
        if base_tags is None:
            try:
                base_tags = get_tags(self.estimator)
            except Exception:
                base_tags = None
        base = bool(base_tags is not None and base_tags.input_tags.positive_only)
        return base or self._chi2()

    def _chi2(self):
        fs = self.feature_selection
        return isinstance(fs, (tuple, list)) and len(fs) == 2 and \
            isinstance(fs[0], str) and fs[0] == "chi2"

    def get_metadata_routing(self):
        """How fit metadata is routed: to ``fit`` of every column's learner.

        With ``sklearn.set_config(enable_metadata_routing=True)``, metadata
        given to :meth:`fit` (``sample_weight`` or others) reaches each
        learner's ``fit`` when the base estimator requests it
        (``estimator.set_fit_request(sample_weight=True)``); sample-aligned
        metadata is sliced to the rows the column trains on.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter

        Examples
        --------
        >>> import sklearn
        >>> from sklearn.linear_model import LogisticRegression
        >>> with sklearn.config_context(enable_metadata_routing=True):
        ...     base = LogisticRegression().set_fit_request(sample_weight=True)
        ...     r = ECOCClassifier(base).get_metadata_routing()
        ...     print(r.consumes("fit", ["sample_weight", "groups"]))
        {'sample_weight'}
        """
        return MetadataRouter(owner=self).add(
            estimator=self.estimator,
            method_mapping=MethodMapping().add(caller="fit", callee="fit"))

    # ------------------------------------------------------------------ fit
    def _selection(self):
        fs = self.feature_selection
        if fs is None:
            return None, None
        if len(fs) != 2:
            raise ValueError("feature_selection must be None or a pair (measure, K), measure "
                             f"in {_fs.MEASURES}; got {fs!r}")
        measure, k = fs
        if measure not in _fs.MEASURES:
            raise ValueError(f"feature_selection measure must be one of {_fs.MEASURES}; "
                             f"got {measure!r}")
        return measure, _fs.resolve_k(k, self.n_features_in_)

    def _fit_metadata(self, X, sample_weight, fit_params):
        """The metadata every learner's ``fit`` gets (before slicing to a column's rows)."""
        if _routing_enabled():
            if sample_weight is not None:
                fit_params = dict(fit_params, sample_weight=sample_weight)
            params = dict(process_routing(self, "fit", **fit_params).estimator.fit)
        elif sample_weight is None:
            params = {}
        else:
            if not has_fit_parameter(self.estimator, "sample_weight"):
                raise ValueError(
                    f"sample_weight was given but the base estimator "
                    f"{type(self.estimator).__name__}'s fit does not accept sample_weight; "
                    "use a learner that does, drop the weights, or route metadata with "
                    "sklearn.set_config(enable_metadata_routing=True)")
            params = {"sample_weight": sample_weight}
        if params.get("sample_weight") is not None:
            params["sample_weight"] = _check_sample_weight(params["sample_weight"], X,
                                                           ensure_non_negative=True)
        return params

    def _make_code(self, n_classes, seed):
        if isinstance(self.code, str):
            from .codes import make_code          # the code designs (another module)
            M = make_code(self.code, n_classes, self.n_columns, N=self.N, random_state=seed)
            code, n_sym = check_code_matrix(M, n_classes, name=f"make_code({self.code!r})")
            return code, max(n_sym, int(self.N))
        return check_code_matrix(self.code, n_classes)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Train one learner per column of the code.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights. Each column's learner gets the weights
            of the rows it trains on (all rows for a binary or N-ary column;
            the rows of the classes it uses for a ternary one), and per-column
            feature selection counts weighted rows. The base estimator's
            ``fit`` must accept ``sample_weight`` (else ValueError). With
            metadata routing enabled, the weights are routed like any other
            metadata (the base estimator must request them).
        **fit_params : dict
            Other metadata for the learners' ``fit``; only with
            ``sklearn.set_config(enable_metadata_routing=True)`` (see
            :meth:`get_metadata_routing`).

        Returns
        -------
        self

        Examples
        --------
        Integer weights act as repeated rows:

        >>> import numpy as np
        >>> from sklearn.naive_bayes import MultinomialNB
        >>> X = np.array([[3., 0], [2, 1], [0, 3], [1, 2], [1, 1]])
        >>> y = np.array([0, 0, 1, 1, 2])
        >>> w = np.array([1, 2, 1, 1, 3])
        >>> a = ECOCClassifier(MultinomialNB(), code="one_vs_all").fit(X, y, sample_weight=w)
        >>> b = ECOCClassifier(MultinomialNB(), code="one_vs_all").fit(np.repeat(X, w, 0),
        ...                                                           np.repeat(y, w))
        >>> bool(np.allclose(a.decision_function(X), b.decision_function(X)))
        True
        """
        _raise_for_params(fit_params, self, "fit")
        _check_classifier(self.estimator)
        X, y = validate_data(self, X, y, accept_sparse=["csr", "csc"], dtype="numeric",
                             ensure_all_finite=self._finite_rule())
        if self._needs_positive():
            why = "chi2 feature selection" if self._chi2() else \
                f"base estimator {type(self.estimator).__name__}"
            check_non_negative(X, f"ECOCClassifier (its {why} needs X >= 0)")
        metadata = self._fit_metadata(X, sample_weight, fit_params)
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(f"y has only one class ({classes[0]!r}); ECOCClassifier needs "
                             "at least two classes")
        rng = check_random_state(self.random_state)
        measure, k = self._selection()
        code, n_sym = self._make_code(classes.shape[0], int(rng.randint(2**31 - 1)))
        m = code.shape[1]
        seeds = rng.randint(2**31 - 1, size=m)
        if sp.issparse(X):
            X = X.tocsr()
        learners = []
        for j in range(m):
            est = clone(self.estimator)
            params = est.get_params()
            if "random_state" in params and params["random_state"] is None:
                est.set_params(random_state=int(seeds[j]))
            learners.append(est)
        pairwise = self._pairwise()
        if pairwise:
            if measure is not None:
                raise ValueError("feature_selection cannot be combined with a pairwise base "
                                 f"estimator ({type(self.estimator).__name__} on a precomputed "
                                 "kernel): its columns are training samples, not features")
            if X.shape[0] != X.shape[1]:
                raise ValueError(f"the base estimator {type(self.estimator).__name__} is "
                                 "pairwise (a precomputed kernel): X must be the square "
                                 f"n_samples x n_samples kernel of the training rows; got "
                                 f"shape {X.shape}")
        if self.verbose and self.n_jobs in (None, 1):
            fitted = []
            t0 = time.perf_counter()
            for j in range(m):     # one process: a line per column, with an ETA
                fitted.append(_fit_column(learners[j], X, y_idx, code[:, j], measure, k,
                                          metadata, j, pairwise))
                el = time.perf_counter() - t0
                print(f"[ECOCClassifier] fit column {j + 1}/{m} "
                      f"({type(self.estimator).__name__}), {el:.1f}s elapsed, ETA "
                      f"{el / (j + 1) * (m - j - 1):.1f}s", file=sys.stderr, flush=True)
        else:
            fitted = Parallel(n_jobs=self.n_jobs, verbose=self.verbose)(
                delayed(_fit_column)(learners[j], X, y_idx, code[:, j], measure, k, metadata,
                                     j, pairwise)
                for j in range(m))
        # identical rows and constant columns were reported by check_code_matrix
        self.classes_ = classes
        self.code_ = code
        self.n_symbols_ = n_sym
        self.estimators_ = [e for e, _ in fitted]
        self.feature_indices_ = [idx for _, idx in fitted]
        self._build_fast_path()
        return self

    # ------------------------------------------------------- fast predict
    def _build_fast_path(self):
        code = self.code_
        c, m = code.shape
        self._unused2 = np.ascontiguousarray((code < 0).sum(axis=1), dtype=np.int64)
        self._binary = self.n_symbols_ == 2
        if self._binary:
            w = (m + 63) // 64
            self._code_packed = np.zeros((c, w), np.uint64)
            self._used_packed = np.zeros((c, w), np.uint64)
            _pack_bits(np.ascontiguousarray(code == 1, dtype=np.int16), self._code_packed)
            _pack_bits(np.ascontiguousarray(code >= 0, dtype=np.int16), self._used_packed)
        # the learners as flat arrays (edgecode.ecoc.learners): predict's fast path
        # and what the exporters read
        self._flat = flatten_learners(self.estimators_, self.feature_indices_,
                                      self.n_features_in_)
        self.fast_path_ = self._flat.kind

    def learner_arrays(self):
        """The fitted learners as flat float arrays (what exporters quantize).

        Returns
        -------
        dict
            ``kind`` (``"linear"`` or ``"tree"``, a family of
            :data:`edgecode.ecoc.learners.LEARNER_FAMILIES`); ``col_classes``
            (int16, every column's learner symbols, concatenated) and
            ``col_n_classes`` (int64, (n_columns,)). Linear: ``weights``
            (n_features, k), ``bias`` (k,), ``n_out`` (n_columns,) -- column
            j's learner owns the next ``n_out[j]`` scores (0: constant, 1:
            sign of one score, else argmax). Tree: ``feature`` (-1 at leaves),
            ``threshold`` (float64; left iff ``float32(x) <= threshold``),
            ``left``, ``right``, ``leaf`` (symbol at a leaf) per node and
            ``root`` (n_columns,).

        Raises
        ------
        ValueError
            If the learners are neither all linear nor all decision trees, or
            a linear learner's ``coef_`` / ``intercept_`` have shapes that do
            not give one score per class (or one signed score for two
            classes); the message names the learner.
        """
        check_is_fitted(self)
        return self._flat.learner_arrays()

    def _check_X(self, X):
        """The input gate: a cheap path for a plain float64 array, else validate_data."""
        if (type(X) is np.ndarray and X.ndim == 2 and X.dtype == np.float64
                and hasattr(self, "code_") and not hasattr(self, "feature_names_in_")
                and X.shape[1] == self.n_features_in_ and X.shape[0] > 0
                and np.isfinite(X).all()):
            return X
        check_is_fitted(self)
        return validate_data(self, X, reset=False, accept_sparse=["csr", "csc"],
                             dtype="numeric", ensure_all_finite=self._finite_rule())

    def _finite_rule(self):
        """``ensure_all_finite`` of the input gate: NaN passes iff the base learner takes it."""
        return "allow-nan" if _takes_nan(self.estimator) else True

    def predict_codewords(self, X):
        """The learners' outputs: one symbol per column, shape (n_samples, n_columns), int16.

        Uses the fast path (stacked linear scores or flattened trees) when
        available; other learners are each called once on the whole batch.
        """
        X = self._check_X(X)
        return self._symbols(X)

    def _symbols(self, X):
        n, m = X.shape[0], self.code_.shape[1]
        sym = np.empty((n, m), np.int16)
        if not self._flat.symbols(X, sym):
            for j, (e, idx) in enumerate(zip(self.estimators_, self.feature_indices_)):
                sym[:, j] = e.predict(_column_X(X, idx))
        return sym

    def _hamming(self, sym):
        """(labels as class indices, doubled distances) of learner outputs ``sym``."""
        n = sym.shape[0]
        c = self.code_.shape[0]
        idx = np.empty(n, np.int64)
        dist2 = np.empty((n, c), np.int64)
        if self._binary:
            packed = np.empty((n, self._code_packed.shape[1]), np.uint64)
            _pack_bits(sym, packed)
            _hamming_packed(packed, self._code_packed, self._used_packed, self._unused2,
                            idx, dist2)
        else:
            _hamming_symbols(sym, self.code_, self._unused2, idx, dist2)
        return idx, dist2

    def decode(self, codewords):
        """Hamming-nearest class of given learner outputs (e.g. after a noisy channel).

        Parameters
        ----------
        codewords : array-like of int, shape (n_samples, n_columns)
            Symbols ``0 .. N-1``, one per column.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``classes_`` entries; ties go to the lowest class index.
        """
        check_is_fitted(self)
        sym = np.asarray(codewords)
        m = self.code_.shape[1]
        if sym.ndim != 2 or sym.shape[1] != m:
            raise ValueError(f"codewords must have shape (n_samples, {m}); got {sym.shape}")
        if not np.issubdtype(sym.dtype, np.integer) or sym.min(initial=0) < 0 \
                or sym.max(initial=0) >= self.n_symbols_:
            raise ValueError(f"codewords must hold integer symbols in 0..{self.n_symbols_ - 1}")
        idx, _ = self._hamming(np.ascontiguousarray(sym, dtype=np.int16))
        return self.classes_[idx]

    # --------------------------------------------------------- decoding
    def _distances(self, X):
        """(class indices, distances (n, c) float64) under ``self.decoding``."""
        if self.decoding == "hamming":
            idx, dist2 = self._hamming(self._symbols(X))
            return idx, dist2 / 2.0
        if self.decoding == "loss":
            dist = self._loss_distances(X)
        else:
            dist = self._euclidean_distances(X)
        return np.argmin(dist, axis=1), dist

    def _loss_distances(self, X):
        code = self.code_
        n, c = X.shape[0], code.shape[0]
        dist = np.zeros((n, c))
        for j, (e, idx) in enumerate(zip(self.estimators_, self.feature_indices_)):
            symbols = e.classes_
            if symbols.shape[0] == 1:
                margins = np.full((n, 1), MARGIN_CLIP)
            else:
                margins = _margins(_scores(e, _column_X(X, idx), symbols))
            lookup = {int(s): t for t, s in enumerate(symbols)}
            for r in range(c):
                s = int(code[r, j])
                if s < 0:
                    dist[:, r] += 1.0
                else:
                    dist[:, r] += np.exp(-np.clip(margins[:, lookup[s]], -MARGIN_CLIP,
                                                  MARGIN_CLIP))
        return dist

    def _euclidean_distances(self, X):
        code = self.code_
        n, c = X.shape[0], code.shape[0]
        dist = np.zeros((n, c))
        for j, (e, idx) in enumerate(zip(self.estimators_, self.feature_indices_)):
            symbols = e.classes_
            Xj = _column_X(X, idx)
            col = code[:, j]
            if symbols.shape[0] == 1:
                values = np.ones((n, 1))
                targets = (col == symbols[0]).astype(float)[:, None]
                targets[col < 0] = 1.0
            elif symbols.shape[0] == 2:
                if hasattr(e, "decision_function"):
                    values = np.asarray(e.decision_function(Xj), float).reshape(n, 1)
                    lo, mid = -1.0, 0.0
                else:
                    values = np.asarray(e.predict_proba(Xj), float)[:, 1:2]
                    lo, mid = 0.0, 0.5
                targets = np.where(col == symbols[1], 1.0, np.where(col < 0, mid, lo))[:, None]
            else:
                if hasattr(e, "predict_proba"):
                    values = np.asarray(e.predict_proba(Xj), float)
                else:
                    pred = e.predict(Xj)
                    values = (pred[:, None] == symbols[None, :]).astype(float)
                targets = (col[:, None] == symbols[None, :]).astype(float)
                targets[col < 0] = 1.0 / symbols.shape[0]
            # ||values - target_r||^2 for every class r
            dist += ((values[:, None, :] - targets[None, :, :]) ** 2).sum(axis=2)
        return np.sqrt(dist)

    # ------------------------------------------------------------ public
    def predict(self, X):
        """Class of the nearest codeword under ``decoding`` (ties: lowest class index).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X = self._check_X(X)
        idx, _ = self._distances(X)
        return self.classes_[idx]

    def decision_function(self, X):
        """Negative decoding distances, shape (n_samples, n_classes).

        For two classes, shape (n_samples,): ``d(x, classes_[0]) - d(x,
        classes_[1])``, positive when ``classes_[1]`` is predicted.
        """
        X = self._check_X(X)
        _, dist = self._distances(X)
        if dist.shape[1] == 2:
            return dist[:, 0] - dist[:, 1]
        return -dist


def _scores(e, X, symbols):
    """Per-symbol scores (n, k) for loss decoding."""
    n = X.shape[0]
    if hasattr(e, "decision_function"):
        df = np.asarray(e.decision_function(X), dtype=np.float64)
        if df.ndim == 1 or df.shape[1] == 1:
            df = df.reshape(n)
            return np.column_stack([-df / 2.0, df / 2.0])
        return df
    if hasattr(e, "predict_proba"):
        with np.errstate(divide="ignore"):
            return np.log(np.clip(np.asarray(e.predict_proba(X), dtype=np.float64),
                                  1e-300, None))
    pred = e.predict(X)
    return (pred[:, None] == symbols[None, :]).astype(np.float64)


def _margins(z):
    """``margin[:, s] = z[:, s] - max_{t != s} z[:, t]``."""
    k = z.shape[1]
    out = np.empty_like(z)
    for s in range(k):
        others = np.delete(z, s, axis=1)
        out[:, s] = z[:, s] - others.max(axis=1)
    return out
