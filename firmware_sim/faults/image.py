"""Bit upsets of raw bytes: the image helpers of the parameter-upset fault
(:func:`upset_bytes`, flip positions, the rate-or-count rule)."""

import numpy as np

from ..channel import _bernoulli_positions, check_random_state
from ..errors import DeviceError
from ._common import check_count, check_prob

__all__ = ["upset_bytes", "flip_positions", "flip_bits_of_bytes", "rate_or_count"]


def flip_positions(nbits, rng, rate, count):
    if count is not None:
        if count > nbits:
            raise DeviceError(f"count {count} exceeds the {nbits} bits that can be upset")
        return np.sort(rng.choice(nbits, size=count, replace=False)).astype(np.int64)
    return _bernoulli_positions(nbits, rate, rng)


def flip_bits_of_bytes(buf, positions):
    """XOR bit ``positions`` (bit k = byte k // 8, bit k % 8, LSB first) of a uint8 array."""
    np.bitwise_xor.at(buf, positions >> 3, (1 << (positions & 7)).astype(np.uint8))


def upset_bytes(raw, random_state=None, rate=None, count=None, start=0, stop=None):
    """Single-event upsets in raw bytes: flip bits of ``raw[start:stop]``.

    Parameters
    ----------
    raw : bytes-like
    random_state : None, int, SeedSequence or Generator
    rate : float in [0, 1], optional
        Flip each bit independently with this probability.
    count : int, optional
        Flip exactly this many distinct bits, chosen uniformly. Give exactly
        one of ``rate`` and ``count``.
    start, stop : int
        Byte range to upset (default: everything).

    Returns
    -------
    bytes

    Examples
    --------
    >>> out = upset_bytes(bytes(16), 0, count=3)
    >>> sum(bin(b).count("1") for b in out)
    3
    """
    rate, count = rate_or_count(rate, count)
    buf = np.frombuffer(bytes(raw), np.uint8).copy()
    stop = buf.size if stop is None else stop
    if not 0 <= start <= stop <= buf.size:
        raise DeviceError(f"byte range [{start}, {stop}) is outside [0, {buf.size}]")
    rng = check_random_state(random_state)
    pos = flip_positions(8 * (stop - start), rng, rate, count) + 8 * start
    flip_bits_of_bytes(buf, pos)
    return buf.tobytes()


def rate_or_count(rate, count):
    if (rate is None) == (count is None):
        raise DeviceError("give exactly one of rate (per-bit upset probability) and count "
                          f"(number of upset bits); got rate={rate!r}, count={count!r}")
    return (None if rate is None else check_prob(rate, "rate"),
            None if count is None else check_count(count, "count"))
