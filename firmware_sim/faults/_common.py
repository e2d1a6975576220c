"""Helpers the fault models share: parameter checks, mask sizes, seeds of kernel streams.

Imports numpy, the device kernels and the size limits only.
"""

from numbers import Integral, Real

import numpy as np

from .._kernels.faults import MAX_DIGITS, TABLE_BITS, _gilbert_elliott_masks
from .._limits import check_allocation
from ..errors import DeviceError

__all__ = ["draw_seed", "check_masks", "n_words", "gilbert_elliott_masks", "check_prob",
           "check_count"]

_NO_STATES = np.empty(0, np.uint8)


def draw_seed(rng):
    """Integer seed of a kernel's splitmix64 stream, drawn from the Generator."""
    return int(rng.integers(0, 2**63 - 1))


def check_masks(nrows, width):
    """Price the error masks of ``nrows`` rows of ``width`` bits (and the unpacked
    rows some faults draw them through) before allocating them."""
    nrows, width = int(nrows), int(width)
    check_allocation(f"nrows={nrows:,}, width={width:,}", nrows * (width + 8 * n_words(width)),
                     what="the error masks", hint="draw them in batches of fewer rows (a "
                     "campaign's batches hold about 4 Mi bits)")


def n_words(width):
    """uint64 words per row of error masks."""
    return max(1, (int(width) + 63) >> 6)


def gilbert_elliott_masks(nrows, width, p, r, eps_good, eps_bad, continuous, seed, masks,
                          states=_NO_STATES):
    """Run the kernel ``_gilbert_elliott_masks`` into ``masks`` (zeros) with the
    splitmix64 state of ``seed`` and the kernel's scratch (allocated here: an
    allocation inside a kernel costs compile time). The sampler of
    :class:`~firmware_sim.faults.GilbertElliott` and, as an always-good chain,
    of :class:`~firmware_sim.faults.BSC`."""
    _gilbert_elliott_masks(nrows, width, np.array([p, r, eps_good, eps_bad], np.float64),
                           bool(continuous), np.array([seed], np.uint64), masks, states,
                           np.empty(4), np.empty((4, 1 << TABLE_BITS), np.int32),
                           np.empty((4, MAX_DIGITS), np.uint64), np.empty(4, np.int64))


def check_prob(value, name, *, low=0.0, high=1.0):
    """A probability parameter as a float in ``[low, high]`` (TypeError for a
    non-number, DeviceError outside the range or NaN)."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number in [{low}, {high}]; got {value!r}")
    v = float(value)
    if not (low <= v <= high):  # also refuses NaN
        raise DeviceError(f"{name} must be in [{low}, {high}]; got {value!r}")
    return v


def check_count(value, name):
    """A count parameter as a non-negative int (an integral float is accepted)."""
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        if isinstance(value, (Real, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be a non-negative integer; got {value!r}")
    if value < 0:
        raise DeviceError(f"{name} must be >= 0; got {value}")
    return int(value)
