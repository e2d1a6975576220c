"""Noisy channels for the device simulator.

:func:`bsc` is the binary symmetric channel: every bit is flipped
independently with its own probability. It is fast when flips are rare: it
draws the gaps between flips (geometric skipping) instead of one uniform per
bit, so its cost grows with the number of flips, not the number of bits.
"""

import math
from numbers import Integral, Real

import numpy as np

from ._kernels import _skip_positions
from .errors import DeviceError

__all__ = ["bsc", "check_random_state", "check_bits", "check_channel_eps", "BLOCK_BITS"]

#: Per-bit eps with at most this many distinct positive values is simulated
#: exactly group by group; more distinct values are split into this many bands
#: (sorted by eps) and simulated by thinning (candidates at the band's largest
#: eps, each kept with probability eps_j / eps_band).
MAX_EPS_GROUPS = 16

#: Bits processed per block (bounds the memory of flip positions).
BLOCK_BITS = 1 << 22


def check_random_state(random_state):
    """Return a numpy ``Generator`` for ``None``, an int, a SeedSequence or a Generator.

    Examples
    --------
    >>> int(check_random_state(0).integers(10)) == int(check_random_state(0).integers(10))
    True
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence) or (
            isinstance(random_state, (Integral, np.integer)) and not isinstance(random_state, bool)):
        if random_state is not None and not isinstance(random_state, np.random.SeedSequence) \
                and random_state < 0:
            raise DeviceError(f"random_state must be a non-negative integer; got {random_state}")
        return np.random.default_rng(random_state)
    raise TypeError("random_state must be None, a non-negative int, a numpy SeedSequence or "
                    f"a numpy Generator; got {random_state!r}")


def _first_bad(mask):
    idx = np.argwhere(mask)[0]
    return ", ".join(str(int(i)) for i in idx)


def check_bits(bits, *, name="bits", ndim=None):
    """Return ``bits`` as a C-contiguous uint8 array of 0/1, else a clear error."""
    try:
        arr = np.asarray(bits)
    except Exception as exc:
        raise TypeError(f"{name} must be array-like of 0/1; got {type(bits).__name__}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_) \
            or np.iscomplexobj(arr):
        raise TypeError(f"{name} must hold 0/1 numbers; got dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise DeviceError(f"{name} must be {ndim}-dimensional; got shape {arr.shape}")
    if arr.dtype != np.bool_:
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            raise DeviceError(f"{name}[{_first_bad(bad)}] must be 0 or 1 (binary); "
                              f"got {arr[bad][0]}")
    return np.asarray(arr, dtype=np.uint8, order="C")


def check_channel_eps(eps, length, *, name="eps"):
    """Flip probabilities as a float scalar or a float64 array of shape (length,).

    Every entry must be finite and in [0, 1] (a channel with eps > 1/2 is an
    inverting channel; planners restrict eps to [0, 1/2)).
    """
    if isinstance(eps, bool):
        raise TypeError(f"{name} must be a number or an array of numbers; got {eps!r}")
    if isinstance(eps, Real):
        value = float(eps)
        if not (0.0 <= value <= 1.0):  # also refuses NaN
            raise DeviceError(f"{name} must be in [0, 1]; got {eps}")
        return value
    try:
        arr = np.asarray(eps)
    except Exception as exc:
        raise TypeError(f"{name} must be a number or array-like; got {type(eps).__name__}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)) or np.iscomplexobj(arr):
        raise TypeError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    if arr.ndim == 0 or arr.shape == (1,):
        return check_channel_eps(float(arr.reshape(-1)[0]), length, name=name)
    if arr.shape != (length,):
        raise DeviceError(f"{name} must be a scalar or have shape ({length},), one per bit "
                          f"of the last axis; got shape {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        raise DeviceError(f"{name}[{_first_bad(bad)}] must be in [0, 1]; got {arr[bad][0]}")
    return arr


def _bernoulli_positions(n, p, rng):
    """Sorted positions in [0, n) of independent Bernoulli(p) successes (int64)."""
    if n <= 0 or p <= 0.0:
        return np.empty(0, np.int64)
    if p >= 1.0:
        return np.arange(n, dtype=np.int64)
    inv = 1.0 / math.log1p(-p)
    parts = []
    last = -1
    while last < n:
        mean = (n - 1 - last) * p
        size = int(min(mean + 6.0 * math.sqrt(mean) + 32, 1 << 22))
        u = rng.random(size)
        out = np.empty(size, np.int64)
        count, last = _skip_positions(u, inv, last, n, out)
        parts.append(out[:count])
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _flip_inplace(flat, length, eps, rng):
    """XOR a flat uint8 array, viewed as rows of ``length`` bits, with BSC noise.

    ``eps`` is a float (every bit) or a float64 array of shape (length,). Work
    proceeds in blocks of about ``BLOCK_BITS`` bits to bound memory; the block
    size is fixed, so a seed gives the same flips on every machine.
    """
    if isinstance(eps, float):
        for start in range(0, flat.size, BLOCK_BITS):
            block = flat[start:start + BLOCK_BITS]
            block[_bernoulli_positions(block.size, eps, rng)] ^= 1
        return
    rows = flat.size // length if length else 0
    values = np.unique(eps[eps > 0])
    if values.size == 0 or rows == 0:
        return
    if values.size <= MAX_EPS_GROUPS:
        groups = [np.flatnonzero(eps == v) for v in values]
    else:  # bands of columns sorted by eps, thinned below
        order = np.argsort(eps, kind="stable")
        order = order[eps[order] > 0]
        groups = [g for g in np.array_split(order, MAX_EPS_GROUPS) if g.size]
    step = max(1, BLOCK_BITS // length)
    for r0 in range(0, rows, step):
        nrows = min(step, rows - r0)
        block = flat[r0 * length:(r0 + nrows) * length]
        for cols in groups:
            p = float(eps[cols].max())
            k = cols.size
            pos = _bernoulli_positions(nrows * k, p, rng)
            row, slot = np.divmod(pos, k)
            col = cols[slot]
            if not np.all(eps[cols] == p):
                keep = rng.random(pos.size) * p < eps[col]
                row, col = row[keep], col[keep]
            block[row * length + col] ^= 1


def bsc(bits, eps, random_state=None):
    """Binary symmetric channel: flip each bit independently with probability eps.

    Parameters
    ----------
    bits : array-like of 0/1, any shape
        Transmitted bits (bool or integer). Not modified.
    eps : float or array-like of shape (bits.shape[-1],)
        Flip probability in [0, 1], one value for every bit or one per
        position along the last axis (e.g. per channel bit of a transmitted
        vector when ``bits`` holds one vector per row). Values above 1/2 are
        accepted (an inverting channel); planners work in [0, 1/2).
    random_state : None, int, SeedSequence or numpy Generator, optional
        Source of randomness; the same seed gives the same output.

    Returns
    -------
    ndarray of uint8, same shape as ``bits``
        Received bits (a new array).

    Raises
    ------
    DeviceError
        Non-binary ``bits``, ``eps`` outside [0, 1] or NaN, ``eps`` of the wrong
        shape (the message names the first bad index).
    TypeError
        Non-numeric input or a bad ``random_state``.

    Notes
    -----
    For one eps over N bits the gaps between flips are Geometric(eps), drawn
    from uniforms by inversion, so the cost is O(N eps) random numbers. For
    per-position eps the positions are grouped by equal eps (each group
    skipped exactly); with more than ``MAX_EPS_GROUPS`` distinct values they are
    grouped into that many bands of similar eps, candidates are drawn at the
    band's largest eps and each kept with probability eps_j / eps_band
    (thinning), which is exactly Bernoulli(eps_j) per bit.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.zeros((2, 8), dtype=np.uint8)
    >>> int(bsc(x, 0.0, random_state=0).sum()), int(bsc(x, 1.0).sum())
    (0, 16)
    >>> y = bsc(x, [0, 0, 0, 0, 0, 0, 0, 1], random_state=1)
    >>> y[:, -1].tolist(), int(y[:, :-1].sum())
    ([1, 1], 0)
    """
    arr = check_bits(bits, name="bits")
    length = arr.shape[-1] if arr.ndim else 1
    eps = check_channel_eps(eps, length)
    rng = check_random_state(random_state)
    out = arr.copy()
    _flip_inplace(out.reshape(-1), length, eps, rng)
    return out
