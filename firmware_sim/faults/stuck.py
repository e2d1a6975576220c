"""Lines stuck at 0 or 1 (:class:`StuckAt`, registry name ``stuck``) and the wire
positions of a feature's copies (:func:`feature_lines`)."""

import numpy as np

from ..channel import _bernoulli_positions
from ..errors import DeviceError
from ._common import check_prob
from .base import Fault
from .registry import register_fault

__all__ = ["StuckAt", "feature_lines"]


class StuckAt(Fault):
    """Sensor lines stuck at 0 or 1.

    A line is a position on the wire (the last axis of the bits): for
    protected naive Bayes one transmitted copy of a feature. A stuck sensor
    (every copy of feature j) is ``StuckAt(stuck1=feature_lines(copies, [j]))``.

    Parameters
    ----------
    stuck0, stuck1 : sequence of int, optional
        Lines always stuck at 0 / at 1 (fixed defects, every row).
    rate : float in [0, 1], default 0
        Besides the fixed ones, each line of each row is stuck with this
        probability, independently (a population of devices with random
        defects, one inference each).
    value : {0, 1, None}, default None
        Value of the random stuck lines; None: 0 or 1 with probability 1/2.

    Notes
    -----
    Closed form: a fixed stuck line reads its stuck value whatever was sent
    (its error rate is the fraction of rows that sent the other value). A
    random stuck line is wrong with probability ``rate * P(sent != value)``;
    with ``value=None`` that is ``rate / 2`` for every bit, independently:
    a BSC with eps = rate / 2.

    Examples
    --------
    >>> import numpy as np
    >>> StuckAt(stuck0=[0], stuck1=[2]).apply([[1, 1, 0, 0]]).tolist()
    [[0, 1, 1, 0]]
    """

    name = "stuck"

    def __init__(self, stuck0=(), stuck1=(), rate=0.0, value=None):
        self.stuck0 = self._lines(stuck0, "stuck0")
        self.stuck1 = self._lines(stuck1, "stuck1")
        both = np.intersect1d(self.stuck0, self.stuck1)
        if both.size:
            raise DeviceError(f"line {int(both[0])} cannot be stuck at 0 and at 1")
        self.rate = check_prob(rate, "rate")
        if value not in (None, 0, 1) or isinstance(value, bool):
            raise DeviceError(f"value must be 0, 1 or None (random); got {value!r}")
        self.value = value

    @staticmethod
    def _lines(lines, name):
        arr = np.asarray(lines, dtype=np.int64).reshape(-1) if len(np.atleast_1d(lines)) \
            else np.empty(0, np.int64)
        if arr.size and arr.min() < 0:
            raise DeviceError(f"{name} must hold line indices >= 0; got {int(arr.min())}")
        return np.unique(arr)

    def params(self):
        return {"stuck0": tuple(int(i) for i in self.stuck0),
                "stuck1": tuple(int(i) for i in self.stuck1),
                "rate": self.rate, "value": self.value}

    def check_width(self, width):
        hi = max([-1] + [int(a.max()) for a in (self.stuck0, self.stuck1) if a.size])
        if hi >= width:
            raise DeviceError(f"stuck line {hi} is out of range: rows have {width} bits")

    def apply_inplace(self, bits, rng):
        if self.stuck0.size:
            bits[:, self.stuck0] = 0
        if self.stuck1.size:
            bits[:, self.stuck1] = 1
        if self.rate > 0.0:
            flat = bits.reshape(-1)
            pos = _bernoulli_positions(flat.size, self.rate, rng)
            if self.value is None:
                flat[pos] = rng.integers(0, 2, pos.size, dtype=np.uint8)
            else:
                flat[pos] = self.value


def feature_lines(copies, features):
    """Wire positions of every copy of ``features`` in a feature-major frame.

    Parameters
    ----------
    copies : array-like of int, shape (n,)
        Copies per feature (``ProtectedNBDevice.copies``, ``2 r + 1``).
    features : sequence of int

    Examples
    --------
    >>> feature_lines([3, 1, 5], [0, 2]).tolist()
    [0, 1, 2, 4, 5, 6, 7, 8]
    """
    copies = np.asarray(copies, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(copies)[:-1]])
    feats = np.asarray(features, dtype=np.int64).reshape(-1)
    if feats.size and (feats.min() < 0 or feats.max() >= copies.size):
        raise DeviceError(f"features must be in [0, {copies.size}); got {feats.tolist()}")
    parts = [np.arange(start[j], start[j] + copies[j]) for j in feats]
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


register_fault(StuckAt)
