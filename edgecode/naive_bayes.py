"""Naive Bayes on binary features, written in the log-odds form the SCP needs.

For two classes and features x in {0,1}^n the model is linear in x:

    S(x) = b + sum_j w_j(x_j),
    w_j(v) = log P(X_j = v | C = 1) / P(X_j = v | C = 0),
    b = log P(C = 1) / P(C = 0),

and it predicts class 1 iff S(x) > 0.  Flipping feature j changes S by
``D_j(x) = w_j(1 - x_j) - w_j(x_j)``; :meth:`BinaryNaiveBayes.flip_deltas`
returns these, which is what :mod:`edgecode.scp` and
:mod:`edgecode.redundancy` consume.
"""

from numbers import Real
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._config import ALPHA_MIN
from ._validation import check_binary

__all__ = ["BinaryNaiveBayes"]


class BinaryNaiveBayes(ClassifierMixin, BaseEstimator):
    """Bernoulli naive Bayes for binary features and two classes.

    Parameters
    ----------
    alpha : float, default=1.0
        Laplace (additive) smoothing of the per-class feature counts:
        ``P(X_j = 1 | C = c) = (count_jc + alpha) / (n_c + 2 alpha)``.
        Values below 1e-10 are raised to 1e-10 with a warning so that no
        weight is infinite.
    binarize : float or None, default=None
        ``None``: X must hold only 0 and 1 (anything else is refused).
        A finite float t: features are binarized as ``x > t``. NaN and
        infinite thresholds are refused (a NaN threshold would silently turn
        every feature into 0).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the class predicted when S(x) > 0.
    n_features_in_ : int
    class_count_ : ndarray of shape (2,)
    feature_prob_ : ndarray of shape (2, n_features)
        ``P(X_j = 1 | C = c)`` after smoothing.
    weights_ : ndarray of shape (2, n_features)
        ``weights_[v, j] = w_j(v)``, the log-likelihood ratio of value v.
    bias_ : float
        ``b``, the log prior odds.

    Notes
    -----
    Seed 000 ("Don't fear the bit flips", the SCP paper) writes the same
    model with ``A_j = log alpha_j / beta_j`` and ``B_j = log (1-alpha_j) /
    (1-beta_j)``; here ``w_j(1) = A_j`` and ``w_j(0) = B_j``.

    Examples
    --------
    >>> import numpy as np
    >>> from edgecode.naive_bayes import BinaryNaiveBayes
    >>> X = np.array([[1, 0], [1, 1], [0, 1], [0, 0]])
    >>> y = np.array([1, 1, 0, 0])
    >>> nb = BinaryNaiveBayes().fit(X, y)
    >>> nb.predict([[1, 0], [0, 1]])
    array([1, 0])
    >>> nb.flip_deltas([[1, 0]]).round(3)
    array([[-2.197,  0.   ]])
    >>> BinaryNaiveBayes(binarize=0.5).fit([[0.2, 0.9], [0.7, 0.1]], [0, 1]).predict([[0.9, 0.0]])
    array([1])
    """

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        # an open interval over the reals: refuses NaN and +-inf
        "binarize": [None, Interval(Real, None, None, closed="neither")],
    }

    def __init__(self, alpha=1.0, *, binarize=None):
        self.alpha = alpha
        self.binarize = binarize

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.categorical = False
        # strict mode takes only 0/1, so negative values are refused too
        tags.input_tags.positive_only = self.binarize is None
        return tags

    def _binary(self, X):
        if self.binarize is not None:
            return (X > self.binarize).astype(np.float64)
        return check_binary(X, name="X").astype(np.float64)

    def _check_binary_X(self, X, reset):
        X = validate_data(self, X, reset=reset, dtype="numeric", ensure_all_finite=True,
                          accept_sparse=False)
        return self._binary(X)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit from binary features X (n_samples, n_features) and two-class y."""
        X, y = validate_data(self, X, y, dtype="numeric", ensure_all_finite=True)
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        if classes.shape[0] == 1:
            raise ValueError(f"y has only one class ({classes[0]!r}); BinaryNaiveBayes "
                             "needs exactly two classes")
        if classes.shape[0] > 2:
            raise ValueError(
                "Only binary classification is supported. BinaryNaiveBayes needs exactly "
                f"two classes in y; got {classes.shape[0]}: {classes[:10].tolist()}")
        X = self._binary(X)
        alpha = float(self.alpha)
        if alpha < ALPHA_MIN:
            warnings.warn(f"alpha={alpha} is below {ALPHA_MIN}; using {ALPHA_MIN} so that "
                          "no log-likelihood is infinite", UserWarning)
            alpha = ALPHA_MIN
        count = np.array([(y_idx == c).sum() for c in (0, 1)], dtype=np.float64)
        ones = np.vstack([X[y_idx == c].sum(axis=0) for c in (0, 1)])
        p1 = (ones + alpha) / (count[:, None] + 2 * alpha)
        self.classes_ = classes
        self.class_count_ = count
        self.feature_prob_ = p1
        # w_j(v) = log P(X_j=v|C=1) - log P(X_j=v|C=0)
        self.weights_ = np.vstack([np.log1p(-p1[1]) - np.log1p(-p1[0]),
                                   np.log(p1[1]) - np.log(p1[0])])
        self.bias_ = float(np.log(count[1]) - np.log(count[0]))
        return self

    def decision_function(self, X):
        """The log-odds S(x) = b + sum_j w_j(x_j), shape (n_samples,)."""
        check_is_fitted(self)
        X = self._check_binary_X(X, reset=False)
        w0, w1 = self.weights_
        return self.bias_ + w0.sum() + X @ (w1 - w0)

    def predict(self, X):
        """``classes_[1]`` where S(x) > 0, else ``classes_[0]``."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.intp)]

    def predict_log_proba(self, X):
        """Log posterior of both classes, shape (n_samples, 2)."""
        s = self.decision_function(X)
        # log sigmoid(s) and log sigmoid(-s), computed stably
        return np.column_stack([-np.logaddexp(0.0, s), -np.logaddexp(0.0, -s)])

    def predict_proba(self, X):
        """Posterior of both classes, shape (n_samples, 2)."""
        return np.exp(self.predict_log_proba(X))

    def flip_deltas(self, X):
        """D_j(x) = w_j(1 - x_j) - w_j(x_j), shape (n_samples, n_features).

        Adding ``D_j(x)`` to ``decision_function(x)`` gives the log-odds of x
        with feature j flipped.
        """
        check_is_fitted(self)
        X = self._check_binary_X(X, reset=False)
        w0, w1 = self.weights_
        return (1.0 - 2.0 * X) * (w1 - w0)
