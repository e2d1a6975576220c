"""Baseline binary hashers with the SSBC interface: sign random projections
(LSH), PCA-sign and ITQ.  All three centre the data with the mean of what they
were fitted on and accept ``partial_fit`` (sufficient statistics: count, sum,
and for PCA/ITQ the scatter matrix; ITQ also keeps a reservoir sample of at
most ``max_samples`` rows on which the rotation is learned)."""

from numbers import Integral

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from ._base import BinaryHasher, _one_blas_thread, check_state_bytes, generator, itq_rotation

__all__ = ["SignRandomProjection", "PCASign", "ITQ"]

_COMMON = {
    "n_bits": [Interval(Integral, 1, None, closed="left")],
    "output": [StrOptions({"bits", "uint8", "uint64"})],
}


class _Stats(BinaryHasher):
    """Running count / sum (/ scatter) of the fitted rows."""

    _scatter = True

    def _forget(self):
        for a in ("_count", "_sum", "_xtx", "_rng", "_reservoir"):
            if hasattr(self, a):
                delattr(self, a)

    def _sample(self, X, seen, first):
        """Add X's rows to the reservoir of at most ``max_samples`` rows (a
        uniform sample of every row seen; ``seen`` rows before X)."""
        if first:
            self._reservoir = np.empty((0, X.shape[1]))
        self._reservoir = _reservoir_update(self._reservoir, X, seen, self.max_samples,
                                            self._rng)
        return self._reservoir

    def _accumulate(self, X):
        first = not hasattr(self, "_count")
        X = validate_data(self, X, reset=first, dtype=np.float64)
        if first:
            d = X.shape[1]
            k = int(self.n_bits)
            if self._scatter:   # scatter matrix, covariance, eigenvectors, projection
                check_state_bytes(type(self).__name__, f"the {d} x {d} scatter matrix of "
                                  f"{d} features", 8 * (3 * d * d + 2 * d * k))
            else:
                check_state_bytes(type(self).__name__, f"a {d} x {k} projection",
                                  8 * d * k)
            self._rng = generator(self.random_state)
            self._count = 0
            self._sum = np.zeros(d)
            self._xtx = np.zeros((d, d)) if self._scatter else None
        self._count += X.shape[0]
        self._sum += X.sum(axis=0)
        if self._scatter:
            self._xtx += X.T @ X
        self.mean_ = self._sum / self._count
        self.n_samples_seen_ = self._count
        return X, first

    def _pca(self, n_components=None):
        """Top principal directions (rows) and variances of the rows seen so far;
        ``n_components`` defaults to ``n_bits`` (one bit per direction)."""
        d = self._sum.shape[0]
        if n_components is None:
            n_components = self.n_bits
            if n_components > d:
                raise ValueError(f"n_bits={self.n_bits} exceeds n_features={d}: "
                                 f"{type(self).__name__} takes at most one bit per principal "
                                 "direction")
        cov = self._xtx / self._count - np.outer(self.mean_, self.mean_)
        with _one_blas_thread():
            vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
        order = np.argsort(vals)[::-1][:n_components]
        comps = vecs[:, order].T
        # sign convention: the largest-magnitude entry of each component positive
        flip = np.sign(comps[np.arange(comps.shape[0]), np.abs(comps).argmax(axis=1)])
        flip[flip == 0] = 1
        return comps * flip[:, None], vals[order]

    def fit(self, X, y=None):
        """Fit from scratch on X (n_samples, n_features)."""
        self._forget()
        return self.partial_fit(X)

    def _bits(self, X):
        return (X - self.mean_) @ self.projection_ > self.thresholds_


class SignRandomProjection(_Stats):
    """Sign random projections (SimHash/LSH for angles) of the centred data.

    ``bit_b(x) = [(x - mean_) . r_b > 0]`` with r_b i.i.d. standard Gaussian.

    Parameters
    ----------
    n_bits : int, default=32
    output : {"bits", "uint8", "uint64"}, default="bits"
        What :meth:`transform` returns (see :mod:`edgecode.hashing.codes`).
    random_state : None, int or Generator

    Attributes
    ----------
    mean_, projection_ (n_features, n_bits), thresholds_ (zeros), n_features_in_

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 5))
    >>> SignRandomProjection(8, random_state=0).fit(X).transform(X[:2]).shape
    (2, 8)
    """

    _scatter = False
    _parameter_constraints = {**_COMMON, "random_state": ["random_state"]}

    def __init__(self, n_bits=32, *, output="bits", random_state=None):
        self.n_bits = n_bits
        self.output = output
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Update the mean with X; the projection is drawn on the first call."""
        X, first = self._accumulate(X)
        if first:
            self.projection_ = self._rng.standard_normal((X.shape[1], self.n_bits))
            self.thresholds_ = np.zeros(self.n_bits)
        return self


class PCASign(_Stats):
    """Signs of the top ``n_bits`` principal components (requires n_bits <= n_features).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 5))
    >>> PCASign(3).fit(X).transform(X[:1]).shape
    (1, 3)
    """

    _parameter_constraints = dict(_COMMON)

    def __init__(self, n_bits=32, *, output="bits"):
        self.n_bits = n_bits
        self.output = output

    random_state = None

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Update the mean and scatter matrix with X, recompute the components."""
        self._accumulate(X)
        comps, var = self._pca()
        self.components_ = comps
        self.explained_variance_ = var
        self.projection_ = comps.T
        self.thresholds_ = np.zeros(self.n_bits)
        return self


class ITQ(_Stats):
    """Iterative quantization: PCA to n_bits dimensions, then the orthogonal
    rotation that minimises the quantization error (Gong & Lazebnik 2011).

    Parameters
    ----------
    n_bits : int, default=32
        At most n_features.
    n_iter : int, default=50
    max_samples : int, default=20000
        Reservoir size of rows kept for learning the rotation.
    output : {"bits", "uint8", "uint64"}
    random_state : None, int or Generator

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(80, 6))
    >>> ITQ(4, random_state=0).fit(X).transform(X[:3]).shape
    (3, 4)
    """

    _parameter_constraints = {**_COMMON, "n_iter": [Interval(Integral, 0, None, closed="left")],
                              "max_samples": [Interval(Integral, 1, None, closed="left")],
                              "random_state": ["random_state"]}

    def __init__(self, n_bits=32, *, n_iter=50, max_samples=20000, output="bits",
                 random_state=None):
        self.n_bits = n_bits
        self.n_iter = n_iter
        self.max_samples = max_samples
        self.output = output
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Update the statistics and the reservoir, re-learn the rotation."""
        seen = getattr(self, "_count", 0)
        X, first = self._accumulate(X)
        sample = self._sample(X, seen, first)
        comps, var = self._pca()
        V = (sample - self.mean_) @ comps.T
        R = itq_rotation(V, self.n_iter, self._rng, getattr(self, "rotation_", None)
                         if not first else None)
        self.components_ = comps
        self.rotation_ = R
        self.projection_ = comps.T @ R
        self.thresholds_ = np.zeros(self.n_bits)
        return self


def _reservoir_update(res, X, seen, size, rng):
    """Algorithm R: keep a uniform sample of at most ``size`` of all rows seen."""
    n = X.shape[0]
    fill = min(max(size - res.shape[0], 0), n)
    if fill:
        res = np.vstack([res, X[:fill]])
    if fill < n:
        pos = seen + np.arange(fill, n)             # 0-based stream index of each row
        j = np.floor(rng.random(n - fill) * (pos + 1)).astype(np.int64)
        for r, jj in zip(range(fill, n), j):
            if jj < size:
                res[jj] = X[r]
    return res
