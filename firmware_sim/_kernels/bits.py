"""Bit intrinsics for the device kernels: one machine instruction each.

* ``_popcount64(x)`` -- number of set bits of a uint64 (LLVM ``ctpop``).
* ``_lowest_bit(x)`` -- index of the lowest set bit of a non-zero uint64
  (LLVM ``cttz``).

Both take and return uint64; no validation (kernels only).
"""

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


@njit(cache=True, inline="always")
def _popcount64(x):
    return _ctpop(x)


@njit(cache=True, inline="always")
def _lowest_bit(x):
    return _cttz(x)
