"""Spectral hashing (Weiss, Torralba & Fergus 2008), the baseline seed 002 discusses.

The data are rotated onto their principal directions and assumed uniform on
the box ``[a_j, b_j]`` they span (the range of the projections).  The
eigenfunctions of the one-dimensional Laplacian on ``[a, b]`` (Neumann
boundary) are ``Phi_k(x) = sin(pi/2 + k pi / (b - a) * (x - a))``, k = 1, 2, ...,
with eigenvalue ``1 - exp(-eps^2 / 2 * |k pi / (b - a)|^2)``, increasing in the
frequency ``omega = k pi / (b - a)``.  Over all principal directions the
``n_bits`` eigenfunctions of smallest eigenvalue (smallest frequency) are
kept, and bit b of a point is the sign of its eigenfunction.
"""

from numbers import Integral

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .._validation import check_allocation
from ._base import check_state_bytes, n_output_columns
from .baselines import _Stats

__all__ = ["SpectralHashing", "spectral_modes"]


def spectral_modes(widths, n_bits):
    """The ``n_bits`` one-dimensional eigenfunctions of smallest eigenvalue.

    Candidates are every (direction j, k >= 1) with frequency
    ``omega = k pi / widths[j]``; they are ordered by frequency, ties by the
    lower k, then the lower direction.  (The constant eigenfunction k = 0 is
    excluded, as in the paper.)

    Parameters
    ----------
    widths : array-like of shape (n_directions,)
        Positive widths ``b_j - a_j`` of the box along each principal direction.
    n_bits : int

    Returns
    -------
    modes : ndarray of shape (n_bits, 2), int64
        ``[direction, k]`` of each bit.
    frequencies : ndarray of shape (n_bits,)
        ``k pi / widths[direction]``.

    Examples
    --------
    A 4 x 1 box: the first three bits cut the long side (k = 1, 2, 3), the
    fourth is the first cut of the short side (frequency pi ties with k = 4 on
    the long side; the lower k wins):

    >>> modes, freq = spectral_modes([4.0, 1.0], 4)
    >>> modes.tolist()
    [[0, 1], [0, 2], [0, 3], [1, 1]]
    >>> (freq / np.pi).round(3).tolist()
    [0.25, 0.5, 0.75, 1.0]
    """
    widths = np.asarray(widths, dtype=np.float64)
    if widths.ndim != 1 or widths.size == 0 or not np.all(widths > 0):
        raise ValueError(f"widths must be a non-empty 1-d array of positive numbers; got {widths}")
    n_bits = int(n_bits)
    # candidates (direction, k, frequency) and the sort's index: about 40 bytes each
    check_allocation(f"n_bits={n_bits}", 40 * widths.size * max(n_bits, 0),
                     what=f"a table of the {widths.size} x {n_bits} candidate eigenfunctions",
                     hint="use fewer bits")
    k = np.arange(1, n_bits + 1, dtype=np.int64)
    direction = np.repeat(np.arange(widths.size, dtype=np.int64), n_bits)
    kk = np.tile(k, widths.size)
    omega = kk * np.pi / widths[direction]
    order = np.lexsort((direction, kk, omega))[:n_bits]
    return np.column_stack([direction[order], kk[order]]), omega[order]


class SpectralHashing(_Stats):
    """Spectral hashing: PCA, then thresholded analytical Laplacian eigenfunctions.

    A point x is centred and projected on the top principal directions,
    ``z = (x - mean_) @ components_.T``; bit b uses direction ``j = modes_[b, 0]``
    and wave number ``k = modes_[b, 1]``:
    ``bit_b(x) = [sin(pi/2 + frequencies_[b] * (z_j - range_min_[j])) > 0]``
    with ``frequencies_[b] = k pi / (range_max_[j] - range_min_[j])``.

    Parameters
    ----------
    n_bits : int, default=32
        Code length; may exceed n_features (several wave numbers per direction).
    n_components : int or None, default=None
        Principal directions considered; ``None`` takes ``min(n_bits, n_features)``
        as the paper's code does.  At most n_features.
    max_samples : int, default=20000
        Size of the uniform reservoir sample of the fitted rows on which the box
        ``[a_j, b_j]`` (min and max of the projections) is measured.  With at
        most ``max_samples`` rows fitted the box is exact and ``partial_fit`` in
        batches equals ``fit``.  The PCA itself is exact in any case (scatter
        matrix).
    output : {"bits", "uint8", "uint64"}, default="bits"
        What :meth:`transform` returns (see :mod:`edgecode.hashing.codes`).
    random_state : None, int or Generator
        Only used by the reservoir once more than ``max_samples`` rows were seen.

    Attributes
    ----------
    mean_ : ndarray (n_features,)
    components_ : ndarray (n_components, n_features)
        Principal directions (largest-magnitude entry of each positive).
    explained_variance_ : ndarray (n_components,)
    range_min_, range_max_ : ndarray (n_components,)
        The box ``[a_j, b_j]``.  A direction of zero width gets the width
        ``1e-12 max(1, largest width)`` (its frequencies come last).
    modes_ : ndarray (n_bits, 2), int64
        ``[direction, k]`` of each bit (see :func:`spectral_modes`).
    frequencies_ : ndarray (n_bits,)
    n_samples_seen_ : int
    n_features_in_ : int

    See Also
    --------
    PCASign : one sign bit per principal direction (the k = 1 mode's threshold
        at the mean instead of the box's midpoint).
    SSBC : the seed's streaming spectral codes (a sketched affinity matrix
        instead of the uniform-box eigenfunctions).

    Notes
    -----
    Seed 002 (related work) describes spectral hashing as thresholding the
    bottom eigenvectors of the graph Laplacian, extended out of sample with the
    Laplace-Beltrami eigenfunctions of a uniform (box-shaped) distribution;
    SSBC is argued to win because it does not assume a separable distribution.
    The 1-D eigenfunctions on ``[a, b]`` are written in the paper as
    ``sin(pi/2 + k pi / (b - a) x)`` for an interval starting at 0; here x is
    measured from a (``z_j - a_j``), as in the authors' code.

    References
    ----------
    Y. Weiss, A. Torralba, R. Fergus. Spectral Hashing. NIPS 2008.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(200, 2)) * [4.0, 1.0]
    >>> sh = SpectralHashing(4).fit(X)
    >>> sh.modes_.tolist()
    [[0, 1], [0, 2], [0, 3], [1, 1]]
    >>> sh.transform(X[:3]).shape
    (3, 4)
    """

    _parameter_constraints = {
        "n_bits": [Interval(Integral, 1, None, closed="left")],
        "n_components": [None, Interval(Integral, 1, None, closed="left")],
        "max_samples": [Interval(Integral, 1, None, closed="left")],
        "output": [StrOptions({"bits", "uint8", "uint64"})],
        "random_state": ["random_state"],
    }

    def __init__(self, n_bits=32, *, n_components=None, max_samples=20000, output="bits",
                 random_state=None):
        self.n_bits = n_bits
        self.n_components = n_components
        self.max_samples = max_samples
        self.output = output
        self.random_state = random_state

    @property
    def _n_features_out(self):
        return n_output_columns(self.frequencies_.shape[0], self.output)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Update the mean, scatter matrix and reservoir with X; recompute the
        principal directions, the box and the modes."""
        seen = getattr(self, "_count", 0)
        X, first = self._accumulate(X)
        d = X.shape[1]
        n_comp = min(self.n_bits, d) if self.n_components is None else self.n_components
        if n_comp > d:
            raise ValueError(f"n_components={self.n_components} exceeds n_features={d}")
        if first:
            check_state_bytes("SpectralHashing", f"a reservoir of max_samples="
                              f"{self.max_samples} rows of {d} features",
                              8 * min(self.max_samples, 10 ** 12) * d)
        sample = self._sample(X, seen, first)
        comps, var = self._pca(n_comp)
        Z = (sample - self.mean_) @ comps.T
        lo, hi = Z.min(axis=0), Z.max(axis=0)
        width = hi - lo
        floor = 1e-12 * max(1.0, float(width.max()))
        width = np.where(width > floor, width, floor)
        modes, freq = spectral_modes(width, self.n_bits)
        self.components_ = comps
        self.explained_variance_ = var
        self.range_min_ = lo
        self.range_max_ = lo + width
        self.modes_ = modes
        self.frequencies_ = freq
        return self

    def _eigenfunctions(self, X):
        Z = (X - self.mean_) @ self.components_.T
        j = self.modes_[:, 0]
        return np.sin(np.pi / 2 + (Z[:, j] - self.range_min_[j]) * self.frequencies_)

    def _bits(self, X):
        return self._eigenfunctions(X) > 0

    def embed(self, X):
        """The eigenfunction values ``sin(pi/2 + omega_b (z_j - a_j))`` (N, n_bits)
        whose signs are the bits."""
        from sklearn.utils.validation import check_is_fitted, validate_data
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._eigenfunctions(X)
