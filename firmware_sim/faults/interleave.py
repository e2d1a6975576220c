"""A bit fault seen through an interleaved wire order (:class:`Interleave`), and the
copy-major order that spreads a feature's copies (:func:`copy_major_order`)."""

import numpy as np

from .._kernels.bits import _pack_bits
from ..errors import DeviceError
from ._common import check_masks, n_words
from .base import Fault

__all__ = ["Interleave", "copy_major_order"]


class Interleave(Fault):
    """A bit fault seen through an interleaved wire order.

    The transmitter sends frame position ``order[k]`` as the k-th bit on the
    wire and the receiver puts it back, so ``fault`` acts on the wire order:
    ``out[:, order] = fault(bits[:, order])``. With :func:`copy_major_order`
    the copies of a feature are spread out, so a burst shorter than the
    spacing hits at most one of them.

    Parameters
    ----------
    fault : Fault
        A bit fault.
    order : array-like of int, shape (L,)
        A permutation of the frame positions.

    Examples
    --------
    >>> from firmware_sim.faults import StuckAt
    >>> f = Interleave(StuckAt(stuck1=[0]), [2, 0, 1])   # wire bit 0 = frame bit 2
    >>> f.apply([[0, 0, 0]]).tolist()
    [[0, 0, 1]]
    """

    name = "interleave"

    def __init__(self, fault, order):
        if not isinstance(fault, Fault) or fault.target != "bits":
            raise TypeError("Interleave wraps a bit fault (target 'bits')")
        order = np.asarray(order, dtype=np.int64).reshape(-1)
        if not np.array_equal(np.sort(order), np.arange(order.size)):
            raise DeviceError("order must be a permutation of 0 .. L-1")
        self.fault = fault
        self.order = order
        self.additive = fault.additive

    def params(self):
        return {**self.fault.params(), "order": tuple(int(i) for i in self.order)}

    def param_aliases(self):
        return self.fault.param_aliases()

    def rebuild(self, current, changes):
        inner = {k: v for k, v in changes.items() if k != "order"}
        order = changes.get("order", self.order)
        return Interleave(self.fault.with_params(**inner) if inner else self.fault, order)

    def to_dict(self):
        return {"model": self.name, "fault": self.fault.to_dict(),
                "order": self.order.tolist()}

    def check_width(self, width):
        if self.order.size != width:
            raise DeviceError(f"order has {self.order.size} positions but rows have {width} bits")
        self.fault.check_width(width)

    def apply_inplace(self, bits, rng):
        wire = np.ascontiguousarray(bits[:, self.order])
        self.fault.apply_inplace(wire, rng)
        bits[:, self.order] = wire

    def error_masks(self, nrows, width, rng):
        # the wrapped fault's masks (its draws for apply_inplace), bits moved to
        # frame order; frame position order[k] is wire bit k
        if not self.additive:
            return super().error_masks(nrows, width, rng)      # raises TypeError
        check_masks(nrows, 2 * width)                          # wire order and frame order
        inner = self.fault.error_masks(nrows, width, rng)
        wire = np.unpackbits(inner.astype("<u8", copy=False).view(np.uint8), axis=1,
                             count=width, bitorder="little")
        bits = np.empty_like(wire)
        bits[:, self.order] = wire
        masks = np.empty((nrows, n_words(width)), np.uint64)
        _pack_bits(bits, masks)
        return masks

    @property
    def mean_flip_rate(self):
        return self.fault.mean_flip_rate


def copy_major_order(copies):
    """Wire order sending copy 0 of every feature, then copy 1 of those with two
    or more copies, and so on (frame positions, feature-major frame).

    Examples
    --------
    >>> copy_major_order([3, 1, 2]).tolist()
    [0, 3, 4, 1, 5, 2]
    """
    copies = np.asarray(copies, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(copies)[:-1]])
    return np.concatenate([start[copies > c] + c for c in range(int(copies.max(initial=0)))]
                          ).astype(np.int64) if copies.size else np.empty(0, np.int64)
