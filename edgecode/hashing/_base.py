"""What every binary hasher of ``edgecode.hashing`` shares: output formats,
tags, the random generator, the ITQ rotation and the one-BLAS-thread context
(the sketch updates and the ITQ steps use it)."""

import contextlib
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._config import MAX_ALLOCATION_BYTES
from .codes import pack_bits

OUTPUTS = ("bits", "uint8", "uint64")

#: Largest working memory (bytes) a hasher's state may take: 2 GiB.  Sizes are
#: driven by parameters (``sketch_size``, ``n_anchors``) and ``n_features``, so
#: fit prices its arrays first and refuses above this.
MAX_STATE_BYTES = MAX_ALLOCATION_BYTES      # 2 GiB, edgecode._config


def check_state_bytes(who, what, nbytes):
    """Raise ValueError if a hasher's state ``what`` needs more than MAX_STATE_BYTES.

    >>> check_state_bytes("SSBC", "a 64 x 256 sketch", 10 ** 6)
    >>> check_state_bytes("SSBC", "a 10**9 x 256 sketch", 4 * 10 ** 12)
    Traceback (most recent call last):
    ...
    ValueError: SSBC: a 10**9 x 256 sketch needs about 4,000,000,000,000 bytes (3.73e+03 GiB), above the limit of 2,147,483,648 bytes (2 GiB, edgecode.hashing._base.MAX_STATE_BYTES); use smaller parameters
    """
    nbytes = int(nbytes)
    if nbytes > MAX_STATE_BYTES:
        raise ValueError(
            f"{who}: {what} needs about {nbytes:,} bytes ({nbytes / 2 ** 30:.3g} GiB), above "
            f"the limit of {MAX_STATE_BYTES:,} bytes ({MAX_STATE_BYTES / 2 ** 30:.3g} GiB, "
            "edgecode.hashing._base.MAX_STATE_BYTES); use smaller parameters")


_CONTROLLER = []


def _one_blas_thread():
    """Context limiting BLAS/LAPACK to one thread.

    The products and decompositions of a sketch update are small (2 ell x m);
    multithreaded BLAS on them is slower than one thread, by 5-50x when the
    cores are busy.  Uses scikit-learn's threadpool controller (created once);
    a no-op if it is unavailable.
    """
    try:
        if not _CONTROLLER:
            from sklearn.utils.fixes import _get_threadpool_controller
            _CONTROLLER.append(_get_threadpool_controller())
        return _CONTROLLER[0].limit(limits=1, user_api="blas")
    except Exception:  # pragma: no cover - depends on the installed scikit-learn
        return contextlib.nullcontext()


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
    with _one_blas_thread():
        for _ in range(n_iter):
            B = np.where(V @ R >= 0, 1.0, -1.0)
            S, _, ShT = np.linalg.svd(V.T @ B)
            R = S @ ShT
    return R


def n_output_columns(n_bits, output):
    """Columns of a code matrix of ``n_bits`` bits in an output format.

    >>> [n_output_columns(70, o) for o in OUTPUTS]
    [70, 9, 2]
    """
    return {"bits": n_bits, "uint8": -(-n_bits // 8), "uint64": -(-n_bits // 64)}[output]


class BinaryHasher(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Base of the hashers: ``transform`` gives {0,1} bits or packed codes.

    Subclasses implement ``_bits(X)`` (bool array (N, n_bits)) on validated
    float64 input.

    Output column names (:meth:`get_feature_names_out`, used by
    ``set_output(transform="pandas")``) follow scikit-learn's
    ``ClassNamePrefixFeaturesOutMixin``: the lower-case class name and the
    column index, ``ssbc0 .. ssbc{k-1}`` for k bits; with a packed ``output``
    column i is byte (``"uint8"``) or word (``"uint64"``) i.
    """

    @property
    def _n_features_out(self):
        # fitted only (projection_ is set by fit): unfitted -> AttributeError -> NotFitted
        return n_output_columns(self.projection_.shape[1], self.output)

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
