"""Bit intrinsics for the device kernels: one machine instruction each.

* ``_popcount64(x)`` -- number of set bits of a uint64 (LLVM ``ctpop``).
* ``_lowest_bit(x)`` -- index of the lowest set bit of a non-zero uint64
  (LLVM ``cttz``).
* ``_pack_bits(rows, out)`` -- 0/1 rows into uint64 words, column j at bit
  ``j % 64`` of word ``j // 64`` (the layout of packed ECOC outputs and of
  fault error masks).

No validation (kernels only). The one device-side copy of each (the ECOC,
campaign and fault kernels import them); the host side has its own
(``edgecode/_kernels.py``, ``edgecode/ecoc/_kernels/predict.py``), pinned to
these by ``tests/test_kernel_copies.py``.
"""

import numpy as np
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def _ctpop(typingctx, x):
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


@intrinsic
def _cttz(typingctx, x):
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], context.get_constant(types.boolean, True))

    return types.uint64(types.uint64), codegen


@njit(cache=True, nogil=True, inline="always")
def _popcount64(x):
    return _ctpop(x)


@njit(cache=True, nogil=True, inline="always")
def _lowest_bit(x):
    return _cttz(x)


@njit(cache=True, nogil=True)
def _pack_bits(rows, out):
    """Non-zero entries of ``rows`` (t, L) as set bits of ``out`` (t, ceil(L / 64))."""
    one = np.uint64(1)
    for i in range(rows.shape[0]):
        for k in range(out.shape[1]):
            out[i, k] = 0
        for j in range(rows.shape[1]):
            if rows[i, j] != 0:
                out[i, j >> 6] |= one << np.uint64(j & 63)
