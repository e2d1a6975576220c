"""Per-dichotomizer feature selection (seed 003): chi-square, information gain, delta.

Each column of an ECOC coding matrix splits the classes it uses into
superclasses (positive = symbol 1, negative = symbol 0 for a binary column;
N superclasses for an N-ary column).  A term t is scored for that split from
its *document frequencies* -- the number of training rows of each superclass
in which t is present (``x_t != 0``) -- and each column keeps its own top K
terms.  Sparse (CSR/CSC) bag-of-words input is counted without densifying.

Measures (``#(t, s)`` = rows of superclass s containing t, ``|s|`` = rows of s):

* ``"delta"`` -- ``delta(t) = #(t, pos) / |pos| - #(t, neg) / |neg|``, ranked
  by ``|delta|`` (DESIGN.md).  For an N-ary column: the largest
  ``|#(t, s)/|s| - #(t, not s)/|not s||`` over the superclasses s.
* ``"chi2"`` -- Pearson's chi-square of the 2 x S table (t present/absent x
  superclass).
* ``"ig"`` -- information gain (mutual information, nats) between the
  presence of t and the superclass.

Ties in a ranking go to the lower feature index (a stable sort).
"""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

__all__ = ["MEASURES", "document_frequencies", "feature_scores", "select_top_k", "resolve_k"]

MEASURES = ("chi2", "ig", "delta")


def document_frequencies(X, target, sample_weight=None):
    """Counts of rows containing each term, per superclass.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    target : ndarray of int, shape (n_samples,)
        The superclass (symbol) of each row.
    sample_weight : ndarray of shape (n_samples,), optional
        Row weights: a row counts ``sample_weight[i]`` times (integer weights
        give the counts of the data with rows repeated).

    Returns
    -------
    df : ndarray of shape (n_features, n_symbols), float64
        ``df[t, k]`` rows of superclass ``symbols[k]`` in which term t is present.
    sizes : ndarray of shape (n_symbols,), float64
        Rows per superclass.
    symbols : ndarray
        The distinct superclasses, sorted.
    """
    symbols, idx = np.unique(target, return_inverse=True)
    onehot = np.zeros((idx.shape[0], symbols.shape[0]))
    onehot[np.arange(idx.shape[0]), idx] = 1.0 if sample_weight is None else \
        np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    if sp.issparse(X):
        P = X.tocsr(copy=True)
        P.eliminate_zeros()
        P.data = np.ones_like(P.data, dtype=np.float64)
        df = np.asarray(P.T @ onehot)
    else:
        df = (np.asarray(X) != 0).astype(np.float64).T @ onehot
    return df, onehot.sum(axis=0), symbols


def feature_scores(X, target, measure, sample_weight=None):
    """Score every term for the superclass split ``target`` (larger = more discriminant).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    target : ndarray of int, shape (n_samples,)
    measure : {"chi2", "ig", "delta"}
    sample_weight : ndarray of shape (n_samples,), optional
        Row weights (see :func:`document_frequencies`).

    Returns
    -------
    ndarray of shape (n_features,), float64, all finite and >= 0

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 0, 1], [1, 0, 0], [0, 1, 1], [0, 1, 0]])
    >>> feature_scores(X, np.array([1, 1, 0, 0]), "delta").tolist()
    [1.0, 1.0, 0.0]
    """
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}; got {measure!r}")
    df, sizes, _ = document_frequencies(X, target, sample_weight)
    n = sizes.sum()
    if measure == "delta":
        with np.errstate(divide="ignore", invalid="ignore"):
            rate_in = np.where(sizes > 0, df / sizes, 0.0)
            rest = n - sizes
            rate_out = np.where(rest > 0, (df.sum(axis=1, keepdims=True) - df) / rest, 0.0)
        score = np.abs(rate_in - rate_out)
        return score.max(axis=1) if score.shape[1] > 2 else score[:, -1]
    present = df                              # (F, S)
    absent = sizes[None, :] - df
    table = np.stack([present, absent], axis=1)  # (F, 2, S)
    row = table.sum(axis=2, keepdims=True)       # (F, 2, 1)
    col = sizes[None, None, :]                   # (1, 1, S)
    expected = row * col / n
    if measure == "chi2":
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(expected > 0, (table - expected) ** 2 / expected, 0.0)
        return terms.sum(axis=(1, 2))
    # ig: sum p(a, s) log p(a, s) / (p(a) p(s))
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(table > 0, table / n * np.log(table / expected), 0.0)
    return np.maximum(terms.sum(axis=(1, 2)), 0.0)


def resolve_k(k, n_features):
    """Number of features kept: an int count, or a float fraction in (0, 1] (rounded up)."""
    if isinstance(k, bool):
        raise TypeError(f"feature_selection K must be an int count or a float fraction; got {k!r}")
    if isinstance(k, (Integral, np.integer)):
        if k < 1:
            raise ValueError(f"feature_selection K must be >= 1 features; got {k}")
        return min(int(k), n_features)
    if isinstance(k, Real):
        if not (0.0 < float(k) <= 1.0):
            raise ValueError(f"feature_selection K as a fraction must be in (0, 1]; got {k}")
        return max(1, min(n_features, int(np.ceil(float(k) * n_features))))
    raise TypeError(f"feature_selection K must be an int count or a float fraction; got {k!r}")


def select_top_k(X, target, measure, k, sample_weight=None):
    """Sorted indices of the ``k`` best terms for the split ``target`` (ties: lower index).

    ``sample_weight`` (optional, shape (n_samples,)) weights the rows as in
    :func:`document_frequencies`.
    """
    score = feature_scores(X, target, measure, sample_weight)
    order = np.argsort(-score, kind="stable")[:k]
    return np.sort(order).astype(np.intp)
