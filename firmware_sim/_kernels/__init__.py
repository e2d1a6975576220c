"""Numba kernels of the device side shared by every kind (njit only, no validation, no RNG).

``_skip_positions`` here (the channel's geometric skipping), bit intrinsics
in :mod:`.bits`, fault samplers in :mod:`.faults`; the kernels of a model
kind live beside it, in ``firmware_sim/kinds/_kernels/<kind>.py``. Each
kernel takes C-contiguous arrays and scalars that its public wrapper
validated and allocated; random numbers, when needed, are drawn by the
wrapper and passed in.
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
