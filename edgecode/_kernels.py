"""Bit intrinsics shared by the kernels of the edgecode subpackages.

* ``_ctpop(x)``      -- LLVM ``ctpop`` on a uint64 (one POPCNT instruction),
  callable from any njit kernel.
* ``_popcount64(x)`` -- the same as an inlined njit function: set bits of a
  uint64, returned as uint64 (wrap it in ``np.int64`` before adding it to a
  signed counter: numba makes mixed uint64/int64 arithmetic float64).

The one copy of the population count on the host side (``edgecode.hashing``
and ``edgecode.ecoc`` use it). The device side has its own,
``firmware_sim/_kernels/bits.py`` (the packages may not import each other);
``tests/test_kernel_copies.py`` pins the two together (see
``docs/architecture.md``, "One copy of each kernel").
"""

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
