"""Input checks shared by every public edgecode function.

Each check names the argument, what was expected and what it got, and raises
``ValueError`` (wrong value) or ``TypeError`` (wrong kind), so that nothing
reaches a numba kernel that the kernel would mishandle.
"""

from numbers import Integral, Real

import numpy as np


def _first_bad(mask):
    """Index tuple of the first True entry of ``mask`` (as a string)."""
    idx = np.argwhere(mask)[0]
    return ", ".join(str(int(i)) for i in idx)


def check_finite_float(a, *, name, ndim=None, dtype=np.float64):
    """Return ``a`` as a C-contiguous float array, refusing NaN/inf and wrong ndim."""
    try:
        arr = np.asarray(a)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be array-like of numbers; got {type(a).__name__}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_
    ):
        raise TypeError(f"{name} must hold numbers; got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real; got dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(
            f"{name} must be {ndim}-dimensional; got shape {arr.shape}"
        )
    arr = np.ascontiguousarray(arr, dtype=dtype)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name}[{_first_bad(bad)}] must be finite; got {arr[bad][0]}")
    return arr


def check_binary(X, *, name="X", ndim=2):
    """Return ``X`` as a C-contiguous uint8 array of 0/1, else a clear error.

    Accepts bool, integer or float input whose values are exactly 0 or 1.
    """
    arr = check_finite_float(X, name=name, ndim=ndim, dtype=np.float64)
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        raise ValueError(
            f"{name}[{_first_bad(bad)}] must be 0 or 1 (binary features); got {arr[bad][0]}"
        )
    return np.ascontiguousarray(arr, dtype=np.uint8)


def check_eps(eps, n_features, *, name="eps"):
    """Return per-feature flip probabilities as a float64 array of shape (n,).

    ``eps`` is a scalar (same for every feature) or an array of shape
    ``(n_features,)``; every entry must lie in [0, 1/2).
    """
    if isinstance(eps, Real) and not isinstance(eps, bool):
        arr = np.full(n_features, float(eps))
        if not (0.0 <= float(eps) < 0.5):
            raise ValueError(f"{name} must be in [0, 0.5); got {eps}")
        return arr
    arr = check_finite_float(eps, name=name)
    if arr.ndim == 0:
        return check_eps(float(arr), n_features, name=name)
    if arr.shape != (n_features,):
        raise ValueError(
            f"{name} must be a scalar or have shape ({n_features},), one per feature; "
            f"got shape {arr.shape}"
        )
    bad = (arr < 0) | (arr >= 0.5)
    if bad.any():
        raise ValueError(f"{name}[{_first_bad(bad)}] must be in [0, 0.5); got {arr[bad][0]}")
    return arr


def check_margin_deltas(margin, deltas):
    """Validate the (margin, deltas) pair every ``edgecode.scp`` function takes.

    Returns float64 C-contiguous ``margin`` of shape (t,) and ``deltas`` of
    shape (t, n).
    """
    margin = check_finite_float(margin, name="margin", ndim=1)
    deltas = check_finite_float(deltas, name="deltas", ndim=2)
    if deltas.shape[0] != margin.shape[0]:
        raise ValueError(
            "deltas must have one row per margin entry: margin has shape "
            f"{margin.shape}, deltas has shape {deltas.shape}"
        )
    return margin, deltas


def check_int(value, *, name, low=None, high=None):
    """Return ``value`` as int, checking type and the closed range [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        raise TypeError(f"{name} must be an integer; got {value!r}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}; got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}; got {value}")
    return value


def _gib(n):
    return f"{n / 2 ** 30:.3g} GiB"


def check_allocation(param, nbytes, *, what, hint="use a smaller value", limit=None):
    """Refuse an allocation of ``nbytes`` above the limit, before anything is allocated.

    One rule for every size parameter in edgecode (``n_trials``,
    ``budget_bits``, ``hybrid``, code lengths ...): price the working
    memory a call will need from its arguments first (a Python int, so
    nothing overflows) and raise a ``ValueError`` that names the parameter,
    the need and the limit (``edgecode._config.MAX_ALLOCATION_BYTES``, 2 GiB).

    Parameters
    ----------
    param : str
        The argument responsible, as the user wrote it (``"budget_bits=10**12"``).
    nbytes : int
        Bytes the call would allocate at once.
    what : str
        What would be allocated (``"the per-feature repetition counts"``).
    hint : str
        How to stay under the limit.
    limit : int, optional
        Default ``MAX_ALLOCATION_BYTES``.

    Examples
    --------
    >>> check_allocation("n=4", 32, what="a table")
    >>> check_allocation("n=10**12", 8 * 10**12, what="a table of n float64")
    Traceback (most recent call last):
    ...
    ValueError: n=10**12: a table of n float64 needs 8,000,000,000,000 bytes (7.45e+03 GiB), above the limit of 2,147,483,648 bytes (2 GiB, edgecode._config.MAX_ALLOCATION_BYTES); use a smaller value
    """
    from ._config import MAX_ALLOCATION_BYTES

    limit = MAX_ALLOCATION_BYTES if limit is None else int(limit)
    nbytes = int(nbytes)
    if nbytes > limit:
        raise ValueError(f"{param}: {what} needs {nbytes:,} bytes ({_gib(nbytes)}), above the "
                         f"limit of {limit:,} bytes ({_gib(limit)}, "
                         f"edgecode._config.MAX_ALLOCATION_BYTES); {hint}")
