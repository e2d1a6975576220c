"""Intrinsics and kernels shared by the kernels of the edgecode subpackages.

* ``_ctpop(x)``      -- LLVM ``ctpop`` on a uint64 (one POPCNT instruction),
  callable from any njit kernel.
* ``_popcount64(x)`` -- the same as an inlined njit function: set bits of a
  uint64, returned as uint64 (wrap it in ``np.int64`` before adding it to a
  signed counter: numba makes mixed uint64/int64 arithmetic float64).
* ``_sorted_subset_sums`` -- the sorted subset sums of a feature set with
  their probabilities (and optionally their bit masks), by doubling: the one
  copy for the meet in the middle of ``edgecode.scp`` (exact SCP) and of
  ``edgecode.redundancy`` (exact influences).

The one copy of the population count on the host side (``edgecode.hashing``
and ``edgecode.ecoc`` use it). The device side has its own,
``firmware_sim/_kernels/bits.py`` (the packages may not import each other);
``tests/test_kernel_copies.py`` pins the two together (see
``docs/architecture.md``, "One copy of each kernel").
"""

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ._config import NJIT

__all__ = []


@intrinsic
def _ctpop(typingctx, x):
    """Population count of a uint64 (LLVM intrinsic ``llvm.ctpop.i64``)."""
    if x != types.uint64:
        return None
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


@njit(**NJIT, inline="always")
def _popcount64(x):
    return _ctpop(x)


@njit(**NJIT)
def _sorted_subset_sums(vals, probs, idx, start, stop, sums, masses, masks, with_masks):
    """Sorted subset sums of ``vals[idx[start:stop]]`` with their probabilities.

    Doubling: the list for features f_1..f_i is the merge of the (sorted) list
    for f_1..f_{i-1} and the same list shifted by D_{f_i}; the merge is done in
    place from the back.  The list is stored at ``sums[1:m+1]`` (ascending)
    and ``masses[1:m+1]`` behind a -inf sentinel at ``sums[0]``, so the buffers
    need ``2**(stop-start) + 1`` slots.  Returns m = 2**(stop-start) (uint64).
    With ``with_masks`` (else ``masks`` is not touched), ``masks[1:m+1]`` gets
    the subsets' bit masks: bit ``q - start`` is set when feature ``idx[q]``
    is in the subset (``edgecode.redundancy``'s exact influences).
    """
    one = np.uint64(1)
    zero = np.uint64(0)
    m = one
    sums[0] = -np.inf          # the unshifted list is never taken past its start
    sums[1] = 0.0
    masses[1] = 1.0
    if with_masks:
        masks[1] = 0
    for q in range(start, stop):
        j = idx[q]
        d = vals[j]
        e = probs[j]
        keep = 1.0 - e
        bit = np.int64(1) << (q - start)
        i = m                  # last unread element of the unshifted list
        k = m                  # last unread element of the shifted list
        w = m + m              # write position
        while k != zero:
            su = sums[i]
            sh = sums[k] + d
            if su > sh:
                sums[w] = su
                masses[w] = masses[i] * keep
                if with_masks:
                    masks[w] = masks[i]
                i -= one
            else:
                sums[w] = sh
                masses[w] = masses[k] * e
                if with_masks:
                    masks[w] = masks[k] | bit
                k -= one
            w -= one
        # the unshifted elements 1..i are already in place (w == i)
        r = one
        while r <= i:
            masses[r] *= keep
            r += one
        m = m + m
    return m
