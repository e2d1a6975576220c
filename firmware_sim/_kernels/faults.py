"""Numba kernels of the fault models (``firmware_sim.faults``).

Plain functions on arrays and scalars, no validation. Random numbers come
from a splitmix64 stream seeded by an integer the wrapper draws from its
numpy Generator, so a seed gives the same faults on every machine and the
kernels never touch numba's global RNG.
"""

import math

import numpy as np
from numba import njit

from .bits import _lowest_bit

@njit(cache=True, nogil=True)
def _splitmix_raw(state):
    """Advance a splitmix64 state (uint64 array of length 1); return 64 random bits."""
    z = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _splitmix_next(state):
    """A uniform double in [0, 1) (53 random bits) from the splitmix64 stream."""
    return float(_splitmix_raw(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


#: Bins of the geometric inversion table (the top TABLE_BITS bits of a uniform).
TABLE_BITS = 12


@njit(cache=True, nogil=True)
def _geometric_table(inv_log1mp, table):
    """Inversion table of ``floor(log(1 - u) / log(1 - p))``: ``table[b]`` is its
    value for every u in bin b (``[b, b + 1) / K``) when it is constant there,
    else -1 (the draw then computes the log). Exact: the same value as the
    formula for every 53-bit u."""
    k = table.shape[0]
    last = 1.0 / 9007199254740992.0
    for b in range(k):
        lo = b / k
        hi = (b + 1) / k - last
        g_lo = math.floor(math.log(1.0 - lo) * inv_log1mp)
        g_hi = math.floor(math.log(1.0 - hi) * inv_log1mp)
        table[b] = g_lo if g_lo == g_hi and g_lo < 2147483647 else -1   # int32 tables


@njit(cache=True, nogil=True)
def _geometric(state, inv_log1mp, tables, row):
    """Failures before the first success of Bernoulli(p): floor(log(1-U) / log(1-p)),
    by lookup in ``tables[row]`` for most U (see :func:`_geometric_table`), else
    by the log. ``inv_log1mp = 1 / log(1 - p)`` for 0 < p < 1.
    """
    z = _splitmix_raw(state)
    g = tables[row, np.int64(z >> np.uint64(64 - TABLE_BITS))]
    if g >= 0:
        return g
    u = float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    g = math.floor(math.log(1.0 - u) * inv_log1mp)
    return np.int64(g) if g < 4.0e18 else np.int64(4000000000000000000)  # no int64 overflow


#: Below this probability a Bernoulli stream is drawn by geometric skipping
#: (cost per success); from it up, 64 lanes at a time by
#: :func:`_bernoulli_word` (cost per word, about log2(64) + 2 random words).
GEOMETRIC_EPS = 1.0 / 32.0

#: Binary digits of a probability kept by :func:`_eps_digits` (a float64 in
#: (0, 1) has no 1 digit beyond them).
MAX_DIGITS = 1100

#: Digit comparisons :func:`_bernoulli_word` makes before it starts looking
#: whether every lane is decided (fewer branches; extra draws are cheap).
UNROLL = 8

_ONE = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _lane_mask(lo, hi):
    """uint64 with bits lo .. hi - 1 set (0 <= lo < hi <= 64)."""
    width = hi - lo
    m = _ALL if width == 64 else (_ONE << np.uint64(width)) - _ONE
    return m << np.uint64(lo)


@njit(cache=True, nogil=True)
def _eps_digits(eps, digits):
    """The exact binary expansion of a float eps in [0, 1) as word masks:
    ``digits[k]`` is all ones when digit k + 1 of eps is 1, else 0. Returns the
    number of digits up to the last 1 (0 for eps = 0)."""
    d = eps
    last = 0
    for k in range(digits.shape[0]):
        d = d * 2.0                      # exact in binary floating point
        if d >= 1.0:
            d -= 1.0
            digits[k] = _ALL
            last = k + 1
        else:
            digits[k] = 0
    return last


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_word(lanes, digits, row, n_digits, state):
    """Independent Bernoulli(eps) bits on the set bits of ``lanes`` (others 0).

    Lane i is 1 when a uniform U_i < eps. The binary digits of all 64 U_i are
    drawn one random word at a time and compared with eps's exact binary
    expansion (``digits[row]``, ``n_digits`` from :func:`_eps_digits`), most
    significant first: a lane is decided at its first digit that differs
    from eps's (U_i < eps where eps has the 1); lanes still equal after the
    last 1 digit of eps have U_i >= eps. About log2(lanes) + 2 words per
    call; exact for the float eps (no rounding anywhere). The first
    ``UNROLL`` digits (fewer if eps has fewer) are compared unconditionally
    (digit masks instead of branches), then only while a lane is undecided.
    """
    flip = np.uint64(0)
    und = lanes
    for k in range(UNROLL if n_digits > UNROLL else n_digits):
        u = _splitmix_raw(state)
        e = digits[row, k]
        flip |= und & ~u & e
        und &= ~(u ^ e)
    k = UNROLL
    while und != 0 and k < n_digits:
        u = _splitmix_raw(state)
        e = digits[row, k]
        flip |= und & ~u & e
        und &= ~(u ^ e)
        k += 1
    return flip


@njit(cache=True, nogil=True)
def _cut_rows(flat, nrows, width, masks):
    """Cut the row-major bit stream ``flat`` (``nrows * width`` bits, bit k =
    bit k % 64 of word k // 64) into row-aligned masks: ``masks[i, w]`` bit b
    is bit ``64 w + b`` of row i. (BSC masks: the stream is drawn as one
    always-good Gilbert-Elliott row, :func:`_gilbert_elliott_masks`.)"""
    nflat = flat.shape[0]
    nw = masks.shape[1]
    for i in range(nrows):
        base = i * width
        for w in range(nw):
            start = base + (w << 6)
            nb = width - (w << 6)
            q = start >> 6
            s = np.uint64(start & 63)
            v = flat[q] >> s
            if s != 0 and q + 1 < nflat:
                v |= flat[q + 1] << (np.uint64(64) - s)
            if nb < 64:
                v &= (_ONE << np.uint64(nb)) - _ONE
            masks[i, w] = v


@njit(cache=True, nogil=True)
def _gilbert_elliott_masks(nrows, width, probs, continuous, state, masks, states, inv, tables,
                           digits, n_digits):
    """Gilbert-Elliott error masks (layout of :func:`_cut_rows`), OR-ed into
    ``masks`` (zeros on entry).

    A two-state Markov chain (0 good, 1 bad) runs along each row; per bit it
    moves good -> bad with probability ``p`` and bad -> good with ``r``; a bit
    is in error with probability ``eps_good`` / ``eps_bad`` in its state
    (``probs = (p, r, eps_good, eps_bad)``: index s is the leave probability
    of state s, 2 + s its error probability). Each row starts in bad with the
    stationary probability ``p / (p + r)`` unless ``continuous`` (the chain
    runs on across rows, starting stationary). Random numbers: the splitmix64
    stream of ``state`` (uint64 (1,), seeded by the wrapper, advanced).
    Sojourns are drawn whole (geometric lengths); a sojourn's errors by
    geometric skipping below ``GEOMETRIC_EPS``, else by
    :func:`_bernoulli_word` on each word it covers: cost O(state changes +
    words + sparse errors), not O(bits). If ``states`` has ``nrows * width``
    entries it receives every bit's state. Scratch from the wrapper (filled
    here for each probability q strictly between 0 and 1): ``inv`` (4,)
    receives ``1 / log(1 - q)``, ``tables`` (4, 2**TABLE_BITS) int32 its
    geometric inversion table, ``digits`` (4, MAX_DIGITS) uint64 and
    ``n_digits`` (4,) int64 its binary digits. (The segment filling is
    written out here, not in a helper: a call taking the sampler's arrays
    costs more than a sojourn.)
    """
    record = states.shape[0] == nrows * width
    for i in range(4):
        q = probs[i]
        if 0.0 < q < 1.0:
            inv[i] = 1.0 / math.log1p(-q)
            _geometric_table(inv[i], tables[i])
            n_digits[i] = _eps_digits(q, digits[i])
    p = probs[0]
    r = probs[1]
    pi_bad = p / (p + r) if p + r > 0.0 else 0.0
    s = 0
    for row in range(nrows):
        if row == 0 or not continuous:
            s = 1 if _splitmix_next(state) < pi_bad else 0
        pos = 0                    # bit positions within the row
        while pos < width:
            q = probs[s]
            if q <= 0.0:
                stop = width
                ends = False
            elif q >= 1.0:
                stop = pos + 1
                ends = True
            else:
                stop = pos + _geometric(state, inv[s], tables, s) + 1
                ends = stop <= width
                if not ends:
                    stop = width
            # errors of the sojourn: bits [pos, stop) of the row, rate probs[2 + s]
            e = 2 + s
            eps = probs[e]
            if eps >= GEOMETRIC_EPS:
                k = pos >> 6
                while (k << 6) < stop:
                    k0 = k << 6
                    lanes = _lane_mask(pos - k0 if pos > k0 else 0,
                                       stop - k0 if stop - k0 < 64 else 64)
                    if eps >= 1.0:
                        masks[row, k] |= lanes
                    else:
                        masks[row, k] |= _bernoulli_word(lanes, digits, e, n_digits[e], state)
                    k += 1
            elif eps > 0.0:
                x = pos - 1
                while True:
                    x += _geometric(state, inv[e], tables, e) + 1
                    if x >= stop:
                        break
                    masks[row, x >> 6] |= _ONE << np.uint64(x & 63)
            if record:
                for j in range(row * width + pos, row * width + stop):
                    states[j] = s
            if ends:  # the sojourn ended inside the row: switch state
                s = 1 - s
            # else the row ended mid-sojourn; by memorylessness a continuous
            # chain goes on in the same state with a fresh geometric length
            pos = stop


@njit(cache=True, nogil=True)
def _xor_masks(bits, masks):
    """``bits ^= masks`` (0/1 uint8 rows (t, L), masks in the layout of :func:`_cut_rows`)."""
    n, L = bits.shape
    for i in range(n):
        for w in range(masks.shape[1]):
            m = masks[i, w]
            while m:
                j = (w << 6) + np.int64(_lowest_bit(m))
                bits[i, j] ^= 1
                m &= m - _ONE


@njit(cache=True, nogil=True)
def _uniform_below(state, m):
    """Uniform integer in [0, m) for 1 <= m < 2**32 (multiply-shift with
    rejection: exactly uniform)."""
    mm = np.uint64(m)
    x = _splitmix_raw(state) >> np.uint64(32)
    prod = x * mm
    low = prod & np.uint64(0xFFFFFFFF)
    if low < mm:
        threshold = (np.uint64(0x100000000) - mm) % mm
        while low < threshold:
            x = _splitmix_raw(state) >> np.uint64(32)
            prod = x * mm
            low = prod & np.uint64(0xFFFFFFFF)
    return np.int64(prod >> np.uint64(32))


@njit(cache=True, nogil=True)
def _replace_symbols(frame, masks, n_sym, seed):
    """N-ary wire: every event of ``masks`` replaces that symbol of ``frame``
    ((t, L) uint8) by one of the other ``n_sym - 1`` symbols chosen uniformly;
    events in row-major order, shifts from a splitmix64 stream (``seed``)."""
    state = np.empty(1, np.uint64)
    state[0] = np.uint64(seed)
    n = frame.shape[0]
    for i in range(n):
        for w in range(masks.shape[1]):
            m = masks[i, w]
            while m:
                j = (w << 6) + np.int64(_lowest_bit(m))
                m &= m - _ONE
                v = np.int64(frame[i, j]) + 1 + _uniform_below(state, n_sym - 1)
                frame[i, j] = v - n_sym if v >= n_sym else v
