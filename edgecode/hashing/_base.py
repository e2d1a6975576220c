"""What every binary hasher of ``edgecode.hashing`` shares: output formats,
tags, the random generator and the ITQ rotation."""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .codes import pack_bits

OUTPUTS = ("bits", "uint8", "uint64")


def generator(random_state):
    """A numpy Generator from None, an int, a Generator or a legacy RandomState."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if random_state is None or (isinstance(random_state, (Integral, np.integer))
                                and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise TypeError("random_state must be None, an int, a numpy Generator or RandomState; "
                    f"got {random_state!r}")


def format_codes(bits, output):
    """bool/0-1 bits (N, n_bits) -> the requested output format."""
    if output == "bits":
        return np.ascontiguousarray(bits, dtype=np.uint8)
    return pack_bits(bits, np.uint8 if output == "uint8" else np.uint64)


def itq_rotation(V, n_iter, rng, R0=None):
    """Iterative quantization (Gong & Lazebnik 2011): the orthogonal R minimising
    ``||sign(V R) - V R||_F`` by alternating B = sign(V R) and the Procrustes
    step ``R = S Sh^T`` with ``V^T B = S Omega Sh^T``.  ``V`` is centred (n, k)."""
    k = V.shape[1]
    if R0 is None:
        R, _ = np.linalg.qr(rng.standard_normal((k, k)))
    else:
        R = R0
    from .sketch import _one_blas_thread
    with _one_blas_thread():
        for _ in range(n_iter):
            B = np.where(V @ R >= 0, 1.0, -1.0)
            S, _, ShT = np.linalg.svd(V.T @ B)
            R = S @ ShT
    return R


class BinaryHasher(TransformerMixin, BaseEstimator):
    """Base of the hashers: ``transform`` gives {0,1} bits or packed codes.

    Subclasses implement ``_bits(X)`` (bool array (N, n_bits)) on validated
    float64 input.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags

    def transform(self, X):
        """Codes of X: {0,1} uint8 (N, n_bits) for ``output="bits"``, else packed
        LSB-first uint8 (N, ceil(n_bits/8)) or uint64 (N, ceil(n_bits/64))."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return format_codes(self._bits(X), self.output)

    def encode(self, X, output="bits"):
        """Like :meth:`transform` with an explicit ``output`` format."""
        check_is_fitted(self)
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}; got {output!r}")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return format_codes(self._bits(X), output)
