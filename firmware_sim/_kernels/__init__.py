"""Numba kernels of the device simulator (njit only, no validation, no RNG).

Each kernel takes C-contiguous arrays and scalars that its public wrapper
(``firmware_sim.channel`` or ``firmware_sim.naive_bayes``) validated and
allocated; random numbers, when needed, are drawn by the wrapper and passed in.
"""

import math

from numba import njit


@njit(cache=True, nogil=True)
def _skip_positions(u, inv_log1mp, last, n, out):
    """Geometric skipping: positions of Bernoulli(p) successes in ``[0, n)``.

    ``u`` holds uniforms in [0, 1); the gap to the next success is
    ``floor(log(1 - u) / log(1 - p)) + 1`` (Geometric(p) on {1, 2, ...}), with
    ``inv_log1mp = 1 / log(1 - p)``. Starting after position ``last`` (-1 at
    the start) it writes successive positions to ``out`` until one would pass
    ``n - 1`` or the uniforms run out.

    Returns ``(count, last)``: the number of positions written and the last
    position, which is ``n`` when the range [0, n) is exhausted.
    """
    count = 0
    for k in range(u.shape[0]):
        gap = math.floor(math.log(1.0 - u[k]) * inv_log1mp)  # >= 0, float
        if gap >= n - 1 - last:
            return count, n
        last += int(gap) + 1
        out[count] = last
        count += 1
    return count, last


@njit(cache=True, nogil=True)
def _majority_decode(bits, reps, out):
    """Feature-major majority vote: ``out[i, j] = (#ones in copies of j) > reps[j]``."""
    t = bits.shape[0]
    n = reps.shape[0]
    for i in range(t):
        pos = 0
        for j in range(n):
            m = 2 * reps[j] + 1
            c = 0
            for k in range(m):
                c += bits[i, pos + k]
            pos += m
            out[i, j] = 1 if c > reps[j] else 0


@njit(cache=True, nogil=True)
def _accumulate(X, weights, bias, out):
    """Integer log-odds ``out[i] = bias + sum_j X[i, j] * weights[j]`` (int64).

    (``_decode_accumulate`` with every ``reps[j] = 0`` gives the same sums, but
    its loop over copies does not vectorise: about 13x slower.)"""
    t, n = X.shape
    for i in range(t):
        acc = bias
        for j in range(n):
            if X[i, j]:
                acc += weights[j]
        out[i] = acc


@njit(cache=True, nogil=True)
def _decode_accumulate(bits, reps, weights, bias, out):
    """Device inference on received bits: majority-decode each feature and,
    when it decodes to 1, add its weight; ``out[i]`` is the accumulator.

    This is the loop a microcontroller runs (see ``ProtectedNBDevice.resources``
    for its operation count): one addition per received bit, one comparison
    per feature, one addition per feature decoded as 1.
    """
    t = bits.shape[0]
    n = reps.shape[0]
    for i in range(t):
        acc = bias
        pos = 0
        for j in range(n):
            m = 2 * reps[j] + 1
            c = 0
            for k in range(m):
                c += bits[i, pos + k]
            pos += m
            if c > reps[j]:
                acc += weights[j]
        out[i] = acc
